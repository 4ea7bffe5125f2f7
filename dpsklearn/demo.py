"""The demo: private prediction on the bundled UCI Adult data.

``python -m dpsklearn demo`` fits private models on the Adult training file
(32,561 rows, private), answers 2,000 held-out queries from the test file
(public query points), and prints one row per setting beside the figures
that keep it honest: the base rate, the non-private majority vote of the
same teachers and a non-private model on all rows.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from .baselines import base_rate, teacher_majority_vote
from .datasets import load_adult
from .exceptions import PrivacyLeakWarning
from .subsample_aggregate import SubsampleAggregateClassifier

__all__ = ["adult_encoder", "main", "run_demo"]

ABSTAIN = "abstain"


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
    """Each teacher scales its own shard, so scaling stays inside the guarantee."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))


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


def run_demo(n_queries=2000, epsilons=(1.0, 8.0), delta=1e-5, random_state=0):
    """Fit and query the private models; return the table rows (dicts)."""
    train = load_adult(subset="train")
    test = load_adult(subset="test")
    encoder = adult_encoder(train).fit(train.data)
    X_train = encoder.transform(train.data)
    y_train = train.target
    rng = np.random.RandomState(random_state)
    query_rows = rng.choice(test.data.shape[0], size=n_queries, replace=False)
    X_query = encoder.transform(test.data[query_rows])
    y_query = test.target[query_rows]
    classes = np.asarray(train.target_names)

    full_model = teacher_estimator().fit(X_train, y_train)
    reference = {
        "base_rate": base_rate(y_train, y_query),
        "full_model": float(np.mean(full_model.predict(X_query) == y_query)),
    }
    rows = []
    for epsilon in epsilons:
        start = time.perf_counter()
        model = SubsampleAggregateClassifier(
            teacher_estimator(),
            n_estimators="auto",
            epsilon=epsilon,
            delta=delta,
            max_unstable=100,
            fallback="noisy_max",
            abstain_label=ABSTAIN,
            on_exhausted="abstain",
            classes=classes,
            random_state=random_state,
            n_jobs=-1,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.fit(X_train, y_train)
        labels, abstained = model.predict(X_query, return_abstained=True)
        seconds = time.perf_counter() - start
        vote = teacher_majority_vote(model, X_query)
        rows.append(
            _row(
                f"SubsampleAggregate ({model.calibration_}, T=100)",
                model.n_estimators_,
                epsilon,
                delta,
                labels,
                abstained,
                y_query,
                {
                    **reference,
                    "teacher_vote": float(np.mean(vote == y_query)),
                    "halted_after": model.budget_status()["n_answered"],
                    "seconds": seconds,
                },
            )
        )
    return rows


COLUMNS = [
    ("estimator", "{:<34}"),
    ("k", "{:>5}"),
    ("epsilon", "{:>7g}"),
    ("delta", "{:>7.0e}"),
    ("answered", "{:>8.1%}"),
    ("acc_answered", "{:>12.3f}"),
    ("acc_all", "{:>7.3f}"),
    ("base_rate", "{:>9.3f}"),
    ("teacher_vote", "{:>12.3f}"),
    ("full_model", "{:>10.3f}"),
    ("halted_after", "{:>12}"),
    ("seconds", "{:>7.1f}"),
]


def format_table(rows):
    header = " ".join(
        f"{name:>{len(fmt.format(rows[0][name]))}}" if rows else name
        for name, fmt in COLUMNS
    )
    lines = [header]
    for row in rows:
        lines.append(" ".join(fmt.format(row[name]) for name, fmt in COLUMNS))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dpsklearn")
    parser.add_argument("command", choices=["demo"])
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    print(
        "dpsklearn demo: UCI Adult, private training file (32,561 rows), "
        f"{args.queries} public queries from the test file.\n"
        "answered = queries not abstained; acc_all counts abstentions as wrong; "
        "teacher_vote is the NON-private majority vote of the same teachers; "
        "full_model a non-private model on all rows. halted_after = queries "
        "answered before the model halted.\n"
    )
    rows = run_demo(n_queries=args.queries)
    print(format_table(rows))
    return 0
