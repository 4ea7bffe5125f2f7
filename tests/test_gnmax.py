"""GNMax and Confident-GNMax (docs/design.rst, "GNMax and Confident-GNMax").

* the discrete Gaussian sampler against its pmf (chi-square);
* the worst-case calibration against dp_accounting's RDP accountant: it
  meets the target and is not loose beyond the bisection tolerance;
* the mechanism: halting after ``max_answers``, answers under consensus, bad
  input, the estimator's fit, accounting and serving;
* audits on worst-case neighbouring vote histograms (one vote moved): the
  exact loss of the released output (enumerated) and a sampled lower bound
  (:func:`dpsklearn.audit.audit`, confidence 0.95) never exceed the claimed
  per-step epsilon, which is the step's RDP converted at ``delta`` by
  dp_accounting; an obviously broken variant (no noise) is caught.

Randomness is seeded, so the file is deterministic; the chi-square tests
would fail a correct sampler with probability 1e-6 each under fresh seeds.
"""

from __future__ import annotations

import copy
import math
import pickle

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from dpsklearn import (
    BudgetExhaustedError,
    ConfidentGNMax,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import (
    PrivacyAccountant,
    discrete_gaussian_delta,
    gdp_delta,
)
from dpsklearn.audit import audit, exact_epsilon
from dpsklearn.mechanisms import (
    ConfidentGNMaxEngine,
    ConfidentGNMaxRelease,
    GaussianCalibration,
    calibrate_confident_gnmax,
    confident_gnmax,
    confident_gnmax_threshold,
    gnmax,
    gnmax_sigma,
)
from dpsklearn.noise import NoiseSource, discrete_gaussian
from dpsklearn.planning import confident_gnmax_outcome

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

SQRT2 = math.sqrt(2.0)


CHI2_FAILURE = 1e-6
CONFIDENCE = 0.95


def rdp_epsilon(events, delta):
    """Independent dp_accounting RDP conversion of (noise multiplier, count) pairs."""
    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    for multiplier, count in events:
        accountant.compose(dpa.GaussianDpEvent(noise_multiplier=multiplier), count)
    return accountant.get_epsilon(delta)


def discrete_gaussian_pmf(sigma, support):
    half = int(60 * sigma) + 60
    grid = np.arange(-half, half + 1)
    log_w = -(grid.astype(float) ** 2) / (2 * sigma**2)
    norm = np.exp(log_w - log_w.max()).sum()
    log_p = -(np.asarray(support, float) ** 2) / (2 * sigma**2) - log_w.max()
    return np.exp(log_p) / norm


# --------------------------------------------------------------------------
# The discrete Gaussian sampler
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.0, 12.5])
def test_discrete_gaussian_pmf_chi_square(sigma):
    n = 200_000
    draws = discrete_gaussian(sigma, size=n, rng=np.random.default_rng(int(sigma * 10)))
    assert draws.dtype == np.int64
    half = int(12 * sigma) + 3
    support = np.arange(-half, half + 1)
    expected = n * discrete_gaussian_pmf(sigma, support)
    inside = expected >= 5
    lo, hi = support[inside][0], support[inside][-1]
    observed = np.array(
        [np.sum(draws < lo)]
        + [np.sum(draws == z) for z in range(lo, hi + 1)]
        + [np.sum(draws > hi)]
    )
    tail = n * discrete_gaussian_pmf(sigma, np.arange(hi + 1, 100 * half)).sum()
    exp_bins = np.r_[tail, expected[inside], tail]
    exp_bins *= n / exp_bins.sum()
    if exp_bins[0] < 5:  # fold negligible tails into the outermost bins
        observed = np.r_[
            observed[0] + observed[1], observed[2:-2], observed[-2] + observed[-1]
        ]
        exp_bins = np.r_[
            exp_bins[0] + exp_bins[1], exp_bins[2:-2], exp_bins[-2] + exp_bins[-1]
        ]
    p_value = stats.chisquare(observed, exp_bins).pvalue
    assert p_value > CHI2_FAILURE, p_value


