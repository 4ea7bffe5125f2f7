"""The SQLite file behind a :class:`~dpsklearn.PrivacyLedger`.

One :class:`LedgerFile` per ledger object and process: the schema, the
connection (WAL journal, ``synchronous=FULL``), ``BEGIN IMMEDIATE``
transactions (savepoints when nested) under a process lock, the stored
budget, the event rows and the model records that keep a serving model's
state durable (``docs/design.rst``, "Serving state, copies and the
ledger"). It knows nothing of composition; the ledger does.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
import sqlite3
import threading
import time

__all__ = ["LedgerError", "LedgerFile", "ModelRecord"]

_FORMAT = "dpsklearn-privacy-ledger"
_SCHEMA_VERSION = 1
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


class LedgerError(OSError, ValueError):
    """A ledger file that cannot be used: unreadable, corrupt, or not writable.

    Both an :class:`OSError` (``filename`` is the ledger path) and a
    :class:`ValueError`. A ledger that raises it answers nothing: no spend
    is recorded and no model bound to it releases an answer.

    Examples
    --------
    >>> import errno
    >>> from dpsklearn import LedgerError
    >>> err = LedgerError(errno.EISDIR, "the ledger path is a directory", "/tmp")
    >>> err.filename, isinstance(err, ValueError)
    ('/tmp', True)
    """


class ModelRecord:
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
        self._ledger.execute(
            self._conn,
            "UPDATE models SET state = ?, secret = ?, version = ?, updated = ? "
            "WHERE model_id = ?",
            (state_text, secret_text, self.version, time.time(), self.model_id),
        )
        self.state, self.secret = state, secret
        return self.version

    def __repr__(self):  # never the secret
        return f"ModelRecord({self.model_id!r}, version={self.version})"


class LedgerFile:
    """The ledger's SQLite file, its connection and its transactions.

    Parameters
    ----------
    path : str
        Absolute path of the file.
    timeout : float
        SQLite busy timeout in seconds.
    on_rollback : callable
        Called when a transaction rolls back (the ledger drops its cache).
    """

    def __init__(self, path, timeout, on_rollback):
        self._path = path
        self._timeout = timeout
        self._on_rollback = on_rollback
        self.store_noisy_threshold = True
        self._init_process_state()

    @property
    def path(self):
        return self._path

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
        if self._conn is None:
            try:
                conn = sqlite3.connect(
                    self._path,
                    timeout=self._timeout,
                    isolation_level=None,  # explicit BEGIN / COMMIT
                    check_same_thread=False,  # guarded by self._lock
                )
            except sqlite3.Error as exc:
                raise self.error(exc, "cannot open the ledger") from exc
            self._conn = conn
            try:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                self.drop_connection()
                raise self.error(exc, "cannot open the ledger") from exc
        return self._conn

    def drop_connection(self):
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def close(self):
        """Close the connection (a later call reconnects to the same file)."""
        self.check_process()
        with self._lock:
            if self._depth == 0:
                self.drop_connection()

    def error(self, exc, what):
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

    def execute(self, conn, sql, parameters=()):
        try:
            return conn.execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self.error(exc, "ledger operation failed") from exc

    def gone(self):
        return LedgerError(
            errno.ENOENT,
            "the ledger file is gone or empty; refusing to start a fresh budget "
            "in its place",
            self._path,
        )

    def initialise(self, epsilon, delta, composition, store_threshold, must_exist):
        with self.transaction(sync=None) as conn:
            try:
                check = conn.execute("PRAGMA quick_check").fetchall()
            except sqlite3.Error as exc:
                raise self.error(exc, "cannot read the ledger") from exc
            if check != [("ok",)]:
                raise LedgerError(
                    errno.EIO,
                    "the ledger file is corrupt (SQLite integrity check failed)",
                    self._path,
                )
            tables = {
                row[0]
                for row in self.execute(
                    conn, "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            } - {"sqlite_sequence"}
            if not tables:
                if must_exist:
                    raise self.gone()
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
                    self.execute(conn, statement)
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
            meta = self.read_meta(conn)
        self.check_matches(meta, epsilon, delta, composition, store_threshold)
        return meta

    def read_meta(self, conn):
        rows = dict(self.execute(conn, "SELECT key, value FROM meta").fetchall())
        try:
            meta = {key: json.loads(value) for key, value in rows.items()}
            if meta.get("format") != _FORMAT:
                raise ValueError("format marker missing")
            if meta.get("schema_version") != _SCHEMA_VERSION:
                raise ValueError(
                    f"schema version {meta.get('schema_version')!r}, this dpsklearn "
                    f"reads {_SCHEMA_VERSION}"
                )
            meta["epsilon"] = float(meta["epsilon"])
            meta["delta"] = float(meta["delta"])
            if not (math.isfinite(meta["epsilon"]) and meta["epsilon"] > 0):
                raise ValueError(f"epsilon {meta['epsilon']!r}")
            if not 0 <= meta["delta"] < 1:
                raise ValueError(f"delta {meta['delta']!r}")
            if meta["composition"] not in ("basic", "zcdp"):
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
                    f"the ledger at {self._path!r} was created with {name}="
                    f"{stored!r}, not {value!r}; a ledger's budget cannot change. "
                    f"Pass {name}=None to use the stored value."
                )

    # -- transactions --------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, *, sync=None, commit_on_error=False):
        """One ``BEGIN IMMEDIATE`` transaction (a savepoint when nested).

        Holds the process lock and SQLite's write lock throughout. With
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
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute(f"ROLLBACK TO {name}")
                        conn.execute(f"RELEASE {name}")
                    self._on_rollback()
                    raise
                else:
                    self.execute(conn, f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self.error(exc, "cannot lock the ledger") from exc
            self._depth = 1
            try:
                if sync:
                    sync(conn)
                yield conn
            except BaseException:
                if commit_on_error:
                    try:
                        conn.execute("COMMIT")
                    except sqlite3.Error:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        self._on_rollback()
                else:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    self._on_rollback()
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    self._on_rollback()
                    raise self.error(exc, "cannot commit to the ledger") from exc
            finally:
                self._depth = 0

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
            except sqlite3.Error as exc:
                raise self.error(exc, "cannot read the ledger") from exc
            try:
                sync(conn)
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def register_model(self, label, state, secret=None):
        """Create a model record holding ``state``; return its random id."""
        model_id = secrets.token_hex(16)
        if not self.store_noisy_threshold:
            secret = None
        now = time.time()
        with self.transaction(sync=None) as conn:
            self.execute(
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
    def model_transaction(self, model_id):
        """Load a model record in a write transaction; commit what it saves.

        The record is committed even when the body raises, so a model's
        state only moves forward.
        """
        with self.transaction(sync=None, commit_on_error=True) as conn:
            row = self.execute(
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
            yield ModelRecord(self, conn, model_id, version, state, secret)

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
                    self._path,
                ) from None
        return records
