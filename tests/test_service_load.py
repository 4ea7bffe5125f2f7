"""The example service under load, with a worker killed mid-load (both ledgers).

``examples/service/`` serves a :class:`~dpsklearn.PrivatePredictionClassifier`
fitted with a :class:`~dpsklearn.PrivacyLedger` from three uvicorn worker
processes on 127.0.0.1. Sixteen client processes send 4,000 requests of two
new rows each (every row a new release: nothing comes from the release
cache). The fit paid for ``max_queries = 4,801`` rows, so about 2,400
requests are answered and the rest refused; when about 1,200 requests have
completed, one worker is killed with SIGKILL, and uvicorn starts another.

The accounting check. Let ``R`` be the rows the ledger's record of the model
says were answered (its ``n_served``, read from the ledger after the load),
``D`` the rows the clients received (in ``200`` answers, plus the answers a
``429`` refusal carries: those paid for in that request before the budget
ran out), and ``F`` the requests that got no response at all (in flight on
the killed worker). A worker answers a request inside one ledger
transaction and writes the response only after it commits, so:

* ``R <= max_queries`` and the ledger's spent ``(epsilon, delta)`` is within
  its budget, with one spend (the fit): no copy, worker or restart got
  budget back, however many processes served;
* ``D <= R``: no answer reached a client without its counters recorded;
* ``R - D <= 2 F`` and ``F <= 16``: every recorded answer was delivered or
  carried by an error, except those of the requests in flight when their
  worker was killed (at most one per client, two rows each), which were
  committed (paid for) but never released;
* the request that crossed the cap got its one paid-for row inside its
  refusal (``4,801`` is odd, each request asks for two), so ``R`` reaches
  the cap exactly and ``D`` counts that row.

Loopback only; bounded by 4,000 requests per backend and the clients'
timeouts (60 s per request).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings

import pytest
from _ledger_backends import ledger_url_fixture  # noqa: F401 (ledger_url)
from sklearn.datasets import make_classification

from dpsklearn import PrivacyLedger

pytest.importorskip("fastapi", reason='the example service: pip install ".[serve]"')
pytest.importorskip("uvicorn", reason='the example service: pip install ".[serve]"')
pytest.importorskip("httpx", reason='the example service: pip install ".[serve]"')

SERVICE = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "service")
sys.path.insert(0, os.path.abspath(SERVICE))

from load import run_clients, start_service, stop_service, worker_pids  # noqa: E402
from train import train  # noqa: E402

N_REQUESTS = 4_000
N_CLIENTS = 16
N_WORKERS = 3
ROWS_PER_REQUEST = 2
MAX_QUERIES = 4_801
N_FEATURES = 8


def _killer(supervisor, killed):
    """Kill one worker once 30 % of the requests are done; wait for its successor."""

    def during(done):
        deadline = time.monotonic() + 600
        while done.value < 0.3 * N_REQUESTS:
            assert time.monotonic() < deadline, "the load stalled"
            time.sleep(0.05)
        before = worker_pids(supervisor.pid)
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        killed["pid"], killed["at"] = victim, done.value
        while True:
            now = worker_pids(supervisor.pid)
            if len(now) == N_WORKERS and victim not in now:
                (killed["successor"],) = now - before
                break
            assert time.monotonic() < deadline, "the killed worker was not restarted"
            time.sleep(0.1)

    return during


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_service_under_load_with_a_killed_worker(ledger_url, tmp_path):
    X, y = make_classification(4000, N_FEATURES, random_state=0)
    location = ledger_url("service")
    model_path = tmp_path / "model.joblib"
    epsilon, delta = 4.0, 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train(
            location,
            model_path,
            X=X,
            y=y,
            epsilon=epsilon,
            delta=delta,
            max_queries=MAX_QUERIES,
            n_estimators=10,
        )
    supervisor, base_url = start_service(
        model_path, workers=N_WORKERS, log_path=tmp_path / "service.log"
    )
    killed = {}
    try:
        totals = run_clients(
            base_url,
            n_requests=N_REQUESTS,
            n_clients=N_CLIENTS,
            rows_per_request=ROWS_PER_REQUEST,
            n_features=N_FEATURES,
            during=_killer(supervisor, killed),
        )
    finally:
        stop_service(supervisor)
    print(
        f"\n[{ledger_url.backend}] {totals['requests']} requests in "
        f"{totals['seconds']:.1f} s ({totals['requests_per_second']:.0f}/s): "
        f"served {totals['served']}, refused {totals['refused']}, failed "
        f"{totals['failed']}; worker {killed['pid']} killed after {killed['at']}"
    )

    ledger = PrivacyLedger(location)
    (record,) = ledger.model_records()
    recorded = record["n_served"]
    delivered = totals["rows_delivered"] + totals["rows_with_error"]
    failed = totals["failed"]

    # Every request ended one way or another, and none with a server error.
    assert totals["served"] + totals["refused"] + failed == N_REQUESTS
    assert not [key for key in totals if key.startswith("status_")], totals
    # The budget: one spend, within (epsilon, delta); the cap in rows.
    assert ledger.n_spends == 1
    assert ledger.spent[0] <= ledger.epsilon + 1e-12
    assert ledger.spent[1] <= ledger.delta + 1e-18
    assert recorded == MAX_QUERIES  # reached exactly, never passed
    assert totals["refused"] > 0 and totals["rows_with_error"] == 1
    # No answer delivered without being recorded; every recorded answer
    # delivered, carried by an error, or lost with the killed worker.
    assert delivered <= recorded
    assert recorded - delivered <= ROWS_PER_REQUEST * failed
    assert failed <= N_CLIENTS
    # The worker was really killed and its successor served.
    assert killed["successor"] != killed["pid"]
    assert totals["workers"].get(killed["successor"], 0) > 0
