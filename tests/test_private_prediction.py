"""PrivatePredictionClassifier and PrivatePredictionRegressor.

See docs/design.rst, "Per-query releases" and "GNMax and Confident-GNMax".

Statistical tests state their failure probability: each is a chi-square
goodness-of-fit test at the ``1e-6`` quantile, so a correct implementation
fails one of them with probability at most ``1e-6`` per run (asymptotically;
every expected bin count is above 1,000). The noise is seeded, so in fact
every run is the same draw.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification, make_regression

from dpsklearn import (
    AdaptiveRange,
    BudgetExhaustedError,
    ClippedMean,
    Exponential,
    GNMax,
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
)
from dpsklearn.accounting import (
    discrete_gaussian_epsilon,
    per_release_epsilon,
    zcdp_epsilon,
)
from dpsklearn.mechanisms import (
    GridLaplaceRelease,
    SoftMajority,
    gnmax,
    gnmax_noisy_counts,
    gnmax_sigma,
)
from dpsklearn.noise import (
    default_grid_step,
    discrete_laplace,
    make_noise_generators,
    project_to_simplex,
)
from dpsklearn.planning._outcomes import (
    argmax_win_probability as _argmax_win_probability,
)
from dpsklearn.serving import ReleaseCache, row_keys
from dpsklearn.teachers import ConstantTeacher

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

FAILURE_PROBABILITY = 1e-6


def _spent(accountant):
    return (
        math.fsum(e.epsilon * e.count for e in accountant.events),
        math.fsum(e.delta * e.count for e in accountant.events),
    )


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(
        n_samples=600, n_features=5, n_informative=3, random_state=0
    )
    return X, y


# -- eps_q (per-query epsilon) ---------------------------------------------------------
# Hand-computed with 40-digit decimal arithmetic:
#   rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2,
#   exponential mechanism: eps_q = sqrt(8 rho / m); Laplace: sqrt(2 rho / m).
EPS_Q_TABLE = [
    # epsilon, delta, m, basic, zcdp (exponential), zcdp (laplace)
    (1.0, 1e-5, 1000, 0.001, 1.290579353299454e-2, 6.452896766497270e-3),
    (8.0, 1e-5, 1667, 8.0 / 1667, 7.095665434976919e-2, 3.547832717488459e-2),
    (0.5, 1e-6, 10, 0.05, 5.962445242748690e-2, 2.981222621374345e-2),
    (1.0, 1e-5, 1, 1.0, 4.081170257613418e-1, 2.040585128806709e-1),
]


@pytest.mark.usefixtures("answers_below_constant_allowed")
@pytest.mark.parametrize("epsilon, delta, m, basic, zcdp, zcdp_laplace", EPS_Q_TABLE)
def test_epsilon_per_query_hand_computed(
    binary_data, epsilon, delta, m, basic, zcdp, zcdp_laplace
):
    X, y = binary_data
    # The splits an estimator no longer offers (it takes the tightest) are
    # pinned through the mechanism that keeps them; "auto" is the estimator.
    fitted = {
        calibration: SoftMajority.calibrate(
            epsilon, delta, m, n_teachers=3, n_classes=2, calibration=calibration
        ).epsilon_per_query
        for calibration in ("basic", "zcdp", "rdp")
    }
    fitted["auto"] = (
        PrivatePredictionClassifier(
            n_estimators=3, epsilon=epsilon, delta=delta, max_queries=m, classes=[0, 1]
        )
        .fit(X, y)
        .epsilon_per_query_
    )
    assert fitted["basic"] == pytest.approx(basic, rel=1e-12)
    assert fitted["zcdp"] == pytest.approx(zcdp, rel=1e-12)
    rdp = per_release_epsilon(
        epsilon, delta, m, release="exponential", calibration="rdp"
    )[0]
    assert fitted["rdp"] == rdp and rdp >= fitted["zcdp"]
    # The default never gives a smaller eps_q than any of them (and may take
    # the optimal or exact bounded-range composition, larger still).
    assert fitted["auto"] >= max(fitted["basic"], fitted["zcdp"], fitted["rdp"])
    assert fitted["auto"] == per_release_epsilon(epsilon, delta, m)[0]
    assert per_release_epsilon(
        epsilon, delta, m, release="laplace", calibration="zcdp"
    )[0] == (pytest.approx(zcdp_laplace, rel=1e-12))
    # The regressor's Laplace release takes the Laplace splits (eps_q^2/2).
    laplace_splits = {
        calibration: GridLaplaceRelease.calibrate(
            epsilon,
            delta,
            m,
            sensitivity=6 / 3,
            bounds=(-3, 3),
            calibration=calibration,
        )
        for calibration in ("basic", "zcdp", "rdp")
    }
    regs = {
        noise: PrivatePredictionRegressor(
            n_estimators=3,
            epsilon=epsilon,
            delta=delta,
            max_queries=m,
            mechanism=ClippedMean(noise=noise),
            target_range=(-3, 3),
        ).fit(X, y)
        for noise in ("gaussian", "auto")
    }
    rdp_laplace = per_release_epsilon(
        epsilon, delta, m, release="laplace", calibration="rdp"
    )[0]
    kov_laplace = per_release_epsilon(
        epsilon, delta, m, release="laplace", calibration="kov"
    )[0]
    assert laplace_splits["basic"].epsilon_per_query == pytest.approx(basic, rel=1e-12)
    assert laplace_splits["zcdp"].epsilon_per_query == pytest.approx(
        zcdp_laplace, rel=1e-12
    )
    assert laplace_splits["rdp"].epsilon_per_query == rdp_laplace
    assert regs["gaussian"].epsilon_per_query_ is None
    # "auto": the least noisy of the best Laplace split (the largest eps_q of
    # the splits, optimal composition included) and the Gaussian.
    laplace = GridLaplaceRelease.calibrate(
        epsilon, delta, m, sensitivity=6 / 3, bounds=(-3, 3)
    )
    assert laplace.epsilon_per_query >= max(basic, zcdp_laplace, rdp_laplace)
    assert laplace.epsilon_per_query == pytest.approx(
        max(basic, zcdp_laplace, rdp_laplace, kov_laplace), rel=1e-3
    )
    gaussian_wins = regs["gaussian"].noise_std_ < laplace.noise_std
    chosen = "gaussian" if gaussian_wins else laplace.calibration_name
    assert regs["auto"].calibration_ == chosen
    assert regs["auto"].noise_std_ == min(
        regs["gaussian"].noise_std_, laplace.noise_std
    )
    # ClippedMean(noise="laplace") is that best Laplace split.
    only_laplace = PrivatePredictionRegressor(
        n_estimators=3,
        epsilon=epsilon,
        delta=delta,
        max_queries=m,
        mechanism=ClippedMean(noise="laplace"),
        target_range=(-3, 3),
    ).fit(X, y)
    assert only_laplace.epsilon_per_query_ == laplace.epsilon_per_query
    assert only_laplace.calibration_ == laplace.calibration_name


def test_auto_calibration_m1_is_basic(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=3, max_queries=1, classes=[0, 1]
    ).fit(X, y)
    assert clf.calibration_ == "basic" and clf.epsilon_per_query_ == 1.0


# -- the exponential mechanism's label frequencies ---------------------------
def _model_with_votes(votes, epsilon, n_queries, **params):
    """A fitted classifier whose teachers vote ``votes`` on every query.

    Default: the exponential mechanism for a total ``epsilon`` over
    ``n_queries`` (its ``eps_q`` is ``epsilon_per_query_``); ``params``
    override the estimator's parameters (e.g. ``mechanism="gnmax"``).
    """
    n_classes = len(votes)
    X = np.arange(40, dtype=float).reshape(-1, 1)
    y = np.arange(40) % n_classes
    settings = dict(
        n_estimators=2,
        epsilon=epsilon,
        max_queries=n_queries,
        classes=list(range(n_classes)),
        noise_random_state=12345,
    )
    clf = PrivatePredictionClassifier(**{**settings, **params}).fit(X, y)
    clf.estimators_ = [
        ConstantTeacher(label, n_classes)
        for label, count in enumerate(votes)
        for _ in range(count)
    ]
    vars(clf).pop("_fused_ensemble_", None)  # votes from the new teachers only
    return clf


@pytest.mark.parametrize("votes", [(5, 3, 2), (3, 7)])
def test_exponential_mechanism_frequencies_chi_square(votes):
    n_draws = 100_000
    # epsilon = 3500 over 100,000 answers: eps_q = 0.4997 (zCDP split).
    clf = _model_with_votes(votes, 3500.0, n_draws)
    eps_q = clf.epsilon_per_query_
    assert eps_q == pytest.approx(0.5, abs=0.01)
    # Distinct query rows: repeated rows would be answered from the cache.
    X_query = np.arange(n_draws, dtype=float).reshape(-1, 1)
    labels = clf.predict(X_query)
    observed = np.bincount(labels, minlength=len(votes))
    weights = np.exp(eps_q * np.asarray(votes) / 2.0)  # Delta_u = 1
    expected = n_draws * weights / weights.sum()
    assert expected.min() > 1000
    statistic = ((observed - expected) ** 2 / expected).sum()
    critical = stats.chi2.isf(FAILURE_PROBABILITY, df=len(votes) - 1)
    assert statistic < critical, (observed, expected)
    # Dwork and Feldman (2018), Theorem 1 (numbered as in Rana's 2019 survey):
    # P(1) = e^(eps nu/2) / (1 + e^(eps nu/2)).
    if len(votes) == 2:
        nu = 2 * votes[1] - sum(votes)
        p1 = math.exp(eps_q * nu / 2) / (1 + math.exp(eps_q * nu / 2))
        assert expected[1] / n_draws == pytest.approx(p1)
    assert clf.budget_status().query_units_remaining == 0
    assert clf.budget_status().halted
    # Past the paid answers, the student of the released answers answers.
    _, source = clf.predict(np.array([[-1.0]]), return_source=True)
    assert source.tolist() == ["student"]
    # Asking again is free and gives the same answers.
    np.testing.assert_array_equal(clf.predict(X_query[:10]), labels[:10])


# -- predict_proba ------------------------------------------------
def test_predict_proba_rows_are_probability_vectors():
    X, y = make_classification(
        n_samples=900, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    for epsilon in (0.5, 50.0):
        clf = PrivatePredictionClassifier(
            n_estimators=30,
            epsilon=epsilon,
            max_queries=2000,
            classes=[0, 1, 2],
            random_state=0,
        ).fit(X, y)
        proba = clf.predict_proba(X[:300])
        assert proba.shape == (300, 3)
        assert np.all(proba >= 0) and np.all(proba <= 1)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def test_predict_proba_is_the_documented_release():
    """Reproduce the release exactly: clip, renormalise, average, grid DLap, project."""
    X, y = make_classification(
        n_samples=400, n_features=5, n_informative=3, n_classes=3, random_state=2
    )
    k = 8
    clf = PrivatePredictionClassifier(
        n_estimators=k,
        epsilon=200.0,
        max_queries=400,
        classes=[0, 1, 2],
        random_state=0,
        noise_random_state=7,
    ).fit(X, y)
    X_query = X[:50]
    proba = clf.predict_proba(X_query)

    rows = []
    for teacher in clf.estimators_:
        full = np.zeros((len(X_query), 3))
        full[:, teacher.classes_] = teacher.predict_proba(X_query)
        full = np.clip(full, 0, 1)
        rows.append(full / full.sum(axis=1, keepdims=True))
    mean = np.mean(rows, axis=0)
    g = default_grid_step(2.0 / k)
    assert clf.proba_grid_step_ == g
    units = math.floor((2.0 / k) / g) + 3  # floor((2/k)/g) + n_classes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        generators, _ = make_noise_generators(7, 2)  # predict, predict_proba
    noise = discrete_laplace(
        units / clf.privacy_mechanism_.proba_epsilon,
        size=mean.shape,
        rng=generators[1],
    )
    expected = project_to_simplex(g * (np.rint(mean / g) + noise))
    np.testing.assert_array_equal(proba, expected)


def test_predict_proba_costs_its_units_and_abstains_past_the_budget(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=5,
        epsilon=1000.0,
        max_queries=1000,
        classes=[0, 1],
        mechanism=Exponential(unanswered="abstain"),
    ).fit(X, y)
    # The estimator takes the tightest split (the exact bounded-range game
    # here); a probability row costs what its calibration says.
    cost = clf.proba_cost_
    assert cost == clf.privacy_mechanism_.proba_cost
    proba = clf.predict_proba(X[:3])
    clf.predict(X[:5])
    status = clf.budget_status()
    assert status.query_units_spent == 3 * cost + 5
    assert status.spent == clf.privacy_mechanism_.spent(3 * cost + 5, None)
    clf.predict(np.random.default_rng(0).normal(size=(995 - 3 * cost, X.shape[1])))
    assert clf.budget_status().query_units_remaining == 0
    np.testing.assert_array_equal(clf.predict_proba(X[:3]), proba)  # cached: free
    # Rows 3 and 4 find no unit left: both are abstained on (uniform rows,
    # free), and nothing more is spent.
    again = clf.predict_proba(X[:5])
    np.testing.assert_array_equal(again[:3], proba)
    np.testing.assert_array_equal(again[3:], np.full((2, 2), 0.5))
    assert clf.budget_status().query_units_spent == 1000
    assert clf.budget_status().halted


def test_predict_proba_costs_four_units_under_zcdp():
    # Under a zCDP or RDP split a probability row (a Laplace-type release,
    # eps_q^2/2-zCDP) is four exponential-mechanism units (eps_q^2/8 each);
    # basic composition and the exact bounded-range game charge one.
    zcdp = SoftMajority.calibrate(
        1000.0, 1e-5, 1000, n_teachers=5, n_classes=2, calibration="zcdp"
    )
    assert zcdp.proba_cost == 4
    rho_per_unit = zcdp.epsilon_per_query**2 / 8
    assert zcdp.spent(17, None) == (
        pytest.approx(zcdp_epsilon(17 * rho_per_unit, 1e-5)),
        1e-5,
    )
    # The 1000 units are the total rho of (epsilon=1000, delta=1e-5).
    assert zcdp_epsilon(1000 * rho_per_unit, 1e-5) == pytest.approx(1000.0)
    basic = SoftMajority.calibrate(
        1.0, 1e-5, 20, n_teachers=5, n_classes=2, calibration="basic"
    )
    assert basic.proba_cost == 1


# -- budget, cache and accountant --------------------------------------------
def test_budget_exhaustion_returns_the_paid_prefix(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=5,
        max_queries=10,
        classes=[0, 1],
        noise_random_state=0,
        mechanism=Exponential(unanswered="abstain"),
    ).fit(X, y)
    first = clf.predict(X[:4])
    # Rows 0-3 are cached; 6 new distinct rows are affordable, the 7th is not.
    batch = np.vstack([X[:2], X[10:15], X[:1], X[15:17], X[2:3]])
    labels, abstained = clf.predict(batch, return_abstained=True)
    # New rows: 10..14 (5), 15 (6th), 16 (7th: unaffordable at batch index 9).
    # The rows from there on are abstained on, the cached ones included.
    np.testing.assert_array_equal(abstained, [False] * 9 + [True] * 2)
    np.testing.assert_array_equal(labels[:2], first[:2])
    assert labels[7] == first[0]
    np.testing.assert_array_equal(labels[9:], [clf.abstain_label_] * 2)
    status = clf.budget_status()
    assert status.query_units_spent == 10 and status.halted


def test_repeated_rows_are_answered_consistently_and_free(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=5, max_queries=50, classes=[0, 1]
    ).fit(X, y)
    labels = clf.predict(X[:50])
    order = np.random.default_rng(0).permutation(50)
    np.testing.assert_array_equal(clf.predict(X[order]), labels[order])
    repeated = np.vstack([X[:3]] * 4)
    np.testing.assert_array_equal(clf.predict(repeated), np.tile(labels[:3], 4))
    assert clf.budget_status().query_units_spent == 50


def test_release_cache_prefix_and_halt():
    cache = ReleaseCache({"v": (np.int64, ())})
    keys = row_keys(np.array([[1.0], [2.0], [1.0], [3.0], [4.0]]))

    def halting(rows):  # the mechanism answers only the first two new rows
        return {"v": np.asarray(rows) * 10}, min(2, len(rows))

    out, n_answered, n_new = cache.serve(keys, 10, halting)
    assert (n_answered, n_new) == (3, 2)
    assert out["v"].tolist() == [0, 10, 0]
    out, n_answered, n_new = cache.serve(keys, 0, halting)
    assert (n_answered, n_new) == (3, 0)


def test_whole_budget_reserved_at_fit(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=5, epsilon=2.0, max_queries=100, classes=[0, 1]
    ).fit(X, y)
    assert clf.calibration_ == "bounded_range"
    assert _spent(clf.accountant_) == pytest.approx((2.0, 1e-5))
    basic = PrivatePredictionClassifier(
        n_estimators=5, epsilon=2.0, max_queries=1, classes=[0, 1]
    ).fit(X, y)
    assert basic.calibration_ == "basic"
    assert _spent(basic.accountant_) == pytest.approx((2.0, 0.0))


def test_shared_accountant_refuses_the_fit_before_training(binary_data):
    X, y = binary_data
    shared = PrivacyAccountant(epsilon=1.5, delta=1e-5)
    params = dict(n_estimators=5, epsilon=1.0, max_queries=100, classes=[0, 1])
    clf = PrivatePredictionClassifier(accountant=shared, **params).fit(X, y)
    assert clf.accountant_ is shared
    second = PrivatePredictionClassifier(accountant=shared, **params)
    with pytest.raises(BudgetExhaustedError):
        second.fit(X, y)
    assert not hasattr(second, "estimators_")
    assert len(shared.events) == 1


# -- n_estimators="auto" (Theorem 1) -----------------------------------------
def test_auto_n_estimators_follows_theorem1_capped_by_rows():
    X, y = make_classification(n_samples=1000, n_features=4, random_state=0)
    clf = PrivatePredictionClassifier(max_queries=1, classes=[0, 1]).fit(X, y)
    # eps_q = 1 (basic), target_error 0.1: r = ceil(6 ln 40) = 23.
    assert clf.n_estimators_ == 23 == math.ceil(6 * math.log(40))
    with pytest.warns(UserWarning, match="need 23 teachers"):
        small = PrivatePredictionClassifier(max_queries=1, classes=[0, 1]).fit(
            X[:200], y[:200]
        )
    assert small.n_estimators_ == 10  # 200 rows / 20 per shard


# -- the regressor (Theorem 4, Lemma 2) --------------------------------------
class _ConstantRegressor:
    def __init__(self, value):
        self.value = float(value)

    def predict(self, X):
        return np.full(X.shape[0], self.value)


def _regressor_with_teachers(values, target_range, epsilon, n_queries):
    """A fitted regressor whose teachers predict the constants ``values``.

    Grid Laplace noise (``ClippedMean(noise="laplace")``) at the best split of
    ``epsilon`` over ``n_queries``; its ``eps_q`` is ``epsilon_per_query_``.
    """
    n_rows = max(60, len(values))
    reg = PrivatePredictionRegressor(
        n_estimators=len(values),
        epsilon=epsilon,
        max_queries=n_queries,
        mechanism=ClippedMean(noise="laplace"),
        target_range=target_range,
        noise_random_state=99,
    ).fit(np.arange(n_rows, dtype=float).reshape(-1, 1), np.zeros(n_rows))
    reg.estimators_ = [_ConstantRegressor(v) for v in values]
    return reg


def test_regressor_clips_each_teacher_before_averaging():
    # Teachers say 100, 0, 0, 0 on the range (0, 1): mean of clipped values is
    # 0.25 (sensitivity 1/4); clipping the mean instead would give 1.
    reg = _regressor_with_teachers([100, 0, 0, 0], (0.0, 1.0), 1e6, 1)
    assert reg.sensitivity_ == 0.25
    value = reg.predict(np.array([[0.0]]))
    assert value[0] == 0.25


def test_regressor_noise_has_the_stated_scale():
    n_draws = 100_000
    k = 200
    # epsilon = 7000 over 100,000 releases: eps_q near 0.5.
    reg = _regressor_with_teachers([0.3] * k, (-100.0, 100.0), 7000.0, n_draws)
    eps_q = reg.epsilon_per_query_
    assert 0.3 < eps_q < 1.0
    g = default_grid_step(200.0 / k)
    units = math.floor((200.0 / k) / g) + 1  # grid Laplace: floor(Delta/g) + 1
    scale = units / eps_q  # DLap scale in grid units
    assert reg.grid_step_ == g
    assert reg.noise_scale_ == pytest.approx(g * scale)
    values = reg.predict(np.arange(n_draws, dtype=float).reshape(-1, 1))
    on_grid = values / g
    np.testing.assert_array_equal(on_grid, np.rint(on_grid))  # grid releases
    noise = np.rint(on_grid).astype(np.int64) - int(np.rint(0.3 / g))
    assert np.abs(noise).max() * g < 99  # no clipping happened
    # Chi-square of the noise against DLap(scale) on 8 bins with edges at
    # multiples of the scale: P(Z <= z) = a^(-z)/(1+a) (z < 0),
    # 1 - a^(z+1)/(1+a) (z >= 0), a = exp(-1/scale).
    a = math.exp(-1.0 / scale)

    def cdf(z):
        return a ** (-z) / (1 + a) if z < 0 else 1 - a ** (z + 1) / (1 + a)

    edges = [round(c * scale) for c in (-3, -1.5, -0.75, -0.25, 0.25, 0.75, 1.5, 3)]
    # Bin i holds edges[i-1] < Z <= edges[i] (9 bins, open at both ends).
    observed = np.bincount(np.searchsorted(edges, noise), minlength=len(edges) + 1)
    probabilities = np.diff([0.0] + [cdf(e) for e in edges] + [1.0])
    expected = n_draws * probabilities
    assert expected.min() > 1000
    statistic = ((observed - expected) ** 2 / expected).sum()
    assert statistic < stats.chi2.isf(FAILURE_PROBABILITY, df=len(expected) - 1)


def test_regressor_target_range():
    X, y = make_regression(n_samples=300, n_features=3, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="target_range"):
        reg = PrivatePredictionRegressor(
            n_estimators=5,
            max_queries=10,
            # five teachers' answers would lose to a constant; a stated
            # spread far above the noise lets this test check the range only
            mechanism=AdaptiveRange(target_std=1e12),
        ).fit(X, y)
    assert reg.target_range_ == (y.min(), y.max())
    predictions = reg.predict(X[:10])
    assert np.all((predictions >= y.min()) & (predictions <= y.max()))


# -- bad input: clear errors before any budget is spent ----------------------
@pytest.mark.parametrize("target_range", [(1.0, 1.0), (2.0, -1.0), (0, np.inf), (1,)])
def test_regressor_bad_target_range(target_range):
    X, y = make_regression(n_samples=100, n_features=3, random_state=0)
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = PrivatePredictionRegressor(target_range=target_range, accountant=shared)
    with pytest.raises(ValueError, match="target_range"):
        reg.fit(X, y)
    assert shared.events == []


def test_max_queries_none_is_refused(binary_data):
    X, y = binary_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="max_queries"):
        PrivatePredictionRegressor(max_queries=None, accountant=shared).fit(X, y)
    assert shared.events == []


def test_classifier_max_queries_none_plans_a_public_number(binary_data):
    """None plans 1,000 units at fit (public), the same calibration as 1,000;
    rows past them are the student's, so every row gets a label."""
    X, y = binary_data
    planned = PrivatePredictionClassifier(n_estimators=5, classes=[0, 1]).fit(X, y)
    stated = PrivatePredictionClassifier(
        n_estimators=5, classes=[0, 1], max_queries=1000
    ).fit(X, y)
    assert planned.max_queries is None and planned.max_queries_ == 1000
    assert planned.epsilon_per_query_ == stated.epsilon_per_query_
    assert planned.calibration_ == stated.calibration_
    queries = np.random.default_rng(1).normal(size=(1200, X.shape[1]))
    with pytest.warns(UserWarning, match="student"):
        labels, abstained, source = planned.predict(
            queries, return_abstained=True, return_source=True
        )
    assert not abstained.any() and set(labels.tolist()) <= {0, 1}
    np.testing.assert_array_equal(source[:1000], ["private"] * 1000)
    np.testing.assert_array_equal(source[1000:], ["student"] * 200)
    status = planned.budget_status()
    assert (status.n_answered, status.n_student, status.n_abstained) == (1000, 200, 0)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"mechanism": Exponential(target_error=1.0)}, "target_error"),
        ({"mechanism": "pld"}, "mechanism"),
        ({"n_estimators": 10_000}, "n_samples=600"),
        ({"mechanism": "gnmax", "delta": 0.0}, "delta"),
    ],
)
def test_classifier_bad_parameters(binary_data, params, match):
    X, y = binary_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match=match):
        PrivatePredictionClassifier(accountant=shared, **params).fit(X, y)
    assert shared.events == []


