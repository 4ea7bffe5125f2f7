"""Sharding and the parallel fit of teachers.

See docs/design.rst, "Shards and teachers".
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import dpsklearn
import dpsklearn.teachers._inference as inference
from dpsklearn import SparseVector, SubsampleAggregateClassifier
from dpsklearn.mechanisms import vote_counts
from dpsklearn.teachers import (
    ConstantTeacher,
    fit_teachers,
    partition_indices,
    teacher_outputs,
    teacher_seeds,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


class RowRecorder(ClassifierMixin, BaseEstimator):
    """Remembers which rows (column 0 holds a row id) and labels it was fitted on."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        self.rows_ = np.asarray(X)[:, 0].astype(np.int64)
        self.y_ = np.asarray(y)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(np.asarray(X).shape[0], self.classes_[-1])


def _data(n=240, n_classes=2, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X, y.astype(np.int64)


# -- partition ----------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 500), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_partition_is_a_near_equal_partition(n, data, seed):
    k = data.draw(st.integers(1, n))
    shards = partition_indices(n, k, np.random.RandomState(seed))
    assert len(shards) == k
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert all(s.dtype == np.int64 and s.ndim == 1 for s in shards)
    everything = np.concatenate(shards)
    assert everything.size == n  # disjoint ...
    np.testing.assert_array_equal(np.sort(everything), np.arange(n))  # ... and covers
    # The same random_state gives the same partition.
    again = partition_indices(n, k, np.random.RandomState(seed))
    assert all(np.array_equal(a, b) for a, b in zip(shards, again, strict=True))


def test_partition_depends_on_random_state():
    a = partition_indices(100, 5, np.random.RandomState(0))
    b = partition_indices(100, 5, np.random.RandomState(1))
    assert any(not np.array_equal(s, t) for s, t in zip(a, b, strict=True))


def test_partition_depends_only_on_random_state_not_on_the_data():
    """Two different datasets of the same size get the same shards and seeds."""
    n = 200
    ids = np.arange(n, dtype=float)[:, None]
    rng = np.random.default_rng(0)
    X1 = np.hstack([ids, rng.normal(size=(n, 3))])
    X2 = np.hstack([ids, rng.normal(size=(n, 3)) * 100])
    y1 = rng.integers(0, 2, n)
    y2 = 1 - y1
    fitted = []
    for X, y in ((X1, y1), (X2, y2)):
        model = SubsampleAggregateClassifier(
            RowRecorder(), n_estimators=7, classes=[0, 1], random_state=42
        ).fit(X, y)
        fitted.append(model.estimators_)
    for t1, t2 in zip(*fitted, strict=True):
        np.testing.assert_array_equal(t1.rows_, t2.rows_)
        assert t1.random_state == t2.random_state
    rows = np.concatenate([t.rows_ for t in fitted[0]])
    np.testing.assert_array_equal(np.sort(rows), np.arange(n))


def test_teacher_seeds_are_deterministic_and_distinct():
    a = teacher_seeds(np.random.RandomState(3), 50)
    b = teacher_seeds(np.random.RandomState(3), 50)
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 50


# -- parallel fit -------------------------------------------------------------


def _fit(estimator, X, y, n_teachers=8, **kwargs):
    rng = np.random.RandomState(0)
    shards = partition_indices(X.shape[0], n_teachers, rng)
    seeds = teacher_seeds(rng, n_teachers)
    return fit_teachers(estimator, X, y, shards, seeds, n_classes=2, **kwargs)


def _predictions(teachers, X):
    return np.stack([t.predict(X) for t in teachers])


def test_fit_teachers_identical_across_n_jobs_and_backends():
    """Per-teacher seeds make the teachers independent of n_jobs and the backend."""
    X, y = _data()
    # max_features=1: each split picks a random feature, so seeds matter.
    base = DecisionTreeClassifier(max_features=1, max_depth=4)
    serial = _fit(base, X, y, n_jobs=1)
    reference = _predictions(serial, X)
    seeds = [t.random_state for t in serial]
    assert len(set(seeds)) == len(seeds)  # every teacher has its own seed
    assert base.random_state is None  # the template is not touched

    parallel = _fit(base, X, y, n_jobs=2)
    np.testing.assert_array_equal(_predictions(parallel, X), reference)
    assert [t.random_state for t in parallel] == seeds

    with joblib.parallel_config(backend="threading"):
        threaded = _fit(base, X, y, n_jobs=2)
    np.testing.assert_array_equal(_predictions(threaded, X), reference)
    for a, b in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)

    # Other seeds give other trees: the comparisons above have teeth.
    shifted = fit_teachers(
        base,
        X,
        y,
        partition_indices(X.shape[0], 8, np.random.RandomState(0)),
        [s + 1 for s in seeds],
        n_classes=2,
    )
    assert not np.array_equal(_predictions(shifted, X), reference)


