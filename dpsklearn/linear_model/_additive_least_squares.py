"""What the additive least-squares estimators share: plan, train, release.

Rows go through the public :class:`~dpsklearn.preprocessing.AdditiveFeatureMap`
(``||phi(x)|| <= 1``); the labels, centred and bounded by a public ``B_y``,
form ``Y`` (one column for a target or a binary label, one per class
otherwise). ``Phi^T Phi``, ``Phi^T Y`` and ``lambda_min(Phi^T Phi)`` are
released once by :class:`~dpsklearn.mechanisms.SufficientStatisticsRelease`
(AdaSSP, Wang 2018, Algorithm 2, with the replace-one sensitivities of
``docs/regression.rst``, "Sufficient-statistics perturbation", and the
``k``-column moment of its module notes), composed exactly through Gaussian
DP; the weights ``(G~ + lam I)^-1 b~`` are post-processing, so the fitted
model is publishable and its predictions are free.

**Linear first, then the bins** (``docs/no_public_rows.rst``): with bins,
the release runs in two stages on one budget, as
:class:`~dpsklearn.PrivateKernelRidge`'s linear-first default
(:class:`~dpsklearn.mechanisms.StagedStatisticsRelease`; ``docs/regression.rst``,
"Linear first, then the kernel"): the linear map (one-hot categories, the
scaled values, a constant) with ``linear_share`` of ``rho``, then the bins
(the ``"bins"`` part of the map) fitted to the residuals of the released
linear model, each residual row projected onto the ball of radius ``c B_y``
(``c = 1`` for classes, ``1/4`` for a regression target, whose residuals
are small against its public range), so the second stage has one stage's
sensitivities at label bound ``c B_y``. Gaussian DP composes
adaptively (Dong, Roth and Su 2022, Corollary 3.3): the whole is one
``(epsilon, delta)``.

**Dask collections** (``docs/cluster.rst``, "Data larger than one machine"):
with a Dask ``X`` and ``y`` every column's bounds or categories and the
label range or set must be public (nothing is read from the rows before the
release); each partition's ``Phi^T Phi`` and ``Phi^T Y`` are computed where
it lives and added in the client, and the one release is the NumPy path's
(same mechanism, same noise draws; the sums differ only by floating-point
rounding in the order of addition).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from .._base import FitPlan, PrivateEstimatorMixin
from .._dask_input import (
    DaskRows,
    check_partition,
    check_public_columns,
    dask_training_data,
)
from .._param_validation import HasMethods, Interval, StrOptions
from .._validation import warn_if_delta_large
from ..mechanisms import (
    StagedStatisticsRelease,
    SufficientStatisticsRelease,
    accumulate_statistics,
)
from ..preprocessing import (
    AdditiveFeatureMap,
    PublicSchema,
    TabularInputMixin,
    auto_n_bins,
    resolve_columns,
)

__all__ = ["ADDITIVE_CONSTRAINTS", "AdditiveLeastSquaresMixin"]

ADDITIVE_CONSTRAINTS: dict = {
    "schema": [PublicSchema, None],
    "n_bins": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "linear_share": [Interval(Real, 0, 1, closed="neither")],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
    "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
}


class AdditiveLeastSquaresMixin(TabularInputMixin, PrivateEstimatorMixin):
    """The fit template's three steps for least squares on the additive map."""

    #: The bins stage's residuals are bounded by this fraction of ``B_y``.
    _residual_bound_fraction: float = 1.0

    schema: PublicSchema | None
    n_bins: int | str
    linear_share: float
    epsilon: float
    delta: float
    feature_map_: AdditiveFeatureMap
    bin_map_: AdditiveFeatureMap | None
    coef_: np.ndarray
    bin_coef_: np.ndarray | None
    label_bound_: float

    def _input_consumer(self):
        return f"the additive feature map of {type(self).__name__}"

    __dpsklearn_publishable__ = True  # the released weights are the model

    def _feature_maps(self, X) -> tuple[AdditiveFeatureMap, AdditiveFeatureMap | None]:
        """The public maps: the linear stage's and, with bins, the bins stage's."""
        # Rows on a Dask cluster: their columns and dtypes (the schema is public).
        columns = resolve_columns(X.meta if isinstance(X, DaskRows) else X, self.schema)
        n_numeric = sum(kind == "numeric" for _, kind, _ in columns)
        if self.n_bins == "auto":
            n_bins = auto_n_bins(n_numeric, X.shape[0], self.epsilon)
        else:
            n_bins = int(self.n_bins)
        if n_bins == 0 or n_numeric == 0:
            return AdditiveFeatureMap(columns, 0), None
        return AdditiveFeatureMap(columns, 0), AdditiveFeatureMap(
            columns, n_bins, "bins"
        )

    def _plan_release(self, X, labels, label_bound, attributes) -> FitPlan:
        """Calibrate the release for the maps and ``labels`` (``(n,)`` or ``(n, k)``).

        Without bins, one AdaSSP release on the linear map; with bins, two
        stages on one budget (``docs/no_public_rows.rst``, "Linear first,
        then the bins"): the linear map with ``linear_share`` of ``rho``,
        then the bins on its residuals with the rest.
        """
        self._check_finite_epsilon()
        warn_if_delta_large(float(self.delta), X.shape[0])
        linear_map, bin_map = self._feature_maps(X)
        n_targets = 1 if labels.ndim == 1 else labels.shape[1]
        if isinstance(labels, DaskTargets):
            n_targets = labels.n_targets
        mechanism: SufficientStatisticsRelease | StagedStatisticsRelease
        if bin_map is None:
            mechanism = SufficientStatisticsRelease.calibrate(
                self.epsilon,
                self.delta,
                n_features=linear_map.n_features_out,
                feature_bound=1.0,
                label_bound=float(label_bound),
                n_targets=n_targets,
            )
        else:
            share = float(self.linear_share)
            mechanism = StagedStatisticsRelease.calibrate(
                self.epsilon,
                self.delta,
                n_features=(linear_map.n_features_out, bin_map.n_features_out),
                feature_bound=1.0,
                label_bound=(
                    float(label_bound),
                    float(label_bound) * self._residual_bound_fraction,
                ),
                stage_shares=(share, 1.0 - share),
                n_targets=n_targets,
            )
        return FitPlan(
            mechanism,
            X,
            labels,
            delta=self.delta,
            training={"maps": (linear_map, bin_map)},
            serving={"released": True},
            attributes={
                **attributes,
                "feature_map_": linear_map,
                "bin_map_": bin_map,
                "n_bins_": 0 if bin_map is None else bin_map.n_bins,
                "label_bound_": float(label_bound),
            },
        )

    def _train(self, plan):
        # Non-private until _release replaces them by their noisy releases:
        # the bins stage's labels wait for the linear stage's release.
        linear_map, _ = plan.training["maps"]
        if isinstance(plan.X, DaskRows):
            # The first stage's statistics, summed over the partitions where
            # they live: before the spend, so that a refusal of a partition's
            # rows (a label outside classes, infinity) spends nothing.
            statistics = _dask_statistics(plan.X, plan.y, linear_map, linear_map, None)
            return {"_codes": plan.X, "_labels": plan.y, "_statistics": statistics}
        return {"_codes": linear_map.encode(plan.X), "_labels": plan.y}

    def _release(self, plan, fitted, noise):
        # Small dense eigendecompositions (p of a few hundred) run faster on
        # one BLAS thread than on several, and far faster on a busy machine.
        with threadpool_limits(limits=1, user_api="blas"):
            self._release_stages(plan, fitted, noise)

    def _release_stages(self, plan, fitted, noise):
        # Only the weights solved from the noisy statistics leave the fit.
        codes, labels = fitted.pop("_codes"), fitted.pop("_labels")
        linear_map, bin_map = plan.training["maps"]
        bound = plan.attributes["label_bound_"]
        stages: tuple[Any, ...] = getattr(plan.mechanism, "stages", (plan.mechanism,))
        if isinstance(codes, DaskRows):
            statistics = fitted.pop("_statistics")
            self._release_dask_stages(plan, fitted, noise, statistics, stages)
            return
        statistics = accumulate_statistics(
            codes, labels, linear_map.sparse_transform, linear_map.n_features_out
        )
        coef, regulariser = stages[0].solve(stages[0].release(*statistics, noise))
        fitted.update(coef_=coef, regulariser_=regulariser)
        fitted.update(bin_coef_=None, bin_regulariser_=None)
        if bin_map is None:
            return
        # Residuals of the released linear model, each row projected onto the
        # ball of radius B_y: the bins stage has a single stage's
        # sensitivities whatever the first stage released.
        fitted_values = _project_rows(linear_map.sparse_transform(codes) @ coef, bound)
        residuals = _project_rows(labels - fitted_values, stages[1].label_bound)
        statistics = accumulate_statistics(
            codes, residuals, bin_map.sparse_transform, bin_map.n_features_out
        )
        coef, regulariser = stages[1].solve(stages[1].release(*statistics, noise))
        fitted.update(bin_coef_=coef, bin_regulariser_=regulariser)

    def _plan_dask_release(self, X, y, labels, label_bound, attributes):
        """:meth:`_plan_release` for Dask ``X`` and ``y``: public columns only.

        ``labels`` is a :class:`LabelRule`; every column of ``X`` needs its
        bounds or categories in ``schema`` (reading them from the rows would
        read the data before the spend, and the whole table into this
        process).
        """
        from sklearn.utils.validation import validate_data

        rows, targets = dask_training_data(
            X, y, allow_nan=True, consumer=self._input_consumer()
        )
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        check_public_columns(rows.meta, self.schema)
        handle = DaskTargets(targets, labels)
        return self._plan_release(rows, handle, label_bound, attributes)

    def _release_dask_stages(self, plan, fitted, noise, statistics, stages):
        """The NumPy path's stages, each statistic summed over the partitions."""
        linear_map, bin_map = plan.training["maps"]
        bound = plan.attributes["label_bound_"]
        rows, targets = plan.X, plan.y
        coef, regulariser = stages[0].solve(stages[0].release(*statistics, noise))
        fitted.update(coef_=coef, regulariser_=regulariser)
        fitted.update(bin_coef_=None, bin_regulariser_=None)
        if bin_map is None:
            return
        residual_of = (coef, bound, stages[1].label_bound)
        statistics = _dask_statistics(rows, targets, linear_map, bin_map, residual_of)
        coef, regulariser = stages[1].solve(stages[1].release(*statistics, noise))
        fitted.update(bin_coef_=coef, bin_regulariser_=regulariser)

    def _scores(self, X) -> np.ndarray:
        """The released model's scores of query rows (post-processing)."""
        check_is_fitted(self)
        X = self._validate_input(X, reset=False, accept_sparse=False)
        codes = self.feature_map_.encode(X)
        scores = self.feature_map_.sparse_transform(codes) @ self.coef_
        if self.bin_map_ is None or self.bin_coef_ is None:
            return scores
        scores = _project_rows(scores, self.label_bound_)
        return scores + self.bin_map_.sparse_transform(codes) @ self.bin_coef_