def test_classifier_bad_data(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(n_estimators=5, max_queries=10, classes=[0, 1])
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X_nan, y)
    with pytest.raises(ValueError, match="not in the given `classes`"):
        PrivatePredictionClassifier(n_estimators=5, classes=[0]).fit(X, y)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])


# -- GridSearchCV over epsilon on Adult: the trade-off shows ---------------
def test_grid_search_over_epsilon_on_adult():
    from sklearn.compose import ColumnTransformer
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    from dpsklearn.datasets import load_adult

    adult = load_adult(as_frame=True)
    sample = np.random.default_rng(0).choice(len(adult.target), 5000, replace=False)
    categorical = [adult.feature_names[j] for j in adult.categorical_features]
    # Public, data-independent encoding: the Bunch's fixed category lists.
    encoder = ColumnTransformer(
        [
            (
                "onehot",
                OneHotEncoder(
                    categories=[adult.categories[name] for name in categorical],
                    sparse_output=False,
                ),
                categorical,
            )
        ],
        remainder="passthrough",
    )
    X = encoder.fit_transform(adult.data.iloc[sample])
    y = np.asarray(adult.target)[sample]
    epsilons = [0.5, 1, 2, 4, 8]
    search = GridSearchCV(
        PrivatePredictionClassifier(
            DecisionTreeClassifier(max_depth=3),
            n_estimators=66,  # 50 rows per shard on 3,333 rows
            max_queries=1667,  # at least the fold size (5000 / 3)
            classes=adult.target_names,
            random_state=0,
            noise_random_state=0,
        ),
        {"epsilon": epsilons},
        cv=3,
        refit=False,
    )
    search.fit(X, y)
    accuracy = search.cv_results_["mean_test_score"]
    assert accuracy[-1] - accuracy[0] >= 0.05, accuracy
    assert stats.spearmanr(epsilons, accuracy).statistic >= 0.9, accuracy


