"""SoftLabelPrivateRegressor (Bassily, Thakkar and Thakurta 2018, Algorithms 6-8).

See docs/design.rst, "Soft-label queries: the double test".

The unit tests pin the teachers' soft labels (hand-built teachers) and the
noise (zero), so every answer, the abstention count ``c`` and the number of
threshold draws are exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _reference import soft_label_reference
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Perceptron
from sklearn.svm import SVC

from dpsklearn import (
    PrivacyAccountant,
    PrivacyLeakWarning,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
)
from dpsklearn.mechanisms import (
    SparseVectorEngine,
    calibrate_sparse_vector,
    soft_label_histograms,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


def _zeros(start, stop):
    return np.zeros(stop - start, dtype=np.int64)


class _Noise:
    """Noise callable over a fixed array (index = query or draw index)."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)

    def __call__(self, start, stop):
        assert 0 <= start <= stop <= self.values.size
        return self.values[start:stop]


class _TableTeacher:
    """Teacher ``column`` of a table: predicts ``table[row id, column]``."""

    def __init__(self, table, column):
        self.table = table
        self.column = column

    def predict(self, X):
        return self.table[X[:, 0].astype(int), self.column]


# -- histograms (gamma and shifted partitions) -----------------------------------------
def test_histograms_with_half_bins_boundaries_and_clipping():
    # gamma = 1/4: bins [0, .25) [.25, .5) [.5, .75) [.75, 1]; shifted bins
    # [.125, .375) [.375, .625) [.625, .875); [0, .125) and [.875, 1] dropped.
    soft = np.array(
        [
            0.0,
            0.0625,
            0.125,
            0.25,
            0.375,
            0.5,
            0.625,
            0.75,
            0.875,
            0.9375,
            1.0,
            -0.5,
            1.5,
        ]
    )[:, None]
    counts, shifted = soft_label_histograms(soft, 4)
    # -0.5 is clipped to 0 (bin 1), 1.5 to 1 (the last bin, closed).
    assert counts.tolist() == [[4, 2, 2, 5]]
    # 0, 0.0625, -0.5 (-> 0) and 0.875, 0.9375, 1, 1.5 (-> 1) are not counted.
    assert shifted.tolist() == [[2, 2, 2]]
    counts, shifted = soft_label_histograms([[0.49], [0.51]], 2)  # gamma = 1/2
    assert counts.tolist() == [[1, 1]] and shifted.tolist() == [[2]]


# -- run_two_stage against a sequential reference -------------------------------
def _reference(first, second, threshold, cutoff, q_noise, t_noise, s_noise):
    """Algorithms 6 and 8, one query at a time, with the corrections of
    docs/corrections.rst, "Soft-label calibration"."""
    c = 0
    draws = 1
    w_hat = threshold + t_noise[0]
    outcomes = []
    for i in range(len(first)):
        if c >= cutoff:
            break
        if first[i] + q_noise[i] > w_hat:
            outcomes.append(0)
            continue
        c += 1
        w_hat = threshold + t_noise[draws]  # fresh threshold for the second test
        draws += 1
        if second[i] + s_noise[i] > w_hat:
            outcomes.append(1)
            continue
        c += 1
        outcomes.append(2)
        if c < cutoff:
            w_hat = threshold + t_noise[draws]
            draws += 1
    return outcomes, c, draws


def test_run_two_stage_matches_sequential_reference():
    rng = np.random.default_rng(2024)
    for _ in range(300):
        m = int(rng.integers(0, 700))
        cutoff = int(rng.integers(1, 12))
        threshold = float(rng.integers(0, 8)) + rng.choice([0.0, 0.5])
        first = rng.integers(0, 12, size=m)
        second = rng.integers(0, 12, size=m)
        q_noise, s_noise = rng.integers(-3, 4, size=(2, m))
        t_noise = rng.integers(-3, 4, size=cutoff + 1)  # at most T + 1 draws
        engine = SparseVectorEngine(
            threshold, 1.0, cutoff, _Noise(q_noise), _Noise(t_noise)
        )
        outcomes = []
        splits = np.sort(rng.integers(0, m + 1, size=3))
        for lo, hi in zip([0, *splits], [*splits, m], strict=True):
            if engine.halted:
                break
            out, n = engine.run_two_stage(first[lo:hi], second[lo:hi], _Noise(s_noise))
            assert n == len(out)
            outcomes.extend(out.tolist())
            if n < hi - lo:
                break
        expected, c, draws = _reference(
            first, second, threshold, cutoff, q_noise, t_noise, s_noise
        )
        assert outcomes == expected
        assert engine.abstention_count == c
        assert engine.n_threshold_draws == draws <= cutoff + 1


