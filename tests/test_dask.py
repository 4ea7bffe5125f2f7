"""Training teachers and asking them on a Dask cluster through joblib
(docs/design.rst, "Shards and teachers"; docs/cluster.rst).

A two-worker ``distributed.LocalCluster`` (separate processes, loopback only)
fits the teachers under ``joblib.parallel_config(backend="dask")``; the fitted
model must vote exactly as a local fit with the same ``random_state``, and
each task must carry only its own shards' rows, never the whole ``X``.
``predict`` under the same backend counts the votes on the workers: the
answers equal the local ones for a fixed noise seed, the teachers are sent
once, and the tasks return vote counts only.
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest
from _dask_cluster import local_cluster
from _helpers import fit_quietly
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

import dpsklearn
import dpsklearn.teachers._inference as inference
from dpsklearn import (
    PrivacyLeakWarning,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.baselines import teacher_majority_vote

distributed = pytest.importorskip("distributed")
from distributed.diagnostics.plugin import SchedulerPlugin  # noqa: E402

# How long to wait for the two workers to come up (a timeout, not a timing
# assertion: speed is measured in benchmarks/dask_overhead.py).
WORKER_TIMEOUT = 120.0
N_SAMPLES, N_FEATURES, N_TEACHERS = 2000, 20, 20


class _TaskPayloads(SchedulerPlugin):
    """Record, for every joblib batch task, the bytes of the data it depends on.

    joblib's Dask backend scatters each large argument (here a task's
    ``X[rows]`` and ``y[rows]``) to the cluster and submits the task with the
    scattered futures as dependencies; the scheduler knows each one's size.
    """

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.payloads = {}

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "processing" or "_fit_in_this_process" not in str(key):
            return
        task = self.scheduler.tasks.get(key)
        if task is not None:
            self.payloads[str(key)] = sorted(d.nbytes for d in task.dependencies)


class _TaskResults(SchedulerPlugin):
    """Record the type and size of what each vote-counting task returned."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.results = {}

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory" or "_ask_block" not in str(key):
            return
        task = self.scheduler.tasks.get(key)
        if task is not None:
            self.results[str(key)] = (task.type, task.nbytes)


@pytest.fixture(autouse=True)
def no_teacher_cache():
    # Every fit here fits, every vote is counted (nothing reused in memory).
    with dpsklearn.config_context(teacher_cache=None):
        yield


@pytest.fixture(scope="module")
def dask_cluster():
    with local_cluster(WORKER_TIMEOUT) as (cluster, client):
        yield cluster, client


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=N_SAMPLES,
        n_features=N_FEATURES,
        n_informative=5,
        flip_y=0.1,
        random_state=0,
    )
    return X, y


def _model(**params):
    # A randomised teacher, so that equal votes also show equal teacher seeds.
    return SubsampleAggregateClassifier(
        DecisionTreeClassifier(max_features="sqrt", max_depth=4),
        n_estimators=N_TEACHERS,
        classes=[0, 1],
        mechanism=SparseVector(fallback="noisy_max"),
        random_state=7,
        noise_random_state=0,
        **params,
    )


def _fit(model, X, y):
    return fit_quietly(model, X, y, PrivacyLeakWarning)  # noise_random_state