# -- copies reseed their noise ---------------------------------------------------------
def test_copies_do_not_replay_the_noise(binary_data):
    import copy
    import pickle

    X, y = binary_data
    params = dict(n_estimators=10, max_queries=500, classes=[0, 1])
    clf = PrivatePredictionClassifier(**params).fit(X, y)
    for duplicate in (pickle.loads(pickle.dumps(clf)), copy.deepcopy(clf)):
        assert not np.array_equal(
            clf.predict_proba(X[:100]), duplicate.predict_proba(X[:100])
        )
    seeded = PrivatePredictionClassifier(noise_random_state=3, **params).fit(X, y)
    duplicate = pickle.loads(pickle.dumps(seeded))
    np.testing.assert_array_equal(
        seeded.predict_proba(X[:100]), duplicate.predict_proba(X[:100])
    )


@pytest.mark.parametrize(
    "Estimator", [PrivatePredictionClassifier, PrivatePredictionRegressor]
)
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_refused_refit_keeps_the_live_model(binary_data, Estimator):
    X, y = binary_data
    abstain = (
        {"mechanism": Exponential(unanswered="abstain")}
        if Estimator is PrivatePredictionClassifier
        else {}
    )
    model = Estimator(n_estimators=5, max_queries=10, **abstain).fit(X, y)
    model.predict(X[:3])
    accountant, teachers = model.accountant_, model.estimators_
    shared = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    with pytest.raises(BudgetExhaustedError):
        model.set_params(accountant=shared).fit(X, y)
    # The model already paid for keeps serving, with its remaining budget.
    assert model.accountant_ is accountant and model.estimators_ is teachers
    assert model.budget_status().query_units_spent == 3
    values, abstained = model.predict(X[3:11], return_abstained=True)
    assert values.shape == (8,)
    np.testing.assert_array_equal(abstained, [False] * 7 + [True])
    assert model.budget_status().query_units_remaining == 0
    assert shared.events == []


