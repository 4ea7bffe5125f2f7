"""The demo: private prediction on the bundled UCI Adult data.

``python -m dpsklearn demo`` fits private models on the Adult training file
(32,561 rows, private), answers 2,000 held-out queries from the test file
(public query points), and prints one row per setting beside the figures
that keep it honest: the base rate, the non-private majority vote of the
same teachers and a non-private model on all rows.

The data are a pandas DataFrame with the eight categorical columns as
strings, as a CSV reader gives them; each teacher one-hot encodes and
scales its own shard in a ``ColumnTransformer`` (:func:`frame_teacher`).
Without pandas the demo falls back to the pre-encoded array
(:func:`adult_encoder`, :func:`teacher_estimator`).
"""

from __future__ import annotations

import argparse
import re
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from .baselines import base_rate, teacher_majority_vote
from .datasets import load_adult
from .ensemble import (
    KnowledgeTransferClassifier,
    PrivatePredictionClassifier,
    SoftLabelPrivateRegressor,
    SubsampleAggregateClassifier,
)
from .exceptions import PrivacyLeakWarning
from .mechanisms import SoftLabelHistogram, SparseVector

__all__: list[str] = []

# Rows per shard: 30 gives 1,085 teachers on the 32,561 training rows. Every
# model of the demo has the same rows, teacher, number of teachers and
# random_state, so the teachers are fitted once and reused by the others (only
# privacy parameters differ; the teacher cache, dpsklearn.teachers); with the
# fused vote path of linear teachers this keeps the demo within 30 s on 2 cores.
SHARD_ROWS = 30


def adult_encoder(bunch):
    """A data-independent encoder for Adult: one-hot with the public category lists.

    Fitting it learns nothing from the rows (the categories are given and
    numeric columns pass through), so it may sit in front of a private model.
    Scaling, which does learn from data, belongs inside each teacher.
    """
    categorical = list(bunch.categorical_features)
    numeric = [i for i in range(len(bunch.feature_names)) if i not in categorical]
    categories = [
        list(range(len(bunch.categories[bunch.feature_names[i]]))) for i in categorical
    ]
    return ColumnTransformer(
        [
            ("categorical", OneHotEncoder(categories=categories), categorical),
            ("numeric", "passthrough", numeric),
        ],
        sparse_threshold=0.0,
    )


def teacher_estimator():
    """Each teacher scales its own shard, so scaling stays inside the guarantee.

    liblinear: on shards of tens of rows it fits in a few milliseconds, about
    ten times less CPU than lbfgs, which matters with a thousand teachers.
    """
    return make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))


def adult_frames(train, test):
    """The Adult DataFrames with the categorical columns as plain strings.

    Parameters
    ----------
    train, test : Bunch
        From ``load_adult(as_frame=True)``.

    Returns
    -------
    X_train, X_test : DataFrame
    strings, numbers : list of str
        The string and the numeric column names.
    """
    strings = [train.feature_names[j] for j in train.categorical_features]
    numbers = [name for name in train.feature_names if name not in strings]

    def as_strings(frame):
        frame = frame.copy()
        for name in strings:
            frame[name] = frame[name].astype(str).astype(object)
        return frame

    return as_strings(train.data), as_strings(test.data), strings, numbers


def frame_teacher(strings, numbers, final=None):
    """A teacher that reads the DataFrame: one-hot and scaling on its own shard.

    ``handle_unknown="ignore"``: a shard of 30 rows misses rare categories,
    and a query holding one must not make its teacher raise. The teachers
    take the fused vote path (one encoding, one matrix product for all).
    """
    final = LogisticRegression(solver="liblinear") if final is None else final
    return make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), strings),
            (StandardScaler(), numbers),
        ),
        final,
    )


def _row(name, k, epsilon, delta, labels, abstained, y_query, extra):
    answered = ~abstained
    n_answered = int(answered.sum())
    return {
        "estimator": name,
        "k": k,
        "epsilon": epsilon,
        "delta": delta,
        "answered": n_answered / len(y_query),
        "acc_answered": float(np.mean(labels[answered] == y_query[answered]))
        if n_answered
        else float("nan"),
        "acc_all": float(np.mean(np.where(answered, labels == y_query, False))),
        **extra,
    }


