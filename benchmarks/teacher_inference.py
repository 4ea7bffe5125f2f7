"""How fast are the teachers asked, fitted and reused, against scikit-learn?

Every figure is a ratio against a baseline measured in the same process,
interleaved with it (baseline, then dpsklearn, repeat), median of the
repeats, BLAS limited to one thread:

1. **Trees vs BaggingClassifier** (n_jobs=2): ``PrivatePredictionClassifier``
   with k = 1,000 ``DecisionTreeClassifier(max_depth=8)`` teachers on
   100,000 rows of ``make_classification`` (20 features): ``fit`` against
   ``BaggingClassifier(tree, n_estimators=k, max_samples=1/k,
   bootstrap=False, n_jobs=2).fit`` (goal <= 1.0), and ``predict`` of
   100,000 queries against ``BaggingClassifier.predict`` *with the same
   teachers* (the bagging's ``estimators_`` replaced by them; goal <= 1.1).
   A ``SubsampleAggregateClassifier`` of the same teachers that never
   halts shows what answering chunk by chunk costs.
2. **Adult DataFrame, forests behind a ColumnTransformer**: 2,000 queries to
   ``PrivatePredictionClassifier`` with 1,628 ``RandomForestClassifier(
   n_estimators=10)`` teachers (one-hot and scaling inside each teacher),
   against calling every teacher's ``predict`` once on the 2,000 rows in
   this process (goal <= 1.5); the same predict on a two-worker Dask
   ``LocalCluster`` (identical answers for a fixed noise seed; the first
   call scatters the teachers, the second reuses them).
3. **No work for answers never given**: a ``SubsampleAggregateClassifier``
   of 5,000 tree teachers asked 100,000 queries halts after about 100 rows
   (sparse vector cutoff); its ``predict`` against counting all 100,000
   rows' votes (goal <= 10%), and the predict time per answered row.
4. **Teachers reused across a search over epsilon**: ``GridSearchCV`` over
   5 values of epsilon (3 folds, ``refit=False``) on the Adult DataFrame
   with the ColumnTransformer teacher, against the same search over one
   value (goal <= 1.5; each search run twice in alternation, the faster run
   of each), and the 5-value search without the teacher cache (the cost
   before; its scores must be identical).
5. **The demo**: ``python -m dpsklearn demo`` wall time (goal <= 30 s on 2
   cores).

Usage::

    python benchmarks/teacher_inference.py [--quick] [--out docs/benchmarks]

``--quick`` (CI, under a minute): smaller k, rows and queries, no Dask, no
demo; it writes ``teacher_inference_quick.*``.
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import config_context
from sklearn.datasets import make_classification
from sklearn.ensemble import BaggingClassifier, RandomForestClassifier
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    ROOT,
    cli,
    command,
    environment,
    load_average,
    markdown_table,
    write_json,
    write_markdown,
)

import dpsklearn  # noqa: E402
from dpsklearn import (  # noqa: E402
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.datasets import load_adult  # noqa: E402
from dpsklearn.demo import adult_frames, frame_teacher  # noqa: E402
from dpsklearn.teachers import clear_teacher_cache  # noqa: E402

FULL = {
    "trees_k": 1000,
    "trees_n": 100_000,
    "trees_m": 100_000,
    "adult_k": 1628,
    "adult_m": 2000,
    "halt_k": 5000,
    "halt_n": 250_000,
    "halt_m": 100_000,
    "search_shard_rows": 20,
    "repeats": 3,
    "dask": True,
    "demo": True,
}
QUICK = {
    "trees_k": 100,
    "trees_n": 20_000,
    "trees_m": 20_000,
    "adult_k": 60,
    "adult_m": 300,
    "halt_k": 300,
    "halt_n": 15_000,
    "halt_m": 20_000,
    "search_shard_rows": 600,
    "repeats": 1,
    "dask": False,
    "demo": False,
}
N_JOBS = 2
GOALS = {
    "trees_fit": 1.0,
    "trees_predict": 1.1,
    "adult_predict": 1.5,
    "halt_predict": 0.10,
    "search": 1.5,
    "demo_seconds": 30.0,
}


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


# -- 1. trees vs BaggingClassifier ----------


def trees(config):
    k, n, m = config["trees_k"], config["trees_n"], config["trees_m"]
    X, y = make_classification(
        n_samples=n + m, n_features=20, n_informative=10, random_state=0
    )
    X_train, y_train, X_query = X[:n], y[:n], X[n:]
    tree = DecisionTreeClassifier(max_depth=8)

    def bagging():
        return BaggingClassifier(
            tree,
            n_estimators=k,
            max_samples=1.0 / k,
            bootstrap=False,
            n_jobs=N_JOBS,
            random_state=0,
        )

    def private(cls=PrivatePredictionClassifier, **params):
        common = dict(n_estimators=k, classes=[0, 1], random_state=0, n_jobs=N_JOBS)
        return cls(tree, **common, **params)

    def prediction():
        return private(epsilon=1.0, max_queries=m)

    def never_halts():
        # A budget where every row passes: a speed test, not a recommendation.
        return private(
            SubsampleAggregateClassifier,
            epsilon=1e7,
            mechanism=SparseVector(max_unstable=50_000, fallback="abstain"),
        )

    fit_bag, fit_ours = [], []
    for _ in range(config["repeats"]):
        seconds, bag = timed(bagging().fit, X_train, y_train)
        fit_bag.append(seconds)
        seconds, model = timed(prediction().fit, X_train, y_train)
        fit_ours.append(seconds)
    streamed = quiet(never_halts().fit, X_train, y_train)
    # The bagging predicts with exactly our teachers (all features each).
    bag.estimators_ = list(model.estimators_)
    bag.estimators_features_ = [np.arange(X.shape[1])] * k
    predict_bag, predict_ours, predict_streamed = [], [], []
    for _ in range(config["repeats"]):
        seconds, _ = timed(bag.predict, X_query)
        predict_bag.append(seconds)
        fresh = quiet(copy.deepcopy, model)  # a full budget for every repeat
        seconds, _ = timed(fresh.predict, X_query)
        predict_ours.append(seconds)
        fresh = quiet(copy.deepcopy, streamed)
        seconds, _ = timed(fresh.predict, X_query)
        predict_streamed.append(seconds)
    return {
        "k": k,
        "n": n,
        "m": m,
        "bagging_fit_s": median(fit_bag),
        "fit_s": median(fit_ours),
        "fit_ratio": median(fit_ours) / median(fit_bag),
        "bagging_predict_s": median(predict_bag),
        "predict_s": median(predict_ours),
        "predict_ratio": median(predict_ours) / median(predict_bag),
        "streamed_predict_s": median(predict_streamed),
        "streamed_predict_ratio": median(predict_streamed) / median(predict_bag),
    }


# -- 2. Adult forests behind a ColumnTransformer ----------


def adult_data():
    train = load_adult(subset="train", as_frame=True)
    test = load_adult(subset="test", as_frame=True)
    X_train, X_test, strings, numbers = adult_frames(train, test)
    y_train = np.asarray(train.target).astype(str)
    y_test = np.asarray(test.target).astype(str)
    classes = np.asarray(train.target_names)
    return X_train, y_train, X_test, y_test, strings, numbers, classes


def forest_model(strings, numbers, classes, k, m, n_jobs):
    teacher = frame_teacher(strings, numbers, RandomForestClassifier(n_estimators=10))
    return PrivatePredictionClassifier(
        teacher,
        n_estimators=k,
        epsilon=1.0,
        delta=1e-5,
        max_queries=m,
        classes=classes,
        random_state=0,
        noise_random_state=0,
        n_jobs=n_jobs,
    )


def teachers_own(model, X):
    with config_context(assume_finite=True):
        return [teacher.predict(X) for teacher in model.estimators_]


def adult_forests(config):
    X_train, y_train, X_test, _, strings, numbers, classes = adult_data()
    k, m = config["adult_k"], config["adult_m"]
    X_query = X_test.iloc[:m]
    fit_s, model = timed(
        forest_model(strings, numbers, classes, k, m, N_JOBS).fit, X_train, y_train
    )
    own, parallel, serial = [], [], []
    serial_model = quiet(copy.deepcopy, model).set_params(n_jobs=None)
    for _ in range(config["repeats"]):
        seconds, _ = timed(teachers_own, model, X_query)
        own.append(seconds)
        fresh = quiet(copy.deepcopy, model)
        seconds, answers = timed(fresh.predict, X_query)
        parallel.append(seconds)
        fresh = quiet(copy.deepcopy, serial_model)
        seconds, serial_answers = timed(fresh.predict, X_query)
        serial.append(seconds)
    result = {
        "k": k,
        "m": m,
        "fit_s": fit_s,
        "teachers_own_s": median(own),
        "predict_s": median(parallel),
        "predict_ratio": median(parallel) / median(own),
        "serial_predict_s": median(serial),
        "serial_predict_ratio": median(serial) / median(own),
        "serial_identical": bool(np.array_equal(answers, serial_answers)),
    }
    if config["dask"]:
        result.update(adult_on_dask(model, X_query, answers))
    return result


def adult_on_dask(model, X_query, local_answers):
    import distributed
    import joblib

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with (
        distributed.LocalCluster(
            n_workers=N_JOBS,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(N_JOBS, timeout=120)
        with joblib.parallel_config(backend="dask"):
            first = quiet(copy.deepcopy, model)
            first_s, first_answers = timed(first.predict, X_query)
            second = quiet(copy.deepcopy, model)
            second_s, second_answers = timed(second.predict, X_query)
    return {
        "dask_first_predict_s": first_s,
        "dask_second_predict_s": second_s,
        "dask_identical": bool(
            np.array_equal(first_answers, local_answers)
            and np.array_equal(second_answers, local_answers)
        ),
    }


# -- 3. a model that halts early ----------


def halting(config):
    k, n, m = config["halt_k"], config["halt_n"], config["halt_m"]
    X, y = make_classification(
        n_samples=n + m, n_features=20, n_informative=6, flip_y=0.2, random_state=1
    )
    model = quiet(
        SubsampleAggregateClassifier(
            DecisionTreeClassifier(max_depth=4),
            n_estimators=k,
            classes=[0, 1],
            epsilon=1.0,
            mechanism=SparseVector(max_unstable=100, fallback="abstain"),
            random_state=0,
            noise_random_state=0,
            n_jobs=N_JOBS,
        ).fit,
        X[:n],
        y[:n],
    )
    X_query = X[n:]
    count_s, predict_s, answered, served = [], [], None, None
    for _ in range(config["repeats"]):
        fresh = quiet(copy.deepcopy, model)
        start = time.perf_counter()
        quiet(fresh.predict, X_query)  # abstains on every row after the halt
        predict_s.append(time.perf_counter() - start)
        status = fresh.budget_status()
        answered, served = status.n_answered, status.n_served
        seconds, _ = timed(model._vote_counts, X_query)
        count_s.append(seconds)
    return {
        "k": k,
        "m": m,
        "answered_rows": answered,
        "served_rows": served,  # answered or abstained on before the halt
        "count_all_votes_s": median(count_s),
        "predict_s": median(predict_s),
        "predict_ratio": median(predict_s) / median(count_s),
        "predict_ms_per_answered_row": 1e3 * median(predict_s) / max(1, answered),
    }


# -- 4. GridSearchCV over epsilon ----------


def search(config):
    X_train, y_train, _, _, strings, numbers, classes = adult_data()
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    fold_size = int(np.ceil(len(y_train) / 3))

    def run(epsilons):
        model = PrivatePredictionClassifier(
            frame_teacher(strings, numbers),
            max_queries=fold_size,
            delta=1e-5,
            classes=classes,
            random_state=0,
            noise_random_state=0,
            # Shards of search_shard_rows rows of a training fold.
            n_estimators=(len(y_train) - fold_size) // config["search_shard_rows"],
            n_jobs=N_JOBS,
        )
        grid = GridSearchCV(
            model, {"epsilon": epsilons}, cv=folds, refit=False, error_score="raise"
        )
        return timed(grid.fit, X_train, y_train)

    epsilons = [0.5, 1.0, 2.0, 4.0, 8.0]
    # One- and five-value searches in alternation, each from an empty cache
    # (a machine shared with other jobs: the least disturbed run of each).
    one_times, five_times = [], []
    for _ in range(2):
        clear_teacher_cache()
        seconds, one = run([1.0])
        one_times.append(seconds)
        clear_teacher_cache()
        seconds, five = run(epsilons)
        five_times.append(seconds)
    one_s, five_s = min(one_times), min(five_times)
    clear_teacher_cache()
    with dpsklearn.config_context(teacher_cache=None):
        uncached_s, uncached = run(epsilons)
    scores = five.cv_results_["mean_test_score"]
    return {
        "folds": 3,
        "epsilons": epsilons,
        "teachers_per_fold": int(np.floor(len(y_train) * 2 / 3))
        // config["search_shard_rows"],
        "one_value_s": one_s,
        "one_value_runs_s": one_times,
        "five_values_s": five_s,
        "five_values_runs_s": five_times,
        "ratio": five_s / one_s,
        "five_values_uncached_s": uncached_s,
        "uncached_ratio": uncached_s / one_s,
        "identical_scores": bool(
            np.array_equal(scores, uncached.cv_results_["mean_test_score"])
            and all(
                np.array_equal(
                    five.cv_results_[f"split{i}_test_score"],
                    uncached.cv_results_[f"split{i}_test_score"],
                )
                for i in range(3)
            )
            and one.cv_results_["mean_test_score"][0] == scores[1]
        ),
        "mean_test_score": [float(s) for s in scores],
    }


# -- 5. the demo ----------


def demo():
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dpsklearn", "demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return {"seconds": time.perf_counter() - start, "output": done.stdout}


# -- report ----------


def rows_of(result):
    t, a, h, s = (result[key] for key in ("trees", "adult", "halting", "search"))
    rows = [
        {
            "target": f"fit, k={t['k']} trees, n={t['n']:,}",
            "baseline": "BaggingClassifier.fit",
            "baseline_s": t["bagging_fit_s"],
            "ours_s": t["fit_s"],
            "ratio": t["fit_ratio"],
            "goal": GOALS["trees_fit"],
        },
        {
            "target": f"predict {t['m']:,} queries, k={t['k']} trees",
            "baseline": "BaggingClassifier.predict, same teachers",
            "baseline_s": t["bagging_predict_s"],
            "ours_s": t["predict_s"],
            "ratio": t["predict_ratio"],
            "goal": GOALS["trees_predict"],
        },
        {
            "target": "same, SubsampleAggregate answering chunk by chunk",
            "baseline": "BaggingClassifier.predict, same teachers",
            "baseline_s": t["bagging_predict_s"],
            "ours_s": t["streamed_predict_s"],
            "ratio": t["streamed_predict_ratio"],
            "goal": None,
        },
        {
            "target": f"Adult: predict {a['m']:,} queries, k={a['k']} forests",
            "baseline": "every teacher's predict once",
            "baseline_s": a["teachers_own_s"],
            "ours_s": a["predict_s"],
            "ratio": a["predict_ratio"],
            "goal": GOALS["adult_predict"],
        },
        {
            "target": "same, n_jobs=None",
            "baseline": "every teacher's predict once",
            "baseline_s": a["teachers_own_s"],
            "ours_s": a["serial_predict_s"],
            "ratio": a["serial_predict_ratio"],
            "goal": None,
        },
    ]
    if "dask_first_predict_s" in a:
        rows += [
            {
                "target": "same on a 2-worker Dask LocalCluster, 1st call",
                "baseline": "every teacher's predict once",
                "baseline_s": a["teachers_own_s"],
                "ours_s": a["dask_first_predict_s"],
                "ratio": a["dask_first_predict_s"] / a["teachers_own_s"],
                "goal": None,
            },
            {
                "target": "same, 2nd call (teachers already on the workers)",
                "baseline": "every teacher's predict once",
                "baseline_s": a["teachers_own_s"],
                "ours_s": a["dask_second_predict_s"],
                "ratio": a["dask_second_predict_s"] / a["teachers_own_s"],
                "goal": None,
            },
        ]
    rows += [
        {
            "target": f"halts after {h['served_rows']} of {h['m']:,} queries "
            f"({h['answered_rows']} answered), k={h['k']} trees",
            "baseline": f"counting all {h['m']:,} rows' votes",
            "baseline_s": h["count_all_votes_s"],
            "ours_s": h["predict_s"],
            "ratio": h["predict_ratio"],
            "goal": GOALS["halt_predict"],
        },
        {
            "target": f"GridSearchCV, 5 epsilons x 3 folds, ~{s['teachers_per_fold']} "
            "teachers",
            "baseline": "the same search over 1 epsilon",
            "baseline_s": s["one_value_s"],
            "ours_s": s["five_values_s"],
            "ratio": s["ratio"],
            "goal": GOALS["search"],
        },
        {
            "target": "same, teacher_cache=None (before)",
            "baseline": "the same search over 1 epsilon",
            "baseline_s": s["one_value_s"],
            "ours_s": s["five_values_uncached_s"],
            "ratio": s["uncached_ratio"],
            "goal": None,
        },
    ]
    if "demo" in result:
        rows.append(
            {
                "target": "python -m dpsklearn demo",
                "baseline": "-",
                "baseline_s": None,
                "ours_s": result["demo"]["seconds"],
                "ratio": None,
                "goal": None,
            }
        )
    return rows


def write(result, out_dir, quick):
    out_dir = Path(out_dir)
    name = "teacher_inference_quick" if quick else "teacher_inference"
    write_json(out_dir / f"{name}.json", result)
    rows = rows_of(result)
    columns = [
        ("target", "target", "", "l"),
        ("baseline", "baseline", "", "l"),
        ("baseline (s)", "baseline_s", ".2f", "r"),
        ("dpsklearn (s)", "ours_s", ".2f", "r"),
        ("ratio", "ratio", ".3f", "r"),
        ("goal", lambda r: None if r["goal"] is None else f"<= {r['goal']:g}", "", "r"),
    ]
    h, s, a = result["halting"], result["search"], result["adult"]
    lines = [
        "# Teachers' inference, fit and reuse against scikit-learn",
        "",
        f"`{result['command']}`; n_jobs={N_JOBS}, BLAS one thread, median of "
        f"{result['config']['repeats']} interleaved repeats, "
        f"load {result['environment']['load_average_1min']} at the start.",
        "",
        *markdown_table(rows, columns),
        "",
        f"Answers identical with n_jobs=None: {a['serial_identical']}"
        + (f"; on Dask: {a['dask_identical']}" if "dask_identical" in a else "")
        + f". The early-halting model: {h['predict_ms_per_answered_row']:.2f} ms "
        f"of predict per answered row. Search scores identical with and without "
        f"the teacher cache: {s['identical_scores']}.",
    ]
    if "demo" in result:
        lines += [
            "",
            f"The demo took {result['demo']['seconds']:.1f} s "
            f"(goal <= {GOALS['demo_seconds']:g} s):",
            "",
            "```",
            result["demo"]["output"].rstrip(),
            "```",
        ]
    lines += ["", f"![ratios]({name}.png)", ""]
    write_markdown(out_dir / f"{name}.md", lines)
    plot(rows, out_dir / f"{name}.png")


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(shown) + 1.2))
    y = np.arange(len(shown))[::-1]
    ax.barh(y, [r["ratio"] for r in shown], color="#4c72b0")
    for yi, r in zip(y, shown, strict=True):
        if r["goal"] is not None:
            ax.plot([r["goal"]] * 2, [yi - 0.4, yi + 0.4], color="#c44e52", lw=2)
    ax.set_yticks(y, [r["target"] for r in shown], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("time / baseline (log scale); red: goal")
    ax.set_title("dpsklearn teachers: time relative to the baseline")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    args = cli(__doc__, argv, quick_help="small k and rows, no Dask, no demo")
    config = QUICK if args.quick else FULL
    result = {
        "environment": environment(),
        "command": command("teacher_inference.py", "--quick" if args.quick else ""),
        "config": config,
        "goals": GOALS,
    }
    with threadpool_limits(1), dpsklearn.config_context(teacher_cache=None):
        for name, step in (("trees", trees), ("adult", adult_forests)):
            print(f"{name} (load {load_average()})", file=sys.stderr, flush=True)
            result[name] = step(config)
            print(json.dumps(result[name], indent=1), file=sys.stderr, flush=True)
        print(f"halting (load {load_average()})", file=sys.stderr, flush=True)
        result["halting"] = halting(config)
    print(f"search (load {load_average()})", file=sys.stderr, flush=True)
    with threadpool_limits(1):
        result["search"] = search(config)
    if config["demo"]:
        result["demo"] = demo()
    result["environment"]["load_average_1min_end"] = load_average()
    print(json.dumps({k: v for k, v in result.items() if k != "demo"}, indent=1))
    write(result, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