def test_predict_proba_with_shards_missing_a_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    y[:3] = 2  # class 2 is in at most 3 of the 20 shards
    clf = PrivatePredictionClassifier(
        n_estimators=20, max_queries=200, classes=[0, 1, 2], random_state=0
    ).fit(X, y)
    assert any(len(t.classes_) == 2 for t in clf.estimators_)
    proba = clf.predict_proba(X[:40])
    assert proba.shape == (40, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


# -- mechanism="gnmax": the Gaussian noisy argmax ------------------------------
# Each released row is the noisy count vector counts + N_Z(0, sigma^2) per
# class; predict is its argmax, predict_proba its vote shares. One release,
# one cache, one unit per distinct row whichever method asks first.


def _discrete_gaussian_pmf(sigma):
    """Exact pmf of N_Z(0, sigma^2) on [-half, half] (the tail beyond is < 1e-300)."""
    half = int(math.ceil(40 * sigma)) + 40
    support = np.arange(-half, half + 1)
    log_w = -(support.astype(np.float64) ** 2) / (2 * sigma**2)
    weights = np.exp(log_w - log_w.max())
    return support, weights / math.fsum(weights)


@pytest.mark.parametrize(
    "epsilon, max_queries, used",
    [
        (1.0, 1, "gdp"),  # the exact Gaussian composition here ...
        (7000.0, 100_000, "zcdp"),  # ... and zCDP here
        (1.0, 1000, "gdp"),
    ],
)
def test_gnmax_sigma_is_the_calibrated_one(binary_data, epsilon, max_queries, used):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        mechanism="gnmax",
        epsilon=epsilon,
        max_queries=max_queries,
        classes=[0, 1],
    ).fit(X, y)
    sigma, name = gnmax_sigma(epsilon, 1e-5, max_queries, calibration="auto")
    assert (clf.sigma_, clf.calibration_) == (sigma, name)
    assert name == used
    # The tightest of the two certificates: neither alone gives less noise.
    for route in ("rdp", "zcdp"):
        assert (
            clf.sigma_ <= gnmax_sigma(epsilon, 1e-5, max_queries, calibration=route)[0]
        )
    assert clf.epsilon_per_query_ is None and clf.proba_grid_step_ is None
    assert clf.proba_cost_ == 1
    # The whole (epsilon, delta) is reserved at fit, as one event.
    assert len(clf.accountant_.events) == 1
    assert _spent(clf.accountant_) == pytest.approx((epsilon, 1e-5))
    # "auto" k: every teacher the data supports (sigma does not depend on k).
    assert clf.n_estimators_ == 600 // 20
    status = clf.budget_status()
    assert status.spent == (0.0, 0.0) and status.remaining == (epsilon, 1e-5)
    # All max_queries vectors together convert to the whole budget.
    full = clf.privacy_mechanism_.spent(max_queries, None)
    assert full[0] == pytest.approx(epsilon, rel=1e-4) and full[0] <= epsilon


