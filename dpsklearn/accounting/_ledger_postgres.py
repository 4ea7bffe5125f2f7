"""A ledger in a PostgreSQL database, for one budget shared by several hosts.

A ledger is one schema of the database (``dpsklearn_ledger`` unless the URL
says ``?schema=name``) holding the same three tables as a SQLite ledger
(``meta``, ``events``, ``models``). The driver is psycopg 3
(``pip install "dpsklearn[postgres]"``).

Isolation (``docs/design.rst``, "Serving state, copies and the ledger").
Every write transaction runs at READ COMMITTED and takes an explicit row
lock before it reads anything it decides on:

* a check-and-spend locks the budget row (``SELECT ... FROM meta WHERE key
  = 'epsilon' FOR UPDATE``), so check-and-spends queue on one lock, each
  reads every event committed before it (READ COMMITTED takes a fresh
  snapshot for each statement after the lock is granted), and the composed
  total never exceeds the budget;
* a served model's transaction locks its own row of ``models`` (``SELECT
  ... FOR UPDATE``), so two copies of one model never answer from the same
  state, while different models answer in parallel.

Why a row lock rather than SERIALIZABLE: a serving transaction draws noise
and releases answers computed from the state it read, so it must never be
aborted and replayed; and under SERIALIZABLE concurrent check-and-spends
abort each other (every one reads the events every other one inserts),
while with the lock they simply wait their turn. Should the server still
abort a transaction (a serialization failure, SQLSTATE 40001, or a
deadlock, 40P01), the whole transaction is rolled back, so nothing of it is
written, and a check-and-spend runs again from the start
(:meth:`~dpsklearn.accounting._ledger_store.LedgerStore.retrying`).

Durability: every session sets ``synchronous_commit = on`` (whatever the
server's default), so a commit is flushed to the server's write-ahead log
before it returns, and the answers it pays for are returned after it.
"""

from __future__ import annotations

import errno
import re
import urllib.parse

from ._ledger_store import LedgerError, LedgerStore, TransientLedgerError

__all__ = ["PostgresStore", "is_postgres_url"]

DEFAULT_SCHEMA = "dpsklearn_ledger"
_SCHEMES = ("postgresql://", "postgres://")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE events ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " spend_id BIGINT NOT NULL,"
    " time DOUBLE PRECISION NOT NULL,"
    " label TEXT,"
    " kind TEXT NOT NULL,"
    " epsilon DOUBLE PRECISION NOT NULL,"
    " delta DOUBLE PRECISION NOT NULL,"
    " count BIGINT NOT NULL,"
    " sigma DOUBLE PRECISION,"
    " sensitivity DOUBLE PRECISION,"
    " scale DOUBLE PRECISION,"
    " pid BIGINT)",
    "CREATE TABLE models ("
    " model_id TEXT PRIMARY KEY,"
    " label TEXT,"
    " created DOUBLE PRECISION NOT NULL,"
    " updated DOUBLE PRECISION NOT NULL,"
    " version BIGINT NOT NULL,"
    " state TEXT NOT NULL,"  # public counters (JSON)
    " secret TEXT)",  # the noisy threshold (JSON) or NULL
)

# SQLSTATEs: the transaction was aborted and may be run again; a lock was
# not granted within lock_timeout; the server refused the session.
_TRANSIENT = {"40001", "40P01"}
_LOCK_TIMEOUT = {"55P03", "57014"}


def is_postgres_url(location):
    """Whether ``location`` is a PostgreSQL URL (``postgresql://...``)."""
    return isinstance(location, str) and location.startswith(_SCHEMES)


def _psycopg():
    try:
        import psycopg
        import psycopg.sql  # noqa: F401
    except ImportError:
        raise ImportError(
            "a PostgreSQL ledger needs the psycopg driver: "
            'pip install "dpsklearn[postgres]"'
        ) from None
    return psycopg