def _project_rows(values: np.ndarray, bound: float) -> np.ndarray:
    """Each row (or value) scaled onto the L2 ball of radius ``bound``."""
    if values.ndim == 1:
        return np.clip(values, -bound, bound)
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    return values * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


class LabelRule:
    """How a partition's labels become the release's targets (on a worker).

    ``kind="regression"``: ``clip(y, lo, hi) - center``; ``kind="classes"``:
    class indices into ``classes``, then ``+-1/2`` (two classes) or the
    centred one-hot rows. The NumPy path's formulas, applied per partition.
    """

    def __init__(self, kind, *, classes=None, lo=0.0, hi=1.0):
        self.kind = kind
        self.classes = None if classes is None else np.asarray(classes)
        self.lo, self.hi = float(lo), float(hi)

    @property
    def n_targets(self) -> int:
        if self.kind == "classes" and self.classes is not None:
            return 1 if self.classes.size <= 2 else int(self.classes.size)
        return 1

    def __call__(self, X, y) -> np.ndarray:
        if self.kind == "regression":
            values = check_partition(X, y, None, allow_nan=True, consumer="the map")
            values = np.asarray(values, dtype=np.float64)
            if not np.all(np.isfinite(values)):
                raise ValueError(
                    "y contains NaN or infinity; refused before the spend."
                )
            center = (self.lo + self.hi) / 2.0
            return np.clip(values, self.lo, self.hi) - center
        assert self.classes is not None
        index = check_partition(X, y, self.classes, allow_nan=True, consumer="the map")
        k = self.classes.size
        if k <= 2:
            return (index == k - 1).astype(np.float64) - 0.5
        return np.eye(k)[index] - 1.0 / k