def test_discrete_gaussian_shapes_and_input():
    rng = np.random.default_rng(0)
    assert discrete_gaussian(2.0, rng=rng).shape == ()
    assert discrete_gaussian(2.0, size=(3, 4), rng=rng).shape == (3, 4)
    assert discrete_gaussian(2.0, size=0, rng=rng).shape == (0,)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="sigma"):
            discrete_gaussian(bad, size=3, rng=rng)


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------

CASES = [
    (1.0, 1e-5, 2000, 2000),
    (2.0, 1e-5, 2000, 500),
    (8.0, 1e-5, 2000, 2000),
    (0.5, 1e-6, 10, 1),
    (20.0, 1e-5, 100, 100),
]


@pytest.mark.parametrize("epsilon, delta, m, answers", CASES)
def test_calibration_meets_target_and_is_tight(epsilon, delta, m, answers):
    cal = calibrate_confident_gnmax(epsilon, delta, m, answers, calibration="rdp")
    assert isinstance(cal, GaussianCalibration) and cal.name == "rdp"
    s1, s2 = cal.sigma_threshold, cal.sigma_argmax

    def worst_case(scale):
        return rdp_epsilon([(s1 * scale, m), (s2 * scale / SQRT2, answers)], delta)

    assert worst_case(1.0) <= epsilon
    assert math.isclose(worst_case(1.0), cal.certified_epsilon, rel_tol=1e-12)
    # not loose: 0.01 % less noise already overspends (bisection tol 1e-6)
    assert worst_case(1.0 - 1e-4) > epsilon
    # the split: half of rho on each kind of step
    assert math.isclose(m / (2 * s1**2), cal.rho / 2, rel_tol=1e-12)
    assert math.isclose(answers / s2**2, cal.rho / 2, rel_tol=1e-12)


@pytest.mark.parametrize("epsilon, delta, m, answers", CASES)
def test_zcdp_calibration_and_auto(epsilon, delta, m, answers):
    zcdp = calibrate_confident_gnmax(epsilon, delta, m, answers, calibration="zcdp")
    rho = zcdp.rho
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) <= epsilon
    assert rho * (1 + 1e-9) + 2 * math.sqrt(
        rho * (1 + 1e-9) * math.log(1 / delta)
    ) > epsilon * (1 - 1e-9)
    rdp = calibrate_confident_gnmax(epsilon, delta, m, answers, calibration="rdp")
    gdp = calibrate_confident_gnmax(epsilon, delta, m, answers, calibration="gdp")
    auto = calibrate_confident_gnmax(epsilon, delta, m, answers)
    assert auto.rho == max(rdp.rho, zcdp.rho, gdp.rho)
    # The exact Gaussian composition beats every RDP conversion.
    assert auto.name == "gdp" and gdp.rho > rdp.rho > zcdp.rho


@pytest.mark.parametrize("epsilon, delta, m, answers", CASES)
def test_gdp_calibration_is_certified_and_tight(epsilon, delta, m, answers):
    cal = calibrate_confident_gnmax(epsilon, delta, m, answers, calibration="gdp")
    s1, s2 = cal.sigma_threshold, cal.sigma_argmax
    groups = [(s1, 1, m), (s2, 1, 2 * answers)]
    assert discrete_gaussian_delta(epsilon, groups) <= delta
    assert cal.certified_epsilon <= epsilon
    # Not loose: 0.01 % less noise is refused (bisection tolerance 1e-6).
    scaled = [(s * (1 - 1e-4), d, c) for s, d, c in groups]
    assert discrete_gaussian_delta(epsilon, scaled) > delta
    # The worst case is exactly mu-GDP for continuous noise (Dong, Roth and
    # Su 2022): mu^2 = m / s1^2 + 2 A / s2^2 = 2 rho, at delta's own mu.
    assert math.isclose(2 * cal.rho, m / s1**2 + 2 * answers / s2**2, rel_tol=1e-12)
    assert gdp_delta(epsilon, math.sqrt(2 * cal.rho)) <= delta


