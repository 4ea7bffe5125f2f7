"""Do private answers reach their targets on real data?

The targets: a knowledge-transfer student on Adult released at ``epsilon <= 1``
with test accuracy >= 0.84, and >= 90 % of Shuttle queries answered at
>= 99 % accuracy.

Two measurements, each row beside the base rate, the non-private majority
vote of the same teachers and a non-private model on all training rows:

**Adult** (bundled UCI file; private rows: the training file; public rows: the
first 2,000 rows of the test file; evaluation: the other 14,281 test rows). A
:class:`~dpsklearn.KnowledgeTransferClassifier` student is released at
``epsilon <= 1``, ``delta = 1e-5``. The configuration (teacher mechanism,
``k``, number of public rows queried ``m``, the student's query strategy
(``sequential``, or ``uncertainty`` in ``R`` rounds), Confident-GNMax
``max_answers``, student) is chosen on a validation split of the training file
only: 2,000 held-out training rows play the public rows, 6,000 more are the
validation test rows, and the teachers are fitted on the remaining 24,561
(``k`` is scaled so that shards have the size they have on the full file).
Every configuration of the sweep is shown. The sweep applies the estimators'
own mechanism code (:func:`dpsklearn.noise.exponential_mechanism` at
``epsilon_per_query_``, :class:`dpsklearn.mechanisms.ConfidentGNMaxEngine` at the
calibration ``fit`` computes) to the vote counts of one fitted ensemble per
``k``, averaged over several noise draws: the same distribution as refitting
the estimator, at a fraction of the cost. The chosen configuration is then run
once, end to end, through ``KnowledgeTransferClassifier`` on the full training
file, and its test accuracy reported once. Tuning on the (private) training
file is outside the privacy guarantee (as tuning on private data always is).

**Shuttle** (the ``river`` package's copy, target ``anomaly``; 2,000 query
rows drawn at random, the other 47,097 private), 2,000 queries at
``epsilon = 2``, ``delta = 1e-5``: every dpsklearn mechanism, end to end
through the estimators; the target is >= 90 % answered at >= 99 % accuracy
on the answered queries.

``--quick`` (for CI, under 2 minutes) runs a reduced Adult sweep and, in
place of Shuttle, the same answer-rate table on scikit-learn's breast cancer
data; it needs no package beyond the test extra.

Usage::

    python benchmarks/real_data_targets.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import SelfTrainingClassifier
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    ConfidentGNMax,
    KnowledgeTransferClassifier,
    PrivacyLeakWarning,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import per_release_epsilon
from dpsklearn.baselines import base_rate, teacher_majority_vote  # noqa: E402
from dpsklearn.datasets import load_adult  # noqa: E402
from dpsklearn.demo import adult_encoder  # noqa: E402
from dpsklearn.mechanisms import ConfidentGNMaxRelease  # noqa: E402
from dpsklearn.noise import NoiseSource, exponential_mechanism  # noqa: E402
from dpsklearn.planning import predict_regime  # noqa: E402

DELTA = 1e-5
ADULT_TARGET = 0.840
SHUTTLE_ANSWERED, SHUTTLE_ACCURACY = 0.90, 0.99

FULL = {
    "ks": (250, 500, 750, 1000, 1500, 2000),
    "epsilons": (0.5, 1.0, 2.0),
    "pp_m": (250, 500, 1000, 1500, 2000),
    # (query_strategy, n_rounds) of KnowledgeTransferClassifier; the
    # uncertainty strategy is swept for PrivatePrediction, whose labels it
    # chooses (Confident-GNMax would abstain on exactly the rows it picks).
    "pp_strategies": (("sequential", 1), ("uncertainty", 3), ("uncertainty", 5)),
    "cgn_m": (500, 1000, 2000),
    "cgn_answer_share": (1 / 8, 1 / 4, 1 / 2),
    "students": ("lr", "lr_C0.1", "self_training"),
    # Self-training refits in every round (about 1.3 s a fit): left out here.
    "uncertainty_students": ("lr", "lr_C0.1"),
    "repeats": 5,
    "shuttle_ks": (250, 500, 1000, 1500),
}
QUICK = {
    "ks": (250,),
    "epsilons": (1.0,),
    "pp_m": (1000,),
    "pp_strategies": (("sequential", 1), ("uncertainty", 5)),
    "cgn_m": (1000,),
    "cgn_answer_share": (1 / 4,),
    "students": ("lr",),
    "uncertainty_students": ("lr",),
    "repeats": 1,
    "shuttle_ks": (25,),
}


# The test rows were looked at three times (see HISTORY); this text goes
# into the Markdown so that every reader sees it.
HISTORY = (
    "Run 1 of this script (k in 100, 250, 500, 1000) chose PrivatePrediction, "
    "k = 1000, m = 2000, self-training student (validation 0.8362) and "
    "measured **0.8395** on the test rows. That choice sat on the edge of the "
    "k grid, so the grid was extended to k = 3000 and the script run again "
    "(run 2): validation chose the same configuration, and "
    "its fresh noise draw measured **0.8387** on the test rows. The test rows "
    "have been looked at twice; both figures are below 0.840. A later check "
    "on the validation split only (liblinear teacher C in 0.3, 1, 3 at k = "
    "754 and 1131) moved the student by less than its noise (0.8345 to 0.8377, "
    "+-0.004), so no third test run was made then. Run 3 (this file) follows "
    "two changes to the library, both developed on the validation split "
    "only: the per-query calibration `rdp` (the zCDP total read as an RDP "
    "curve and converted by dp_accounting, about 1.5 times the rho at "
    "epsilon = 1, so eps_q is 21 % larger; `auto` now picks it), and "
    "`KnowledgeTransferClassifier(query_strategy='uncertainty')`. The sweep "
    "above was run again with both (k in 250 to 2000, where runs 1 and 2 had "
    "put every good configuration; m up to 1,500 added; 5 noise draws "
    "instead of 3), the configuration chosen on validation as before, and "
    "the test rows looked at a third time, once: the figure at the top is "
    "that run's."
)


def teacher_estimator():
    """The teacher of every Adult row: scaling inside each teacher, liblinear.

    Pinned here (it equals ``dpsklearn.demo.teacher_estimator`` when these
    tables were measured) so that the tables stay reproducible. liblinear
    regularises the intercept too, which on shards of ~30 rows gave a
    better majority vote than lbfgs (validation, k = 754: 0.8455 vs 0.8317).
    """
    return make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))


# -- students ----------------------------------------------------------------
class SelfTrainingStudent(ClassifierMixin, BaseEstimator):
    """A semi-supervised student: self-training over a pool of public rows.

    ``fit(X, y)`` adds ``X_unlabelled`` (every public row, without its
    label: those the teacher abstained on or was not asked about among them)
    and runs scikit-learn's
    :class:`~sklearn.semi_supervised.SelfTrainingClassifier` around
    ``estimator``. Everything it sees is public or a private release, so the
    fitted student is post-processing.
    """

    def __init__(self, estimator=None, X_unlabelled=None, threshold=0.9):
        self.estimator = estimator
        self.X_unlabelled = X_unlabelled
        self.threshold = threshold

    def fit(self, X, y):
        self.classes_, y_index = np.unique(y, return_inverse=True)
        X_all, y_all = X, y_index
        if self.X_unlabelled is not None and len(self.X_unlabelled):
            X_all = np.vstack([X, self.X_unlabelled])
            y_all = np.r_[y_index, np.full(len(self.X_unlabelled), -1)]
        self.model_ = SelfTrainingClassifier(
            clone(self.estimator), threshold=self.threshold
        ).fit(X_all, y_all)
        return self

    def predict(self, X):
        return self.classes_[self.model_.predict(X)]

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


def make_student(name, X_unlabelled=None):
    if name == "lr":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    if name == "lr_C0.1":
        return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=500))
    if name == "self_training":
        return SelfTrainingStudent(make_student("lr"), X_unlabelled)
    raise ValueError(name)


# -- data --------------------------------------------------------------------
def adult_data(n_public=2000, n_val_public=2000, n_val_test=6000, seed=0):
    """Encoded Adult: the test protocol and the validation split of the train file."""
    train = load_adult(subset="train")
    test = load_adult(subset="test")
    encoder = adult_encoder(train).fit(train.data)  # data-independent encoder
    X_train = encoder.transform(train.data).astype(np.float64)
    X_test = encoder.transform(test.data).astype(np.float64)
    y_train, y_test = np.asarray(train.target), np.asarray(test.target)
    perm = np.random.RandomState(seed).permutation(len(y_train))
    val_public = perm[:n_val_public]
    val_test = perm[n_val_public : n_val_public + n_val_test]
    val_private = perm[n_val_public + n_val_test :]
    return {
        "classes": np.asarray(train.target_names),
        "X_train": X_train,
        "y_train": y_train,
        "X_public": X_test[:n_public],
        "y_public": y_test[:n_public],  # for reporting label accuracy only
        "X_eval": X_test[n_public:],
        "y_eval": y_test[n_public:],
        "val": {
            "X_private": X_train[val_private],
            "y_private": y_train[val_private],
            "X_public": X_train[val_public],
            "y_public": y_train[val_public],
            "X_eval": X_train[val_test],
            "y_eval": y_train[val_test],
        },
    }


def shuttle_data(n_queries=2000, seed=0):
    """River's Shuttle (binary ``anomaly``); ``None`` when river is missing."""
    try:
        import pandas as pd
        import river
    except ImportError:
        return None
    path = Path(river.__file__).parent / "datasets" / "shuttle.csv.gz"
    frame = pd.read_csv(path)
    X = frame.drop(columns="anomaly").to_numpy(np.float64)
    y = frame["anomaly"].to_numpy()
    perm = np.random.RandomState(seed).permutation(len(y))
    query, private = perm[:n_queries], perm[n_queries:]
    return {
        "name": f"shuttle (river {river.__version__})",
        "X_private": X[private],
        "y_private": y[private],
        "X_query": X[query],
        "y_query": y[query],
        "classes": np.array([0, 1]),
        "teacher": DecisionTreeClassifier(random_state=0),
        "teacher_name": "DecisionTreeClassifier",
    }


