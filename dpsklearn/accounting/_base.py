"""The interface of an accountant, and what every accountant does the same way.

:class:`BaseAccountant` is implemented by the in-memory
:class:`~dpsklearn.PrivacyAccountant` and the
:class:`~dpsklearn.PrivacyLedger` (a SQLite file or a PostgreSQL database).
They differ only in where events are stored and how a check-and-record is
made atomic (a thread lock, or one database transaction across processes and
hosts); the checks, the composition rule, the figures and the report are
written once, here, on top of a
:class:`~dpsklearn.accounting._composer.Composer`.

:class:`BudgetStore` is the public protocol that serving talks to (budget,
model records, record transactions); both accountants implement it:
:class:`BaseAccountant` keeps the model records in memory, the ledger in its
database (``docs/design.rst``, "Serving state, copies and the ledger").
"""

from __future__ import annotations

import abc
import contextlib
import datetime
import json
import math
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from ..exceptions import BudgetExhaustedError
from ._composer import Composer, check_composition
from ._events import ApproximateEvent, PrivacyEvent, PureEvent

__all__ = ["BaseAccountant", "BudgetStore", "ModelRecord"]


def utc(stamp):
    """A timestamp as ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def record_text(value):
    """The stored form of a record's state or secret: canonical JSON (or None)."""
    return None if value is None else json.dumps(value, sort_keys=True)


class ModelRecord:
    """One served model's stored state, inside an open transaction of its store.

    Yielded by :meth:`BudgetStore.model_transaction`. ``state`` holds the
    public counters (a JSON object), ``secret`` the noisy threshold (a JSON
    object, or None when the store does not keep it); both are read-only:
    :meth:`save` stores new dicts, as a new version within the same
    transaction, which the store commits before the transaction's block
    returns.

    Parameters
    ----------
    model_id : str
        The record's random id.
    version : int
        The stored version (1 at registration; +1 at every changed save).
    state : dict
        The stored public counters.
    secret : dict or None
        The stored noisy threshold.
    write : callable
        ``write(version, state, secret)`` stores a new version in the open
        transaction.
    keep_secret : bool, default=True
        Whether the store keeps the secret (False: ``save`` drops it).

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyAccountant
    >>> accountant = PrivacyAccountant(1.0)
    >>> model_id = accountant.register_model("my model", {"n_served": 0})
    >>> with accountant.model_transaction(model_id) as record:
    ...     record.save({"n_served": record.state["n_served"] + 5})
    2
    >>> with accountant.model_transaction(model_id) as record:
    ...     record.state, record.version
    ({'n_served': 5}, 2)
    """

    def __init__(
        self,
        model_id: str,
        version: int,
        state: dict,
        secret: dict | None,
        *,
        write: Callable[[int, dict, dict | None], None],
        keep_secret: bool = True,
    ) -> None:
        self.model_id = model_id
        self.version = int(version)
        self.state = state
        self.secret = secret
        self._write = write
        self._keep_secret = bool(keep_secret)

    def save(self, state: dict, secret: dict | None = None) -> int:
        """Store ``state`` (and ``secret`` if the store keeps it) as a new version.

        The store keeps the dicts given (in memory) or their JSON text (a
        ledger): do not change them afterwards.

        Returns
        -------
        version : int
            The stored version (unchanged when nothing changed: no write).
        """
        if not self._keep_secret:
            secret = None
        if state == self.state and secret == self.secret:
            return self.version  # nothing changed: no write
        self._write(self.version + 1, state, secret)
        self.version += 1
        self.state, self.secret = state, secret
        return self.version

    def __repr__(self):  # never the secret
        return f"ModelRecord({self.model_id!r}, version={self.version})"


def parse_record(model_id, version, state_text, secret_text):
    """``(version, state, secret)`` from their stored form; ValueError if corrupt."""
    try:
        version = int(version)
        state = json.loads(state_text)
        secret = None if secret_text is None else json.loads(secret_text)
    except (TypeError, ValueError):
        raise ValueError(f"corrupt model record (id {model_id})") from None
    if not isinstance(state, dict) or not (secret is None or isinstance(secret, dict)):
        raise ValueError(f"corrupt model record (id {model_id})")
    return version, state, secret


