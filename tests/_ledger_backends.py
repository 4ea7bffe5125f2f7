"""The ledger backends every ledger test runs against: the ``ledger_url`` fixture.

``ledger_url`` is parametrised over the two storage backends of
:class:`~dpsklearn.PrivacyLedger`:

* ``sqlite`` -- always: files in pytest's ``tmp_path``;
* ``postgresql`` -- a fresh schema of the database named by
  ``DPSKLEARN_TEST_POSTGRES_URL`` (``.ci/run`` starts a server and sets it),
  dropped after the test.

Without ``DPSKLEARN_TEST_POSTGRES_URL`` the PostgreSQL cases are skipped,
with a reason that says how to run them, except under ``CI=true``, where
they fail: CI must run both backends. A URL that is set but names no
reachable server fails everywhere (it was asked for).

A test module imports the fixture (``from _ledger_backends import
ledger_url_fixture``); pytest finds fixtures in a module's namespace, under
their ``name``.
"""

from __future__ import annotations

import os
import re
import secrets

import pytest

POSTGRES_ENV = "DPSKLEARN_TEST_POSTGRES_URL"
BACKENDS = ("sqlite", "postgresql")


def _in_ci():
    return os.environ.get("CI", "").strip().lower() == "true"


def postgres_base_url():
    """The test server's URL, or skip (fail under ``CI=true``) with the reason."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        reason = (
            f"set {POSTGRES_ENV}=postgresql://user@host:port/dbname to run the "
            "ledger tests against PostgreSQL too (.ci/run starts a server)"
        )
        if _in_ci():
            pytest.fail(f"CI=true and {POSTGRES_ENV} is not set: {reason}")
        pytest.skip(reason)
    try:
        import psycopg
    except ImportError:
        pytest.fail(
            f"{POSTGRES_ENV} is set but psycopg is missing: "
            'pip install "dpsklearn[postgres]"'
        )
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.Error as exc:
        pytest.fail(f"{POSTGRES_ENV}={url} names no reachable server: {exc}")
    return url


class LedgerLocations:
    """Make ledger locations for one test, on one backend, and clean them up.

    ``ledger_url(name)`` returns a new location: a file path (SQLite) or a
    URL with a fresh schema (PostgreSQL). The helpers reach under the ledger
    to check what is stored (``sql``), to break it (``destroy``) and to see
    whether anything was created (``exists``).
    """

    def __init__(self, backend, tmp_path, base_url=None):
        self.backend = backend
        self._tmp_path = tmp_path
        self._base_url = base_url
        self._schemas = []

    def __call__(self, name="ledger"):
        if self.backend == "sqlite":
            return str(self._tmp_path / f"{name}.sqlite")
        schema = f"t{secrets.token_hex(6)}_{re.sub(r'[^a-z0-9_]', '_', name.lower())}"
        schema = schema[:63]
        self._schemas.append(schema)
        joiner = "&" if "?" in self._base_url else "?"
        return f"{self._base_url}{joiner}schema={schema}"

    def key(self, location):
        """What names this ledger in messages: its path, or ``schema=<name>``."""
        if self.backend == "sqlite":
            return location
        return f"schema={self._schema(location)}"

    @staticmethod
    def _schema(location):
        return re.search(r"[?&]schema=([A-Za-z0-9_]+)", location).group(1)

    def _pg(self, location):
        import psycopg

        conn = psycopg.connect(self._base_url, autocommit=True)
        conn.execute(
            psycopg.sql.SQL("SET search_path TO {}").format(
                psycopg.sql.Identifier(self._schema(location))
            )
        )
        return conn

    def sql(self, location, statement, parameters=()):
        """Run one statement on the ledger's tables (``?`` parameters); its rows."""
        if self.backend == "sqlite":
            import sqlite3

            conn = sqlite3.connect(location)
            try:
                cursor = conn.execute(statement, parameters)
                rows = cursor.fetchall()
                conn.commit()
            finally:
                conn.close()
            return rows
        with self._pg(location) as conn:
            cursor = conn.execute(statement.replace("?", "%s"), parameters)
            return cursor.fetchall() if cursor.description else []

    def exists(self, location):
        """Whether anything was created at ``location``."""
        if self.backend == "sqlite":
            return os.path.exists(location)
        rows = self.sql(
            location,
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = ?",
            (self._schema(location),),
        )
        return bool(rows)

    def destroy(self, location, how="delete"):
        """Delete the ledger (``how="delete"``) or overwrite it with garbage."""
        if self.backend == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                target = f"{location}{suffix}"
                if not os.path.exists(target):
                    continue
                if how == "delete":
                    os.unlink(target)
                else:
                    with open(target, "wb") as f:
                        f.write(b"\x00garbage" * 1000)
            return
        import psycopg

        with psycopg.connect(self._base_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    psycopg.sql.Identifier(self._schema(location))
                )
            )

    def cleanup(self):
        if self.backend == "sqlite" or not self._schemas:
            return
        import psycopg

        with psycopg.connect(self._base_url, autocommit=True) as conn:
            for schema in self._schemas:
                conn.execute(
                    psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                        psycopg.sql.Identifier(schema)
                    )
                )


@pytest.fixture(params=BACKENDS, name="ledger_url")
def ledger_url_fixture(request, tmp_path):
    """A factory of fresh ledger locations on one backend (see the module)."""
    base = postgres_base_url() if request.param == "postgresql" else None
    locations = LedgerLocations(request.param, tmp_path, base)
    yield locations
    locations.cleanup()