def breast_cancer_data(n_queries=100, seed=0):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    perm = np.random.RandomState(seed).permutation(len(y))
    query, private = perm[:n_queries], perm[n_queries:]
    return {
        "name": "breast cancer (sklearn)",
        "X_private": X[private],
        "y_private": y[private],
        "X_query": X[query],
        "y_query": y[query],
        "classes": np.array([0, 1]),
        "teacher": teacher_estimator(),
        "teacher_name": "Pipeline(StandardScaler, LogisticRegression)",
    }


# -- mechanisms on fixed votes (the estimators' own code) ----------------------
class VotesTeacher(ClassifierMixin, BaseEstimator):
    """A stand-in for a fitted ``PrivatePredictionClassifier`` (sweep only).

    It answers public rows from one fitted ensemble's vote counts with the
    estimator's own mechanism (:func:`dpsklearn.noise.exponential_mechanism`
    at the ``epsilon_per_query_`` that ``fit`` would compute), so that
    :class:`~dpsklearn.KnowledgeTransferClassifier`'s real query strategies
    run on every noise draw without refitting ``k`` teachers. The vote
    counts of ``X_public[i]`` are ``counts[i]``.
    """

    def __init__(
        self, X_public=None, counts=None, classes=None, epsilon=1.0,
        max_queries=1000, seed=0,
    ):  # fmt: skip
        self.X_public = X_public
        self.counts = counts
        self.classes = classes
        self.epsilon = epsilon
        self.max_queries = max_queries
        self.seed = seed

    def fit(self, X, y):
        self.classes_ = np.asarray(self.classes)
        self.epsilon_per_query_, self.calibration_ = per_release_epsilon(
            self.epsilon,
            DELTA,
            self.max_queries,
            release="exponential",
            calibration="auto",
        )
        self.row_index_ = {row.tobytes(): i for i, row in enumerate(self.X_public)}
        self.rng_ = np.random.default_rng(self.seed)
        self.n_served_ = 0
        return self

    def predict(self, X, return_abstained=False):
        index = np.array([self.row_index_[row.tobytes()] for row in X])
        self.n_served_ += len(index)
        if self.n_served_ > self.max_queries:  # the sweep never asks more
            raise RuntimeError("VotesTeacher asked more than max_queries rows")
        labels = exponential_mechanism(
            self.counts[index], self.epsilon_per_query_, 1.0, rng=self.rng_
        )
        return self.classes_[labels], np.zeros(len(index), dtype=bool)


