"""Parameter objects of the mechanisms that release a vote, and their plans:
the sparse vector stability test, GNMax, Confident-GNMax, the exponential
mechanism (``dpsklearn.mechanisms``, "Mechanism parameter objects" in
``_options.py``).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import clone

from .._param_validation import Interval, StrOptions
from .._warn import warn_user
from ._gnmax import ConfidentGNMaxRelease, GNMaxRelease
from ._options import (
    _NOISE,
    _UNANSWERED,
    NOTHING_PASSES,
    MechanismOptions,
    MechanismPlan,
    PlanContext,
    TeacherPlanner,
)
from ._per_query import SoftMajority
from ._stability import StabilityTest

__all__ = [
    "ConfidentGNMax",
    "Exponential",
    "GNMax",
    "SparseVector",
]


def _planner(context: PlanContext) -> TeacherPlanner:
    """The context's planner (``TypeError`` for a context built without one)."""
    if context.planner is None:
        raise TypeError(
            f"{context.owner} planned this mechanism without a planner: pass "
            "planner=dpsklearn.planning in its PlanContext."
        )
    return context.planner


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
    serves = frozenset({"vote_labels"})

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

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The test for the planner's ``(k, T)`` where either is ``"auto"``.

        The planner (``docs/design.rst``, "The stability planner") takes the
        ``(k, T)`` expected to answer most of the planned queries by
        passing; a warning says when little or nothing can pass.

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
            ``max_unstable`` resolved in its options; no query cap beyond
            the user's ``max_queries``.
        """
        n_estimators = context.n_estimators
        max_unstable = self.max_unstable
        row = None
        if not context.n_estimators_fixed or max_unstable == "auto":
            row = _planner(context).plan_stability_test(
                context.n_samples,
                context.planned_queries,
                context.epsilon,
                context.delta,
                unstable_fraction=self.unstable_fraction,
                n_estimators=n_estimators if context.n_estimators_fixed else None,
                max_unstable=None if max_unstable == "auto" else max_unstable,
                min_samples_per_shard=context.min_samples_per_shard,
                calibration=self.noise,
                fallback=self.fallback,
                noisy_max_share=self.noisy_max_share,
            )[0]
            n_estimators, max_unstable = row.n_estimators, row.max_unstable
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            max_unstable=int(max_unstable),
            max_queries=context.max_queries,
        )
        self._warn_if_little_can_pass(context, n_estimators, mechanism, row)
        resolved = clone(self).set_params(max_unstable=int(max_unstable))
        return MechanismPlan(
            mechanism, resolved, int(n_estimators), context.max_queries
        )

    def _warn_if_little_can_pass(
        self,
        context: PlanContext,
        n_estimators: int,
        mechanism: StabilityTest,
        row: Any,
    ) -> None:
        # The largest possible distance is ceil(k/2) - 1 (unanimous teachers);
        # when even that sits below w, a query passes only on a noise excess of
        # several noise scales, so essentially nothing is answered by the test.
        calibration = mechanism.calibration
        best_distance = -(-n_estimators // 2) - 1
        cannot = best_distance <= calibration.threshold
        low = row is not None and row.expected_answered < 0.5
        if not (cannot or low):
            return
        if (
            self.fallback == "abstain"
            and calibration.pass_probability(best_distance) < NOTHING_PASSES
        ):
            # Nothing at all will be answered. A warning, not an error: inside
            # a search over epsilon such a candidate scores its abstentions
            # (answered fraction 0) instead of failing to fit.
            warn_user(
                f"SparseVector(fallback='abstain') with {n_estimators} teachers "
                f"at epsilon={context.epsilon} will answer nothing: even unanimous "
                "votes pass the stability test with probability below "
                f"{NOTHING_PASSES:g}, so every query is abstained on. "
                "Use more training rows, a larger epsilon or a smaller "
                "max_unstable, mechanism=ConfidentGNMax() or the default "
                "mechanism='auto', or PrivatePredictionClassifier.",
                UserWarning,
            )
            return
        what = (
            "even unanimous votes fall short of the stability test's "
            "threshold, so almost no query can pass the test"
            if cannot
            else f"a query needs {row.agreement_to_pass:.0%} of the teachers to "
            "agree to pass; the planner expects "
            f"{row.expected_answered:.0%} of {context.planned_queries} queries "
            f"answered with unstable_fraction={self.unstable_fraction}"
        )
        warn_user(
            f"{context.owner} with {n_estimators} teachers "
            f"({calibration.name} calibration, max_unstable={calibration.cutoff}, "
            f"epsilon={context.epsilon}): {what}. More training rows, a larger "
            "epsilon or fewer queries help; see "
            "dpsklearn.planning.plan_stability_test, or use "
            "mechanism=ConfidentGNMax(), PrivatePredictionClassifier or "
            "KnowledgeTransferClassifier.",
            UserWarning,
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
    serves = frozenset({"vote_labels"})

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

    def plan(self, context: PlanContext) -> MechanismPlan:
        """Confident-GNMax for the planned queries, ``max_answers`` resolved.

        Every threshold check is charged (Papernot et al. 2018, Algorithm
        1), so the guarantee pays for ``planned_queries`` of them; a warning
        says when the vote threshold exceeds ``k`` (only noise can pass).

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
        """
        n_estimators = context.n_estimators
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            max_queries=context.planned_queries,
            n_teachers=n_estimators,
            n_classes=context.n_classes,
        )
        if mechanism.threshold > n_estimators:
            warn_user(
                f"ConfidentGNMax with {n_estimators} teachers: its vote "
                f"threshold ({mechanism.threshold:.0f} votes, for max_answers="
                f"{mechanism.calibration.max_answers} at epsilon={context.epsilon}) "
                "is more than the number of teachers, so only noise can pass "
                "the check and almost every query will be abstained on; use "
                "more teachers, fewer max_answers or max_queries, or a larger "
                "epsilon.",
                UserWarning,
            )
        resolved = clone(self).set_params(
            max_answers=mechanism.calibration.max_answers
        )
        return MechanismPlan(
            mechanism, resolved, n_estimators, context.planned_queries
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
    serves = frozenset({"vote_labels"})

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

    def teachers_for(self, epsilon_per_query: float) -> int:
        """Dwork and Feldman's Theorem 1: ``r = ceil(6 ln(4/alpha) / eps_q)``.

        Training ``r`` learners on disjoint parts and answering by the
        exponential mechanism on their votes keeps the error within
        ``alpha = target_error`` (Dwork and Feldman 2018, Theorem 1;
        :func:`dpsklearn.planning.private_prediction_r`).

        Parameters
        ----------
        epsilon_per_query : float
            ``eps_q`` of one answer (> 0).

        Returns
        -------
        r : int
        """
        alpha = float(self.target_error)
        return int(math.ceil(6.0 * math.log(4.0 / alpha) / epsilon_per_query))

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The soft majority for the planned queries; ``k`` by Theorem 1.

        When the user left ``k`` to the estimator, Dwork and Feldman's
        (2018) Theorem 1 gives the teachers ``r`` that keep answers within
        ``target_error`` at the per-query epsilon, capped by the teachers
        the rows support (with a warning when the cap binds). A row asked
        again is answered from the release cache, free.

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
        """
        n_estimators = context.n_estimators
        if not context.n_estimators_fixed:
            supported = n_estimators
            epsilon_per_query = self.epsilon_per_query(
                context.epsilon, context.delta, context.planned_queries
            )
            needed = self.teachers_for(epsilon_per_query)
            if needed > supported:
                warn_user(
                    f"n_estimators='auto': answers within target_error="
                    f"{self.target_error} at this budget need {needed} teachers "
                    f"(epsilon={context.epsilon:g} over max_queries="
                    f"{context.max_queries} answers), but {context.n_samples} "
                    f"training rows give only {supported} teachers of "
                    f"{context.min_samples_per_shard} rows each; using "
                    f"{supported}, so expect more wrong answers. More training "
                    "rows, a smaller max_queries or a larger epsilon help.",
                    UserWarning,
                )
            n_estimators = min(needed, supported)
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            max_queries=context.planned_queries,
            n_teachers=n_estimators,
            n_classes=context.n_classes,
        )
        return MechanismPlan(
            mechanism,
            self,
            n_estimators,
            context.planned_queries,
            cached_fields={"label": (np.int64, ())},
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
    # predict_proba projects the noisy counts predict released.
    proba_from_votes = True
    needs_positive_delta = True

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