@pytest.mark.parametrize("m", [20, 100])
def test_gnmax_gdp_against_dp_accounting_discrete_gaussian_pld(m):
    # Independent: dp_accounting's PLD of the discrete Gaussian itself (its
    # own pmf, truncated at 1e-30), composed 2m times (two counts move per
    # answer) at a fine discretisation. The pessimistic PLD is an upper and
    # the optimistic one a lower bound on the true delta; the certified
    # figure must lie above the lower one and within 3 % of the upper one.
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, name = gnmax_sigma(1.0, 1e-5, m)
    assert name == "gdp"
    certified = discrete_gaussian_delta(1.0, [(sigma, 1, 2 * m)])
    assert certified <= 1e-5
    bounds = [
        pld.from_discrete_gaussian_mechanism(
            sigma,
            1,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=1e-5,
        )
        .self_compose(2 * m)
        .get_delta_for_epsilon(1.0)
        for pessimistic in (False, True)
    ]
    assert bounds[0] <= certified <= 1.03 * bounds[1]


def test_gnmax_sigma_and_memoisation():
    sigma, name = gnmax_sigma(1.0, 1e-5, 1000)
    assert name == "gdp"
    rdp_sigma, _ = gnmax_sigma(1.0, 1e-5, 1000, calibration="rdp")
    assert rdp_epsilon([(rdp_sigma / SQRT2, 1000)], 1e-5) <= 1.0
    assert rdp_epsilon([(rdp_sigma * (1 - 1e-4) / SQRT2, 1000)], 1e-5) > 1.0
    # Exact Gaussian composition: sigma about 167 against RDP's 181, 7.8 %
    # less noise for the same (1, 1e-5) and 1,000 answers.
    assert sigma <= 0.93 * rdp_sigma
    assert round(sigma) == 167 and round(rdp_sigma) == 181
    assert discrete_gaussian_delta(1.0, [(sigma, 1, 2000)]) <= 1e-5
    before = calibrate_confident_gnmax.cache_info().hits
    calibrate_confident_gnmax(2.0, 1e-5, 2000, 500)
    calibrate_confident_gnmax(2.0, 1e-5, 2000, 500)
    assert calibrate_confident_gnmax.cache_info().hits >= before + 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_queries": None}, "max_queries"),
        ({"max_queries": 0}, "max_queries"),
        ({"max_answers": 0}, "max_answers"),
        ({"max_answers": 11}, "max_answers"),
        ({"delta": 0.0}, "delta"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"calibration": "paper"}, "calibration"),
        ({"threshold_share": 1.0}, "threshold_share"),
    ],
)
def test_calibration_bad_input(kwargs, match):
    args = {"epsilon": 1.0, "delta": 1e-5, "max_queries": 10, "max_answers": 5}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        calibrate_confident_gnmax(**args)


# --------------------------------------------------------------------------
# The mechanism functions
# --------------------------------------------------------------------------


def test_gnmax_consensus_and_ties():
    rng = np.random.default_rng(0)
    counts = np.array([[100, 0, 0], [0, 0, 100], [0, 100, 0]] * 100)
    assert (gnmax(counts, 3.0, rng=rng) == counts.argmax(axis=1)).all()
    # equal counts: roughly uniform (ties of the noisy integers go low)
    answers = gnmax(np.full((30_000, 2), 50), 5.0, rng=rng)
    assert 0.5 < np.mean(answers == 0) < 0.56


def test_confident_gnmax_consensus_answers_correctly():
    rng = np.random.default_rng(1)
    k = 200
    majority = rng.integers(0, 3, 5000)
    counts = np.zeros((5000, 3), dtype=np.int64)
    counts[np.arange(5000), majority] = k - 10
    counts[np.arange(5000), (majority + 1) % 3] = 10
    answers, answered, n = confident_gnmax(counts, 120, 10.0, 10.0, rng=rng)
    assert n == 5000 and answered.all()
    assert (answers == majority).all()
    # no agreement: threshold check fails, abstain (-1)
    split = np.tile([67, 67, 66], (2000, 1))
    answers, answered, n = confident_gnmax(split, 120, 10.0, 10.0, rng=rng)
    assert n == 2000 and not answered.any() and (answers == -1).all()