def split_url(url):
    """``(conninfo, schema, shown)``: the driver's URL, the ledger's schema and
    the URL as shown in messages (without its password)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    if len(schemas) > 1:
        raise ValueError(f"give one schema in the PostgreSQL URL, not {schemas}.")
    schema = schemas[0] if schemas else DEFAULT_SCHEMA
    if not _IDENTIFIER.fullmatch(schema):
        raise ValueError(
            f"schema={schema!r} in the PostgreSQL URL must be a plain identifier "
            "(letters, digits and _, not starting with a digit, at most 63)."
        )
    rest = [(key, value) for key, value in query if key != "schema"]
    conninfo = urllib.parse.urlunsplit(
        parts._replace(query=urllib.parse.urlencode(rest))
    )
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    shown_query = [(key, "***" if key == "password" else value) for key, value in query]
    shown = urllib.parse.urlunsplit(
        parts._replace(
            netloc=f"{userinfo}{at}{hosts}",
            query=urllib.parse.urlencode(shown_query, safe="*"),
        )
    )
    return conninfo, schema, shown


class PostgresStore(LedgerStore):
    """The ledger's schema in a PostgreSQL database, its connection, its locks."""

    for_update = " FOR UPDATE"

    def __init__(self, url, timeout, on_rollback):
        self._psycopg = _psycopg()
        self._conninfo, self._schema, self._shown = split_url(url)
        super().__init__(url, timeout, on_rollback)

    @property
    def path(self):
        return self._shown

    @property
    def schema(self):
        return self._schema

    @property
    def live_key(self):
        return ("postgresql", self._conninfo, self._schema)

    @property
    def db_errors(self):
        return self._psycopg.Error

    def _sql(self, sql):
        return sql.replace("?", "%s")

    def _usable(self, conn):
        return not (conn.closed or conn.broken)

    def _connect(self):
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(
                self._conninfo,
                autocommit=True,  # transactions are explicit: BEGIN / COMMIT
                connect_timeout=max(2, int(round(self._timeout))),
            )
        except psycopg.Error as exc:
            raise self.error(exc, "cannot connect to the ledger's server") from exc
        # lock_timeout bounds the wait for another process's row lock, as
        # SQLite's busy timeout does (0 would mean forever in PostgreSQL).
        lock_ms = max(1, int(self._timeout * 1000))
        try:
            conn.execute(
                psycopg.sql.SQL("SET search_path TO {}").format(
                    psycopg.sql.Identifier(self._schema)
                )
            )
            conn.execute("SET synchronous_commit TO on")
            conn.execute(f"SET lock_timeout TO {lock_ms}")
        except psycopg.Error as exc:
            conn.close()
            raise self.error(exc, "cannot connect to the ledger's server") from exc
        return conn

    def _begin(self, conn, lock):
        try:
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            if lock == "budget":
                row = conn.execute(
                    "SELECT value FROM meta WHERE key = 'epsilon' FOR UPDATE"
                ).fetchone()
                if row is None:
                    raise LedgerError(
                        errno.EIO,
                        "the ledger's budget record is missing or corrupt",
                        self.path,
                    )
            elif lock == "create":
                # Two processes creating one ledger at once: one creates it,
                # the other waits and then reads it.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))",
                    (f"dpsklearn-ledger:{self._schema}",),
                )
        except self._psycopg.Error as exc:
            raise self.error(exc, "cannot lock the ledger") from exc

    def exists(self):
        return True  # known only once connected: _tables says

    def _tables(self, conn):
        rows = self.execute(
            conn,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
            (self._schema,),
        ).fetchall()
        return {row[0] for row in rows}

    def _create_schema(self, conn):
        sql = self._psycopg.sql
        try:
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self._schema)
                )
            )
        except self._psycopg.Error as exc:
            raise self.error(exc, "cannot create the ledger") from exc
        for statement in _SCHEMA:
            self.execute(conn, statement)

    def error(self, exc, what):
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        state = getattr(exc, "sqlstate", None)
        if state in _TRANSIENT:
            return TransientLedgerError(
                errno.EAGAIN,
                f"{what}: the server aborted the transaction ({message}); nothing "
                "of it was written",
                self.path,
            )
        if state in _LOCK_TIMEOUT:
            return LedgerError(
                errno.EBUSY,
                f"{what}: another process held the ledger longer than "
                f"timeout={self._timeout:g} s ({message})",
                self.path,
            )
        if state == "42501" or state == "25006":
            return LedgerError(
                errno.EROFS,
                f"{what}: the ledger cannot be written ({message})",
                self.path,
            )
        if state in ("42P01", "3F000"):
            return LedgerError(
                errno.ENOENT,
                f"{what}: the ledger's tables are gone ({message})",
                self.path,
            )
        if isinstance(exc, self._psycopg.OperationalError) and state is None:
            return LedgerError(
                errno.ECONNREFUSED,
                f"{what}: the PostgreSQL server cannot be reached ({message})",
                self.path,
            )
        return LedgerError(errno.EIO, f"{what} ({message})", self.path)
