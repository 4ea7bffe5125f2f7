"""The one schema of a fitted model's public serving counters."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BudgetStatus"]


@dataclass(frozen=True)
class BudgetStatus:
    """Where a fitted private model stands: what it served and what it has left.

    Returned by every estimator's ``budget_status()``. Only public figures:
    counters and ``(epsilon, delta)``, never votes, noise or thresholds.

    Attributes
    ----------
    n_served : int
        Query rows the mechanism released an answer for (a row asked again
        and answered from the release cache is not counted twice; rows
        after a halt or a spent ``max_queries`` are not counted).
    n_answered : int
        Of those, rows given a private answer (a passed test, a noisy-max or
        noisy-mean fallback, a per-query release); the rest of ``n_served``
        the mechanism abstained on.
    n_abstained : int
        Rows returned as abstentions (``abstain_label_``, a regressor's
        fallback value, a uniform probability row): abstentions of the
        mechanism and rows after a halt or a spent ``max_queries`` that no
        student answered. Every call counts its rows, a row asked again
        included.
    n_failed_tests : int
        Stability tests (or Confident-GNMax threshold checks) that failed.
        A failed test is answered by the fallback, so it need not be an
        abstention.
    query_units_spent : int
        Query units charged against ``max_queries`` (a ``predict_proba``
        row may cost several).
    max_queries : int or None
        The cap in query units (None: no cap).
    spent : tuple of float
        ``(epsilon, delta)`` that the releases so far cost, under the
        mechanism's own calibration.
    remaining : tuple of float
        ``(epsilon, delta)`` of the model's budget not yet spent.
    halted : bool
        Whether the mechanism answers nothing more (the rest is the student's
        or free abstentions).
    n_student : int
        Rows answered by the student of the released answers (a classifier's
        rows the mechanism did not answer; post-processing, free). Every call
        counts its rows, a row asked again included.

    Examples
    --------
    >>> from dpsklearn.serving import BudgetStatus
    >>> status = BudgetStatus(10, 8, 2, 2, 10, None, (0.2, 0.0), (0.8, 1e-5), False)
    >>> status.n_answered + status.n_abstained == status.n_served
    True
    """

    n_served: int
    n_answered: int
    n_abstained: int
    n_failed_tests: int
    query_units_spent: int
    max_queries: int | None
    spent: tuple[float, float]
    remaining: tuple[float, float]
    halted: bool
    n_student: int = 0

    @property
    def query_units_remaining(self) -> int | None:
        """Query units ``max_queries`` still allows (None: no cap)."""
        if self.max_queries is None:
            return None
        return max(0, self.max_queries - self.query_units_spent)

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict (for JSON and tables).

        Returns
        -------
        figures : dict
        """
        return asdict(self)
