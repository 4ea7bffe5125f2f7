"""Kernel ridge at scale: 100,000 rows of Friedman #1, time, memory and R^2.

:class:`~dpsklearn.PrivateKernelRidge` with ``OutputPerturbation(n_shards=k)``
(divide and conquer) on 100,000 private rows of scikit-learn's Friedman #1
(10 inputs, noise sd 1; the target centred at the public midpoint 15 of its
range ``(-5, 35)``, so ``y_bound = 20``). Goals: the fit in at most 60 s of
wall time on 2 cores, with the peak memory of the whole process at most
4 GB.

Every fit runs in a fresh child process (this script with ``--child``), so
its peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss`` at the end of
the child: fit and predictions) is its own. The shards are fitted with
joblib's threading backend, two workers, one BLAS thread each, so that every
byte is in that one process and counted (loky workers would be separate
processes whose memory ``ru_maxrss`` does not add up). The wall time is the
``fit`` call alone.

Rows, each beside the others on the same test rows:

* **private**, ``OutputPerturbation(release="predictions")``: 2,000 answers
  at ``epsilon`` 1 and 8 (``max_queries = 2000``, ``delta = 1e-5``), each the
  mean of the ``k`` clipped shard predictions plus grid Laplace noise;
* **private**, ``OutputPerturbation(release="model")``: the noisy mean of the shards'
  random-feature weights, released once; its predictions are free;
* **non-private sharded**: the same ``k`` shard fits averaged, no noise;
* **non-private unsharded**: one exact fit at about the largest ``n`` whose
  Gram matrix is built and solved within 4 GB (20,000 rows: a 3.2 GB Gram
  matrix, factorised in place; its measured peak is in the table).

``alpha`` (and, for the model release, the number of random features) is
chosen on a validation split of 2,000 rows drawn beside the training rows
(outside the guarantee, as any tuning on private data); the test rows are
scored once.

``--quick`` (CI, seconds): 5,000 rows, 5 shards, one configuration.

Usage::

    python benchmarks/kernel_ridge_scale.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)

OFFSET, Y_BOUND = 15.0, 20.0  # public: Friedman #1 lies in [0, 30] + noise
N_EVAL = 2000
GOAL_SECONDS, GOAL_BYTES = 60.0, 4e9

FULL = {
    "n": 100_000,
    "gamma": 1.0,
    "epsilons": (1.0, 8.0),
    "ks_predictions": (50, 500, 2000),
    "alphas_predictions": (1e-4, 1e-3),
    "ks_model": (50, 500),
    "alphas_model": (1e-3, 1e-2, 1e-1),
    "components": (100, 300),
    "unsharded_n": 20_000,
}
QUICK = {
    "n": 5_000,
    "gamma": 1.0,
    "epsilons": (8.0,),
    "ks_predictions": (5,),
    "alphas_predictions": (1e-3,),
    "ks_model": (5,),
    "alphas_model": (1e-2,),
    "components": (100,),
    "unsharded_n": 2_000,
}


def friedman(n):
    """Training rows, then 2,000 validation and 2,000 test rows (fixed seed)."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n + 2 * N_EVAL, noise=1.0, random_state=0)
    return (
        (X[:n], y[:n] - OFFSET),
        (X[n : n + N_EVAL], y[n : n + N_EVAL]),
        (X[n + N_EVAL :], y[n + N_EVAL :]),
    )


# -- the child: one fit, measured in its own process -----------------------------
def child(config):
    from joblib import parallel_config
    from sklearn import config_context
    from sklearn.metrics import r2_score
    from threadpoolctl import threadpool_limits

    from dpsklearn import OutputPerturbation, PrivacyLeakWarning, PrivateKernelRidge

    warnings.simplefilter("ignore", PrivacyLeakWarning)
    (X, y), val, test = friedman(config["n"])
    X_eval, y_eval = val if config["split"] == "validation" else test
    model = PrivateKernelRidge(
        kernel_params={"gamma": config["gamma"]},
        alpha=config["alpha"],
        y_bound=Y_BOUND,
        epsilon=config["epsilon"],
        delta=1e-5,
        max_queries=N_EVAL,
        mechanism=OutputPerturbation(
            release=config["release"],
            n_components=config.get("components", 100),
            n_shards=config["k"],
        ),
        random_state=0,
        noise_random_state=config.get("seed", 0),
    )
    # scikit-learn's working_memory (MiB) bounds the shards' arrays; None
    # keeps its default.
    memory = {}
    if config.get("working_memory") is not None:
        memory["working_memory"] = config["working_memory"]
    with (
        config_context(**memory),
        parallel_config(backend="threading", n_jobs=2),
        threadpool_limits(1),
    ):
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    with threadpool_limits(2):
        private = model.predict(X_eval) + OFFSET
        exact = (
            model._exact_predictions(X_eval) + OFFSET
            if config["release"] == "predictions"
            else None
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        **config,
        "fit_seconds": seconds,
        "peak_bytes": peak,
        "n_estimators_": model.n_estimators_,
        "sensitivity": model.sensitivity_,
        "noise_scale": model.noise_scale_,
        "r2_private": r2_score(y_eval, private),
        "r2_nonprivate_sharded": None if exact is None else r2_score(y_eval, exact),
    }


