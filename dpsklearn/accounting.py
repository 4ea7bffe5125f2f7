"""Privacy accounting: one budget, atomic spends, composition (SPEC section 4).

This is the foundation version (basic composition). Tight composition
(advanced, zCDP, RDP, PLD through ``dp_accounting``) and the durable ledger
extend it.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

from .exceptions import BudgetExhaustedError

__all__ = ["PrivacyAccountant", "PrivacyEvent"]

# Slack for floating-point sums: a budget spent in several equal parts must
# not be refused because 0.1 + 0.2 > 0.3 in binary.
_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PrivacyEvent:
    """One recorded release: what it cost and who spent it (public figures only)."""

    epsilon: float
    delta: float = 0.0
    kind: str = "generic"
    label: str | None = None
    count: int = 1
    time: float = field(default_factory=time.time)


def _check_budget_value(value, name, *, allow_zero, upper=math.inf):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}.") from None
    if math.isnan(value) or value < 0 or (value == 0 and not allow_zero) or value >= upper:
        bound = "[0" if allow_zero else "(0"
        raise ValueError(
            f"{name} must be in {bound}, {upper}), got {value!r}."
        )
    return value


class PrivacyAccountant:
    """A privacy budget with atomic, thread-safe check-and-spend.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total epsilon budget.
    delta : float, default=0.0
        Total delta budget.
    composition : {"basic"}, default="basic"
        How spends compose.

    Notes
    -----
    An accountant passed to estimators as a parameter is *shared*: ``clone``
    and ``copy.deepcopy`` return the same object, so the clones that
    ``GridSearchCV(n_jobs=1)`` makes draw from one budget. A shared
    accountant refuses to be pickled (a pickled copy would fork the budget);
    across processes use a ledger. The accountant a model creates for itself
    (``accountant=None``) pickles with the model; each copy then carries its
    own remaining budget.

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyAccountant
    >>> acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    >>> acc.spend(0.4, kind="laplace")
    >>> acc.remaining
    (0.6, 1e-05)
    """

    def __init__(self, epsilon=1.0, delta=0.0, composition="basic"):
        self.epsilon = _check_budget_value(epsilon, "epsilon", allow_zero=False)
        self.delta = _check_budget_value(delta, "delta", allow_zero=True, upper=1.0)
        if composition != "basic":
            raise ValueError(
                f"composition must be one of ['basic'], got {composition!r}."
            )
        self.composition = composition
        self._events: list[PrivacyEvent] = []
        self._lock = threading.Lock()
        self._owned_by_model = False

    @classmethod
    def _for_model(cls, epsilon, delta, composition="basic"):
        """The private accountant a model creates when ``accountant=None``."""
        accountant = cls(epsilon=epsilon, delta=delta, composition=composition)
        accountant._owned_by_model = True
        return accountant

    # -- composition ---------------------------------------------------------
    def _compose(self, events):
        epsilon = math.fsum(e.epsilon * e.count for e in events)
        delta = math.fsum(e.delta * e.count for e in events)
        return epsilon, delta

    def _fits(self, events):
        epsilon, delta = self._compose(events)
        return (
            epsilon <= self.epsilon * (1 + _TOLERANCE) + _TOLERANCE
            and delta <= self.delta * (1 + _TOLERANCE) + 1e-300
        )

    # -- spending ------------------------------------------------------------
    def can_spend(self, epsilon, delta=0.0, *, count=1):
        """Whether a spend of ``count`` events of ``(epsilon, delta)`` would fit now."""
        event = PrivacyEvent(float(epsilon), float(delta), count=int(count))
        with self._lock:
            return self._fits(self._events + [event])

    def spend(self, epsilon, delta=0.0, *, kind="generic", label=None, count=1):
        """Atomically check and record a spend; raise and record nothing if it does not fit.

        Raises
        ------
        BudgetExhaustedError
            When the composed total would exceed the budget.
        """
        self.spend_events(
            [PrivacyEvent(float(epsilon), float(delta), kind, label, int(count))]
        )

    def spend_events(self, events):
        """Atomically record several events: all of them, or none (then raise)."""
        events = list(events)
        for event in events:
            _check_budget_value(event.epsilon, "epsilon", allow_zero=True)
            _check_budget_value(event.delta, "delta", allow_zero=True, upper=1.0)
        with self._lock:
            if not self._fits(self._events + events):
                spent = self._compose(self._events)
                raise BudgetExhaustedError(
                    f"privacy budget exhausted: spent (epsilon={spent[0]:.6g}, "
                    f"delta={spent[1]:.3g}) of (epsilon={self.epsilon:.6g}, "
                    f"delta={self.delta:.3g}); the requested spend does not fit.",
                    spends=list(self._events),
                )
            self._events.extend(events)

    # -- reading -------------------------------------------------------------
    @property
    def events(self):
        """The recorded events, oldest first (a copy)."""
        with self._lock:
            return list(self._events)

    @property
    def spent(self):
        """The composed ``(epsilon, delta)`` spent so far."""
        with self._lock:
            return self._compose(self._events)

    @property
    def remaining(self):
        """``(epsilon, delta)`` still available under the composition."""
        epsilon, delta = self.spent
        return (max(0.0, self.epsilon - epsilon), max(0.0, self.delta - delta))

    def report(self):
        """A readable table of every spend and the composed total."""
        lines = [
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r})",
            f"{'#':>3}  {'kind':<20} {'label':<28} {'count':>6} {'epsilon':>10} "
            f"{'delta':>10}",
        ]
        for i, e in enumerate(self.events):
            lines.append(
                f"{i:>3}  {e.kind:<20} {str(e.label or ''):<28} {e.count:>6} "
                f"{e.epsilon:>10.4g} {e.delta:>10.3g}"
            )
        epsilon, delta = self.spent
        lines.append(f"spent: epsilon={epsilon:.6g}, delta={delta:.3g} ({self.composition})")
        return "\n".join(lines)

    def __repr__(self):
        epsilon, delta = self.spent
        return (
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, spent=({epsilon:.4g}, {delta:.3g}))"
        )

    # -- sharing semantics ---------------------------------------------------
    def __sklearn_clone__(self):
        # One budget through clone(): GridSearchCV's clones draw from it.
        return self

    def __deepcopy__(self, memo):
        if self._owned_by_model:
            return self._copy_for_model()
        return self

    def _copy_for_model(self):
        new = object.__new__(type(self))
        new.__setstate__(self.__getstate__())
        return new

    def __getstate__(self):
        if not self._owned_by_model:
            raise TypeError(
                "A shared PrivacyAccountant cannot be pickled: a copy in another "
                "process would fork the budget. To share one budget across "
                "processes, use a PrivacyLedger (a SQLite file) as the accountant."
            )
        with self._lock:
            state = self.__dict__.copy()
            state["_events"] = list(self._events)
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
