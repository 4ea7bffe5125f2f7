"""The fused linear vote path gives exactly the per-teacher votes."""

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import (
    LogisticRegression,
    RidgeClassifier,
    SGDClassifier,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import SubsampleAggregateClassifier
from dpsklearn.mechanisms import vote_counts
from dpsklearn.teachers import (
    ConstantTeacher,
    fused_ensemble,
    teacher_outputs,
    why_not_fusable,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpsklearn.PrivacyLeakWarning",
    "ignore::sklearn.exceptions.ConvergenceWarning",
)

MAKERS = [
    lambda: LogisticRegression(),
    lambda: make_pipeline(StandardScaler(), LogisticRegression()),
    lambda: make_pipeline(MinMaxScaler(), LinearSVC()),
    lambda: make_pipeline(MaxAbsScaler(), StandardScaler(), RidgeClassifier()),
    lambda: make_pipeline(
        StandardScaler(with_mean=False), SGDClassifier(random_state=0)
    ),
    lambda: make_pipeline("passthrough", StandardScaler(with_std=False), LinearSVC()),
]


def per_teacher_counts(teachers, X, n_classes):
    """The reference: every teacher's own predict, counted."""
    counts = np.zeros((X.shape[0], n_classes), dtype=np.int64)
    for rows, predictions in teacher_outputs(teachers, X):
        counts[rows] = vote_counts(predictions.astype(np.int64), n_classes)
    return counts


def make_teachers(n_classes, n_teachers, rng, *, drop_classes=True):
    scales = np.array([1.0, 10.0, 100.0, 0.1, 1.0, 1.0])
    X = rng.normal(size=(4000, 6)) * scales + [0, 5, -50, 0, 0, 0]
    y = rng.integers(0, n_classes, 4000)
    teachers = []
    for i in range(n_teachers):
        rows = rng.choice(X.shape[0], 80, replace=False)
        labels = y[rows]
        if drop_classes and n_classes > 2 and i % 4 == 1:
            keep = labels != i % n_classes  # a shard missing a class
            rows, labels = rows[keep], labels[keep]
        teachers.append(MAKERS[i % len(MAKERS)]().fit(X[rows], labels))
    return teachers, scales


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_identical_votes_mixed_linear_teachers(n_classes):
    rng = np.random.default_rng(n_classes)
    teachers, scales = make_teachers(n_classes, 36, rng)
    teachers.append(ConstantTeacher(0, n_classes))
    teachers.append(ConstantTeacher(n_classes - 1, n_classes))
    fused = fused_ensemble(teachers, n_classes)
    assert fused is not None
    queries = rng.normal(size=(5000, 6)) * scales
    np.testing.assert_array_equal(
        fused.vote_counts(queries, teachers),
        per_teacher_counts(teachers, queries, n_classes),
    )


def test_binary_ties_at_zero_follow_sklearn():
    # decision exactly 0 -> sklearn votes classes_[0]; the fused path too.
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 2.0]])
    teachers = []
    for classes in ([0, 1], [1, 2], [0, 2]):
        t = LogisticRegression().fit(X, np.repeat(classes, 2))
        t.coef_ = np.array([[1.0, -1.0]])
        t.intercept_ = np.array([0.0])
        teachers.append(t)
    # a folded scaler whose own path rounds differently from the fused one
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(
        X * [0.1, 3.0] + [0.3, -7.0], [0, 1, 0, 1]
    )
    pipe[-1].coef_ = np.array([[1.0, -1.0]])
    pipe[-1].intercept_ = np.array([0.0])
    pipe[0].mean_ = np.array([0.1, 0.1])
    pipe[0].scale_ = np.array([0.3, 0.3])
    teachers.append(pipe)
    queries = np.array(
        [
            [0.5, 0.5],
            [0.1, 0.1],
            [0.7, 0.7000000001],
            [1e-17, 0.0],
            [3.0, 3.0],
            [0.1 + 0.2, 0.3],
        ]
    )
    for t in teachers:
        assert (t.decision_function(queries[:2]) == 0).all()
    fused = fused_ensemble(teachers, 3)
    np.testing.assert_array_equal(
        fused.vote_counts(queries, teachers), per_teacher_counts(teachers, queries, 3)
    )


def test_multiclass_ties_follow_sklearn_argmax():
    X = np.eye(3)
    teacher = LogisticRegression().fit(np.vstack([X, X]), [0, 1, 2, 0, 1, 2])
    teacher.coef_ = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    teacher.intercept_ = np.zeros(3)
    partial = LogisticRegression().fit(np.vstack([X, X]), [1, 3, 4, 1, 3, 4])
    partial.coef_ = teacher.coef_[::-1].copy()
    partial.intercept_ = np.zeros(3)
    teachers = [teacher, partial]
    queries = np.array(
        [
            [1.0, 1.0, 1.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.3, 0.1 + 0.2, 0.3],
        ]
    )
    fused = fused_ensemble(teachers, 5)
    np.testing.assert_array_equal(
        fused.vote_counts(queries, teachers), per_teacher_counts(teachers, queries, 5)
    )


def test_random_near_ties_with_awkward_scalers():
    # Many queries exactly on or within rounding of teachers' boundaries.
    rng = np.random.default_rng(7)
    teachers, _ = make_teachers(2, 12, rng, drop_classes=False)
    queries = rng.normal(size=(2000, 6))
    for teacher in teachers[:6]:
        # move queries onto this teacher's boundary along the first feature
        w = teacher.decision_function(queries)
        shift = teacher.decision_function(queries + np.eye(6)[0]) - w
        queries[:40] -= np.outer(w[:40] / shift[:40], np.eye(6)[0])
    fused = fused_ensemble(teachers, 2)
    np.testing.assert_array_equal(
        fused.vote_counts(queries, teachers), per_teacher_counts(teachers, queries, 2)
    )