def test_nested_random_state_is_seeded():
    X, y = _data()
    teachers = _fit(make_pipeline(StandardScaler(), DecisionTreeClassifier()), X, y)
    seeds = [t.get_params()["decisiontreeclassifier__random_state"] for t in teachers]
    assert all(isinstance(s, int) for s in seeds)
    assert len(set(seeds)) == len(seeds)


def test_each_teacher_sees_only_its_shard():
    n = 90
    X = np.hstack([np.arange(n, dtype=float)[:, None], np.zeros((n, 1))])
    y = np.arange(n) % 2
    shards = partition_indices(n, 6, np.random.RandomState(1))
    teachers = fit_teachers(
        RowRecorder(),
        X,
        y,
        shards,
        teacher_seeds(np.random.RandomState(1), 6),
        n_classes=2,
        n_jobs=2,
    )
    for teacher, shard in zip(teachers, shards, strict=True):
        np.testing.assert_array_equal(teacher.rows_, shard)
        np.testing.assert_array_equal(teacher.y_, y[shard])


def test_single_class_shard_gives_constant_teacher():
    X, y = _data(n=60)
    y = np.zeros_like(y)
    y[:5] = 1  # class 1 only in the first five rows
    shards = [np.arange(0, 20), np.arange(20, 40), np.arange(40, 60)]
    teachers = fit_teachers(LogisticRegression(), X, y, shards, [1, 2, 3], n_classes=2)
    assert not isinstance(teachers[0], ConstantTeacher)
    for teacher in teachers[1:]:
        assert isinstance(teacher, ConstantTeacher)
        assert teacher.class_index == 0
        np.testing.assert_array_equal(teacher.predict(X[:4]), np.zeros(4))
        proba = teacher.predict_proba(X[:4])
        np.testing.assert_array_equal(proba, np.tile([1.0, 0.0], (4, 1)))
    # A shard of the other class votes for it, with its global index.
    shards = [np.arange(0, 5), np.arange(5, 60)]
    teachers = fit_teachers(LogisticRegression(), X, y, shards, [1, 2], n_classes=2)
    assert isinstance(teachers[0], ConstantTeacher)
    np.testing.assert_array_equal(teachers[0].predict(X), np.ones(60))


def test_single_class_shard_inside_the_estimator():
    """A label held by few rows: some shards see one class, and fit still works."""
    X, y = _data(n=200)
    y = np.zeros_like(y)
    y[:3] = 1
    model = SubsampleAggregateClassifier(
        n_estimators=20,
        classes=[0, 1],
        random_state=0,
        epsilon=1000.0,
        mechanism=SparseVector(max_unstable=1000),
    ).fit(X, y)
    n_constant = sum(isinstance(t, ConstantTeacher) for t in model.estimators_)
    assert n_constant >= 17
    counts = model._vote_counts(X[:10])
    assert (counts.sum(axis=1) == 20).all()
    assert model.predict(X[:10]).shape == (10,)


def test_votes_map_onto_global_classes_when_a_shard_misses_a_class():
    X, y = _data(n=300, n_classes=3, seed=1)
    # Shard 0 holds no row of class 1; shard 1 holds every class.
    no_one = np.flatnonzero(y != 1)[:80]
    everything = np.setdiff1d(np.arange(300), no_one)
    teachers = fit_teachers(
        LogisticRegression(), X, y, [no_one, everything], [0, 1], n_classes=3
    )
    np.testing.assert_array_equal(teachers[0].classes_, [0, 2])
    votes = np.stack([t.predict(X) for t in teachers])
    assert set(np.unique(votes[0])) <= {0, 2}  # global indices, never 1
    counts = vote_counts(votes, 3)
    for q in range(300):  # each vote lands in its global class column
        expected = np.zeros(3, dtype=np.int64)
        for v in votes[:, q]:
            expected[v] += 1
        np.testing.assert_array_equal(counts[q], expected)
    # The rows of class 1 that teacher 1 gets right show one vote in column 1.
    right = teachers[1].predict(X) == 1
    assert right.any() and (counts[right, 1] >= 1).all()


