"""How fast are the private estimators, relative to plain scikit-learn?

Every figure is a ratio against a baseline measured in the same process,
interleaved with it (baseline, then the private path, repeat), median of
several repeats, BLAS limited to one thread (on a shared machine
oversubscribed BLAS threads dominate and vary):

1. **Private predict vs the teachers' own evaluation** (calling every
   teacher's ``predict`` on the same rows, finiteness checks skipped as the
   private path does): ``SubsampleAggregateClassifier`` (sparse vector, at
   a budget where nearly every row passes: a speed test, not a
   recommendation) on the fused linear path and the per-teacher path,
   confident GNMax and ``PrivatePredictionClassifier``; k = 100 scaled
   LogisticRegression teachers, and DecisionTree teachers (per-teacher path
   only), on the bundled Adult data one-hot encoded (108 columns).
2. **Fused vs per-teacher path** (the estimator's own fused path vs every
   teacher's ``predict``, same teachers, identical votes checked): the
   ratio of the two rows above.
3. **Fit vs** ``BaggingClassifier(estimator, n_estimators=k,
   max_samples=1/k, bootstrap=False)`` at the same k and ``n_jobs``
   (goal <= 1.1x), LogisticRegression and DecisionTree teachers, k in
   {100, 1000}, on Adult.
4. **Scaling**: fit time against n (k = 100) and predict time against m,
   with the same baselines, on AER Fertility (254,654 rows; ``--quick``:
   Adult), drawn on log-log axes.

Usage::

    python benchmarks/speed.py [--quick] [--out docs/benchmarks]

``--quick`` (CI): bundled Adult only, fewer rows and repeats.
"""

from __future__ import annotations

import copy
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import config_context
from sklearn.ensemble import BaggingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.parallel import Parallel, delayed
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import load_adult, load_fertility  # noqa: E402
from _harness import (  # noqa: E402
    DEFAULT_OUT,
    Progress,
    cli,
    command,
    environment,
    load_average,
    markdown_table,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)

GOAL_FIT = 1.10
FULL = {
    "predict_queries": 100_000,
    "predict_repeats": 5,
    "predict_all_mechanisms": True,
    "fit_cells": [
        ["LogisticRegression", 100],
        ["LogisticRegression", 1000],
        ["DecisionTree", 100],
        ["DecisionTree", 1000],
    ],
    "fit_n_jobs": [1, 2],
    "fit_repeats": 3,
    "scaling_data": "fertility",
    "scaling_n": [4_000, 16_000, 64_000, 254_654],
    "scaling_m": [1_000, 10_000, 100_000, 1_000_000],
    "scaling_repeats": 3,
}
QUICK = {
    "predict_queries": 10_000,
    "predict_repeats": 3,
    "predict_all_mechanisms": False,
    "fit_cells": [["LogisticRegression", 100], ["DecisionTree", 100]],
    "fit_n_jobs": [2],
    "fit_repeats": 1,
    "scaling_data": "adult",
    "scaling_n": [2_000, 8_000],
    "scaling_m": [1_000, 3_000, 10_000],
    "scaling_repeats": 1,
}
K_PREDICT = 100
K_SCALING = 100


def linear_teacher():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))


def tree_teacher():
    return DecisionTreeClassifier(random_state=0)


TEACHERS = {"LogisticRegression": linear_teacher, "DecisionTree": tree_teacher}


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = quiet(fn, *args, **kwargs)
    return time.perf_counter() - start, out


def median(values):
    return float(np.median(values))


def teachers_own(model, X):
    """The baseline: every teacher's own ``predict`` (finiteness check skipped,
    as the private path validates ``X`` once)."""
    with config_context(assume_finite=True):
        return [teacher.predict(X) for teacher in model.estimators_]


class PerTeacherSubsampleAggregate(SubsampleAggregateClassifier):
    """The per-teacher vote path: every teacher's own ``predict``.

    The estimator takes the fused path by itself for linear teachers (0.2
    dropped ``fused=``; the votes are identical either way); removing it
    after ``fit`` measures the path the teachers would take alone.
    """

    def fit(self, X, y):
        super().fit(X, y)
        self._fused_ensemble_ = None
        return self


