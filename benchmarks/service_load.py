"""How many requests per second does a service sharing one ledger answer?

The example service (``examples/service/``: FastAPI under uvicorn, several
worker processes) serves one :class:`~dpsklearn.PrivatePredictionClassifier`
(10 scaled logistic-regression teachers, 8 features) fitted with a
:class:`~dpsklearn.PrivacyLedger`; every worker continues the model's one
ledger record, so every request is one ledger transaction (lock the record,
answer, commit the counters, then respond). Measured for a SQLite ledger and
a PostgreSQL ledger at 1, 4 and 16 client processes, each sending requests
of 2 new rows one after the other (a new connection per request, as from
independent users), on the loopback interface of one machine.

The in-process ceiling beside them: ``predict`` calls per second on the same
model in one process, without HTTP (each call is still one committed ledger
transaction), measured in the same run. Since every worker serves the same
record, transactions queue on its lock: the ledger's commit (fsync), not the
number of workers, bounds the rate.

The PostgreSQL server is the one at ``--postgres-url`` (default: the
``DPSKLEARN_TEST_POSTGRES_URL`` environment variable, which ``.ci/run``
sets); the full mode needs one, the quick mode measures SQLite alone without
it.

Usage::

    python benchmarks/service_load.py [--quick] [--out docs/benchmarks]
        [--postgres-url postgresql://user@host:port/db] [--workers 3]
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples" / "service"))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)
from load import run_clients, start_service, stop_service  # noqa: E402
from train import train  # noqa: E402

CLIENTS = (1, 4, 16)
ROWS_PER_REQUEST = 2
N_FEATURES = 8


def _add_arguments(parser):
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("DPSKLEARN_TEST_POSTGRES_URL"),
        help="PostgreSQL server for the PostgreSQL ledger",
    )
    parser.add_argument("--workers", type=int, default=3)


def _in_process_rate(model, n_calls):
    """``predict`` calls per second on the ledger-bound model, no HTTP."""
    rows = np.random.default_rng(1).normal(size=(n_calls, ROWS_PER_REQUEST, N_FEATURES))
    start = time.perf_counter()
    for batch in rows:
        model.predict(batch)
    return n_calls / (time.perf_counter() - start)


def _drop_schema(url, schema):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                psycopg.sql.Identifier(schema)
            )
        )


def measure(backend, location, *, workers, clients, n_requests, n_in_process, scratch):
    """The service's rates at each number of clients, and the in-process ceiling."""
    X, y = make_classification(4000, N_FEATURES, random_state=0)
    total_rows = ROWS_PER_REQUEST * (n_requests * len(clients) + n_in_process)
    model_path = Path(scratch) / f"{backend}.joblib"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train(
            location,
            model_path,
            X=X,
            y=y,
            epsilon=4.0,
            delta=1e-6,
            max_queries=total_rows + 100,
            n_estimators=10,
        )
    ceiling = _in_process_rate(model, n_in_process)
    rows = []
    process, base_url = start_service(
        model_path, workers=workers, log_path=Path(scratch) / f"{backend}.log"
    )
    try:
        for n_clients in clients:
            totals = run_clients(
                base_url,
                n_requests=n_requests,
                n_clients=n_clients,
                rows_per_request=ROWS_PER_REQUEST,
                n_features=N_FEATURES,
                seed=n_clients,
            )
            if totals["served"] != n_requests:
                raise RuntimeError(f"{backend}, {n_clients} clients: {totals}")
            rows.append(
                {
                    "backend": backend,
                    "clients": n_clients,
                    "workers": workers,
                    "requests": n_requests,
                    "seconds": totals["seconds"],
                    "requests_per_second": totals["requests_per_second"],
                    "latency_ms_median": totals["latency_ms_median"],
                    "latency_ms_p95": totals["latency_ms_p95"],
                    "in_process_calls_per_second": ceiling,
                    "ratio_to_in_process": totals["requests_per_second"] / ceiling,
                }
            )
            print(
                f"{backend:>10}  {n_clients:>2} clients: "
                f"{totals['requests_per_second']:7.1f} req/s "
                f"(in-process {ceiling:.1f} calls/s)",
                flush=True,
            )
    finally:
        stop_service(process)
        model.accountant_.close()
    return rows


