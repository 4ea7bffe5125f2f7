"""Tests for dpsklearn.PrivacyLedger: one durable budget across processes.

See docs/design.rst, "Serving state, copies and the ledger".

Every test that takes ``ledger_url`` runs on both storage backends (a
SQLite file in pytest's ``tmp_path``; a fresh schema of the PostgreSQL
server named by ``DPSKLEARN_TEST_POSTGRES_URL``; see
``tests/_ledger_backends.py``). The multi-process tests use the ``spawn``
start method and a child interpreter killed with SIGKILL, so they exercise
real process boundaries, not threads.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import json
import math
import multiprocessing
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from _helpers import STUMP, two_blobs
from _ledger_backends import ledger_url_fixture  # noqa: F401 (ledger_url)
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from dpsklearn import (
    BudgetExhaustedError,
    LedgerError,
    PrivacyLedger,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import (
    BoundedRangeEvent,
    PrivacyAccountant,
    PrivacyEvent,
    max_events,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

DELTA = 1e-6


def _blobs(n, seed):
    return two_blobs(n, seed, centre=3.0)


def _model(ledger, **params):
    """A served model whose unanimous queries pass and boundary queries fail.

    50 stumps: a query far from the boundary has dist = 24; at epsilon = 200,
    T = 60 the Laplace calibration gives w = 15 and noise scales below 1, so
    it passes (with probability 0.9998); a query at the origin splits the
    teachers (dist near 0) and fails.
    """
    names = SparseVector().get_params()
    # Abstentions asked for: the tests read the mechanism's own answers.
    options = {"max_unstable": 60, "fallback": "abstain", "unanswered": "abstain"}
    options.update({k: params.pop(k) for k in list(params) if k in names})
    defaults = dict(
        estimator=STUMP,
        n_estimators=50,
        epsilon=200.0,
        delta=1e-5,
        mechanism=SparseVector(**options),
        classes=[0, 1],
        accountant=ledger,
        random_state=0,
    )
    defaults.update(params)
    return SubsampleAggregateClassifier(**defaults)


def _queries(n_batches, batch=10, seed=1):
    """Batches of ``batch`` rows: the first two of each at the boundary."""
    X, _ = _blobs(n_batches * batch, seed)
    X = X.reshape(n_batches, batch, 2).copy()
    X[:, :2] = 0.0
    return X


X_TRAIN, Y_TRAIN = _blobs(300, 0)


def _timeless(event):
    return dataclasses.replace(event, time=0.0)


# -- opening, budget, errors ------------------------------------------------------
def test_create_open_and_budget_mismatch(ledger_url):
    path = ledger_url("budget")
    with pytest.raises(ValueError, match="give epsilon"):
        PrivacyLedger(path)
    assert not ledger_url.exists(path)
    ledger = PrivacyLedger(path, epsilon=1.0, delta=DELTA)
    assert ledger.backend == ledger_url.backend
    ledger.spend(0.25, label="a")
    other = PrivacyLedger(str(path))  # reads the stored budget
    assert (other.epsilon, other.delta, other.composition) == (1.0, DELTA, "basic")
    assert other.remaining == pytest.approx((0.75, DELTA))
    assert other.store_noisy_threshold
    for bad in (dict(epsilon=2.0), dict(delta=1e-5), dict(composition="zcdp")):
        with pytest.raises(ValueError, match="was created with"):
            PrivacyLedger(path, **bad)
    PrivacyLedger(path, epsilon=1.0, delta=DELTA, composition="basic")  # same: ok


@pytest.mark.parametrize("composition", ["advanced", "pld", "rdp"])
def test_only_filter_valid_compositions(ledger_url, composition):
    with pytest.raises(ValueError, match="filter"):
        PrivacyLedger(ledger_url("x"), 1.0, DELTA, composition)
    with pytest.raises(ValueError, match="composition"):
        PrivacyLedger(ledger_url("x"), 1.0, DELTA, "nonsense")
    with pytest.raises(ValueError, match="in-memory"):
        PrivacyLedger(":memory:", 1.0)


def test_directory_path_raises_clearly_and_answers_nothing(tmp_path):
    with pytest.raises(LedgerError) as err:
        PrivacyLedger(tmp_path, epsilon=1.0)
    assert isinstance(err.value, OSError) and isinstance(err.value, ValueError)
    assert err.value.errno == errno.EISDIR
    assert str(tmp_path) in str(err.value) and "directory" in str(err.value)
    with pytest.raises(LedgerError, match="cannot open"):
        PrivacyLedger(tmp_path / "missing-dir" / "x.sqlite", epsilon=1.0)
    # An estimator given such a path never gets as far as a ledger object.
    assert list(tmp_path.iterdir()) == []


def test_corrupt_file_raises_clearly(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database " * 200)
    with pytest.raises(LedgerError) as err:
        PrivacyLedger(garbage, epsilon=1.0)
    assert str(garbage) in str(err.value) and "corrupt" in str(err.value)
    assert garbage.read_bytes() == b"this is not a database " * 200  # untouched

    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="not a dpsklearn ledger"):
        PrivacyLedger(foreign, epsilon=1.0)

    # A real ledger whose pages are overwritten.
    path = tmp_path / "ledger.sqlite"
    ledger = PrivacyLedger(path, epsilon=1.0)
    for i in range(50):
        ledger.spend(0.01, label=f"fit {i}")
    ledger.close()
    del ledger
    data = bytearray(path.read_bytes())
    data[100:] = os.urandom(len(data) - 100)
    path.write_bytes(bytes(data))
    with pytest.raises(LedgerError) as err:
        PrivacyLedger(path)
    assert str(path) in str(err.value)


_V1_FILE = os.path.join(os.path.dirname(__file__), "data", "ledger_schema_v1.sqlite")


def test_a_ledger_file_of_the_first_format_still_opens(tmp_path):
    """A file written by the SQLite-only ledger opens, reads and serves as before.

    ``tests/data/ledger_schema_v1.sqlite`` was written by the ledger before
    the storage was split into backends: budget (500, 1e-4); spends of 0.5
    (pure), 3 x 0.05 (bounded range) + (0.2, 1e-7), and a model's (200,
    1e-5) reservation; one model record that answered 10 rows with 2
    abstentions. A ledger created now has the same schema, statement for
    statement.
    """
    path = tmp_path / "v1.sqlite"
    path.write_bytes(open(_V1_FILE, "rb").read())
    ledger = PrivacyLedger(path)
    assert (ledger.epsilon, ledger.delta, ledger.composition) == (500.0, 1e-4, "basic")
    assert ledger.n_spends == 3 and len(ledger.events) == 4
    assert ledger.spent == pytest.approx((200.85, 1.01e-5))
    assert [e.kind for e in ledger.events] == [
        "pure",
        "bounded_range",
        "approximate",
        "approximate",
    ]
    (record,) = ledger.model_records()
    assert (record["n_served"], record["abstention_count"]) == (10, 2)
    ledger.spend(1.0, label="after the upgrade")
    with ledger.model_transaction(record["model_id"]) as stored:
        assert stored.state["n_served"] == 10 and stored.version >= 2
    assert PrivacyLedger(path).spent == pytest.approx((201.85, 1.01e-5))

    fresh = tmp_path / "fresh.sqlite"
    PrivacyLedger(fresh, 1.0).close()

    def schema(p):
        conn = sqlite3.connect(p)
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        ).fetchall()
        conn.close()
        return rows

    assert schema(fresh) == schema(_V1_FILE)


def test_corrupt_budget_record_and_foreign_tables_raise_clearly(ledger_url):
    path = ledger_url("meta")
    PrivacyLedger(path, epsilon=1.0).close()
    ledger_url.sql(path, "UPDATE meta SET value = '\"lots\"' WHERE key = 'epsilon'")
    with pytest.raises(LedgerError, match="budget record") as err:
        PrivacyLedger(path)
    assert ledger_url.key(path) in err.value.filename  # names the ledger
    # Tables that are not a ledger's: refused, and left alone.
    foreign = ledger_url("foreign")
    PrivacyLedger(foreign, epsilon=1.0).close()
    for table in ("events", "models", "meta"):
        ledger_url.sql(foreign, f"DROP TABLE {table}")
    ledger_url.sql(foreign, "CREATE TABLE customers (name TEXT)")
    with pytest.raises(LedgerError, match="not a dpsklearn ledger"):
        PrivacyLedger(foreign, epsilon=1.0)
    assert ledger_url.sql(foreign, "SELECT COUNT(*) FROM customers") == [(0,)]


def test_a_model_on_a_ledger_that_breaks_answers_nothing(ledger_url):
    path = ledger_url("ledger")
    ledger = PrivacyLedger(path, epsilon=500.0, delta=1e-4)
    model = _model(ledger).fit(X_TRAIN, Y_TRAIN)
    X = _queries(2)
    model.predict(X[0])
    ledger.close()
    ledger_url.destroy(path, how="garbage")  # PostgreSQL: the schema dropped
    with pytest.raises(LedgerError) as err:
        model.predict(X[1])
    assert ledger.path in str(err.value)
    with pytest.raises(LedgerError):
        ledger.spend(0.1)


def test_a_corrupt_model_record_answers_nothing(ledger_url):
    path = ledger_url("ledger")
    ledger = PrivacyLedger(path, epsilon=500.0, delta=1e-4)
    model = _model(ledger).fit(X_TRAIN, Y_TRAIN)
    model_id = model._serving_state_.ledger_binding[1]
    update = "UPDATE models SET state = ? WHERE model_id = ?"
    ledger_url.sql(path, update, ("{}", model_id))
    with pytest.raises(ValueError, match="corrupt") as err:
        model.predict(_queries(1)[0])
    assert model_id in str(err.value)
    ledger_url.sql(path, update, ("x{", model_id))
    with pytest.raises(LedgerError, match="corrupt model record"):
        model.predict(_queries(1)[0])
    ledger_url.sql(path, "DELETE FROM models")
    with pytest.raises(LedgerError, match="no record of this model"):
        model.predict(_queries(1)[0])


# -- the accountant interface -------------------------------------------------------
def test_interface_matches_the_accountant(ledger_url):
    ledger = PrivacyLedger(ledger_url("l"), 2.0, DELTA)
    acc = PrivacyAccountant(2.0, DELTA)
    for target in (ledger, acc):
        target.spend(0.5, label="a")
        target.spend_events(
            [
                PrivacyEvent.exponential(0.1, count=3),
                PrivacyEvent.approximate(0.2, 1e-7),
            ]
        )
        with pytest.raises(BudgetExhaustedError) as err:
            target.spend_events([PrivacyEvent.laplace(0.1), PrivacyEvent.laplace(1.0)])
        assert len(err.value.spends) == 3  # nothing of the refused spend
        assert target.can_spend(1.0) and not target.can_spend(1.01)
        assert target.can_spend_events([PrivacyEvent.laplace(0.5)])
    assert [_timeless(e) for e in ledger.events] == [_timeless(e) for e in acc.events]
    assert ledger.spent == pytest.approx(acc.spent)
    assert ledger.remaining == pytest.approx(acc.remaining)
    assert ledger.spent_basic == pytest.approx(acc.spent_basic)
    assert ledger.n_spends == 2
    for method in ("spend", "spend_events", "can_spend", "can_spend_events", "report"):
        assert callable(getattr(ledger, method))
    text = ledger.report()
    assert "bounded_range" in text and "approximate" in text and "2 spends" in text
    assert "spent under basic: epsilon=1," in text


def test_zcdp_is_used_for_pure_events_and_refuses_approximate_ones(ledger_url):
    ledger = PrivacyLedger(ledger_url("z"), 1.0, DELTA, "zcdp")
    accepted = 0
    while True:
        try:
            ledger.spend_events([BoundedRangeEvent(0.05)])
        except BudgetExhaustedError:
            break
        accepted += 1
    # The same figure as the in-memory accountant's zCDP composition.
    assert accepted == max_events(PrivacyEvent.exponential(0.05), 1.0, DELTA, "zcdp")
    assert accepted == 77  # zCDP converted at the best Renyi order (CKS 2020)
    assert ledger.spent[0] <= 1.0 and ledger.spent_basic[0] == pytest.approx(3.85)

    mixed = PrivacyLedger(ledger_url("m"), 3.0, DELTA, "zcdp")
    mixed.spend_events([BoundedRangeEvent(0.05, count=50)])  # basic 2.5, zCDP ~0.7
    assert mixed.spent[0] < 1.0
    # An approximate event has no rho: refused with a ValueError that names
    # the basic budget, nothing recorded (docs/accountant.rst, "Which events
    # a shared budget accepts").
    for spend in (mixed.spend_events, mixed.can_spend_events):
        with pytest.raises(ValueError, match="composition='basic'"):
            spend([PrivacyEvent.approximate(0.4, 1e-7)])
    assert len(mixed.events) == 1
    assert mixed.composition_in_use == "zcdp"


def test_clone_deepcopy_and_pickle_share_the_ledger(ledger_url):
    path = ledger_url("l")
    ledger = PrivacyLedger(path, 1.0)
    model = _model(ledger, epsilon=0.5)
    assert clone(model).accountant is ledger
    assert copy.deepcopy(ledger) is ledger and copy.copy(ledger) is ledger
    assert pickle.loads(pickle.dumps(ledger)) is ledger  # same process: same object
    payload = pickle.dumps(model)
    assert len(payload) < 2000  # by path: no events, no connection inside


def test_unpickling_a_ledger_whose_file_is_gone_refuses(ledger_url):
    path = ledger_url("l")
    payload = pickle.dumps(PrivacyLedger(path, 1.0))
    import gc

    gc.collect()  # no live object left in this process
    ledger_url.destroy(path)
    with pytest.raises(LedgerError, match="refusing to start a fresh budget"):
        pickle.loads(payload)


# -- GridSearchCV -----------------------------------------------------------------
EPSILONS = [0.5, 1.0, 1.5, 2.0]  # 4 folds each: 2 + 4 + 6 + 8 = 20 in all


def _grid(ledger, n_jobs=None, refit=False):
    model = SubsampleAggregateClassifier(
        estimator=STUMP,
        n_estimators=8,
        mechanism=SparseVector(max_unstable=100, fallback="abstain"),
        classes=[0, 1],
        accountant=ledger,
        random_state=0,
    )
    return GridSearchCV(
        model,
        {"epsilon": EPSILONS},
        cv=4,
        refit=refit,
        error_score="raise",
        n_jobs=n_jobs,
    )


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_records_every_fit(ledger_url, n_jobs):
    X, y = X_TRAIN[:160], Y_TRAIN[:160]
    ledger = PrivacyLedger(ledger_url("grid"), 20.0, 1e-3)
    _grid(ledger, n_jobs).fit(X, y)
    assert ledger.n_spends == 16 and len(ledger.events) == 16
    assert ledger.spent == pytest.approx((20.0, 16e-5))
    labels = {e.label for e in ledger.events}
    assert labels == {"SubsampleAggregateClassifier"}
    assert len(ledger.model_records()) == 16  # each fit served its scoring
    assert sorted(e.epsilon for e in ledger.events) == sorted(EPSILONS * 4)

    # refit=True: the 16 fits and the refit on the whole data, 17 in all.
    ledger = PrivacyLedger(ledger_url("refit"), 25.0, 1e-3)
    search = _grid(ledger, n_jobs, refit=True).fit(X, y)
    assert ledger.n_spends == 17 and len(ledger.model_records()) == 17
    assert search.best_estimator_.accountant_ is ledger
    search.predict(X[:5])  # the refitted model serves through its own record
    records = {r["model_id"]: r for r in ledger.model_records()}
    model_id = search.best_estimator_._serving_state_.ledger_binding[1]
    assert records[model_id]["n_served"] == 5

    # The fit that would exceed the budget raises; the ones before are kept.
    # (Last: joblib stops its workers after an error.)
    short = PrivacyLedger(ledger_url("short"), 17.0, 1e-3)
    with pytest.raises(BudgetExhaustedError):
        _grid(short, n_jobs).fit(X, y)
    spent = short.spent[0]
    assert short.n_spends < 16
    # Refused only when the fit would not fit: less than 2.0 was left then.
    assert 15.0 < spent <= 17.0 + 1e-9
    if n_jobs == 1:  # candidates in order, folds inside: 2 + 4 + 6, then 2 x 2.0
        assert short.n_spends == 14 and spent == pytest.approx(16.0)


# -- concurrency ------------------------------------------------------------------
@pytest.mark.parametrize("composition", ["basic", "zcdp"])
def test_sixteen_threads_never_exceed_the_budget(ledger_url, composition):
    expected = {"basic": 20, "zcdp": 77}[composition]
    for round_ in range(3):
        path = ledger_url(f"threads{round_}")
        ledger = PrivacyLedger(path, 1.0, DELTA, composition)
        start = threading.Barrier(16)
        accepted = []

        def worker(i, ledger=ledger, start=start, accepted=accepted, path=path):
            # Half the threads share the object, half open their own.
            mine = ledger if i % 2 else PrivacyLedger(path)
            start.wait()
            for _ in range(expected // 8 + 2):
                try:
                    mine.spend_events([BoundedRangeEvent(0.05)])
                    accepted.append(1)
                except BudgetExhaustedError:
                    pass

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert ledger.spent[0] <= 1.0 + 1e-12
        assert len(accepted) == len(ledger.events) == expected


def _process_worker(paths, barrier, results):
    """Spawned: spend on each round's ledger at the same time as 3 others."""
    accepted = []
    for path in paths:
        ledger = PrivacyLedger(path)
        barrier.wait()
        n = 0
        for _ in range(10):
            try:
                ledger.spend_events([BoundedRangeEvent(0.05, label=str(os.getpid()))])
                n += 1
            except BudgetExhaustedError:
                pass
        accepted.append(n)
    results.put(accepted)


