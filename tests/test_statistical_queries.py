"""Tests for dpsklearn.PrivateStatisticalQueries (Chan, CSCI4230 notes 21, Theorem 1).

See docs/design.rst, "Statistical queries on disjoint chunks".

Noise scale and truncation are compared with the exact discrete Laplace
moments and tails; the partition is checked to be disjoint, complete and
data-independent; query M+1 raises; values outside [0, 1] are clipped, never
refused; every bad input is refused before the budget is touched. The worked
example (a nearest-centroid classifier from statistical queries on the
bundled Adult data) must beat the base rate.
"""

import math
import threading
import warnings

import numpy as np
import pytest

from dpsklearn import (
    BudgetExhaustedError,
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivateStatisticalQueries,
)
from dpsklearn.datasets import load_adult
from dpsklearn.noise import default_grid_step

pytestmark = pytest.mark.filterwarnings("ignore:noise_random_state is set")


def _dlap_abs_mean(scale):
    """E|Z| for P(z) = (1-a)/(1+a) a^|z|, a = exp(-1/scale): 2a / (1 - a^2)."""
    a = math.exp(-1.0 / scale)
    return 2.0 * a / (1.0 - a * a)


def test_mean_answers_have_grid_laplace_noise_of_sensitivity_one_over_chunk():
    n, m, eps = 40_000, 4_000, 2.0  # chunks of 10 rows: sensitivity 1/10
    sq = PrivateStatisticalQueries(m, epsilon=eps, random_state=0, noise_random_state=1)
    sq.fit(np.zeros((n, 1)))
    answers = np.array(
        [sq.query_mean(lambda X, y: np.full(len(X), 0.5)) for _ in range(m)]
    )
    g = default_grid_step(1.0 / 10)
    units = math.floor((1.0 / 10) / g) + 1  # grid Laplace: floor(Delta/g) + 1
    assert g == 2.0**-13 and units == 820
    on_grid = answers / g
    np.testing.assert_array_equal(on_grid, np.round(on_grid))  # no low-order bits
    assert answers.min() >= 0.0 and answers.max() <= 1.0
    noise = (answers - 0.5) / g
    expected = _dlap_abs_mean(units / eps)  # about 410 grid units = 0.05
    # Relative standard error of the mean |noise| over 4,000 draws is ~1.6%.
    assert abs(np.mean(np.abs(noise)) / expected - 1) < 0.06
    # The notes' scale M / (|S_i| alpha) would be 4,000 times larger
    # (docs/corrections.rst, "Statistical queries: M times less noise").
    assert np.mean(np.abs(answers - 0.5)) < 0.1


def test_count_answers_are_geometric_and_truncated_to_the_chunk():
    n, m, eps = 20_000, 2_000, 0.1  # chunks of 10 rows, DLap(10) noise
    sq = PrivateStatisticalQueries(m, epsilon=eps, random_state=0, noise_random_state=2)
    sq.fit(np.zeros((n, 1)))
    answers = np.array([sq.query_count(lambda X, y: np.ones(len(X))) for _ in range(m)])
    assert answers.dtype.kind == "i"
    assert answers.min() >= 0 and answers.max() <= 10  # truncated to [0, |S_i|]
    a = math.exp(-eps)
    # True count 10: P(answer = 10) = P(Z >= 0) = 1/(1+a); P(answer = 0) =
    # P(Z <= -10) = a^10/(1+a).
    p_top, p_bottom = 1 / (1 + a), a**10 / (1 + a)
    se_top = math.sqrt(p_top * (1 - p_top) / m)
    se_bottom = math.sqrt(p_bottom * (1 - p_bottom) / m)
    assert abs(np.mean(answers == 10) - p_top) < 5 * se_top
    assert abs(np.mean(answers == 0) - p_bottom) < 5 * se_bottom


def test_count_noise_scale_without_truncation():
    n, m, eps = 100_000, 1_000, 0.5  # chunks of 100, true count 50
    sq = PrivateStatisticalQueries(m, epsilon=eps, random_state=0, noise_random_state=3)
    X = np.zeros((n, 1))
    X[::2] = 1.0
    sq.fit(X)
    answers = np.array([sq.query_count(lambda X, y: X[:, 0]) for _ in range(m)])
    counts = np.array([np.count_nonzero(X[c, 0]) for c in sq._chunks_])
    noise = answers - counts
    expected = _dlap_abs_mean(1 / eps)
    assert abs(np.mean(np.abs(noise)) / expected - 1) < 0.12


