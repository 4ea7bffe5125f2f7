"""Tests for dpsklearn.erm (Nikolov, CSC2412 notes, "Exponential Mechanism &
Private PAC Learning"; docs/design.rst, "Exponential-mechanism ERM").

* The vectorised stump losses equal a brute-force evaluation of every stump on
  500 random small cases (ties between data and thresholds included).
* The chosen-hypothesis frequencies match the exponential mechanism
  (chi-square test; under a correct sampler its p-value is uniform, so the
  stated threshold 1e-4 fails with probability 1e-4 over the seeds).
* Sampling is in log space: error counts 10^6 apart neither underflow nor
  lose the best hypothesis.
* Every bad input is refused before any budget is spent; the fitted model
  keeps only the chosen hypothesis and its predictions are free.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import (
    BudgetExhaustedError,
    DecisionStumps,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    PrivacyAccountant,
    PrivacyLeakWarning,
    Thresholds,
)
from dpsklearn.erm import Stump
from dpsklearn.erm._hypotheses import _ClippedSquaredLoss, _ZeroOneLoss

pytestmark = pytest.mark.filterwarnings("ignore:noise_random_state is set")


# --------------------------------------------------------------------------
# Vectorised stump losses == brute force
# --------------------------------------------------------------------------


@st.composite
def stump_cases(draw):
    n = draw(st.integers(1, 14))
    d = draw(st.integers(1, 3))
    k = draw(st.integers(1, 5))
    v = draw(st.integers(2, 3))
    lo = draw(st.sampled_from([0.0, -1.5, 2.0]))
    width = draw(st.sampled_from([1.0, 3.0, 0.0]))  # 0: a degenerate feature
    bounds = np.tile([lo, lo + width], (d, 1))
    grid = DecisionStumps(feature_bounds=bounds, n_thresholds=k).bind(
        np.zeros((1, d)), np.arange(v)
    )
    # Values on the grid (exact ties with thresholds), at the bounds and beyond,
    # drawn by a seeded generator (hypothesis shrinks the seed and the sizes).
    pool = np.unique(
        np.concatenate([grid.thresholds.ravel(), [lo, lo + width, lo - 1, lo + 5]])
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.choice(pool, size=(n, d))
    y = rng.integers(0, v, size=n)
    return X, y, bounds, k, v


def _brute_force(bound, X, per_row_loss):
    return np.array(
        [
            per_row_loss(bound.hypothesis(i).predict(X))
            for i in range(bound.n_hypotheses)
        ]
    )


@settings(max_examples=500, deadline=None)
@given(stump_cases())
def test_stump_losses_equal_brute_force(case):
    X, y, bounds, k, v = case
    outputs = np.arange(v) * 10  # labels that are not indices
    bound = DecisionStumps(feature_bounds=bounds, n_thresholds=k).bind(X, outputs)
    assert bound.n_hypotheses == X.shape[1] * k * v * (v - 1)

    # 0-1 loss: integer error counts, exactly.
    fast = bound.total_losses(X, _ZeroOneLoss(y, outputs))
    slow = _brute_force(bound, X, lambda pred: np.count_nonzero(pred != outputs[y]))
    np.testing.assert_array_equal(fast, slow)
    assert fast.dtype.kind == "i"

    # Clipped squared loss on real-valued outputs.
    values = np.linspace(-1.0, 2.0, v)
    targets = y * 0.7 - 0.2
    bound_r = DecisionStumps(feature_bounds=bounds, n_thresholds=k).bind(X, values)
    loss = _ClippedSquaredLoss(targets, values, bound=1.5)
    fast_r = bound_r.total_losses(X, loss)
    slow_r = _brute_force(
        bound_r, X, lambda pred: np.minimum((pred - targets) ** 2, 1.5).sum()
    )
    np.testing.assert_allclose(fast_r, slow_r, rtol=1e-12, atol=1e-12)


def test_thresholds_losses_equal_brute_force():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, size=(50, 1)).astype(float)
    y = rng.integers(0, 2, size=50)
    bound = Thresholds(bounds=(0, 8), n_thresholds=7).bind(X, np.array([0, 1]))
    fast = bound.total_losses(X, _ZeroOneLoss(y, np.array([0, 1])))
    slow = _brute_force(bound, X, lambda pred: np.count_nonzero(pred != y))
    np.testing.assert_array_equal(fast, slow)
    # One orientation: below (or at) t is the first output.
    h = bound.hypothesis(2)
    assert (h.left, h.right, h.threshold) == (0, 1, 3.0)


def test_sparse_input_gives_the_same_losses_and_predictions():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 4, size=(60, 3)).astype(float) * (rng.random((60, 3)) < 0.4)
    y = rng.integers(0, 2, size=60)
    space = DecisionStumps(feature_bounds=(0, 4), n_thresholds=3)
    outputs = np.array([0, 1])
    dense = space.bind(X, outputs).total_losses(X, _ZeroOneLoss(y, outputs))
    for fmt in ("csr", "csc"):
        Xs = sp.csr_matrix(X).asformat(fmt)
        sparse_losses = space.bind(Xs, outputs).total_losses(
            Xs, _ZeroOneLoss(y, outputs)
        )
        np.testing.assert_array_equal(dense, sparse_losses)
    clf = ExponentialMechanismERM(
        space, epsilon=50.0, classes=[0, 1], noise_random_state=0
    )
    pred_dense = clf.fit(X, y).predict(X)
    pred_sparse = clf.fit(sp.csr_matrix(X), y).predict(sp.csr_matrix(X))
    np.testing.assert_array_equal(pred_dense, pred_sparse)


def test_stump_space_size_matches_the_benchmark_configuration():
    X = np.zeros((3, 100))
    bound = DecisionStumps(feature_bounds=(0, 1), n_thresholds=256).bind(X, [0, 1])
    assert bound.n_hypotheses == 51_200


# --------------------------------------------------------------------------
# The exponential mechanism: distribution and log-space sampling
# --------------------------------------------------------------------------


def _error_hypotheses(errors, n):
    """Callables whose error counts on (zeros(n, 1), zeros(n)) are ``errors``."""

    def make(e):
        return lambda X: (np.arange(X.shape[0]) < e).astype(int)

    return [make(e) for e in errors]


def test_chosen_frequencies_match_the_exponential_mechanism():
    # P(h) ~ exp(-epsilon * errors / 2): Delta_u = 1 for the 0-1 loss.
    errors = np.array([0, 1, 2, 4])
    X, y = np.zeros((4, 1)), np.zeros(4, dtype=int)
    hypotheses = _error_hypotheses(errors, 4)
    n_fits = 1000
    chosen = np.zeros(len(errors), dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for seed in range(n_fits):
            clf = ExponentialMechanismERM(
                hypotheses, epsilon=1.0, classes=[0, 1], noise_random_state=seed
            ).fit(X, y)
            chosen[hypotheses.index(clf.hypothesis_)] += 1
    weights = np.exp(-1.0 * errors / 2.0)
    expected = n_fits * weights / weights.sum()
    # Failure probability of a correct sampler: 1e-4 (uniform p-value).
    assert chisquare(chosen, expected).pvalue > 1e-4, (chosen, expected)


def test_regressor_frequencies_use_delta_u_equal_to_the_loss_bound():
    # Constant predictors on y = 0: losses min(c^2, B) * n; P ~ exp(-eps L / 2B).
    X, y = np.zeros((2, 1)), np.zeros(2)
    consts = [0.0, 1.0, 1.5, 3.0]
    hypotheses = [lambda X, c=c: np.full(X.shape[0], c) for c in consts]
    bound_b = 4.0
    losses = 2 * np.minimum(np.square(consts), bound_b)
    n_fits = 800
    chosen = np.zeros(len(consts), dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for seed in range(n_fits):
            reg = ExponentialMechanismERMRegressor(
                hypotheses, loss_bound=bound_b, epsilon=4.0, noise_random_state=seed
            ).fit(X, y)
            chosen[hypotheses.index(reg.hypothesis_)] += 1
    weights = np.exp(-4.0 * losses / (2 * bound_b))
    expected = n_fits * weights / weights.sum()
    assert reg.utility_sensitivity_ == bound_b
    assert chisquare(chosen, expected).pvalue > 1e-4, (chosen, expected)


@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 1e6])
def test_error_counts_a_million_apart_neither_underflow_nor_lose_the_best(epsilon):
    n = 1_000_000
    X, y = np.zeros((n, 1)), np.zeros(n, dtype=int)
    hypotheses = _error_hypotheses([n, 0, n // 2], n)  # errors 10^6, 0, 5 10^5
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow/underflow
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for seed in range(5):
            clf = ExponentialMechanismERM(
                hypotheses, epsilon=epsilon, classes=[0, 1], noise_random_state=seed
            ).fit(X, y)
            # Even at epsilon = 1e-3 the runner-up is 250 nats behind.
            assert clf.hypothesis_ is hypotheses[1]


def test_stumps_recover_the_true_stump_at_large_epsilon():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(3000, 5))
    y = np.where(X[:, 3] <= 0.5, "low", "high")
    clf = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(0, 1), n_thresholds=15),
        epsilon=10.0,
        classes=["high", "low"],
    ).fit(X, y)
    h = clf.hypothesis_
    assert isinstance(h, Stump)
    assert (h.feature, h.threshold, h.left, h.right) == (3, 0.5, "low", "high")
    assert clf.score(X, y) == 1.0
    assert clf.n_hypotheses_ == 5 * 15 * 2


# --------------------------------------------------------------------------
# Budget, fitted state, free predictions
# --------------------------------------------------------------------------


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 3))
    return X, (X[:, 0] > 0.5).astype(int)


def test_fit_reserves_epsilon_as_one_event_and_predictions_are_free():
    X, y = _data()
    clf = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(0, 1)), epsilon=0.7, classes=[0, 1]
    ).fit(X, y)
    events = clf.accountant_.events
    assert len(events) == 1 and events[0].kind == "bounded_range"
    assert clf.accountant_.spent == (0.7, 0.0)
    first = clf.predict(X)
    for _ in range(50):
        np.testing.assert_array_equal(clf.predict(X), first)
    clf.score(X, y)
    assert clf.accountant_.spent == (0.7, 0.0)
    assert len(clf.accountant_.events) == 1


def test_fitted_model_keeps_only_the_chosen_hypothesis():
    X, y = _data()
    clf = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(0, 1), n_thresholds=64),
        epsilon=1.0,
        classes=[0, 1],
    ).fit(X, y)
    fitted = {k for k in vars(clf) if k.endswith("_")}
    assert fitted == {
        "accountant_",
        "classes_",
        "hypothesis_",
        "loss_",
        "n_features_in_",
        "n_hypotheses_",
        "privacy_mechanism_",
        "utility_sensitivity_",
        "_serving_state_",
        "_query_rule_",  # the query's width, column names and NaN rule: public
    }
    # Nothing of the size of the class (the error counts) survives, anywhere.
    blob = pickle.dumps(clf)
    assert len(blob) < 4_000


def test_shared_accountant_refuses_the_fit_before_training():
    X, y = _data()
    shared = PrivacyAccountant(epsilon=1.0)
    calls = []

    def spy(X):
        calls.append(1)
        return np.zeros(X.shape[0], dtype=int)

    ExponentialMechanismERM([spy], epsilon=0.6, classes=[0, 1], accountant=shared).fit(
        X, y
    )
    assert len(calls) == 1
    with pytest.raises(BudgetExhaustedError):
        ExponentialMechanismERM(
            [spy], epsilon=0.6, classes=[0, 1], accountant=shared
        ).fit(X, y)
    assert len(calls) == 1  # the private data was never touched
    assert shared.spent == (0.6, 0.0)


def _bad_inputs():
    X, y = _data()
    return [
        (ExponentialMechanismERM([], classes=[0, 1]), X, y, ValueError, "empty"),
        (
            ExponentialMechanismERM(
                DecisionStumps(feature_bounds=[(0, 1), (0, 1)]), classes=[0, 1]
            ),
            X,
            y,
            ValueError,
            r"shape \(n_features, 2\) = \(3, 2\)",
        ),
        (
            ExponentialMechanismERM(
                DecisionStumps(feature_bounds=np.zeros((3, 3))), classes=[0, 1]
            ),
            X,
            y,
            ValueError,
            "feature_bounds",
        ),
        (
            ExponentialMechanismERM(
                DecisionStumps(feature_bounds=(1, 0)), classes=[0, 1]
            ),
            X,
            y,
            ValueError,
            "lower <= upper",
        ),
        (
            ExponentialMechanismERM(
                DecisionStumps(feature_bounds=(0, np.inf)), classes=[0, 1]
            ),
            X,
            y,
            ValueError,
            "finite",
        ),
        (
            ExponentialMechanismERM(
                DecisionStumps(feature_bounds=(0, 1), n_thresholds=0), classes=[0, 1]
            ),
            X,
            y,
            ValueError,
            "n_thresholds",
        ),
        (
            ExponentialMechanismERM(Thresholds(bounds=(0, 1)), classes=[0, 1]),
            X,
            y,
            ValueError,
            "1 feature",
        ),
        (
            ExponentialMechanismERM(Thresholds(bounds=(0, 1, 2)), classes=[0, 1]),
            X[:, :1],
            y,
            ValueError,
            "pair",
        ),
        (
            ExponentialMechanismERM([DecisionTreeClassifier()], classes=[0, 1]),
            X,
            y,
            ValueError,
            "FrozenEstimator",
        ),
        (ExponentialMechanismERM([42], classes=[0, 1]), X, y, TypeError, "callable"),
        (
            ExponentialMechanismERM(epsilon=float("inf"), classes=[0, 1]),
            X,
            y,
            ValueError,
            "epsilon",
        ),
        (
            ExponentialMechanismERM(epsilon=0.0, classes=[0, 1]),
            X,
            y,
            ValueError,
            "epsilon",
        ),
        (ExponentialMechanismERM(classes=[0, 1]), X[:, :0], y, ValueError, "feature"),
        (ExponentialMechanismERM(classes=[0]), X, y, ValueError, "classes"),
        (
            ExponentialMechanismERMRegressor(target_range=(1, 0)),
            X,
            y.astype(float),
            ValueError,
            "target_range",
        ),
        (
            ExponentialMechanismERMRegressor(target_range=(0, 1), loss_bound=-1.0),
            X,
            y.astype(float),
            ValueError,
            "loss_bound",
        ),
        (
            ExponentialMechanismERMRegressor([], target_range=(0, 1)),
            X,
            y.astype(float),
            ValueError,
            "empty",
        ),
    ]


@pytest.mark.parametrize("case", range(len(_bad_inputs())))
def test_bad_inputs_raise_before_any_budget_is_spent(case):
    est, X, y, error, match = _bad_inputs()[case]
    shared = PrivacyAccountant(epsilon=10.0)
    est.set_params(accountant=shared)
    with pytest.raises(error, match=match):
        est.fit(X, y)
    assert shared.spent == (0.0, 0.0) and shared.events == []


def test_unset_bounds_are_inferred_with_a_privacy_leak_warning():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="feature_bounds"):
        ExponentialMechanismERM(DecisionStumps(), classes=[0, 1]).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        ExponentialMechanismERM(Thresholds(), classes=[0, 1]).fit(X[:, :1], y)
    with pytest.warns(PrivacyLeakWarning, match="target_range"):
        ExponentialMechanismERMRegressor(DecisionStumps(feature_bounds=(0, 1))).fit(
            X, y.astype(float)
        )
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        ExponentialMechanismERM(DecisionStumps(feature_bounds=(0, 1))).fit(X, y)
    # Public bounds everywhere: no warning at all.
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        ExponentialMechanismERM(
            DecisionStumps(feature_bounds=(0, 1)), classes=[0, 1]
        ).fit(X, y)
        ExponentialMechanismERMRegressor(
            DecisionStumps(feature_bounds=(0, 1)), target_range=(0, 1)
        ).fit(X, y.astype(float))


# --------------------------------------------------------------------------
# Lists of fitted estimators, clone, grid search, regressor
# --------------------------------------------------------------------------


def test_frozen_hypotheses_survive_clone_and_grid_search():
    rng = np.random.default_rng(3)
    X_public = rng.normal(size=(300, 2))
    y_public = (X_public[:, 0] > 0).astype(int)
    good = FrozenEstimator(LogisticRegression().fit(X_public, y_public))
    bad = FrozenEstimator(LogisticRegression().fit(X_public, 1 - y_public))
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = ExponentialMechanismERM([good, bad], epsilon=5.0, classes=[0, 1])
    cloned = clone(clf)
    assert cloned.hypotheses[0] is good  # still fitted
    assert cloned.fit(X, y).hypothesis_ is good
    assert cloned.score(X, y) > 0.95
    search = GridSearchCV(clf, {"epsilon": [1.0, 5.0]}, cv=2).fit(X, y)
    assert search.best_estimator_.hypothesis_ in (good, bad)


def test_regressor_with_stumps_and_leaf_grid():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(2000, 2))
    y = np.where(X[:, 1] > 0.25, 3.0, 1.0)
    reg = ExponentialMechanismERMRegressor(
        DecisionStumps(feature_bounds=(0, 1), n_thresholds=3),
        target_range=(1.0, 3.0),
        n_leaf_values=3,
        epsilon=20.0,
    ).fit(X, y)
    np.testing.assert_array_equal(reg.leaf_values_, [1.0, 2.0, 3.0])
    assert reg.utility_sensitivity_ == 4.0  # (3 - 1)^2
    assert reg.n_hypotheses_ == 2 * 3 * 6
    h = reg.hypothesis_
    assert (h.feature, h.threshold, h.left, h.right) == (1, 0.25, 1.0, 3.0)
    assert reg.score(X, y) == 1.0


def test_a_refused_refit_keeps_the_chosen_hypothesis():
    X, y = _data()
    shared = PrivacyAccountant(epsilon=1.0)
    clf = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(0, 1)), epsilon=0.6, classes=[0, 1]
    )
    clf.set_params(accountant=shared).fit(X, y)
    hypothesis, before = clf.hypothesis_, clf.predict(X)
    with pytest.raises(BudgetExhaustedError):
        clf.fit(X, y)  # the second 0.6 does not fit in 1.0
    # The hypothesis already paid for stays; nothing more was spent.
    assert clf.hypothesis_ is hypothesis
    np.testing.assert_array_equal(clf.predict(X), before)
    assert shared.spent == (0.6, 0.0)


def test_erm_scale_benchmark_runs_and_writes_its_tables(tmp_path):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "erm_scale.py"
    spec = importlib.util.spec_from_file_location("erm_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(
        [
            "--quick",
            "--n-samples",
            "2000",
            "--n-features",
            "5",
            "--repeats",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    result = json.loads((tmp_path / "erm_scale_quick.json").read_text())
    assert result["n_hypotheses"] == 5 * 256 * 2
    assert result["ratio"] > 0 and result["quick"] is True
    assert "| ratio |" in (tmp_path / "erm_scale_quick.md").read_text()
