"""A ledger in a SQLite file (standard library :mod:`sqlite3`), for one machine.

The file format is the ledger's first one, unchanged: the same three tables
(``meta``, ``events``, ``models``) with the same columns, so every ledger
file written before the PostgreSQL backend existed opens as it was. One
connection per ledger object and process (WAL journal,
``synchronous=FULL``: a commit is on disk before it returns); every write
transaction is ``BEGIN IMMEDIATE``, SQLite's one write lock, waited for up
to ``timeout`` seconds. SQLite on a network file system gives no reliable
locking: to share one budget between hosts use the PostgreSQL backend.
"""

from __future__ import annotations

import errno
import os
import sqlite3

from ._ledger_store import LedgerError, LedgerStore

__all__ = ["SQLiteStore"]

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


def sqlite_path(path):
    """The absolute path of a ledger file; refuse what is not a file path."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"path must be a file path (str or os.PathLike) or a PostgreSQL URL, "
            f"got {path!r}."
        ) from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path or path == ":memory:" or path.startswith("file:"):
        raise ValueError(
            f"path must name a file on disk, got {path!r}: an in-memory "
            "ledger cannot be shared between processes or survive a restart."
        )
    return os.path.abspath(path)


class SQLiteStore(LedgerStore):
    """The ledger's SQLite file, its connection and its transactions."""

    def __init__(self, path, timeout, on_rollback):
        super().__init__(path, timeout, on_rollback)
        if os.path.isdir(path):
            raise LedgerError(
                errno.EISDIR,
                "cannot use this ledger path: it is a directory (give a file path)",
                path,
            )

    @property
    def path(self):
        return self._location

    @property
    def live_key(self):
        return os.path.realpath(self._location)

    @property
    def db_errors(self):
        return sqlite3.Error

    def exists(self):
        return os.path.exists(self._location)

    def _connect(self):
        try:
            conn = sqlite3.connect(
                self._location,
                timeout=self._timeout,
                isolation_level=None,  # explicit BEGIN / COMMIT
                check_same_thread=False,  # guarded by self._lock
            )
        except sqlite3.Error as exc:
            raise self.error(exc, "cannot open the ledger") from exc
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            conn.close()
            raise self.error(exc, "cannot open the ledger") from exc
        return conn

    def _begin(self, conn, lock):
        # One write lock for everything: spends and model records alike.
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.error(exc, "cannot lock the ledger") from exc

    def _check_integrity(self, conn):
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc, "cannot read the ledger") from exc
        if check != [("ok",)]:
            raise LedgerError(
                errno.EIO,
                "the ledger file is corrupt (SQLite integrity check failed)",
                self.path,
            )

    def _tables(self, conn):
        rows = self.execute(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows} - {"sqlite_sequence"}

    def _create_schema(self, conn):
        for statement in _SCHEMA:
            self.execute(conn, statement)

    def error(self, exc, what):
        message = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and (
            "not a database" in message or "malformed" in message
        ):
            return LedgerError(
                errno.EIO,
                f"{what}: the file is not a dpsklearn ledger or is corrupt ({message})",
                self.path,
            )
        if "readonly" in message or "read-only" in message:
            return LedgerError(
                errno.EROFS,
                f"{what}: the ledger cannot be written ({message})",
                self.path,
            )
        if "locked" in message or "busy" in message:
            return LedgerError(
                errno.EBUSY,
                f"{what}: another process held the ledger longer than "
                f"timeout={self._timeout:g} s ({message})",
                self.path,
            )
        return LedgerError(errno.EIO, f"{what} ({message})", self.path)