def pp_labels(counts, epsilon, m, rng):
    """``PrivatePredictionClassifier.predict`` on ``counts`` (calibration auto)."""
    eps_q, calibration = per_release_epsilon(
        epsilon, DELTA, m, release="exponential", calibration="auto"
    )
    labels = exponential_mechanism(counts, eps_q, 1.0, rng=rng)
    return labels, np.ones(len(labels), bool), {"calibration": calibration}


def cgn_labels(counts, epsilon, m, max_answers, n_classes, rng):
    """``SubsampleAggregateClassifier(mechanism="confident_gnmax").predict``."""
    k = int(counts[0].sum())
    mechanism = ConfidentGNMaxRelease.calibrate(
        epsilon, DELTA, m, max_answers, n_teachers=k, n_classes=n_classes
    )
    cal, threshold = mechanism.calibration, mechanism.threshold
    release = mechanism.engine(NoiseSource([rng])).answer("predict", counts)
    n_processed = release.n_done
    answers, answered = release.values["label"], ~release.values["abstained"]
    labels = np.full(len(counts), -1)
    labels[:n_processed] = answers
    mask = np.zeros(len(counts), bool)
    mask[:n_processed] = answered
    return (
        labels,
        mask,
        {
            "calibration": cal.name,
            "sigma1": round(cal.sigma_threshold, 1),
            "sigma2": round(cal.sigma_argmax, 1),
            "threshold": round(threshold, 1),
            "processed": int(n_processed),
        },
    )


