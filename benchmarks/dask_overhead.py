"""What does training the teachers on a Dask cluster cost per task?

The teachers of a ``SubsampleAggregateClassifier`` are fitted through joblib,
so ``with joblib.parallel_config(backend="dask"): model.fit(X, y)`` trains
them on a Dask cluster. This script measures, with the same number of worker
processes (2) on this machine, what the Dask backend adds over joblib's
default ``loky`` backend:

* the round trip of one empty task (``batch_size=1``, so joblib cannot group
  them), loky vs Dask: the fixed cost of dispatching one task;
* a whole ``fit`` on the bundled Adult data (one-hot encoded, 108 columns)
  with LogisticRegression teachers: ``fit_teachers`` sends one task per
  worker, each carrying only its shards' rows (the bytes per task are
  reported), so the per-task overhead is the difference of the two fits
  divided by the number of tasks.

Both backends are started and warmed up first (loky's worker pool and the
Dask workers' imports are not counted), then measured in alternation, so
that a change in the machine's load hits both alike; each figure is the
median of several repeats, with the range of the per-repeat differences.
The cluster is a ``distributed.LocalCluster`` on the loopback interface: a
real multi-machine cluster adds network transfer of each task's rows (bytes
per task in the table) at the link's bandwidth.

Usage::

    python benchmarks/dask_overhead.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.parallel import Parallel, delayed

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    write_json,
    write_markdown,
)

from dpsklearn import SparseVector, SubsampleAggregateClassifier  # noqa: E402
from dpsklearn.datasets import load_adult  # noqa: E402
from dpsklearn.demo import adult_encoder  # noqa: E402

N_WORKERS = 2


def _noop(i):
    return i


def empty_tasks_seconds(n_tasks):
    """Wall time of ``n_tasks`` empty tasks, one task per dispatch."""
    start = time.perf_counter()
    Parallel(n_jobs=N_WORKERS, batch_size=1)(delayed(_noop)(i) for i in range(n_tasks))
    return time.perf_counter() - start


def load_data(n_rows):
    train = load_adult(subset="train")
    encoder = adult_encoder(train).fit(train.data)
    X = encoder.transform(train.data)[:n_rows]
    return X, train.target[:n_rows], np.asarray(train.target_names)


def make_model(classes, n_estimators):
    return SubsampleAggregateClassifier(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)),
        n_estimators=n_estimators,
        epsilon=1.0,
        delta=1e-6,
        mechanism=SparseVector(fallback="abstain"),
        classes=classes,
        random_state=0,
        n_jobs=N_WORKERS,
    )


def fit_seconds(X, y, classes, n_estimators):
    model = make_model(classes, n_estimators)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - start


def start_cluster():
    import distributed

    logging.getLogger("distributed").setLevel(logging.ERROR)
    cluster = distributed.LocalCluster(
        n_workers=N_WORKERS,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        host="127.0.0.1",
    )
    client = distributed.Client(cluster)
    client.wait_for_workers(N_WORKERS, timeout=120)
    return cluster, client


def _summary(loky, dask, n_tasks):
    """Medians, and the per-repeat Dask-minus-loky difference per task."""
    loky, dask = np.asarray(loky), np.asarray(dask)
    per_task = (dask - loky) / n_tasks
    return {
        "loky_seconds": float(np.median(loky)),
        "dask_seconds": float(np.median(dask)),
        "ratio": float(np.median(dask) / np.median(loky)),
        "overhead_per_task_seconds": float(np.median(per_task)),
        "overhead_per_task_range": [float(per_task.min()), float(per_task.max())],
    }


def measure(n_rows, k_values, n_empty, repeats):
    """Both backends live at once, warmed up, measured in alternation.

    Each repeat runs loky then Dask (or Dask then loky, alternately) on the
    same work, so a change in the machine's load during the run affects both
    backends alike; the per-repeat differences show the spread.
    """
    X, y, classes = load_data(n_rows)
    start = time.perf_counter()
    cluster, client = start_cluster()
    cluster_start = time.perf_counter() - start
    times = {(b, w): [] for b in ("loky", "dask") for w in ["empty", *k_values]}
    load = []
    try:
        for backend in ("loky", "dask"):  # warm-up: pool start, worker imports
            with joblib.parallel_config(backend=backend):
                empty_tasks_seconds(n_empty)
                fit_seconds(X, y, classes, k_values[0])
        for repeat in range(repeats):
            order = ("loky", "dask") if repeat % 2 == 0 else ("dask", "loky")
            load.append(os.getloadavg()[0])
            for backend in order:
                with joblib.parallel_config(backend=backend):
                    times[backend, "empty"].append(empty_tasks_seconds(n_empty))
                    for k in k_values:
                        times[backend, k].append(fit_seconds(X, y, classes, k))
    finally:
        client.close()
        cluster.close()
    import distributed

    n_tasks = N_WORKERS  # fit_teachers: one batch of teachers per worker
    shard_rows = int(np.ceil(n_rows / n_tasks))
    fits = []
    for k in k_values:
        fits.append(
            {
                "n_rows": n_rows,
                "n_features": int(X.shape[1]),
                "n_estimators": k,
                "n_tasks": n_tasks,
                "bytes_per_task": shard_rows * (X.shape[1] * X.itemsize + 8),
                **_summary(times["loky", k], times["dask", k], n_tasks),
            }
        )
    return {
        "workers": N_WORKERS,
        "repeats": repeats,
        "environment": environment(
            joblib=joblib.__version__, distributed=distributed.__version__
        ),
        "load_average_1min_while_measuring": [round(min(load), 2), round(max(load), 2)],
        "cluster_start_seconds": cluster_start,
        "empty_tasks": {
            "n_tasks": n_empty,
            **_summary(
                np.asarray(times["loky", "empty"]) / n_empty,
                np.asarray(times["dask", "empty"]) / n_empty,
                1,
            ),
        },
        "fits": fits,
    }


def _ms_range(values):
    low, high = values
    return f"{1e3 * low:.1f} to {1e3 * high:.1f}"


def write(result, out_dir):
    out_dir = Path(out_dir)
    write_json(out_dir / "dask_overhead.json", result)
    empty = result["empty_tasks"]
    machine = result["environment"]
    low, high = result["load_average_1min_while_measuring"]
    lines = [
        "# Dask vs loky: overhead per task",
        "",
        f"{result['workers']} worker processes on one machine ({machine['cpus']} "
        f"CPUs; 1-minute load average {low} to {high} while measuring), joblib "
        f"{machine['joblib']}, distributed {machine['distributed']}. Both "
        "backends warmed up, then measured in alternation; medians of "
        f"{result['repeats']} repeats, with the range of the per-repeat "
        "difference (a range that spans zero means the difference is within the "
        "machine's noise). Starting the local cluster took "
        f"{result['cluster_start_seconds']:.1f} s (not counted below).",
        "",
        "## One empty task (dispatch round trip, `batch_size=1`)",
        "",
        "| tasks | loky (ms per task) | Dask (ms per task) "
        "| Dask overhead (ms per task) | range (ms) |",
        "|---|---|---|---|---|",
        f"| {empty['n_tasks']} | {1e3 * empty['loky_seconds']:.2f} | "
        f"{1e3 * empty['dask_seconds']:.2f} | "
        f"{1e3 * empty['overhead_per_task_seconds']:.2f} | "
        f"{_ms_range(empty['overhead_per_task_range'])} |",
        "",
        "## SubsampleAggregateClassifier.fit on Adult (LogisticRegression teachers)",
        "",
        "| rows | features | k | tasks | MB per task | loky fit (s) | Dask fit (s) "
        "| ratio | Dask overhead per task (s) | range (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["fits"]:
        low, high = row["overhead_per_task_range"]
        lines.append(
            f"| {row['n_rows']} | {row['n_features']} | {row['n_estimators']} | "
            f"{row['n_tasks']} | {row['bytes_per_task'] / 1e6:.1f} | "
            f"{row['loky_seconds']:.2f} | {row['dask_seconds']:.2f} | "
            f"{row['ratio']:.2f} | {row['overhead_per_task_seconds']:.3f} | "
            f"{low:.3f} to {high:.3f} |"
        )
    lines += [
        "",
        "Each task carries only its shards' rows (`MB per task`), never the whole "
        "`X`; on a multi-machine cluster add their transfer time at the network's "
        "bandwidth.",
        "",
    ]
    write_markdown(out_dir / "dask_overhead.md", lines)


def main(argv=None):
    args = cli(
        __doc__, argv, quick_help="8,000 rows, k=100, 200 empty tasks, 3 repeats"
    )
    if args.quick:
        result = measure(8_000, [100], n_empty=200, repeats=3)
    else:
        result = measure(32_561, [100, 1000], n_empty=1000, repeats=5)
    result["command"] = command("dask_overhead.py", "--quick" if args.quick else "")
    print(json.dumps(result, indent=2))
    write(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