def test_estimator_with_a_label_no_row_holds():
    """Public classes with an unused label: votes still index the global classes."""
    X, y = _data(n=200)
    labels = np.array(["no", "yes"])[y]
    model = SubsampleAggregateClassifier(
        n_estimators=9,
        classes=["maybe", "no", "yes"],
        mechanism=SparseVector(
            max_unstable=20, fallback="abstain", unanswered="abstain"
        ),
        random_state=0,
        epsilon=1000.0,
    ).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["maybe", "no", "yes"])
    counts = model._vote_counts(X)
    assert counts.shape == (200, 3)
    assert (counts[:, 0] == 0).all()  # nobody votes "maybe"
    assert (counts.sum(axis=1) == 9).all()
    answers, abstained = model.predict(X, return_abstained=True)
    assert (~abstained).sum() > 100
    # A passing answer is the majority, so never the label no teacher votes for.
    assert set(answers[~abstained]) <= {"no", "yes"}
    np.testing.assert_array_equal(
        answers[~abstained], model.classes_[counts.argmax(axis=1)][~abstained]
    )


# -- chunked teacher outputs ----------------------------------------------------


def test_teacher_outputs_chunking_matches_one_block(monkeypatch):
    X, y = _data(n=200)
    teachers = _fit(LogisticRegression(), X, y, n_teachers=3)

    def collect(method, width):
        parts = list(teacher_outputs(teachers, X, method, width=width))
        starts = [rows.start for rows, _ in parts]
        stops = [rows.stop for rows, _ in parts]
        assert starts[0] == 0 and stops[-1] == X.shape[0]
        assert starts[1:] == stops[:-1]  # contiguous, in order, no overlap
        return len(parts), np.concatenate([out for _, out in parts], axis=1)

    n_one, one_block = collect("predict", 1)
    n_one_p, one_block_p = collect("predict_proba", 2)
    assert n_one == n_one_p == 1
    assert one_block.shape == (3, 200) and one_block_p.shape == (3, 200, 2)

    monkeypatch.setattr(inference, "_MAX_BLOCK_ENTRIES", 7)  # 2 rows per chunk
    n_chunks, chunked = collect("predict", 1)
    assert n_chunks == 100
    np.testing.assert_array_equal(chunked, one_block)
    n_chunks, chunked_p = collect("predict_proba", 2)
    assert n_chunks == 200  # 7 // (3 * 2) = 1 row per chunk
    # BLAS may sum a one-row product in another order: equal up to rounding.
    np.testing.assert_allclose(chunked_p, one_block_p, rtol=1e-12, atol=1e-15)


def test_estimator_votes_and_answers_unchanged_by_chunking(monkeypatch):
    X, y = _data(n=200)
    params = dict(
        # A tree, not a linear model: linear teachers may take a fused vote
        # path that does not go through the teachers' own predict.
        estimator=DecisionTreeClassifier(max_depth=3),
        n_estimators=6,
        classes=[0, 1],
        random_state=0,
        epsilon=50.0,
        mechanism=SparseVector(max_unstable=200),
        noise_random_state=0,
    )
    with dpsklearn.config_context(teacher_cache=None):  # every vote is counted
        model = SubsampleAggregateClassifier(**params).fit(X, y)
        counts = model._vote_counts(X)
        answers = model.predict(X)

        # Teachers called on 2 rows at a time, predictions stacked 3 at a
        # time, in blocks on two threads.
        monkeypatch.setattr(inference, "_MAX_CALL_ROWS", 2)
        monkeypatch.setattr(inference, "_VOTE_STACK_ENTRIES", 6)
        monkeypatch.setattr(inference, "_PARALLEL_SECONDS", 0.0)
        with joblib.parallel_config(backend="threading"):
            chunked = SubsampleAggregateClassifier(**params, n_jobs=2).fit(X, y)
            np.testing.assert_array_equal(chunked._vote_counts(X), counts)
            np.testing.assert_array_equal(chunked.predict(X), answers)


class BackendAtFit(RowRecorder):
    """Records joblib's active backend at fit (a forest's trees would use it)."""

    seen: list = []

    def fit(self, X, y):
        from joblib.parallel import get_active_backend

        type(self).seen.append(type(get_active_backend()[0]).__name__)
        return super().fit(X, y)


def test_teachers_own_parallelism_stays_in_the_batch():
    X, y = _data()
    BackendAtFit.seen = []
    with joblib.parallel_config(backend="threading"):
        _fit(BackendAtFit(), X, y, n_jobs=2)
    assert BackendAtFit.seen == ["SequentialBackend"] * 8
    BackendAtFit.seen = []
    with joblib.parallel_config(backend="threading"):
        _fit(BackendAtFit(), X, y, n_jobs=None)  # one process: left as it is
    assert "SequentialBackend" not in BackendAtFit.seen
