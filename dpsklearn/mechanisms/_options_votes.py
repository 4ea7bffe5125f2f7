"""Parameter objects of the mechanisms that release a vote: the stability
tests, GNMax, Confident-GNMax, the exponential mechanism, the soft-label
histogram (``dpsklearn.mechanisms``, "Mechanism parameter objects" in
``_options.py``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from .._param_validation import Interval, StrOptions
from ._gnmax import ConfidentGNMaxRelease, GNMaxRelease
from ._options import _NOISE, _UNANSWERED, MechanismOptions
from ._per_query import SoftMajority
from ._stability import SoftLabelTest, StabilityTest, _n_bins

__all__ = [
    "ConfidentGNMax",
    "Exponential",
    "GNMax",
    "SoftLabelHistogram",
    "SparseVector",
    "soft_label_bins",
]


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
    unanswered : {"student", "abstain"}, default="student"
        Rows the mechanism does not answer (failed tests under
        ``fallback="abstain"``, and every row once the model has halted or
        spent ``max_queries``): ``"student"`` answers them with a student
        fitted on the query rows and the labels released so far
        (post-processing of the release: free, inside the guarantee; the
        most frequent released label while fewer than 10 answers or one
        class were released, an abstention while none were); ``"abstain"``
        returns the estimator's free ``abstain_label_``.

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
        "unanswered": [_UNANSWERED],
    }

    def __init__(
        self,
        max_unstable: int | str = 100,
        fallback: str = "noisy_max",
        noisy_max_share: float = 0.5,
        noise: str = "auto",
        unstable_fraction: float = 0.05,
        unanswered: str = "student",
    ) -> None:
        self.max_unstable = max_unstable
        self.fallback = fallback
        self.noisy_max_share = noisy_max_share
        self.noise = noise
        self.unstable_fraction = unstable_fraction
        self.unanswered = unanswered

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
        """The calibrated test for ``T = max_unstable`` (resolved by the estimator).

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_unstable : int
            T, resolved by the estimator: the failed tests before the model halts.
        max_queries : int or None, default=None
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : StabilityTest
            Calibrated and frozen: its noise scales, thresholds and events.
        """
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
    unanswered : {"student", "abstain"}, default="student"
        Rows the mechanism does not answer (failed threshold checks, and
        every row once ``max_answers`` answers or ``max_queries`` checks are
        spent): ``"student"`` answers them with a student fitted on the
        query rows and the labels released so far (post-processing of the
        release: free, inside the guarantee; the most frequent released
        label while fewer than 10 answers or one class were released, an
        abstention while none were); ``"abstain"`` returns the estimator's
        free ``abstain_label_``.

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
        "unanswered": [_UNANSWERED],
    }

    def __init__(
        self, max_answers: int | None = None, unanswered: str = "student"
    ) -> None:
        self.max_answers = max_answers
        self.unanswered = unanswered

    abstains = True

    def answers_paid_for(self, max_queries: int) -> int:
        """``max_answers``, or ``max_queries`` when it is None; checked against it.

        Parameters
        ----------
        max_queries : int
            The threshold checks paid for.

        Returns
        -------
        max_answers : int
        """
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
        """The calibrated mechanism for ``max_queries`` checks.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        n_teachers : int
            The number of teachers k.
        n_classes : int
            The size of the public label set.
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : ConfidentGNMaxRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
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
    unanswered : {"student", "abstain"}, default="student"
        Rows after ``max_queries`` are spent: ``"student"`` answers them
        with a student fitted on the query rows and the labels released so
        far (post-processing of the release: free, inside the guarantee; the
        most frequent released label while fewer than 10 answers or one
        class were released); ``"abstain"`` returns the estimator's free
        ``abstain_label_``.

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
        "unanswered": [_UNANSWERED],
    }

    def __init__(
        self, target_error: float = 0.1, unanswered: str = "student"
    ) -> None:
        self.target_error = target_error
        self.unanswered = unanswered

    abstains = False

    def epsilon_per_query(
        self, epsilon: float, delta: float, max_queries: int
    ) -> float:
        """The per-query epsilon before the number of teachers is known.

        For ``n_estimators="auto"``.

        Parameters
        ----------
        epsilon, delta : float
            The whole release's budget.
        max_queries : int
            The answers it pays for.

        Returns
        -------
        epsilon_per_query : float
        """
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
        """The calibrated per-query mechanism.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        n_teachers : int
            The number of teachers k.
        n_classes : int
            The size of the public label set.
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : SoftMajority
            Calibrated and frozen: its noise scales, thresholds and events.
        """
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

    Parameters
    ----------
    unanswered : {"student", "abstain"}, default="student"
        Rows after ``max_queries`` are spent: ``"student"`` answers them
        with a student fitted on the query rows and the labels released so
        far (post-processing, free); ``"abstain"`` returns the estimator's
        free ``abstain_label_``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax
    >>> release = GNMax().calibrate(1.0, 1e-5, max_queries=1000)
    >>> release.sigma > 1
    True
    """

    shorthand = "gnmax"
    _parameter_constraints: dict = {"unanswered": [_UNANSWERED]}
    abstains = False

    def __init__(self, unanswered: str = "student") -> None:
        self.unanswered = unanswered

    def calibrate(
        self, epsilon: float, delta: float, *, max_queries: int, **public: Any
    ) -> GNMaxRelease:
        """The calibrated per-query Gaussian mechanism.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : GNMaxRelease
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        if not delta > 0:
            raise ValueError(
                "delta=0 is not allowed with mechanism GNMax: the Gaussian "
                "mechanism's guarantee needs delta > 0. Pass a delta in (0, 1), "
                "or use the Exponential mechanism for a pure guarantee."
            )
        return GNMaxRelease.calibrate(epsilon, delta, max_queries, calibration="auto")


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
        """``1 / gamma`` as an integer >= 2 (``ValueError`` naming ``gamma``).

        Returns
        -------
        n_bins : int
        """
        return soft_label_bins(self.gamma)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int | None = None,
        **public: Any,
    ) -> SoftLabelTest:
        """The calibrated double test.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int or None, default=None
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : SoftLabelTest
            Calibrated and frozen: its noise scales, thresholds and events.
        """
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


def soft_label_bins(gamma: float) -> int:
    """The number of bins ``1 / gamma``; ``ValueError`` unless an integer >= 2."""
    return _n_bins(gamma)