def test_confident_gnmax_halts_after_max_answers():
    counts = np.tile([[95, 5], [50, 50], [2, 98]], (50, 1))
    full_answers, full_answered, _ = confident_gnmax(
        counts, 80, 5.0, 5.0, rng=np.random.default_rng(3)
    )
    answers, answered, n = confident_gnmax(
        counts, 80, 5.0, 5.0, rng=np.random.default_rng(3), max_answers=40
    )
    # same threshold noise (drawn first): halts right after the 40th pass
    assert answered.sum() == 40 and answered[-1]
    assert n == np.flatnonzero(full_answered)[39] + 1
    np.testing.assert_array_equal(answered, full_answered[:n])
    assert (
        confident_gnmax(
            counts, 80, 5.0, 5.0, rng=np.random.default_rng(0), max_answers=0
        )[2]
        == 0
    )


def test_engine_state_persists_and_halts():
    noise = NoiseSource([np.random.default_rng(0)])
    engine = ConfidentGNMaxEngine(80, 5.0, 5.0, max_answers=25, noise=noise)
    counts = np.tile([[95, 5], [50, 50]], (10, 1))
    release = engine.answer("predict", counts)
    assert release.n_done == 20
    assert (engine.n_answers, engine.abstention_count) == (10, 10)
    assert engine.n_failed_tests == 10
    release = engine.answer("predict", np.tile([[95, 5]], (30, 1)))
    assert release.n_done == 15 and engine.n_answers == 25 and engine.halted
    assert engine.answer("predict", counts).n_done == 0
    assert engine.n_queries == 35
    twin = ConfidentGNMaxEngine(80, 5.0, 5.0, max_answers=25, noise=noise)
    twin.set_state(engine.get_state())
    assert twin.halted and twin.n_queries == 35


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda r: gnmax([1, 2], 1.0, rng=r), "2-D"),
        (lambda r: gnmax([[1.5, 2]], 1.0, rng=r), "integer"),
        (lambda r: gnmax([[1, 2]], 0.0, rng=r), "sigma"),
        (lambda r: confident_gnmax([[1, 2]], 1, -1.0, 1.0, rng=r), "sigma_threshold"),
        (lambda r: confident_gnmax([[1, 2]], 1, 1.0, math.inf, rng=r), "sigma_argmax"),
        (
            lambda r: confident_gnmax([[1, 2]], 1, 1.0, 1.0, rng=r, max_answers=-1),
            "max_answers",
        ),
        (lambda r: confident_gnmax([[1, 2]], math.nan, 1.0, 1.0, rng=r), "threshold"),
        (lambda r: confident_gnmax_threshold(10, 2, 1.0, error=0.0), "error"),
    ],
)
def test_mechanism_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.random.default_rng(0))


def test_threshold_rule():
    k, n_classes, sigma2, error = 500, 3, 40.0, 0.1
    v = confident_gnmax_threshold(k, n_classes, sigma2, error)
    gap = 2 * v - k  # worst case at the threshold
    bound = (n_classes - 1) * stats.norm.cdf(-gap / (SQRT2 * sigma2))
    assert math.isclose(bound, error, rel_tol=1e-9)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


