"""Parameter objects of the mechanisms that release a real value: the clipped
mean, the adaptive range, kernel ridge output perturbation and
sufficient-statistics perturbation (see ``_options.py``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .._param_validation import Interval, StrOptions
from ._adaptive_range import AdaptiveRangeRelease
from ._grid_gaussian import GridGaussianRelease, clipped_mean_release
from ._kernel_ridge import (
    WeightRelease,
    kernel_ridge_prediction_release,
    kernel_ridge_weight_release,
)
from ._options import _NOISE, MechanismOptions, MechanismPlan, PlanContext
from ._per_query import GridLaplaceRelease
from ._staged_statistics import StagedStatisticsRelease
from ._sufficient_statistics import DEFAULT_SHARES, SufficientStatisticsRelease

__all__ = [
    "AdaptiveRange",
    "ClippedMean",
    "OutputPerturbation",
    "SufficientStatistics",
]


class ClippedMean(MechanismOptions):
    """The mean of the teachers' predictions, each clipped to the target range.

    Clipping each prediction to ``target_range = (lo, hi)`` before averaging
    bounds the mean's sensitivity by ``(hi - lo) / k`` (Dwork and Feldman
    2018, Theorem 4 and Lemma 2); each answer is released on a grid with
    integer noise, at the per-query share of the budget.
    :func:`~dpsklearn.mechanisms.clipped_mean_release`, ``docs/design.rst``,
    "Per-query releases".

    Parameters
    ----------
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        Grid Laplace (pure, optimal composition) or discrete Gaussian
        (exact Gaussian-DP or Renyi composition; ``delta > 0``). ``"auto"``
        takes the one whose released noise has the smaller standard
        deviation.
    target_std : float, default=None
        The spread you expect of the target, for ``fit``'s warning (as
        :class:`AdaptiveRange`); ``None``: a quarter of the range's width.

    Examples
    --------
    >>> from dpsklearn.mechanisms import ClippedMean
    >>> ClippedMean(noise="laplace").calibrate(
    ...     1.0, 1e-5, max_queries=10, target_range=(0, 1), n_teachers=100
    ... ).sensitivity
    0.01
    """

    shorthand = "clipped_mean"
    _parameter_constraints: dict = {
        "noise": [_NOISE],
        "target_std": [Interval(Real, 0, None, closed="neither"), None],
    }
    abstains = False

    def __init__(self, noise: str = "auto", target_std: float | None = None) -> None:
        self.noise = noise
        self.target_std = target_std

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int,
        target_range: tuple[float, float],
        n_teachers: int,
        **public: Any,
    ) -> GridLaplaceRelease | GridGaussianRelease:
        """The calibrated per-query release of the clipped mean.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        target_range : tuple of float
            The public ``(lo, hi)`` range of the answers.
        n_teachers : int
            The number of teachers k.
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : GridLaplaceRelease | GridGaussianRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        if self.noise == "gaussian" and not delta > 0:
            raise ValueError(
                "noise='gaussian' needs delta > 0 (a Gaussian release has no "
                "pure guarantee); use noise='laplace' or 'auto' with delta=0."
            )
        lo, hi = target_range
        if self.noise == "laplace":
            # The best Laplace split alone (no Gaussian candidate).
            return GridLaplaceRelease.calibrate(
                epsilon,
                delta,
                max_queries,
                sensitivity=(hi - lo) / n_teachers,
                bounds=(lo, hi),
                calibration="auto",
            )
        return clipped_mean_release(
            epsilon,
            delta,
            max_queries,
            target_range=(lo, hi),
            n_teachers=n_teachers,
            calibration="gaussian" if self.noise == "gaussian" else "auto",
        )

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The per-query mean on the context's value range, for planned queries.

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
            A row asked again is answered from the release cache.
        """
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            max_queries=context.planned_queries,
            target_range=context.value_range,
            n_teachers=context.n_estimators,
        )
        return MechanismPlan(
            mechanism,
            self,
            context.n_estimators,
            context.planned_queries,
            cached_fields={"value": (np.float64, ())},
        )


class AdaptiveRange(MechanismOptions):
    """The teachers' mean clipped to a privately estimated range, per query.

    A share of the budget releases, once, where the teachers' predictions
    lie (two private quantiles of their pooled predictions on the first
    batch of queries, by the exponential mechanism over a public grid inside
    ``target_range``; each teacher weighs one in total); every answer is
    then the mean of the teachers' predictions each clipped to that band,
    released with grid noise, whose scale is proportional to the band's
    width instead of the whole public range. :class:`AdaptiveRangeRelease`,
    ``docs/regression.rst``, "Adaptive clipping of regression answers".

    Parameters
    ----------
    range_share : float, default=0.1
        Share of the budget for the range. When that share cannot place the
        range within a quarter of the teachers' ranks (few teachers, a small
        budget), no range is bought and the answers are clipped to
        ``target_range`` (fitted ``range_skipped_``).
    aggregate : {"mean", "median", "auto"}, default="mean"
        ``"median"``: the exponential mechanism over the grid (error in
        teachers' ranks instead of the band's width); ``"auto"`` takes it
        when its rank error is within a quarter of the teachers.
    quantiles : (float, float), default=(0.05, 0.95)
        The pooled quantiles the range aims at: a band of the teachers'
        central 90 % (narrower bands mean less noise on every answer and
        more clipping of the extreme ones).
    target_std : float, default=None
        The spread (standard deviation) you expect of the target: a public
        assumption used only by ``fit``'s warning, which compares it with
        the planned noise of each answer
        (:func:`~dpsklearn.planning.plan_regression_answers`). ``None``: a
        quarter of ``target_range``'s width.

    Examples
    --------
    >>> from dpsklearn.mechanisms import AdaptiveRange
    >>> release = AdaptiveRange().calibrate(
    ...     1.0, 1e-5, max_queries=2000, target_range=(5.0, 10.0), n_teachers=2000)
    >>> release.aggregate, release.range_share
    ('mean', 0.1)
    """

    shorthand = "adaptive_range"

    _parameter_constraints: dict = {
        "range_share": [Interval(Real, 0, 1, closed="left")],
        "aggregate": [StrOptions({"mean", "median", "auto"})],
        "quantiles": ["array-like"],
        "target_std": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        range_share: float = 0.1,
        aggregate: str = "mean",
        quantiles: tuple[float, float] = (0.05, 0.95),
        target_std: float | None = None,
    ) -> None:
        self.range_share = range_share
        self.aggregate = aggregate
        self.quantiles = quantiles
        self.target_std = target_std

    abstains = False
    # The band and the median read every teacher's prediction.
    reads_each_teacher = True
    regression_aggregate = "adaptive"

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int,
        target_range: tuple[float, float],
        n_teachers: int,
        **public: Any,
    ) -> AdaptiveRangeRelease:
        """The calibrated range and per-query answers.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        target_range : tuple of float
            The public ``(lo, hi)`` range of the answers.
        n_teachers : int
            The number of teachers k.
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : AdaptiveRangeRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        return AdaptiveRangeRelease.calibrate(
            epsilon,
            delta,
            max_queries,
            target_range=target_range,
            n_teachers=n_teachers,
            range_share=self.range_share,
            aggregate=self.aggregate,
            quantiles=tuple(self.quantiles),
        )