# -- the estimator with hand-built teachers ----------------------------------
# Soft labels (gamma = 1/4) per query row, 8 teachers; predictions are
# 8 * soft on target_range = (0, 8). Threshold w = 0.5 and zero noise: a test
# passes exactly when the distance max(0, ceil(gap/2) - 1) is at least 1.
SOFT = {
    # first partition: 8 in bin 2 -> dist 3: pass, answer (2*2-1)/8 = 0.375
    "first_pass": [0.3125] * 8,
    # first [0, 4, 4, 0] fails; shifted [0, 8, 0] passes: answer 2/4 = 0.5
    "shifted_pass": [0.4375] * 4 + [0.5625] * 4,
    # first [4, 0, 0, 4] fails; all in the dropped half-bins: shifted fails
    "double_fail": [0.0625] * 4 + [0.9375] * 4,
    # first [5, 3, 0, 0] (gap 2, dist 0) fails; the 5 at 1/16 sit in the dropped
    # half-bin, so shifted is [3, 0, 0] (dist 1): pass, answer 1/4
    "half_bin_majority": [0.0625] * 5 + [0.25] * 3,
    # boundaries: 0.875 is in the dropped right half-bin, 0.125 starts the
    # first shifted bin: first [4, 0, 0, 4] fails, shifted [4, 0, 0] passes
    "boundaries": [0.875] * 4 + [0.125] * 4,
    # out of range predictions, clipped to [0, 1] before binning
    "below_range": [-1.0] * 8,
    "above_range": [2.0] * 8,
}


def _model(rows, max_unstable=100, threshold=0.5, fallback="midpoint", **params):
    table = 8.0 * np.array([SOFT[name] for name in rows])
    X = np.arange(40, dtype=float).reshape(-1, 1)
    reg = SoftLabelPrivateRegressor(
        n_estimators=8,
        target_range=(0.0, 8.0),
        mechanism=SoftLabelHistogram(
            gamma=0.25, max_unstable=max_unstable, fallback=fallback
        ),
        **params,
    ).fit(X, np.linspace(0, 8, 40))
    reg.estimators_ = [_TableTeacher(table, j) for j in range(8)]
    engine = reg._serving_state_.engine
    engine.test = SparseVectorEngine(threshold, 1.0, max_unstable, _zeros, _zeros)
    engine.second_query_noise = _zeros
    return reg, np.arange(len(rows), dtype=float).reshape(-1, 1)


def test_exact_answers_and_counter_increments():
    rows = list(SOFT)
    reg, X = _model(rows)
    engine = reg._serving_state_.engine.test
    values, abstained = reg.predict(X, return_abstained=True)
    expected = {
        "first_pass": 3.0,  # 8 * 0.375
        "shifted_pass": 4.0,  # 8 * 0.5
        "double_fail": 4.0,  # midpoint of target_range
        "half_bin_majority": 2.0,  # 8 * 0.25
        "boundaries": 2.0,
        "below_range": 1.0,  # 8 * 0.125
        "above_range": 7.0,  # 8 * 0.875
    }
    assert values.tolist() == [expected[name] for name in rows]
    assert abstained.tolist() == [name == "double_fail" for name in rows]
    # c: shifted pass +1, double fail +2, half-bin +1, boundaries +1.
    assert engine.abstention_count == 5
    # Draws: the first, one per first fail (4), one after the second fail.
    assert engine.n_threshold_draws == 6


