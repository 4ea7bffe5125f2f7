"""``fit`` on Dask collections: teachers trained where the partitions live
(docs/cluster.rst, "Data larger than one machine").

On a two-worker ``distributed.LocalCluster`` (separate processes, loopback
only): a Dask DataFrame or array gives the very teachers of a NumPy fit with
the same ``random_state`` (identical votes), every teacher is fitted on
exactly its shard of the NumPy partition, in the NumPy order, no task result
that the client asks for is larger than a small fraction of ``X`` (only
teachers and counts come back), and bad input is refused with a ValueError
naming the parameter before anything is spent. The estimators released from
sufficient statistics (least squares, naive Bayes, PCA, the scaler,
``dpsklearn.statistics``) make the NumPy path's release from sums taken per
partition (equal up to rounding), and knowledge transfer's teacher fits on
the partitions. Under ``CI=true`` the module fails, rather than skips, when
``distributed`` or ``dask.dataframe`` is missing.

Run alone: ``python -m pytest -q -p no:cacheprovider -n 0
tests/test_dask_collections.py``.
"""

from __future__ import annotations

import importlib
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from _dask_cluster import ClientResults, local_cluster, require
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state

import dpsklearn
import dpsklearn.decomposition
from dpsklearn import (
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.teachers import partition_indices

_require = require
distributed = _require("distributed")
da = _require("dask.array")
dd = _require("dask.dataframe")

N_SAMPLES, N_FEATURES, N_TEACHERS = 3000, 8, 20
SEED = 7


class RowRecordingTree(DecisionTreeClassifier):
    """A tree that keeps the row ids (column 0 of ``X``) it was fitted on."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        self.rows_seen_ = np.asarray(X)[:, 0].astype(np.int64).copy()
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


@pytest.fixture(autouse=True)
def no_teacher_cache():
    with dpsklearn.config_context(teacher_cache=None):
        yield


@pytest.fixture(scope="module")
def dask_cluster():
    with local_cluster() as (cluster, client):
        # The test module's teacher class is sent by value (workers do not
        # import test modules).
        import cloudpickle

        cloudpickle.register_pickle_by_value(importlib.import_module(__name__))
        yield cluster, client


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=N_SAMPLES,
        n_features=N_FEATURES,
        n_informative=4,
        flip_y=0.1,
        random_state=0,
    )
    return X, y


def _frame(X, y):
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["label"] = y
    return frame


def _model(cls=SubsampleAggregateClassifier, estimator=None, **params):
    estimator = estimator or DecisionTreeClassifier(max_features="sqrt", max_depth=4)
    if cls is SubsampleAggregateClassifier:
        params.setdefault("mechanism", SparseVector(fallback="noisy_max"))
    else:
        params.setdefault("max_queries", 200)
    return cls(
        estimator,
        n_estimators=N_TEACHERS,
        classes=[0, 1],
        random_state=SEED,
        noise_random_state=0,
        **params,
    )


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # noise_random_state
        # 20 teachers on 3,000 rows: the planner's "too few rows" warning.
        warnings.filterwarnings("ignore", "SubsampleAggregateClassifier with")
        return model.fit(X, y)


@pytest.mark.parametrize(
    "cls", [SubsampleAggregateClassifier, PrivatePredictionClassifier]
)
@pytest.mark.parametrize("form", ["array", "frame"])
def test_votes_identical_to_a_numpy_fit(dask_cluster, data, cls, form):
    X, y = data
    if form == "array":
        local_X, local_y = X, y
        # Uneven chunks, and more than one column chunk (rechunked to rows).
        dask_X = da.from_array(X, chunks=((700, 800, 500, 1000), (5, 3)))
        dask_y = da.from_array(y, chunks=((700, 800, 500, 1000),))
        queries = X
    else:
        frame = _frame(X, y)
        local_X, local_y = frame.drop(columns="label"), frame["label"]
        parts = dd.from_pandas(frame, npartitions=5)
        dask_X, dask_y = parts.drop(columns="label"), parts["label"]
        queries = local_X
    local = _fit(_model(cls), local_X, local_y)
    remote = _fit(_model(cls), dask_X, dask_y)
    assert remote.n_estimators_ == local.n_estimators_ == N_TEACHERS
    assert remote.n_features_in_ == N_FEATURES
    if form == "frame":
        assert list(remote.feature_names_in_) == list(local_X.columns)
    np.testing.assert_array_equal(
        remote._vote_counts(queries), local._vote_counts(queries)
    )
    # Same teachers, same pinned noise: the private answers agree too.
    np.testing.assert_array_equal(
        remote.predict(queries[:50]), local.predict(queries[:50])
    )


def test_each_teacher_fitted_on_exactly_its_numpy_shard(dask_cluster, data):
    X, y = data
    X = X.copy()
    X[:, 0] = np.arange(N_SAMPLES)  # the row id, seen by the recording teacher
    model = _fit(
        _model(estimator=RowRecordingTree(max_depth=3)),
        da.from_array(X, chunks=(600, N_FEATURES)),
        da.from_array(y, chunks=600),
    )
    shards = partition_indices(N_SAMPLES, N_TEACHERS, check_random_state(SEED))
    for teacher, shard in zip(model.estimators_, shards, strict=True):
        # The very rows of the NumPy path's shard, in its order (X[shard]).
        np.testing.assert_array_equal(teacher.rows_seen_, shard)


def test_rows_never_come_back_to_the_client(dask_cluster, data):
    cluster, _client = dask_cluster
    n = 20_000  # X of 1.3 MB: a batch's 10 trees are a few kB
    X, y = make_classification(n_samples=n, n_features=N_FEATURES, random_state=1)
    frame = _frame(X, y)
    parts = dd.from_pandas(frame, npartitions=4)
    with ClientResults(cluster) as results:
        model = _fit(_model(), parts.drop(columns="label"), parts["label"])
    assert model.n_estimators_ == N_TEACHERS
    # The client asked for the partitions' lengths and the teachers: each
    # result, and all of them together, a small fraction of X.
    assert results.results, "no task result reached the client"
    sizes = [nbytes for _key, nbytes in results.results]
    assert max(sizes) < 0.05 * X.nbytes, results.results
    assert sum(sizes) < 0.1 * X.nbytes, results.results


def test_y_as_a_dask_array_beside_a_frame(dask_cluster, data):
    X, y = data
    frame = _frame(X, y)
    parts = dd.from_pandas(frame, npartitions=3)
    # Other chunks than the frame's partitions: y is rechunked to them.
    labels = da.from_array(y, chunks=1000)
    local = _fit(_model(), frame.drop(columns="label"), y)
    remote = _fit(_model(), parts.drop(columns="label"), labels)
    queries = frame.drop(columns="label")
    np.testing.assert_array_equal(
        remote._vote_counts(queries), local._vote_counts(queries)
    )


def test_label_set_read_on_the_workers(dask_cluster, data):
    X, y = data
    model = _model()
    model.set_params(classes=None)
    with pytest.warns(PrivacyLeakWarning, match="classes is None"):
        warnings.filterwarnings("ignore", "SubsampleAggregateClassifier with")
        model.fit(da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
    np.testing.assert_array_equal(model.classes_, [0, 1])


def test_fit_from_parquet(dask_cluster, data, tmp_path):
    _require("pyarrow")
    X, y = data
    frame = _frame(X, y)
    dd.from_pandas(frame, npartitions=4).to_parquet(tmp_path / "table")
    table = dd.read_parquet(tmp_path / "table")
    remote = _fit(_model(), table.drop(columns="label"), table["label"])
    local = _fit(_model(), frame.drop(columns="label"), frame["label"])
    queries = frame.drop(columns="label")
    np.testing.assert_array_equal(
        remote._vote_counts(queries), local._vote_counts(queries)
    )


def test_predict_on_the_workers_after_a_dask_fit(dask_cluster, data):
    X, y = data
    remote = _fit(
        _model(PrivatePredictionClassifier),
        da.from_array(X, chunks=1000),
        da.from_array(y, chunks=1000),
    )
    local = _fit(_model(PrivatePredictionClassifier), X, y)
    with joblib.parallel_config(backend="dask"):
        answers = remote.predict(X[:100])
    np.testing.assert_array_equal(answers, local.predict(X[:100]))


def test_dask_fit_bypasses_the_teacher_cache(dask_cluster, data):
    from dpsklearn.teachers import _cache

    X, y = data
    with dpsklearn.config_context(teacher_cache="memory"):
        _cache.clear_teacher_cache()
        _fit(_model(), da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
        assert len(_cache._MEMORY) == 0


def _spent_nothing(accountant):
    return accountant.spent == (0.0, 0.0) and accountant.events == []


@pytest.mark.parametrize(
    "case, name, match",
    [
        ("short_y", "y", "as many rows: X has 3000, y has 2900"),
        ("unknown_chunks", "X", "compute_chunk_sizes"),
        ("misaligned", "y", "partitions do not hold the same rows"),
        ("numpy_y", "y", "y as a Dask Series"),
        ("numpy_x", "X", "give X as a Dask"),
        ("unknown_label", "y", "not in the given `classes`"),
        ("infinite", "X", "X contains infinity"),
    ],
)
def test_bad_input_refused_before_the_spend(dask_cluster, data, case, name, match):
    X, y = data
    frame = _frame(X, y)
    parts = dd.from_pandas(frame, npartitions=4)
    dask_X, dask_y = da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    if case == "short_y":
        dask_y = dask_y[:2900]
    elif case == "unknown_chunks":
        dask_X = dask_X[dask_X[:, 0] > -np.inf]
    elif case == "misaligned":
        dask_X, dask_y = (
            parts.drop(columns="label"),
            parts["label"].repartition(npartitions=3),
        )
    elif case == "numpy_y":
        dask_y = y
    elif case == "numpy_x":
        dask_X = X
    elif case == "unknown_label":
        dask_y = da.from_array(
            np.where(np.arange(N_SAMPLES) == 2500, 5, y), chunks=1000
        )
    elif case == "infinite":
        bad = X.copy()
        bad[1234, 3] = np.inf
        dask_X = da.from_array(bad, chunks=1000)
    accountant = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    model = _model(accountant=accountant)
    with pytest.raises(ValueError, match=match) as error:
        _fit(model, dask_X, dask_y)
    assert name in str(error.value).split(":")[0] or str(error.value).startswith(name)
    assert _spent_nothing(accountant)
    assert not hasattr(model, "estimators_")


def test_estimators_without_dask_fit_refuse_rather_than_compute(dask_cluster, data):
    from dpsklearn import ExponentialMechanismERMRegressor

    X, y = data
    model = ExponentialMechanismERMRegressor(target_range=(0, 1))
    with pytest.raises(ValueError, match="does not take a Dask collection"):
        model.fit(da.from_array(X, chunks=1000), da.from_array(y * 1.0, chunks=1000))


# -- the private-statistics estimators: statistics summed over partitions ------


def _schema_frame(data, n_partitions=4):
    X, y = data
    frame = _frame(np.clip(X, -4, 4), y)
    schema = dpsklearn.PublicSchema(
        bounds={f"x{i}": (-4.0, 4.0) for i in range(N_FEATURES)}
    )
    return frame, dd.from_pandas(frame, npartitions=n_partitions), schema


@pytest.mark.parametrize("n_bins", [0, 4])
def test_least_squares_classifier_same_release_from_partitions(
    dask_cluster, data, n_bins
):
    frame, parts, schema = _schema_frame(data)
    params = dict(
        schema=schema, classes=[0, 1], n_bins=n_bins, epsilon=2.0, noise_random_state=0
    )
    local = _fit(
        dpsklearn.PrivateLeastSquaresClassifier(**params),
        frame.drop(columns="label"),
        frame["label"],
    )
    remote = _fit(
        dpsklearn.PrivateLeastSquaresClassifier(**params),
        parts.drop(columns="label"),
        parts["label"],
    )
    # The same release and noise: the sums differ only in rounding.
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-7, atol=1e-9)
    if n_bins:
        np.testing.assert_allclose(
            remote.bin_coef_, local.bin_coef_, rtol=1e-7, atol=1e-9
        )
    queries = frame.drop(columns="label")
    np.testing.assert_array_equal(remote.predict(queries), local.predict(queries))


def test_linear_regression_same_release_from_partitions(dask_cluster, data):
    frame, parts, schema = _schema_frame(data)
    target = frame["x0"] * 2.0 + frame["x1"]
    frame = frame.assign(label=target)
    parts = dd.from_pandas(frame, npartitions=3)
    params = dict(schema=schema, y_bound=(-12.0, 12.0), n_bins=0, noise_random_state=0)
    local = _fit(
        dpsklearn.PrivateLinearRegression(**params),
        frame.drop(columns="label"),
        frame["label"],
    )
    remote = _fit(
        dpsklearn.PrivateLinearRegression(**params),
        parts.drop(columns="label"),
        parts["label"],
    )
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"classes": [0, 1]}, "schema: with a Dask X every column"),
        ({"schema": "full"}, "classes: with Dask X and y"),
        ({"schema": "full", "classes": [0]}, "not in the given `classes`"),
    ],
)
def test_least_squares_refuses_what_it_would_read(dask_cluster, data, params, match):
    frame, parts, schema = _schema_frame(data)
    if params.get("schema") == "full":
        params = {**params, "schema": schema}
    accountant = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    model = dpsklearn.PrivateLeastSquaresClassifier(accountant=accountant, **params)
    with pytest.raises(ValueError, match=match):
        _fit(model, parts.drop(columns="label"), parts["label"])
    assert _spent_nothing(accountant)


def test_knowledge_transfer_teacher_fitted_from_partitions(dask_cluster, data):
    from sklearn.linear_model import LogisticRegression

    X, y = data
    public = X[:400]

    def transfer():
        teacher = _model(PrivatePredictionClassifier, epsilon=4.0, max_queries=None)
        return dpsklearn.KnowledgeTransferClassifier(
            teacher, LogisticRegression(), random_state=0
        )

    local = _fit_transfer(transfer(), X, y, public)
    remote = _fit_transfer(
        transfer(), da.from_array(X, chunks=700), da.from_array(y, chunks=700), public
    )
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
    assert remote.n_public_labelled_ == local.n_public_labelled_


def test_knowledge_transfer_needs_public_classes_for_dask(dask_cluster, data):
    from sklearn.linear_model import LogisticRegression

    X, y = data
    teacher = _model(PrivatePredictionClassifier)
    teacher.set_params(classes=None)
    model = dpsklearn.KnowledgeTransferClassifier(teacher, LogisticRegression())
    with pytest.raises(ValueError, match="classes: with Dask X and y"):
        model.fit(da.from_array(X, chunks=700), da.from_array(y, chunks=700), X[:50])


def _fit_transfer(model, X, y, public):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y, X_public=public)


def test_naive_bayes_same_release_from_partitions(dask_cluster, data):
    frame, parts, schema = _schema_frame(data)
    params = dict(schema=schema, classes=[0, 1], epsilon=2.0, noise_random_state=0)
    local = _fit(
        dpsklearn.PrivateNaiveBayes(**params),
        frame.drop(columns="label"),
        frame["label"],
    )
    remote = _fit(
        dpsklearn.PrivateNaiveBayes(**params),
        parts.drop(columns="label"),
        parts["label"],
    )
    np.testing.assert_allclose(remote.theta_, local.theta_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(remote.var_, local.var_, rtol=1e-9, atol=1e-12)
    queries = frame.drop(columns="label")
    np.testing.assert_array_equal(remote.predict(queries), local.predict(queries))
    accountant = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    model = dpsklearn.PrivateNaiveBayes(
        schema=schema, classes=[1, 2], accountant=accountant
    )
    with pytest.raises(ValueError, match="not in the given `classes`"):
        _fit(model, parts.drop(columns="label"), parts["label"])
    assert _spent_nothing(accountant)


@pytest.mark.parametrize("name", ["PrivatePCA", "PrivateStandardScaler"])
def test_bounded_columns_same_release_from_partitions(dask_cluster, data, name):
    X, _y = data
    cls = getattr(dpsklearn.decomposition, name)
    params = dict(bounds=(-4.0, 4.0), epsilon=2.0, noise_random_state=0)
    local = _fit(cls(**params), X, None)
    remote = _fit(cls(**params), da.from_array(X, chunks=(700, 3)), None)
    for attribute in ("mean_", "components_", "var_"):
        if hasattr(local, attribute):
            np.testing.assert_allclose(
                getattr(remote, attribute),
                getattr(local, attribute),
                rtol=1e-7,
                atol=1e-9,
            )
    np.testing.assert_allclose(
        remote.transform(X[:20]), local.transform(X[:20]), rtol=1e-6, atol=1e-8
    )
    with pytest.raises(ValueError, match="bounds: with a Dask X"):
        cls(epsilon=2.0).fit(da.from_array(X, chunks=700))


@pytest.mark.parametrize("form", ["array", "series", "frame"])
def test_statistics_same_release_from_partitions(dask_cluster, data, form):
    from dpsklearn import statistics

    X, _y = data
    column = X[:, 0]
    if form == "array":
        values, dask_values = X[:, :3], da.from_array(X[:, :3], chunks=(700, 2))
    elif form == "series":
        values = column
        dask_values = dd.from_pandas(pd.Series(column), npartitions=4)
    else:
        values = X[:, :2]
        dask_values = dd.from_pandas(pd.DataFrame(X[:, :2]), npartitions=3)
    for function in (statistics.mean, statistics.var):
        np.testing.assert_allclose(
            function(dask_values, (-4, 4), noise_random_state=0),
            function(values, (-4, 4), noise_random_state=0),
            rtol=1e-9,
        )
    if form == "series":
        local = statistics.histogram(values, 8, (-4, 4), noise_random_state=0)
        remote = statistics.histogram(dask_values, 8, (-4, 4), noise_random_state=0)
        np.testing.assert_allclose(remote[0], local[0], rtol=1e-9)
        np.testing.assert_allclose(
            statistics.quantile(
                dask_values, [0.25, 0.5], (-4, 4), noise_random_state=0
            ),
            statistics.quantile(values, [0.25, 0.5], (-4, 4), noise_random_state=0),
            rtol=1e-9,
        )
