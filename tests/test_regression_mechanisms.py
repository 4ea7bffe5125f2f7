"""The regression mechanisms: adaptive range, the median, AdaSSP, the planner.

Properties each proof relies on are checked against an independent
computation (an enumeration, a direct loop, a closed form or
``dp_accounting``), never against pinned outputs. Randomised checks use
fixed seeds.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import linalg

from dpsklearn import PrivacyAccountant
from dpsklearn.accounting import gdp_delta
from dpsklearn.kernel_ridge import (
    auto_n_components,
    fit_random_feature_ssp,
    random_feature_map,
    random_feature_statistics,
)
from dpsklearn.mechanisms import (
    AdaptiveRangeRelease,
    SufficientStatisticsRelease,
    choose_aggregate,
    clipped_mean_release,
    gram_sensitivity,
    moment_sensitivity,
    private_range,
    range_grid,
    rank_error,
)
from dpsklearn.mechanisms._adaptive_range import _median_counts, _pooled_below
from dpsklearn.mechanisms._gaussian_calibration import largest_gaussian_rho
from dpsklearn.noise import make_noise_generators
from dpsklearn.planning import plan_regression_answers

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


def _noise(seed, n_streams=2):
    return make_noise_generators(seed, n_streams)[0]


def _rdp_epsilon(events, delta):
    """Independent dp_accounting RDP epsilon of (rho-curve) events."""
    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    for rho, count in events:
        accountant.compose(dpa.ZCDpEvent(rho=rho), count)
    return accountant.get_epsilon(delta)


# -- the adaptive range -----------------------------------------------------------


def test_pooled_count_moves_by_at_most_one_per_teacher():
    # The utility's sensitivity: replacing one teacher's r predictions by any
    # others moves N(t) by at most 1 at every grid point.
    rng = np.random.default_rng(0)
    grid = range_grid((0.0, 1.0), 33)
    for _ in range(200):
        r, k = rng.integers(1, 6), rng.integers(1, 8)
        predictions = rng.uniform(0, 1, size=(r, k))
        other = predictions.copy()
        other[:, rng.integers(k)] = rng.uniform(0, 1, size=r)
        moved = np.abs(_pooled_below(predictions, grid) - _pooled_below(other, grid))
        assert moved.max() <= 1.0 + 1e-12
    # ... and the bound is attained: one teacher from below to above the grid.
    predictions = np.zeros((3, 4))
    other = predictions.copy()
    other[:, 0] = 1.0
    moved = _pooled_below(predictions + 1e-9, grid) - _pooled_below(other, grid)
    assert moved.max() == pytest.approx(1.0)


def test_pooled_count_matches_a_direct_count():
    rng = np.random.default_rng(1)
    predictions = rng.uniform(-1, 2, size=(5, 7))
    grid = range_grid((-1.0, 2.0), 17)
    direct = [(predictions < t).sum() / 5 for t in grid]
    assert np.allclose(_pooled_below(predictions, grid), direct)


def test_median_counts_match_a_direct_loop():
    rng = np.random.default_rng(2)
    predictions = rng.uniform(0, 1, size=(6, 9))
    grid = range_grid((0.0, 1.0), 11)
    direct = [[(row < t).sum() for t in grid] for row in predictions]
    assert np.array_equal(_median_counts(predictions, grid), direct)


def test_private_range_finds_the_band_at_a_large_epsilon():
    # Beyond the band the tilt makes a point a fraction f of the range away
    # (G/0.1)^(-3f) times as likely as one next to it: an end lies within
    # f = 0.1 of the band with probability about 0.87, so at least 70 % of
    # 40 ends do unless a binomial tail of about 0.3 % occurs. No end enters
    # the band (its count rises by 400 over it).
    rng = np.random.default_rng(3)
    predictions = rng.uniform(3.0, 4.0, size=(50, 400))  # teachers' band [3, 4]
    grid = range_grid((0.0, 10.0), 101)
    quantiles = (0.01, 0.99)
    ends = np.array(
        [private_range(predictions, grid, 50.0, quantiles, rng=rng) for _ in range(20)]
    )
    assert np.all(ends[:, 0] <= 3.0) and np.all(ends[:, 1] >= 4.0)
    near = np.concatenate([ends[:, 0] >= 2.0, ends[:, 1] <= 5.0])
    assert near.mean() >= 0.7


def test_private_range_is_ordered_and_never_empty():
    rng = np.random.default_rng(4)
    predictions = np.full((4, 3), 5.0)  # every prediction on one grid point
    grid = range_grid((0.0, 10.0), 11)
    for _ in range(50):
        a, b = private_range(predictions, grid, 0.01, (0.4, 0.6), rng=rng)
        assert a < b and 0.0 <= a and b <= 10.0


def test_rank_error_formula():
    assert rank_error(0.5, 100, 0.1) == pytest.approx(4 * math.log(1000))


def test_aggregate_rule_reads_public_numbers_only():
    # median exactly when the rank error fits a quarter of the teachers
    error = rank_error(0.05, 64)
    k_edge = int(math.ceil(4 * error))
    assert choose_aggregate(k_edge, 0.05, 64) == "median"
    assert choose_aggregate(k_edge - 1, 0.05, 64) == "mean"


@pytest.mark.parametrize("aggregate", ["mean", "median"])
def test_adaptive_range_composes_to_its_budget(aggregate):
    mech = AdaptiveRangeRelease.calibrate(
        1.0,
        1e-5,
        500,
        target_range=(0.0, 10.0),
        n_teachers=1000,
        aggregate=aggregate,
        range_share=0.2,
    )
    # Independently: two exponential mechanisms (eps^2/8 each) plus m
    # answers (Gaussian u^2/(2 sigma_u^2) = 1/(2 s^2), or eps_q^2/8).
    if aggregate == "mean":
        unit = 1.0 / (2.0 * mech.sigma_per_unit**2)
    else:
        unit = mech.epsilon_per_query**2 / 8.0
    events = [(mech.range_epsilon_each**2 / 8.0, 2), (unit, 500)]
    epsilon = _rdp_epsilon(events, 1e-5)
    assert epsilon <= 1.0 + 1e-6
    assert epsilon >= 0.999  # the calibration spends the budget
    # The range's share is what was asked.
    assert 2 * mech.range_epsilon_each**2 / 8.0 == pytest.approx(0.2 * mech.rho)
    # A model's own accountant accepts the parts as events.
    accountant = PrivacyAccountant._for_model(1.0, 1e-5, mech.composition)
    assert accountant.can_spend_events(mech.event_options(composition="rdp")[0])
    # ... and a basic one the whole.
    basic = PrivacyAccountant(1.0, 1e-5)
    assert basic.can_spend_events(mech.event_options(composition="basic")[0])


def test_adaptive_range_pure_budget_adds_up():
    mech = AdaptiveRangeRelease.calibrate(
        2.0, 0.0, 100, target_range=(0, 1), n_teachers=50, range_share=0.25
    )
    events = mech.privacy_events()
    assert sum(e.epsilon * e.count for e in events) == pytest.approx(2.0)
    assert mech.composition == "basic"


def test_engine_releases_the_range_once_and_persists_it():
    mech = AdaptiveRangeRelease.calibrate(
        1.0, 1e-5, 100, target_range=(0.0, 10.0), n_teachers=2000, aggregate="mean"
    )
    assert not mech.range_skipped
    engine = mech.engine(_noise(0))
    rng = np.random.default_rng(5)
    first = engine.answer("predict", rng.uniform(4, 6, size=(30, 2000)))
    released = engine.range_
    assert released is not None
    assert np.all(first.values["value"] >= released[0])
    assert np.all(first.values["value"] <= released[1])
    # A later batch does not redraw it; a copy restores it from its state.
    engine.answer("predict", rng.uniform(0, 10, size=(5, 2000)))
    assert engine.range_ == released
    restored = mech.engine(_noise(1))
    restored.set_state(engine.get_state())
    assert restored.range_ == released
    with pytest.raises(RuntimeError, match="already released"):
        engine.fix_range(np.zeros((2, 2000)))
    # spent counts the range once started
    assert mech.spent(0, engine)[0] > 0
    assert mech.spent(0, mech.engine(_noise(2)))[0] == 0


def test_range_is_skipped_when_its_mechanism_cannot_help():
    # 200 teachers: the range's rank error exceeds k/4, so the whole budget
    # goes to the answers, clipped to the public range (public rule).
    kwargs = {"target_range": (0.0, 10.0), "n_teachers": 200}
    mech = AdaptiveRangeRelease.calibrate(1.0, 1e-5, 100, **kwargs)
    assert mech.range_skipped and mech.range_share == 0
    rho, conversion = largest_gaussian_rho(1.0, 1e-5, "auto")
    asked = AdaptiveRangeRelease(
        1.0, 1e-5, 100, (0.0, 10.0), 200, 0.1, "mean", (0.01, 0.99), 128,
        rho, conversion,
    )
    assert rank_error(asked.range_epsilon_each, 128) > 200 / 4
    engine = mech.engine(_noise(0))
    assert engine.range_ == (0.0, 10.0)
    assert mech.spent(0, engine) == (0.0, 0.0)
    assert len(mech.event_options(composition="rdp")[0]) == 1  # answers only
    full = AdaptiveRangeRelease.calibrate(1.0, 1e-5, 100, **kwargs, range_share=0.0)
    assert full.noise_std() == pytest.approx(mech.noise_std())


def test_engine_refuses_a_wrong_number_of_teachers():
    mech = AdaptiveRangeRelease.calibrate(
        1.0, 1e-5, 10, target_range=(0.0, 1.0), n_teachers=5
    )
    with pytest.raises(ValueError, match="5 teachers"):
        mech.engine(_noise(0)).answer("predict", np.zeros((3, 4)))


def test_median_answers_lie_in_the_range_and_track_agreeing_teachers():
    mech = AdaptiveRangeRelease.calibrate(
        8.0, 1e-5, 10, target_range=(0.0, 10.0), n_teachers=2000, aggregate="median"
    )
    engine = mech.engine(_noise(0))
    rng = np.random.default_rng(6)
    centres = rng.uniform(3, 7, size=10)
    predictions = centres[:, None] + rng.normal(0, 0.1, size=(10, 2000))
    values = engine.answer("predict", predictions).values["value"]
    a, b = engine.range_
    assert np.all((values >= a) & (values <= b))
    assert np.max(np.abs(values - centres)) < 0.5


def test_mean_noise_scales_with_the_released_width():
    mech = AdaptiveRangeRelease.calibrate(
        1.0, 1e-5, 2000, target_range=(5.0, 10.0), n_teachers=2000
    )
    # Within grid rounding, the noise is proportional to the width.
    assert mech.noise_std(1.0) / mech.noise_std(5.0) == pytest.approx(0.2, rel=2e-3)
    # Over the whole range it is the plain clipped mean's Gaussian within the
    # rest of the budget: the sequential split (a pure range of 0.1 epsilon,
    # then the answers' exact composition within (0.9 epsilon, delta)).
    assert mech.split == "sequential"
    plain = clipped_mean_release(
        0.9, 1e-5, 2000, target_range=(5.0, 10.0), n_teachers=2000
    )
    assert mech.noise_std() == pytest.approx(plain.noise_std, rel=2e-3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"target_range": (1.0, 1.0)}, "target_range"),
        ({"target_range": (0.0, np.inf)}, "target_range"),
        ({"quantiles": (0.9, 0.1)}, "quantiles"),
        ({"range_share": 1.0}, "range_share"),
        ({"aggregate": "trimmed"}, "aggregate"),
    ],
)
def test_adaptive_range_bad_inputs(kwargs, match):
    params = {"target_range": (0.0, 1.0), "n_teachers": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        AdaptiveRangeRelease.calibrate(1.0, 1e-5, 10, **params)


# -- the planner ---------------------------------------------------------------------


def test_plan_matches_the_mechanisms():
    plan = plan_regression_answers(
        target_range=(0, 100),
        n_teachers=500,
        max_queries=1000,
        epsilon=1.0,
        delta=1e-5,
        target_std=20.0,
    )
    plain = clipped_mean_release(
        1.0, 1e-5, 1000, target_range=(0, 100), n_teachers=500
    )
    assert plan.noise_std == pytest.approx(plain.noise_std)
    assert plan.r2_cost == pytest.approx((plain.noise_std / 20.0) ** 2)
    assert plan.noise_exceeds_spread == (plain.noise_std > 20.0)
    adaptive = plan_regression_answers(
        target_range=(0, 100),
        n_teachers=500,
        max_queries=1000,
        epsilon=1.0,
        delta=1e-5,
        aggregate="adaptive",
        width=10.0,
    )
    mech = AdaptiveRangeRelease.calibrate(
        1.0, 1e-5, 1000, target_range=(0, 100), n_teachers=500
    )
    assert adaptive.noise_std == pytest.approx(mech.noise_std(10.0))
    assert adaptive.r2_cost is None and not adaptive.noise_exceeds_spread


def test_plan_warns_and_points_to_the_student():
    plan = plan_regression_answers(
        target_range=(-60, 300),
        n_teachers=100,
        max_queries=2000,
        epsilon=1.0,
        delta=1e-5,
        target_std=40.0,
    )
    assert plan.noise_exceeds_spread
    assert "KnowledgeTransferRegressor" in plan.message()
    message = plan.message()
    assert f"{plan.noise_std:.3g}" in message and "40" in message


def test_plan_bad_inputs():
    with pytest.raises(ValueError, match="target_range"):
        plan_regression_answers(
            target_range=(1, 0), n_teachers=5, max_queries=5, epsilon=1, delta=0
        )
    with pytest.raises(ValueError, match="epsilon"):
        plan_regression_answers(
            target_range=(0, 1), n_teachers=5, max_queries=5, epsilon=0, delta=0
        )


# -- sufficient-statistics perturbation ---------------------------------------------


def _upper_norm(matrix):
    return np.linalg.norm(matrix[np.triu_indices(matrix.shape[0])])


def test_gram_sensitivity_holds_and_is_attained():
    rng = np.random.default_rng(7)
    bound = 1.5
    for _ in range(500):
        d = rng.integers(1, 6)
        rows = rng.normal(size=(2, d))
        rows *= bound * rng.uniform(0, 1, size=(2, 1)) / np.linalg.norm(
            rows, axis=1, keepdims=True
        )
        diff = np.outer(rows[1], rows[1]) - np.outer(rows[0], rows[0])
        assert _upper_norm(diff) <= gram_sensitivity(bound) * (1 + 1e-12)
    e1, e2 = bound * np.eye(2)
    diff = np.outer(e2, e2) - np.outer(e1, e1)
    assert _upper_norm(diff) == pytest.approx(gram_sensitivity(bound))
    # the moment: phi' y' - phi y, attained at phi' = -phi, y' = y
    assert np.linalg.norm(-e1 * 3.0 - e1 * 3.0) == pytest.approx(
        moment_sensitivity(bound, 3.0)
    )


def test_smallest_eigenvalue_moves_by_at_most_the_bound():
    rng = np.random.default_rng(8)
    for _ in range(300):
        n, d = rng.integers(1, 6), rng.integers(1, 4)
        rows = rng.normal(size=(n, d))
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
        other = rows.copy()
        new = rng.normal(size=d)
        other[rng.integers(n)] = new / max(np.linalg.norm(new), 1.0)
        low = np.linalg.eigvalsh(rows.T @ rows)[0]
        low_other = np.linalg.eigvalsh(other.T @ other)[0]
        assert abs(low - low_other) <= 1.0 + 1e-9


def test_sufficient_statistics_compose_to_the_budget():
    mech = SufficientStatisticsRelease.calibrate(
        1.0, 1e-5, n_features=21, feature_bound=1.0, label_bound=5.0
    )
    pairs = list(zip(mech.units, mech.sigma_units, strict=True))
    # Gaussian releases compose exactly as mu-GDP, mu^2 = sum (u / sigma)^2
    # (Dong, Roth and Su 2022, Cor. 3.3): the budget is met, and not wasted.
    assert mech.conversion == "gdp"
    mu = math.sqrt(sum((u / s) ** 2 for u, s in pairs))
    assert 0.99e-5 <= gdp_delta(1.0, mu) <= 1e-5 * (1 + 1e-6)
    # Renyi accounting of the same noise certifies more than epsilon 1:
    # the exact GDP route is why this calibration is tighter.
    rhos = [(u**2 / (2 * s**2), 1) for u, s in pairs]
    assert _rdp_epsilon(rhos, 1e-5) > 1.0
    # sensitivities in grid units include the rounding (Delta/g + sqrt(d))
    for delta_, g, d, u in zip(
        mech.sensitivities, mech.grid_steps, mech.dimensions, mech.units, strict=True
    ):
        assert u == pytest.approx(delta_ / g + math.sqrt(d))
        assert math.sqrt(d) / u < 0.002  # the fine grid: rounding adds ~0.1 %
    accountant = PrivacyAccountant._for_model(1.0, 1e-5, mech.composition)
    options = mech.event_options(composition=mech.composition)
    assert accountant.can_spend_events(options[0])
    assert mech.spent(0, None)[0] <= 1.0 + 1e-9


def test_sufficient_statistics_bad_shares():
    with pytest.raises(ValueError, match="shares"):
        SufficientStatisticsRelease.calibrate(
            1.0, 1e-5, n_features=3, feature_bound=1, label_bound=1,
            shares=(0.5, 0.6, 0.1),
        )
    with pytest.raises(ValueError, match="delta"):
        SufficientStatisticsRelease.calibrate(
            1.0, 0.0, n_features=3, feature_bound=1, label_bound=1
        )


def test_release_is_symmetric_on_its_grid_and_unbiased():
    mech = SufficientStatisticsRelease.calibrate(
        4.0, 1e-5, n_features=3, feature_bound=1.0, label_bound=1.0
    )
    gram = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 3.0]])
    moment = np.array([1.0, -1.0, 0.5])
    draws = [mech.release(gram, moment, 0.7, _noise(s, 1)) for s in range(400)]
    for stats in draws[:5]:
        assert np.array_equal(stats.gram, stats.gram.T)
        steps = stats.gram / mech.grid_steps[0]
        assert np.array_equal(steps, np.rint(steps))
    mean_gram = np.mean([s.gram for s in draws], axis=0)
    # 400 draws: the mean is within 5 standard errors (failure ~ 1e-6 per entry)
    assert np.all(np.abs(mean_gram - gram) < 5 * mech.noise_std[0] / 20)


def test_regulariser_is_post_processing_of_the_release():
    mech = SufficientStatisticsRelease.calibrate(
        1.0, 1e-5, n_features=101, feature_bound=1.0, label_bound=1.0
    )
    edge = 2 * mech.noise_std[0] * math.sqrt(101)
    assert mech.regulariser(-5.0) == pytest.approx(0.25 * edge)
    assert mech.regulariser(1e9) == 0.0  # a well-conditioned problem: no ridge


def test_random_features_have_norm_one_and_chunked_statistics_match():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(2000, 3)) * 10
    frequencies = rng.normal(size=(17, 3))
    features = random_feature_map(X, frequencies)
    assert features.shape == (2000, 35)
    assert np.all(np.linalg.norm(features, axis=1) <= 1.0)
    y = rng.normal(size=2000)
    gram, moment = random_feature_statistics(X, y, frequencies, working_memory=0.05)
    assert np.allclose(gram, features.T @ features)
    assert np.allclose(moment, features.T @ y)


def test_auto_n_components_grows_with_n_epsilon_within_its_caps():
    assert auto_n_components(10, 0.1) == 50
    assert auto_n_components(10**8, 8.0) == 800
    assert auto_n_components(40_000, 1.0) == 500


def test_ssp_model_learns_a_smooth_function():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(20_000, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    model = fit_random_feature_ssp(
        X, y, epsilon=1.0, delta=1e-5, target_range=(-3, 3), random_state=0,
        noise=_noise(0, 1),
    )
    X_test = rng.normal(size=(2000, 2))
    y_test = np.sin(X_test[:, 0]) + 0.5 * X_test[:, 1]
    r2 = 1 - np.mean((model.predict(X_test) - y_test) ** 2) / np.var(y_test)
    assert r2 > 0.9
    assert model.regulariser_ >= 0
    predictions = model.predict(X_test * 100)
    assert np.all((predictions >= -3) & (predictions <= 3))  # clipped


def test_smallest_eigenvalue_of_subset_solver_is_the_minimum():
    # fit_random_feature_ssp asks LAPACK for the smallest eigenvalue only
    rng = np.random.default_rng(11)
    A = rng.normal(size=(40, 7))
    gram = A.T @ A
    assert linalg.eigvalsh(gram, subset_by_index=(0, 0))[0] == pytest.approx(
        np.linalg.eigvalsh(gram)[0]
    )


def test_ssp_fit_refuses_a_mechanism_calibrated_for_other_bounds():
    X = np.random.default_rng(12).normal(size=(50, 2))
    y = X[:, 0]
    narrow = SufficientStatisticsRelease.calibrate(
        1.0, 1e-5, n_features=21, feature_bound=1.0, label_bound=0.5
    )
    with pytest.raises(ValueError, match="calibrated for"):
        fit_random_feature_ssp(
            X, y, epsilon=1.0, delta=1e-5, target_range=(-3, 3),
            n_components=10, mechanism=narrow, noise=_noise(0, 1),
        )
    fitting = SufficientStatisticsRelease.calibrate(
        1.0, 1e-5, n_features=21, feature_bound=1.0, label_bound=3.0
    )
    model = fit_random_feature_ssp(
        X, y, epsilon=1.0, delta=1e-5, target_range=(-3, 3),
        n_components=10, mechanism=fitting, noise=_noise(0, 1),
    )
    assert model.mechanism_ is fitting