def test_gnmax_refit_with_the_other_mechanism_leaves_no_stale_figures(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=5, max_queries=10, mechanism="gnmax", classes=[0, 1]
    ).fit(X, y)
    assert clf.sigma_ > 0 and clf.epsilon_per_query_ is None
    clf.set_params(mechanism="exponential").fit(X, y)
    assert clf.sigma_ is None and clf.epsilon_per_query_ > 0
    assert clf.proba_grid_step_ > 0
    assert isinstance(clf.privacy_mechanism_, SoftMajority)
    clf.set_params(mechanism="gnmax").fit(X, y)
    assert clf.epsilon_per_query_ is None and clf.proba_grid_step_ is None


class _Recording(ConstantTeacher):
    """A teacher whose fit is recorded (to show that none was trained)."""

    fits = 0

    def __init__(self):
        super().__init__(0, 2)

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        type(self).fits += 1
        return self


@pytest.mark.parametrize(
    "params, match",
    [
        ({"delta": 0.0}, "delta=0"),
        ({"delta": 0.0, "mechanism": GNMax()}, "delta=0"),
    ],
)
def test_gnmax_refuses_pure_delta_before_any_spend(binary_data, params, match):
    X, y = binary_data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    shared.spend(1.0, 1e-4)
    before = list(shared.events)
    _Recording.fits = 0
    clf = PrivatePredictionClassifier(
        _Recording(),
        **{
            "n_estimators": 5,
            "mechanism": "gnmax",
            "accountant": shared,
            "classes": [0, 1],
            **params,
        },
    )
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y)
    assert shared.events == before
    assert not hasattr(clf, "estimators_") and _Recording.fits == 0