def test_four_processes_never_exceed_the_budget(ledger_url):
    paths = [ledger_url(f"proc{r}") for r in range(20)]
    for path in paths:
        PrivacyLedger(path, 1.0)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    results = context.Queue()
    workers = [
        context.Process(target=_process_worker, args=(paths, barrier, results))
        for _ in range(4)
    ]
    for w in workers:
        w.start()
    accepted = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    for r, path in enumerate(paths):
        ledger = PrivacyLedger(path)
        assert ledger.spent[0] <= 1.0 + 1e-12
        assert len(ledger.events) == 20 == sum(a[r] for a in accepted)
    # The processes really interleaved on at least one ledger.
    assert any(len({e.label for e in PrivacyLedger(p).events}) > 1 for p in paths)


# -- durable serving state --------------------------------------------------------
def _stored(ledger_url, path, model_id):
    ((state, secret),) = ledger_url.sql(
        path, "SELECT state, secret FROM models WHERE model_id = ?", (model_id,)
    )
    return json.loads(state), (None if secret is None else json.loads(secret))


def test_copies_continue_the_stored_state_and_never_get_budget_back(ledger_url):
    path = ledger_url("serve")
    ledger = PrivacyLedger(path, 500.0, 1e-4)
    model = _model(ledger).fit(X_TRAIN, Y_TRAIN)
    model_id = model._serving_state_.ledger_binding[1]
    assert len(model_id) == 32
    X = _queries(6)
    stale = pickle.dumps(model)  # before any answer
    twin = copy.deepcopy(model)
    _, abstained = model.predict(X[0], return_abstained=True)
    assert abstained[:2].all()
    status = model.budget_status()
    assert status.n_served == 10 and status.n_failed_tests >= 2
    # A deepcopy and a reloaded (stale) pickle start from the stored state.
    assert twin.budget_status() == status
    reloaded = pickle.loads(stale)
    assert reloaded.budget_status() == status
    twin.predict(X[1])
    reloaded.predict(X[2])
    model.predict(X[3])
    final = model.budget_status()
    assert final.n_served == 40
    assert final.n_failed_tests >= 8
    state, secret = _stored(ledger_url, path, model_id)
    assert state["n_served"] == 40
    assert state["engine"]["abstention_count"] == final.n_failed_tests
    assert state["engine"]["n_queries"] == 40
    # The noisy threshold is stored apart and is the one the engine holds.
    assert (
        secret["noisy_threshold"] == model._serving_state_.engine.test._noisy_threshold
    )
    assert "noisy_threshold" not in state["engine"]
    # One fit: one spend, whatever the copies did.
    assert ledger.n_spends == 1