def ensemble_votes(X_private, y_private, classes, k, teacher, X_list):
    """Fit one ensemble (no budget used: votes only) and count votes on ``X_list``."""
    model = SubsampleAggregateClassifier(
        clone(teacher),
        n_estimators=k,
        mechanism="confident_gnmax",
        max_queries=1,
        classes=classes,
        random_state=0,
        n_jobs=2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X_private, y_private)
    return model, [model._vote_counts(X) for X in X_list]


def _accuracy(pred, y):
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


# -- Adult: validation sweep -------------------------------------------------
def adult_sweep(data, grid, log):
    val = data["val"]
    classes = data["classes"]
    n_full = len(data["y_train"])
    n_val = len(val["y_private"])
    rows = []
    rng = np.random.default_rng(12345)
    full_model = teacher_estimator().fit(val["X_private"], val["y_private"])
    reference = {
        "base_rate": base_rate(val["y_private"], val["y_eval"]),
        "full_model": _accuracy(full_model.predict(val["X_eval"]), val["y_eval"]),
    }
    for k_full in grid["ks"]:
        k = max(1, round(k_full * n_val / n_full))  # same shard size as the full file
        start = time.perf_counter()
        _, (counts_pub, counts_eval) = ensemble_votes(
            val["X_private"],
            val["y_private"],
            classes,
            k,
            teacher_estimator(),
            [val["X_public"], val["X_eval"]],
        )
        vote = _accuracy(classes[counts_eval.argmax(1)], val["y_eval"])
        majority_labels = classes[counts_pub.argmax(1)]
        vote_student = make_student("lr").fit(val["X_public"], majority_labels)
        base = {
            "k": k_full,
            "k_validation": k,
            **reference,
            "teacher_vote": vote,
            "nonprivate_student": _accuracy(
                vote_student.predict(val["X_eval"]), val["y_eval"]
            ),
        }
        log(
            f"adult validation k={k_full} ({k} on the split): votes in "
            f"{time.perf_counter() - start:.1f} s, teacher vote {vote:.4f}"
        )
        configs = []
        for epsilon in grid["epsilons"]:
            for m in grid["pp_m"]:
                for strategy, n_rounds in grid["pp_strategies"]:
                    configs.append(
                        ("PrivatePrediction", epsilon, m, None, strategy, n_rounds)
                    )
            for m in grid["cgn_m"]:
                for share in grid["cgn_answer_share"]:
                    answers = max(1, int(m * share))
                    configs.append(
                        ("ConfidentGNMaxRelease", epsilon, m, answers, "sequential", 1)
                    )
        for mechanism, epsilon, m, max_answers, strategy, n_rounds in configs:
            if strategy == "uncertainty":
                rows.extend(
                    _uncertainty_rows(
                        val, classes, counts_pub, epsilon, m, n_rounds, grid, base
                    )
                )
                continue
            counts = counts_pub[:m]
            y_true = val["y_public"][:m]
            per_student = {name: [] for name in grid["students"]}
            answered_frac, label_acc, info = [], [], {}
            for _ in range(grid["repeats"]):
                if mechanism == "PrivatePrediction":
                    labels, mask, info = pp_labels(counts, epsilon, m, rng)
                else:
                    labels, mask, info = cgn_labels(
                        counts, epsilon, m, max_answers, len(classes), rng
                    )
                answered_frac.append(mask.mean())
                if not mask.any():
                    continue
                released = classes[labels[mask]]
                label_acc.append(_accuracy(released, y_true[mask]))
                X_lab = val["X_public"][:m][mask]
                unlabelled = val["X_public"]  # every public row, unlabelled
                for name in grid["students"]:
                    if len(np.unique(released)) < 2:
                        acc = _accuracy(
                            np.full(len(val["y_eval"]), released[0]), val["y_eval"]
                        )
                    else:
                        student = make_student(name, unlabelled).fit(X_lab, released)
                        acc = _accuracy(student.predict(val["X_eval"]), val["y_eval"])
                    per_student[name].append(acc)
            for name, accs in per_student.items():
                if not accs:
                    continue
                rows.append(
                    {
                        "split": "validation",
                        "mechanism": mechanism,
                        "epsilon": epsilon,
                        "delta": DELTA,
                        "m": m,
                        "max_answers": max_answers,
                        "query_strategy": "sequential",
                        "n_rounds": None,
                        "student": name,
                        **base,
                        **info,
                        "answered": float(np.mean(answered_frac)),
                        "label_accuracy": float(np.mean(label_acc))
                        if label_acc
                        else None,
                        "student_accuracy": float(np.mean(accs)),
                        "student_accuracy_std": float(np.std(accs)),
                        "repeats": len(accs),
                    }
                )
    return rows