def test_gnmax_predict_and_predict_proba_read_one_release():
    X, y = make_classification(
        n_samples=900, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    k, seed = 30, 11
    clf = PrivatePredictionClassifier(
        n_estimators=k,
        mechanism="gnmax",
        epsilon=20.0,
        max_queries=100,
        classes=[0, 1, 2],
        random_state=0,
        noise_random_state=seed,
    ).fit(X, y)
    labels = clf.predict(X[:40])  # 40 units
    proba = clf.predict_proba(X[:60])  # rows 0-39 free: 20 units
    status = clf.budget_status()
    assert status.query_units_spent == 60
    assert status.n_served == status.n_answered == 60  # distinct rows released
    # 60 vectors, two counts moving in each, composed exactly (Gaussian DP).
    assert clf.calibration_ == "gdp"
    assert status.spent[0] == pytest.approx(
        discrete_gaussian_epsilon(1e-5, [(clf.sigma_, 1, 120)])
    )
    # argmax(predict_proba) == predict, row by row (one release per row).
    all_labels = clf.predict(X[:60])  # free
    assert clf.budget_status().query_units_spent == 60
    np.testing.assert_array_equal(all_labels[:40], labels)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], all_labels)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # The release itself: the discrete Gaussian noise of gnmax(), drawn in the
    # order of the new rows; labels are gnmax's argmax (ties to the lowest).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        (generator,), _ = make_noise_generators(seed, 1)
        (same,), _ = make_noise_generators(seed, 1)
    counts = clf._vote_counts(X[:60])
    noisy = np.vstack(
        [
            gnmax_noisy_counts(counts[:40], clf.sigma_, rng=generator),
            gnmax_noisy_counts(counts[40:], clf.sigma_, rng=generator),
        ]
    )
    np.testing.assert_array_equal(labels, gnmax(counts[:40], clf.sigma_, rng=same))
    np.testing.assert_array_equal(all_labels, noisy.argmax(axis=1))
    np.testing.assert_array_equal(proba, project_to_simplex(noisy / k))
    # A copy keeps the one cache for both methods (and its own budget).
    import pickle

    duplicate = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(duplicate.predict_proba(X[:40]), proba[:40])
    assert duplicate.budget_status().query_units_spent == 60


