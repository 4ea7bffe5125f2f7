"""The options of GNMax and Confident-GNMax, and their plans.

What a user chooses for PATE's Gaussian noisy argmax (Papernot et al.
2018), per query (``GNMax``) or behind a noisy threshold check
(``ConfidentGNMax``), and how each plans itself from public numbers into
:class:`~._gnmax.GNMaxRelease` or :class:`~._gnmax.ConfidentGNMaxRelease`
(``docs/design.rst``, "GNMax and Confident-GNMax").
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from sklearn.base import clone

from .._param_validation import Interval
from .._warn import warn_user
from ._gnmax import ConfidentGNMaxRelease, GNMaxRelease
from ._options import _UNANSWERED, MechanismOptions, MechanismPlan, PlanContext

__all__ = ["ConfidentGNMax", "GNMax"]


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