def _uncertainty_rows(val, classes, counts_pub, epsilon, m, n_rounds, grid, base):
    """``KnowledgeTransferClassifier(query_strategy="uncertainty")`` on fixed votes.

    The pool is every public row of the split; ``m`` of them are asked.
    """
    X_pool = val["X_public"]
    rows = []
    calibration = None
    for name in grid["uncertainty_students"]:
        accs = []
        for repeat in range(grid["repeats"]):
            teacher = VotesTeacher(
                X_pool, counts_pub, classes, epsilon, m, seed=1000 + repeat
            )
            kt = KnowledgeTransferClassifier(
                teacher,
                make_student(name, X_pool),
                query_strategy="uncertainty",
                n_queries=m,
                n_rounds=n_rounds,
                random_state=repeat,
            )
            # The private rows are not used by the stand-in (votes are fixed).
            kt.fit(val["X_private"][:10], val["y_private"][:10], X_public=X_pool)
            accs.append(_accuracy(kt.predict(val["X_eval"]), val["y_eval"]))
        calibration = per_release_epsilon(
            epsilon, DELTA, m, release="exponential", calibration="auto"
        )[1]
        rows.append(
            {
                "split": "validation",
                "mechanism": "PrivatePrediction",
                "epsilon": epsilon,
                "delta": DELTA,
                "m": m,
                "max_answers": None,
                "query_strategy": "uncertainty",
                "n_rounds": n_rounds,
                "student": name,
                **base,
                "calibration": calibration,
                "answered": 1.0,
                "label_accuracy": None,  # rows differ per draw; see the note
                "student_accuracy": float(np.mean(accs)),
                "student_accuracy_std": float(np.std(accs)),
                "repeats": len(accs),
            }
        )
    return rows


def choose(rows, max_epsilon=1.0):
    eligible = [r for r in rows if r["epsilon"] <= max_epsilon]
    return max(eligible, key=lambda r: r["student_accuracy"])


# -- Adult: the one test run -------------------------------------------------
def make_teacher(config, classes):
    if config["mechanism"] == "PrivatePrediction":
        return PrivatePredictionClassifier(
            teacher_estimator(),
            n_estimators=config["k"],
            epsilon=config["epsilon"],
            delta=DELTA,
            max_queries=config["m"],
            classes=classes,
            random_state=0,
            n_jobs=2,
        )
    return SubsampleAggregateClassifier(
        teacher_estimator(),
        n_estimators=config["k"],
        epsilon=config["epsilon"],
        delta=DELTA,
        mechanism=ConfidentGNMax(max_answers=config["max_answers"]),
        max_queries=config["m"],
        classes=classes,
        random_state=0,
        n_jobs=2,
    )


