"""How much faster is the fused linear vote path than asking every teacher?

End-to-end ``SubsampleAggregateClassifier.predict`` on 100,000 queries with
k = 100 teachers, each ``Pipeline(StandardScaler, LogisticRegression)``, on
the bundled Adult data one-hot encoded (108 columns): the fused path the
estimator takes by itself (the scalers folded into the coefficients, all
teachers' scores from one matrix multiply per query chunk) against the
per-teacher path (every teacher's own ``predict``; the fitted model with its
fused path removed, since ``fused=`` left the estimator in 0.2). Both models
are fitted with the same ``random_state``, so they hold identical teachers;
the benchmark checks that their vote counts are identical on every query.
Timings are interleaved in one process, median of several repeats, each on a
fresh copy of the fitted model (full budget).
The mechanism is the sparse vector test at a budget where nearly every row
passes (as in ``predict_overhead.py``: a speed test, not a recommendation).

A second row does the same for teachers that read the Adult DataFrame with
its string columns: ``Pipeline(ColumnTransformer(OneHotEncoder(
handle_unknown="ignore") on the eight string columns, StandardScaler on the
six numeric ones), LogisticRegression(solver="liblinear"))``. The fused path
encodes each query chunk once on the union of the teachers' categories
(:mod:`dpsklearn.teachers._fused_columns`); the per-teacher path runs every
teacher's ColumnTransformer on the DataFrame.

BLAS threads are limited to ``--blas-threads`` (default 1) for both paths:
on a shared machine oversubscribed BLAS threads dominate and vary, and the
fused path uses one thread anyway.

Usage::

    python benchmarks/fused_speed.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import copy
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

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

GOAL = 15.0


def load_data(n_queries, seed=0):
    train = load_adult(subset="train")
    allrows = load_adult(subset="all")
    encoder = adult_encoder(train).fit(train.data)
    X_train = encoder.transform(train.data)
    rng = np.random.RandomState(seed)
    rows = rng.randint(allrows.data.shape[0], size=n_queries)
    X_query = encoder.transform(allrows.data[rows])
    return X_train, train.target, X_query, np.asarray(train.target_names)


def load_frames(n_queries, seed=0):
    """Adult as DataFrames with string columns (the same query rows)."""
    train = load_adult(subset="train", as_frame=True)
    allrows = load_adult(subset="all", as_frame=True)
    categorical = [train.feature_names[j] for j in train.categorical_features]

    def strings(frame):
        frame = frame.copy()
        for name in categorical:
            frame[name] = frame[name].astype(str).astype(object)
        return frame

    rng = np.random.RandomState(seed)
    rows = rng.randint(len(allrows.target), size=n_queries)
    X_query = strings(allrows.data.iloc[rows]).reset_index(drop=True)
    return (
        strings(train.data),
        np.asarray(train.target).astype(str),
        X_query,
        (
            categorical,
            [c for c in train.feature_names if c not in categorical],
        ),
    )


def scaled_logistic():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))


def column_transformer_logistic(columns):
    categorical, numeric = columns
    return make_pipeline(
        ColumnTransformer(
            [
                ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical),
                ("numeric", StandardScaler(), numeric),
            ]
        ),
        LogisticRegression(solver="liblinear"),
    )


def fit_model(teacher, X_train, y_train, classes, n_estimators, fused):
    model = SubsampleAggregateClassifier(
        teacher,
        n_estimators=n_estimators,
        epsilon=1e7,
        delta=1e-5,
        mechanism=SparseVector(max_unstable=5000, fallback="abstain"),
        classes=classes,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    if not fused:
        # The per-teacher path: the votes of every teacher's own predict.
        model._fused_ensemble_ = None
    return model


def timed_predict(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BudgetCopyWarning: the copy is the point
        fresh = copy.deepcopy(model)  # unused copy: full budget, fresh noise
    start = time.perf_counter()
    _, abstained = fresh.predict(X, return_abstained=True)
    return time.perf_counter() - start, int(abstained.sum())


def measure(n_queries, n_estimators, repeats, case="array"):
    if case == "array":
        X_train, y_train, X_query, classes = load_data(n_queries)
        teacher = scaled_logistic()
        dataset = "adult (one-hot, bundled)"
        teacher_name = "Pipeline(StandardScaler, LogisticRegression)"
    else:
        X_train, y_train, X_query, columns = load_frames(n_queries)
        classes = np.array(["<=50K", ">50K"])
        teacher = column_transformer_logistic(columns)
        dataset = "adult (DataFrame, 8 string columns)"
        teacher_name = (
            "Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler), "
            "LogisticRegression)"
        )
    fused = fit_model(teacher, X_train, y_train, classes, n_estimators, True)
    plain = fit_model(teacher, X_train, y_train, classes, n_estimators, False)
    assert fused._fused_ensemble_ is not None and plain._fused_ensemble_ is None
    identical = bool(
        np.array_equal(fused._vote_counts(X_query), plain._vote_counts(X_query))
    )
    fused_times, plain_times, failures = [], [], []
    for _ in range(repeats):
        seconds, failed = timed_predict(plain, X_query)
        plain_times.append(seconds)
        seconds, failed = timed_predict(fused, X_query)
        fused_times.append(seconds)
        failures.append(failed)
    t_fused = float(np.median(fused_times))
    t_plain = float(np.median(plain_times))
    return {
        "dataset": dataset,
        "n_queries": n_queries,
        "n_estimators": n_estimators,
        "teacher": teacher_name,
        "n_features": int(X_query.shape[1]),
        "repeats": repeats,
        "identical_votes": identical,
        "failures": int(np.median(failures)),
        "per_teacher_seconds": t_plain,
        "fused_seconds": t_fused,
        "per_teacher_queries_per_second": n_queries / t_plain,
        "fused_queries_per_second": n_queries / t_fused,
        "speedup": t_plain / t_fused,
        "goal": GOAL,
    }


def write(result, out_dir):
    out_dir = Path(out_dir)
    write_json(out_dir / "fused_speed.json", result, trailing_newline=False)
    env = result["environment"]
    row = (
        "| {dataset} | {n_queries} | {n_estimators} | {teacher} | {n_features} | "
        "{identical_votes} | {per_teacher_seconds:.3f} | {fused_seconds:.3f} | "
        "{per_teacher_queries_per_second:,.0f} | {fused_queries_per_second:,.0f} | "
        "{speedup:.1f}x | >= {goal:g}x |"
    )
    lines = [
        "# Fused linear vote path vs per-teacher path (end-to-end predict)",
        "",
        "| dataset | queries | k | teacher | input columns | identical votes | "
        "per-teacher (s) | fused (s) | per-teacher q/s | fused q/s | speed-up | "
        "goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[row.format(**case) for case in result["cases"]],
        "",
        "Median of {repeats} interleaved repeats in one process, BLAS threads "
        "limited to {blas_threads}; {cpus} CPUs, load average {load} at the "
        "start; numpy {numpy}, scikit-learn {sklearn}, Python {python}. "
        "The DataFrame row's teachers learn their categories on their own "
        "shards (the fused path encodes on the union). "
        "Command: `{command}`.".format(
            repeats=result["cases"][0]["repeats"],
            blas_threads=result["blas_threads"],
            cpus=env["cpus"],
            load=round(env["load_average_1min"], 1),
            numpy=env["numpy"],
            sklearn=env["scikit_learn"],
            python=env["python"],
            command=result["command"],
        ),
        "",
    ]
    write_markdown(out_dir / "fused_speed.md", lines)


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="10,000 queries, 3 repeats",
        add_arguments=lambda p: p.add_argument("--blas-threads", type=int, default=1),
    )
    n_queries, repeats = (10_000, 3) if args.quick else (100_000, 5)
    env = environment()  # the load average at the start
    with threadpool_limits(args.blas_threads, user_api="blas"):
        cases = [
            measure(n_queries, 100, repeats, case)
            for case in ("array", "column_transformer")
        ]
    result = {
        "cases": cases,
        "blas_threads": args.blas_threads,
        "environment": env,
        "command": command("fused_speed.py", "--quick" if args.quick else ""),
    }
    print(json.dumps(result, indent=2))
    write(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