def sparse_vector_model(teacher, k, classes, fused, **extra):
    # A budget at which nearly every row passes: a speed test only.
    # ``fused``: "auto" for the estimator as it is, False for the per-teacher
    # path.
    params = dict(
        epsilon=1e7,
        delta=1e-5,
        mechanism=SparseVector(max_unstable=5000, fallback="abstain"),
        classes=classes,
        random_state=0,
    )
    params.update(extra)
    cls = (
        PerTeacherSubsampleAggregate if fused is False else SubsampleAggregateClassifier
    )
    return cls(teacher, n_estimators=k, **params)


def fresh_predict(model, X):
    """Predict on an unused copy (full budget, fresh noise)."""
    fresh = copy.deepcopy(model)
    start = time.perf_counter()
    out = quiet(fresh.predict, X)
    return time.perf_counter() - start, out


# --------------------------------------------------------------------------
# 1-2. Predict
# --------------------------------------------------------------------------


def adult_queries(data, m, seed=0):
    pool = np.vstack([data.X_query, data.X_public, data.X_train])
    rows = np.random.RandomState(seed).randint(pool.shape[0], size=m)
    return pool[rows]


def measure_predict(data, m, repeats, progress, all_mechanisms=True):
    X, y, classes = data.X_train, data.y_train, data.classes
    Q = adult_queries(data, m)
    models = {
        ("LogisticRegression", "sparse vector", "fused"): sparse_vector_model(
            linear_teacher(), K_PREDICT, classes, "auto"
        ),
        ("LogisticRegression", "sparse vector", "per-teacher"): sparse_vector_model(
            linear_teacher(), K_PREDICT, classes, False
        ),
        ("DecisionTree", "sparse vector", "per-teacher"): sparse_vector_model(
            tree_teacher(), K_PREDICT, classes, "auto"
        ),
    }
    if all_mechanisms:
        models[("LogisticRegression", "confident GNMax", "fused")] = (
            sparse_vector_model(
                linear_teacher(),
                K_PREDICT,
                classes,
                "auto",
                mechanism="confident_gnmax",
                max_queries=m,
                epsilon=1e4,
            )
        )
        models[("LogisticRegression", "exponential (PrivatePrediction)", "fused")] = (
            PrivatePredictionClassifier(
                linear_teacher(),
                n_estimators=K_PREDICT,
                epsilon=1e4,
                max_queries=m,
                classes=classes,
                random_state=0,
            )
        )
    for model in models.values():  # fits are not timed here
        model.set_params(n_jobs=2)
        quiet(model.fit, X, y)
    fused = models[("LogisticRegression", "sparse vector", "fused")]
    plain = models[("LogisticRegression", "sparse vector", "per-teacher")]
    assert fused._fused_ensemble_ is not None and plain._fused_ensemble_ is None
    identical = bool(np.array_equal(fused._vote_counts(Q), plain._vote_counts(Q)))
    times = {key: [] for key in models}
    base = {"LogisticRegression": [], "DecisionTree": []}
    for _ in range(repeats):
        for teacher, reference in (
            ("LogisticRegression", fused),
            ("DecisionTree", models[("DecisionTree", "sparse vector", "per-teacher")]),
        ):
            base[teacher].append(timed(teachers_own, reference, Q)[0])
        for key, model in models.items():
            times[key].append(fresh_predict(model, Q)[0])
        progress.update(note="predict")
    rows = []
    for key, values in times.items():
        teacher, mechanism, path = key
        private = median(values)
        baseline = median(base[teacher])
        rows.append(
            {
                "teacher": teacher,
                "mechanism": mechanism,
                "path": path,
                "k": K_PREDICT,
                "m": m,
                "private_seconds": private,
                "teachers_own_seconds": baseline,
                "ratio": private / baseline,
            }
        )
    lr = {
        r["path"]: r
        for r in rows
        if r["teacher"] == "LogisticRegression" and r["mechanism"] == "sparse vector"
    }
    fused_vs = {
        "k": K_PREDICT,
        "m": m,
        "identical_votes": identical,
        "per_teacher_seconds": lr["per-teacher"]["private_seconds"],
        "fused_seconds": lr["fused"]["private_seconds"],
        "speedup": lr["per-teacher"]["private_seconds"]
        / lr["fused"]["private_seconds"],
    }
    return rows, fused_vs