def test_gnmax_predict_proba_needs_only_votes(binary_data):
    from sklearn.linear_model import RidgeClassifier

    X, y = binary_data
    params = dict(n_estimators=5, max_queries=20, classes=[0, 1])
    exponential = PrivatePredictionClassifier(RidgeClassifier(), **params)
    assert not hasattr(exponential, "predict_proba")
    assert not hasattr(exponential.fit(X, y), "predict_proba")
    gn = PrivatePredictionClassifier(RidgeClassifier(), mechanism="gnmax", **params)
    assert hasattr(gn, "predict_proba")
    proba = gn.fit(X, y).predict_proba(X[:5])
    assert proba.shape == (5, 2)
    np.testing.assert_array_equal(gn.classes_[proba.argmax(axis=1)], gn.predict(X[:5]))


def test_gnmax_budget_exhaustion_returns_the_paid_prefix(binary_data):
    X, y = binary_data
    clf = PrivatePredictionClassifier(
        n_estimators=10,
        mechanism=GNMax(unanswered="abstain"),
        max_queries=10,
        classes=[0, 1],
        noise_random_state=0,
    ).fit(X, y)
    labels = clf.predict(X[:6])
    # Rows 4 and 5 are released; 8 new rows follow, 4 are affordable.
    proba = clf.predict_proba(X[4:14])
    assert proba.shape == (10, 2)
    np.testing.assert_array_equal(
        clf.classes_[proba[:6].argmax(axis=1)], clf.predict(X[4:10])
    )
    # The last 4 rows are abstained on: uniform, free.
    np.testing.assert_array_equal(proba[6:], np.full((4, 2), 0.5))
    np.testing.assert_array_equal(clf.predict(X[:6]), labels)
    assert clf.budget_status().query_units_remaining == 0
    assert clf.budget_status().halted
    answers, abstained = clf.predict(
        np.vstack([X[:3], X[20:21]]), return_abstained=True
    )
    np.testing.assert_array_equal(answers[:3], labels[:3])
    assert answers[3] == clf.abstain_label_
    np.testing.assert_array_equal(abstained, [False, False, False, True])
    assert clf.budget_status().query_units_spent == 10