@runtime_checkable
class BudgetStore(Protocol):
    """What serving needs from a budget: durability, model records, transactions.

    Implemented by :class:`~dpsklearn.PrivacyAccountant` (records in memory)
    and :class:`~dpsklearn.PrivacyLedger` (records in a SQLite file or a
    PostgreSQL database). A fitted model registers its serving state once
    (:meth:`register_model`, at ``fit``) and answers every batch inside
    :meth:`model_transaction`: load the record, answer, save the new state;
    the store commits the saved state before the block returns, also when
    the block raises (a model's state only moves forward), so no answer is
    returned before its counters are stored.

    Attributes
    ----------
    durable : bool
        True when records live outside this object (a ledger): every copy of
        a model, in any process or after a restart, continues one record.
        False for records in memory, which a copy of a model-owned
        accountant copies.
    shared : bool
        True when the store is shared between fits and is never copied with
        a model (``clone``, ``copy.deepcopy`` return it; ``pickle`` either
        reconnects, for a ledger, or refuses).

    Examples
    --------
    >>> from dpsklearn.accounting import BudgetStore, PrivacyAccountant
    >>> isinstance(PrivacyAccountant(1.0), BudgetStore)
    True
    """

    @property
    def durable(self) -> bool:
        """Whether records outlive this object (copies and restarts share them)."""

    @property
    def shared(self) -> bool:
        """Whether the store is shared between fits (never copied with a model)."""

    def register_model(
        self, label: str | None, state: dict, secret: dict | None = None
    ) -> str:
        """Create a record holding ``state`` (and ``secret``); return its id."""

    def model_transaction(
        self, model_id: str
    ) -> contextlib.AbstractContextManager[ModelRecord]:
        """Open the record's transaction; yield its :class:`ModelRecord`."""


