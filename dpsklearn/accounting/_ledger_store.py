"""The storage behind a :class:`~dpsklearn.PrivacyLedger`: one interface, two databases.

:class:`LedgerStore` is the small storage-backend interface of the ledger,
written once on top of a few hooks: the budget record, the event rows and
the model records that keep a serving model's state durable
(``docs/design.rst``, "Serving state, copies and the ledger"), write
transactions (savepoints when nested) under a process lock, and consistent
reads. Two backends implement the hooks:

* :class:`~dpsklearn.accounting._ledger_sqlite.SQLiteStore` -- a SQLite file
  (``BEGIN IMMEDIATE``: SQLite's one write lock), for one machine;
* :class:`~dpsklearn.accounting._ledger_postgres.PostgresStore` -- a schema
  of a PostgreSQL database (an explicit row lock on the budget row, or on
  the model's row), for several hosts.

Both store the same tables with the same columns, and the SQL statements
here are the same for both (written with ``?`` parameters). The store knows
nothing of composition; the ledger does.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import json
import math
import os
import random
import secrets
import threading
import time

from ._base import ModelRecord, parse_record, record_text
from ._composer import FILTER_VALID

__all__ = ["LedgerError", "LedgerStore", "TransientLedgerError"]

FORMAT = "dpsklearn-privacy-ledger"
SCHEMA_VERSION = 1
TABLES = {"meta", "events", "models"}
EVENT_COLUMNS = (
    "id, spend_id, time, label, kind, epsilon, delta, count, sigma, sensitivity, scale"
)


class LedgerError(OSError, ValueError):
    """A ledger that cannot be used: unreadable, corrupt, unreachable, not writable.

    Both an :class:`OSError` (``filename`` is the ledger's path, or its
    PostgreSQL URL without the password) and a :class:`ValueError`. A
    ledger that raises it answers nothing: no spend is recorded and no model
    bound to it releases an answer.

    Examples
    --------
    >>> import errno
    >>> from dpsklearn import LedgerError
    >>> err = LedgerError(errno.EISDIR, "the ledger path is a directory", "/tmp")
    >>> err.filename, isinstance(err, ValueError)
    ('/tmp', True)
    """


class TransientLedgerError(LedgerError):
    """The database aborted a transaction (a serialization failure, a deadlock).

    Nothing of the transaction was written; a check-and-spend that meets it
    is run again from the start (:meth:`LedgerStore.retrying`).
    """


class LedgerStore(abc.ABC):
    """The storage of one ledger object in one process.

    Parameters
    ----------
    location : str
        Where the ledger is (a file path, or a database URL).
    timeout : float
        Seconds to wait for another process's transaction.
    on_rollback : callable
        Called when a transaction rolls back (the ledger drops its cache).
    """

    #: Appended to the SELECT of a model record in a write transaction.
    for_update = ""
    #: Attempts of a check-and-spend aborted by the database.
    max_attempts = 8

    def __init__(self, location, timeout, on_rollback):
        self._location = location
        self._timeout = timeout
        self._on_rollback = on_rollback
        self.store_noisy_threshold = True
        self._init_process_state()

    # -- what a backend provides ---------------------------------------------
    @property
    @abc.abstractmethod
    def path(self):
        """The ledger's location as shown (never a password)."""

    @property
    @abc.abstractmethod
    def live_key(self):
        """One key per ledger, for the process's table of live ledgers."""

    @property
    @abc.abstractmethod
    def db_errors(self):
        """The driver's exception classes."""

    @abc.abstractmethod
    def _connect(self):
        """A new connection (in autocommit mode: transactions are explicit)."""

    @abc.abstractmethod
    def _begin(self, conn, lock):
        """Start a write transaction; ``lock`` is "budget", "model" or None."""

    @abc.abstractmethod
    def error(self, exc, what):
        """The :class:`LedgerError` for a driver exception."""

    @abc.abstractmethod
    def exists(self):
        """Whether anything is stored at the location yet (a quick check)."""

    @abc.abstractmethod
    def _tables(self, conn):
        """The names of the tables at the location."""

    @abc.abstractmethod
    def _create_schema(self, conn):
        """Create the three tables (inside the initialising transaction)."""

    def _check_integrity(self, conn):  # noqa: B027 (optional hook)
        """Raise :class:`LedgerError` when the storage is damaged."""

    def _usable(self, conn):
        """Whether a connection can still be used (a server may drop it)."""
        return True

    def _sql(self, sql):
        """The statement in the driver's parameter style."""
        return sql

    # -- connection ----------------------------------------------------------
    @property
    def depth(self):
        return self._depth

    def _init_process_state(self):
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._conn = None
        self._depth = 0

    def check_process(self):
        # After a fork the inherited connection and lock belong to the parent.
        if self._pid != os.getpid():
            self._init_process_state()

    def _connection(self):
        if self._conn is not None and not self._usable(self._conn):
            self.drop_connection()  # reconnect; the lost transaction rolled back
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def drop_connection(self):
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(Exception):
                conn.close()

    def close(self):
        """Close the connection (a later call reconnects)."""
        self.check_process()
        with self._lock:
            if self._depth == 0:
                self.drop_connection()

    def execute(self, conn, sql, parameters=()):
        try:
            return conn.execute(self._sql(sql), parameters)
        except self.db_errors as exc:
            raise self.error(exc, "ledger operation failed") from exc

    def _quiet(self, conn, sql):
        """Run a transaction-control statement, ignoring errors (cleanup)."""
        with contextlib.suppress(Exception):
            conn.execute(sql)

    def gone(self):
        return LedgerError(
            errno.ENOENT,
            "the ledger is gone or empty; refusing to start a fresh budget in "
            "its place",
            self.path,
        )

    # -- the budget record ---------------------------------------------------
    def initialise(self, epsilon, delta, composition, store_threshold, must_exist):
        """Create the ledger (tables and budget) or read and check the stored one."""
        with self.transaction(lock="create") as conn:
            self._check_integrity(conn)
            tables = self._tables(conn)
            if not tables:
                if must_exist:
                    raise self.gone()
                if epsilon is None:
                    raise ValueError(
                        f"no ledger at {self.path!r} yet: give epsilon (and "
                        "delta) to create one."
                    )
                meta = {
                    "format": FORMAT,
                    "schema_version": SCHEMA_VERSION,
                    "epsilon": epsilon,
                    "delta": 0.0 if delta is None else delta,
                    "composition": composition or "basic",
                    "store_noisy_threshold": (
                        True if store_threshold is None else store_threshold
                    ),
                    "created": time.time(),
                }
                self._create_schema(conn)
                for key, value in meta.items():
                    self.execute(
                        conn,
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        (key, json.dumps(value)),
                    )
                return meta
            if not TABLES <= tables:
                raise LedgerError(
                    errno.EINVAL,
                    "this database is not a dpsklearn ledger (its tables are "
                    f"{sorted(tables)}); refusing to write into it",
                    self.path,
                )
            meta = self.read_meta(conn)
        self.check_matches(meta, epsilon, delta, composition, store_threshold)
        return meta

    def read_meta(self, conn):
        rows = dict(self.execute(conn, "SELECT key, value FROM meta").fetchall())
        try:
            meta = {key: json.loads(value) for key, value in rows.items()}
            if meta.get("format") != FORMAT:
                raise ValueError("format marker missing")
            if meta.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(
                    f"schema version {meta.get('schema_version')!r}, this dpsklearn "
                    f"reads {SCHEMA_VERSION}"
                )
            meta["epsilon"] = float(meta["epsilon"])
            meta["delta"] = float(meta["delta"])
            if not (math.isfinite(meta["epsilon"]) and meta["epsilon"] > 0):
                raise ValueError(f"epsilon {meta['epsilon']!r}")
            if not 0 <= meta["delta"] < 1:
                raise ValueError(f"delta {meta['delta']!r}")
            if meta["composition"] not in FILTER_VALID:
                raise ValueError(f"composition {meta['composition']!r}")
            if not isinstance(meta["store_noisy_threshold"], bool):
                raise ValueError("store_noisy_threshold is not a bool")
        except (KeyError, TypeError, ValueError) as exc:
            raise LedgerError(
                errno.EIO,
                f"the ledger's budget record is missing or corrupt ({exc})",
                self.path,
            ) from None
        return meta

    def check_matches(self, meta, epsilon, delta, composition, store_threshold):
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
                    f"the ledger at {self.path!r} was created with {name}="
                    f"{stored!r}, not {value!r}; a ledger's budget cannot change. "
                    f"Pass {name}=None to use the stored value."
                )

    # -- transactions --------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, *, lock="budget", sync=None, commit_on_error=False):
        """One write transaction (a savepoint when nested).

        Holds the process lock and the backend's lock throughout: SQLite's
        write lock, or a PostgreSQL row lock on the budget row
        (``lock="budget"``; a check-and-spend) or on nothing yet
        (``lock="model"``: the model's row is locked when it is read). With
        ``commit_on_error`` whatever was written is committed even when the
        body raises (a model's serving state only moves forward).
        """
        self.check_process()
        with self._lock:
            conn = self._connection()
            if self._depth:
                name = f"dpsklearn_{self._depth}"
                self.execute(conn, f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    if sync:
                        sync(conn)
                    yield conn
                except BaseException:
                    self._quiet(conn, f"ROLLBACK TO SAVEPOINT {name}")
                    self._quiet(conn, f"RELEASE SAVEPOINT {name}")
                    self._on_rollback()
                    raise
                else:
                    self.execute(conn, f"RELEASE SAVEPOINT {name}")
                finally:
                    self._depth -= 1
                return
            try:
                self._begin(conn, lock)
            except BaseException:
                self._quiet(conn, "ROLLBACK")
                raise
            self._depth = 1
            try:
                if sync:
                    sync(conn)
                yield conn
            except BaseException:
                if commit_on_error:
                    try:
                        conn.execute("COMMIT")
                    except Exception:
                        self._quiet(conn, "ROLLBACK")
                        self._on_rollback()
                else:
                    self._quiet(conn, "ROLLBACK")
                    self._on_rollback()
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except self.db_errors as exc:
                    self._quiet(conn, "ROLLBACK")
                    self._on_rollback()
                    raise self.error(exc, "cannot commit to the ledger") from exc
            finally:
                self._depth = 0

    def retrying(self, body, *, lock="budget", sync=None):
        """Run ``body(conn)`` in a transaction; run it again if the database aborts it.

        A :class:`TransientLedgerError` (a serialization failure or a
        deadlock) means the database rolled the whole transaction back, so
        nothing of it is written; ``body`` is a pure check-and-record and
        runs again from a fresh read, up to :attr:`max_attempts` times with
        a random back-off. Inside an enclosing transaction the error goes up
        to it (only the outermost transaction can be run again).
        """
        for attempt in range(1, self.max_attempts + 1):
            try:
                with self.transaction(lock=lock, sync=sync) as conn:
                    return body(conn)
            except TransientLedgerError:
                if self._depth or attempt == self.max_attempts:
                    raise
                time.sleep(random.uniform(0, 0.002 * 2**attempt))

    @contextlib.contextmanager
    def reading(self, sync):
        """A consistent view of the events (a read transaction)."""
        self.check_process()
        with self._lock:
            if self._depth:  # inside our own transaction: already consistent
                yield
                return
            conn = self._connection()
            try:
                conn.execute("BEGIN")
            except self.db_errors as exc:
                raise self.error(exc, "cannot read the ledger") from exc
            try:
                sync(conn)
                yield
            finally:
                self._quiet(conn, "COMMIT")

    # -- events --------------------------------------------------------------
    def record_events(self, conn, rows):
        """Insert the rows of one spend (under the budget lock); its spend id."""
        spend_id = self.execute(
            conn, "SELECT COALESCE(MAX(spend_id), 0) + 1 FROM events"
        ).fetchone()[0]
        for row in rows:
            self.execute(
                conn,
                "INSERT INTO events (spend_id, time, label, kind, epsilon, delta, "
                "count, sigma, sensitivity, scale, pid) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (spend_id, *row),
            )
        return spend_id

    def events_after(self, conn, last_id):
        """The event rows with an id above ``last_id``, in id order.

        Event ids grow in commit order: every insert happens under the one
        write lock (SQLite's, or PostgreSQL's budget row lock), so a reader
        that has seen id ``n`` never misses a smaller id committed later.
        """
        return self.execute(
            conn,
            f"SELECT {EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id",
            (last_id,),
        ).fetchall()

    # -- model records -------------------------------------------------------
    def register_model(self, label, state, secret=None):
        """Create a model record holding ``state``; return its random id."""
        model_id = secrets.token_hex(16)
        if not self.store_noisy_threshold:
            secret = None
        now = time.time()

        def insert(conn):
            self.execute(
                conn,
                "INSERT INTO models (model_id, label, created, updated, version, "
                "state, secret) VALUES (?, ?, ?, ?, 1, ?, ?)",
                (
                    model_id,
                    None if label is None else str(label),
                    now,
                    now,
                    record_text(state),
                    record_text(secret),
                ),
            )

        self.retrying(insert, lock=None)
        return model_id

    @contextlib.contextmanager
    def model_transaction(self, model_id):
        """Load a model record in a write transaction; commit what it saves.

        The record's row is locked for the whole transaction (SQLite's write
        lock, or ``SELECT ... FOR UPDATE`` in PostgreSQL), and the record is
        committed even when the body raises, so a model's state only moves
        forward and no two copies answer from the same state.
        """
        with self.transaction(lock="model", commit_on_error=True) as conn:
            row = self.execute(
                conn,
                "SELECT version, state, secret FROM models WHERE model_id = ?"
                + self.for_update,
                (model_id,),
            ).fetchone()
            if row is None:
                raise LedgerError(
                    errno.ENOENT,
                    f"the ledger has no record of this model (id {model_id}); it "
                    "answers nothing rather than start from a fresh state",
                    self.path,
                )
            try:
                version, state, secret = parse_record(model_id, *row)
            except ValueError:
                raise LedgerError(
                    errno.EIO,
                    f"the ledger holds a corrupt model record (id {model_id})",
                    self.path,
                ) from None

            def write(new_version, state, secret):
                self.execute(
                    conn,
                    "UPDATE models SET state = ?, secret = ?, version = ?, "
                    "updated = ? WHERE model_id = ?",
                    (
                        record_text(state),
                        record_text(secret),
                        new_version,
                        time.time(),
                        model_id,
                    ),
                )

            yield ModelRecord(
                model_id,
                version,
                state,
                secret,
                write=write,
                keep_secret=self.store_noisy_threshold,
            )

    def model_records(self):
        """The public columns of every model record (see the ledger's method)."""
        self.check_process()
        with self._lock:
            conn = self._connection()
            rows = self.execute(
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
                    self.path,
                ) from None
        return records
