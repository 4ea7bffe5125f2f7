"""The interface of an accountant, and what every accountant does the same way.

:class:`BaseAccountant` is implemented by the in-memory
:class:`~dpsklearn.PrivacyAccountant` and the SQLite
:class:`~dpsklearn.PrivacyLedger`. They differ only in where events are
stored and how a check-and-record is made atomic (a thread lock, or one
SQLite write transaction across processes); the checks, the composition
rule, the figures and the report are written once, here, on top of a
:class:`~dpsklearn.accounting._composer.Composer`.
"""

from __future__ import annotations

import abc
import datetime
import math

from ..exceptions import BudgetExhaustedError
from ._composer import Composer, check_composition
from ._events import ApproximateEvent, PrivacyEvent, PureEvent

__all__ = ["BaseAccountant"]


def utc(stamp):
    """A timestamp as ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class BaseAccountant(abc.ABC):
    """A privacy budget: atomic check-and-spend of typed events.

    Subclasses provide the budget (``epsilon``, ``delta``, ``composition``),
    whether the budget is shared between fits (:attr:`shared`), and storage:
    :meth:`_writing` (an exclusive section in which ``self._composer`` is
    current), :meth:`_reading` (a consistent view) and :meth:`_record`
    (store events inside the exclusive section). Everything else is here.
    """

    # -- what a subclass provides ----------------------------------------------
    epsilon: float
    delta: float
    composition: str

    @property
    @abc.abstractmethod
    def shared(self) -> bool:
        """Whether the budget is shared between adaptively chosen fits."""

    @abc.abstractmethod
    def _writing(self):
        """Context manager: an exclusive, up-to-date section; yields a handle."""

    @abc.abstractmethod
    def _reading(self):
        """Context manager: a consistent view of the recorded events."""

    @abc.abstractmethod
    def _record(self, handle, events):
        """Store ``events`` (all with ``count > 0``) inside :meth:`_writing`."""

    @abc.abstractmethod
    def _recorded(self):
        """The recorded events, oldest first (inside :meth:`_reading`)."""

    def _new_composer(self):
        return Composer(self.composition, shared=self.shared)

    # -- spending ------------------------------------------------------------
    @staticmethod
    def _checked(events):
        events = list(events)
        for event in events:
            if not isinstance(event, PrivacyEvent):
                raise TypeError(f"expected PrivacyEvent objects, got {event!r}.")
        return events

    @staticmethod
    def _simple_event(epsilon, delta, count, label):
        if delta:
            return ApproximateEvent(epsilon, delta, count=count, label=label)
        return PureEvent(epsilon, count=count, label=label)

    def can_spend_events(self, events):
        """Whether all ``events`` together would fit now (records nothing)."""
        events = self._checked(events)
        with self._reading():
            self._composer.check_usable(events)
            return self._composer.copy().add(events).fits(self.epsilon, self.delta)

    def spend_events(self, events):
        """Atomically record several events: all of them, or none (then raise).

        Raises
        ------
        BudgetExhaustedError
            When the composed total with the new events would exceed the
            budget; nothing is recorded.
        """
        events = self._checked(events)
        with self._writing() as handle:
            self._composer.check_usable(events)
            candidate = self._composer.copy().add(events)
            if not candidate.fits(self.epsilon, self.delta):
                spent = self._composer.spent(self.delta)
                after = candidate.spent(self.delta)
                raise BudgetExhaustedError(
                    f"privacy budget exhausted: {self._name()} has spent "
                    f"(epsilon={spent[0]:.6g}, delta={spent[1]:.3g}) of "
                    f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}) under "
                    f"{self._composer.describe()} composition; with the requested "
                    f"spend it would be (epsilon={after[0]:.6g}, "
                    f"delta={after[1]:.3g}) under {candidate.describe()} "
                    "composition, which does not fit.",
                    spends=list(self._recorded()),
                )
            recorded = [e for e in events if e.count]
            if recorded:
                self._record(handle, recorded)
            self._composer = candidate

    def can_spend(self, epsilon, delta=0.0, *, count=1):
        """Whether ``count`` releases of ``(epsilon, delta)`` would fit now.

        A pure release when ``delta = 0``, else an approximate one; for any
        other mechanism describe it as an event and ask
        :meth:`can_spend_events`.
        """
        return self.can_spend_events([self._simple_event(epsilon, delta, count, None)])

    def spend(self, epsilon, delta=0.0, *, label=None, count=1):
        """Atomic check-and-spend of ``count`` releases of ``(epsilon, delta)``.

        A pure release when ``delta = 0``, else an approximate one; for any
        other mechanism (exponential, Gaussian, Laplace noise of a known
        scale) spend its typed event with :meth:`spend_events`.

        Parameters
        ----------
        epsilon : float
        delta : float, default=0.0
        label : str, optional
            Who spends (shown in :meth:`report`).
        count : int, default=1

        Raises
        ------
        BudgetExhaustedError
            When the composed total would exceed the budget.
        """
        self.spend_events([self._simple_event(epsilon, delta, count, label)])

    # -- reading -------------------------------------------------------------
    @property
    def events(self):
        """The recorded events, oldest first (a copy)."""
        with self._reading():
            return list(self._recorded())

    @property
    def spent(self):
        """The composed ``(epsilon, delta)`` spent so far: min(basic, composition).

        Under a tight composition the figure is stated at the budget's delta,
        so ``remaining[1]`` can read 0 while further events still fit; ask
        :meth:`can_spend_events`.
        """
        with self._reading():
            return self._composer.spent(self.delta)

    @property
    def spent_basic(self):
        """``(sum of epsilons, sum of deltas)``: what basic composition reports."""
        with self._reading():
            return self._composer.basic()

    @property
    def remaining(self):
        """``(epsilon, delta)`` still available under the composition."""
        epsilon, delta = self.spent
        return (max(0.0, self.epsilon - epsilon), max(0.0, self.delta - delta))

    @property
    def composition_in_use(self):
        """The composition the figures are computed under now (the filter rule)."""
        with self._reading():
            return self._composer.describe()

    def epsilon_at(self, delta, composition=None):
        """Composed epsilon of the recorded events at ``delta`` (min with basic).

        ``composition`` defaults to the one in use; any other can be asked
        too, for comparison (it does not change what the accountant allows).
        """
        with self._reading():
            if composition is None:
                return self._composer.epsilon_at(float(delta))
            composer = Composer(check_composition(composition))
            return composer.add(self._recorded()).epsilon_at(float(delta))

    def summary(self):
        """Machine-readable totals: a dict of public figures."""
        with self._reading():
            basic = self._composer.basic()
            spent = self._composer.spent(self.delta)
            events = list(self._recorded())
            in_use = self._composer.describe()
        return {
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "composition": self.composition,
            "composition_in_use": in_use,
            "shared": self.shared,
            "n_events": len(events),
            "n_releases": sum(e.count for e in events),
            "spent": {"epsilon": spent[0], "delta": spent[1]},
            "spent_basic": {"epsilon": basic[0], "delta": basic[1]},
        }

    def _name(self):
        return type(self).__name__

    def _report_footer(self, summary):
        return []

    def report(self):
        """A readable table of every event and the composed totals.

        Lists each event (time, estimator label, kind, count, epsilon, delta,
        mechanism model) and the totals under the composition in use (min
        with basic) and under basic composition, so the gain of tight
        accounting is visible. Only public figures appear: no votes, noise
        or thresholds.
        """
        summary = self.summary()
        events = self.events
        lines = [
            repr(self),
            f"{'#':>3}  {'time (UTC)':<20} {'label':<30} {'kind':<18} {'count':>7} "
            f"{'epsilon':>10} {'delta':>10}  mechanism",
        ]
        for i, e in enumerate(events):
            eps = "n/a" if math.isinf(e.epsilon) else f"{e.epsilon:.4g}"
            lines.append(
                f"{i:>3}  {utc(e.time):<20} {str(e.label or '-'):<30} "
                f"{e.kind:<18} {e.count:>7} {eps:>10} {e.delta:>10.3g}  "
                f"{e.describe()}"
            )
        spent, basic = summary["spent"], summary["spent_basic"]
        if self.composition != "basic":
            lines.append(
                f"spent under {summary['composition_in_use']} (min with basic): "
                f"epsilon={spent['epsilon']:.6g}, delta={spent['delta']:.3g}"
            )
        lines.append(
            f"spent under basic: epsilon={basic['epsilon']:.6g}, "
            f"delta={basic['delta']:.3g}"
        )
        lines.append(
            f"remaining: epsilon={max(0.0, self.epsilon - spent['epsilon']):.6g}, "
            f"delta={max(0.0, self.delta - spent['delta']):.3g} "
            f"({summary['n_releases']} releases in {summary['n_events']} events)"
        )
        lines.extend(self._report_footer(summary))
        return "\n".join(lines)
