"""Regression on Dask collections: teachers and shards trained where the
partitions live (docs/cluster.rst, "Data larger than one machine").

On a two-worker ``distributed.LocalCluster`` (separate processes, loopback
only): :class:`~dpsklearn.PrivatePredictionRegressor` and
:class:`~dpsklearn.SoftLabelPrivateRegressor` fitted on a Dask DataFrame or
array give the very teachers of a NumPy fit with the same seeds (identical
predictions, private answers included), and
:class:`~dpsklearn.PrivateKernelRidge` releases the same model from a Dask
input as from NumPy (its sharded fit trains each shard on the workers, its
sufficient statistics are summed over the partitions). Bad input (no public
target range, targets that are not finite numbers, a mode that keeps the
training rows in the model) is refused with a ValueError naming the
parameter before anything is spent. Under ``CI=true`` the module fails,
rather than skips, when ``distributed`` or ``dask.dataframe`` is missing.

Run alone: ``python -m pytest -q -p no:cacheprovider -n 0
tests/test_dask_regression.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _dask_cluster import ClientResults, local_cluster, require
from sklearn.datasets import make_regression
from sklearn.linear_model import LogisticRegression, Ridge

import dpsklearn
from dpsklearn import (
    ClippedMean,
    PrivacyAccountant,
    PrivatePredictionRegressor,
    SoftLabelPrivateRegressor,
)

require("distributed")
da = require("dask.array")
dd = require("dask.dataframe")

N_SAMPLES, N_FEATURES, N_TEACHERS = 3000, 6, 20
SEED = 7
TARGET_RANGE = (-300.0, 300.0)


@pytest.fixture(autouse=True)
def no_teacher_cache():
    with dpsklearn.config_context(teacher_cache=None):
        yield


@pytest.fixture(scope="module")
def dask_cluster():
    with local_cluster() as (cluster, client):
        yield cluster, client


@pytest.fixture(scope="module")
def data():
    X, y = make_regression(
        n_samples=N_SAMPLES, n_features=N_FEATURES, noise=5.0, random_state=0
    )
    return X, y


def _forms(X, y, form):
    """``(local X, local y, Dask X, Dask y, queries)`` of one input form."""
    if form == "array":
        # Uneven chunks, and more than one column chunk (rechunked to rows).
        chunks = (700, 800, 500, 1000)
        return (
            X,
            y,
            da.from_array(X, chunks=(chunks, (4, N_FEATURES - 4))),
            da.from_array(y, chunks=(chunks,)),
            X,
        )
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["target"] = y
    parts = dd.from_pandas(frame, npartitions=5)
    local_X = frame.drop(columns="target")
    return (
        local_X,
        frame["target"],
        parts.drop(columns="target"),
        parts["target"],
        local_X,
    )


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise_random_state, few rows per teacher
        return model.fit(X, y)


def _regressor(cls, **params):
    if cls is PrivatePredictionRegressor:
        params.setdefault("mechanism", ClippedMean(target_std=1000.0))
        params.setdefault("max_queries", 50)
        params.setdefault("target_range", TARGET_RANGE)
    else:
        params.setdefault("mechanism", "clipped_mean")
        params.setdefault("max_queries", 50)
        params.setdefault("target_range", TARGET_RANGE)
    return cls(
        params.pop("estimator", Ridge()),
        n_estimators=N_TEACHERS,
        epsilon=5.0,
        random_state=SEED,
        noise_random_state=0,
        **params,
    )


ENSEMBLES = {
    "clipped_mean": (PrivatePredictionRegressor, {}),
    "adaptive_range": (
        PrivatePredictionRegressor,
        {"mechanism": dpsklearn.AdaptiveRange(target_std=1000.0)},
    ),
    "soft_label_mean": (SoftLabelPrivateRegressor, {}),
    "soft_label_test": (
        SoftLabelPrivateRegressor,
        {"mechanism": dpsklearn.SoftLabelHistogram(gamma=0.25)},
    ),
}


@pytest.mark.parametrize("ensemble", sorted(ENSEMBLES))
@pytest.mark.parametrize("form", ["array", "frame"])
def test_regression_ensembles_identical_to_a_numpy_fit(
    dask_cluster, data, ensemble, form
):
    cls, params = ENSEMBLES[ensemble]
    local_X, local_y, dask_X, dask_y, queries = _forms(*data, form)
    local = _fit(_regressor(cls, **params), local_X, local_y)
    remote = _fit(_regressor(cls, **params), dask_X, dask_y)
    assert remote.n_estimators_ == local.n_estimators_ == N_TEACHERS
    assert remote.n_features_in_ == N_FEATURES
    if form == "frame":
        assert list(remote.feature_names_in_) == list(local_X.columns)
    # The very teachers: every teacher's predictions are identical.
    for mine, theirs in zip(remote.estimators_, local.estimators_, strict=True):
        np.testing.assert_array_equal(mine.coef_, theirs.coef_)
    # Same teachers, same pinned noise: the private answers agree too.
    np.testing.assert_array_equal(
        remote.predict(queries[:50]), local.predict(queries[:50])
    )


def test_soft_label_classifier_teachers_from_partitions(dask_cluster, data):
    X, y = data
    labels = (y > 0).astype(np.int64)
    params = dict(estimator=LogisticRegression(), target_range=None)
    local = _fit(_regressor(SoftLabelPrivateRegressor, **params), X, labels)
    remote = _fit(
        _regressor(SoftLabelPrivateRegressor, **params),
        da.from_array(X, chunks=700),
        da.from_array(labels, chunks=700),
    )
    assert remote.target_range_ == local.target_range_ == (0.0, 1.0)
    for mine, theirs in zip(remote.estimators_, local.estimators_, strict=True):
        np.testing.assert_array_equal(mine.coef_, theirs.coef_)
    np.testing.assert_array_equal(remote.predict(X[:50]), local.predict(X[:50]))


def _spent_nothing(accountant):
    return accountant.spent == (0.0, 0.0) and accountant.events == []


@pytest.mark.parametrize("cls", [PrivatePredictionRegressor, SoftLabelPrivateRegressor])
@pytest.mark.parametrize(
    "case, name, match",
    [
        ("no_range", "target_range", "target range must be public"),
        ("nan_target", "y", "y contains NaN or infinity"),
        ("text_target", "y", "y must hold numeric regression targets"),
        ("numpy_y", "y", "y as a Dask Series"),
        ("infinite_x", "X", "X contains infinity"),
    ],
)
def test_bad_input_refused_before_the_spend(dask_cluster, data, cls, case, name, match):
    params = {"target_range": None} if case == "no_range" else {}
    _assert_refused(
        lambda accountant: _regressor(cls, accountant=accountant, **params),
        *_bad_input(*data, case),
        name,
        match,
    )


def _bad_input(X, y, case):
    """Dask ``X`` and ``y``, one of them spoiled as ``case`` says."""
    dask_X, dask_y = da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    if case == "nan_target":
        dask_y = da.from_array(np.where(np.arange(N_SAMPLES) == 2500, np.nan, y), 1000)
    elif case == "text_target":
        dask_y = da.from_array(np.array(["a"] * N_SAMPLES, dtype=object), 1000)
    elif case == "numpy_y":
        dask_y = y
    elif case == "infinite_x":
        bad = X.copy()
        bad[1234, 3] = np.inf
        dask_X = da.from_array(bad, chunks=1000)
    return dask_X, dask_y


def _assert_refused(make_model, dask_X, dask_y, name, match):
    """A ValueError naming ``name`` first, nothing spent, nothing fitted."""
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = make_model(accountant)
    with pytest.raises(ValueError, match=match) as error:
        _fit(model, dask_X, dask_y)
    message = str(error.value)
    assert message.startswith(name) or name in message.split(":")[0]
    assert _spent_nothing(accountant)
    assert not hasattr(model, "estimators_") and not hasattr(model, "coef_")


def test_soft_label_classifier_refuses_a_label_outside_zero_one(dask_cluster, data):
    X, y = data
    labels = np.where(np.arange(N_SAMPLES) == 10, 2, (y > 0).astype(np.int64))
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = _regressor(
        SoftLabelPrivateRegressor,
        estimator=LogisticRegression(),
        target_range=None,
        accountant=accountant,
    )
    with pytest.raises(ValueError, match="y contains label"):
        _fit(model, da.from_array(X, chunks=700), da.from_array(labels, chunks=700))
    assert _spent_nothing(accountant)


# -- PrivateKernelRidge: shards on the workers, statistics summed over them ----


def _kernel_ridge(mechanism, **params):
    params.setdefault("y_bound", TARGET_RANGE)
    return dpsklearn.PrivateKernelRidge(
        kernel_params={"feature_bounds": (-4.0, 4.0)},
        epsilon=2.0,
        mechanism=mechanism,
        random_state=SEED,
        noise_random_state=0,
        **params,
    )


KERNEL_RIDGE_RELEASES = {
    "staged_statistics": dpsklearn.SufficientStatistics(),
    "statistics": dpsklearn.SufficientStatistics(linear_share=0),
    "sharded_model": dpsklearn.OutputPerturbation(release="model", n_shards=4),
    "one_shard_model": dpsklearn.OutputPerturbation(release="model", n_shards=1),
}


@pytest.mark.parametrize("release", sorted(KERNEL_RIDGE_RELEASES))
@pytest.mark.parametrize("form", ["array", "frame"])
def test_kernel_ridge_same_release_from_partitions(dask_cluster, data, release, form):
    local_X, local_y, dask_X, dask_y, queries = _forms(*data, form)
    mechanism = KERNEL_RIDGE_RELEASES[release]
    local = _fit(_kernel_ridge(mechanism), local_X, local_y)
    remote = _fit(_kernel_ridge(mechanism), dask_X, dask_y)
    assert remote.release_ == local.release_
    assert remote.n_features_in_ == N_FEATURES
    np.testing.assert_array_equal(remote.random_frequencies_, local.random_frequencies_)
    # The same shards (or sums, up to the rounding of their order) and the
    # same noise: the same released model.
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    if getattr(local, "linear_coef_", None) is not None:
        np.testing.assert_allclose(
            remote.linear_coef_, local.linear_coef_, rtol=1e-6, atol=1e-8
        )
    np.testing.assert_allclose(
        remote.predict(queries[:200]), local.predict(queries[:200]), rtol=1e-6
    )


def test_kernel_ridge_shards_identical_to_numpy_shards(dask_cluster, data):
    X, y = data
    mechanism = dpsklearn.OutputPerturbation(release="model", n_shards=5)
    local = _fit(_kernel_ridge(mechanism), X, y)
    remote = _fit(
        _kernel_ridge(mechanism),
        da.from_array(X, chunks=700),
        da.from_array(y, chunks=700),
    )
    # Each shard solved on exactly the NumPy shard's rows, in its order.
    np.testing.assert_array_equal(remote.coef_, local.coef_)


@pytest.mark.parametrize(
    "case, name, match",
    [
        ("predictions", "X", "keeps every training row"),
        ("no_bound", "y_bound", "target range must be public"),
        ("nan_target", "y", "y contains NaN or infinity"),
        ("infinite_x", "X", "X contains infinity"),
    ],
)
def test_kernel_ridge_refuses_before_the_spend(dask_cluster, data, case, name, match):
    mechanism = dpsklearn.SufficientStatistics()
    params = {}
    if case == "predictions":
        mechanism = dpsklearn.OutputPerturbation(release="predictions")
    elif case == "no_bound":
        params["y_bound"] = None
    _assert_refused(
        lambda accountant: _kernel_ridge(mechanism, accountant=accountant, **params),
        *_bad_input(*data, case),
        name,
        match,
    )


# -- knowledge transfer: a regression teacher fitted from partitions ----------


@pytest.mark.parametrize("teacher_kind", ["ensemble", "kernel_ridge"])
def test_knowledge_transfer_regressor_teacher_from_partitions(
    dask_cluster, data, teacher_kind
):
    X, y = data
    public = X[:300]

    def transfer():
        if teacher_kind == "ensemble":
            teacher = _regressor(PrivatePredictionRegressor, max_queries=300)
        else:
            teacher = _kernel_ridge(dpsklearn.SufficientStatistics())
        return dpsklearn.KnowledgeTransferRegressor(
            teacher, Ridge(), query_strategy="sequential", random_state=0
        )

    local = _fit_transfer(transfer(), X, y, public)
    remote = _fit_transfer(
        transfer(), da.from_array(X, chunks=700), da.from_array(y, chunks=700), public
    )
    assert remote.n_public_labelled_ == local.n_public_labelled_
    np.testing.assert_allclose(remote.predict(X), local.predict(X), rtol=1e-6)


@pytest.mark.parametrize(
    "teacher, match",
    [
        ("ensemble", "target_range: with Dask X and y"),
        ("kernel_ridge", "y_bound: with Dask X and y"),
        ("erm", "X: the teacher"),
    ],
)
def test_knowledge_transfer_regressor_refuses_before_the_spend(
    dask_cluster, data, teacher, match
):
    X, y = data
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    if teacher == "ensemble":
        teacher = _regressor(
            PrivatePredictionRegressor, target_range=None, accountant=accountant
        )
    elif teacher == "kernel_ridge":
        teacher = _kernel_ridge(
            dpsklearn.SufficientStatistics(), y_bound=None, accountant=accountant
        )
    else:
        teacher = dpsklearn.ExponentialMechanismERMRegressor(
            target_range=TARGET_RANGE, accountant=accountant
        )
    model = dpsklearn.KnowledgeTransferRegressor(teacher, Ridge())
    with pytest.raises(ValueError, match=match):
        _fit_transfer(
            model, da.from_array(X, chunks=700), da.from_array(y, chunks=700), X[:50]
        )
    assert _spent_nothing(accountant)


def _fit_transfer(model, X, y, public):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y, X_public=public)


def test_a_dask_y_is_never_computed_to_check_its_targets(data):
    from dpsklearn._validation import check_regression_targets

    _X, y = data
    dask_y = da.from_array(y.astype(object), chunks=1000)
    # Left to the estimator's rule (checked on the workers, or refused).
    assert check_regression_targets(dask_y) is dask_y


def test_kernel_ridge_shards_send_back_weights_only(dask_cluster, data):
    cluster, _client = dask_cluster
    n = 20_000  # X of 0.96 MB; four shards' weights are a few kB
    X, y = make_regression(n_samples=n, n_features=N_FEATURES, random_state=1)
    mechanism = dpsklearn.OutputPerturbation(release="model", n_shards=4)
    with ClientResults(cluster) as results:
        model = _fit(
            _kernel_ridge(mechanism),
            da.from_array(X, chunks=5000),
            da.from_array(y, chunks=5000),
        )
    assert model.n_estimators_ == 4
    assert results.results, "no task result reached the client"
    sizes = [nbytes for _key, nbytes in results.results]
    assert max(sizes) < 0.05 * X.nbytes, results.results
    assert sum(sizes) < 0.1 * X.nbytes, results.results


def test_kernel_ridge_statistics_added_on_the_workers(dask_cluster, data):
    cluster, _client = dask_cluster
    X, y = data
    mechanism = dpsklearn.SufficientStatistics(linear_share=0)
    with ClientResults(cluster) as results:
        model = _fit(
            _kernel_ridge(mechanism),
            da.from_array(X, chunks=500),  # six partitions
            da.from_array(y, chunks=500),
        )
    gram_bytes = 8 * model.coef_.shape[0] ** 2
    large = [key for key, nbytes in results.results if nbytes >= gram_bytes / 2]
    # One Gram matrix reaches the client, not one per partition.
    assert len(large) == 1, results.results