def test_query_m_plus_one_raises_and_remaining_counts_down():
    sq = PrivateStatisticalQueries(3, epsilon=1.0, random_state=0).fit(np.zeros((9, 2)))
    assert sq.n_queries_remaining == 3
    sq.query_mean(lambda X, y: X[:, 0])
    sq.query_count(lambda X, y: X[:, 0] > 0)
    assert sq.n_queries_remaining == 1
    sq.query_mean(lambda X, y: X[:, 1])
    assert sq.n_queries_remaining == 0
    for query in (sq.query_mean, sq.query_count):
        with pytest.raises(BudgetExhaustedError, match="n_queries=3"):
            query(lambda X, y: X[:, 0])
    assert sq.accountant_.spent == (1.0, 0.0)  # parallel composition: epsilon once


def test_each_query_sees_only_its_own_chunk_and_the_partition_is_data_independent():
    n, m = 103, 7
    seen = []

    def record(X, y):
        seen.append(np.sort(X[:, 0].astype(int)))
        return np.zeros(len(X))

    sq = PrivateStatisticalQueries(m, random_state=5).fit(np.arange(n)[:, None])
    for _ in range(m):
        sq.query_mean(record)
    rows = np.concatenate(seen)
    assert np.array_equal(np.sort(rows), np.arange(n))  # disjoint and complete
    sizes = sorted(len(s) for s in seen)
    assert sizes[-1] - sizes[0] <= 1 and sum(sizes) == n
    np.testing.assert_array_equal(sq.chunk_sizes_, [len(s) for s in seen])
    # Another dataset with the same random_state: the same row indices per query.
    other = PrivateStatisticalQueries(m, random_state=5).fit(
        np.random.default_rng(0).normal(size=(n, 1))
    )
    for i in range(m):
        np.testing.assert_array_equal(np.sort(other._chunks_[i]), seen[i])


@pytest.mark.parametrize(
    "raw, clipped",
    [(5.0, 1.0), (-3.0, 0.0), (np.inf, 1.0), (-np.inf, 0.0), (np.nan, 0.0)],
)
def test_values_outside_unit_interval_are_clipped_not_refused(raw, clipped):
    def fitted():
        return PrivateStatisticalQueries(
            2, epsilon=1.0, random_state=0, noise_random_state=7
        ).fit(np.zeros((50, 1)), np.zeros(50))

    bad, good = fitted(), fitted()
    # One row with an out-of-range value: no error, same answer as the clipped one.
    a = bad.query_mean(lambda X, y: np.r_[raw, np.full(len(X) - 1, 0.3)])
    b = good.query_mean(lambda X, y: np.r_[clipped, np.full(len(X) - 1, 0.3)])
    assert a == b
    c = bad.query_count(lambda X, y: np.r_[raw, np.zeros(len(X) - 1)])
    d = good.query_count(lambda X, y: np.r_[clipped, np.zeros(len(X) - 1)])
    assert c == d


def test_wrong_shape_raises_and_still_uses_the_chunk():
    sq = PrivateStatisticalQueries(2, random_state=0).fit(np.zeros((10, 1)))
    with pytest.raises(ValueError, match="one value per row"):
        sq.query_mean(lambda X, y: 0.5)
    assert sq.n_queries_remaining == 1


def test_y_is_passed_to_queries_and_none_when_absent():
    got = []
    sq = PrivateStatisticalQueries(2, random_state=0).fit(np.zeros((10, 1)))
    sq.query_mean(lambda X, y: got.append(y) or np.zeros(len(X)))
    assert got == [None]
    sq = PrivateStatisticalQueries(2, random_state=0).fit(np.zeros((10, 1)), ["a"] * 10)
    sq.query_count(lambda X, y: y == "a")