@pytest.mark.parametrize(
    "rows, counts",
    [
        (["first_pass"], [0]),
        (["shifted_pass"], [1]),
        (["double_fail"], [2]),
        (["first_pass", "shifted_pass", "double_fail", "first_pass"], [0, 1, 3, 3]),
    ],
)
def test_counter_increment_per_query(rows, counts):
    reg, X = _model(rows)
    engine = reg._serving_state_.engine.test
    seen = []
    for i in range(len(rows)):
        reg.predict(X[i : i + 1] + 0.0)
        seen.append(engine.abstention_count)
    assert seen == counts


def test_halt_at_T_after_a_shifted_pass():
    # T = 3: double fail (c = 2), shifted pass (c = 3: halt), then nothing.
    reg, X = _model(["double_fail", "shifted_pass", "first_pass"], max_unstable=3)
    engine = reg._serving_state_.engine.test
    values, abstained = reg.predict(X, return_abstained=True)
    # Two rows answered (a double fail: the free midpoint; a shifted pass),
    # then the model halts: the third row is abstained on with the midpoint.
    assert values.tolist() == [4.0, 4.0, 4.0]
    assert abstained.tolist() == [True, False, True]
    assert engine.halted and engine.abstention_count == 3
    assert engine.n_threshold_draws == 4  # T + 1: the calibration pays for it
    status = reg.budget_status()
    assert status.halted and status.n_served == 2
    # Rows already answered are still served (free); new ones are abstained on.
    assert reg.predict(X[:2]).tolist() == [4.0, 4.0]
    values, abstained = reg.predict(X[2:], return_abstained=True)
    assert values.tolist() == [4.0] and abstained.all()
    assert reg.budget_status().n_served == 2 and engine.n_threshold_draws == 4


def test_an_exhausted_model_keeps_the_mask():
    reg, X = _model(
        ["double_fail", "shifted_pass", "first_pass", "shifted_pass"],
        max_unstable=3,
    )
    values, abstained = reg.predict(X, return_abstained=True)
    assert values.tolist() == [4.0, 4.0, 4.0, 4.0]  # the last two: free midpoint
    assert abstained.tolist() == [True, False, True, True]
    assert reg._serving_state_.engine.test.abstention_count == 3


def test_halt_when_the_last_query_adds_two():
    # T = 2: shifted pass (c = 1), double fail (c = 3 > T).
    reg, X = _model(["shifted_pass", "double_fail", "first_pass"], max_unstable=2)
    engine = reg._serving_state_.engine.test
    values, abstained = reg.predict(X, return_abstained=True)
    assert values.tolist() == [4.0, 4.0, 4.0]
    assert abstained.tolist() == [False, True, True]
    assert reg.budget_status().n_served == 2 and reg.budget_status().halted
    assert engine.abstention_count == 3
    assert engine.n_threshold_draws == 3  # T + 1


def test_noisy_mean_fallback():
    reg, X = _model(
        ["double_fail", "first_pass"],
        max_unstable=10,
        fallback="noisy_mean",
        epsilon=1e7,
        noise_random_state=0,
    )
    # Joint composition: each noisy mean gets share / (1 - share) = 1 times an
    # instance's epsilon (test_noisy_mean_joint_composition).
    cal = reg.privacy_mechanism_.calibration
    assert reg.fallback_epsilon_ == pytest.approx(cal.per_instance_epsilon)
    # At most ceil(T/2) = 5 double failures: 5 paid slots, as in the paper's
    # structure (its exact calibration, the reference in tests/_reference.py),
    # where the 5 share the fallback's epsilon by basic composition.
    assert cal.n_fallbacks == 5 and cal.cutoff == 11
    paper = soft_label_reference("exact", 1e7, 1e-5, 10, fallback="noisy_mean")
    assert paper.n_fallbacks == 5 and paper.cutoff == 11
    assert paper.fallback_epsilon == pytest.approx(1e7 * 0.5 / 5)
    values, abstained = reg.predict(X, return_abstained=True)
    assert abstained.tolist() == [True, False]
    # Mean soft label 0.5 (sensitivity 1/8), noise negligible at this epsilon.
    assert values.tolist() == [4.0, 3.0]