def test_reports_and_errors_never_show_the_secret(ledger_url):
    path = ledger_url("serve")
    ledger = PrivacyLedger(path, 500.0, 1e-4)
    model = _model(ledger, verbose=1).fit(X_TRAIN, Y_TRAIN)
    model.predict(_queries(1)[0])
    engine = model._serving_state_.engine.test
    secret = repr(engine._noisy_threshold)
    model_id = model._serving_state_.ledger_binding[1]
    texts = [
        ledger.report(),
        repr(ledger),
        str(ledger.summary()),
        str(ledger.model_records()),
        repr(model._serving_state_),
        repr(engine),
        str(model.budget_status()),
    ]
    with ledger.model_transaction(model_id) as record:
        texts.append(repr(record))
    for text in texts:
        assert secret not in text and "noisy" not in text
    assert model_id in ledger.report()


def test_without_stored_threshold_a_copy_redraws_and_pays_an_abstention(ledger_url):
    path = ledger_url("public")
    ledger = PrivacyLedger(path, 500.0, 1e-4, store_noisy_threshold=False)
    with pytest.raises(ValueError, match="store_noisy_threshold"):
        PrivacyLedger(path, store_noisy_threshold=True)
    model = _model(ledger).fit(X_TRAIN, Y_TRAIN)
    model_id = model._serving_state_.ledger_binding[1]
    far = _queries(3)[:, 2:]  # no boundary rows
    model.predict(far[0])
    base = model.budget_status().n_failed_tests
    model.predict(far[1])  # the same object keeps its threshold in memory
    assert _stored(ledger_url, path, model_id)[1] is None
    again = model.budget_status().n_failed_tests
    # A copy that did not write the stored version must redraw: +1 abstention.
    copy_ = pickle.loads(pickle.dumps(model))
    model.predict(far[2])  # the original moves the record on
    after = model.budget_status().n_failed_tests
    status = copy_.budget_status()
    assert status.n_failed_tests == after + 1
    assert status.n_served == 3 * 8
    assert again >= base