def _settings(
    classes, n_queries, delta, random_state, teacher_estimator, n_teachers, full=False
):
    """(name, epsilon, factory) per demo row; every model is a new fit.

    The default is one row per classifier plus the sparse vector at epsilon
    1 and 8 (within 30 s on 2 cores: the teachers are fitted once and
    reused); ``full`` adds epsilon 8 for the Confident-GNMax and
    exponential-mechanism rows, and the soft-label regressor.
    """
    more = (1.0, 8.0) if full else (1.0,)
    common = {
        "classes": classes,
        "random_state": random_state,
        "n_jobs": -1,
        "n_estimators": n_teachers,
    }
    rows = []
    for epsilon in (1.0, 8.0):
        rows.append(
            (
                "SubsampleAggregate sparse vector",
                epsilon,
                lambda eps: SubsampleAggregateClassifier(
                    teacher_estimator(),
                    epsilon=eps,
                    delta=delta,
                    mechanism=SparseVector(max_unstable=100, fallback="noisy_max"),
                    **common,
                ),
            )
        )
    for epsilon in more:
        rows.append(
            (
                "SubsampleAggregate Confident-GNMax",
                epsilon,
                lambda eps: SubsampleAggregateClassifier(
                    teacher_estimator(),
                    epsilon=eps,
                    delta=delta,
                    mechanism="confident_gnmax",
                    max_queries=n_queries,
                    **common,
                ),
            )
        )
    for epsilon in more:
        rows.append(
            (
                "PrivatePrediction exp. mechanism",
                epsilon,
                lambda eps: PrivatePredictionClassifier(
                    teacher_estimator(),
                    epsilon=eps,
                    delta=delta,
                    max_queries=n_queries,
                    **common,
                ),
            )
        )
    if not full:
        # The soft-label regressor's teachers differ from the classifiers'
        # (fitted on 0/1 targets), so its row refits every teacher: a third
        # of the demo's time for a row that answers little at this size.
        return rows
    rows.append(
        (
            "SoftLabel (P(>50K) > 1/2)",
            8.0,
            lambda eps: SoftLabelPrivateRegressor(
                teacher_estimator(),
                epsilon=eps,
                delta=delta,
                mechanism=SoftLabelHistogram(gamma=0.1, max_unstable=100),
                n_estimators=n_teachers,
                random_state=random_state,
                n_jobs=-1,
            ),
        )
    )
    return rows


def _answer(model, name, X_train, y_train, X_query, classes):
    """Fit ``model`` and answer the queries: (labels, abstained, halted_after)."""
    if name.startswith("SoftLabel"):
        model.fit(X_train, (y_train == classes[1]).astype(np.int64))
        values, abstained = model.predict(X_query, return_abstained=True)
        labels = np.where(values > 0.5, classes[1], classes[0])
        return labels, abstained, model.budget_status().n_answered
    model.fit(X_train, y_train)
    # The table shows what the mechanism answered: rows the student of the
    # released answers took over count as not answered here.
    labels, source = model.predict(X_query, return_source=True)
    abstained = source != "private"
    status = model.budget_status()
    halted = status.n_answered
    return labels, abstained, halted


def run_demo(n_queries=2000, delta=1e-5, random_state=0, progress=None, full=False):
    """Fit and query every private model; return the table rows (dicts).

    Parameters
    ----------
    n_queries : int, default=2000
        Query rows answered by each model (the Adult test rows).
    delta : float, default=1e-5
    random_state : int, default=0
        Seeds the partitions and the teachers.
    progress : callable, optional
        Called with each row (a dict) as its model finishes.
    full : bool, default=False
        Also run epsilon 8 for the mechanisms that answer little at 1.

    Returns
    -------
    rows : list of dict
        One row per model: what it answered, its accuracy and its spend.
    """
    try:
        train = load_adult(subset="train", as_frame=True)
        test = load_adult(subset="test", as_frame=True)
    except ImportError:  # no pandas: the pre-encoded array
        train, test = load_adult(subset="train"), load_adult(subset="test")
        encoder = adult_encoder(train).fit(train.data)
        X_train, X_test = encoder.transform(train.data), encoder.transform(test.data)
        teacher, student = (
            teacher_estimator,
            lambda: make_pipeline(StandardScaler(), LogisticRegression(C=0.1)),
        )
    else:
        X_train, X_test, strings, numbers = adult_frames(train, test)

        def teacher():
            return frame_teacher(strings, numbers)

        def student():
            return frame_teacher(strings, numbers, LogisticRegression(C=0.1))

    y_train = np.asarray(train.target).astype(str)
    y_test = np.asarray(test.target).astype(str)
    rng = np.random.RandomState(random_state)
    query_rows = rng.choice(len(y_test), size=n_queries, replace=False)
    X_query, y_query = _rows(X_test, query_rows), y_test[query_rows]
    classes = np.asarray(train.target_names)

    full_model = teacher().fit(X_train, y_train)
    reference = {
        "base_rate": base_rate(y_train, y_query),
        "full_model": float(np.mean(full_model.predict(X_query) == y_query)),
    }
    rows = []
    n_teachers = len(y_train) // SHARD_ROWS
    settings = _settings(
        classes, n_queries, delta, random_state, teacher, n_teachers, full
    )
    for name, epsilon, factory in settings:
        start = time.perf_counter()
        model = factory(epsilon)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            labels, abstained, halted = _answer(
                model, name, X_train, y_train, X_query, classes
            )
        seconds = time.perf_counter() - start
        if name.startswith("SoftLabel"):
            vote = np.full(n_queries, np.nan)  # a soft-label ensemble has no vote
            teacher_vote = float("nan")
        else:
            vote = teacher_majority_vote(model, X_query)
            teacher_vote = float(np.mean(vote == y_query))
        rows.append(
            _row(
                name,
                model.n_estimators_,
                epsilon,
                delta,
                labels,
                abstained,
                y_query,
                {
                    **reference,
                    "teacher_vote": teacher_vote,
                    "halted_after": halted,
                    "seconds": seconds,
                },
            )
        )
        if progress is not None:
            progress(rows[-1])
    public = np.setdiff1d(np.arange(len(y_test)), query_rows)[:n_queries]
    rows.append(
        _knowledge_transfer_row(
            _rows(X_test, public),
            X_train,
            y_train,
            X_query,
            y_query,
            classes,
            delta,
            random_state,
            reference,
            teacher,
            student,
        )
    )
    if progress is not None:
        progress(rows[-1])
    return rows


