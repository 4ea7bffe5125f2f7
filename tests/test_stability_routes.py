"""The full-strength sparse vector calibrations, their parts and their planner.

docs/design.rst, "The sparse vector test at full strength" and "The
stability planner". Every privacy-relevant number is checked against an
independent computation: brute-force sums for the optimal composition of two
kinds and for the discrete Gaussian tail, dp_accounting's PLD and RDP
conversion, and a Monte-Carlo run of the planner's model.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from _reference import soft_label_reference, stability_reference
from scipy.stats import binom
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier

from dpsklearn import (
    PrivacyAccountant,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import dp_accounting, kov_delta
from dpsklearn.accounting._optimal_composition import (
    largest_two_kind_scale,
    two_kind_epsilon,
    two_kind_log_delta,
)
from dpsklearn.mechanisms import calibrate_sparse_vector, sparse_vector_candidates
from dpsklearn.mechanisms._sparse_vector_routes import _ORDERS, rdp_route_epsilon
from dpsklearn.mechanisms._sparse_vector_tails import (
    difference_log_tail,
    difference_tail,
    smallest_tail_index,
)
from dpsklearn.planning import plan_stability_test
from dpsklearn.planning._stability_plan import _expected_answered


# -- the optimal composition of two kinds ------------------------------------------
def _brute_two_kind_delta(eps_a, k_a, eps_b, k_b, epsilon):
    q_a, q_b = 1 / (1 + math.exp(eps_a)), 1 / (1 + math.exp(eps_b))
    total = 0.0
    for i, j in itertools.product(range(k_a + 1), range(k_b + 1)):
        loss = eps_a * (k_a - 2 * i) + eps_b * (k_b - 2 * j)
        if loss > epsilon:
            weight = binom.pmf(i, k_a, q_a) * binom.pmf(j, k_b, q_b)
            total += weight * (1 - math.exp(epsilon - loss))
    return total


@pytest.mark.parametrize(
    "eps_a, k_a, eps_b, k_b, epsilon",
    [
        (0.1, 20, 0.3, 10, 0.5),
        (0.05, 40, 0.02, 30, 0.3),
        (0.5, 5, 0.5, 7, 1.0),
        (0.2, 30, 0.01, 50, 0.8),
        (1.0, 3, 2.0, 2, 0.0),
    ],
)
def test_two_kind_delta_matches_brute_force(eps_a, k_a, eps_b, k_b, epsilon):
    got = math.exp(two_kind_log_delta(eps_a, k_a, eps_b, k_b, epsilon))
    expected = _brute_two_kind_delta(eps_a, k_a, eps_b, k_b, epsilon)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got >= expected  # rounded towards more privacy loss


def test_two_kind_delta_reduces_to_kov_and_sits_inside_the_pld_bounds():
    # One kind: Kairouz-Oh-Viswanath. Two kinds: below dp_accounting's
    # pessimistic PLD of the same randomized responses, and close to it.
    assert math.exp(two_kind_log_delta(0.03, 100, 0.0, 0, 1.0)) == pytest.approx(
        kov_delta(0.03, 100, 1.0), rel=1e-9
    )
    pld = dp_accounting().pld.privacy_loss_distribution
    common = dp_accounting().pld.common

    def one(eps, k):
        return pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(eps, 0),
            value_discretization_interval=1e-5,
        ).self_compose(k)

    exact = math.exp(two_kind_log_delta(0.02, 100, 0.05, 100, 1.0))
    upper = one(0.02, 100).compose(one(0.05, 100)).get_delta_for_epsilon(1.0)
    assert exact <= upper <= 1.01 * exact


def test_two_kind_inverses_are_conservative():
    eps0 = largest_two_kind_scale(1.0, 5e-6, 100, 100, 0.5)
    assert two_kind_log_delta(eps0, 100, 0.5 * eps0, 100, 1.0) <= math.log(5e-6)
    assert two_kind_log_delta(
        eps0 * 1.001, 100, 0.5 * eps0 * 1.001, 100, 1.0
    ) > math.log(5e-6)
    epsilon = two_kind_epsilon(0.01, 100, 0.02, 50, 1e-5)
    assert two_kind_log_delta(0.01, 100, 0.02, 50, epsilon) <= math.log(1e-5)
    assert epsilon < 100 * 0.01 + 50 * 0.02


# -- the discrete Gaussian tail and the RDP conversion ----------------------------
@pytest.mark.parametrize(
    "n, s_q, s_t",
    [
        (1, 2.0, 1.0),
        (12, 3.0, 4.0),
        (40, 7.0, 9.0),
        (-5, 3.0, 4.0),  # below zero: the symmetric side
        (60, 0.6, 9.0),  # a narrow query noise: every slice of the sum is used
        (60, 9.0, 0.6),
        (250, 12.0, 15.0),  # far tail, near 1e-30
    ],
)
def test_gaussian_difference_tail_matches_convolution(n, s_q, s_t):
    z = np.arange(-400, 401)
    p_q = np.exp(-(z**2) / (2 * s_q**2))
    p_t = np.exp(-(z**2) / (2 * s_t**2))
    pmf = np.convolve(p_q / p_q.sum(), p_t / p_t.sum())
    d = np.arange(-800, 801)
    expected = float(pmf[d >= n][::-1].sum())
    got = difference_tail(n, s_q, s_t, "gaussian")
    assert got == pytest.approx(expected, rel=1e-8)
    assert got >= expected


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("guess", [None, 2, 40, 300, 311, 5000])
def test_smallest_tail_index_does_not_depend_on_the_guess(noise, guess):
    log_target = math.log(1e-9)
    n = smallest_tail_index(log_target, 30.0, 25.0, noise, guess=guess)
    assert n == smallest_tail_index(log_target, 30.0, 25.0, noise)
    assert difference_log_tail(n, 30.0, 25.0, noise) <= log_target
    assert difference_log_tail(n - 1, 30.0, 25.0, noise) > log_target


def test_rdp_conversion_matches_dp_accounting():
    compute = dp_accounting().rdp.rdp_privacy_accountant.compute_epsilon
    orders = np.asarray(_ORDERS)
    for n, c, k, f, c_f, delta in [
        (100, 3e-6, 2000, 100, 1e-6, 1e-5),
        (10, 1e-3, 50, 0, 0.0, 1e-6),
    ]:
        # log(K + 1): an instance that sees K queries has K + 1 outcomes.
        curve = n * (math.log(k + 1) / (orders - 1) + orders * c) + f * orders * c_f
        expected, _ = compute(list(orders), list(curve), delta)
        got = rdp_route_epsilon(n, c, k, f, c_f, delta)
        assert got == pytest.approx(expected, rel=1e-12)


# -- the calibrations' guarantees, recomputed --------------------------------------
@pytest.mark.parametrize("epsilon, T", [(1.0, 100), (2.0, 200), (8.0, 30)])
def test_laplace_with_fallback_composes_jointly(epsilon, T):
    from dpsklearn.accounting import alternating_delta

    # A pure fallback: both kinds composed as pure releases (two kinds).
    pure = calibrate_sparse_vector(
        epsilon,
        1e-5,
        T,
        "laplace",
        n_fallbacks=T,
        fallback_share=0.5,
        fallback_kind="pure",
    )
    eps0 = 1 / pure.threshold_scale + 2 / pure.query_scale
    assert pure.composition == "joint"
    log_delta = two_kind_log_delta(eps0, T, pure.fallback_epsilon, T, epsilon)
    assert log_delta <= math.log(pure.sparse_vector_delta) + 1e-9
    # The exponential mechanism's fallback (bounded range) follows the
    # instance it ends: the exact alternating game certifies the pairs.
    cal = calibrate_sparse_vector(
        epsilon, 1e-5, T, "laplace", n_fallbacks=T, fallback_share=0.5
    )
    eps0 = 1 / cal.threshold_scale + 2 / cal.query_scale
    assert cal.composition == "alternating"
    assert cal.fallback_epsilon == pytest.approx(eps0)  # share 1/2: one to one
    assert cal.n_fallbacks == T
    game = alternating_delta(eps0, cal.fallback_epsilon, T, epsilon)
    assert game <= cal.sparse_vector_delta
    assert cal.threshold < pure.threshold
    assert cal.fallback_epsilon > pure.fallback_epsilon
    assert T * difference_tail(
        int(cal.threshold) + 1, cal.query_scale, cal.threshold_scale
    ) <= cal.stability_delta * (1 + 1e-12)
    # Jointly composed, both parts get more than the paper's structure gives
    # (its exact calibration, the reference in tests/_reference.py).
    exact = stability_reference("exact", epsilon, 1e-5, T)
    assert cal.threshold < exact.threshold
    assert cal.fallback_epsilon > exact.fallback_epsilon


def test_reference_figures_of_the_issue_at_share_one_half():
    # (1, 1e-5, T = 100), noisy-max share 0.5: w 4,886 -> 3,000 with the two
    # parts composed as pure releases, 2,375 by the alternating game (the
    # fallback is bounded range); each fallback's epsilon 0.005 -> 0.018 ->
    # 0.023. (The paper's structure, exact: the reference.)
    exact = stability_reference("exact", 1.0, 1e-5, 100)
    pure = calibrate_sparse_vector(
        1.0, 1e-5, 100, n_fallbacks=100, fallback_share=0.5, fallback_kind="pure"
    )
    joint = calibrate_sparse_vector(1.0, 1e-5, 100, n_fallbacks=100, fallback_share=0.5)
    assert round(exact.threshold) == 4886 and exact.fallback_epsilon == 0.005
    assert pure.name == "laplace" and pure.threshold == 3000
    assert pure.fallback_epsilon == pytest.approx(0.0184, abs=1e-4)
    assert joint.name == "laplace" and joint.threshold == 2375
    assert joint.fallback_epsilon == pytest.approx(0.0233, abs=1e-4)


@pytest.mark.parametrize("max_queries", [100, 2000, 200_000])
def test_gaussian_guarantee_recomputed(max_queries):
    cal = calibrate_sparse_vector(1.0, 1e-5, 100, "gaussian", max_queries=max_queries)
    compute = dp_accounting().rdp.rdp_privacy_accountant.compute_epsilon
    orders = np.geomspace(1.01, 1e6, 20_000)
    # Zhu and Wang (2020), Theorem 8 at sensitivity 1, T instances.
    per_instance = (
        math.log(max_queries + 1) / (orders - 1)
        + orders / cal.threshold_scale**2
        + 2 * orders / cal.query_scale**2
    )
    epsilon, _ = compute(
        list(orders), list(100 * per_instance), cal.sparse_vector_delta
    )
    assert epsilon <= 1.0 + 1e-6
    assert 100 * cal.tail_probability <= cal.stability_delta * (1 + 1e-12)
    # It loses to laplace, and more as max_queries grows (the log K term).
    assert cal.threshold > 2.5 * calibrate_sparse_vector(1.0, 1e-5, 100).threshold


def test_epsilon_after_is_monotone_and_within_budget():
    for cal in (
        calibrate_sparse_vector(
            1.0, 1e-5, 50, "laplace", n_fallbacks=50, fallback_share=0.3
        ),
        calibrate_sparse_vector(
            1.0,
            1e-5,
            50,
            "laplace",
            n_fallbacks=50,
            fallback_share=0.3,
            fallback_kind="pure",
        ),
        calibrate_sparse_vector(
            1.0,
            1e-5,
            50,
            "gaussian",
            max_queries=500,
            n_fallbacks=50,
            fallback_share=0.3,
        ),
    ):
        values = [cal.epsilon_after(n, n) for n in range(0, 51, 5)]
        assert values[0] == 0.0
        assert all(a <= b + 1e-12 for a, b in itertools.pairwise(values))
        assert values[-1] <= cal.epsilon * (1 + 1e-9)
        assert cal.epsilon_after(50, 0) <= values[-1]


def test_gaussian_is_inadmissible_without_max_queries():
    assert sparse_vector_candidates(1.0, 1e-5, 10)["gaussian"] is None
    with pytest.raises(ValueError, match="max_queries"):
        calibrate_sparse_vector(1.0, 1e-5, 10, "gaussian")


def test_gaussian_without_a_fitting_coefficient_says_why():
    # log K / (alpha - 1) alone exceeds a tiny budget: no coefficient fits.
    assert (
        sparse_vector_candidates(0.05, 1e-5, 1000, max_queries=10**6)["gaussian"]
        is None
    )
    with pytest.raises(ValueError, match="no noise scale"):
        calibrate_sparse_vector(0.05, 1e-5, 1000, "gaussian", max_queries=10**6)


# -- the estimators ------------------------------------------------------------------
X, Y = make_classification(n_samples=3000, n_features=5, random_state=0)


def test_gaussian_calibration_needs_max_queries_before_anything_is_spent():
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = SubsampleAggregateClassifier(
        n_estimators=10,
        mechanism=SparseVector(noise="gaussian"),
        classes=[0, 1],
        accountant=accountant,
        random_state=0,
    )
    with pytest.raises(ValueError, match="max_queries"):
        model.fit(X, Y)
    assert accountant.spent == (0.0, 0.0)


def test_gaussian_calibration_serves_with_gaussian_noise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubsampleAggregateClassifier(
            n_estimators=30,
            epsilon=1e4,
            mechanism=SparseVector(noise="gaussian"),
            max_queries=100,
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
        ).fit(X, Y)
    assert model.calibration_ == "gaussian"
    engine = model._serving_state_.engine.test
    assert engine.query_noise.distribution == "gaussian"
    assert engine.threshold_noise.distribution == "gaussian"
    model.predict(X[:50])
    spent, _ = model.budget_status().spent
    assert 0 < spent <= 1e4


def test_joint_spending_follows_the_calibration():
    # After n failed tests with the noisy-max fallback, the model reports the
    # joint composition of the n started instances with their n slots.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubsampleAggregateClassifier(
            DummyClassifier(strategy="stratified"),
            n_estimators=5,
            epsilon=1.0,
            mechanism=SparseVector(max_unstable=20),
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
        ).fit(X, Y)
    model.predict(X[:10])
    status = model.budget_status()
    cal = model.privacy_mechanism_.calibration
    started = model._serving_state_.engine.test.n_threshold_draws
    assert status.spent[0] == pytest.approx(cal.epsilon_after(started, started))
    assert status.spent[0] <= 1.0


def test_max_unstable_auto_takes_the_planners_choice():
    X_big, y_big = make_classification(
        n_samples=20_000, n_features=5, class_sep=3.0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubsampleAggregateClassifier(
            n_estimators=1000,
            epsilon=8.0,
            mechanism=SparseVector(
                max_unstable="auto", fallback="abstain", unstable_fraction=0.02
            ),
            classes=[0, 1],
            max_queries=500,
            random_state=0,
        ).fit(X_big, y_big)
    best = plan_stability_test(
        20_000,
        500,
        8.0,
        1e-5,
        unstable_fraction=0.02,
        n_estimators=1000,
    )[0]
    assert model.max_unstable_ == best.max_unstable
    assert model.n_estimators_ == 1000


def test_fit_warns_when_nothing_can_pass():
    with pytest.warns(UserWarning, match="even unanimous votes"):
        SubsampleAggregateClassifier(
            n_estimators=40,
            epsilon=1.0,
            mechanism="sparse_vector",
            classes=[0, 1],
            random_state=0,
        ).fit(X, Y)


def test_soft_labels_take_every_route():
    from sklearn.datasets import make_regression

    Xr, yr = make_regression(n_samples=400, n_features=3, random_state=0)
    # The paper's calibrations ("exact", ...) are reference implementations
    # in the tests (tests/_reference.py); the estimator offers the noise.
    for name in ("laplace", "gaussian"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg = SoftLabelPrivateRegressor(
                n_estimators=10,
                epsilon=2.0,
                mechanism=SoftLabelHistogram(max_unstable=10, noise=name),
                max_queries=50,
                target_range=(-300, 300),
                noise_random_state=0,
            ).fit(Xr, yr)
        assert reg.calibration_ == name
        assert reg.privacy_mechanism_.calibration.cutoff == 11  # T + 1 draws
        reg.predict(Xr[:5])


# -- the planner ----------------------------------------------------------------------
def test_expected_answered_matches_a_simulation():
    # The planner's model: each query passes independently with probability
    # pi until the T-th failure. 20,000 simulated streams: the mean of
    # answered queries is within 4 standard errors (failure probability
    # about 6e-5) of the formula.
    pi, m, T = 0.93, 2000, 100
    expected, _ = _expected_answered(pi, m, T)
    rng = np.random.default_rng(0)
    passes = rng.random((20_000, m)) < pi
    failures = np.cumsum(~passes, axis=1)
    alive = np.concatenate([np.ones((20_000, 1), bool), failures[:, :-1] < T], axis=1)
    answered = (passes & alive).sum(axis=1)
    se = answered.std() / math.sqrt(answered.size)
    assert abs(answered.mean() - expected) < 4 * se


def test_plan_rows_are_public_figures_in_order():
    plan = plan_stability_test(
        300_000, 2000, 2.0, 1e-5, unstable_fraction=0.08, agreement=0.8
    )
    best = plan[0]
    assert best.can_pass and best.expected_answered > 0.9
    assert all(best.expected_answered >= r.expected_answered - 0.01 for r in plan)
    cannot = [r for r in plan if not r.can_pass]
    assert cannot and all(r.expected_answered < 1e-3 for r in cannot)
    # w does not depend on k, and a calibration's w grows with T.
    by_t = {}
    for r in plan:
        by_t.setdefault(r.max_unstable, set()).add(r.threshold)
    assert all(len(ws) == 1 for ws in by_t.values())
    w = [by_t[t].pop() for t in sorted(by_t)]
    assert all(a < b for a, b in itertools.pairwise(w))
    assert set(best.as_dict()) >= {"n_estimators", "threshold", "expected_answered"}


def test_planner_takes_the_most_teachers_when_nothing_can_pass():
    # Adult-sized data at epsilon 1: no k the data supports lets unanimous
    # teachers clear w, so every row expects (almost) nothing to pass. The
    # planner must not break that tie towards one teacher (whose noisy-max
    # fallback answers at chance) but take the most teachers the data supports.
    plan = plan_stability_test(
        32_561, 1000, 1.0, 1e-5, unstable_fraction=0.05, max_unstable=100
    )
    assert max(r.expected_answered for r in plan) < 0.01
    assert plan[0].n_estimators == max(r.n_estimators for r in plan) == 32_561 // 20
    # The estimator follows its planner.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubsampleAggregateClassifier(
            epsilon=1.0,
            mechanism=SparseVector(max_unstable=100, fallback="noisy_max"),
            classes=[0, 1],
            random_state=0,
        ).fit(X, Y)
    assert model.n_estimators_ == X.shape[0] // 20  # 20 rows per shard


# -- soft labels: ceil(T/2) fallback slots --------------------------------------------
@pytest.mark.parametrize("T", range(1, 13))
def test_at_most_ceil_half_T_double_failures(T):
    # A failing query adds 1 (shifted pass) or 2 (both fail: a fallback
    # answer) to c, and the engine halts once c >= T. Over every sequence,
    # the fallbacks number at most ceil(T/2), and that many can occur.
    most = 0
    for steps in itertools.product((1, 2), repeat=T):
        c = fallbacks = 0
        for step in steps:
            if c >= T:
                break
            c += step
            fallbacks += step == 2
        most = max(most, fallbacks)
    assert most == math.ceil(T / 2)


def test_soft_label_engine_gives_at_most_ceil_half_T_fallbacks():
    from sklearn.datasets import make_regression

    from dpsklearn import SoftLabelHistogram

    Xr, yr = make_regression(n_samples=400, n_features=3, random_state=0)
    for T in (5, 6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg = SoftLabelPrivateRegressor(
                n_estimators=10,
                epsilon=0.5,
                mechanism=SoftLabelHistogram(max_unstable=T, fallback="noisy_mean"),
                target_range=(-300, 300),
                noise_random_state=0,
            ).fit(Xr, yr)
            reg.predict(Xr)
        assert reg.budget_status().halted
        engine = reg._serving_state_.engine
        # Ten teachers' distances are far below w: every query fails both
        # tests, so the bound is reached, and never passed.
        assert engine.n_fallback == math.ceil(T / 2)
        assert reg.privacy_mechanism_.calibration.n_fallbacks == math.ceil(T / 2)


@pytest.mark.parametrize("epsilon, T", [(1.0, 100), (2.0, 100), (1.0, 7)])
def test_soft_label_laplace_pays_ceil_half_T_slots(epsilon, T):
    # T + 1 instances and ceil(T/2) noisy means composed optimally: the
    # certificate holds exactly (two kinds of pure releases), and w is lower
    # than with one slot per instance at the same noisy-mean epsilon ratio.
    slots = math.ceil(T / 2)
    common = dict(fallback_share=0.5, fallback_kind="pure")
    cal = calibrate_sparse_vector(
        epsilon, 1e-5, T + 1, "laplace", n_fallbacks=slots, **common
    )
    loose = calibrate_sparse_vector(
        epsilon, 1e-5, T + 1, "laplace", n_fallbacks=T + 1, **common
    )
    assert cal.n_fallbacks == slots and loose.n_fallbacks == T + 1
    eps0 = cal.per_instance_epsilon
    log_delta = two_kind_log_delta(eps0, T + 1, cal.fallback_epsilon, slots, epsilon)
    assert log_delta <= math.log(cal.sparse_vector_delta)
    assert cal.fallback_epsilon == pytest.approx(eps0)  # share 1/2: one to one
    assert cal.threshold < loose.threshold
    # The paper's structure (its exact calibration, the reference): T + 1
    # draws and the same ceil(T/2) noisy means paid apart.
    exact = soft_label_reference("exact", epsilon, 1e-5, T, fallback="noisy_mean")
    assert exact.cutoff == T + 1 and exact.n_fallbacks == slots
    assert cal.threshold < exact.threshold


# -- rounding: every optimal-composition delta is rounded up --------------------------
def _exact_two_kind_delta(eps_a, k_a, eps_b, k_b, epsilon):
    """The hockey-stick divergence of the randomized responses, at 60 digits."""
    import mpmath as mp

    with mp.workdps(60):
        ea, eb, eps = mp.mpf(eps_a), mp.mpf(eps_b), mp.mpf(epsilon)
        qa, qb = 1 / (1 + mp.e**ea), 1 / (1 + mp.e**eb)
        total = mp.mpf(0)
        for i in range(k_a + 1):
            pi = mp.binomial(k_a, i) * qa**i * (1 - qa) ** (k_a - i)
            for j in range(k_b + 1):
                loss = ea * (k_a - 2 * i) + eb * (k_b - 2 * j)
                if loss > eps:
                    pj = mp.binomial(k_b, j) * qb**j * (1 - qb) ** (k_b - j)
                    total += pi * pj * (1 - mp.e ** (eps - loss))
        return total


@pytest.mark.parametrize(
    "eps_a, k_a, eps_b, k_b, epsilon",
    [
        (0.1, 50, 0.1, 50, 1.0),
        (0.03, 101, 0.05, 51, 1.0),
        (0.2, 30, 0.07, 60, 0.5),
        (0.01, 300, 0.02, 150, 1.0),
        (0.03, 100, 0.0, 0, 1.0),
    ],
)
def test_optimal_composition_deltas_are_rounded_up(eps_a, k_a, eps_b, k_b, epsilon):
    # Against exact arithmetic at 60 digits: never below, and the stated
    # margin (about 1e-12 relative at these sizes) is all that is added.
    import mpmath as mp

    from dpsklearn.accounting import kov_log_delta

    exact = _exact_two_kind_delta(eps_a, k_a, eps_b, k_b, epsilon)
    ours = mp.e ** mp.mpf(two_kind_log_delta(eps_a, k_a, eps_b, k_b, epsilon))
    assert exact <= ours <= exact * (1 + 1e-10)
    if k_b == 0:
        kov = mp.e ** mp.mpf(kov_log_delta(eps_a, k_a, epsilon))
        assert exact <= kov <= exact * (1 + 1e-10)


@pytest.mark.parametrize("epsilon", [1000.0, 5000.0])
def test_alternating_route_at_very_large_epsilon(epsilon):
    # Per-release epsilons beyond the game's floating point keep the
    # two-pure-kinds figure and its certificate instead of overflowing. (The
    # route used to label that figure "alternating", whose certificate the
    # game cannot give there: laplace was inadmissible and "auto" fell back
    # to the paper's pure calibration.)
    cal = calibrate_sparse_vector(epsilon, 1e-5, 10, n_fallbacks=10, fallback_share=0.5)
    assert cal.name == "laplace" and cal.composition == "joint" and cal.admissible
    eps0 = cal.per_instance_epsilon
    log_delta = two_kind_log_delta(eps0, 10, cal.fallback_epsilon, 10, epsilon)
    assert log_delta <= math.log(cal.sparse_vector_delta)
    assert 10 * cal.tail_probability <= cal.stability_delta * (1 + 1e-12)
    assert cal.threshold < stability_reference("pure", epsilon, 1e-5, 10).threshold


def test_laplace_route_when_the_game_search_fails():
    # At 300 pairs the game runs in blocks; near epsilon 700 its search for a
    # larger eps0 meets a NaN delta (a ValueError in the accounting). The
    # route keeps the two kinds' eps0 and asks the game to certify that.
    cal = calibrate_sparse_vector(700.0, 1e-3, 300, n_fallbacks=300, fallback_share=0.2)
    assert cal.name == "laplace" and cal.admissible
    assert 300 * cal.tail_probability <= cal.stability_delta * (1 + 1e-12)
    paper = stability_reference("pure", 700.0, 1e-3, 300, noisy_max_share=0.2)
    assert cal.threshold < paper.threshold
