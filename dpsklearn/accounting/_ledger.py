"""A durable privacy budget shared by processes and hosts: the ledger.

:class:`PrivacyLedger` is an accountant kept in a database: a SQLite file
(standard library :mod:`sqlite3`) for one machine, or a PostgreSQL database
(``postgresql://...``, the ``postgres`` extra) for several hosts. Several
objects, threads, processes and hosts may open the same ledger at once:
every check-and-spend is one transaction holding the ledger's write lock
(SQLite's ``BEGIN IMMEDIATE``, or a PostgreSQL row lock on the budget row),
waited for up to ``timeout`` seconds, so two spends never interleave and the
composed total never exceeds the budget. The storage is a small backend
interface (:mod:`._ledger_store`) with one implementation per database
(:mod:`._ledger_sqlite`, :mod:`._ledger_postgres`).

Sharing. A ledger pickles *by location*: an unpickled copy reconnects to the
same file or database (and, within one process, is the same object), so the
clones that ``GridSearchCV(n_jobs=2)`` sends to its workers all draw from
one budget. ``clone`` and ``copy.deepcopy`` return the ledger itself.

Durability. A spend is committed (fsynced) before it returns. A model fitted
with a ledger as its accountant keeps its serving state in a *model record*
of the ledger; each ``predict`` loads it, answers, and stores the new state
in one transaction that commits before the answers are returned, so a
reloaded pickle, a second copy or a restarted process continues from the
stored state and never gets budget back (``docs/design.rst``, "Serving
state, copies and the ledger").

The ledger file is as secret as the training data when it stores the noisy
threshold (``store_noisy_threshold=True``, the default). With ``False`` the
file holds only public figures, and a copy of a model that cannot take the
threshold from memory redraws it and is charged one abstention. Reports,
errors and ``repr`` never show the noisy threshold.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import weakref
from typing import Any

from .._param_validation import StrOptions
from .._validation import DELTA, FINITE_POSITIVE, NON_NEGATIVE, validate_params
from ._base import BaseAccountant, ModelRecord, utc
from ._composer import COMPOSITIONS, check_composition
from ._events import PrivacyEvent
from ._ledger_postgres import PostgresStore, is_postgres_url
from ._ledger_sqlite import SQLiteStore, sqlite_path
from ._ledger_store import LedgerError

__all__ = ["LedgerError", "PrivacyLedger"]

# One live object per ledger and process: unpickling a ledger in a process
# that already has it open returns that object (one lock, one connection),
# as clone() does.
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


def _open_store(location, timeout, on_rollback):
    """The storage backend for a file path or a PostgreSQL URL."""
    if is_postgres_url(location):
        return PostgresStore(location, timeout, on_rollback)
    return SQLiteStore(sqlite_path(location), timeout, on_rollback)


def _reopen_ledger(location, timeout):
    """Unpickle a ledger: the live object of this process, or reconnect."""
    probe = _open_store(location, timeout, lambda: None)
    with _LIVE_LOCK:
        ledger = _LIVE.get(probe.live_key)
    if ledger is not None:
        return ledger
    return PrivacyLedger._open(location, timeout=timeout, must_exist=True)


class PrivacyLedger(BaseAccountant):
    """A privacy budget in a database, shared by threads, processes, hosts and restarts.

    The same interface as :class:`~dpsklearn.PrivacyAccountant` (both
    implement :class:`~dpsklearn.accounting.BaseAccountant` and the
    :class:`~dpsklearn.accounting.BudgetStore` protocol that serving uses),
    so it can be the ``accountant`` of any estimator; every check-and-spend
    is one database transaction, atomic across threads, processes and hosts.

    Parameters
    ----------
    path : str or os.PathLike
        Where the ledger is: a file path (a SQLite file, for one machine),
        or a PostgreSQL URL ``postgresql://user@host:port/dbname`` (for
        several hosts; the ``postgres`` extra, ``pip install
        "dpsklearn[postgres]"``), optionally with ``?schema=name`` (the
        PostgreSQL schema that holds this ledger's tables, default
        ``dpsklearn_ledger``; one database may hold several ledgers).
        Created, with the given budget, when it does not exist; otherwise
        opened, and its stored budget is used.
    epsilon : float, default=None
        Total epsilon budget. Required to create a ledger; when opening one,
        None reads the stored budget and a different value raises ValueError.
    delta : float, default=None
        Total delta budget (0 when creating with None); checked like
        ``epsilon`` when opening.
    composition : {"basic", "zcdp", "gdp"}, default=None
        How spends compose: ``"basic"`` when creating with None, the stored
        one when opening (a different value raises ValueError). Only
        filter-valid compositions are accepted (see Notes).
    store_noisy_threshold : bool, default=None
        Whether model records keep the sparse vector noisy threshold (True
        when creating with None; stored in the file). True makes the file
        as secret as the training data; False keeps it public, at the price
        of one abstention whenever a copy of a model must redraw the
        threshold.
    timeout : float, default=30.0
        Seconds to wait for another process's transaction (SQLite's busy
        timeout, PostgreSQL's ``lock_timeout``) before raising
        :class:`LedgerError`.

    Attributes
    ----------
    path : str
        Absolute path of the ledger file, or the PostgreSQL URL without its
        password.
    epsilon, delta : float
        The stored budget.
    composition : str
    spent : tuple of float
        The composed ``(epsilon, delta)`` spent (min of basic and the
        composition; see :class:`~dpsklearn.PrivacyAccountant`).
    remaining : tuple of float
    events : list of PrivacyEvent

    Raises
    ------
    LedgerError
        When the path is a directory or cannot be written, the file is not
        a ledger or is corrupt, or the PostgreSQL server cannot be reached
        (the message names the path or the URL, never a password).
    ValueError
        When a given budget or composition differs from the stored one.
    ImportError
        For a PostgreSQL URL without the driver: ``pip install
        "dpsklearn[postgres]"``.

    Notes
    -----
    **The ledger file is as secret as the data** when it stores the noisy
    threshold of the models that serve through it (the default): anyone who
    can read it can subtract the threshold noise. Keep it with the model,
    which is as secret as the data anyway.

    Filter validity. A ledger sees events chosen adaptively, across fits
    and processes, so it applies the rule of every shared budget
    (``docs/accountant.rst``, "Which events a shared budget accepts"), the
    same code as a shared :class:`~dpsklearn.PrivacyAccountant`: only
    ``"basic"``, ``"zcdp"`` (the zCDP filter of Feldman and Zrnic 2021) and
    ``"gdp"`` (the Gaussian-DP filter of Smith and Thakurta 2022) are
    accepted, and ``"zcdp"`` and ``"gdp"`` refuse approximate ``(epsilon,
    delta)`` events with a ValueError (use ``"basic"`` for them).

    Sharing. ``pickle`` stores only the location (the file path, or the
    PostgreSQL URL as given, password included: a pickle of a model is as
    secret as the data anyway; prefer a password file or ``PGPASSWORD`` to
    a password in the URL): an unpickled ledger reconnects to the same
    ledger (in the same process it is the same object), and one whose file
    or schema is gone raises :class:`LedgerError` rather than start a fresh
    budget. ``clone`` and ``copy.deepcopy`` return the ledger itself. This
    is how ``GridSearchCV(n_jobs=2)`` with the loky backend, or the worker
    processes of a service on several hosts, share one budget.

    Isolation. SQLite: every write transaction is ``BEGIN IMMEDIATE`` (one
    write lock per file). PostgreSQL: READ COMMITTED with an explicit row
    lock, on the budget row for a check-and-spend and on the model's row
    for a serving transaction; a transaction the server aborts anyway
    (serialization failure, deadlock) is rolled back whole and a
    check-and-spend runs again (``docs/cluster.rst``, "One budget across
    hosts").

    Durability. A spend is committed before ``spend`` returns. A model
    fitted with a ledger stores its serving state under a model record and
    commits each ``predict``'s new state before returning the answers (see
    the module docstring); the fit's own spend and the creation of its model
    record are two transactions, so a crash between them loses budget,
    never hands it back.

    Examples
    --------
    >>> import os, tempfile
    >>> from dpsklearn import PrivacyLedger
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
    >>> ledger = PrivacyLedger(path, epsilon=1.0, delta=1e-6)
    >>> ledger.spend(0.4, label="first fit")
    >>> PrivacyLedger(path).remaining  # another object, or another process
    (0.6, 1e-06)
    >>> ledger.can_spend(0.7)
    False
    """

    @validate_params(
        {
            "path": [str, os.PathLike],
            "epsilon": [FINITE_POSITIVE, None],
            "delta": [DELTA, None],
            "composition": [StrOptions(set(COMPOSITIONS)), None],
            "store_noisy_threshold": ["boolean", None],
            "timeout": [NON_NEGATIVE],
        },
        prefer_skip_nested_validation=True,
    )
    def __init__(
        self,
        path: str | os.PathLike[str],
        epsilon: float | None = None,
        delta: float | None = None,
        composition: str | None = None,
        *,
        store_noisy_threshold: bool | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._setup(
            path,
            epsilon,
            delta,
            composition,
            store_noisy_threshold,
            timeout,
            must_exist=False,
        )

    @classmethod
    def _open(cls, path, *, timeout=30.0, must_exist=False):
        ledger = cls.__new__(cls)
        ledger._setup(path, None, None, None, None, timeout, must_exist=must_exist)
        return ledger

    def _setup(
        self, path, epsilon, delta, composition, store_threshold, timeout, must_exist
    ):
        if not is_postgres_url(path):
            path = sqlite_path(path)
        epsilon = None if epsilon is None else float(epsilon)
        delta = None if delta is None else float(delta)
        if composition is not None:
            check_composition(composition, shared=True)
        timeout = float(timeout)

        self._location = path
        self._timeout = timeout
        self._reset_cache()
        self._file = _open_store(path, timeout, on_rollback=self._reset_cache)
        exists = self._file.exists()
        if must_exist and not exists:
            raise self._file.gone()
        if not exists and epsilon is None:
            raise ValueError(
                f"no ledger at {self._file.path!r} yet: give epsilon (and delta) "
                "to create one."
            )
        try:
            meta = self._file.initialise(
                epsilon, delta, composition, store_threshold, must_exist
            )
        except BaseException:
            self._file.drop_connection()
            raise
        self.epsilon = meta["epsilon"]
        self.delta = meta["delta"]
        self.composition = meta["composition"]
        self._file.store_noisy_threshold = meta["store_noisy_threshold"]
        with _LIVE_LOCK:
            _LIVE[self._file.live_key] = self

    def _reset_cache(self):
        # Unset until _sync builds it (it needs the stored composition).
        vars(self).pop("_composer", None)
        self._events = []
        self._spend_ids = []
        self._last_id = 0

    @property
    def shared(self) -> bool:
        """Always True: a ledger is shared between fits and processes."""
        return True

    @property
    def path(self) -> str:
        """Absolute path of the ledger file, or the PostgreSQL URL without password."""
        return self._file.path

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``: where the ledger is kept."""
        return "postgresql" if is_postgres_url(self._location) else "sqlite"

    @property
    def durable(self) -> bool:
        """True: model records live in the database; every copy continues them."""
        return True

    @property
    def store_noisy_threshold(self) -> bool:
        """Whether model records keep the noisy threshold (the file is then secret)."""
        return self._file.store_noisy_threshold

    def close(self) -> None:
        """Close the connection (a later call reconnects to the same ledger)."""
        self._file.close()

    # -- storage (the BaseAccountant hooks) ----------------------------------
    @contextlib.contextmanager
    def _writing(self):
        with self._file.transaction(lock="budget", sync=self._sync) as conn:
            yield conn

    def _atomically(self, body):
        # One transaction holding the budget lock; run again from a fresh
        # read if the database aborts it (nothing of it is then written).
        return self._file.retrying(body, lock="budget", sync=self._sync)

    @contextlib.contextmanager
    def _reading(self):
        with self._file.reading(self._sync):
            yield

    def _recorded(self):
        return self._events

    def _record(self, conn, events):
        pid = os.getpid()
        rows = []
        for event in events:
            r = event.record()
            rows.append(
                (
                    r["time"],
                    r["label"],
                    r["kind"],
                    r["epsilon"],
                    r["delta"],
                    r["count"],
                    r["sigma"],
                    r["sensitivity"],
                    r["scale"],
                    pid,
                )
            )
        self._file.record_events(conn, rows)
        self._sync(conn)

    def _sync(self, conn):
        """Bring the cached events and composer up to date with the file."""
        if "_composer" not in vars(self):
            self._composer = self._new_composer()
        rows = self._file.events_after(conn, self._last_id)
        if not rows:
            return
        new = []
        for row in rows:
            try:
                event = PrivacyEvent.from_record(
                    kind=row[4],
                    epsilon=row[5],
                    delta=row[6],
                    count=row[7],
                    label=row[3],
                    time=row[2],
                    sigma=row[8],
                    sensitivity=row[9],
                    scale=row[10],
                )
            except (TypeError, ValueError) as exc:
                self._reset_cache()
                raise LedgerError(
                    errno.EIO,
                    f"the ledger holds a corrupt event (id {row[0]}: {exc})",
                    self.path,
                ) from None
            new.append(event)
            self._spend_ids.append(row[1])
        self._composer.add(new)
        self._events.extend(new)
        self._last_id = rows[-1][0]

    # -- figures -------------------------------------------------------------
    @property
    def n_spends(self) -> int:
        """How many spends (``spend`` / ``spend_events`` calls: fits) are recorded."""
        with self._reading():
            return len(set(self._spend_ids))

    def model_records(self) -> list[dict[str, Any]]:
        """Public state of the model records: id, estimator, counters, times.

        Returns
        -------
        records : list of dict
            One per model fitted with this ledger, oldest first: ``model_id``,
            ``label``, ``created``, ``updated``, ``n_served``,
            ``abstention_count`` and ``n_queries`` (None when the model has
            no sparse vector engine). The noisy threshold is never returned.
        """
        return self._file.model_records()

    def summary(self) -> dict[str, Any]:
        """Machine-readable totals: a dict of public figures.

        Returns
        -------
        summary : dict
            The accountant's summary (budget, spent, remaining, composition
            in use), the number of spends and the ledger's ``path``.
        """
        summary = super().summary()
        with self._reading():
            summary["n_spends"] = len(set(self._spend_ids))
        return {"path": self.path, **summary}

    def _report_footer(self, summary):
        lines = [f"{summary['n_spends']} spends"]
        models = self.model_records()
        if models:
            lines.append(f"models serving through this ledger ({len(models)}):")
            for m in models:
                abstentions = (
                    "-" if m["abstention_count"] is None else m["abstention_count"]
                )
                lines.append(
                    f"  {m['model_id']}  {str(m['label'] or '-'):<30} "
                    f"answered {m['n_served']}, abstentions {abstentions}, "
                    f"last served {utc(m['updated'])}"
                )
        return lines

    def _name(self):
        return f"the ledger {self.path!r}"

    def __repr__(self):
        return (
            f"PrivacyLedger({self.path!r}, epsilon={self.epsilon:g}, "
            f"delta={self.delta:g}, composition={self.composition!r})"
        )

    # -- model records (durable serving state: the BudgetStore protocol) -----
    def register_model(
        self, label: str | None, state: dict, secret: dict | None = None
    ) -> str:
        """Create a model record holding ``state``; return its random id.

        Committed before it returns. ``secret`` (the noisy threshold) is
        stored only when the ledger keeps it (``store_noisy_threshold``).

        Parameters
        ----------
        label : str or None
            Who serves through the record (shown in reports).
        state : dict
            The public serving state (counters, abstention count).
        secret : dict, optional
            The secret part (the noisy threshold).

        Returns
        -------
        model_id : str
        """
        return self._file.register_model(label, state, secret)

    def model_transaction(  # type: ignore[override]  # both @contextmanager
        self, model_id: str
    ) -> contextlib.AbstractContextManager[ModelRecord]:
        """Load a model record in a write transaction; commit what it saves.

        A context manager yielding a :class:`~dpsklearn.accounting.ModelRecord`:
        the record's row is locked for the block, and what the block saved
        is committed before the block returns, also when it raises.

        Parameters
        ----------
        model_id : str
            The id :meth:`register_model` returned.

        Returns
        -------
        transaction : context manager of ModelRecord
        """
        return self._file.model_transaction(model_id)

    # -- sharing semantics ---------------------------------------------------
    def __reduce__(self):
        # By location: an unpickled ledger reconnects to the same ledger.
        return (_reopen_ledger, (self._location, self._timeout))

    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self
