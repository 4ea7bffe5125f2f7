"""Mechanism parameter objects: what a user chooses, before anything is calibrated.

An estimator's ``mechanism`` parameter takes one of these objects (or its
string shorthand for the defaults): it carries the options that belong to
that mechanism and to no other, for example
``SparseVector(max_unstable=100, fallback="abstain")`` or
``ConfidentGNMax(max_answers=2000)``. They are scikit-learn parameter
objects (``get_params``/``set_params``, ``clone``), so ``GridSearchCV`` can
search ``mechanism__max_unstable`` or ``mechanism=[SparseVector(),
ConfidentGNMax()]``.

At ``fit`` the estimator turns its parameter object, the total ``(epsilon,
delta)`` and public sizes (teachers, classes, queries) into a calibrated
:class:`~dpsklearn.mechanisms.Mechanism` with :meth:`MechanismOptions.calibrate`;
the object itself is never changed. The composition that splits the budget
is always the tightest admissible one for the mechanism and the accountant
(``docs/design.rst``, "Composition"); the route taken is the fitted
attribute ``calibration_`` of the estimator. The noise family, where there
is a choice, is the option ``noise``.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

from sklearn.base import BaseEstimator

from .._param_validation import Interval, StrOptions, ValidatesParameters
from ._adaptive_range import AdaptiveRangeRelease
from ._base import Mechanism
from ._gnmax import ConfidentGNMaxRelease, GNMaxRelease
from ._grid_gaussian import GridGaussianRelease, clipped_mean_release
from ._kernel_ridge import (
    WeightRelease,
    kernel_ridge_prediction_release,
    kernel_ridge_weight_release,
)
from ._per_query import GridLaplaceRelease, SoftMajority
from ._repeat_select import RUN_DISTRIBUTIONS, RepeatedSelection
from ._stability import SoftLabelTest, StabilityTest, _n_bins
from ._sufficient_statistics import DEFAULT_SHARES, SufficientStatisticsRelease

__all__ = [
    "AdaptiveRange",
    "ClippedMean",
    "ConfidentGNMax",
    "Exponential",
    "GNMax",
    "MechanismOptions",
    "OutputPerturbation",
    "RepeatAndSelect",
    "SoftLabelHistogram",
    "SparseVector",
    "SufficientStatistics",
    "resolve_mechanism",
    "soft_label_bins",
]

_NOISE = StrOptions({"auto", "laplace", "gaussian"})


class MechanismOptions(ValidatesParameters, BaseEstimator):
    """Base of the mechanism parameter objects.

    Subclasses store their options in ``__init__`` (scikit-learn's rule:
    parameters only), declare ``_parameter_constraints`` and a
    ``shorthand`` (the string an estimator's ``mechanism`` also accepts),
    and implement ``calibrate(epsilon, delta, **public)``, which returns the
    calibrated :class:`~dpsklearn.mechanisms.Mechanism`.
    """

    #: The string that stands for this mechanism with its defaults.
    shorthand: ClassVar[str] = ""
    #: ``calibrate(epsilon, delta, **public sizes)``: the calibrated
    #: :class:`Mechanism` (each subclass takes the public sizes it needs).
    calibrate: Callable[..., Mechanism]

    @property
    def publishes_model(self) -> bool:
        """Whether the estimator's fitted model is a release (publishable)."""
        return False

    def validated(self) -> MechanismOptions:
        """``self`` after checking every option (``ValueError`` naming it)."""
        self._validate_params()
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags


def resolve_mechanism(
    mechanism: str | MechanismOptions,
    choices: dict[str, type[MechanismOptions]],
    *,
    owner: str,
) -> MechanismOptions:
    """The parameter object an estimator's ``mechanism`` stands for, validated.

    Parameters
    ----------
    mechanism : str or MechanismOptions
        A shorthand among ``choices`` (the defaults of that mechanism) or an
        instance of one of their classes.
    choices : dict of str to MechanismOptions subclass
        What the estimator accepts.
    owner : str
        The estimator's name, for the message.

    Returns
    -------
    options : MechanismOptions
        A new object for a shorthand, ``mechanism`` itself otherwise.

    Raises
    ------
    ValueError, TypeError
        For a shorthand or object the estimator does not take, or an option
        out of range.

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax, Exponential, resolve_mechanism
    >>> choices = {"exponential": Exponential, "gnmax": GNMax}
    >>> resolve_mechanism("gnmax", choices, owner="PrivatePredictionClassifier")
    GNMax()
    """
    if isinstance(mechanism, str):
        try:
            return choices[mechanism]().validated()
        except KeyError:
            names = ", ".join(repr(name) for name in sorted(choices))
            raise ValueError(
                f"mechanism={mechanism!r} is not one of {owner}'s mechanisms: "
                f"use {names}, or an instance of their classes."
            ) from None
    if isinstance(mechanism, tuple(choices.values())):
        return mechanism.validated()
    names = ", ".join(cls.__name__ for cls in choices.values())
    raise TypeError(
        f"mechanism={mechanism!r} is not a mechanism {owner} can run: use one of "
        f"{names} (or their shorthands "
        f"{', '.join(repr(name) for name in sorted(choices))})."
    )


class SparseVector(MechanismOptions):
    """The sparse vector stability test (Bassily, Thakkar and Thakurta 2018).

    A query whose distance to instability clears a noisy threshold gets the
    teachers' exact majority label, free; a query that fails costs one of
    ``max_unstable`` and gets the ``fallback``. Calibration and guarantee:
    :class:`~dpsklearn.mechanisms.StabilityTest`, ``docs/design.rst``, "The
    sparse vector stability test".

    Parameters
    ----------
    max_unstable : int or "auto", default=100
        ``T``: how many failed tests the budget pays for; the model halts
        after ``T``. ``"auto"``: the planner's choice
        (:func:`~dpsklearn.planning.plan_stability_test`).
    fallback : {"noisy_max", "abstain"}, default="noisy_max"
        The answer to a query that fails: the exponential mechanism on the
        votes (paid from ``noisy_max_share`` of the budget) or an abstention.
    noisy_max_share : float, default=0.5
        Share of the budget for the ``"noisy_max"`` fallback.
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        Discrete Laplace noise (optimal composition of the ``T`` instances
        with their fallbacks) or discrete Gaussian noise (Renyi
        composition; needs the estimator's ``max_queries``). ``"auto"``
        takes the admissible one with the smaller threshold.
    unstable_fraction : float, default=0.05
        The share of queries you expect the teachers to disagree on: a
        public assumption used only by the planner (``n_estimators="auto"``,
        ``max_unstable="auto"``, the estimator's choice of mechanism and its
        warnings).

    Examples
    --------
    >>> from dpsklearn.mechanisms import SparseVector
    >>> test = SparseVector(max_unstable=50).calibrate(1.0, 1e-5, max_unstable=50)
    >>> test.max_unstable, test.fallback
    (50, 'noisy_max')
    """

    shorthand = "sparse_vector"

    _parameter_constraints: dict = {
        "max_unstable": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "fallback": [StrOptions({"noisy_max", "abstain"})],
        "noisy_max_share": [Interval(Real, 0, 1, closed="neither")],
        "noise": [_NOISE],
        "unstable_fraction": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(
        self,
        max_unstable: int | str = 100,
        fallback: str = "noisy_max",
        noisy_max_share: float = 0.5,
        noise: str = "auto",
        unstable_fraction: float = 0.05,
    ) -> None:
        self.max_unstable = max_unstable
        self.fallback = fallback
        self.noisy_max_share = noisy_max_share
        self.noise = noise
        self.unstable_fraction = unstable_fraction

    @property
    def abstains(self) -> bool:
        """Whether a failed test is answered by abstaining."""
        return self.fallback == "abstain"

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_unstable: int,
        max_queries: int | None = None,
        **public: Any,
    ) -> StabilityTest:
        """The calibrated test for ``T = max_unstable`` (resolved by the estimator)."""
        return StabilityTest.calibrate(
            epsilon,
            delta,
            max_unstable=int(max_unstable),
            calibration=self.noise,
            fallback=self.fallback,
            noisy_max_share=self.noisy_max_share,
            max_queries=max_queries,
        )


class ConfidentGNMax(MechanismOptions):
    """Confident-GNMax (Papernot et al. 2018, "Scalable private learning with PATE").

    A query is answered only when its largest vote count plus discrete
    Gaussian noise clears a threshold, then by the Gaussian noisy argmax;
    otherwise the model abstains. Every threshold check of the estimator's
    ``max_queries`` is charged (the data-independent worst case), plus at
    most ``max_answers`` noisy argmaxes: :class:`ConfidentGNMaxRelease`,
    ``docs/design.rst``, "GNMax and Confident-GNMax".

    Parameters
    ----------
    max_answers : int, default=None
        The model halts after this many answers (abstentions do not count);
        ``None`` means the estimator's ``max_queries``. Fewer answers paid
        for means less noise on each.

    Examples
    --------
    >>> from dpsklearn.mechanisms import ConfidentGNMax
    >>> release = ConfidentGNMax(max_answers=100).calibrate(
    ...     1.0, 1e-5, max_queries=1000, n_teachers=500, n_classes=2)
    >>> release.calibration.max_answers
    100
    """

    shorthand = "confident_gnmax"

    _parameter_constraints: dict = {
        "max_answers": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, max_answers: int | None = None) -> None:
        self.max_answers = max_answers

    abstains = True

    def answers_paid_for(self, max_queries: int) -> int:
        """``max_answers``, or ``max_queries`` when it is None; checked against it."""
        if self.max_answers is None:
            return int(max_queries)
        if self.max_answers > max_queries:
            raise ValueError(
                f"max_answers={self.max_answers} must be at most "
                f"max_queries={max_queries}."
            )
        return int(self.max_answers)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int,
        n_teachers: int,
        n_classes: int,
        **public: Any,
    ) -> ConfidentGNMaxRelease:
        """The calibrated mechanism for ``max_queries`` checks."""
        return ConfidentGNMaxRelease.calibrate(
            epsilon,
            delta,
            max_queries,
            self.answers_paid_for(max_queries),
            n_teachers=n_teachers,
            n_classes=n_classes,
            calibration="auto",
        )


