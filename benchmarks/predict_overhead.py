"""How much does privacy add to prediction time?

Ratio of ``SubsampleAggregateClassifier.predict`` (votes, distances, the
sparse vector engine, noise) to the teachers' own evaluation (calling every
teacher's ``predict`` on the same queries), both measured in this process,
interleaved, median of several repeats. Setting: k = 100 LogisticRegression
teachers on the bundled Adult data one-hot encoded (108 columns), 100,000
queries, with epsilon and T chosen so that nearly every row passes the
stability test (a speed test: the budget is not a recommendation).

Usage::

    python benchmarks/predict_overhead.py [--quick] [--out docs/benchmarks]
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
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

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


def load_queries(n_queries, seed=0):
    train = load_adult(subset="train")
    allrows = load_adult(subset="all")
    encoder = adult_encoder(train).fit(train.data)
    X_train = encoder.transform(train.data)
    rng = np.random.RandomState(seed)
    rows = rng.randint(allrows.data.shape[0], size=n_queries)
    X_query = encoder.transform(allrows.data[rows])
    return X_train, train.target, X_query, np.asarray(train.target_names)


def fit_model(X_train, y_train, classes, n_estimators, epsilon, max_unstable, fused):
    model = SubsampleAggregateClassifier(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)),
        n_estimators=n_estimators,
        epsilon=epsilon,
        delta=1e-5,
        mechanism=SparseVector(max_unstable=max_unstable, fallback="abstain"),
        classes=classes,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    if not fused:
        # The per-teacher path: every teacher's own predict (the estimator
        # takes the fused path by itself for linear teachers).
        model._fused_ensemble_ = None
    return model


def teachers_own_evaluation(model, X, assume_finite):
    # assume_finite=True is the strict baseline: the private path validates X
    # once and lets the teachers skip their own finiteness checks, so the
    # baseline gets the same saving.
    with config_context(assume_finite=assume_finite):
        return [teacher.predict(X) for teacher in model.estimators_]


def measure(n_queries, n_estimators, repeats, epsilon, max_unstable):
    X_train, y_train, X_query, classes = load_queries(n_queries)
    baseline_times, plain_times, private_times, fused_times = [], [], [], []
    failures = []
    # The overhead is measured on the per-teacher path, which
    # evaluates exactly the teachers the baseline evaluates; the fused path for
    # linear teachers is reported beside it. Fitted once; each repeat predicts
    # with a fresh copy, so every private run starts with a full budget and an
    # empty release cache (the copies' budgets are a benchmark's, not a
    # release's; the fit itself is not timed).
    fitted = fit_model(
        X_train, y_train, classes, n_estimators, epsilon, max_unstable, False
    )
    fitted_fused = fit_model(
        X_train, y_train, classes, n_estimators, epsilon, max_unstable, True
    )
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, fused_model = copy.deepcopy(fitted), copy.deepcopy(fitted_fused)
        start = time.perf_counter()
        teachers_own_evaluation(model, X_query, assume_finite=True)
        baseline_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        teachers_own_evaluation(model, X_query, assume_finite=False)
        plain_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        _, abstained = model.predict(X_query, return_abstained=True)
        private_times.append(time.perf_counter() - start)
        failures.append(int(abstained.sum()))
        start = time.perf_counter()
        fused_model.predict(X_query)
        fused_times.append(time.perf_counter() - start)
    # A model that halts early: the votes of rows after the halt are never
    # computed (the serving loop asks for statistics as the engine consumes).
    halting = fit_model(X_train, y_train, classes, n_estimators, 1.0, 10, False)
    halting_times, answered = [], 0
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = copy.deepcopy(halting)
        start = time.perf_counter()
        model.predict(X_query)
        halting_times.append(time.perf_counter() - start)
        answered = model.budget_status().n_served
    baseline = float(np.median(baseline_times))
    plain = float(np.median(plain_times))
    private = float(np.median(private_times))
    fused = float(np.median(fused_times))
    return {
        "n_queries": n_queries,
        "n_estimators": n_estimators,
        "n_features": int(X_query.shape[1]),
        "epsilon": epsilon,
        "max_unstable": max_unstable,
        "calibration": model.calibration_,
        "threshold": round(model.threshold_, 3),
        "repeats": repeats,
        "failures": int(np.median(failures)),
        "pass_fraction": 1 - float(np.median(failures)) / n_queries,
        "teachers_own_seconds": baseline,
        "teachers_own_validating_seconds": plain,
        "private_predict_seconds": private,
        "ratio": private / baseline,
        "ratio_vs_validating_teachers": private / plain,
        "fused_private_predict_seconds": fused,
        "fused_ratio": fused / baseline,
        "goal": 1.10,
        "halting_answered_rows": int(answered),
        "halting_predict_seconds": float(np.median(halting_times)),
        "halting_ratio": float(np.median(halting_times)) / baseline,
        "halting_ms_per_answered_row": 1e3
        * float(np.median(halting_times))
        / max(1, answered),
    }


def write(result, out_dir):
    out_dir = Path(out_dir)
    write_json(out_dir / "predict_overhead.json", result, trailing_newline=False)
    lines = [
        "# Private predict vs the teachers' own evaluation",
        "",
        "| queries | k | features | epsilon | T | calibration | pass fraction | "
        "failures | teachers' own (s) | private predict (s) | ratio | "
        "ratio vs teachers validating their input | goal | fused path (s) | "
        "fused ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| {n_queries} | {n_estimators} | {n_features} | {epsilon:g} | "
        "{max_unstable} | {calibration} | {pass_fraction:.4f} | {failures} | "
        "{teachers_own_seconds:.3f} | "
        "{private_predict_seconds:.3f} | {ratio:.3f} | "
        "{ratio_vs_validating_teachers:.3f} | <= {goal} | "
        "{fused_private_predict_seconds:.3f} | {fused_ratio:.3f} |".format(**result),
        "",
        "A model that halts early (same teachers, epsilon 1, T = 10, the "
        "per-teacher path): {halting_answered_rows} of {n_queries} rows served "
        "in {halting_predict_seconds:.3f} s, {halting_ms_per_answered_row:.3f} ms "
        "per served row, {halting_ratio:.3f} of the teachers' own evaluation "
        "of all rows (the votes of rows after the halt are never "
        "computed).".format(**result),
        "",
        "The ratio is measured on the per-teacher path (the fitted model with "
        "its fused path removed), which evaluates exactly the teachers the "
        "baseline evaluates, so it shows what privacy adds (votes, distances, "
        "the sparse vector engine, noise). The fused path (linear teachers "
        "stacked into one matrix multiply, identical votes) is what the "
        "estimator does by itself.",
        "",
    ]
    write_markdown(out_dir / "predict_overhead.md", lines)


def main(argv=None):
    args = cli(__doc__, argv, quick_help="10,000 queries, 3 repeats")
    n_queries, repeats = (10_000, 3) if args.quick else (100_000, 5)
    env = environment()
    result = measure(n_queries, 100, repeats, epsilon=1e7, max_unstable=5000)
    result["environment"] = env
    result["command"] = command("predict_overhead.py", "--quick" if args.quick else "")
    print(json.dumps(result, indent=2))
    write(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
