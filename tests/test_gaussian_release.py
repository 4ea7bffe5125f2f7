"""The discrete Gaussian per-query release and the Laplace-or-Gaussian choice.

docs/design.rst, "Gaussian per-query releases". The privacy audit of the
release is in ``tests/test_audit_regression.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import make_regression

from dpsklearn import ClippedMean, PrivacyAccountant, PrivatePredictionRegressor
from dpsklearn.accounting import GaussianEvent, per_release_epsilon
from dpsklearn.mechanisms import (
    GridGaussianRelease,
    GridLaplaceRelease,
    value_release,
)
from dpsklearn.mechanisms._gaussian_calibration import largest_gaussian_rho
from dpsklearn.noise import grid_discrete_gaussian, grid_units


@pytest.fixture(scope="module")
def data():
    X, y = make_regression(n_samples=600, n_features=3, noise=5.0, random_state=0)
    return X, np.clip(y, -100, 100)


def test_sigma_is_the_stated_formula():
    epsilon, delta, m, sensitivity = 1.0, 1e-5, 2000, 0.004
    mech = GridGaussianRelease.calibrate(
        epsilon, delta, m, sensitivity=sensitivity, bounds=(0.0, 8.0)
    )
    units = grid_units(sensitivity, mech.grid_step)
    rho, name = largest_gaussian_rho(epsilon, delta, max_queries=m, units=units)
    assert mech.units == units == math.floor(sensitivity / mech.grid_step) + 1
    assert mech.sigma_units == pytest.approx(units * math.sqrt(m / (2 * rho)))
    # The exact Gaussian composition (0.0359) against RDP's 0.0306.
    assert (mech.conversion, round(rho, 4)) == (name, 0.0359) == ("gdp", 0.0359)
    assert round(largest_gaussian_rho(epsilon, delta, "rdp")[0], 4) == 0.0306
    assert mech.noise_std == mech.grid_step * mech.sigma_units


def test_m_gaussian_events_compose_to_the_budget():
    # dp_accounting, independently: m discrete Gaussians at sigma_u with
    # integer sensitivity u, through the PLD of the discrete Gaussian itself
    # (pessimistic: an upper bound on the true delta), are (epsilon, delta)-DP
    # up to its discretisation, and not much less; the RDP route certifies
    # less noise only at a larger sigma.
    import dp_accounting as dpa
    from dp_accounting.pld import privacy_loss_distribution as pld

    mech = GridGaussianRelease.calibrate(
        1.0, 1e-5, 500, sensitivity=0.01, bounds=(0.0, 1.0)
    )
    assert mech.conversion == "gdp"
    bounds = [
        pld.from_discrete_gaussian_mechanism(
            mech.sigma_units,
            mech.units,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=1e-5,
        )
        .self_compose(500)
        .get_delta_for_epsilon(1.0)
        for pessimistic in (False, True)
    ]
    # (The pessimistic rounding adds up to 500 x 1e-5 / 2 to epsilon: +4 % delta.)
    assert bounds[0] <= 1e-5 and 0.95e-5 < bounds[1] <= 1.05e-5
    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    accountant.compose(dpa.GaussianDpEvent(mech.sigma_units / mech.units), 500)
    assert accountant.get_epsilon(1e-5) > 1.05  # RDP could not certify it
    rdp = GridGaussianRelease.calibrate(
        1.0, 1e-5, 500, sensitivity=0.01, bounds=(0.0, 1.0), calibration="rdp"
    )
    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    accountant.compose(dpa.GaussianDpEvent(rdp.sigma_units / rdp.units), 500)
    assert 0.999 < accountant.get_epsilon(1e-5) <= 1.0


@pytest.mark.parametrize("m", [1, 6, 7, 100, 2000])
def test_auto_takes_the_smaller_noise(m):
    common = {"sensitivity": 0.01, "bounds": (0.0, 1.0)}
    auto = value_release(1.0, 1e-5, m, **common)
    gaussian = value_release(1.0, 1e-5, m, calibration="gaussian", **common)
    laplace = GridLaplaceRelease.calibrate(1.0, 1e-5, m, **common)
    assert (
        laplace.epsilon_per_query
        == per_release_epsilon(1.0, 1e-5, m, release="laplace")[0]
    )
    expected = (
        "gaussian"
        if gaussian.noise_std < laplace.noise_std
        else (laplace.calibration_name)
    )
    assert auto.calibration_name == expected
    # Hand-checked crossover at (1, 1e-5): Laplace up to 6 queries (8 when
    # the Gaussian was composed in RDP).
    assert (auto.calibration_name == "gaussian") == (m >= 7)


def test_laplace_noise_std_is_the_discrete_laplace_variance():
    mech = GridLaplaceRelease.calibrate(
        1.0, 0.0, 10, sensitivity=0.01, bounds=(0.0, 1.0)
    )
    t = mech.units / mech.epsilon_per_query
    q = math.exp(-1 / t)
    assert mech.noise_std == pytest.approx(
        mech.grid_step * math.sqrt(2 * q) / (1 - q), rel=1e-12
    )
    assert mech.noise_std == pytest.approx(math.sqrt(2) * mech.noise_scale, rel=1e-3)


def test_grid_discrete_gaussian_values_and_spread():
    # 40,000 draws: the sample standard deviation is within 3 % of sigma
    # except with probability below 1e-9 (its relative error has standard
    # deviation about 1 / sqrt(2 n) = 0.35 %).
    g, sigma_u = 2.0**-10, 300.0
    out = grid_discrete_gaussian(
        np.full(40_000, 0.5), sigma_u, grid_step=g, rng=np.random.default_rng(0)
    )
    assert np.array_equal(out / g, np.rint(out / g))
    assert abs(out.std() / (g * sigma_u) - 1) < 0.03
    clipped = grid_discrete_gaussian(
        np.full(100, 0.5),
        sigma_u,
        grid_step=g,
        bounds=(0.4, 0.6),
        rng=np.random.default_rng(1),
    )
    assert clipped.min() >= 0.4 and clipped.max() <= 0.6


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_regressor_records_gaussian_events_and_spends(data):
    X, y = data
    reg = PrivatePredictionRegressor(
        n_estimators=20,
        epsilon=1.0,
        max_queries=300,
        target_range=(-100, 100),
        mechanism=ClippedMean(noise="gaussian"),
        random_state=0,
    ).fit(X, y)
    mech = reg.privacy_mechanism_
    assert reg.calibration_ == "gaussian" and reg.epsilon_per_query_ is None
    assert reg.sigma_ == reg.noise_scale_ == reg.noise_std_ == mech.noise_std
    assert reg.sensitivity_ == pytest.approx(200 / 20)
    # Calibrated through Gaussian DP, the whole release is one certified
    # (epsilon, delta), which its own accountant records as one event.
    assert mech.conversion == "gdp" and reg.accountant_.composition == "basic"
    (event,) = reg.accountant_.events
    assert (event.kind, event.epsilon, event.delta) == ("approximate", 1.0, 1e-5)
    assert reg.accountant_.spent[0] <= 1.0 + 1e-9
    # Calibrated in RDP, it records the m Gaussian events themselves.
    rdp = GridGaussianRelease.calibrate(
        1.0, 1e-5, 300, sensitivity=10.0, bounds=(-100, 100), calibration="rdp"
    )
    assert rdp.composition == "rdp"
    (gaussian,) = rdp.event_options(composition="rdp")[0]
    assert isinstance(gaussian, GaussianEvent)
    assert (gaussian.sigma, gaussian.sensitivity, gaussian.count) == (
        rdp.sigma_units,
        rdp.units,
        300,
    )
    values = reg.predict(X[:50])
    lo, hi = reg.target_range_
    assert values.min() >= lo and values.max() <= hi
    status = reg.budget_status()
    assert status.query_units_spent == 50
    spent = status.spent[0]
    assert 0 < spent < 1.0


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_regressor_shared_basic_accountant_records_the_whole(data):
    X, y = data
    shared = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    reg = PrivatePredictionRegressor(
        n_estimators=20,
        epsilon=1.0,
        max_queries=300,
        mechanism=ClippedMean(noise="gaussian"),
        target_range=(-100, 100),
        accountant=shared,
        random_state=0,
    ).fit(X, y)
    (event,) = shared.events
    assert (event.kind, event.epsilon, event.delta) == ("approximate", 1.0, 1e-5)
    assert reg.calibration_ == "gaussian"


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_gaussian_needs_delta_before_any_spend(data):
    X, y = data
    shared = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    reg = PrivatePredictionRegressor(
        n_estimators=20,
        delta=0.0,
        mechanism=ClippedMean(noise="gaussian"),
        target_range=(-100, 100),
        accountant=shared,
    )
    with pytest.raises(ValueError, match="delta > 0"):
        reg.fit(X, y)
    assert shared.events == []
    # "auto" at delta = 0 falls back to the pure Laplace release.
    auto = PrivatePredictionRegressor(
        n_estimators=20, delta=0.0, target_range=(-100, 100)
    ).fit(X, y)
    assert auto.calibration_ == "basic"


def test_unknown_noise_is_refused(data):
    X, y = data
    shared = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    with pytest.raises(ValueError, match="noise"):
        PrivatePredictionRegressor(
            mechanism=ClippedMean(noise="rdp"), accountant=shared
        ).fit(X, y)
    assert shared.events == []
