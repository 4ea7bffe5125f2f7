"""The sparse vector stability test's options and its plan (``SparseVector``).

What a user chooses for the test of Bassily, Thakkar and Thakurta (2018),
and how it plans itself from public numbers: the planner's ``(k, T)`` where
either is ``"auto"``, the calibrated :class:`~._stability.StabilityTest`,
and a warning when little can pass (``docs/design.rst``, "The sparse vector
stability test" and "The stability planner").
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from sklearn.base import clone

from .._param_validation import Interval, StrOptions
from .._warn import warn_user
from ._options import (
    _NOISE,
    _UNANSWERED,
    NOTHING_PASSES,
    MechanismOptions,
    MechanismPlan,
    PlanContext,
    TeacherPlanner,
)
from ._stability import StabilityTest

__all__ = ["SparseVector"]


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