def blobs(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 3.0 * y[:, None]
    return X, y


def gnmax_model(max_answers=500, **kwargs):
    params = dict(
        n_estimators=300,
        epsilon=8.0,
        delta=1e-5,
        # Abstentions asked for: these tests read the mechanism's answers.
        mechanism=ConfidentGNMax(max_answers=max_answers, unanswered="abstain"),
        max_queries=1000,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    params.update(kwargs)
    return SubsampleAggregateClassifier(LogisticRegression(), **params)


@pytest.fixture(scope="module")
def fitted():
    X, y = blobs()
    return gnmax_model().fit(X, y), X, y


def test_estimator_answers_consensus_queries(fitted):
    model, X, y = fitted
    labels, abstained = model.predict(X[:300], return_abstained=True)
    assert abstained.mean() < 0.1
    assert np.mean(labels[~abstained] == y[:300][~abstained]) > 0.97
    assert set(np.unique(labels[abstained])) <= {-1}


def test_estimator_fitted_calibration(fitted):
    model, _, _ = fitted
    cal = calibrate_confident_gnmax(8.0, 1e-5, 1000, 500)
    assert model.calibration_ == "gdp"
    assert model.sigma_threshold_ == cal.sigma_threshold
    assert model.sigma_argmax_ == cal.sigma_argmax
    assert model.max_answers_ == 500 and model.rho_ == cal.rho
    assert model.threshold_ == confident_gnmax_threshold(300, 2, cal.sigma_argmax)
    assert not hasattr(model, "noise_scale_")
    # Calibrated through Gaussian DP, the whole mechanism is one certified
    # (epsilon, delta): the model's own accountant records it as one event.
    (event,) = model.accountant_.events
    assert (event.kind, event.epsilon, event.delta) == ("approximate", 8.0, 1e-5)
    spent_epsilon, spent_delta = model.accountant_.spent
    assert spent_epsilon <= 8.0 and spent_delta <= 1e-5
    assert not model.accountant_.can_spend(0.01)
    # Calibrated in RDP, a mechanism's events are Gaussian events that an
    # RDP accountant composes.
    rdp = ConfidentGNMaxRelease.calibrate(
        8.0, 1e-5, 1000, 500, n_teachers=300, n_classes=2, calibration="rdp"
    )
    assert rdp.calibration.name == "rdp"
    (events,) = [e for e in rdp.event_options(None, "rdp")[:1]]
    assert {e.kind for e in events} == {"gaussian"}


def test_estimator_halts_after_max_answers():
    X, y = blobs(seed=1)
    model = gnmax_model(max_answers=50, max_queries=400).fit(X, y)
    labels, abstained = model.predict(X[:400], return_abstained=True)
    answered = np.flatnonzero(~abstained)
    assert answered.size == 50
    np.testing.assert_array_equal(labels[abstained], -1)
    assert np.all(labels[answered] != -1)
    # The model halted at its 50th answer: no threshold check after it.
    status = model.budget_status()
    assert status.halted and status.n_served == answered[-1] + 1 < 400
    assert model._serving_state_.engine.n_answers == 50
    labels, abstained = model.predict(X[:1], return_abstained=True)
    assert labels.tolist() == [-1] and abstained.all()
    assert model.budget_status().n_served == answered[-1] + 1


def test_estimator_max_queries_cap_and_state_across_calls():
    X, y = blobs(seed=2)
    model = gnmax_model(max_queries=100, max_answers=100).fit(X, y)
    model.predict(X[:60])
    status = model.budget_status()
    assert status.n_served == 60 and not status.halted
    # A row asked again is a new query; 40 are left, the last 20 abstained on.
    labels, abstained = model.predict(X[:60], return_abstained=True)
    assert abstained[40:].all()
    np.testing.assert_array_equal(labels[40:], -1)
    status = model.budget_status()
    assert status.n_served == 100 and status.halted


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_answers": 2000}, "max_answers"),
        ({"max_answers": 0}, "max_answers"),
        ({"max_answers": 20, "max_queries": 10}, "max_answers"),
    ],
)
def test_estimator_bad_input(kwargs, match):
    X, y = blobs(n=600)
    model = gnmax_model(n_estimators=5, **kwargs)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)


def test_sparse_vector_refuses_a_gaussian_composition_as_its_noise():
    X, y = blobs(n=600)
    model = SubsampleAggregateClassifier(
        n_estimators=5, mechanism=SparseVector(noise="rdp"), classes=[0, 1]
    )
    with pytest.raises(ValueError, match="noise"):
        model.fit(X, y)


@pytest.mark.filterwarnings("ignore:.*exceeds k:UserWarning")
def test_shared_accountants():
    X, y = blobs(n=1500)
    # A shared accountant that composes Gaussian events in zCDP records them.
    zcdp = PrivacyAccountant(epsilon=20.0, delta=1e-5, composition="zcdp")
    gnmax_model(n_estimators=20, accountant=zcdp).fit(X, y)
    assert {e.kind for e in zcdp.events} == {"gaussian"}
    basic = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    model = gnmax_model(n_estimators=20, accountant=basic).fit(X, y)
    assert [e.kind for e in basic.events] == ["approximate"]
    assert basic.spent == (8.0, 1e-5)
    with pytest.raises(BudgetExhaustedError):
        model.fit(X, y)  # 8 more do not fit in the 2 left
    assert basic.spent == (8.0, 1e-5)


def test_copies_reseed_and_keep_counters(fitted):
    model, X, _ = fitted
    clone = pickle.loads(pickle.dumps(model))
    other = copy.deepcopy(model)
    for copied in (clone, other):
        assert copied.budget_status() == model.budget_status()
        assert copied._serving_state_.engine.n_answers == (
            model._serving_state_.engine.n_answers
        )