# -- calibration (T + 1 draws) -------------------------------------
def test_calibrated_for_T_plus_one_draws():
    X, y = make_regression(n_samples=400, n_features=3, random_state=0)
    reg = SoftLabelPrivateRegressor(
        n_estimators=10,
        epsilon=2.0,
        mechanism=SoftLabelHistogram(max_unstable=50),
        target_range=(-300, 300),
    ).fit(X, y)
    expected = calibrate_sparse_vector(2.0, 1e-5, 51)
    assert reg.threshold_ == expected.threshold
    assert reg.noise_scale_ == expected.noise_scale
    assert reg.threshold_ != calibrate_sparse_vector(2.0, 1e-5, 50).threshold
    assert reg.calibration_ == expected.name
    spent = math.fsum(e.epsilon * e.count for e in reg.accountant_.events)
    assert spent == pytest.approx(2.0)


def test_noisy_mean_budget_split():
    # The paper's split, kept by its exact calibration's reference (the
    # estimator takes the joint composition below): the tests get 1.5, the
    # ceil(7/2) = 4 noisy means 0.5 / 4 each, by basic composition.
    paper = soft_label_reference(
        "exact", 2.0, 1e-5, 7, fallback="noisy_mean", noisy_mean_share=0.25
    )
    figures = paper.figures()
    assert figures["sparse_vector_epsilon_"] == pytest.approx(1.5)
    assert figures["fallback_epsilon_"] == pytest.approx(0.5 / 4)  # ceil(7/2) = 4
    paid = paper.n_fallbacks * paper.fallback_epsilon
    assert figures["sparse_vector_epsilon_"] + paid == pytest.approx(2.0)


def test_noisy_mean_joint_composition():
    # laplace composes the T + 1 instances with ceil(T/2) fallback slots (a
    # noisy mean adds 2 to c, so no more occur) by optimal composition: one
    # event of the whole budget, and each noisy mean gets share / (1 - share)
    # of an instance's eps0. The threshold is far below that of the paper's
    # structure (209 against 305 for its exact calibration); each of the at
    # most 4 noisy means gets less (0.071 against 0.125).
    X, y = make_regression(n_samples=400, n_features=3, random_state=0)
    reg = SoftLabelPrivateRegressor(
        n_estimators=10,
        epsilon=2.0,
        mechanism=SoftLabelHistogram(
            max_unstable=7, fallback="noisy_mean", noisy_mean_share=0.25
        ),
        target_range=(-300, 300),
    ).fit(X, y)
    cal = reg.privacy_mechanism_.calibration
    assert reg.calibration_ == "laplace" and cal.n_fallbacks == 4
    assert [(e.kind, e.epsilon) for e in reg.accountant_.events] == [
        ("approximate", 2.0)
    ]
    assert reg.fallback_epsilon_ == pytest.approx(cal.per_instance_epsilon / 3)
    assert cal.composed_epsilon <= 2.0
    paper = soft_label_reference(
        "exact", 2.0, 1e-5, 7, fallback="noisy_mean", noisy_mean_share=0.25
    )
    assert reg.threshold_ == 209 and round(paper.threshold) == 305
    assert reg.fallback_epsilon_ == pytest.approx(0.0715, abs=1e-4)


# -- base estimators ---------------------------------------------------------
def test_binary_classifier_base_uses_predict_proba():
    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    reg = SoftLabelPrivateRegressor(
        LogisticRegression(),
        n_estimators=10,
        mechanism=SoftLabelHistogram(max_unstable=200),
        noise_random_state=0,
    ).fit(X, y)
    assert reg.soft_label_method_ == "predict_proba"
    assert reg.target_range_ == (0.0, 1.0)
    values = reg.predict(X[:50])
    assert np.all((values >= 0) & (values <= 1))


def test_regressor_base_infers_target_range_with_warning():
    X, y = make_regression(n_samples=300, n_features=3, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="target_range"):
        reg = SoftLabelPrivateRegressor(n_estimators=5).fit(X, y)
    assert reg.target_range_ == (y.min(), y.max())
    assert reg.soft_label_method_ == "predict"