# --------------------------------------------------------------------------
# 3. Fit vs BaggingClassifier
# --------------------------------------------------------------------------


def bagging(teacher, k, n_jobs, seed):
    return BaggingClassifier(
        teacher,
        n_estimators=k,
        max_samples=1.0 / k,
        bootstrap=False,
        n_jobs=n_jobs,
        random_state=seed,
    )


def bagging_fit(teacher, k, n_jobs, X, y_index, seed):
    """Time one Bagging fit; returns (seconds, seed used).

    LogisticRegression cannot fit a one-class subset (the private ensemble
    uses a constant teacher for such a shard): on that error take the next
    Bagging seed, untimed, until every subset works.
    """
    while True:
        try:
            return timed(bagging(teacher(), k, n_jobs, seed).fit, X, y_index)[0], seed
        except ValueError:
            seed += 1


def measure_fit(data, cells, n_jobs_values, repeats, progress):
    X, y, classes = data.X_train, data.y_train, data.classes
    y_index = np.searchsorted(classes, y)  # Bagging gets the same class indices
    rows = []
    # Warm joblib's worker pool so neither side pays for starting it.
    Parallel(n_jobs=max(n_jobs_values))(delayed(abs)(i) for i in range(8))
    for name, k in cells:
        teacher = TEACHERS[name]
        seed = 0
        for n_jobs in n_jobs_values:
            private, baseline = [], []
            for repeat in range(repeats):
                model = sparse_vector_model(
                    teacher(), k, classes, "auto", n_jobs=n_jobs, epsilon=1.0
                )
                if repeat % 2:  # alternate which side goes first
                    private.append(timed(model.fit, X, y)[0])
                seconds, seed = bagging_fit(teacher, k, n_jobs, X, y_index, seed)
                baseline.append(seconds)
                if not repeat % 2:
                    private.append(timed(model.fit, X, y)[0])
                progress.update(note=f"fit {name} k={k} n_jobs={n_jobs}")
            rows.append(
                {
                    "teacher": name,
                    "k": k,
                    "n_jobs": n_jobs,
                    "n": int(X.shape[0]),
                    "rows_per_teacher": int(X.shape[0] // k),
                    "private_seconds": median(private),
                    "bagging_seconds": median(baseline),
                    "ratio": median(private) / median(baseline),
                    "goal": GOAL_FIT,
                    "bagging_random_state": seed,
                    "repeats": repeats,
                }
            )
    return rows


# --------------------------------------------------------------------------
# 4. Scaling with n and m
# --------------------------------------------------------------------------


def measure_scaling(X_all, y_all, classes, ns, ms, repeats, progress):
    fit_rows = []
    y_index_all = np.searchsorted(classes, y_all)
    for n in ns:
        X, y, y_index = X_all[:n], y_all[:n], y_index_all[:n]
        private, baseline = [], []
        seed = 0
        for _ in range(repeats):
            seconds, seed = bagging_fit(linear_teacher, K_SCALING, 1, X, y_index, seed)
            baseline.append(seconds)
            model = sparse_vector_model(linear_teacher(), K_SCALING, classes, "auto")
            private.append(timed(model.fit, X, y)[0])
            progress.update(note=f"scaling fit n={n}")
        fit_rows.append(
            {
                "n": n,
                "k": K_SCALING,
                "private_seconds": median(private),
                "bagging_seconds": median(baseline),
                "ratio": median(private) / median(baseline),
            }
        )
    # Untimed fits (two workers) of the models whose predict is timed.
    fused = quiet(
        sparse_vector_model(linear_teacher(), K_SCALING, classes, "auto", n_jobs=2).fit,
        X_all,
        y_all,
    )
    plain = quiet(
        sparse_vector_model(linear_teacher(), K_SCALING, classes, False, n_jobs=2).fit,
        X_all,
        y_all,
    )
    predict_rows = []
    rng = np.random.RandomState(1)
    for m in ms:
        Q = X_all[rng.randint(X_all.shape[0], size=m)]
        own, t_fused, t_plain = [], [], []
        for _ in range(repeats):
            own.append(timed(teachers_own, fused, Q)[0])
            t_plain.append(fresh_predict(plain, Q)[0])
            t_fused.append(fresh_predict(fused, Q)[0])
            progress.update(note=f"scaling predict m={m}")
        predict_rows.append(
            {
                "m": m,
                "k": K_SCALING,
                "n": int(X_all.shape[0]),
                "teachers_own_seconds": median(own),
                "per_teacher_seconds": median(t_plain),
                "fused_seconds": median(t_fused),
                "per_teacher_ratio": median(t_plain) / median(own),
                "fused_ratio": median(t_fused) / median(own),
            }
        )
    return fit_rows, predict_rows


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fit_rows = result["scaling"]["fit"]
    predict_rows = result["scaling"]["predict"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    n = [r["n"] for r in fit_rows]
    left.loglog(
        n,
        [r["private_seconds"] for r in fit_rows],
        "o-",
        label="SubsampleAggregateClassifier.fit",
    )
    left.loglog(
        n,
        [r["bagging_seconds"] for r in fit_rows],
        "s--",
        label="BaggingClassifier.fit (max_samples=1/k)",
    )
    left.set_xlabel("training rows n")
    left.set_ylabel("seconds")
    left.set_title(f"fit, k = {K_SCALING} scaled LogisticRegression, n_jobs = 1")
    m = [r["m"] for r in predict_rows]
    right.loglog(
        m,
        [r["fused_seconds"] for r in predict_rows],
        "o-",
        label="private predict, fused path",
    )
    right.loglog(
        m,
        [r["per_teacher_seconds"] for r in predict_rows],
        "^-",
        label="private predict, per-teacher path",
    )
    right.loglog(
        m,
        [r["teachers_own_seconds"] for r in predict_rows],
        "s--",
        label="teachers' own predict (baseline)",
    )
    right.set_xlabel("query rows m")
    right.set_ylabel("seconds")
    right.set_title(f"predict, k = {K_SCALING}, n = {predict_rows[0]['n']:,}")
    for ax in (left, right):
        low, high = (
            min(min(line.get_ydata()) for line in ax.get_lines()),
            max(max(line.get_ydata()) for line in ax.get_lines()),
        )
        if high < 10 * low:  # show at least a decade, so slopes read true
            middle = np.sqrt(low * high)
            ax.set_ylim(middle / 5, middle * 5)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle(
        f"Scaling on {result['scaling']['data']} (median of "
        f"{result['config']['scaling_repeats']}, one process, BLAS 1 thread)",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _dask_section(out_dir):
    """The Dask-vs-loky overhead per task, from dask_overhead.py's own run."""
    path = Path(out_dir) / "dask_overhead.json"
    if not path.exists():
        path = DEFAULT_OUT / "dask_overhead.json"
    if not path.exists():
        return ["Dask vs loky: run `python benchmarks/dask_overhead.py`.", ""]
    dask = json.loads(path.read_text())
    empty = dask.get("empty_tasks", {})

    def ms(value):
        return "-" if value is None else f"{1e3 * value:.2f} ms"

    lines = [
        "## Dask vs loky, overhead per task (from `benchmarks/dask_overhead.py`)",
        "",
        "Measured by its own script in its own process (local workers); see "
        "[dask_overhead.md](dask_overhead.md).",
        "",
        "- one empty task: overhead of Dask over loky "
        f"{ms(empty.get('overhead_per_task_seconds'))} per task;",
    ]
    for row in dask.get("fits", []):
        overhead = row.get("overhead_per_task_seconds")
        lines.append(
            f"- SubsampleAggregateClassifier.fit, k = {row.get('n_estimators')}: "
            f"Dask / loky = {row.get('ratio', row.get('fit_ratio', float('nan'))):.2f}"
            f", overhead {'-' if overhead is None else f'{overhead:.3f} s'} per task;"
        )
    lines.append("")
    return lines


def write(result, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "speed.json", result)
    plot(result, out_dir / "speed.png")
    env = result["environment"]
    cfg = result["config"]
    fv = result["fused_vs_per_teacher"]
    lines = [
        "# Speed: private estimators against plain scikit-learn",
        "",
        f"Command: `{result['command']}`; wall time {result['seconds'] / 60:.1f} "
        f"min. {env['cpus']} CPUs, 1-minute load average "
        f"{env['load_average_1min']} at the start and "
        f"{result['load_average_end']} at the end (a shared machine: "
        "absolute seconds vary, the ratios are measured interleaved in one "
        "process, median of repeats). BLAS limited to 1 thread. Python "
        f"{env['python']}, numpy {env['numpy']}, scikit-learn "
        f"{env['scikit_learn']}.",
        "",
        "## Private predict vs the teachers' own evaluation",
        "",
        f"Bundled Adult, one-hot (108 columns), k = {K_PREDICT}, "
        f"m = {cfg['predict_queries']:,} query rows, median of "
        f"{cfg['predict_repeats']}. The sparse vector runs at a budget where "
        "nearly every row passes; confident GNMax and PrivatePrediction at "
        "epsilon = 10^4 (speed only). *ratio* = private predict / the "
        "teachers' own `predict` on the same rows (below 1: faster than the "
        "teachers themselves).",
        "",
    ]
    lines += markdown_table(
        result["predict"],
        [
            ("teacher", "teacher", "", "l"),
            ("mechanism", "mechanism", "", "l"),
            ("vote path", "path", "", "l"),
            ("k", "k", "", "r"),
            ("m", "m", ",", "r"),
            ("teachers' own (s)", "teachers_own_seconds", ".3f", "r"),
            ("private predict (s)", "private_seconds", ".3f", "r"),
            ("ratio", "ratio", ".2f", "r"),
        ],
    )
    lines += [
        "",
        "## Fused vs per-teacher vote path",
        "",
        "SubsampleAggregateClassifier's fused path vs every teacher's own "
        f"predict, same teachers (k = {fv['k']}), m = {fv['m']:,}: identical votes "
        f"{fv['identical_votes']}; per-teacher {fv['per_teacher_seconds']:.3f} s, "
        f"fused {fv['fused_seconds']:.3f} s, **{fv['speedup']:.1f}x** faster.",
        "",
        "## Fit vs BaggingClassifier",
        "",
        "`SubsampleAggregateClassifier(estimator, n_estimators=k).fit` vs "
        "`BaggingClassifier(estimator, n_estimators=k, max_samples=1/k, "
        "bootstrap=False).fit` at the same k and n_jobs on Adult (32,561 "
        f"rows), median of {cfg['fit_repeats']}, interleaved. Goal: ratio <= "
        f"{GOAL_FIT}. BaggingClassifier hands an estimator that accepts "
        "`sample_weight` (DecisionTree) the whole X with 0/1 weights, so each "
        "of its k trees is fitted on all n rows; a Pipeline (the scaled "
        "LogisticRegression) gets only its subset's rows, as the private "
        "ensemble's teachers do (each joblib task carries only its shards' "
        "rows, while Bagging ships the whole X to every task).",
        "",
    ]
    lines += markdown_table(
        result["fit"],
        [
            ("teacher", "teacher", "", "l"),
            ("k", "k", "", "r"),
            ("rows per teacher", "rows_per_teacher", "", "r"),
            ("n_jobs", "n_jobs", "", "r"),
            ("Bagging fit (s)", "bagging_seconds", ".2f", "r"),
            ("private fit (s)", "private_seconds", ".2f", "r"),
            ("ratio", "ratio", ".2f", "r"),
            ("goal met", lambda r: "yes" if r["ratio"] <= r["goal"] else "no", "", "l"),
        ],
    )
    sc = result["scaling"]
    lines += [
        "",
        f"## Scaling with n and m ({sc['data']})",
        "",
        "![fit and predict time, log-log](speed.png)",
        "",
        f"Fit, k = {K_SCALING} scaled LogisticRegression teachers, n_jobs = 1 "
        "(ratio: private / Bagging at the same n):",
        "",
    ]
    lines += markdown_table(
        sc["fit"],
        [
            ("n", "n", ",", "r"),
            ("Bagging fit (s)", "bagging_seconds", ".3f", "r"),
            ("private fit (s)", "private_seconds", ".3f", "r"),
            ("ratio", "ratio", ".2f", "r"),
        ],
    )
    lines += ["", "Predict (ratio: private / the teachers' own predict):", ""]
    lines += markdown_table(
        sc["predict"],
        [
            ("m", "m", ",", "r"),
            ("teachers' own (s)", "teachers_own_seconds", ".4f", "r"),
            ("per-teacher (s)", "per_teacher_seconds", ".4f", "r"),
            ("fused (s)", "fused_seconds", ".4f", "r"),
            ("per-teacher ratio", "per_teacher_ratio", ".2f", "r"),
            ("fused ratio", "fused_ratio", ".2f", "r"),
        ],
    )
    lines.append("")
    lines += _dask_section(out_dir)
    write_markdown(out_dir / "speed.md", lines)


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument(
            "--replot",
            action="store_true",
            help="rewrite the Markdown and PNG from the JSON in --out",
        )

    args = cli(
        __doc__,
        argv,
        quick_help="CI mode: bundled Adult only, fewer rows and repeats",
        add_arguments=add_arguments,
    )
    if args.replot:
        result = json.loads((Path(args.out) / "speed.json").read_text())
        write(result, args.out)
        return 0
    config = dict(QUICK if args.quick else FULL)
    env = environment()
    start = time.perf_counter()
    data = load_adult(n_queries=2000, n_public=2000)
    if config["scaling_data"] == "fertility":
        X_scale, y_scale = load_fertility()
        scale_classes = np.array([0, 1])
        scale_name = "AER Fertility (target morekids, 254,654 x 7)"
    else:
        X_scale, y_scale = data.X_train, data.y_train
        scale_classes = data.classes
        scale_name = "bundled Adult (32,561 x 108)"
    n_fit = len(config["fit_cells"]) * len(config["fit_n_jobs"])
    total = (
        config["predict_repeats"]
        + n_fit * config["fit_repeats"]
        + (len(config["scaling_n"]) + len(config["scaling_m"]))
        * config["scaling_repeats"]
    )
    progress = Progress(total, "speed")
    with threadpool_limits(1, user_api="blas"):
        predict_rows, fused_vs = measure_predict(
            data,
            config["predict_queries"],
            config["predict_repeats"],
            progress,
            config["predict_all_mechanisms"],
        )
        fit_rows = measure_fit(
            data,
            config["fit_cells"],
            config["fit_n_jobs"],
            config["fit_repeats"],
            progress,
        )
        ns = [n for n in config["scaling_n"] if n <= X_scale.shape[0]]
        scaling_fit, scaling_predict = measure_scaling(
            X_scale,
            y_scale,
            scale_classes,
            ns,
            config["scaling_m"],
            config["scaling_repeats"],
            progress,
        )
    seconds = time.perf_counter() - start
    result = {
        "command": command("speed.py", "--quick" if args.quick else ""),
        "seconds": seconds,
        "environment": env,
        "load_average_end": load_average(),
        "config": config,
        "predict": predict_rows,
        "fused_vs_per_teacher": fused_vs,
        "fit": fit_rows,
        "scaling": {
            "data": scale_name,
            "fit": scaling_fit,
            "predict": scaling_predict,
        },
    }
    write(result, args.out)
    print(f"speed: {seconds:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