def test_not_enough_teachers_warns():
    X, y = blobs(n=600)
    with pytest.warns(UserWarning, match="more than the number of teachers"):
        gnmax_model(n_estimators=10, epsilon=1.0).fit(X, y)


# --------------------------------------------------------------------------
# Audits on worst-case neighbouring vote histograms
# --------------------------------------------------------------------------


def difference_pmf(sigma):
    """Exact pmf of Z1 - Z0 for independent discrete Gaussians (truncated)."""
    half = int(40 * sigma) + 40
    support = np.arange(-half, half + 1)
    pmf = discrete_gaussian_pmf(sigma, support)
    pmf /= pmf.sum()
    return np.arange(-2 * half, 2 * half + 1), np.convolve(pmf, pmf)


def claimed_step_epsilon(events, delta):
    return rdp_epsilon(events, delta)


@pytest.mark.parametrize("sigma", [1.0, 2.0, 4.0])
def test_audit_noisy_argmax_step(sigma):
    # One vote moves between the two classes: [n, n] vs [n + 1, n - 1].
    delta = 1e-5
    claimed = claimed_step_epsilon([(sigma / SQRT2, 1)], delta)
    votes = np.array([[20, 20], [21, 19]])
    # exact: argmax = 0 iff Z1 - Z0 <= c0 - c1 (ties to the lower index)
    values, pmf = difference_pmf(sigma)
    p0 = pmf[values <= 0].sum()
    p1 = pmf[values <= 2].sum()
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1], delta)
    assert exact <= claimed

    def mechanism(neighbour, n_runs, rng):
        return gnmax(np.broadcast_to(votes[neighbour], (n_runs, 2)), sigma, rng=rng)

    result = audit(
        mechanism,
        lambda out: out == 1,
        n_runs=200_000,
        delta=delta,
        confidence=CONFIDENCE,
        rng=np.random.default_rng(int(sigma)),
    )
    assert result.epsilon_lower <= claimed
    assert result.epsilon_lower <= exact * 1.001 + 1e-9
    # the audit has power: it sees most of the exact loss of this output
    assert result.epsilon_lower >= 0.8 * exact_epsilon([p0, 1 - p0], [p1, 1 - p1])


def test_audit_noisy_argmax_three_classes():
    sigma, delta = 1.5, 1e-5
    claimed = claimed_step_epsilon([(sigma / SQRT2, 1)], delta)
    votes = np.array([[10, 10, 10], [11, 9, 10]])

    def mechanism(neighbour, n_runs, rng):
        return gnmax(np.broadcast_to(votes[neighbour], (n_runs, 3)), sigma, rng=rng)

    result = audit(
        mechanism,
        n_runs=200_000,
        delta=delta,
        confidence=CONFIDENCE,
        rng=np.random.default_rng(5),
    )
    assert 0.3 < result.epsilon_lower <= claimed


def test_audit_threshold_check_step():
    # The largest count moves by one: t vs t + 1, threshold between them.
    sigma, delta, threshold = 1.0, 1e-5, 20.5
    claimed = claimed_step_epsilon([(sigma, 1)], delta)
    support = np.arange(-100, 101)
    pmf = discrete_gaussian_pmf(sigma, support)
    pmf /= pmf.sum()
    p0 = pmf[20 + support >= threshold].sum()
    p1 = pmf[21 + support >= threshold].sum()
    assert exact_epsilon([p0, 1 - p0], [p1, 1 - p1], delta) <= claimed

    def mechanism(neighbour, n_runs, rng):
        top = 20 + neighbour
        return top + discrete_gaussian(sigma, size=n_runs, rng=rng) >= threshold

    result = audit(
        mechanism,
        lambda out: out,
        n_runs=200_000,
        delta=delta,
        confidence=CONFIDENCE,
        rng=np.random.default_rng(11),
    )
    assert result.epsilon_lower <= claimed