def write_tables(out_dir, result, quick):
    write_json(out_dir / "service_load.json", result)
    env = result["environment"]
    columns = [
        ("ledger", "backend", "", "l"),
        ("client processes", "clients", "d", "r"),
        ("requests/s", "requests_per_second", ".0f", "r"),
        ("median latency (ms)", "latency_ms_median", ".1f", "r"),
        ("p95 latency (ms)", "latency_ms_p95", ".1f", "r"),
        ("in-process predict calls/s", "in_process_calls_per_second", ".0f", "r"),
        ("service / in-process", "ratio_to_in_process", ".2f", "r"),
    ]
    lines = [
        "# The example service under load: requests per second, by ledger",
        "",
        f"{result['workers']} uvicorn worker processes serving one "
        "`PrivatePredictionClassifier` (10 teachers) bound to one ledger record; "
        f"{result['requests']} requests of {ROWS_PER_REQUEST} new rows per "
        "configuration, a new connection per request, loopback. "
        f"Machine: {env['cpus']} CPUs, {env['platform']}; 1-minute load average "
        f"{result['load_before']} before and {env['load_average_1min']} after "
        f"measuring; PostgreSQL {result.get('postgres_version') or '-'}; "
        f"{env['date']}." + (" Quick mode: few requests." if quick else ""),
        "",
        *markdown_table(result["rows"], columns),
        "",
        "Every request is one ledger transaction on the model's record (lock, "
        "answer, commit the counters, respond), and all workers share that "
        "record, so the commit (an fsync on SQLite, a write-ahead-log flush on "
        "PostgreSQL) bounds the rate whatever the number of workers. "
        "`in-process predict calls/s` is the same model called in one process "
        "without HTTP, measured in the same run: the rate of committed ledger "
        "transactions alone. Reproduce with "
        f"`{command('service_load.py', '--quick' if quick else '')}` (a "
        "PostgreSQL server at `--postgres-url` or `DPSKLEARN_TEST_POSTGRES_URL`).",
        "",
    ]
    write_markdown(out_dir / "service_load.md", lines)


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="100 requests per configuration, 1 and 4 clients, 2 workers "
        "(< 60 s); SQLite alone without a PostgreSQL server",
        add_arguments=_add_arguments,
    )
    if args.quick:
        n_requests, n_in_process, clients, workers = 100, 50, (1, 4), 2
    else:
        n_requests, n_in_process, clients, workers = 3000, 500, CLIENTS, args.workers
    if not args.postgres_url and not args.quick:
        raise SystemExit(
            "the full mode measures PostgreSQL too: give --postgres-url or set "
            "DPSKLEARN_TEST_POSTGRES_URL"
        )
    load_before = round(os.getloadavg()[0], 2)
    rows, postgres_version = [], None
    with tempfile.TemporaryDirectory() as scratch:
        rows += measure(
            "sqlite",
            str(Path(scratch) / "ledger.sqlite"),
            workers=workers,
            clients=clients,
            n_requests=n_requests,
            n_in_process=n_in_process,
            scratch=scratch,
        )
        if args.postgres_url:
            import psycopg

            with psycopg.connect(args.postgres_url) as conn:
                postgres_version = conn.execute("SHOW server_version").fetchone()[0]
            schema = f"bench_{secrets.token_hex(6)}"
            joiner = "&" if "?" in args.postgres_url else "?"
            try:
                rows += measure(
                    "postgresql",
                    f"{args.postgres_url}{joiner}schema={schema}",
                    workers=workers,
                    clients=clients,
                    n_requests=n_requests,
                    n_in_process=n_in_process,
                    scratch=scratch,
                )
            finally:
                _drop_schema(args.postgres_url, schema)
    result = {
        "workers": workers,
        "requests": n_requests,
        "rows_per_request": ROWS_PER_REQUEST,
        "load_before": load_before,
        "postgres_version": postgres_version,
        "rows": rows,
        "environment": environment(),
    }
    write_tables(args.out, result, args.quick)
    print(f"wrote {args.out / 'service_load.md'}")


if __name__ == "__main__":
    main()
