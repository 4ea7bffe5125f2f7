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
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._base import FitPlan, PrivateEstimatorMixin
from .._param_validation import HasMethods, Interval, StrOptions
from .._validation import warn_if_delta_large
from ..mechanisms import SufficientStatisticsRelease, accumulate_statistics
from ..preprocessing import (
    AdditiveFeatureMap,
    PublicSchema,
    auto_n_bins,
    resolve_columns,
)

__all__ = ["ADDITIVE_CONSTRAINTS", "AdditiveLeastSquaresMixin"]

ADDITIVE_CONSTRAINTS: dict = {
    "schema": [PublicSchema, None],
    "n_bins": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
    "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
}


class AdditiveLeastSquaresMixin(PrivateEstimatorMixin):
    """The fit template's three steps for least squares on the additive map."""

    schema: PublicSchema | None
    n_bins: int | str
    epsilon: float
    delta: float
    feature_map_: AdditiveFeatureMap
    coef_: np.ndarray

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _input_allows_nan(self):
        return True  # a missing value goes to its column's missing slot

    def _input_consumer(self):
        return f"the additive feature map of {type(self).__name__}"

    __dpsklearn_publishable__ = True  # the released weights are the model

    def _feature_map(self, X) -> AdditiveFeatureMap:
        """The public map: the schema's columns, bins from public numbers."""
        columns = resolve_columns(X, self.schema)
        n_numeric = sum(kind == "numeric" for _, kind, _ in columns)
        if self.n_bins == "auto":
            n_bins = auto_n_bins(n_numeric, X.shape[0], self.epsilon)
        else:
            n_bins = int(self.n_bins)
        return AdditiveFeatureMap(columns, n_bins)

    def _plan_release(self, X, labels, label_bound, attributes) -> FitPlan:
        """Calibrate the release for the map and ``labels`` (``(n,)`` or ``(n, k)``)."""
        self._check_finite_epsilon()
        warn_if_delta_large(float(self.delta), X.shape[0])
        feature_map = self._feature_map(X)
        n_targets = 1 if labels.ndim == 1 else labels.shape[1]
        mechanism = SufficientStatisticsRelease.calibrate(
            self.epsilon,
            self.delta,
            n_features=feature_map.n_features_out,
            feature_bound=1.0,
            label_bound=float(label_bound),
            n_targets=n_targets,
        )
        return FitPlan(
            mechanism,
            X,
            labels,
            delta=self.delta,
            training={"feature_map": feature_map},
            serving={"released": True},
            attributes={
                **attributes,
                "feature_map_": feature_map,
                "n_bins_": feature_map.n_bins,
                "label_bound_": float(label_bound),
            },
        )

    def _train(self, plan):
        # Non-private until _release replaces it by its noisy release.
        feature_map = plan.training["feature_map"]
        codes = feature_map.encode(plan.X)
        statistics = accumulate_statistics(
            codes, plan.y, feature_map.transform, feature_map.n_features_out
        )
        return {"_statistics": statistics}

    def _release(self, plan, fitted, noise):
        # Only the weights solved from the noisy statistics leave the fit.
        released = plan.mechanism.release(*fitted.pop("_statistics"), noise)
        coef, regulariser = plan.mechanism.solve(released)
        fitted["coef_"] = coef
        fitted["regulariser_"] = regulariser

    def _scores(self, X) -> np.ndarray:
        """The released linear scores of query rows (post-processing)."""
        check_is_fitted(self)
        X = self._validate_input(X, reset=False, accept_sparse=False)
        features = self.feature_map_.transform(self.feature_map_.encode(X))
        return features @ self.coef_
