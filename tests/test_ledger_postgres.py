"""What only the PostgreSQL ledger has: URLs, the driver, row locks, retries.

Every other ledger test runs on PostgreSQL too (``tests/test_ledger.py``
through the ``ledger_url`` fixture). The tests here that need a server use
the one named by ``DPSKLEARN_TEST_POSTGRES_URL`` (skipped without it, failed
under ``CI=true``; see ``tests/_ledger_backends.py``); the others need only
the driver, or not even that.
"""

from __future__ import annotations

import errno
import pickle
import socket
import sys
import threading
import urllib.parse

import pytest
from _ledger_backends import LedgerLocations, postgres_base_url

from dpsklearn import BudgetExhaustedError, LedgerError, PrivacyLedger
from dpsklearn.accounting import BoundedRangeEvent, PrivacyEvent


@pytest.fixture
def pg(tmp_path):
    """Fresh ledger URLs on the test server, dropped afterwards."""
    locations = LedgerLocations("postgresql", tmp_path, postgres_base_url())
    yield locations
    locations.cleanup()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- without a server ---------------------------------------------------------------
def test_a_postgres_url_without_the_driver_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg fails
    with pytest.raises(ImportError, match=r'pip install "dpsklearn\[postgres\]"'):
        PrivacyLedger("postgresql://user@127.0.0.1:5432/db", epsilon=1.0)
    # A file path never needs the driver.
    PrivacyLedger(tmp_path / "file.sqlite", epsilon=1.0).spend(0.5)


def test_a_bad_schema_name_is_refused_before_connecting():
    pytest.importorskip("psycopg", reason='pip install "dpsklearn[postgres]"')
    for schema in ("1abc", "a-b", "x" * 64, "a;drop"):
        with pytest.raises(ValueError, match="schema="):
            PrivacyLedger(f"postgresql://u@127.0.0.1:1/db?schema={schema}", 1.0)
    with pytest.raises(ValueError, match="one schema"):
        PrivacyLedger("postgresql://u@127.0.0.1:1/db?schema=a&schema=b", 1.0)


def test_an_unreachable_server_raises_clearly_without_the_password():
    pytest.importorskip("psycopg", reason='pip install "dpsklearn[postgres]"')
    url = f"postgresql://alice:hunter2@127.0.0.1:{_free_port()}/db?schema=budget"
    with pytest.raises(LedgerError) as err:
        PrivacyLedger(url, epsilon=1.0, timeout=2.0)
    assert err.value.errno == errno.ECONNREFUSED
    assert "hunter2" not in str(err.value)
    assert err.value.filename.startswith("postgresql://alice:***@127.0.0.1:")
    assert "schema=budget" in err.value.filename


# -- on the test server -------------------------------------------------------------
def test_the_password_is_never_shown(pg):
    import psycopg

    parts = urllib.parse.urlsplit(pg())
    user = parts.username or "postgres"
    hosts = parts.netloc.rpartition("@")[2]
    # The password the ledger is given replaces the test server's (if any),
    # so connect only when the server accepts it (CI's trusts local users).
    url = urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:s3cr3tpw@{hosts}"))
    try:
        psycopg.connect(url.split("?")[0], connect_timeout=5).close()
    except psycopg.Error:
        pytest.skip("the test server checks passwords: cannot give it another")
    ledger = PrivacyLedger(url, epsilon=1.0)
    ledger.spend(0.1, label="fit")
    texts = [repr(ledger), ledger.path, ledger.report(), str(ledger.summary())]
    for text in texts:
        assert "s3cr3tpw" not in text
    assert ":***@" in ledger.path
    # The pickle carries the URL as given (a pickled model is secret anyway).
    assert pickle.loads(pickle.dumps(ledger)) is ledger


def test_ledgers_in_one_database_are_independent(pg):
    a, b = PrivacyLedger(pg("a"), 1.0), PrivacyLedger(pg("b"), 2.0, 1e-6)
    a.spend(0.75)
    assert b.spent == (0.0, 0.0) and b.epsilon == 2.0
    with pytest.raises(BudgetExhaustedError):
        a.spend(0.5)
    b.spend(1.5)
    assert a.spent[0] == pytest.approx(0.75) and b.spent[0] == pytest.approx(1.5)


