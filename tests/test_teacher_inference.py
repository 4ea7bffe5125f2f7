"""Teachers' inference in parallel over teacher blocks, and the chunked serving loop.

The votes counted by blocks of teachers (each block's counts added up) must
be the counts of every teacher's vote at once, ties included, whatever
``n_jobs``, the block layout and the query chunks; outputs stacked by blocks
must be the per-teacher stack. A chunk-invariant engine answers a batch fed
chunk by chunk exactly as at once, and the statistic of rows after a halt
is never computed. (docs/cluster.rst, "Teachers' inference"; speed is
measured in benchmarks/teacher_inference.py.)
"""

from __future__ import annotations

import warnings

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import dpsklearn
import dpsklearn.serving._loop as loop
import dpsklearn.teachers._inference as inference
from dpsklearn import (
    PrivacyLedger,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.mechanisms import vote_counts
from dpsklearn.teachers import (
    ConstantTeacher,
    count_teacher_votes,
    count_votes,
    fit_teachers,
    partition_indices,
    teacher_class_probabilities,
    teacher_outputs,
    teacher_seeds,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpsklearn.PrivacyLeakWarning", "ignore::UserWarning"
)


@pytest.fixture(autouse=True)
def no_teacher_cache():
    # Every fit and count here is computed, never reused.
    with dpsklearn.config_context(teacher_cache=None):
        yield


@pytest.fixture
def always_parallel(monkeypatch):
    """Ship every block to the workers (threads: no process start-up)."""
    monkeypatch.setattr(inference, "_PARALLEL_SECONDS", 0.0)
    with joblib.parallel_config(backend="threading"):
        yield


class TieTeacher(ClassifierMixin, BaseEstimator):
    """Votes ``(row + offset) % n_classes``: an even ensemble makes exact ties."""

    def __init__(self, offset=0, n_classes=2):
        self.offset = offset
        self.n_classes = n_classes

    def fit(self, X, y):
        self.classes_ = np.arange(self.n_classes)
        return self

    def predict(self, X):
        rows = np.arange(np.asarray(X).shape[0])
        return (rows + self.offset) % self.n_classes


def _teachers(n_teachers=24, n_classes=3, seed=0):
    X, y = make_classification(
        n_samples=600,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    rng = np.random.RandomState(seed)
    shards = partition_indices(X.shape[0], n_teachers, rng)
    teachers = fit_teachers(
        DecisionTreeClassifier(max_depth=3, max_features=2),
        X,
        y,
        shards,
        teacher_seeds(rng, n_teachers),
        n_classes=n_classes,
    )
    return teachers, X


def _all_at_once(teachers, X, n_classes):
    return vote_counts(
        np.stack([t.predict(X) for t in teachers]).astype(np.int64), n_classes
    )


@pytest.mark.parametrize("n_jobs", [None, 1, 2, 3])
def test_block_votes_equal_all_votes_at_once(always_parallel, n_jobs, monkeypatch):
    teachers, X = _teachers()
    teachers[5] = ConstantTeacher(2, 3)  # a constant vote among them
    expected = _all_at_once(teachers, X, 3)
    np.testing.assert_array_equal(
        count_teacher_votes(teachers, X, 3, n_jobs=n_jobs), expected
    )
    # Rows cut into calls of 7, predictions stacked 5 teachers at a time.
    monkeypatch.setattr(inference, "_MAX_CALL_ROWS", 7)
    monkeypatch.setattr(inference, "_VOTE_STACK_ENTRIES", 35)
    np.testing.assert_array_equal(
        count_teacher_votes(teachers, X, 3, n_jobs=n_jobs), expected
    )


def test_block_votes_keep_exact_ties(always_parallel):
    # 4 teachers over 2 classes, two voting each way on every row: a tie
    # everywhere; 34 classes take the bincount path of vote_counts.
    for n_classes, n_teachers in ((2, 4), (34, 68)):
        teachers = [TieTeacher(i, n_classes).fit(None, None) for i in range(n_teachers)]
        X = np.zeros((50, 1))
        expected = _all_at_once(teachers, X, n_classes)
        assert (expected == n_teachers // n_classes).all()  # every row tied
        counts = count_teacher_votes(teachers, X, n_classes, n_jobs=2)
        np.testing.assert_array_equal(counts, expected)


def test_serial_probe_and_parallel_paths_agree(monkeypatch):
    teachers, X = _teachers()
    expected = _all_at_once(teachers, X, 3)
    # Slow to ask (estimate above the bar): parallel; fast: asked here.
    for bar in (0.0, 1e9):
        monkeypatch.setattr(inference, "_PARALLEL_SECONDS", bar)
        with joblib.parallel_config(backend="threading"):
            counts = count_teacher_votes(teachers, X, 3, n_jobs=2, verbose=1)
        np.testing.assert_array_equal(counts, expected)


def test_count_votes_with_loky_workers():
    teachers, X = _teachers(n_teachers=6)
    inference_bar = inference._PARALLEL_SECONDS
    try:
        inference._PARALLEL_SECONDS = 0.0
        counts = count_votes(teachers, X, 3, n_jobs=2)
    finally:
        inference._PARALLEL_SECONDS = inference_bar
    np.testing.assert_array_equal(counts, _all_at_once(teachers, X, 3))


def test_block_outputs_stack_in_teacher_order(always_parallel, monkeypatch):
    teachers, X = _teachers(n_teachers=9)
    predictions = np.stack([t.predict(X) for t in teachers])
    proba = np.zeros((9, X.shape[0], 3))
    for i, t in enumerate(teachers):
        proba[i][:, t.classes_] = t.predict_proba(X)
    monkeypatch.setattr(inference, "_MAX_BLOCK_ENTRIES", 9 * 3 * 40)  # 40 rows
    for n_jobs in (None, 2, 4):
        parts = list(teacher_outputs(teachers, X, "predict", n_jobs=n_jobs))
        assert len(parts) == -(-X.shape[0] // 120)
        np.testing.assert_array_equal(
            np.concatenate([out for _, out in parts], axis=1), predictions
        )
        parts = list(teacher_class_probabilities(teachers, X, 3, n_jobs=n_jobs))
        assert len(parts) == -(-X.shape[0] // 40)
        np.testing.assert_array_equal(
            np.concatenate([out for _, out in parts], axis=1), proba
        )


# -- estimators: identical answers whatever n_jobs ------------------------------


def _classification(n=1200, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=8, n_informative=5, flip_y=0.05, random_state=seed
    )
    return X[:900], y[:900], X[900:]


def _fitted_pair(factory, X, y):
    return factory(n_jobs=None).fit(X, y), factory(n_jobs=2).fit(X, y)


def test_estimators_answer_identically_with_parallel_teachers(always_parallel):
    X, y, Xq = _classification()
    tree = DecisionTreeClassifier(max_depth=4, max_features=3)

    def subsample(n_jobs):
        return SubsampleAggregateClassifier(
            tree,
            n_estimators=60,
            classes=[0, 1],
            epsilon=5.0,
            mechanism=SparseVector(max_unstable=60, fallback="noisy_max"),
            random_state=0,
            noise_random_state=3,
            n_jobs=n_jobs,
        )

    def prediction(n_jobs):
        return PrivatePredictionClassifier(
            tree,
            n_estimators=60,
            classes=[0, 1],
            epsilon=4.0,
            max_queries=600,
            random_state=0,
            noise_random_state=3,
            n_jobs=n_jobs,
        )

    for factory in (subsample, prediction):
        serial, parallel = _fitted_pair(factory, X, y)
        np.testing.assert_array_equal(
            parallel._vote_counts(Xq), serial._vote_counts(Xq)
        )
        np.testing.assert_array_equal(parallel.predict(Xq), serial.predict(Xq))
    serial, parallel = _fitted_pair(prediction, X, y)
    np.testing.assert_array_equal(
        parallel.predict_proba(Xq[:50]), serial.predict_proba(Xq[:50])
    )


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_regressors_answer_identically_with_parallel_teachers(always_parallel):
    X, y = make_regression(n_samples=1000, n_features=5, noise=5.0, random_state=2)
    Xq = X[800:]

    def mean(n_jobs):
        return PrivatePredictionRegressor(
            DecisionTreeRegressor(max_depth=4),
            n_estimators=40,
            target_range=(-400, 400),
            epsilon=2.0,
            max_queries=200,
            random_state=0,
            noise_random_state=5,
            n_jobs=n_jobs,
        )

    def soft(n_jobs):
        return SoftLabelPrivateRegressor(
            DecisionTreeRegressor(max_depth=4),
            n_estimators=80,
            target_range=(-400, 400),
            epsilon=30.0,
            mechanism=SoftLabelHistogram(gamma=0.25, max_unstable=40),
            random_state=0,
            noise_random_state=5,
            n_jobs=n_jobs,
        )

    for factory in (mean, soft):
        serial, parallel = _fitted_pair(factory, X[:800], y[:800])
        np.testing.assert_array_equal(parallel.predict(Xq), serial.predict(Xq))


# -- the serving loop: statistics chunk by chunk ----------------------------------


class CountingStatistic:
    """Counts the rows an estimator's vote statistic is computed for."""

    def __init__(self, model):
        self.model = model
        self.rows = 0
        self.calls = 0
        self.original = model._vote_counts

    def __call__(self, X):
        self.rows += X.shape[0]
        self.calls += 1
        return self.original(X)


def _stability_model(**params):
    X, y, _ = _classification(n=3000)
    defaults = dict(
        estimator=DecisionTreeClassifier(max_depth=3),
        n_estimators=100,
        classes=[0, 1],
        epsilon=8.0,
        mechanism=SparseVector(max_unstable=8, fallback="abstain"),
        random_state=0,
        noise_random_state=11,
    )
    if "max_unstable" in params or "fallback" in params:
        options = {"max_unstable": 8, "fallback": "abstain"}
        options.update(
            {k: params.pop(k) for k in ("max_unstable", "fallback") if k in params}
        )
        defaults["mechanism"] = SparseVector(**options)
    defaults.update(params)
    return SubsampleAggregateClassifier(**defaults).fit(X[:900], y[:900])


def _queries(n=3000, seed=4):
    X, _ = make_classification(
        n_samples=n, n_features=8, n_informative=5, random_state=seed
    )
    return X


def _answers(model, X):
    labels, abstained = model.predict(X, return_abstained=True)
    return labels, abstained, model.budget_status().n_served


@pytest.mark.parametrize("fallback", ["abstain", "noisy_max"])
def test_chunked_answers_equal_one_shot_answers(monkeypatch, fallback):
    Xq = _queries()
    monkeypatch.setattr(loop, "_FIRST_CHUNK", 10**9)  # one shot, as before
    reference = _answers(_stability_model(fallback=fallback), Xq)
    for first in (1, 7, 64, 256):
        monkeypatch.setattr(loop, "_FIRST_CHUNK", first)
        model = _stability_model(fallback=fallback)
        got = _answers(model, Xq)
        assert got[2] == reference[2]  # rows served before the halt
        np.testing.assert_array_equal(got[0], reference[0])
        np.testing.assert_array_equal(got[1], reference[1])


def test_rows_after_a_halt_are_never_counted(monkeypatch):
    monkeypatch.setattr(loop, "_FIXED_SHARE", 1.0)  # chunks only double
    Xq = _queries()
    model = _stability_model()
    counting = CountingStatistic(model)
    model._vote_counts = counting
    model.predict(Xq)
    assert model.budget_status().halted
    halted_at = model.budget_status().n_served
    assert 0 < halted_at < Xq.shape[0] // 4  # the model halts early
    # Chunks double, a short tail joins the last one: fewer than
    # max(3 h, first chunk) rows counted.
    assert counting.rows <= max(3 * halted_at, loop._FIRST_CHUNK)
    assert counting.rows < Xq.shape[0] // 2


def test_a_model_that_never_halts_counts_each_row_once(monkeypatch):
    monkeypatch.setattr(loop, "_FIXED_SHARE", 1.0)  # chunks only double
    Xq = _queries(n=5000)
    model = _stability_model(epsilon=1e6, max_unstable=10_000)
    counting = CountingStatistic(model)
    model._vote_counts = counting
    model.predict(Xq)
    assert counting.rows == Xq.shape[0]
    assert counting.calls <= 1 + int(np.log2(Xq.shape[0] / loop._FIRST_CHUNK)) + 1


def test_chunks_with_release_cache_and_ledger(monkeypatch, tmp_path):
    Xq = _queries(n=1500)
    batch = np.vstack([Xq[:400], Xq[:100], Xq[400:]])  # repeated rows inside

    def fitted():
        path = tmp_path / f"ledger-{len(list(tmp_path.iterdir()))}.db"
        ledger = PrivacyLedger(path, epsilon=100.0, delta=1e-3)
        return _stability_model(max_unstable=30, accountant=ledger)

    monkeypatch.setattr(loop, "_FIRST_CHUNK", 10**9)
    one_shot = fitted()
    reference = one_shot.predict(batch, return_abstained=True)
    again = one_shot.predict(batch[::-1], return_abstained=True)
    monkeypatch.setattr(loop, "_FIRST_CHUNK", 16)
    chunked = fitted()
    np.testing.assert_array_equal(
        chunked.predict(batch, return_abstained=True)[0], reference[0]
    )
    np.testing.assert_array_equal(
        chunked.predict(batch[::-1], return_abstained=True)[0], again[0]
    )
    assert chunked.budget_status() == one_shot.budget_status()


def test_noisy_mean_fallback_is_answered_at_once(monkeypatch):
    """Its fallback noise is drawn per call: the loop must not cut the batch."""
    X, y = make_regression(n_samples=1400, n_features=5, noise=5.0, random_state=2)

    def fitted():
        return SoftLabelPrivateRegressor(
            DecisionTreeRegressor(max_depth=3),
            n_estimators=200,
            target_range=(-400, 400),
            epsilon=30.0,
            mechanism=SoftLabelHistogram(
                gamma=0.25, max_unstable=400, fallback="noisy_mean"
            ),
            random_state=0,
            noise_random_state=5,
        ).fit(X[:1000], y[:1000])

    reference = fitted().predict(X[1000:])
    monkeypatch.setattr(loop, "_FIRST_CHUNK", 3)
    model = fitted()
    assert not model._serving_state_.engine.chunk_invariant
    np.testing.assert_array_equal(model.predict(X[1000:]), reference)


def test_chunk_sizes_grow_until_the_fixed_cost_is_small():
    timings, sizes = [], []
    for start, stop in loop._chunks(200_000, timings):
        sizes.append(stop - start)
        timings.append((stop - start, 0.5 + 1e-5 * (stop - start)))  # 0.5 s fixed
    assert sum(sizes) == 200_000 and sizes[:2] == [256, 512]
    # After two chunks the fixed 0.5 s is fitted: the next chunk would need
    # 950,000 rows to make it 5% of its time, so it takes all the rest.
    assert len(sizes) == 3
    timings, sizes = [], []
    for start, stop in loop._chunks(10_000, timings):
        sizes.append(stop - start)
        timings.append((stop - start, 1e-5 * (stop - start)))  # no fixed cost
    assert sizes == [256, 512, 1024, 2048, 6160]  # doubling; the tail joins


def test_linear_teachers_parallel_unfused_path(always_parallel):
    X, y, Xq = _classification()
    teachers = [LogisticRegression().fit(X[i::5], y[i::5]) for i in range(5)]
    np.testing.assert_array_equal(
        count_teacher_votes(teachers, Xq, 2, n_jobs=2),
        _all_at_once(teachers, Xq, 2),
    )


def test_no_warning_from_parallel_paths(always_parallel):
    teachers, X = _teachers(n_teachers=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        count_teacher_votes(teachers, X, 3, n_jobs=2)


class BackendRecorder(TieTeacher):
    """Records joblib's active backend when asked (a forest would use it)."""

    seen: list = []

    def predict(self, X):
        from joblib.parallel import get_active_backend

        type(self).seen.append(type(get_active_backend()[0]).__name__)
        return super().predict(X)


def test_teachers_own_parallelism_stays_in_the_task(always_parallel):
    # Inside a block task a teacher's own joblib calls run sequentially (on a
    # Dask worker the nested backend would send each tree to the scheduler).
    BackendRecorder.seen = []
    teachers = [BackendRecorder(i).fit(None, None) for i in range(6)]
    count_teacher_votes(teachers, np.zeros((5, 1)), 2, n_jobs=2)
    # The first teacher is asked here (timed), the other five in tasks.
    assert BackendRecorder.seen[1:] == ["SequentialBackend"] * 5, BackendRecorder.seen