def test_halted_model_stays_halted_in_every_copy(ledger_url):
    ledger = PrivacyLedger(ledger_url("h"), 500.0, 1e-4)
    # epsilon = 0.1, T = 3: w is far above dist = 24 (a pass has probability
    # about 4e-6 per test): every test fails (failure of this test < 2e-5).
    model = _model(ledger, max_unstable=3, epsilon=0.1).fit(X_TRAIN, Y_TRAIN)
    stale = pickle.dumps(model)
    X = _queries(2)
    _, abstained = model.predict(X.reshape(-1, 2), return_abstained=True)
    assert abstained.all()
    assert model.budget_status().halted
    assert model.budget_status().n_served == 3  # the third failure halted it
    copy_ = pickle.loads(stale)
    labels, abstained = copy_.predict(X[0], return_abstained=True)
    assert abstained.all() and (labels == -1).all()
    assert copy_.budget_status().halted
    assert copy_.budget_status().n_failed_tests == 3
    assert copy_.budget_status().n_served == 3


_CHILD = textwrap.dedent(
    """
    import json, pickle, sys, time, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_ledger import X_TRAIN, Y_TRAIN, _model, _queries
    from dpsklearn import PrivacyLedger

    ledger = PrivacyLedger({path!r})
    model = _model(ledger).fit(X_TRAIN, Y_TRAIN)
    with open({pickle_path!r}, "wb") as f:
        pickle.dump(model, f)
    print("READY", flush=True)
    for i, batch in enumerate(_queries(25)):
        labels, abstained = model.predict(batch, return_abstained=True)
        print(json.dumps({{"batch": i, "n": len(labels),
                          "abstained": int(abstained.sum())}}), flush=True)
        time.sleep(0.02)
    time.sleep(120)  # wait for the kill
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_stream_loses_no_spend(ledger_url, tmp_path):
    path = ledger_url("killed")
    pickle_path = tmp_path / "model.pkl"
    PrivacyLedger(path, 500.0, 1e-4)
    script = tmp_path / "child.py"
    script.write_text(
        _CHILD.format(
            tests=os.path.dirname(__file__),
            path=str(path),
            pickle_path=str(pickle_path),
        )
    )
    child = subprocess.Popen(
        [sys.executable, "-u", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while sum(line.startswith("{") for line in lines) < 6:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"child ended early: {child.stderr.read()}")
            lines.append(line)
            assert time.monotonic() < deadline
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    batches = [json.loads(x) for x in lines + rest.splitlines() if x.startswith("{")]
    assert 6 <= len(batches) < 25  # killed mid-stream
    returned = sum(b["n"] for b in batches)
    abstained = sum(b["abstained"] for b in batches)

    # After the restart the ledger covers every answer that was returned
    # (at most the batch in flight at the kill was committed but not printed).
    ledger = PrivacyLedger(path)
    assert ledger.n_spends == 1
    (record,) = ledger.model_records()
    assert returned <= record["n_served"] <= returned + 10
    assert abstained <= record["abstention_count"] <= abstained + 10
    assert record["n_queries"] == record["n_served"]

    # The model pickled before serving continues the stored state, including
    # the stored noisy threshold, not its own stale copy.
    with open(pickle_path, "rb") as f:
        model = pickle.load(f)
    stale_engine = model._serving_state_.engine.get_state()
    assert stale_engine["n_queries"] == 0
    status = model.budget_status()
    assert status.n_served == record["n_served"]
    assert status.n_failed_tests == record["abstention_count"]
    state, secret = _stored(ledger_url, path, record["model_id"])
    engine = model._serving_state_.engine.test
    assert engine._noisy_threshold == secret["noisy_threshold"]
    assert engine.n_threshold_draws == state["engine"]["n_threshold_draws"]
    _, new_abstained = model.predict(_queries(1, seed=7)[0], return_abstained=True)
    after = model.budget_status()
    assert after.n_served == record["n_served"] + 10
    assert after.n_failed_tests >= record["abstention_count"] + new_abstained.sum()
    assert ledger.model_records()[0]["n_served"] == record["n_served"] + 10
    assert not math.isnan(engine._noisy_threshold)
    assert np.isfinite(ledger.spent[0]) and ledger.n_spends == 1
