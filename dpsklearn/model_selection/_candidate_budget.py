"""The budget of one candidate fit inside a private search: a Renyi curve.

A private search (:class:`~dpsklearn.model_selection.PrivateGridSearch`)
accounts each candidate by the Renyi curve of what its ``fit`` spends, so
it gives each candidate a :class:`CandidateBudget` as its ``accountant``.
The candidate's own budget step (``PrivateEstimatorMixin._reserve``) asks
it, *before* any private computation, whether it can pay for the
mechanism's events; the budget composes under ``"rdp"``, so a mechanism
offers the events with a Renyi curve first (``Mechanism.event_options``).

* A *probe* budget records the first description with a Renyi curve and
  stops the fit there (:class:`ProbedEvents`): the search learns what each
  candidate would spend, from its parameters and the public sizes only,
  without training anything.
* A *paying* budget accepts events whose Renyi curve stays under the curve
  the search calibrated for that candidate, at every order, and refuses
  anything else (an event without a curve, or more than was probed).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import ApproximateEvent, PrivacyEvent, PureEvent
from ..exceptions import BudgetExhaustedError
from ..mechanisms import curve_of_events

__all__ = ["CandidateBudget", "ProbedEvents"]


class ProbedEvents(Exception):
    """Raised by a probe budget to stop a candidate's fit at its budget step."""

    def __init__(self, events):
        super().__init__("probe: the fit's events are known; nothing was trained")
        self.events = list(events)


def has_curve(events):
    """Whether every event has a Renyi curve."""
    return not any(isinstance(e, ApproximateEvent) and e.count for e in events)


class CandidateBudget:
    """A candidate's accountant in a private search.

    Parameters
    ----------
    epsilon, delta : float
        The per-candidate budget the candidate was configured with (for
        reports; what is enforced is ``allowed``).
    allowed : ndarray or None
        The Renyi curve (at ``dp_accounting``'s default orders) the fit may
        spend; ``None`` makes a probe.
    """

    composition = "rdp"
    shared = False

    def __init__(
        self, epsilon: float, delta: float, allowed: ArrayLike | None = None
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.allowed = None if allowed is None else np.asarray(allowed, dtype=float)
        self._events: list[PrivacyEvent] = []

    def __sklearn_clone__(self):
        # A candidate clones its inner estimators (a knowledge-transfer
        # teacher): they must all spend from this budget.
        return self

    def __deepcopy__(self, memo):
        return self

    # -- the accountant interface the estimators use ------------------------
    def can_spend_events(self, events: Iterable[PrivacyEvent]) -> bool:
        events = [e for e in events if e.count]
        if not has_curve(events):
            return False  # no Renyi curve: try the mechanism's next description
        if self.allowed is None:
            raise ProbedEvents(events)
        curve = curve_of_events(self._events + events)
        return bool(np.all(curve <= self.allowed * (1 + 1e-9) + 1e-12))

    def spend_events(self, events: Iterable[PrivacyEvent]) -> None:
        events = [e for e in events if e.count]
        if not self.can_spend_events(events):
            raise BudgetExhaustedError(
                "this candidate's fit would spend more than the private search "
                "calibrated for it (or events without a Renyi curve).",
                spends=list(self._events),
            )
        self._events.extend(events)

    def can_spend(self, epsilon: float, delta: float = 0.0, *, count: int = 1) -> bool:
        if delta:
            return self.can_spend_events(
                [ApproximateEvent(epsilon, delta, count=count)]
            )
        return self.can_spend_events([PureEvent(epsilon, count=count)])

    def spend(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        label: str | None = None,
        count: int = 1,
    ) -> None:
        event: PrivacyEvent
        if delta:
            event = ApproximateEvent(epsilon, delta, count=count, label=label)
        else:
            event = PureEvent(epsilon, count=count, label=label)
        self.spend_events([event])

    @property
    def events(self) -> list[PrivacyEvent]:
        """The recorded events (a copy)."""
        return list(self._events)

    @property
    def spent(self) -> tuple[float, float]:
        """The candidate's configured ``(epsilon, delta)`` once it has spent."""
        return (self.epsilon, self.delta) if self._events else (0.0, 0.0)

    @property
    def remaining(self) -> tuple[float, float]:
        spent = self.spent
        return (max(0.0, self.epsilon - spent[0]), max(0.0, self.delta - spent[1]))

    def __repr__(self):
        role = "probe" if self.allowed is None else "paying"
        return (
            f"CandidateBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, {role}, "
            f"{len(self._events)} events)"
        )