def test_float32_and_sparse_queries():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5))
    y = (X[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(int)
    teachers = [
        make_pipeline(StandardScaler(with_mean=False), LogisticRegression()).fit(
            X[i::10], y[i::10]
        )
        for i in range(10)
    ]
    fused = fused_ensemble(teachers, 2)
    queries = rng.normal(size=(3000, 5))
    for q in (queries.astype(np.float32), sparse.csr_matrix(queries)):
        np.testing.assert_array_equal(
            fused.vote_counts(q, teachers), per_teacher_counts(teachers, q, 2)
        )


def test_not_fusable_teachers():
    X = np.arange(8.0)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    tree = DecisionTreeClassifier().fit(X, y)
    clipped = make_pipeline(MinMaxScaler(clip=True), LogisticRegression()).fit(X, y)
    assert "not a linear classifier" in why_not_fusable(tree)
    assert "clip" in why_not_fusable(clipped)
    assert why_not_fusable(ConstantTeacher(0, 2)) is None
    lr = LogisticRegression().fit(X, y)
    assert fused_ensemble([lr, tree], 2) is None
    assert fused_ensemble([lr, lr], 2) is not None


def test_only_constant_teachers():
    teachers = [ConstantTeacher(1, 3), ConstantTeacher(1, 3), ConstantTeacher(2, 3)]
    fused = fused_ensemble(teachers, 3)
    counts = fused.vote_counts(np.zeros((4, 2)), teachers)
    assert counts.tolist() == [[0, 2, 1]] * 4


def _model(estimator, **kw):
    return SubsampleAggregateClassifier(
        estimator,
        n_estimators=kw.pop("n_estimators", 30),
        epsilon=8.0,
        classes=kw.pop("classes", [0, 1, 2]),
        random_state=0,
        noise_random_state=0,
        mechanism="confident_gnmax",
        max_queries=5000,
        **kw,
    )


def _per_teacher(model):
    """The fitted ``model`` without its fused path: every teacher predicts.

    The fused path is automatic (0.2 dropped ``fused=``); removing it is the
    per-teacher reference the fused votes must equal.
    """
    model._fused_ensemble_ = None
    return model


def test_estimator_uses_fused_path_and_matches_per_teacher():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    # tiny shards: some miss a class, some hold one class (ConstantTeacher)
    fast = _model(make_pipeline(StandardScaler(), LogisticRegression()))
    slow = _model(make_pipeline(StandardScaler(), LogisticRegression()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fast.fit(X, y)
        _per_teacher(slow.fit(X, y))
    assert fast._fused_ensemble_ is not None and slow._fused_ensemble_ is None
    queries = rng.normal(size=(3000, 4))
    np.testing.assert_array_equal(
        fast._vote_counts(queries), slow._vote_counts(queries)
    )
    # same noise seed, same votes: the same private answers
    np.testing.assert_array_equal(fast.predict(queries), slow.predict(queries))


def test_constant_teachers_inside_the_estimator():
    X = np.arange(40.0)[:, None]
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    model = _model(LogisticRegression(), n_estimators=20, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    assert any(isinstance(t, ConstantTeacher) for t in model.estimators_)
    queries = np.linspace(-5, 45, 101)[:, None]
    assert model._fused_ensemble_ is not None
    np.testing.assert_array_equal(
        model._vote_counts(queries), per_teacher_counts(model.estimators_, queries, 2)
    )


def test_teachers_that_cannot_be_fused_fall_back_silently():
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    auto = _model(DecisionTreeClassifier(), n_estimators=4, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        auto.fit(X, y)
    assert auto._fused_ensemble_ is None
    assert why_not_fusable(auto) == "DecisionTreeClassifier is not a linear classifier"


def _synthetic_teachers(n_teachers, n_features, rng):
    """Fitted-looking LogisticRegression teachers without fitting 10,000 models."""
    template = LogisticRegression().fit(
        np.r_[np.zeros((1, n_features)), np.ones((1, n_features))], [0, 1]
    )
    teachers = []
    coefs = rng.normal(size=(n_teachers, n_features))
    intercepts = rng.normal(size=n_teachers)
    for i in range(n_teachers):
        t = LogisticRegression()
        t.__dict__.update(template.__dict__)
        t.coef_ = coefs[i : i + 1]
        t.intercept_ = intercepts[i : i + 1]
        teachers.append(t)
    return teachers


def test_memory_is_bounded_by_query_chunks():
    # k = 10,000 teachers x 100,000 queries: a full vote matrix would take
    # 8 GB as float64 scores (1 GB even as int8); chunks keep the peak small.
    rng = np.random.default_rng(0)
    n_teachers, n_queries, n_features = 10_000, 100_000, 4
    teachers = _synthetic_teachers(n_teachers, n_features, rng)
    fused = fused_ensemble(teachers, 2)
    queries = rng.normal(size=(n_queries, n_features))
    tracemalloc.start()
    try:
        counts = fused.vote_counts(queries, teachers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts.sum(axis=1).tolist() == [n_teachers] * n_queries
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MB"
    # spot-check the votes on a few rows (identity with the teachers' own
    # predict is tested above; 10,000 predict calls would take seconds)
    coefs = np.concatenate([t.coef_ for t in teachers])
    intercepts = np.concatenate([t.intercept_ for t in teachers])
    positive = (queries[:50] @ coefs.T + intercepts > 0).sum(axis=1)
    np.testing.assert_array_equal(counts[:50, 1], positive)