def test_audit_one_confident_gnmax_query():
    # Output in {abstain, 0, 1}; [t, t] vs [t + 1, t - 1] moves the top count
    # and the count vector at once. Claim: both steps composed in RDP.
    sigma1, sigma2, delta, threshold = 1.0, 1.5, 1e-5, 20.5
    claimed = claimed_step_epsilon([(sigma1, 1), (sigma2 / SQRT2, 1)], delta)
    votes = np.array([[20, 20], [21, 19]])

    def mechanism(neighbour, n_runs, rng):
        counts = np.broadcast_to(votes[neighbour], (n_runs, 2))
        answers, _, _ = confident_gnmax(counts, threshold, sigma1, sigma2, rng=rng)
        return answers

    result = audit(
        mechanism,
        n_runs=200_000,
        delta=delta,
        confidence=CONFIDENCE,
        rng=np.random.default_rng(13),
    )
    assert 0.5 < result.epsilon_lower <= claimed


def test_audit_catches_a_noiseless_variant():
    # A broken GNMax that forgets the noise but claims sigma = 2.
    delta = 1e-5
    claimed = claimed_step_epsilon([(2.0 / SQRT2, 1)], delta)
    votes = np.array([[20, 19], [19, 20]])

    def broken(neighbour, n_runs, rng):
        return np.argmax(np.broadcast_to(votes[neighbour], (n_runs, 2)), axis=1)

    result = audit(
        broken,
        lambda out: out == 0,
        n_runs=50_000,
        delta=delta,
        confidence=CONFIDENCE,
        rng=np.random.default_rng(0),
    )
    assert result.epsilon_lower > claimed


@pytest.mark.filterwarnings("ignore:.*exceeds k:UserWarning")
def test_estimator_tightest_calibration_and_own_accountant():
    X, y = blobs(n=1500)
    model = gnmax_model(n_estimators=20).fit(X, y)
    # The estimator certifies with whichever route gives the least noise
    # (exact Gaussian-DP composition, RDP or zCDP), and its own accountant
    # composes in that calibration.
    routes = [
        calibrate_confident_gnmax(8.0, 1e-5, 1000, 500, calibration=name)
        for name in ("gdp", "rdp", "zcdp")
    ]
    best = min(routes, key=lambda cal: cal.sigma_argmax)
    assert model.calibration_ == best.name == "gdp"
    assert model.sigma_argmax_ == best.sigma_argmax
    assert model.accountant_.spent[0] <= 8.0
    zcdp = routes[2]
    # zCDP's certificate (CKS 2020, Prop. 12) at its best order fits 8.
    assert zcdp.rho > 0 and zcdp.sigma_argmax > best.sigma_argmax


# --------------------------------------------------------------------------
# Expected outcome (the regime guide's Confident-GNMax piece)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes, max_answers", [(2, None), (2, 300), (3, 250)])
def test_expected_outcome_matches_simulation(n_classes, max_answers):
    rng = np.random.default_rng(n_classes)
    k, m = 200, 600
    shares = rng.dirichlet(np.full(n_classes, 0.7), size=m)
    counts = np.array([rng.multinomial(k, s) for s in shares])
    labels = np.where(
        rng.random(m) < 0.8, counts.argmax(axis=1), rng.integers(0, n_classes, m)
    )
    threshold, s1, s2 = 130.0, 20.0, 25.0
    predicted = confident_gnmax_outcome(
        counts, threshold, s1, s2, max_answers=max_answers, labels=labels
    )
    runs = []
    for seed in range(300):
        answers, answered, _ = confident_gnmax(
            counts,
            threshold,
            s1,
            s2,
            rng=np.random.default_rng(seed),
            max_answers=max_answers,
        )
        correct = np.sum(answers[answered] == labels[: answers.size][answered])
        runs.append((answered.sum() / m, correct / m))
    simulated = np.mean(runs, axis=0)
    assert abs(predicted["answered_fraction"] - simulated[0]) < 0.01
    assert abs(predicted["accuracy_all"] - simulated[1]) < 0.01


def test_expected_outcome_bad_input():
    with pytest.raises(ValueError, match="labels"):
        confident_gnmax_outcome([[3, 1]], 2, 1.0, 1.0, labels=[2])
    with pytest.raises(ValueError, match="at least one"):
        confident_gnmax_outcome(np.zeros((0, 2), int), 2, 1.0, 1.0)
