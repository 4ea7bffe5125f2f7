"""The serving state of a fitted private model, in memory or in a ledger.

Everything that changes while a fitted model answers queries lives in one
:class:`ServingState` created by ``fit``: the mechanism's engine (noise,
abstention count, noisy threshold), the release caches, the counters and a
lock. No fitted numpy array is mutated in place, so ``set_params`` after
``fit`` cannot change a running model, and fitted arrays may be memory-mapped
read-only.

Copies. A copy made by pickle or :func:`copy.deepcopy` draws fresh noise
(the engine's :class:`~dpsklearn.noise.NoiseSource` reseeds) unless
``noise_random_state`` fixed it: a copy that replayed the original's noise
would let anyone cancel it. Without a ledger such a copy carries a second,
independent budget, and the first copy of a model says so with a
:class:`~dpsklearn.BudgetCopyWarning`.

Durability. At ``fit`` the state is registered as a model record of the
model's accountant through the public
:class:`~dpsklearn.accounting.BudgetStore` protocol
(:meth:`ServingState.bind_store`); ``with state.serving():`` then loads the
stored record, the model answers, and the new state is saved in the same
record transaction, committed before the answers are returned. With a
:class:`~dpsklearn.PrivacyLedger` (a SQLite file or a PostgreSQL database)
the record is durable, so a copy, a reloaded pickle, another worker process
or a restarted one continues from the stored state and never gets budget
back (``docs/design.rst``, "Serving state, copies and the ledger"). With an
in-memory :class:`~dpsklearn.PrivacyAccountant` the record lives in the
accountant; an accountant that is not a ``BudgetStore`` leaves the state in
this object.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._warn import warn_user
from ..accounting import BudgetStore
from ..exceptions import BudgetCopyWarning
from ._status import BudgetStatus

if TYPE_CHECKING:
    from ._cache import ReleaseCache

__all__ = ["ServingState"]

# Engine state that is as secret as the data: stored apart from the public
# counters (a ledger may be told not to keep it) and never shown.
_SECRET_ENGINE_KEYS = ("noisy_threshold",)
_COUNTERS = ("n_served", "n_rows", "n_answered", "n_abstained", "n_student")


class ServingState:
    """Mutable serving state of one fitted model.

    Parameters
    ----------
    mechanism : Mechanism
        The calibrated mechanism (public, frozen).
    engine : Engine or None
        Its running engine (None for a model released at ``fit``).
    budget : tuple of float
        The model's total ``(epsilon, delta)``.
    max_queries : int or None
        Cap in query units (None: no cap).
    costs : dict of str to int, optional
        Query units per row of each method (default 1).
    caches : dict of str to ReleaseCache, optional
        The release cache of each method that has one; two methods may share
        one cache (then a row released by either is free for both).
    on_exhausted : {"raise", "abstain"}, default="raise"
    fill : object, optional
        The answer padded in for ``on_exhausted="abstain"``.
    cap_name : str, default="max_queries"
        The parameter the cap comes from, for messages.
    verbose : int, default=0
    label : str, optional
        The estimator's name, for messages and the ledger.

    Attributes
    ----------
    n_served : int
        Query units spent.
    n_rows, n_answered : int
        Rows the mechanism released, and of those the rows it answered.
    n_abstained, n_student : int
        Rows returned as abstentions, and rows answered by the student of
        the released answers (every call, a row asked again included).
    record_binding : tuple of (BudgetStore, str) or None
        The store (the accountant) and model record id this state is stored
        under.
    """

    record_binding: tuple[BudgetStore, str] | None = None
    _ledger_version: int | None = None
    _copy_warned = False
    # The counters (_COUNTERS), set in __init__.
    n_served: int
    n_rows: int
    n_answered: int
    n_abstained: int
    n_student: int
    #: The model's budget, any object with the accountant's spend methods.
    accountant: Any

    def __init__(
        self,
        mechanism: Any,
        engine: Any,
        *,
        budget: tuple[float, float],
        max_queries: int | None = None,
        costs: Mapping[str, int] | None = None,
        caches: Mapping[str, ReleaseCache] | None = None,
        on_exhausted: str = "raise",
        fill: Any = None,
        cap_name: str = "max_queries",
        verbose: int = 0,
        label: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.engine = engine
        # Which warnings the serving loop shows once among a model's clones
        # (set by the estimator; None: Python's own filters).
        self.warning_scope: Any = None
        self.budget = (float(budget[0]), float(budget[1]))
        self.max_queries = max_queries
        self.costs = dict(costs or {})
        self.caches = dict(caches or {})
        self.on_exhausted = on_exhausted
        self.fill = fill
        self.cap_name = cap_name
        self.verbose = verbose
        self.label = label
        self.accountant = None
        for name in _COUNTERS:
            setattr(self, name, 0)
        self.lock = threading.RLock()

    # -- the budget in query units ---------------------------------------------
    def affordable(self, n_requested: int, cost: int = 1) -> int:
        """How many of ``n_requested`` rows of ``cost`` units the cap still allows."""
        if self.max_queries is None:
            return n_requested
        return max(0, min(n_requested, (self.max_queries - self.n_served) // cost))

    def record(self, n_rows: int, n_abstained: int) -> None:
        """Count rows the engine just released (``n_abstained`` of them abstentions)."""
        self.n_rows += int(n_rows)
        self.n_answered += int(n_rows) - int(n_abstained)

    def count_returned(self, n_student: int, n_abstained: int) -> None:
        """Count rows a call returned from the student, and as abstentions."""
        self.n_student += int(n_student)
        self.n_abstained += int(n_abstained)

    def exhausted_reason(self, method: str) -> str:
        """Why a batch could not be answered in full (public words).

        The cap is named when it is reached (even if the engine halted at
        the same query); otherwise the engine's halt.
        """
        cost = self.costs.get(method, 1)
        if self.engine is not None and self.engine.halted:
            if self.affordable(1, cost) > 0:
                return self.engine.halt_reason()
        per_row = "" if cost == 1 else f" ({cost} units per {method} row)"
        return f"{self.cap_name}={self.max_queries} query units are spent{per_row}"

    def status(self) -> BudgetStatus:
        """The public counters as a :class:`BudgetStatus`."""
        with self.serving():
            engine = self.engine
            if engine is None:
                spent = self.budget  # released as a whole at fit
            else:
                spent = self.mechanism.spent(self.n_served, engine)
            epsilon, delta = self.budget
            return BudgetStatus(
                n_served=self.n_rows,
                n_answered=self.n_answered,
                n_abstained=self.n_abstained,
                n_failed_tests=0 if engine is None else engine.n_failed_tests,
                query_units_spent=self.n_served,
                max_queries=self.max_queries,
                spent=(float(spent[0]), float(spent[1])),
                remaining=(max(0.0, epsilon - spent[0]), max(0.0, delta - spent[1])),
                # Halted: the engine stopped, or the cap in query units is
                # spent (nothing more can be answered either way).
                n_student=self.n_student,
                halted=bool(
                    (engine is not None and engine.halted)
                    or (
                        self.max_queries is not None
                        and self.n_served >= self.max_queries
                    )
                ),
            )

    # -- durable state ---------------------------------------------------------
    @property
    def ledger_binding(self) -> tuple[BudgetStore, str] | None:
        """``(ledger, model_id)`` when the record is durable (a ledger), else None."""
        binding = self.record_binding
        if binding is None or not binding[0].durable:
            return None
        return binding

    def bind_store(self, accountant: Any, label: str | None = None) -> str | None:
        """Remember the accountant; store this state under a new model record.

        Called at the end of ``fit``. An accountant that implements
        :class:`~dpsklearn.accounting.BudgetStore` (the in-memory
        accountant, a ledger) keeps the record; any other leaves the state
        in this object.

        Returns
        -------
        model_id : str or None
            The record's random id, or None when nothing was bound.
        """
        self.accountant = accountant
        if not isinstance(accountant, BudgetStore):
            return None
        with self.lock:
            state, secret = self._snapshot()
            model_id = accountant.register_model(label, state, secret)
            self.record_binding = (accountant, model_id)
            self._ledger_version = 1
        return model_id

    bind_ledger = bind_store  # the name fit has always called

    @contextlib.contextmanager
    def serving(self) -> Iterator[ServingState]:
        """Hold the state for one batch of answers: ``with state.serving(): ...``.

        Without a record this is ``with state.lock``. Bound to a record it also
        holds the record's transaction (with a ledger, its write lock), loads
        the stored state first and saves the new state last, committed before
        the block's answers can be returned (also when the block raises: the
        state only moves forward).
        """
        with self.lock:
            if self.record_binding is None:
                yield self
                return
            store, model_id = self.record_binding
            with store.model_transaction(model_id) as record:
                try:
                    # A record in memory that this object wrote last holds
                    # this object's own state: nothing to load. A durable
                    # record is always loaded (a commit that failed leaves
                    # the stored version behind this object's).
                    if store.durable or record.version != self._ledger_version:
                        self._load(record)
                except (KeyError, TypeError, ValueError) as exc:
                    raise ValueError(
                        f"the stored record {model_id} of this model is corrupt or "
                        f"belongs to another model ({type(exc).__name__}); "
                        "the model answers nothing."
                    ) from None
                try:
                    yield self
                finally:
                    self._ledger_version = record.save(*self._snapshot())

    def _snapshot(self):
        state: dict[str, Any] = {name: int(getattr(self, name)) for name in _COUNTERS}
        secret = {}
        engine_state = None if self.engine is None else self.engine.get_state()
        if engine_state is not None:
            engine_state = dict(engine_state)
            for key in _SECRET_ENGINE_KEYS:
                if key in engine_state:
                    secret[key] = engine_state.pop(key)
            state["engine"] = engine_state
        return state, (secret or None)

    def _load(self, record):
        """Continue from a stored record (never from this object's own copy).

        A noisy threshold the record does not hold is taken from memory only
        when this object wrote the record's current version; otherwise the
        engine redraws it and charges one abstention.
        """
        state = record.state
        secret = record.secret or {}
        self.n_served = int(state["n_served"])
        for name in _COUNTERS[1:]:
            setattr(self, name, int(state.get(name, 0)))
        if "engine" in state:
            engine_state = dict(state["engine"])
            noisy = secret.get("noisy_threshold")
            if noisy is None and record.version == self._ledger_version:
                noisy = self.engine.get_state().get("noisy_threshold")
            engine_state["noisy_threshold"] = noisy
            self.engine.set_state(engine_state)
        self._ledger_version = record.version

    def __repr__(self):
        return (
            f"ServingState(n_served={self.n_served}, "
            f"n_failed_tests={getattr(self.engine, 'n_failed_tests', 0)})"
        )

    def __getstate__(self):
        with self.lock:
            self._warn_copy()
            state = self.__dict__.copy()
        del state["lock"]
        return state

    def _copy_shares_state(self):
        """Whether a copy continues this state's record instead of its own.

        True for a durable record (a ledger) and for a record in a shared
        in-memory accountant (``copy.deepcopy`` keeps it; ``pickle`` refuses
        it); False for a model's own accountant, which a copy copies.
        """
        if self.record_binding is None:
            return False
        store = self.record_binding[0]
        return bool(store.durable or store.shared)

    def _warn_copy(self):
        """Pickle and deepcopy: say once that an in-memory copy has its own budget."""
        if self._copy_warned or self.engine is None or self._copy_shares_state():
            return  # warned; one shared record; or released at fit (publishable)
        self._copy_warned = True
        warn_user(
            f"copying a fitted {self.label or 'model'} (pickle, deepcopy, "
            "joblib.dump) whose serving state is in memory: the copy carries a "
            "second, independent budget, so the original and the copy together "
            "can release up to twice what (epsilon, delta) pays for. Fit with a "
            "PrivacyLedger as the accountant to keep one state across copies.",
            BudgetCopyWarning,
        )

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.RLock()