def test_concurrent_creation_makes_one_ledger(pg):
    url = pg("created")
    start = threading.Barrier(8)
    errors, ledgers = [], []

    def create():
        start.wait()
        try:
            ledgers.append(PrivacyLedger(url, 1.0, 1e-6))
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ledgers) == 8
    assert pg.sql(url, "SELECT COUNT(*) FROM meta WHERE key = 'epsilon'") == [(1,)]
    ledgers[0].spend(0.5)
    assert all(led.spent[0] == pytest.approx(0.5) for led in ledgers)


def _fail_event_inserts(pg, url, n_failures):
    """Make the server abort the next ``n_failures`` transactions that insert events.

    A trigger raises SQLSTATE 40001 (serialization_failure) on the *second*
    event row of a transaction, after the first row was inserted, so a
    retry that left anything behind would show. A sequence counts the
    failures (``nextval`` is not rolled back with the transaction).
    """
    pg.sql(url, "CREATE SEQUENCE failures")
    pg.sql(
        url,
        f"""
        CREATE FUNCTION abort_once() RETURNS trigger AS $$
        BEGIN
            IF (SELECT COUNT(*) FROM events WHERE spend_id = NEW.spend_id) >= 1
               AND nextval('failures') <= {int(n_failures)} THEN
                RAISE EXCEPTION 'injected' USING ERRCODE = 'serialization_failure';
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql
        """,
    )
    pg.sql(
        url,
        "CREATE TRIGGER abort_once BEFORE INSERT ON events "
        "FOR EACH ROW EXECUTE FUNCTION abort_once()",
    )


def test_a_serialization_failure_is_retried_with_nothing_half_written(pg):
    url = pg("retried")
    ledger = PrivacyLedger(url, 1.0, 1e-6)
    ledger.spend(0.1, label="before")
    _fail_event_inserts(pg, url, n_failures=3)
    two = [PrivacyEvent.laplace(0.2, label="two"), BoundedRangeEvent(0.05, label="two")]
    ledger.spend_events(two)  # 3 aborted attempts, the 4th commits
    # Four attempts reached the second row (drawing 1, 2, 3, 4); this draws 5.
    assert pg.sql(url, "SELECT nextval('failures')") == [(5,)]
    rows = pg.sql(url, "SELECT spend_id, label FROM events ORDER BY id")
    assert rows == [(1, "before"), (2, "two"), (2, "two")]
    assert ledger.n_spends == 2 and len(ledger.events) == 3
    assert PrivacyLedger(url).spent[0] == pytest.approx(0.35)


def test_a_transaction_aborted_too_often_raises_and_writes_nothing(pg):
    url = pg("aborted")
    ledger = PrivacyLedger(url, 1.0, 1e-6)
    _fail_event_inserts(pg, url, n_failures=100)
    two = [PrivacyEvent.laplace(0.2), BoundedRangeEvent(0.05)]
    with pytest.raises(LedgerError) as err:
        ledger.spend_events(two)
    assert err.value.errno == errno.EAGAIN and "nothing of it was written" in str(
        err.value
    )
    assert pg.sql(url, "SELECT COUNT(*) FROM events") == [(0,)]
    assert ledger.events == [] and ledger.spent == (0.0, 0.0)
    pg.sql(url, "DROP TRIGGER abort_once ON events")
    ledger.spend_events(two)
    assert len(PrivacyLedger(url).events) == 2


def test_a_budget_lock_held_past_the_timeout_raises_and_records_nothing(pg):
    import psycopg

    url = pg("locked")
    ledger = PrivacyLedger(url, 1.0, timeout=0.5)
    holder = psycopg.connect(pg._base_url, autocommit=True)
    try:
        holder.execute(
            psycopg.sql.SQL("SET search_path TO {}").format(
                psycopg.sql.Identifier(pg._schema(url))
            )
        )
        holder.execute("BEGIN")
        holder.execute("SELECT value FROM meta WHERE key = 'epsilon' FOR UPDATE")
        with pytest.raises(LedgerError) as err:
            ledger.spend(0.1)
        assert err.value.errno == errno.EBUSY and "timeout=0.5" in str(err.value)
        # Reads do not wait for the lock.
        assert ledger.spent == (0.0, 0.0)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    ledger.spend(0.1)
    assert len(ledger.events) == 1
