"""The exponential mechanism's options and its plan (``Exponential``).

What a user chooses for Dwork and Feldman's (2018) soft majority, answered
per query, and how it plans itself from public numbers: Theorem 1's number
of teachers when ``k`` is left to the estimator, the per-query epsilon of
:class:`~._per_query.SoftMajority`, and the release cache that answers a
row asked again (``docs/design.rst``, "Per-query releases").
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from .._param_validation import Interval
from .._warn import warn_user
from ._options import _UNANSWERED, MechanismOptions, MechanismPlan, PlanContext
from ._per_query import SoftMajority

__all__ = ["Exponential"]


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
