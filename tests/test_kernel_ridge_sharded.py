"""Sharded PrivateKernelRidge: divide and conquer, memory guard, chunked prediction.

See docs/design.rst, "Sharded kernel ridge". The privacy audit of the
sharded release is in ``tests/test_audit_regression.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state

from dpsklearn import OutputPerturbation, PrivacyAccountant, PrivateKernelRidge
from dpsklearn.kernel_ridge import _sharding
from dpsklearn.mechanisms import function_sensitivity, weight_sensitivity
from dpsklearn.teachers import partition_indices

pytestmark = pytest.mark.filterwarnings(
    "ignore:noise_random_state is set:dpsklearn.PrivacyLeakWarning"
)


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _model(n_shards="auto", release="predictions", n_components=100, **params):
    defaults = dict(
        kernel_params={"gamma": 1.0},
        mechanism=OutputPerturbation(
            release=release, n_components=n_components, n_shards=n_shards
        ),
        alpha=0.01,
        y_bound=1.0,
        epsilon=1.0,
        max_queries=500,
        random_state=0,
        noise_random_state=0,
    )
    return PrivateKernelRidge(**{**defaults, **params})


def test_shard_average_is_the_mean_of_clipped_exact_shard_fits():
    X, y = _data()
    model = _model(n_shards=4).fit(X, y)
    shards = partition_indices(len(y), 4, check_random_state(0))
    fits = [
        KernelRidge(alpha=0.01 * len(s), kernel="rbf", gamma=1.0).fit(X[s], y[s])
        for s in shards
    ]
    Q = np.random.default_rng(1).uniform(-1.2, 1.2, size=(50, 3))
    expected = np.mean([np.clip(f.predict(Q), -1, 1) for f in fits], axis=0)
    np.testing.assert_allclose(model._exact_predictions(Q), expected, atol=1e-9)
    assert model.n_estimators_ == 4
    assert model.shard_offsets_.tolist() == [0, 150, 300, 450]


def test_one_shard_is_the_unsharded_fit():
    X, y = _data()
    one = _model(n_shards=1).fit(X, y)
    auto = _model().fit(X, y)  # "auto": the whole Gram matrix fits
    assert auto.n_estimators_ == 1
    np.testing.assert_array_equal(one.predict(X[:20]), auto.predict(X[:20]))
    full = KernelRidge(alpha=0.01 * 600, kernel="rbf", gamma=1.0).fit(X, y)
    np.testing.assert_allclose(
        one._exact_predictions(X[:20]),
        np.clip(full.predict(X[:20]), -1, 1),
        atol=1e-9,
    )


@pytest.mark.parametrize("k", [1, 3, 7])
def test_sensitivity_is_lemma_2_at_the_smallest_shard_over_k(k):
    X, y = _data(n=500)
    alpha, M = 0.01, 1.0
    model = _model(n_shards=k, alpha=alpha).fit(X, y)
    rows = 500 // k
    lemma = function_sensitivity(1.0, M, alpha, rows)
    assert model.sensitivity_ == pytest.approx(min(lemma, 2 * M) / k)
    released = _model(n_shards=k, alpha=alpha, release="model").fit(X, y)
    radius = M / math.sqrt(alpha)
    weights = weight_sensitivity(1.0, M, alpha, rows)
    assert released.sensitivity_ == pytest.approx(min(weights, 2 * radius) / k)


def test_sharded_sensitivity_covers_the_empirical_change():
    # Neighbours replace one record (label -M vs +M, and a moved row); the
    # averaged clipped fits never differ by more than sensitivity_ anywhere
    # on a grid of queries.
    X, y = _data(n=120, d=2)
    rng = np.random.default_rng(5)
    model = _model(n_shards=3, alpha=0.05).fit(X, y)
    grid = np.vstack([X, rng.uniform(-1.5, 1.5, size=(300, 2))])
    worst = 0.0
    for i in range(0, 120, 12):
        lo, hi = y.copy(), y.copy()
        lo[i], hi[i] = -1.0, 1.0
        X_moved = X.copy()
        X_moved[i] = rng.uniform(-1, 1, size=2)
        a = _model(n_shards=3, alpha=0.05).fit(X, lo)._exact_predictions(grid)
        b = _model(n_shards=3, alpha=0.05).fit(X_moved, hi)
        worst = max(worst, np.abs(a - b._exact_predictions(grid)).max())
    assert 0 < worst <= model.sensitivity_


def test_memory_guard_refuses_before_any_allocation_or_spend(monkeypatch):
    X, y = _data(n=2000)

    def no_kernel(*args, **kwargs):
        raise AssertionError("a kernel matrix was built before the guard")

    monkeypatch.setattr(_sharding, "_kernel_matrix", no_kernel)
    shared = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    # 2,000 rows: a 30.5 MiB Gram matrix, over 4 MiB (at most 724 rows); two
    # shards of 1,000 rows (7.6 MiB) do not fit either, three (667 rows,
    # 3.4 MiB) do.
    model = _model(n_shards=1, accountant=shared)
    with config_context(working_memory=4):
        with pytest.raises(ValueError, match=r"n_shards=1\) .* Use n_shards >= 3"):
            model.fit(X, y)
        assert shared.events == []
        with pytest.raises(ValueError, match=r"n_shards=2\) puts up to 1000 rows"):
            model.set_params(mechanism__n_shards=2).fit(X, y)
        with pytest.raises(ValueError, match=r"n_shards=2001\) needs at least one"):
            model.set_params(mechanism__n_shards=2001).fit(X, y)
    assert shared.events == []


def test_auto_takes_the_fewest_shards_that_fit():
    X, y = _data(n=2000)
    with config_context(working_memory=8):
        model = _model().fit(X, y)
    assert model.working_memory_ == 8
    rows = math.isqrt(8 * 2**20 // 8)  # 1024 rows of 8 bytes squared
    assert model.n_estimators_ == math.ceil(2000 / rows) == 2
    largest = np.diff([*model.shard_offsets_, 2000]).max()
    assert 8 * largest**2 <= 8 * 2**20
    model_release = _model(release="model", n_components=50)
    with config_context(working_memory=0.05):
        assert model_release.fit(X, y).n_estimators_ > 1
    assert model_release.mechanism_.n_shards == model_release.n_estimators_


def test_prediction_blocks_stay_within_working_memory(monkeypatch):
    X, y = _data(n=2000)
    with config_context(working_memory=1):
        model = _model(n_shards=8, max_queries=3000).fit(X, y)
    shapes = []
    real = _sharding._kernel_matrix

    def recording(A, B, *args):
        shapes.append((A.shape[0], B.shape[0]))
        return real(A, B, *args)

    monkeypatch.setattr(_sharding, "_kernel_matrix", recording)
    Q = np.random.default_rng(2).uniform(-1, 1, size=(1500, 3))
    model.predict(Q)
    assert sum(rows for rows, _ in shapes) == 1500
    assert all(cols == 2000 for _, cols in shapes)
    assert max(8 * rows * cols for rows, cols in shapes) <= 1 * 2**20


def test_sharded_model_release_is_the_noisy_mean_of_shard_weights():
    X, y = _data(n=900)
    model = _model(n_shards=3, release="model", n_components=30, epsilon=1e6).fit(X, y)
    shards = partition_indices(900, 3, check_random_state(0))
    from dpsklearn.kernel_ridge._kernels import _fit_weights, _fourier_features

    mean = np.mean(
        [
            _fit_weights(_fourier_features(X[s], model.random_frequencies_), y[s], 0.01)
            for s in shards
        ],
        axis=0,
    )
    # epsilon = 1e6: the noise is a few grid steps per weight
    assert np.abs(model.coef_ - mean).max() < 20 * model.noise_scale_ + 1e-6
    assert model.predict(X[:5]).shape == (5,)
    assert np.array_equal(model.predict(X[:5]), model.predict(X[:5]))  # free


def test_parallel_fit_matches_sequential_and_sparse_input():
    X, y = _data(n=600)
    one = _model(n_shards=4, n_jobs=1).fit(X, y)
    two = _model(n_shards=4, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
    np.testing.assert_array_equal(one.predict(X[:10]), two.predict(X[:10]))
    sparse = _model(n_shards=4).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(
        sparse._exact_predictions(sp.csr_matrix(X[:10])),
        one._exact_predictions(X[:10]),
        atol=1e-9,
    )


def test_in_pipeline_and_grid_search():
    X, y = _data(n=600)
    pipe = make_pipeline(StandardScaler(), _model(n_shards=3, max_queries=5000))
    pipe.fit(X, y)
    assert pipe.predict(X[:7]).shape == (7,)
    search = GridSearchCV(
        _model(max_queries=5000, epsilon=100.0),
        {"mechanism__n_shards": [1, 4]},
        cv=2,
    ).fit(X, y)
    assert search.best_estimator_.n_estimators_ in (1, 4)