def test_threads_never_share_a_chunk():
    n, m = 4_000, 400
    sq = PrivateStatisticalQueries(m, random_state=0).fit(np.arange(n)[:, None])
    seen, lock = [], threading.Lock()

    def record(X, y):
        with lock:
            seen.append(tuple(np.sort(X[:, 0]).astype(int)))
        return np.zeros(len(X))

    def worker():
        for _ in range(m // 8):
            sq.query_mean(record)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == m and len(set(seen)) == m
    with pytest.raises(BudgetExhaustedError):
        sq.query_mean(record)


@pytest.mark.parametrize(
    "params, X, error, match",
    [
        ({"n_queries": 11}, np.zeros((10, 2)), ValueError, "n_samples=10"),
        ({"n_queries": 0}, np.zeros((10, 2)), ValueError, "n_queries"),
        ({"epsilon": float("inf")}, np.zeros((10, 2)), ValueError, "epsilon"),
        ({"epsilon": -1.0}, np.zeros((10, 2)), ValueError, "epsilon"),
        ({}, np.full((10, 2), np.nan), ValueError, "NaN"),
        ({}, np.zeros((0, 2)), ValueError, "sample"),
    ],
)
def test_bad_inputs_raise_before_any_budget_is_spent(params, X, error, match):
    shared = PrivacyAccountant(epsilon=5.0)
    sq = PrivateStatisticalQueries(accountant=shared, **params)
    with pytest.raises(error, match=match):
        sq.fit(X)
    assert shared.events == []


def test_shared_budget_is_reserved_once_at_fit():
    shared = PrivacyAccountant(epsilon=1.0)
    sq = PrivateStatisticalQueries(4, epsilon=0.75, accountant=shared).fit(
        np.zeros((8, 1))
    )
    assert len(shared.events) == 1 and shared.events[0].kind == "pure"
    for _ in range(4):
        sq.query_mean(lambda X, y: X[:, 0])
    assert shared.spent == (0.75, 0.0)
    with pytest.raises(BudgetExhaustedError):
        PrivateStatisticalQueries(4, epsilon=0.75, accountant=shared).fit(
            np.zeros((8, 1))
        )
    assert len(shared.events) == 1


# --------------------------------------------------------------------------
# Worked example: nearest centroid from statistical queries on Adult
# --------------------------------------------------------------------------


def _adult_features(data):
    """Fixed public maps into [0, 1]; no statistic of the data is used."""
    X, col = data.data, data.feature_names.index
    ranges = {"age": (17, 90), "education-num": (1, 16), "hours-per-week": (1, 99)}
    cols = [(X[:, col(f)] - lo) / (hi - lo) for f, (lo, hi) in ranges.items()]
    cols += [
        np.log1p(X[:, col("capital-gain")]) / np.log1p(99_999),
        np.log1p(X[:, col("capital-loss")]) / np.log1p(4_356),
    ]
    cols += [X[:, col("relationship")] == k for k in range(6)]
    return np.clip(np.column_stack(cols).astype(float), 0, 1)


def nearest_centroid_from_queries(sq, d):
    """Class prior, centroids and per-feature scales from 3d + 1 queries."""
    p1 = float(np.clip(sq.query_mean(lambda X, y: y == 1), 0.01, 0.99))
    prior = np.array([1 - p1, p1])
    mu = (
        np.array(
            [
                [
                    sq.query_mean(lambda X, y, j=j, c=c: X[:, j] * (y == c))
                    for j in range(d)
                ]
                for c in (0, 1)
            ]
        )
        / prior[:, None]
    )
    # Adaptive queries: they use the noisy centroids (parallel composition
    # still holds because the chunks were fixed at fit).
    var = np.array(
        [sq.query_mean(lambda X, y, j=j: (X[:, j] - mu[y, j]) ** 2) for j in range(d)]
    )
    scale = np.sqrt(np.maximum(var, 1e-4))

    def predict(X):
        z = (X[:, :, None] - mu.T[None]) / scale[None, :, None]
        return np.argmax(-(z**2).sum(axis=1) + 2 * np.log(prior), axis=1)

    return predict


def test_nearest_centroid_from_statistical_queries_beats_the_base_rate():
    train, test = load_adult(subset="train"), load_adult(subset="test")
    X, y = _adult_features(train), (train.target == ">50K").astype(int)
    X_test, y_test = _adult_features(test), (test.target == ">50K").astype(int)
    d = X.shape[1]
    sq = PrivateStatisticalQueries(
        3 * d + 1, epsilon=1.0, random_state=0, noise_random_state=0
    ).fit(X, y)
    predict = nearest_centroid_from_queries(sq, d)
    assert sq.n_queries_remaining == 0
    accuracy = np.mean(predict(X_test) == y_test)
    base_rate = 1 - y_test.mean()
    print(
        f"SQ nearest centroid on Adult: accuracy {accuracy:.4f}, base {base_rate:.4f}"
    )
    # Measured 0.795-0.813 over 40 noise draws; the base rate is 0.764.
    assert accuracy > base_rate + 0.02, (accuracy, base_rate)


def test_worked_example_beats_base_rate_without_pinned_noise():
    # The same example with OS-entropy noise (as users run it): at epsilon = 1
    # and ~950 rows per chunk the noise is ~0.0015 per answer.
    train = load_adult(subset="train")
    X, y = _adult_features(train), (train.target == ">50K").astype(int)
    d = X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        sq = PrivateStatisticalQueries(3 * d + 1, epsilon=1.0, random_state=1).fit(X, y)
    predict = nearest_centroid_from_queries(sq, d)
    assert np.mean(predict(X) == y) > 1 - y.mean()


def test_a_refused_refit_keeps_the_live_oracle():
    shared = PrivacyAccountant(epsilon=1.0)
    sq = PrivateStatisticalQueries(2, epsilon=0.6, accountant=shared)
    sq.fit(np.zeros((4, 1)))
    sq.query_mean(lambda X, y: X[:, 0])
    with pytest.raises(BudgetExhaustedError):
        sq.fit(np.zeros((4, 1)))
    # The oracle paid for keeps its chunks and its one remaining answer.
    assert sq.n_queries_remaining == 1
    sq.query_mean(lambda X, y: X[:, 0])
    with pytest.raises(BudgetExhaustedError):
        sq.query_mean(lambda X, y: X[:, 0])
    assert shared.spent == (0.6, 0.0)