class DaskTargets:
    """Labels on a Dask cluster and the rule that makes them targets."""

    ndim = 1

    def __init__(self, labels, rule: LabelRule):
        self.labels = labels
        self.rule = rule
        self.n_targets = rule.n_targets


def _partition_statistics(X, y, rule, linear_map, target_map, residual_of):
    """One partition's ``Phi^T Phi`` and ``Phi^T Y`` (runs on a worker)."""
    labels = rule(X, y)
    codes = linear_map.encode(X)
    if residual_of is not None:  # the bins stage: residuals of the linear release
        coef, bound, residual_bound = residual_of
        fitted = _project_rows(linear_map.sparse_transform(codes) @ coef, bound)
        labels = _project_rows(labels - fitted, residual_bound)
    with threadpool_limits(limits=1, user_api="blas"):
        gram, moment, _ = accumulate_statistics(
            codes, labels, target_map.sparse_transform, target_map.n_features_out
        )
    return gram, moment


def _dask_statistics(rows, targets, linear_map, target_map, residual_of):
    """``(Phi^T Phi, Phi^T Y, lambda_min)`` summed over the partitions."""
    import dask
    from scipy import linalg

    parts = [
        dask.delayed(_partition_statistics)(
            X_part, y_part, targets.rule, linear_map, target_map, residual_of
        )
        for X_part, y_part in zip(
            rows.partitions, targets.labels.partitions, strict=True
        )
    ]
    results = dask.compute(*parts)
    gram = np.sum([r[0] for r in results], axis=0)
    moment = np.sum([r[1] for r in results], axis=0)
    lambda_min = float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])
    return gram, moment, lambda_min
