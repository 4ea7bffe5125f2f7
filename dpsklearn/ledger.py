"""A durable privacy ledger shared by processes (SPEC section 4; issue 5).

:class:`PrivacyLedger` is a :class:`~dpsklearn.accounting.PrivacyAccountant`
kept in a SQLite file (standard library :mod:`sqlite3`, WAL journal,
``synchronous=FULL``). It holds the budget and every recorded event, and it
can be the ``accountant`` of any dpsklearn estimator. Several objects,
threads and processes may open the same file at once: every check-and-spend
is one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock, waited for up to
``timeout`` seconds), so two spends never interleave and the composed total
never exceeds the budget.

Sharing. A ledger pickles *by path*: an unpickled copy reconnects to the same
file (and, within one process, is the same object), so the clones that
``GridSearchCV(n_jobs=2)`` sends to its loky workers all draw from one
budget. ``clone`` and ``copy.deepcopy`` return the ledger itself.

Durability. A spend is committed (fsynced) before :meth:`PrivacyLedger.spend`
returns. A model fitted with a ledger as its accountant also keeps its serving
state in a *model record* of the ledger (a random id created at ``fit``):
queries answered, abstention count, threshold draws and the noisy threshold
of its sparse vector engine. Each ``predict`` loads that record, answers, and
stores the new state in one transaction that commits before the answers are
returned; a reloaded pickle of the model, a second copy of it or a restarted
process therefore continues from the stored state, never from its own stale
copy, and never gets budget back (:class:`dpsklearn._serving.ServingState`).

Composition. Events recorded by a ledger are chosen adaptively across fits,
so only rules that are valid privacy filters apply (SPEC section 4): basic
composition (Rogers, Roth, Ullman and Vadhan 2016), and zCDP (Feldman and
Zrnic 2021) for pure, exponential-mechanism and Gaussian events. Under
``composition="zcdp"`` a ledger that holds an approximate ``(epsilon,
delta)`` event (a sparse vector instance reserved as a whole) falls back to
basic composition: carrying such events beside the zCDP total is valid only
for a sequence fixed in advance. The figures themselves come from
:mod:`dpsklearn.accounting`'s composition code.

The ledger file is as secret as the training data when it stores the noisy
threshold (``store_noisy_threshold=True``, the default): whoever reads it
learns the threshold noise. With ``store_noisy_threshold=False`` the file
holds only public figures (epsilons, deltas, counters), and a copy of a
model that cannot take the threshold from memory redraws it and is charged
one abstention for that (SPEC section 4). Reports, errors and ``repr`` never
show the noisy threshold.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import math
import os
import secrets
import sqlite3
import threading
import time
import weakref

from .accounting import (
    COMPOSITIONS,
    PrivacyAccountant,
    PrivacyEvent,
    _check_budget_value,
    _Composer,
    _delta_fits,
    _epsilon_fits,
)
from .exceptions import BudgetExhaustedError

__all__ = ["LedgerError", "PrivacyLedger"]

_FORMAT = "dpsklearn-privacy-ledger"
_SCHEMA_VERSION = 1
# Filter-valid compositions for events chosen adaptively across fits.
_LEDGER_COMPOSITIONS = ("basic", "zcdp")
_TABLES = {"meta", "events", "models"}
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE events ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " spend_id INTEGER NOT NULL,"
    " time REAL NOT NULL,"
    " label TEXT,"
    " kind TEXT NOT NULL,"
    " epsilon REAL NOT NULL,"
    " delta REAL NOT NULL,"
    " count INTEGER NOT NULL,"
    " sigma REAL,"
    " sensitivity REAL,"
    " scale REAL,"
    " pid INTEGER)",
    "CREATE TABLE models ("
    " model_id TEXT PRIMARY KEY,"
    " label TEXT,"
    " created REAL NOT NULL,"
    " updated REAL NOT NULL,"
    " version INTEGER NOT NULL,"
    " state TEXT NOT NULL,"  # public counters (JSON)
    " secret TEXT)",  # the noisy threshold (JSON) or NULL
)
_EVENT_COLUMNS = (
    "id, spend_id, time, label, kind, epsilon, delta, count, sigma, sensitivity, scale"
)

# One live object per ledger file and process: unpickling a ledger in a
# process that already has it open returns that object (one lock, one
# connection), as clone() does.
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


class LedgerError(OSError, ValueError):
    """A ledger file that cannot be used: unreadable, corrupt, or not writable.

    Both an :class:`OSError` (``filename`` is the ledger path) and a
    :class:`ValueError`. A ledger that raises it answers nothing: no spend
    is recorded and no model bound to it releases an answer.

    Examples
    --------
    >>> import errno
    >>> from dpsklearn.ledger import LedgerError
    >>> err = LedgerError(errno.EISDIR, "the ledger path is a directory", "/tmp")
    >>> err.filename, isinstance(err, ValueError)
    ('/tmp', True)
    """


def _reopen_ledger(path, timeout):
    """Unpickle a ledger: the live object of this process, or reconnect by path."""
    key = os.path.realpath(path)
    with _LIVE_LOCK:
        ledger = _LIVE.get(key)
    if ledger is not None:
        return ledger
    return PrivacyLedger._open(path, timeout=timeout, must_exist=True)


def _has_approximate(composer):
    return any(sig[0] == "approximate" for sig in composer.mech_counts)


class _ModelRecord:
    """One model's stored serving state, inside an open ledger transaction.

    ``state`` holds public counters, ``secret`` the noisy threshold (or
    None). :meth:`save` writes a new version within the same transaction.
    """

    def __init__(self, ledger, conn, model_id, version, state, secret):
        self._ledger = ledger
        self._conn = conn
        self.model_id = model_id
        self.version = version
        self.state = state
        self.secret = secret

    def save(self, state, secret=None):
        """Store ``state`` (and ``secret`` if the ledger keeps it) as a new version."""
        if not self._ledger.store_noisy_threshold:
            secret = None
        if state == self.state and secret == self.secret:
            return self.version  # nothing changed: no write
        state_text = json.dumps(state, sort_keys=True)
        secret_text = None if secret is None else json.dumps(secret, sort_keys=True)
        self.version += 1
        self._ledger._execute(
            self._conn,
            "UPDATE models SET state = ?, secret = ?, version = ?, updated = ? "
            "WHERE model_id = ?",
            (state_text, secret_text, self.version, time.time(), self.model_id),
        )
        self.state, self.secret = state, secret
        return self.version

    def __repr__(self):  # never the secret
        return f"_ModelRecord({self.model_id!r}, version={self.version})"


class PrivacyLedger:
    """A privacy budget in a SQLite file, shared by threads, processes and restarts.

    The same interface as :class:`~dpsklearn.accounting.PrivacyAccountant`
    (``spend``, ``spend_events``, ``can_spend``, ``can_spend_events``,
    ``spent``, ``remaining``, ``events``, ``report()``), so it can be the
    ``accountant`` of any estimator; every check-and-spend is one SQLite
    transaction, atomic across threads and processes (SPEC section 4).

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file. Created, with the given budget, when it does not
        exist; otherwise opened, and its stored budget is used.
    epsilon : float, default=None
        Total epsilon budget. Required to create a ledger; when opening one,
        None reads the stored budget and a different value raises ValueError.
    delta : float, default=None
        Total delta budget (0 when creating with None); checked like
        ``epsilon`` when opening.
    composition : {"basic", "zcdp"}, default=None
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
        Seconds to wait for another process's transaction (SQLite busy
        timeout) before raising :class:`LedgerError`.

    Attributes
    ----------
    path : str
        Absolute path of the ledger file.
    epsilon, delta : float
        The stored budget.
    composition : str
    spent : tuple of float
        The composed ``(epsilon, delta)`` spent (min of basic and the
        composition; see :class:`~dpsklearn.accounting.PrivacyAccountant`).
    remaining : tuple of float
    events : list of PrivacyEvent

    Raises
    ------
    LedgerError
        When the path is a directory or cannot be written, or the file is
        not a ledger or is corrupt (the message names the path).
    ValueError
        When a given budget or composition differs from the stored one.

    Notes
    -----
    **The ledger file is as secret as the data** when it stores the noisy
    threshold of the models that serve through it (the default): anyone who
    can read it can subtract the threshold noise. Keep it with the model,
    which is as secret as the data anyway (SPEC section 1).

    Filter validity (SPEC section 4). A ledger sees events chosen
    adaptively, across fits and processes, so it accepts only ``"basic"``
    (a valid privacy filter) and ``"zcdp"`` (the zCDP filter of Feldman and
    Zrnic 2021, for pure, exponential-mechanism and Gaussian events, with
    the min against basic composition of
    :class:`~dpsklearn.accounting.PrivacyAccountant`). Once the ledger holds
    an approximate ``(epsilon, delta)`` event, ``"zcdp"`` reports and checks
    basic composition: carrying such events beside the zCDP total is valid
    only for a sequence of mechanisms fixed in advance. ``"rdp"`` (whose
    best order is chosen after the fact), ``"advanced"`` and ``"pld"`` are
    refused.

    Sharing. ``pickle`` stores only the path: an unpickled ledger reconnects
    to the same file (in the same process it is the same object), and one
    whose file is gone raises :class:`LedgerError` rather than start a fresh
    budget. ``clone`` and ``copy.deepcopy`` return the ledger itself. This
    is how ``GridSearchCV(n_jobs=2)`` with the loky backend shares one budget.

    Durability. A spend is committed before ``spend`` returns. A model
    fitted with a ledger stores its serving state under a model record and
    commits each ``predict``'s new state before returning the answers (see
    the module docstring); the fit's own spend and the creation of its model
    record are two transactions, so a crash between them loses budget,
    never hands it back.

    Examples
    --------
    >>> import os, tempfile
    >>> from dpsklearn.ledger import PrivacyLedger
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
    >>> ledger = PrivacyLedger(path, epsilon=1.0, delta=1e-6)
    >>> ledger.spend(0.4, kind="laplace", label="first fit")
    >>> PrivacyLedger(path).remaining  # another object, or another process
    (0.6, 1e-06)
    >>> ledger.can_spend(0.7)
    False
    """

    def __init__(
        self,
        path,
        epsilon=None,
        delta=None,
        composition=None,
        *,
        store_noisy_threshold=None,
        timeout=30.0,
    ):
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

    # -- opening -------------------------------------------------------------
    def _setup(
        self, path, epsilon, delta, composition, store_threshold, timeout, must_exist
    ):
        try:
            path = os.fspath(path)
        except TypeError:
            raise TypeError(
                f"path must be a file path (str or os.PathLike), got {path!r}."
            ) from None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path or path == ":memory:" or path.startswith("file:"):
            raise ValueError(
                f"path must name a file on disk, got {path!r}: an in-memory "
                "ledger cannot be shared between processes or survive a restart."
            )
        if epsilon is not None:
            epsilon = _check_budget_value(epsilon, "epsilon", allow_zero=False)
        if delta is not None:
            delta = _check_budget_value(delta, "delta", allow_zero=True, upper=1.0)
        if composition is not None and composition not in _LEDGER_COMPOSITIONS:
            if composition in COMPOSITIONS:
                raise ValueError(
                    f"composition={composition!r} is not valid for a PrivacyLedger: "
                    "its events are chosen adaptively across fits and processes, "
                    "and only privacy filters compose those (SPEC section 4). Use "
                    f"one of {list(_LEDGER_COMPOSITIONS)}."
                )
            raise ValueError(
                f"composition must be one of {list(_LEDGER_COMPOSITIONS)}, got "
                f"{composition!r}."
            )
        if store_threshold is not None and not isinstance(store_threshold, bool):
            raise TypeError(
                f"store_noisy_threshold must be a bool, got {store_threshold!r}."
            )
        timeout = float(timeout)
        if not (timeout >= 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a finite number >= 0, got {timeout!r}.")

        self._path = os.path.abspath(path)
        self._timeout = timeout
        self._init_process_state()
        if os.path.isdir(self._path):
            raise LedgerError(
                errno.EISDIR,
                "cannot use this ledger path: it is a directory (give a file path)",
                self._path,
            )
        exists = os.path.exists(self._path)
        if must_exist and not exists:
            raise self._gone()
        if not exists and epsilon is None:
            raise ValueError(
                f"no ledger at {self._path!r} yet: give epsilon (and delta) to "
                "create one."
            )
        try:
            meta = self._initialise(
                epsilon, delta, composition, store_threshold, must_exist
            )
        except BaseException:
            self._drop_connection()
            raise
        self._epsilon = meta["epsilon"]
        self._delta = meta["delta"]
        self._composition = meta["composition"]
        self._store_threshold = meta["store_noisy_threshold"]
        with _LIVE_LOCK:
            _LIVE[os.path.realpath(self._path)] = self

    def _init_process_state(self):
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._conn = None
        self._depth = 0
        self._reset_cache()

    def _reset_cache(self):
        self._composer = None
        self._events = []
        self._spend_ids = []
        self._last_id = 0

    def _check_process(self):
        # After a fork the inherited connection and lock belong to the parent.
        if self._pid != os.getpid():
            self._init_process_state()

    def _connection(self):
        if self._conn is None:
            try:
                conn = sqlite3.connect(
                    self._path,
                    timeout=self._timeout,
                    isolation_level=None,  # explicit BEGIN / COMMIT
                    check_same_thread=False,  # guarded by self._lock
                )
            except sqlite3.Error as exc:
                raise self._error(exc, "cannot open the ledger") from exc
            self._conn = conn
            try:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                self._drop_connection()
                raise self._error(exc, "cannot open the ledger") from exc
        return self._conn

    def _drop_connection(self):
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def close(self):
        """Close the connection (a later call reconnects to the same file)."""
        self._check_process()
        with self._lock:
            if self._depth == 0:
                self._drop_connection()

    def _error(self, exc, what):
        message = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and (
            "not a database" in message or "malformed" in message
        ):
            return LedgerError(
                errno.EIO,
                f"{what}: the file is not a dpsklearn ledger or is corrupt ({message})",
                self._path,
            )
        if "readonly" in message or "read-only" in message:
            return LedgerError(
                errno.EROFS,
                f"{what}: the ledger cannot be written ({message})",
                self._path,
            )
        if "locked" in message or "busy" in message:
            return LedgerError(
                errno.EBUSY,
                f"{what}: another process held the ledger longer than "
                f"timeout={self._timeout:g} s ({message})",
                self._path,
            )
        return LedgerError(errno.EIO, f"{what} ({message})", self._path)

    def _execute(self, conn, sql, parameters=()):
        try:
            return conn.execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self._error(exc, "ledger operation failed") from exc

    def _gone(self):
        return LedgerError(
            errno.ENOENT,
            "the ledger file is gone or empty; refusing to start a fresh budget "
            "in its place",
            self._path,
        )

    def _initialise(self, epsilon, delta, composition, store_threshold, must_exist):
        with self._transaction(sync=False) as conn:
            try:
                check = conn.execute("PRAGMA quick_check").fetchall()
            except sqlite3.Error as exc:
                raise self._error(exc, "cannot read the ledger") from exc
            if check != [("ok",)]:
                raise LedgerError(
                    errno.EIO,
                    "the ledger file is corrupt (SQLite integrity check failed)",
                    self._path,
                )
            tables = {
                row[0]
                for row in self._execute(
                    conn, "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            } - {"sqlite_sequence"}
            if not tables:
                if must_exist:
                    raise self._gone()
                if epsilon is None:
                    raise ValueError(
                        f"no ledger at {self._path!r} yet: give epsilon (and "
                        "delta) to create one."
                    )
                meta = {
                    "format": _FORMAT,
                    "schema_version": _SCHEMA_VERSION,
                    "epsilon": epsilon,
                    "delta": 0.0 if delta is None else delta,
                    "composition": composition or "basic",
                    "store_noisy_threshold": (
                        True if store_threshold is None else store_threshold
                    ),
                    "created": time.time(),
                }
                for statement in _SCHEMA:
                    self._execute(conn, statement)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [(key, json.dumps(value)) for key, value in meta.items()],
                )
                return meta
            if not _TABLES <= tables:
                raise LedgerError(
                    errno.EINVAL,
                    "this SQLite file is not a dpsklearn ledger (its tables are "
                    f"{sorted(tables)}); refusing to write into it",
                    self._path,
                )
            meta = self._read_meta(conn)
        self._check_matches(meta, epsilon, delta, composition, store_threshold)
        return meta

    def _read_meta(self, conn):
        rows = dict(self._execute(conn, "SELECT key, value FROM meta").fetchall())
        try:
            meta = {key: json.loads(value) for key, value in rows.items()}
            if meta.get("format") != _FORMAT:
                raise ValueError("format marker missing")
            if meta.get("schema_version") != _SCHEMA_VERSION:
                raise ValueError(
                    f"schema version {meta.get('schema_version')!r}, this dpsklearn "
                    f"reads {_SCHEMA_VERSION}"
                )
            meta["epsilon"] = _check_budget_value(
                meta["epsilon"], "epsilon", allow_zero=False
            )
            meta["delta"] = _check_budget_value(
                meta["delta"], "delta", allow_zero=True, upper=1.0
            )
            if meta["composition"] not in _LEDGER_COMPOSITIONS:
                raise ValueError(f"composition {meta['composition']!r}")
            if not isinstance(meta["store_noisy_threshold"], bool):
                raise ValueError("store_noisy_threshold is not a bool")
        except (KeyError, TypeError, ValueError) as exc:
            raise LedgerError(
                errno.EIO,
                f"the ledger's budget record is missing or corrupt ({exc})",
                self._path,
            ) from None
        return meta

    def _check_matches(self, meta, epsilon, delta, composition, store_threshold):
        given = {
            "epsilon": epsilon,
            "delta": delta,
            "composition": composition,
            "store_noisy_threshold": store_threshold,
        }
        for name, value in given.items():
            if value is None:
                continue
            stored = meta[name]
            same = (
                math.isclose(value, stored, rel_tol=1e-12, abs_tol=0.0)
                if isinstance(value, float)
                else value == stored
            )
            if not same:
                raise ValueError(
                    f"the ledger at {self._path!r} was created with {name}="
                    f"{stored!r}, not {value!r}; a ledger's budget cannot change. "
                    f"Pass {name}=None to use the stored value."
                )

    # -- transactions --------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self, *, sync=True, commit_on_error=False):
        """One ``BEGIN IMMEDIATE`` transaction (a savepoint when nested).

        Holds the process lock and SQLite's write lock throughout. With
        ``commit_on_error`` whatever was written is committed even when the
        body raises (a model's serving state only moves forward).
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            if self._depth:
                name = f"dpsklearn_{self._depth}"
                self._execute(conn, f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    if sync:
                        self._sync(conn)
                    yield conn
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute(f"ROLLBACK TO {name}")
                        conn.execute(f"RELEASE {name}")
                    self._reset_cache()
                    raise
                else:
                    self._execute(conn, f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._error(exc, "cannot lock the ledger") from exc
            self._depth = 1
            try:
                if sync:
                    self._sync(conn)
                yield conn
            except BaseException:
                if commit_on_error:
                    try:
                        conn.execute("COMMIT")
                    except sqlite3.Error:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        self._reset_cache()
                else:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    self._reset_cache()
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    self._reset_cache()
                    raise self._error(exc, "cannot commit to the ledger") from exc
            finally:
                self._depth = 0

    @contextlib.contextmanager
    def _reading(self):
        """A consistent view of the events (a read transaction)."""
        self._check_process()
        with self._lock:
            if self._depth:  # inside our own transaction: already consistent
                yield
                return
            conn = self._connection()
            try:
                conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise self._error(exc, "cannot read the ledger") from exc
            try:
                self._sync(conn)
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def _sync(self, conn):
        """Bring the cached events and composer up to date with the file."""
        if self._composer is None:
            self._composer = _Composer(self._composition)
        rows = self._execute(
            conn,
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id",
            (self._last_id,),
        ).fetchall()
        if not rows:
            return
        new = []
        for row in rows:
            try:
                event = PrivacyEvent(
                    row[5],
                    row[6],
                    row[4],
                    row[3],
                    row[7],
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
                    self._path,
                ) from None
            new.append(event)
            self._spend_ids.append(row[1])
        self._composer.add(new)
        self._events.extend(new)
        self._last_id = rows[-1][0]

    # -- budget figures ------------------------------------------------------
    def _fits(self, composer):
        if self._composition == "zcdp" and _has_approximate(composer):
            epsilon, delta = composer.basic()
            return _epsilon_fits(epsilon, self._epsilon) and _delta_fits(
                delta, self._delta
            )
        return composer.fits(self._epsilon, self._delta)

    def _spent(self, composer):
        if self._composition == "zcdp" and _has_approximate(composer):
            return composer.basic()
        return composer.spent(self._delta)

    def _check_usable(self, events):
        for event in events:
            if not isinstance(event, PrivacyEvent):
                raise TypeError(f"expected PrivacyEvent objects, got {event!r}.")
        if self._composition == "basic":
            for event in events:
                if math.isinf(event.epsilon) and event.count:
                    raise ValueError(
                        "basic composition needs each release's own (epsilon, "
                        "delta); give them for the Gaussian release "
                        "(spend(epsilon, delta, kind='gaussian', sigma=...))."
                    )

    # -- the accountant interface --------------------------------------------
    @property
    def path(self):
        """Absolute path of the ledger file."""
        return self._path

    @property
    def epsilon(self):
        """The total epsilon budget (stored in the file)."""
        return self._epsilon

    @property
    def delta(self):
        """The total delta budget (stored in the file)."""
        return self._delta

    @property
    def composition(self):
        """``"basic"`` or ``"zcdp"`` (stored in the file)."""
        return self._composition

    @property
    def store_noisy_threshold(self):
        """Whether model records keep the noisy threshold (the file is then secret)."""
        return self._store_threshold

    # The event-building front ends are the accountant's own: one place turns
    # (epsilon, delta, kind, sigma, ...) into events; the ledger only differs
    # in how spend_events / can_spend_events check and record them.
    _event = staticmethod(PrivacyAccountant._event)
    can_spend = PrivacyAccountant.can_spend
    spend = PrivacyAccountant.spend

    def can_spend_events(self, events):
        """Whether all ``events`` together would fit now (records nothing).

        Another process may spend between this answer and a later
        :meth:`spend_events`, which checks again atomically.
        """
        events = list(events)
        self._check_usable(events)
        with self._reading():
            return self._fits(self._composer.copy().add(events))

    def spend_events(self, events):
        """Atomically record several events: all of them, or none (then raise).

        One ``BEGIN IMMEDIATE`` transaction: the check sees every event
        committed by any process, and the new ones are committed before this
        returns (or, inside a model's serving transaction, with it).
        """
        events = list(events)
        self._check_usable(events)
        with self._transaction() as conn:
            candidate = self._composer.copy().add(events)
            if not self._fits(candidate):
                spent = self._spent(self._composer)
                after = self._spent(candidate)
                raise BudgetExhaustedError(
                    f"privacy budget exhausted: the ledger {self._path!r} has spent "
                    f"(epsilon={spent[0]:.6g}, delta={spent[1]:.3g}) of "
                    f"(epsilon={self._epsilon:.6g}, delta={self._delta:.3g}) under "
                    f"{self._composition_in_use(self._composer)} composition; with "
                    f"the requested spend it would be (epsilon={after[0]:.6g}, "
                    f"delta={after[1]:.3g}) under "
                    f"{self._composition_in_use(candidate)} composition, which "
                    "does not fit.",
                    spends=list(self._events),
                )
            recorded = [e for e in events if e.count]
            if not recorded:
                return
            spend_id = self._execute(
                conn, "SELECT COALESCE(MAX(spend_id), 0) + 1 FROM events"
            ).fetchone()[0]
            pid = os.getpid()
            rows = [
                (
                    spend_id,
                    e.time,
                    e.label,
                    e.kind,
                    e.epsilon,
                    e.delta,
                    e.count,
                    e.sigma,
                    e.sensitivity,
                    e.scale,
                    pid,
                )
                for e in recorded
            ]
            try:
                conn.executemany(
                    "INSERT INTO events (spend_id, time, label, kind, epsilon, delta, "
                    "count, sigma, sensitivity, scale, pid) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except sqlite3.Error as exc:
                raise self._error(exc, "cannot record the spend") from exc
            self._sync(conn)

    def _composition_in_use(self, composer=None):
        composer = self._composer if composer is None else composer
        if self._composition == "zcdp" and _has_approximate(composer):
            return "basic (zcdp with approximate events)"
        return self._composition

    @property
    def events(self):
        """Every recorded event, oldest first, from every process (a copy)."""
        with self._reading():
            return list(self._events)

    @property
    def spent(self):
        """The composed ``(epsilon, delta)`` spent so far."""
        with self._reading():
            return self._spent(self._composer)

    @property
    def spent_basic(self):
        """``(sum of epsilons, sum of deltas)``: what basic composition reports."""
        with self._reading():
            return self._composer.basic()

    @property
    def remaining(self):
        """``(epsilon, delta)`` still available under the composition."""
        epsilon, delta = self.spent
        return (max(0.0, self._epsilon - epsilon), max(0.0, self._delta - delta))

    @property
    def n_spends(self):
        """How many spends (``spend`` / ``spend_events`` calls: fits) are recorded."""
        with self._reading():
            return len(set(self._spend_ids))

    def epsilon_at(self, delta):
        """Composed epsilon of the recorded events at ``delta`` (as checked)."""
        with self._reading():
            composer = self._composer
            if self._composition == "zcdp" and _has_approximate(composer):
                return composer.basic_epsilon_at(float(delta))
            return composer.epsilon_at(float(delta))

    def model_records(self):
        """Public state of the model records: id, estimator, counters, times.

        Returns
        -------
        records : list of dict
            One per model fitted with this ledger, oldest first: ``model_id``,
            ``label``, ``created``, ``updated``, ``n_served``,
            ``abstention_count`` and ``n_queries`` (None when the model has
            no sparse vector engine). The noisy threshold is never returned.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            rows = self._execute(
                conn,
                "SELECT model_id, label, created, updated, state FROM models "
                "ORDER BY created, model_id",
            ).fetchall()
        records = []
        for model_id, label, created, updated, state_text in rows:
            try:
                state = json.loads(state_text)
                engine = state.get("engine") or {}
                records.append(
                    {
                        "model_id": model_id,
                        "label": label,
                        "created": created,
                        "updated": updated,
                        "n_served": int(state["n_served"]),
                        "abstention_count": engine.get("abstention_count"),
                        "n_queries": engine.get("n_queries"),
                    }
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                raise LedgerError(
                    errno.EIO,
                    f"the ledger holds a corrupt model record ({model_id!r})",
                    self._path,
                ) from None
        return records

    def summary(self):
        """Machine-readable totals: a dict of public figures."""
        with self._reading():
            basic = self._composer.basic()
            spent = self._spent(self._composer)
            n_releases = sum(e.count for e in self._events)
            n_events = len(self._events)
            n_spends = len(set(self._spend_ids))
            in_use = self._composition_in_use()
        return {
            "path": self._path,
            "budget": {"epsilon": self._epsilon, "delta": self._delta},
            "composition": self._composition,
            "composition_in_use": in_use,
            "shared": True,
            "n_spends": n_spends,
            "n_events": n_events,
            "n_releases": n_releases,
            "spent": {"epsilon": spent[0], "delta": spent[1]},
            "spent_basic": {"epsilon": basic[0], "delta": basic[1]},
        }

    def report(self):
        """A readable table of every event, the composed totals and the models.

        Lists each event (time, estimator label, kind, count, epsilon, delta,
        mechanism model), the total under the composition in use and under
        basic composition, and each model record's public counters (queries
        answered, abstentions). Never the noisy threshold, votes or noise.
        """
        summary = self.summary()
        events = self.events
        models = self.model_records()
        lines = [
            f"PrivacyLedger({self._path!r}, epsilon={self._epsilon:g}, "
            f"delta={self._delta:g}, composition={self._composition!r})",
            f"{'#':>3}  {'time (UTC)':<20} {'label':<30} {'kind':<18} {'count':>7} "
            f"{'epsilon':>10} {'delta':>10}  mechanism",
        ]
        for i, e in enumerate(events):
            eps = "n/a" if math.isinf(e.epsilon) else f"{e.epsilon:.4g}"
            lines.append(
                f"{i:>3}  {_utc(e.time):<20} {str(e.label or '-'):<30} "
                f"{e.kind:<18} {e.count:>7} {eps:>10} {e.delta:>10.3g}  "
                f"{e.describe()}"
            )
        spent, basic = summary["spent"], summary["spent_basic"]
        if self._composition != "basic":
            lines.append(
                f"spent under {summary['composition_in_use']} (min with basic): "
                f"epsilon={spent['epsilon']:.6g}, delta={spent['delta']:.3g}"
            )
        lines.append(
            f"spent under basic: epsilon={basic['epsilon']:.6g}, "
            f"delta={basic['delta']:.3g}"
        )
        lines.append(
            f"remaining: epsilon={max(0.0, self._epsilon - spent['epsilon']):.6g}, "
            f"delta={max(0.0, self._delta - spent['delta']):.3g} "
            f"({summary['n_releases']} releases in {summary['n_events']} events, "
            f"{summary['n_spends']} spends)"
        )
        if models:
            lines.append(f"models serving through this ledger ({len(models)}):")
            for m in models:
                abstentions = (
                    "-" if m["abstention_count"] is None else m["abstention_count"]
                )
                lines.append(
                    f"  {m['model_id']}  {str(m['label'] or '-'):<30} "
                    f"answered {m['n_served']}, abstentions {abstentions}, "
                    f"last served {_utc(m['updated'])}"
                )
        return "\n".join(lines)

    def __repr__(self):
        return (
            f"PrivacyLedger({self._path!r}, epsilon={self._epsilon:g}, "
            f"delta={self._delta:g}, composition={self._composition!r})"
        )

    # -- model records (durable serving state, SPEC section 4) ---------------
    def _register_model(self, label, state, secret=None):
        """Create a model record holding ``state``; return its random id."""
        model_id = secrets.token_hex(16)
        if not self._store_threshold:
            secret = None
        now = time.time()
        with self._transaction(sync=False) as conn:
            self._execute(
                conn,
                "INSERT INTO models (model_id, label, created, updated, version, "
                "state, secret) VALUES (?, ?, ?, ?, 1, ?, ?)",
                (
                    model_id,
                    None if label is None else str(label),
                    now,
                    now,
                    json.dumps(state, sort_keys=True),
                    None if secret is None else json.dumps(secret, sort_keys=True),
                ),
            )
        return model_id

    @contextlib.contextmanager
    def _model_transaction(self, model_id):
        """Load a model record in a write transaction; commit what it saves.

        The record is committed even when the body raises, so a model's
        state only moves forward.
        """
        with self._transaction(sync=False, commit_on_error=True) as conn:
            row = self._execute(
                conn,
                "SELECT version, state, secret FROM models WHERE model_id = ?",
                (model_id,),
            ).fetchone()
            if row is None:
                raise LedgerError(
                    errno.ENOENT,
                    f"the ledger has no record of this model (id {model_id}); it "
                    "answers nothing rather than start from a fresh state",
                    self._path,
                )
            try:
                version = int(row[0])
                state = json.loads(row[1])
                secret = None if row[2] is None else json.loads(row[2])
                if not isinstance(state, dict) or not (
                    secret is None or isinstance(secret, dict)
                ):
                    raise ValueError("not a JSON object")
            except (TypeError, ValueError):
                raise LedgerError(
                    errno.EIO,
                    f"the ledger holds a corrupt model record (id {model_id})",
                    self._path,
                ) from None
            yield _ModelRecord(self, conn, model_id, version, state, secret)

    # -- sharing semantics ---------------------------------------------------
    def __reduce__(self):
        # By path: an unpickled ledger reconnects to the same file.
        return (_reopen_ledger, (self._path, self._timeout))

    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _utc(stamp):
    moment = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