def test_dask_fit_votes_identical_to_local_fit(dask_cluster, data):
    cluster, _client = dask_cluster
    X, y = data
    payloads = _TaskPayloads(cluster.scheduler)
    cluster.scheduler.add_plugin(payloads, name="dpsklearn-task-payloads")
    try:
        with joblib.parallel_config(backend="dask", wait_for_workers_timeout=30):
            on_dask = _fit(_model(), X, y)
    finally:
        cluster.scheduler.remove_plugin(name="dpsklearn-task-payloads")
    # The local reference fits in this process, in one batch: teacher seeds
    # are per teacher, so neither the backend nor the batching may matter.
    local = _fit(_model(n_jobs=None), X, y)

    assert on_dask.n_estimators_ == local.n_estimators_ == N_TEACHERS
    np.testing.assert_array_equal(on_dask._vote_counts(X), local._vote_counts(X))
    np.testing.assert_array_equal(
        teacher_majority_vote(on_dask, X), teacher_majority_vote(local, X)
    )
    # Same teachers and the same pinned noise: the private answers agree too
    # (50 queries stay within max_unstable=100 even if every one fails).
    np.testing.assert_array_equal(on_dask.predict(X[:50]), local.predict(X[:50]))

    # Each task carried only its shards' rows: the two workers got one task
    # each, and together the tasks shipped every row of X and y exactly once.
    row_bytes = (N_FEATURES + 1) * 8  # float64 features + int64 class index
    assert len(payloads.payloads) == 2, payloads.payloads
    per_task = [sum(sizes) for sizes in payloads.payloads.values()]
    assert sum(per_task) == N_SAMPLES * row_bytes
    for task_bytes in per_task:
        assert task_bytes == (N_SAMPLES // 2) * row_bytes
        assert task_bytes < X.nbytes


def test_dask_fit_reports_progress(dask_cluster, data, capsys):
    _cluster, _client = dask_cluster
    X, y = data
    with joblib.parallel_config(backend="dask"):
        _fit(_model(n_jobs=-1, verbose=1), X, y)
    err = capsys.readouterr().err
    assert f"fitting teachers: {N_TEACHERS} of {N_TEACHERS} teachers" in err or (
        f"{N_TEACHERS}/{N_TEACHERS}" in err  # the tqdm bar
    ), err


def _prediction_model():
    return PrivatePredictionClassifier(
        DecisionTreeClassifier(max_features="sqrt", max_depth=4),
        n_estimators=N_TEACHERS,
        classes=[0, 1],
        epsilon=2.0,
        max_queries=N_SAMPLES,
        random_state=7,
        noise_random_state=0,
    )


def test_dask_predict_counts_votes_on_the_workers(dask_cluster, data):
    cluster, client = dask_cluster
    X, y = data
    local = _fit(_prediction_model(), X, y)
    remote = _fit(_prediction_model(), X, y)  # same teachers, same noise seed
    expected = local.predict(X)
    expected_counts = local._vote_counts(X[:300])

    results = _TaskResults(cluster.scheduler)
    cluster.scheduler.add_plugin(results, name="dpsklearn-task-results")
    try:
        with joblib.parallel_config(backend="dask"):
            np.testing.assert_array_equal(remote.predict(X), expected)
            first = [e[3] for e in inference._SCATTERED if e[0]() is client]
            np.testing.assert_array_equal(remote._vote_counts(X[:300]), expected_counts)
            second = [e[3] for e in inference._SCATTERED if e[0]() is client]
            on_workers = {key for keys in client.has_what().values() for key in keys}
    finally:
        cluster.scheduler.remove_plugin(name="dpsklearn-task-results")

    # Every task ran on a worker and returned one block's vote counts: an
    # int64 array of (queries, classes), never the teachers' predictions
    # (a block of N_TEACHERS / 2 teachers' predictions is 5 times larger).
    assert len(results.results) >= 4, results.results
    counts_bytes = N_SAMPLES * 2 * 8
    predictions_bytes = (N_TEACHERS // 2) * N_SAMPLES * 8
    for task_type, nbytes in results.results.values():
        assert task_type in ("list", "numpy.ndarray", "ndarray"), task_type
        assert nbytes <= counts_bytes + 4096, nbytes
        assert nbytes < predictions_bytes
    # The teachers were sent once and stay on the workers: the second batch
    # used the very blocks the first one scattered.
    assert len(first) == 1 and len(second) == 1 and second[0] is first[0]
    assert {f.key for f in first[0]} <= on_workers


def test_vote_task_returns_only_counts(data):
    """What a task function returns: an int array of (queries, classes)."""
    X, y = data
    model = _fit(_model(), X, y)
    block = model.estimators_[:5]
    counts = inference._votes_of_block(block, X[:37], 2)
    assert isinstance(counts, np.ndarray) and counts.dtype == np.int64
    assert counts.shape == (37, 2) and (counts.sum(axis=1) == 5).all()
