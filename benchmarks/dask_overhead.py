"""What does training the teachers on a Dask cluster cost per task? (issue 8)

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

Both backends are warmed up first (loky's worker pool and the Dask workers'
imports are not counted); each figure is the median of several repeats,
measured in this process. The cluster is a ``distributed.LocalCluster`` on
the loopback interface: a real multi-machine cluster adds network transfer
of each task's rows (bytes per task in the table) at the link's bandwidth.

Usage::

    python benchmarks/dask_overhead.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.parallel import Parallel, delayed

from dpsklearn import SubsampleAggregateClassifier
from dpsklearn.datasets import load_adult
from dpsklearn.demo import adult_encoder

N_WORKERS = 2


def _noop(i):
    return i


def empty_tasks_seconds(n_tasks, repeats):
    """Median wall time of ``n_tasks`` empty tasks, one task per dispatch."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        Parallel(n_jobs=N_WORKERS, batch_size=1)(
            delayed(_noop)(i) for i in range(n_tasks)
        )
        times.append(time.perf_counter() - start)
    return float(np.median(times))


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
        fallback="abstain",
        abstain_label="abstain",
        classes=classes,
        random_state=0,
        n_jobs=N_WORKERS,
    )


def fit_seconds(X, y, classes, n_estimators, repeats):
    times, model = [], None
    for _ in range(repeats):
        model = make_model(classes, n_estimators)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model.fit(X, y)
            times.append(time.perf_counter() - start)
    return float(np.median(times)), model


def measure_backend(backend, X, y, classes, k_values, n_empty, repeats):
    """Warm the backend up, then time empty tasks and fits under it."""
    with joblib.parallel_config(backend=backend):
        empty_tasks_seconds(n_empty, 1)  # warm-up: pool start, imports
        fit_seconds(X, y, classes, k_values[0], 1)
        result = {"empty_tasks": empty_tasks_seconds(n_empty, repeats)}
        for k in k_values:
            result[k], model = fit_seconds(X, y, classes, k, repeats)
    return result, model


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


def measure(n_rows, k_values, n_empty, repeats):
    X, y, classes = load_data(n_rows)
    loky, model = measure_backend("loky", X, y, classes, k_values, n_empty, repeats)
    start = time.perf_counter()
    cluster, client = start_cluster()
    cluster_start = time.perf_counter() - start
    try:
        dask, _ = measure_backend("dask", X, y, classes, k_values, n_empty, repeats)
    finally:
        client.close()
        cluster.close()
    n_tasks = N_WORKERS  # fit_teachers: one batch of teachers per worker
    rows = []
    for k in k_values:
        shard_rows = int(np.ceil(n_rows / N_WORKERS))
        rows.append(
            {
                "n_rows": n_rows,
                "n_features": int(X.shape[1]),
                "n_estimators": k,
                "n_tasks": n_tasks,
                "bytes_per_task": shard_rows * (X.shape[1] * X.itemsize + 8),
                "loky_fit_seconds": loky[k],
                "dask_fit_seconds": dask[k],
                "fit_ratio": dask[k] / loky[k],
                "overhead_per_task_seconds": (dask[k] - loky[k]) / n_tasks,
            }
        )
    import distributed

    return {
        "workers": N_WORKERS,
        "repeats": repeats,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "joblib": joblib.__version__,
            "distributed": distributed.__version__,
            "load_average_1min": round(os.getloadavg()[0], 2),
        },
        "cluster_start_seconds": cluster_start,
        "empty_tasks": {
            "n_tasks": n_empty,
            "loky_seconds_per_task": loky["empty_tasks"] / n_empty,
            "dask_seconds_per_task": dask["empty_tasks"] / n_empty,
            "overhead_per_task_seconds": (dask["empty_tasks"] - loky["empty_tasks"])
            / n_empty,
        },
        "fits": rows,
        "model_check": {"n_estimators_": int(model.n_estimators_)},
    }


def write(result, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "dask_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    empty = result["empty_tasks"]
    machine = result["machine"]
    lines = [
        "# Dask vs loky: overhead per task",
        "",
        f"{result['workers']} worker processes on one machine ({machine['cpus']} "
        f"CPUs, 1-minute load average {machine['load_average_1min']} while "
        f"measuring), joblib {machine['joblib']}, distributed "
        f"{machine['distributed']}; median of {result['repeats']} repeats after a "
        f"warm-up. Starting the local cluster took "
        f"{result['cluster_start_seconds']:.1f} s (not counted below).",
        "",
        "## One empty task (dispatch round trip, `batch_size=1`)",
        "",
        "| tasks | loky (ms per task) | Dask (ms per task) "
        "| Dask overhead (ms per task) |",
        "|---|---|---|---|",
        f"| {empty['n_tasks']} | {1e3 * empty['loky_seconds_per_task']:.2f} | "
        f"{1e3 * empty['dask_seconds_per_task']:.2f} | "
        f"{1e3 * empty['overhead_per_task_seconds']:.2f} |",
        "",
        "## SubsampleAggregateClassifier.fit on Adult (LogisticRegression teachers)",
        "",
        "| rows | features | k | tasks | MB per task | loky fit (s) | Dask fit (s) "
        "| ratio | Dask overhead per task (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["fits"]:
        lines.append(
            f"| {row['n_rows']} | {row['n_features']} | {row['n_estimators']} | "
            f"{row['n_tasks']} | {row['bytes_per_task'] / 1e6:.1f} | "
            f"{row['loky_fit_seconds']:.2f} | {row['dask_fit_seconds']:.2f} | "
            f"{row['fit_ratio']:.2f} | {row['overhead_per_task_seconds']:.3f} |"
        )
    lines += [
        "",
        "Each task carries only its shards' rows (`MB per task`), never the whole "
        "`X`; on a multi-machine cluster add their transfer time at the network's "
        "bandwidth.",
        "",
    ]
    (out_dir / "dask_overhead.md").write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="8,000 rows, k=100, 200 empty tasks, 3 repeats",
    )
    parser.add_argument("--out", default="docs/benchmarks")
    args = parser.parse_args(argv)
    if args.quick:
        result = measure(8_000, [100], n_empty=200, repeats=3)
    else:
        result = measure(32_561, [100, 1000], n_empty=1000, repeats=5)
    print(json.dumps(result, indent=2))
    write(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