class OutputPerturbation(MechanismOptions):
    """Output perturbation of kernel ridge regression (Nie and Wang 2017).

    The exact kernel ridge fit (averaged over ``n_shards`` disjoint shards,
    Zhang, Duchi and Wainwright 2013) is released through noise calibrated
    to Lemma 2's sensitivity bound, corrected (``docs/corrections.rst``):

    * ``release="predictions"``: each prediction, clipped to the target
      bound, gets grid Laplace noise at the per-query share of the budget
      (:func:`~dpsklearn.mechanisms.kernel_ridge_prediction_release`);
      every prediction row is charged against ``max_queries``.
    * ``release="model"`` (shift-invariant kernels): the same objective is
      fitted on ``n_components`` paired random Fourier features and the
      weights are released once (analytic Gaussian, or the high-dimensional
      Laplace at ``delta = 0``;
      :func:`~dpsklearn.mechanisms.kernel_ridge_weight_release`); the
      published model's predictions are free.

    Parameters
    ----------
    release : {"predictions", "model"}, default="predictions"
    n_components : int, default=100
        ``D``, the random Fourier frequencies of ``release="model"`` (``2 D``
        weights).
    n_shards : int or "auto", default="auto"
        ``k`` disjoint shards, each solved exactly, averaged. ``"auto"``: the
        fewest whose arrays fit scikit-learn's ``working_memory``
        (``sklearn.set_config``); an explicit ``k`` whose shards do not fit
        is refused before anything is allocated.

    Examples
    --------
    >>> from dpsklearn.mechanisms import OutputPerturbation
    >>> OutputPerturbation(release="model").calibrate(
    ...     1.0, 1e-5, kappa=1.0, y_bound=1.0, alpha=0.1, n_samples=10_000,
    ...     n_shards=1).name
    'grid_gaussian'
    """

    shorthand = "output_perturbation"

    _parameter_constraints: dict = {
        "release": [StrOptions({"predictions", "model"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_shards": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    }

    def __init__(
        self,
        release: str = "predictions",
        n_components: int = 100,
        n_shards: int | str = "auto",
    ) -> None:
        self.release = release
        self.n_components = n_components
        self.n_shards = n_shards

    abstains = False

    @property
    def publishes_model(self) -> bool:
        """``release="model"`` publishes the noisy weights."""
        return self.release == "model"

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        kappa: float,
        y_bound: float,
        alpha: float,
        n_samples: int,
        n_shards: int,
        max_queries: int | None = None,
        **public: Any,
    ) -> GridLaplaceRelease | WeightRelease:
        """The calibrated release for the resolved number of shards.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        kappa : float
            ``sup_x sqrt(K(x, x))`` of the kernel (or of the feature map).
        y_bound : float
            ``M``: targets (centred) lie in ``[-M, M]``.
        alpha : float
            The per-sample ridge penalty.
        n_samples : int
            Training rows (public).
        n_shards : int
            Shards whose solutions are averaged.
        max_queries : int or None, default=None
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : GridLaplaceRelease | WeightRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        if self.release == "predictions":
            if max_queries is None:
                raise ValueError(
                    "max_queries=None is refused for release='predictions': the "
                    "number of predictions is part of the guarantee. Pass an "
                    "int >= 1."
                )
            return kernel_ridge_prediction_release(
                epsilon,
                delta,
                max_queries,
                kappa=kappa,
                y_bound=y_bound,
                alpha=alpha,
                n_samples=n_samples,
                n_shards=n_shards,
            )
        return kernel_ridge_weight_release(
            epsilon,
            delta,
            kappa=kappa,
            y_bound=y_bound,
            alpha=alpha,
            n_samples=n_samples,
            n_weights=2 * self.n_components,
            n_shards=n_shards,
        )


class SufficientStatistics(MechanismOptions):
    """A random-feature ridge model released by perturbed sufficient statistics.

    AdaSSP (Wang 2018, "Revisiting differentially private linear
    regression"): the rows are mapped through ``n_components`` random
    Fourier features (data-independent frequencies, ``||phi(x)|| <= 1``),
    the targets clipped to the public range and centred; the Gram matrix
    ``Phi^T Phi``, the moment ``Phi^T y`` and the Gram matrix's smallest
    eigenvalue are released with Gaussian noise (replace-one sensitivities,
    ``docs/regression.rst``, "Sufficient-statistics perturbation"), and the
    regulariser is set from the noisy eigenvalue. By default a linear model
    on the rows (norm-clipped to ``row_bound``) is released first with
    ``linear_share`` of the budget, and the random features fit its
    residuals (``docs/regression.rst``, "Linear first, then the kernel").
    The released model is published: its predictions are free. Needs
    ``delta > 0``. :class:`SufficientStatisticsRelease`,
    :class:`StagedStatisticsRelease`.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        ``D``, the random frequencies; ``"auto"``: ``clip(2.5 sqrt(n
        epsilon), 50, 800)`` (public numbers; ``auto_n_components``).
    linear_share : float in [0, 1), default=0.2
        Share of the budget of the linear first stage; ``0``: random
        features only (the single-stage AdaSSP).
    row_bound : float or "auto", default="auto"
        The public bound to which each row's L2 norm is clipped for the
        linear stage; ``"auto"``: ``sqrt(3 n_features)``, the largest norm of
        a row whose columns were scaled to unit variance by their public
        bounds, as the random features' ``gamma = 1 / n_features`` already
        asks.
    shares : (float, float, float), default=(0.5, 0.48, 0.02)
        Shares of each stage's budget of the Gram matrix, the moment and the
        smallest eigenvalue.

    Examples
    --------
    >>> from dpsklearn.mechanisms import SufficientStatistics
    >>> release = SufficientStatistics(linear_share=0).calibrate(
    ...     1.0, 1e-5, n_features=101, label_bound=15.0)
    >>> release.n_features, release.label_bound
    (101, 15.0)
    >>> staged = SufficientStatistics().calibrate(
    ...     1.0, 1e-5, n_features=101, label_bound=15.0, n_linear_features=9)
    >>> [stage.n_features for stage in staged.stages], staged.stage_shares
    ([9, 101], (0.2, 0.8))
    """

    shorthand = "sufficient_statistics"

    _parameter_constraints: dict = {
        "n_components": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "linear_share": [Interval(Real, 0, 1, closed="left")],
        "row_bound": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "shares": ["array-like"],
    }

    def __init__(
        self,
        n_components: int | str = "auto",
        linear_share: float = 0.2,
        row_bound: float | str = "auto",
        shares: tuple[float, float, float] = DEFAULT_SHARES,
    ) -> None:
        self.n_components = n_components
        self.linear_share = linear_share
        self.row_bound = row_bound
        self.shares = shares

    abstains = False
    # Noisy sufficient statistics of random Fourier features of dense rows.
    releases_statistics = True

    @property
    def publishes_model(self) -> bool:
        """The released weights are the published model."""
        return True

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        n_features: int,
        label_bound: float,
        n_linear_features: int | None = None,
        **public: Any,
    ) -> SufficientStatisticsRelease | StagedStatisticsRelease:
        """The calibrated releases for ``n_features`` random features (``2 D + 1``).

        With ``linear_share > 0`` and ``n_linear_features`` given (``d + 1``),
        two stages: the linear one, then the random features.


        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        n_features : int
            Columns of the mapped rows.
        label_bound : float
            ``B_y``: labels are clipped to ``[-B_y, B_y]``.
        n_linear_features : int, default=None
            ``d + 1`` for the linear stage (None: one stage).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : SufficientStatisticsRelease | StagedStatisticsRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        if not delta > 0:
            raise ValueError(
                "SufficientStatistics releases Gaussian noise and needs delta > 0; "
                "use OutputPerturbation(release='model') for a pure guarantee."
            )
        if self.linear_share > 0 and n_linear_features is not None:
            share = float(self.linear_share)
            return StagedStatisticsRelease.calibrate(
                epsilon,
                delta,
                n_features=(int(n_linear_features), int(n_features)),
                feature_bound=1.0,
                label_bound=float(label_bound),
                stage_shares=(share, 1.0 - share),
                shares=tuple(self.shares),
            )
        return SufficientStatisticsRelease.calibrate(
            epsilon,
            delta,
            n_features=int(n_features),
            feature_bound=1.0,
            label_bound=float(label_bound),
            shares=tuple(self.shares),
        )