class Exponential(MechanismOptions):
    """The exponential mechanism on the teachers' votes, per query.

    Dwork and Feldman's (2018) soft majority: each answer is sampled with
    ``P(label) ~ exp(eps_q * votes / 2)``, ``eps_q`` the per-query share of
    the budget that composes ``max_queries`` answers to ``(epsilon, delta)``
    (the exact composition of bounded-range mechanisms, Dong, Durfee and
    Rogers 2020). ``predict_proba`` releases the teachers' mean probability
    row with grid Laplace noise. :class:`SoftMajority`, ``docs/design.rst``,
    "Per-query releases".

    Parameters
    ----------
    target_error : float, default=0.1
        Used only by the estimator's ``n_estimators="auto"``: the number of
        teachers that Dwork and Feldman's Theorem 1 asks for this error.

    Examples
    --------
    >>> from dpsklearn.mechanisms import Exponential
    >>> soft = Exponential().calibrate(
    ...     1.0, 1e-5, max_queries=100, n_teachers=50, n_classes=2)
    >>> soft.calibration_name
    'bounded_range'
    """

    shorthand = "exponential"

    _parameter_constraints: dict = {
        "target_error": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, target_error: float = 0.1) -> None:
        self.target_error = target_error

    abstains = False

    def epsilon_per_query(
        self, epsilon: float, delta: float, max_queries: int
    ) -> float:
        """``eps_q`` before the number of teachers is known (for ``"auto"`` k)."""
        eps_q, _ = SoftMajority.epsilon_per_query_for(epsilon, delta, max_queries)
        return eps_q

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int,
        n_teachers: int,
        n_classes: int,
        **public: Any,
    ) -> SoftMajority:
        """The calibrated per-query mechanism."""
        return SoftMajority.calibrate(
            epsilon,
            delta,
            max_queries,
            n_teachers=n_teachers,
            n_classes=n_classes,
            calibration="auto",
        )


