"""Start the example service and put it under load from client processes.

Used by the load test (``tests/test_service_load.py``) and the benchmark
(``benchmarks/service_load.py``); usable on its own::

    python load.py --model model.joblib --workers 3 --clients 16 --requests 2000

Each client process sends its share of ``POST /predict`` requests, one at a
time, each with ``rows_per_request`` new random rows (never a row asked
before, so every answer is a new release: the release cache never answers
for free), and counts what came back: answered (``200``), refused (``429``,
with the answers already paid for in that request), failed (no response:
the connection broke, e.g. its worker was killed), or other errors.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(model_path, *, workers, port=None, log_path=None, timeout=120.0):
    """Run ``uvicorn app:app --workers N`` on 127.0.0.1; wait until it answers.

    Returns
    -------
    process : subprocess.Popen
        The uvicorn supervisor (its children are the workers).
    base_url : str
    """
    import httpx

    port = port or free_port()
    env = {**os.environ, "DPSKLEARN_SERVICE_MODEL": os.path.abspath(model_path)}
    log = open(log_path or os.devnull, "ab")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app:app",
            "--app-dir",
            HERE,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--timeout-graceful-shutdown",
            "5",
        ],
        env=env,
        stdout=log,
        stderr=log,
    )
    log.close()
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode}")
        if len(worker_pids(process.pid)) == workers:
            try:
                if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                    return process, base_url
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    stop_service(process)
    raise RuntimeError(f"the service did not start within {timeout:g} s")


def stop_service(process, timeout=30.0):
    """Stop the supervisor (SIGINT: it stops its workers), then make sure."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in worker_pids(process.pid):
                os.kill(pid, signal.SIGKILL)
            process.kill()
            process.wait()


def worker_pids(supervisor_pid):
    """The worker processes of a uvicorn supervisor (Linux ``/proc``).

    Its children spawned by :mod:`multiprocessing`, not the resource tracker.
    """
    try:
        with open(f"/proc/{supervisor_pid}/task/{supervisor_pid}/children") as f:
            children = [int(pid) for pid in f.read().split()]
    except OSError:
        return set()
    workers = set()
    for pid in children:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    workers.add(pid)
        except OSError:
            pass  # ended meanwhile
    return workers


def _client(
    base_url, client_id, n_requests, rows_per_request, n_features, seed, done, start
):
    """One client process: send requests one at a time; count the outcomes.

    A new connection per request (no keep-alive), as from many independent
    users: the workers share the connections, and a restarted worker gets
    its share at once.
    """
    import httpx

    rng = np.random.default_rng([seed, client_id])
    counts = collections.Counter()
    workers = collections.Counter()
    latencies = []
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=base_url, timeout=60.0, limits=limits) as http:
        start.wait()  # every client ready (imported, connected) before timing
        for _ in range(n_requests):
            rows = rng.normal(size=(rows_per_request, n_features)).tolist()
            sent = time.perf_counter()
            try:
                response = http.post("/predict", json={"rows": rows})
            except httpx.TransportError:
                counts["failed"] += 1  # no response: nothing was delivered
            else:
                latencies.append(time.perf_counter() - sent)
                body = response.json()
                if response.status_code == 200:
                    counts["served"] += 1
                    counts["rows_delivered"] += len(body["labels"])
                elif response.status_code == 429:
                    counts["refused"] += 1
                    counts["rows_with_error"] += len(body["labels"])
                else:
                    counts[f"status_{response.status_code}"] += 1
                if "worker" in body:
                    workers[body["worker"]] += 1
            with done.get_lock():
                done.value += 1
    return dict(counts), dict(workers), latencies


def _client_main(args, queue):
    queue.put(_client(*args))


def run_clients(
    base_url,
    *,
    n_requests,
    n_clients,
    rows_per_request=1,
    n_features,
    seed=0,
    during=None,
):
    """Run ``n_clients`` client processes sending ``n_requests`` in all.

    Parameters
    ----------
    during : callable, optional
        ``during(done)`` runs in this process while the clients work;
        ``done.value`` is the number of requests completed so far.

    Returns
    -------
    totals : dict
        ``requests``, ``served``, ``refused``, ``failed``,
        ``rows_delivered``, ``rows_with_error``, any ``status_<code>``,
        ``workers`` (pid -> responses), ``seconds`` (wall time of the load,
        from the moment every client is ready), ``requests_per_second``,
        and ``latency_ms_median`` / ``latency_ms_p95`` of the requests that
        got a response.
    """
    context = multiprocessing.get_context("spawn")
    done = context.Value("l", 0)
    start = context.Barrier(n_clients + 1)
    queue = context.Queue()
    shares = [
        n_requests // n_clients + (i < n_requests % n_clients) for i in range(n_clients)
    ]
    clients = [
        context.Process(
            target=_client_main,
            args=(
                (base_url, i, share, rows_per_request, n_features, seed, done, start),
                queue,
            ),
        )
        for i, share in enumerate(shares)
    ]
    for client in clients:
        client.start()
    start.wait(timeout=300)
    began = time.perf_counter()
    if during is not None:
        during(done)
    results = [queue.get(timeout=1800) for _ in clients]
    seconds = time.perf_counter() - began
    for client in clients:
        client.join(timeout=60)
    totals = collections.Counter()
    workers = collections.Counter()
    latencies = []
    for counts, seen, times in results:
        totals.update(counts)
        workers.update(seen)
        latencies.extend(times)
    totals = {key: int(value) for key, value in totals.items()}
    for key in ("served", "refused", "failed", "rows_delivered", "rows_with_error"):
        totals.setdefault(key, 0)
    totals["requests"] = n_requests
    totals["workers"] = dict(workers)
    totals["seconds"] = seconds
    totals["requests_per_second"] = n_requests / seconds
    if latencies:
        totals["latency_ms_median"] = 1000 * float(np.median(latencies))
        totals["latency_ms_p95"] = 1000 * float(np.percentile(latencies, 95))
    return totals


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rows-per-request", type=int, default=1)
    args = parser.parse_args(argv)
    import joblib

    n_features = joblib.load(args.model).n_features_in_
    process, base_url = start_service(args.model, workers=args.workers)
    try:
        totals = run_clients(
            base_url,
            n_requests=args.requests,
            n_clients=args.clients,
            rows_per_request=args.rows_per_request,
            n_features=n_features,
        )
    finally:
        stop_service(process)
    print(totals)


if __name__ == "__main__":
    main()