def test_gnmax_max_queries_spent_abstains(binary_data):
    X, y = binary_data
    m = 7
    clf = PrivatePredictionClassifier(
        n_estimators=5,
        mechanism=GNMax(unanswered="abstain"),
        max_queries=m,
        classes=[0, 1],
    ).fit(X, y)
    for i in range(m):  # one distinct row per call, alternating the methods
        (clf.predict if i % 2 else clf.predict_proba)(X[i : i + 1])
    assert clf.budget_status().query_units_spent == m
    assert clf.budget_status().halted
    labels, abstained = clf.predict(X[m : m + 1], return_abstained=True)
    assert labels.tolist() == [-1] and abstained.tolist() == [True]
    np.testing.assert_array_equal(clf.predict_proba(X[m : m + 1]), [[0.5, 0.5]])
    assert clf.budget_status().query_units_spent == m


def _gnmax_model_with_votes(votes, epsilon, n_queries):
    """A fitted GNMax classifier whose teachers vote ``votes`` on every query."""
    return _model_with_votes(
        votes, epsilon, n_queries, mechanism="gnmax", noise_random_state=4321
    )


@pytest.mark.parametrize("votes", [(12, 8), (8, 12), (10, 10)])
def test_gnmax_label_frequency_matches_the_exact_probability(votes):
    # Label 1 wins iff Z1 - Z0 > c0 - c1 (a tie goes to label 0), with Z0, Z1
    # i.i.d. N_Z(0, sigma^2); its exact probability comes from the pmf.
    n_draws = 100_000
    clf = _gnmax_model_with_votes(votes, 7000.0, n_draws)
    sigma = clf.sigma_
    assert 3 < sigma < 5  # comparable to the vote gap: both labels are common
    support, pmf = _discrete_gaussian_pmf(sigma)
    difference = np.convolve(pmf, pmf[::-1])  # Z1 - Z0 on [-2 half, 2 half]
    values = np.arange(2 * support[0], 2 * support[-1] + 1)
    p1 = math.fsum(difference[values > votes[0] - votes[1]])
    # The package's own exact formula for the regime guide agrees.
    win = _argmax_win_probability(np.array([votes]), np.array([1]), sigma)
    assert win[0] == pytest.approx(p1, abs=1e-12)
    labels = clf.predict(np.arange(n_draws, dtype=float).reshape(-1, 1))
    observed = int(np.count_nonzero(labels == 1))
    # Exact binomial quantiles: a correct sampler lands outside with
    # probability at most FAILURE_PROBABILITY.
    low = stats.binom.ppf(FAILURE_PROBABILITY / 2, n_draws, p1)
    high = stats.binom.isf(FAILURE_PROBABILITY / 2, n_draws, p1)
    assert low <= observed <= high, (observed, n_draws * p1, low, high)
    assert clf.budget_status().query_units_remaining == 0


# -- answers that would lose to a constant are refused before the spend -------
def _wage_like(n, spread, seed=0):
    """Log wages in the public range (4, 10): a signal in two columns and noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = 6.5 + spread * (0.7 * X[:, 0] + 0.3 * X[:, 1] + 0.65 * rng.normal(size=n))
    return X, np.clip(y, 4.0, 10.0)


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_defaults_refuse_answers_that_lose_to_a_constant(epsilon):
    # 2,800 rows: 280 teachers, whose 1,000 noisy answers over the range
    # (4, 10) carry noise of standard deviation 2 to 4, far above the
    # target's spread (about 0.7): they would score R^2 far below 0. The
    # refusal comes before any spend and names what works instead.
    X, y = _wage_like(2800, spread=0.7)
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = PrivatePredictionRegressor(
        epsilon=epsilon, target_range=(4, 10), accountant=shared
    )
    with pytest.raises(ValueError, match="worse than a constant") as caught:
        model.fit(X, y)
    assert shared.events == []
    message = str(caught.value)
    assert "KnowledgeTransferRegressor" in message and "PrivateKernelRidge" in message


def test_the_refusal_reads_public_numbers_only():
    # Two targets of very different spread (one twenty times the other), the
    # same public inputs: the same outcome, whatever y is.
    X, narrow = _wage_like(2800, spread=0.05)
    _, wide = _wage_like(2800, spread=1.0)
    outcomes = []
    for y in (narrow, wide):
        try:
            PrivatePredictionRegressor(target_range=(4, 10)).fit(X, y)
            outcomes.append("fitted")
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1] != "fitted"


def test_enough_teachers_are_not_refused():
    # 20,000 rows: 2,000 teachers; 200 answers' planned noise costs a small
    # share of the smallest spread assumed, and they beat a constant.
    X, y = _wage_like(20_000, spread=0.7)
    model = PrivatePredictionRegressor(
        epsilon=1.0,
        max_queries=200,
        target_range=(4, 10),
        random_state=0,
        noise_random_state=0,
    ).fit(X, y)
    answers = model.predict(X[:200])
    assert np.mean((answers - y[:200]) ** 2) < np.var(y[:200])


def test_a_stated_spread_is_the_users_public_assumption():
    # A spread stated larger than the assumed one (an eighth of the range)
    # lets a borderline plan through: the rule reads the stated figure.
    X, y = _wage_like(20_000, spread=0.7)
    params = dict(epsilon=0.5, target_range=(4, 10), random_state=0)
    with pytest.raises(ValueError, match="worse than a constant"):
        PrivatePredictionRegressor(**params).fit(X, y)
    model = PrivatePredictionRegressor(
        **params, mechanism=AdaptiveRange(target_std=1.5)
    ).fit(X, y)
    assert model.n_estimators_ == 2000