class GNMax(MechanismOptions):
    """The Gaussian noisy argmax of the vote counts, per query (PATE's GNMax).

    Each answer is ``argmax(votes + N_Z(0, sigma^2))`` with discrete Gaussian
    noise; ``sigma`` is calibrated so that ``max_queries`` answers compose to
    ``(epsilon, delta)`` (``delta > 0`` required). ``predict_proba`` is the
    projection of the same noisy counts (free once ``predict`` paid).
    :class:`GNMaxRelease`, ``docs/design.rst``, "GNMax and Confident-GNMax".

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax
    >>> release = GNMax().calibrate(1.0, 1e-5, max_queries=1000)
    >>> release.sigma > 1
    True
    """

    shorthand = "gnmax"
    _parameter_constraints: dict = {}
    abstains = False

    def calibrate(
        self, epsilon: float, delta: float, *, max_queries: int, **public: Any
    ) -> GNMaxRelease:
        """The calibrated per-query Gaussian mechanism."""
        if not delta > 0:
            raise ValueError(
                "delta=0 is not allowed with mechanism GNMax: the Gaussian "
                "mechanism's guarantee needs delta > 0. Pass a delta in (0, 1), "
                "or use the Exponential mechanism for a pure guarantee."
            )
        return GNMaxRelease.calibrate(epsilon, delta, max_queries, calibration="auto")


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
        """The calibrated per-query release of the clipped mean."""
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
        """The calibrated range and per-query answers."""
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