def run_child(config):
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(config)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the parent ---------------------------------------------------------------------
def main(argv=None):
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    args = cli(__doc__, argv, quick_help="5,000 rows, 5 shards (seconds)")
    settings = QUICK if args.quick else FULL
    start = time.perf_counter()
    base = {"n": settings["n"], "gamma": settings["gamma"]}
    sweep, rows = [], []
    for epsilon in settings["epsilons"]:
        candidates = [
            {**base, "k": k, "release": "predictions", "alpha": a, "epsilon": epsilon}
            for k in settings["ks_predictions"]
            for a in settings["alphas_predictions"]
        ] + [
            {
                **base,
                "k": k,
                "release": "model",
                "alpha": a,
                "components": d,
                "epsilon": epsilon,
            }
            for k in settings["ks_model"]
            for a in settings["alphas_model"]
            for d in settings["components"]
        ]
        for release in ("predictions", "model"):
            tried = [
                run_child({**c, "split": "validation"})
                for c in candidates
                if c["release"] == release
            ]
            sweep += tried
            best = max(tried, key=lambda r: r["r2_private"])
            best["chosen"] = True
            print(
                f"epsilon {epsilon} {release}: alpha {best['alpha']} "
                f"(validation R^2 {best['r2_private']:.3f})",
                file=sys.stderr,
            )
            chosen = {
                key: best[key] for key in (*base, "k", "release", "alpha", "epsilon")
            }
            if release == "model":
                chosen["components"] = best["components"]
            rows.append(run_child({**chosen, "split": "test"}))
    unsharded = run_child(
        {
            "n": settings["unsharded_n"],
            "k": 1,
            "gamma": settings["gamma"],
            "release": "predictions",
            "alpha": min(settings["alphas_predictions"]),
            "epsilon": 1.0,
            "working_memory": 4096,
            "split": "test",
        }
    )
    elapsed = time.perf_counter() - start
    stem = "kernel_ridge_scale_quick" if args.quick else "kernel_ridge_scale"
    write_json(
        args.out / f"{stem}.json",
        {
            "environment": environment(),
            "settings": {k: v for k, v in settings.items()},
            "results": rows,
            "unsharded": unsharded,
            "sweep": sweep,
            "seconds": elapsed,
        },
    )

    def fit_cell(r):
        verdict = (
            "yes"
            if r["fit_seconds"] <= GOAL_SECONDS and r["peak_bytes"] <= GOAL_BYTES
            else "NO"
        )
        return verdict

    setting = [
        ("release", "release", "", "l"),
        ("epsilon", "epsilon", "g", "r"),
        ("shards k", "n_estimators_", "", "r"),
        ("alpha", "alpha", "g", "r"),
        (
            "D",
            lambda r: r.get("components") if r["release"] == "model" else None,
            "",
            "r",
        ),
    ]
    columns = [
        *setting,
        ("rows", "n", ",", "r"),
        ("fit wall s", "fit_seconds", ".1f", "r"),
        ("peak GB (process)", lambda r: r["peak_bytes"] / 1e9, ".2f", "r"),
        ("<= 60 s and 4 GB", fit_cell, "", "l"),
        ("sensitivity", "sensitivity", ".4g", "r"),
        ("noise scale", "noise_scale", ".4g", "r"),
        ("R^2 private", "r2_private", ".4f", "r"),
        ("R^2 non-private sharded", "r2_nonprivate_sharded", ".4f", "r"),
        (
            f"R^2 non-private unsharded ({unsharded['n']:,} rows)",
            lambda r: unsharded["r2_nonprivate_sharded"],
            ".4f",
            "r",
        ),
    ]
    sweep_columns = [
        *setting,
        ("fit wall s", "fit_seconds", ".1f", "r"),
        ("validation R^2 private", "r2_private", ".4f", "r"),
        ("validation R^2 non-private sharded", "r2_nonprivate_sharded", ".4f", "r"),
        ("chosen", lambda r: "**chosen**" if r.get("chosen") else "", "", "l"),
    ]
    lines = [
        "# Kernel ridge at scale (Friedman #1)",
        "",
        f"`{command('kernel_ridge_scale.py', '--quick' if args.quick else '')}`; "
        f"{elapsed / 60:.1f} min on {environment()['cpus']} cores. "
        f"PrivateKernelRidge on {settings['n']:,} private rows in k shards "
        "(threading backend, 2 workers, one BLAS thread each); the wall "
        "time is the `fit` alone, the peak is the "
        "whole child process's resident memory (fit and predictions; "
        "predictions in blocks within scikit-learn's working_memory, 1,024 "
        "MiB). R^2 on 2,000 test rows, looked at once; alpha (and D) chosen "
        "on 2,000 validation rows (**outside the privacy guarantee**). The "
        "private release of `predictions` answers the 2,000 test rows "
        "(`max_queries=2000`, delta = 1e-5); `model` releases its weights "
        "once. The non-private unsharded fit is about the largest whose "
        "Gram matrix fits 4 GB: "
        f"{unsharded['n']:,} rows, {unsharded['fit_seconds']:.0f} s, peak "
        f"{unsharded['peak_bytes'] / 1e9:.2f} GB.",
        "",
        *markdown_table(rows, columns),
        "",
        "## Validation sweep (outside the guarantee)",
        "",
        *markdown_table(sweep, sweep_columns),
        "",
    ]
    write_markdown(args.out / f"{stem}.md", lines)
    print(f"wrote {args.out / stem}.md and .json in {elapsed:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