def _copied(value):
    """A copy of a JSON-like value (dicts and lists copied, scalars shared)."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


class _MemoryRecords:
    """Model records kept in memory: ``{model_id: [version, label, state, secret]}``.

    ``state`` and ``secret`` are the dicts last saved (a serving state saves
    new dicts every time, and nobody changes them after). A copy (pickle,
    deepcopy of a model-owned accountant) copies the records: the copy
    continues from the state at the time of the copy, independently.
    """

    def __init__(self):
        self.rows = {}
        self.lock = threading.RLock()

    def copy(self):
        new = _MemoryRecords()
        with self.lock:
            new.rows = {key: list(row) for key, row in self.rows.items()}
        return new

    def __getstate__(self):
        # A tuple: pickle skips __setstate__ for a false state (no records).
        with self.lock:
            return ({key: list(row) for key, row in self.rows.items()},)

    def __setstate__(self, state):
        (self.rows,) = state
        self.lock = threading.RLock()


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
    _composer: Composer

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

    def _atomically(self, body):
        """Run ``body(handle)`` inside :meth:`_writing`; a ledger retries it.

        ``body`` is a pure check-and-record (it draws no noise), so a store
        whose transaction can be aborted by the database (a serialization
        failure) may run it again from the start.
        """
        with self._writing() as handle:
            return body(handle)

    # -- model records (the BudgetStore protocol), in memory -------------------
    @property
    def durable(self) -> bool:
        """False: the model records are kept in this object's memory."""
        return False

    def _memory_records(self):
        records = self.__dict__.get("_serving_records")
        if records is None:
            records = self.__dict__.setdefault("_serving_records", _MemoryRecords())
        return records

    def register_model(
        self, label: str | None, state: dict, secret: dict | None = None
    ) -> str:
        """Create a model record holding ``state``; return its random id.

        Parameters
        ----------
        label : str or None
            The estimator's name (public).
        state : dict
            The public serving counters (JSON-serialisable).
        secret : dict, optional
            The noisy threshold (as secret as the data).

        Returns
        -------
        model_id : str
            32 random hexadecimal digits.
        """
        model_id = secrets.token_hex(16)
        records = self._memory_records()
        with records.lock:
            records.rows[model_id] = [
                1,
                None if label is None else str(label),
                _copied(state),
                _copied(secret),
            ]
        return model_id

    @contextlib.contextmanager
    def model_transaction(self, model_id: str) -> Iterator[ModelRecord]:
        """Hold a model record: load it, yield a :class:`ModelRecord`, keep its saves.

        Holds the record's lock for the whole block (one writer at a time);
        whatever the block saved is kept even when it raises.
        """
        records = self._memory_records()
        with records.lock:
            row = records.rows.get(model_id)
            if row is None:
                raise KeyError(
                    f"{self._name()} has no record of this model (id {model_id}); "
                    "it answers nothing rather than start from a fresh state"
                )

            # The stored dicts themselves: a record's state is read-only, and
            # a save stores new dicts (no copy per batch on the serving path).
            def write(new_version, state, secret, row=row):
                row[0], row[2], row[3] = new_version, state, secret

            yield ModelRecord(model_id, row[0], row[2], row[3], write=write)

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

    def can_spend_events(self, events: Iterable[PrivacyEvent]) -> bool:
        """Whether all ``events`` together would fit now (records nothing)."""
        events = self._checked(events)
        with self._reading():
            self._composer.check_usable(events)
            return self._composer.copy().add(events).fits(self.epsilon, self.delta)

    def spend_events(self, events: Iterable[PrivacyEvent]) -> None:
        """Atomically record several events: all of them, or none (then raise).

        Raises
        ------
        BudgetExhaustedError
            When the composed total with the new events would exceed the
            budget; nothing is recorded.
        """
        events = self._checked(events)
        self._atomically(lambda handle: self._check_and_record(handle, events))

    def _check_and_record(self, handle, events):
        """The body of one check-and-spend (inside :meth:`_writing`)."""
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

    def can_spend(self, epsilon: float, delta: float = 0.0, *, count: int = 1) -> bool:
        """Whether ``count`` releases of ``(epsilon, delta)`` would fit now.

        A pure release when ``delta = 0``, else an approximate one; for any
        other mechanism describe it as an event and ask
        :meth:`can_spend_events`.
        """
        return self.can_spend_events([self._simple_event(epsilon, delta, count, None)])

    def spend(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        label: str | None = None,
        count: int = 1,
    ) -> None:
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
    def events(self) -> list[PrivacyEvent]:
        """The recorded events, oldest first (a copy)."""
        with self._reading():
            return list(self._recorded())

    @property
    def spent(self) -> tuple[float, float]:
        """The composed ``(epsilon, delta)`` spent so far: min(basic, composition).

        Under a tight composition the figure is stated at the budget's delta,
        so ``remaining[1]`` can read 0 while further events still fit; ask
        :meth:`can_spend_events`.
        """
        with self._reading():
            return self._composer.spent(self.delta)

    @property
    def spent_basic(self) -> tuple[float, float]:
        """``(sum of epsilons, sum of deltas)``: what basic composition reports."""
        with self._reading():
            return self._composer.basic()

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available under the composition."""
        epsilon, delta = self.spent
        return (max(0.0, self.epsilon - epsilon), max(0.0, self.delta - delta))

    @property
    def composition_in_use(self) -> str:
        """The composition the figures are computed under now (the filter rule)."""
        with self._reading():
            return self._composer.describe()

    def epsilon_at(self, delta: float, composition: str | None = None) -> float:
        """Composed epsilon of the recorded events at ``delta`` (min with basic).

        ``composition`` defaults to the one in use; any other can be asked
        too, for comparison (it does not change what the accountant allows).
        """
        with self._reading():
            if composition is None:
                return self._composer.epsilon_at(float(delta))
            composer = Composer(check_composition(composition))
            return composer.add(self._recorded()).epsilon_at(float(delta))

    def summary(self) -> dict[str, Any]:
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

    def report(self) -> str:
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