class SoftLabelHistogram(MechanismOptions):
    """The double stability test on a histogram of soft labels.

    Bassily, Thakkar and Thakurta (2018), Algorithms 6-8, corrected
    (``docs/corrections.rst``): the teachers' soft labels in ``[0, 1]`` are
    binned at width ``gamma``; a query whose fullest bin is stable gets its
    midpoint, else the shifted histogram is tested; a query failing both
    gets the ``fallback``. :class:`SoftLabelTest`, ``docs/design.rst``,
    "Soft-label queries: the double test".

    Parameters
    ----------
    gamma : float, default=0.1
        Bin width; ``1 / gamma`` must be an integer >= 2.
    max_unstable : int, default=100
        ``T``: the failed-test count at which the model halts.
    fallback : {"midpoint", "noisy_mean"}, default="midpoint"
        A query failing both tests gets the centre of ``target_range``
        (free, data-independent: an abstention) or a grid-Laplace mean paid
        from ``noisy_mean_share`` of the budget.
    noisy_mean_share : float, default=0.5
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        The sparse vector's noise family (as :class:`SparseVector`).

    Examples
    --------
    >>> from dpsklearn.mechanisms import SoftLabelHistogram
    >>> SoftLabelHistogram(gamma=0.25).n_bins()
    4
    """

    shorthand = "soft_label"

    _parameter_constraints: dict = {
        "gamma": [Interval(Real, 0, 0.5, closed="right")],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "fallback": [StrOptions({"midpoint", "noisy_mean"})],
        "noisy_mean_share": [Interval(Real, 0, 1, closed="neither")],
        "noise": [_NOISE],
    }

    def __init__(
        self,
        gamma: float = 0.1,
        max_unstable: int = 100,
        fallback: str = "midpoint",
        noisy_mean_share: float = 0.5,
        noise: str = "auto",
    ) -> None:
        self.gamma = gamma
        self.max_unstable = max_unstable
        self.fallback = fallback
        self.noisy_mean_share = noisy_mean_share
        self.noise = noise

    @property
    def abstains(self) -> bool:
        """Whether a query failing both tests is answered by abstaining."""
        return self.fallback == "midpoint"

    def n_bins(self) -> int:
        """``1 / gamma`` as an integer >= 2 (``ValueError`` naming ``gamma``)."""
        return soft_label_bins(self.gamma)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int | None = None,
        **public: Any,
    ) -> SoftLabelTest:
        """The calibrated double test."""
        return SoftLabelTest.calibrate(
            epsilon,
            delta,
            max_unstable=self.max_unstable,
            n_bins=self.n_bins(),
            calibration=self.noise,
            fallback=self.fallback,
            noisy_mean_share=self.noisy_mean_share,
            max_queries=max_queries,
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
        """The calibrated release for the resolved number of shards."""
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
    regulariser is set from the noisy eigenvalue. The released model is
    published: its predictions are free. Needs ``delta > 0``.
    :class:`SufficientStatisticsRelease`.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        ``D``, the random frequencies; ``"auto"``: ``clip(2.5 sqrt(n
        epsilon), 50, 800)`` (public numbers; ``auto_n_components``).
    shares : (float, float, float), default=(0.5, 0.48, 0.02)
        Shares of the budget of the Gram matrix, the moment and the
        smallest eigenvalue.

    Examples
    --------
    >>> from dpsklearn.mechanisms import SufficientStatistics
    >>> release = SufficientStatistics().calibrate(
    ...     1.0, 1e-5, n_features=101, label_bound=15.0)
    >>> release.n_features, release.label_bound
    (101, 15.0)
    """

    shorthand = "sufficient_statistics"

    _parameter_constraints: dict = {
        "n_components": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "shares": ["array-like"],
    }

    def __init__(
        self,
        n_components: int | str = "auto",
        shares: tuple[float, float, float] = DEFAULT_SHARES,
    ) -> None:
        self.n_components = n_components
        self.shares = shares

    abstains = False

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
        **public: Any,
    ) -> SufficientStatisticsRelease:
        """The calibrated three releases for ``n_features`` features (``2 D + 1``)."""
        if not delta > 0:
            raise ValueError(
                "SufficientStatistics releases Gaussian noise and needs delta > 0; "
                "use OutputPerturbation(release='model') for a pure guarantee."
            )
        return SufficientStatisticsRelease.calibrate(
            epsilon,
            delta,
            n_features=int(n_features),
            feature_bound=1.0,
            label_bound=float(label_bound),
            shares=tuple(self.shares),
        )


class RepeatAndSelect(MechanismOptions):
    """Private selection by random repetition (Papernot and Steinke 2022).

    A secret, random number of runs; each run fits one configuration drawn
    uniformly from the grid at the per-candidate budget and scores it on the
    validation rows with a discrete-Gaussian-noised count of correct rows;
    only the best run is released, with its noisy score.
    :class:`RepeatedSelection`, ``docs/design.rst``, "Private model
    selection".

    Parameters
    ----------
    mean_runs : float, default=None
        Mean number of runs (>= 1); ``None``: twice the number of
        configurations.
    runs : {"poisson", "geometric", "logarithmic"} or float, default="poisson"
        Distribution of the secret number of runs; a float ``>= 0`` is the
        shape of the truncated negative binomial (1: geometric, 0:
        logarithmic). With ``"poisson"`` no run is drawn with probability
        ``exp(-mean_runs)``; the search then raises.
    score_sigma : float, default=None
        Scale of the discrete Gaussian noise on each score count. ``None``:
        the larger of ``n_validation / 200`` (half a point of accuracy) and
        the scale that costs a tenth of a run's budget.
    tolerance : float, default=None
        Regressors: a validation row counts as correct when ``|prediction -
        y| <= tolerance`` (required for a regressor, unused for a
        classifier).

    Examples
    --------
    >>> from dpsklearn.mechanisms import RepeatAndSelect
    >>> RepeatAndSelect().resolved_mean_runs(n_configurations=4)
    8.0
    """

    shorthand = "repeat_and_select"

    _parameter_constraints: dict = {
        "mean_runs": [Interval(Real, 1, None, closed="left"), None],
        "runs": [
            StrOptions(set(RUN_DISTRIBUTIONS)),
            Interval(Real, 0, None, closed="left"),
        ],
        "score_sigma": [Interval(Real, 0, None, closed="neither"), None],
        "tolerance": [Interval(Real, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        mean_runs: float | None = None,
        runs: str | float = "poisson",
        score_sigma: float | None = None,
        tolerance: float | None = None,
    ) -> None:
        self.mean_runs = mean_runs
        self.runs = runs
        self.score_sigma = score_sigma
        self.tolerance = tolerance

    def resolved_mean_runs(self, n_configurations: int) -> float:
        """``mean_runs``, or twice the number of configurations."""
        if self.mean_runs is None:
            return 2.0 * n_configurations
        return float(self.mean_runs)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        events_at: Any,
        n_configurations: int,
        n_validation: int,
        **public: Any,
    ) -> RepeatedSelection:
        """The calibrated selection: the largest per-candidate epsilon that fits."""
        mean_runs = self.resolved_mean_runs(n_configurations)
        sigma = self.score_sigma or RepeatedSelection.default_score_sigma(
            epsilon,
            delta,
            mean_runs=mean_runs,
            runs=self.runs,
            n_validation=n_validation,
        )
        return RepeatedSelection.calibrate(
            epsilon,
            delta,
            events_at,
            mean_runs=mean_runs,
            runs=self.runs,
            score_sigma=sigma,
        )


def soft_label_bins(gamma: float) -> int:
    """The number of bins ``1 / gamma``; ``ValueError`` unless an integer >= 2."""
    return _n_bins(gamma)