def _rows(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _knowledge_transfer_row(
    X_public,
    X_train,
    y_train,
    X_query,
    y_query,
    classes,
    delta,
    random_state,
    reference,
    teacher_estimator,
    student_estimator,
):
    """A student on public rows labelled by a private teacher: publishable.

    The configuration ``benchmarks/real_data_targets.py`` chose on a
    validation split: the teacher labels three quarters of the public rows,
    asked in five rounds where the student is least sure
    (``query_strategy="uncertainty"``), and a regularised logistic regression
    learns from them.
    """
    epsilon = 1.0
    start = time.perf_counter()
    teacher = PrivatePredictionClassifier(
        teacher_estimator(),
        epsilon=epsilon,
        delta=delta,
        max_queries=(3 * X_public.shape[0]) // 4,
        classes=classes,
        random_state=random_state,
        n_jobs=-1,
        n_estimators=X_train.shape[0] // SHARD_ROWS,
    )
    student = student_estimator()
    model = KnowledgeTransferClassifier(
        teacher,
        student,
        query_strategy="uncertainty",
        n_rounds=5,
        random_state=random_state,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X_train, y_train, X_public=X_public)
    labels = model.predict(X_query)  # free: the student is post-processing
    seconds = time.perf_counter() - start
    # The non-private majority vote of the same teachers (same partition and
    # teachers: same random_state), for the honest reference column only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        same_teachers = clone(teacher).fit(X_train, y_train)
    vote = float(np.mean(teacher_majority_vote(same_teachers, X_query) == y_query))
    return _row(
        "KT student (PP teacher, uncertainty)",
        same_teachers.n_estimators_,
        epsilon,
        delta,
        labels,
        np.zeros(len(y_query), dtype=bool),
        y_query,
        {
            **reference,
            "teacher_vote": vote,
            "halted_after": "-",
            "seconds": seconds,
        },
    )


COLUMNS = [
    ("estimator", "{:<38}"),
    ("k", "{!s:>5}"),
    ("epsilon", "{:>7g}"),
    ("delta", "{:>7.0e}"),
    ("answered", "{:>8.1%}"),
    ("acc_answered", "{:>12.3f}"),
    ("acc_all", "{:>7.3f}"),
    ("base_rate", "{:>9.3f}"),
    ("teacher_vote", "{:>12.3f}"),
    ("full_model", "{:>10.3f}"),
    ("halted_after", "{!s:>12}"),
    ("seconds", "{:>7.1f}"),
]


def _width(fmt):
    return int(re.findall(r"\d+", fmt.split(":")[1])[0])


def format_header():
    return " ".join(
        f"{name:<{_width(fmt)}}" if i == 0 else f"{name:>{_width(fmt)}}"
        for i, (name, fmt) in enumerate(COLUMNS)
    )


def format_row(row):
    return " ".join(fmt.format(row[name]) for name, fmt in COLUMNS)


def format_table(rows):
    return "\n".join([format_header()] + [format_row(row) for row in rows])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dpsklearn")
    parser.add_argument("command", choices=["demo"])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument(
        "--full",
        action="store_true",
        help="also epsilon 8 for every estimator, and the soft-label regressor",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    print(
        "dpsklearn demo: UCI Adult, private training file (32,561 rows), "
        f"{args.queries} public queries from the test file.\n"
        "answered = queries not abstained; acc_all counts abstentions as wrong; "
        "teacher_vote is the NON-private majority vote of the same teachers; "
        "full_model a non-private model on all rows; halted_after = queries "
        "answered before the model halted. "
        "The KnowledgeTransfer student was trained on public rows labelled by a "
        "private teacher; its predictions are free. seconds = fit and answers; "
        "the teachers are fitted by the first model and reused by the others "
        "(same rows, teacher and random_state: only privacy parameters differ).\n",
        flush=True,
    )
    start = time.perf_counter()
    print(format_header(), flush=True)
    run_demo(
        n_queries=args.queries,
        progress=lambda row: print(format_row(row), flush=True),
        full=args.full,
    )
    print(f"\ntotal {time.perf_counter() - start:.1f} s")
    return 0