def adult_test(data, config, log):
    classes = data["classes"]
    m = config["m"]
    start = time.perf_counter()
    teacher = make_teacher(config, classes)
    if config.get("query_strategy") == "uncertainty":
        X_public = data["X_public"]  # the pool; m rows of it are asked
        kt = KnowledgeTransferClassifier(
            teacher,
            make_student(config["student"], data["X_public"]),
            query_strategy="uncertainty",
            n_queries=m,
            n_rounds=config["n_rounds"],
            random_state=0,
        )
    else:
        X_public = data["X_public"][:m]
        kt = KnowledgeTransferClassifier(
            teacher, make_student(config["student"], data["X_public"])
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        kt.fit(data["X_train"], data["y_train"], X_public=X_public)
    seconds = time.perf_counter() - start
    accuracy = _accuracy(kt.predict(data["X_eval"]), data["y_eval"])
    # Reference columns: the same teachers (same random_state), not private.
    ensemble, (counts_pub,) = ensemble_votes(
        data["X_train"],
        data["y_train"],
        classes,
        config["k"],
        teacher_estimator(),
        [data["X_public"]],
    )
    vote = _accuracy(teacher_majority_vote(ensemble, data["X_eval"]), data["y_eval"])
    vote_student = make_student("lr").fit(
        data["X_public"], classes[counts_pub.argmax(1)]
    )
    full_model = teacher_estimator().fit(data["X_train"], data["y_train"])
    row = {
        "split": "test",
        "mechanism": config["mechanism"],
        "epsilon": config["epsilon"],
        "delta": DELTA,
        "k": config["k"],
        "m": m,
        "max_answers": config["max_answers"],
        "query_strategy": config.get("query_strategy", "sequential"),
        "n_rounds": config.get("n_rounds"),
        "student": config["student"],
        "calibration": config["calibration"],
        "answered": kt.n_public_labelled_ / m,
        "n_public_labelled": kt.n_public_labelled_,
        "n_public_abstained": kt.n_public_abstained_,
        "n_public_unanswered": kt.n_public_unanswered_,
        "student_accuracy": accuracy,
        "n_eval": len(data["y_eval"]),
        "base_rate": base_rate(data["y_train"], data["y_eval"]),
        "teacher_vote": vote,
        "nonprivate_student": _accuracy(
            vote_student.predict(data["X_eval"]), data["y_eval"]
        ),
        "full_model": _accuracy(full_model.predict(data["X_eval"]), data["y_eval"]),
        "target": ADULT_TARGET,
        "reached": bool(accuracy >= ADULT_TARGET and config["epsilon"] <= 1.0),
        "seconds": seconds,
    }
    log(f"adult test: student {accuracy:.4f} ({seconds:.1f} s)")
    return row


# -- Shuttle: answer rate and accuracy on answered queries --------------------
def answer_rate_rows(data, epsilon, ks, log):
    classes = data["classes"]
    X_q, y_q = data["X_query"], data["y_query"]
    m = len(y_q)
    full_model = clone(data["teacher"]).fit(data["X_private"], data["y_private"])
    reference = {
        "base_rate": base_rate(data["y_private"], y_q),
        "full_model": _accuracy(full_model.predict(X_q), y_q),
    }
    rows = []
    for k in ks:
        variants = [
            (
                "SubsampleAggregate sparse_vector (T=100, auto)",
                dict(
                    mechanism=SparseVector(max_unstable=100, fallback="abstain"),
                    max_queries=m,
                ),
            ),
        ]
        for share in (0.9, 0.95, 1.0):
            variants.append(
                (
                    "SubsampleAggregate confident_gnmax "
                    f"(max_answers={int(m * share)})",
                    dict(
                        mechanism=ConfidentGNMax(max_answers=int(m * share)),
                        max_queries=m,
                    ),
                )
            )
        variants.append(("PrivatePrediction exponential (auto)", None))
        for name, params in variants:
            start = time.perf_counter()
            if params is None:
                model = PrivatePredictionClassifier(
                    clone(data["teacher"]),
                    n_estimators=k,
                    epsilon=epsilon,
                    delta=DELTA,
                    max_queries=m,
                    classes=classes,
                    random_state=0,
                    n_jobs=2,
                )
            else:
                model = SubsampleAggregateClassifier(
                    clone(data["teacher"]),
                    n_estimators=k,
                    epsilon=epsilon,
                    delta=DELTA,
                    classes=classes,
                    random_state=0,
                    n_jobs=2,
                    **params,
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                model.fit(data["X_private"], data["y_private"])
            labels, abstained = model.predict(X_q, return_abstained=True)
            seconds = time.perf_counter() - start
            answered = ~np.asarray(abstained, bool)
            n_ans = int(answered.sum())
            acc_ans = _accuracy(labels[answered], y_q[answered]) if n_ans else None
            status = model.budget_status()
            predicted = _regime_prediction(model, params, X_q, y_q, epsilon, m)
            halted = status.halted
            rows.append(
                {
                    "dataset": data["name"],
                    "estimator": name,
                    "teacher": data["teacher_name"],
                    "k": k,
                    "epsilon": epsilon,
                    "delta": DELTA,
                    "m": m,
                    "T_or_max_answers": (
                        getattr(
                            params["mechanism"],
                            "max_answers",
                            getattr(params["mechanism"], "max_unstable", None),
                        )
                        if params
                        else None
                    ),
                    "calibration": getattr(model, "calibration_", None),
                    "answered": n_ans / m,
                    "acc_answered": acc_ans,
                    "acc_all": float(np.mean(answered & (labels == y_q))),
                    "halted_after": status.n_served if halted else None,
                    **reference,
                    "teacher_vote": _accuracy(teacher_majority_vote(model, X_q), y_q),
                    "predicted_answered": predicted["answered"],
                    "predicted_acc_answered": predicted["accuracy_answered"],
                    "reached": bool(
                        n_ans / m >= SHUTTLE_ANSWERED
                        and acc_ans is not None
                        and acc_ans >= SHUTTLE_ACCURACY
                    ),
                    "seconds": seconds,
                }
            )
            log(
                f"{data['name']} k={k} {name}: answered {n_ans / m:.3f}, "
                f"accuracy on answered {acc_ans}, {seconds:.1f} s"
            )
    return rows


def _regime_prediction(model, params, X_q, y_q, epsilon, m):
    """What the regime guide predicts for this model, from its teachers' votes.

    The votes on the query rows are read directly (not private: a check of
    the guide's arithmetic against the measured run, not a release).
    """
    counts = model.vote_counts(X_q)
    y_index = np.searchsorted(model.classes_, y_q)
    options = None if params is None else params["mechanism"]
    if options is None:
        mechanism, extra = "private_prediction", {}
    elif isinstance(options, SparseVector):
        mechanism, extra = "sparse_vector", {"max_unstable": options.max_unstable}
    else:
        mechanism, extra = "confident_gnmax", {"max_answers": options.max_answers}
    rows = predict_regime(
        counts,
        y_true=y_index,
        epsilon=epsilon,
        delta=DELTA,
        max_queries=m,
        mechanisms=(mechanism,),
        **extra,
    )
    for row in rows:
        if row["calibration"] == model.calibration_:
            return row
    return {"answered": None, "accuracy_answered": None}


# -- output ------------------------------------------------------------------
def _fmt(value, spec):
    if value is None:
        return "-"
    return format(value, spec)


def _strategy(row):
    if row.get("query_strategy", "sequential") == "uncertainty":
        return f"uncertainty/{row['n_rounds']}"
    return "sequential"


def write(result, out_dir):
    out_dir = Path(out_dir)
    write_json(out_dir / "real_data_targets.json", result, trailing_newline=False)
    lines = [
        "# Real-data targets: an Adult student at epsilon <= 1, Shuttle answer rate",
        "",
    ]
    test = result["adult_test"]
    lines += [
        "## Adult: knowledge-transfer student at epsilon <= 1 (test)",
        "",
        "| mechanism | k | epsilon | delta | calibration | m | max_answers "
        "| query strategy | student | labelled "
        "| student accuracy | target | reached | base rate | teacher vote "
        "(non-private) | non-private student | full model (non-private) | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {test['mechanism']} | {test['k']} | {test['epsilon']:g} | "
        f"{test['delta']:.0e} | {test['calibration']} | {test['m']} | "
        f"{_fmt(test['max_answers'], 'd')} | {_strategy(test)} | "
        f"{test['student']} | {test['n_public_labelled']} of {test['m']} | "
        f"{test['student_accuracy']:.4f} | >= {test['target']} | "
        f"{'yes' if test['reached'] else 'no'} | {test['base_rate']:.4f} | "
        f"{test['teacher_vote']:.4f} | {test['nonprivate_student']:.4f} | "
        f"{test['full_model']:.4f} | {test['seconds']:.0f} |",
        "",
        f"Evaluated on the {test['n_eval']:,} test rows after the first 2,000 "
        "(which are the public rows). The configuration was chosen on the "
        "validation split below (the best mean student accuracy at epsilon <= 1). "
        "See the history at the end: the test rows were looked at three times.",
        "",
        "## Adult: best validation student per mechanism, query strategy and k "
        "(epsilon = 1)",
        "",
        "| mechanism | query strategy | k | m | max_answers | student | answered "
        "| label acc | student acc | teacher vote | non-private student |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    best = {}
    for r in result["adult_validation"]:
        key = (r["mechanism"], r.get("query_strategy", "sequential"), r["k"])
        if r["epsilon"] == 1.0 and (
            key not in best or r["student_accuracy"] > best[key]["student_accuracy"]
        ):
            best[key] = r
    for _, r in sorted(best.items()):
        lines.append(
            f"| {r['mechanism']} | {_strategy(r)} | {r['k']} | {r['m']} | "
            f"{_fmt(r['max_answers'], 'd')} | {r['student']} | "
            f"{r['answered']:.3f} | {_fmt(r['label_accuracy'], '.3f')} | "
            f"{r['student_accuracy']:.4f} | {r['teacher_vote']:.4f} | "
            f"{r['nonprivate_student']:.4f} |"
        )
    lines += [
        "",
        "## Adult: the validation sweep behind the choice",
        "",
        "Teachers: `Pipeline(StandardScaler, LogisticRegression(solver="
        "'liblinear'))` on disjoint "
        "shards of 24,561 training rows (k scaled to the full file's shard "
        "size); 2,000 held-out training rows are the public rows, 6,000 more "
        "the validation test rows. `sequential`: the first m public rows are "
        "queried; `uncertainty/R`: m of the 2,000 are chosen by "
        "`KnowledgeTransferClassifier(query_strategy='uncertainty', "
        "n_rounds=R)` (a stand-in teacher answers from the fixed votes with "
        "the estimator's mechanism code). Mean over "
        f"{result['grid']['repeats']} noise draws. `answered`: fraction of the "
        "m queries labelled; `label acc`: accuracy of the released labels "
        "against the true labels (sequential rows only: under uncertainty "
        "the asked rows are the hard ones and differ per draw).",
        "",
        "| mechanism | k | epsilon | m | max_answers | query strategy "
        "| calibration "
        "| sigma1/sigma2/threshold | student | answered | label acc | student acc "
        "| +- | base rate | teacher vote | non-private student | full model |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        result["adult_validation"],
        key=lambda r: (r["epsilon"] != 1.0, r["epsilon"], -r["student_accuracy"]),
    ):
        sig = (
            f"{r['sigma1']}/{r['sigma2']}/{r['threshold']}"
            if r["mechanism"] == "ConfidentGNMaxRelease"
            else "-"
        )
        lines.append(
            f"| {r['mechanism']} | {r['k']} | {r['epsilon']:g} | {r['m']} | "
            f"{_fmt(r['max_answers'], 'd')} | {_strategy(r)} | "
            f"{r['calibration']} | {sig} | "
            f"{r['student']} | {r['answered']:.3f} | "
            f"{_fmt(r['label_accuracy'], '.3f')} | "
            f"{r['student_accuracy']:.4f} | {r['student_accuracy_std']:.4f} | "
            f"{r['base_rate']:.4f} | {r['teacher_vote']:.4f} | "
            f"{r['nonprivate_student']:.4f} | {r['full_model']:.4f} |"
        )
    lines += [
        "",
        f"## {result['answer_rate_dataset']}: answered fraction and accuracy "
        f"(epsilon = {result['answer_rate_epsilon']:g}, delta = 1e-05)",
        "",
        "| dataset | estimator | teacher | k | m | calibration | answered | acc "
        "answered | acc all | halted after | base rate | teacher vote (non-private) "
        "| full model (non-private) | target reached | predicted answered | "
        "predicted acc answered | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["answer_rate"]:
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {r['teacher']} | {r['k']} | "
            f"{r['m']} | {r['calibration']} | {r['answered']:.3f} | "
            f"{_fmt(r['acc_answered'], '.4f')} | {r['acc_all']:.4f} | "
            f"{_fmt(r['halted_after'], 'd')} | {r['base_rate']:.4f} | "
            f"{r['teacher_vote']:.4f} | {r['full_model']:.4f} | "
            f"{'yes' if r['reached'] else 'no'} | "
            f"{_fmt(r['predicted_answered'], '.3f')} | "
            f"{_fmt(r['predicted_acc_answered'], '.4f')} | {r['seconds']:.1f} |"
        )
    lines += [
        "",
        "`predicted`: :func:`dpsklearn.planning.predict_regime` on the same "
        "teachers' votes on these queries (read directly, for checking the "
        "guide; not a private release).",
    ]
    if result.get("note"):
        lines += ["", result["note"]]
    if result.get("history"):
        lines += ["", "## History of test looks", "", result["history"]]
    env = result["environment"]
    lines += [
        "",
        f"Run time {result['seconds']:.0f} s; {env['cpus']} CPUs, BLAS threads "
        f"{result['blas_threads']}; numpy {env['numpy']}, scikit-learn "
        f"{env['scikit_learn']}, Python {env['python']}. "
        f"Command: `{result['command']}`.",
        "",
    ]
    write_markdown(out_dir / "real_data_targets.md", lines)


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="reduced grid, bundled data only (CI, < 2 minutes)",
        add_arguments=lambda p: p.add_argument("--blas-threads", type=int, default=1),
    )
    env = environment()
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    grid = QUICK if args.quick else FULL
    start = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", flush=True)

    with threadpool_limits(args.blas_threads):
        data = adult_data()
        validation = adult_sweep(data, grid, log)
        chosen = choose(validation)
        log(
            f"chosen on validation: {chosen['mechanism']} k={chosen['k']} "
            f"eps={chosen['epsilon']} m={chosen['m']} "
            f"max_answers={chosen['max_answers']} strategy={_strategy(chosen)} "
            f"student={chosen['student']} ({chosen['student_accuracy']:.4f})"
        )
        test = adult_test(data, chosen, log)
        note = None
        if args.quick:
            rate_data, epsilon = breast_cancer_data(), 2.0
        else:
            rate_data, epsilon = shuttle_data(), 2.0
            if rate_data is None:
                note = (
                    "river is not installed: the Shuttle table could not be "
                    "measured (pip install river); breast cancer shown instead."
                )
                rate_data = breast_cancer_data()
        answer_rate = answer_rate_rows(rate_data, epsilon, grid["shuttle_ks"], log)
    result = {
        "grid": {k: list(v) if isinstance(v, tuple) else v for k, v in grid.items()},
        "adult_validation": validation,
        "adult_chosen": {
            key: chosen[key]
            for key in (
                "mechanism",
                "k",
                "epsilon",
                "m",
                "max_answers",
                "query_strategy",
                "n_rounds",
                "calibration",
                "student",
            )  # fmt: skip
        },
        "adult_test": test,
        "answer_rate_dataset": rate_data["name"],
        "answer_rate_epsilon": epsilon,
        "answer_rate": answer_rate,
        "note": note,
        "history": None if args.quick else HISTORY,
        "seconds": time.perf_counter() - start,
        "environment": env,
        "blas_threads": args.blas_threads,
        "command": command("real_data_targets.py", "--quick" if args.quick else ""),
    }
    write(result, args.out)
    log(f"wrote {args.out}/real_data_targets.{{json,md}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