# -- bad input: clear errors before any budget is spent ----------------------
@pytest.fixture
def regression_data():
    return make_regression(n_samples=200, n_features=3, random_state=0)


@pytest.mark.parametrize("gamma", [0.3, 0.15, 0.6, 0.0, 1.0])
def test_bad_gamma(regression_data, gamma):
    X, y = regression_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = SoftLabelPrivateRegressor(
        mechanism=SoftLabelHistogram(gamma=gamma),
        target_range=(-1, 1),
        accountant=shared,
    )
    with pytest.raises(ValueError, match="gamma"):
        reg.fit(X, y)
    assert shared.events == []


@pytest.mark.parametrize("gamma", [0.5, 1 / 3, 0.25, 0.1, 0.05])
def test_good_gamma(regression_data, gamma):
    X, y = regression_data
    reg = SoftLabelPrivateRegressor(
        n_estimators=5,
        mechanism=SoftLabelHistogram(gamma=gamma),
        target_range=(-1, 1),
    )
    assert reg.fit(X, y).n_bins_ == round(1 / gamma)


@pytest.mark.parametrize("target_range", [(1.0, 1.0), (3.0, 2.0), (0, np.nan)])
def test_bad_target_range(regression_data, target_range):
    X, y = regression_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = SoftLabelPrivateRegressor(target_range=target_range, accountant=shared)
    with pytest.raises(ValueError, match="target_range"):
        reg.fit(X, y)
    assert shared.events == []


@pytest.mark.parametrize("classifier", [SVC(), Perceptron()])
def test_classifier_without_predict_proba(classifier):
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = SoftLabelPrivateRegressor(classifier, accountant=shared)
    with pytest.raises(TypeError, match="predict_proba"):
        reg.fit(X, y)
    assert shared.events == []


def test_classifier_needs_binary_targets():
    X, y = make_classification(
        n_samples=300, n_features=5, n_informative=3, n_classes=3, random_state=0
    )
    with pytest.raises(ValueError, match=r"\{0, 1\}"):
        SoftLabelPrivateRegressor(LogisticRegression()).fit(X, y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"mechanism": SoftLabelHistogram(max_unstable=0)}, "max_unstable"),
        ({"delta": 0.0}, "delta"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"mechanism": SoftLabelHistogram(fallback="abstain")}, "fallback"),
        ({"mechanism": SoftLabelHistogram(noisy_mean_share=1.0)}, "noisy_mean_share"),
        ({"mechanism": SoftLabelHistogram(noise="pure")}, "noise"),
        ({"mechanism": "sparse_vector"}, "mechanism"),
        ({"n_estimators": 500}, "n_samples=200"),
    ],
)
def test_bad_parameters(regression_data, params, match):
    X, y = regression_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = SoftLabelPrivateRegressor(target_range=(-1, 1), accountant=shared, **params)
    with pytest.raises(ValueError, match=match):
        reg.fit(X, y)
    assert shared.events == []


def test_copies_do_not_replay_the_noise(regression_data):
    import copy

    X, y = regression_data
    reg = SoftLabelPrivateRegressor(
        n_estimators=5,
        mechanism=SoftLabelHistogram(max_unstable=1000, fallback="noisy_mean"),
        target_range=(-300, 300),
    ).fit(X, y)
    duplicate = copy.deepcopy(reg)
    assert not np.array_equal(reg.predict(X[:100]), duplicate.predict(X[:100]))


def test_refused_refit_keeps_the_live_model(regression_data):
    X, y = regression_data
    reg = SoftLabelPrivateRegressor(
        n_estimators=5, target_range=(-1, 1), mechanism="soft_label"
    ).fit(X, y)
    state = reg._serving_state_
    with pytest.raises(ValueError, match="gamma"):
        reg.set_params(mechanism=SoftLabelHistogram(gamma=0.3)).fit(X, y)
    assert reg._serving_state_ is state and reg.n_bins_ == 10
    assert reg.predict(X[:5], return_abstained=True)[0].shape == (5,)
