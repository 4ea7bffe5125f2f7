"""Fitting from Dask collections on a real cluster that ``.ci/run`` starts.

``.ci/run`` starts a ``distributed`` scheduler and two worker processes
(``dask scheduler``, ``dask worker --memory-limit 2GB``) on 127.0.0.1 and
gives their address in ``DPSKLEARN_TEST_DASK_SCHEDULER``; these tests
connect to it. They check the two promises of ``docs/cluster.rst`` on
machinery that is not the test process's own: the same model and seed give
the very votes of a NumPy fit whether the rows come as a Dask array or a
Dask DataFrame, and every teacher is fitted on exactly its shard of the
NumPy partition, in its order (no task gets rows of another's shard).
``tests/test_dask_collections.py`` checks the rest on a ``LocalCluster``.

Without the variable (a developer's machine) the module is skipped; under
``CI=true`` it fails instead, and so does a scheduler that cannot be
reached: CI must run these.
"""

from __future__ import annotations

import importlib
import os
import warnings

import numpy as np
import pytest
from _dask_teachers import RowRecordingTree
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state

import dpsklearn
from dpsklearn import PrivacyLeakWarning, SparseVector, SubsampleAggregateClassifier
from dpsklearn.teachers import partition_indices

IN_CI = os.environ.get("CI", "").strip().lower() == "true"
ADDRESS = os.environ.get("DPSKLEARN_TEST_DASK_SCHEDULER")

if not ADDRESS:
    if IN_CI:
        raise RuntimeError(
            "DPSKLEARN_TEST_DASK_SCHEDULER is unset: .ci/run starts a Dask "
            "cluster for these tests and must pass its address"
        )
    pytest.skip(
        "no Dask cluster: set DPSKLEARN_TEST_DASK_SCHEDULER (.ci/run does)",
        allow_module_level=True,
    )

distributed = importlib.import_module("distributed")
da = importlib.import_module("dask.array")
dd = importlib.import_module("dask.dataframe")
pd = importlib.import_module("pandas")

N_SAMPLES, N_FEATURES, N_TEACHERS, SEED = 3000, 8, 20, 7
#: A minute of fits through the cluster: the slow stage (.ci/run) runs them.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    # A scheduler that does not answer within the timeout fails the tests.
    with distributed.Client(ADDRESS, timeout=60) as connected:
        connected.wait_for_workers(2, timeout=120)
        # The scheduler and workers import the recording teacher from
        # tests/_dask_teachers.py: .ci/run puts tests/ on their path.
        yield connected


@pytest.fixture(autouse=True)
def no_teacher_cache():
    with dpsklearn.config_context(teacher_cache=None):
        yield


def _data():
    return make_classification(
        n_samples=N_SAMPLES,
        n_features=N_FEATURES,
        n_informative=4,
        flip_y=0.1,
        random_state=0,
    )


def _fit(X, y, estimator=None):
    model = SubsampleAggregateClassifier(
        estimator or DecisionTreeClassifier(max_features="sqrt", max_depth=4),
        n_estimators=N_TEACHERS,
        classes=[0, 1],
        mechanism=SparseVector(fallback="noisy_max"),
        random_state=SEED,
        noise_random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # noise_random_state
        warnings.filterwarnings("ignore", "SubsampleAggregateClassifier with")
        return model.fit(X, y)


def test_the_cluster_is_the_one_ci_started(client):
    workers = client.scheduler_info()["workers"]
    assert len(workers) >= 2
    # Separate processes from this one (not an in-process LocalCluster).
    pids = client.run(os.getpid)
    assert os.getpid() not in pids.values()


@pytest.mark.parametrize("form", ["array", "frame"])
def test_votes_identical_to_a_numpy_fit(client, form):
    X, y = _data()
    if form == "array":
        local_X, local_y, queries = X, y, X
        dask_X = da.from_array(X, chunks=((700, 800, 500, 1000), N_FEATURES))
        dask_y = da.from_array(y, chunks=((700, 800, 500, 1000),))
    else:
        frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(N_FEATURES)])
        frame["label"] = y
        local_X, local_y = frame.drop(columns="label"), frame["label"]
        parts = dd.from_pandas(frame, npartitions=5)
        dask_X, dask_y = parts.drop(columns="label"), parts["label"]
        queries = local_X
    local = _fit(local_X, local_y)
    remote = _fit(dask_X, dask_y)
    assert remote.n_estimators_ == local.n_estimators_ == N_TEACHERS
    np.testing.assert_array_equal(
        remote.vote_counts(queries), local.vote_counts(queries)
    )
    np.testing.assert_array_equal(
        remote.predict(queries[:50]), local.predict(queries[:50])
    )


def test_each_teacher_fitted_on_exactly_its_numpy_shard(client):
    X, y = _data()
    X = X.copy()
    X[:, 0] = np.arange(N_SAMPLES)  # the row id, seen by the recording teacher
    model = _fit(
        da.from_array(X, chunks=(600, N_FEATURES)),
        da.from_array(y, chunks=600),
        estimator=RowRecordingTree(max_depth=3),
    )
    shards = partition_indices(N_SAMPLES, N_TEACHERS, check_random_state(SEED))
    for teacher, shard in zip(model.estimators_, shards, strict=True):
        np.testing.assert_array_equal(teacher.rows_seen_, shard)
