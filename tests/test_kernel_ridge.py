"""PrivateKernelRidge (Nie and Wang 2017) and the vector noise it uses.

See docs/design.rst, "Kernel ridge: sensitivity and releases".

Statistical tests run on fixed seeds, so they are deterministic; each states
the probability with which it would fail on a random seed if the code were
right.
"""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate, stats
from scipy.special import ndtr
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge

from dpsklearn import (
    BudgetExhaustedError,
    OutputPerturbation,
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivateKernelRidge,
    kernel_ridge_schedule,
)
from dpsklearn.accounting import per_release_epsilon
from dpsklearn.kernel_ridge._kernels import (
    KERNELS,
    _clip_rows,
    _fit_dual_coef,
    _fit_weights,
    _fourier_features,
    _fourier_frequencies,
    _kernel_matrix,
)
from dpsklearn.noise import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    grid_gaussian,
    grid_high_dimensional_laplace,
    high_dimensional_laplace,
    l2_grid_units,
    rounded_gaussian,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:noise_random_state is set:dpsklearn.PrivacyLeakWarning"
)


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _power_of_two_step(sensitivity):
    # The default grid step: a power of two near Delta / 1024 (by hand here).
    return 2.0 ** round(math.log2(sensitivity / 1024))


# --------------------------------------------------------------------------
# The non-private fit
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", KERNELS)
def test_fit_is_sklearn_kernel_ridge_with_alpha_times_n(kernel):
    X, y = _data()
    n = X.shape[0]
    model = PrivateKernelRidge(
        kernel,
        kernel_params={"gamma": 0.7, "degree": 2, "coef0": 0.5, "x_bound": 10.0},
        alpha=0.05,
        y_bound=1.0,
        mechanism="output_perturbation",
    ).fit(X, y)
    reference = KernelRidge(
        alpha=0.05 * n,
        kernel="polynomial" if kernel == "poly" else kernel,
        gamma=0.7,
        degree=2,
        coef0=0.5,
    ).fit(X, y)
    np.testing.assert_allclose(model.dual_coef_, reference.dual_coef_, rtol=1e-9)


def test_linear_and_poly_rows_are_clipped_to_x_bound_at_fit_and_query():
    X, y = _data()
    X = X * 3.0  # norms up to about 5
    model = PrivateKernelRidge(
        "poly",
        kernel_params={"degree": 2, "gamma": 0.5, "coef0": 1.0, "x_bound": 1.0},
        y_bound=1.0,
        mechanism="output_perturbation",
    ).fit(X, y)
    assert np.linalg.norm(model.X_fit_, axis=1).max() <= 1.0
    assert model.kappa_ == pytest.approx(math.sqrt((0.5 * 1.0 + 1.0) ** 2))
    clipped = _clip_rows(X, 1.0)
    kernel_diag = np.diag(_kernel_matrix(clipped, clipped, "poly", 0.5, 2, 1.0))
    assert kernel_diag.max() <= model.kappa_**2
    # rows inside the ball are untouched
    small = X[np.linalg.norm(X, axis=1) <= 1.0]
    np.testing.assert_array_equal(_clip_rows(small, 1.0), small)
    # query rows are clipped too: a far point answers like its clipped self
    far = np.array([[4.0, -2.0, 1.0]])
    np.testing.assert_allclose(
        model._exact_predictions(far),
        model._exact_predictions(far / np.linalg.norm(far)),
        rtol=1e-12,
    )


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_paired_fourier_features_have_unit_norm_and_approximate_the_kernel(kernel):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(30, 3))
    frequencies = _fourier_frequencies(kernel, 0.8, 3, 20_000, 0)
    phi = _fourier_features(X, frequencies)
    np.testing.assert_allclose(np.linalg.norm(phi, axis=1), 1.0, rtol=1e-12)
    exact = _kernel_matrix(X, X, kernel, 0.8, None, None)
    # Monte Carlo error of a mean of 20,000 bounded terms: sd <= 0.0071.
    assert np.abs(phi @ phi.T - exact).max() < 0.05


# --------------------------------------------------------------------------
# Empirical sensitivity (Lemma 2 with R = M / sqrt(alpha))
# --------------------------------------------------------------------------


def _random_kernel_case(rng):
    kernel = KERNELS[rng.integers(len(KERNELS))]
    params = {"gamma": 10 ** rng.uniform(-1, 1), "degree": None, "coef0": None}
    x_bound = None
    kappa = 1.0
    if kernel in ("linear", "poly"):
        x_bound = 10 ** rng.uniform(-0.5, 0.5)
        kappa = x_bound
    if kernel == "poly":
        params["degree"] = int(rng.integers(1, 4))
        params["coef0"] = rng.uniform(0, 2)
        kappa = math.sqrt(
            (params["gamma"] * x_bound**2 + params["coef0"]) ** params["degree"]
        )
    return kernel, params, x_bound, kappa


def _fitted_function(X, y, kernel, params, alpha, x_bound):
    if x_bound is not None:
        X = _clip_rows(X, x_bound)
    K = _kernel_matrix(X, X, kernel, **params)
    coef = _fit_dual_coef(K, y, alpha)

    def f(Q):
        if x_bound is not None:
            Q = _clip_rows(Q, x_bound)
        return _kernel_matrix(Q, X, kernel, **params) @ coef

    return f


def test_empirical_sensitivity_never_exceeds_lemma_2_bound():
    """>= 200 neighbouring pairs (one record replaced, labels at +-M).

    The bound ``2 kappa^2 (kappa R + M) / (alpha n)``, ``R = M/sqrt(alpha)``,
    is computed here by hand from the kernel's parameters.
    """
    rng = np.random.default_rng(2024)
    n_pairs = 400
    ratios = np.empty(n_pairs)
    kernels_seen = set()
    for pair in range(n_pairs):
        kernel, params, x_bound, kappa = _random_kernel_case(rng)
        kernels_seen.add(kernel)
        n = int(rng.integers(1, 41))
        d = int(rng.integers(1, 4))
        alpha = 10 ** rng.uniform(-3, 2)
        M = 10 ** rng.uniform(-1, 1)
        spread = 2.0 if x_bound is None else 1.5 * x_bound
        X = rng.uniform(-spread, spread, size=(n, d))
        y = M * rng.choice([-1.0, 1.0], size=n)
        i = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        if rng.random() < 0.5:  # same point, opposite worst-case label
            y2[i] = -y[i]
        else:
            X2[i] = rng.uniform(-spread, spread, size=d)
            y2[i] = M * rng.choice([-1.0, 1.0])
        queries = np.vstack(
            [X, X2, rng.uniform(-spread, spread, size=(200, d)), -X[i : i + 1]]
        )
        f = _fitted_function(X, y, kernel, params, alpha, x_bound)
        f2 = _fitted_function(X2, y2, kernel, params, alpha, x_bound)
        observed = np.abs(f(queries) - f2(queries)).max()
        R = M / math.sqrt(alpha)
        bound = 2 * kappa**2 * (kappa * R + M) / (alpha * n)
        assert observed <= bound * (1 + 1e-9), (pair, kernel, n, alpha)
        ratios[pair] = observed / bound
    assert kernels_seen == set(KERNELS)
    tightest = ratios.max()
    print(
        f"\nkernel ridge sensitivity: {n_pairs} neighbouring pairs, tightest "
        f"observed/bound = {tightest:.4f}, median {np.median(ratios):.4f}"
    )
    # The bound is attained up to a small factor (n = 1, large alpha).
    assert 0.5 < tightest <= 1.0


def test_empirical_weight_sensitivity_of_the_model_release():
    """L2 change of the RFF weights <= 2 (R + M) / (alpha n) (kappa = 1)."""
    rng = np.random.default_rng(7)
    ratios = []
    for _ in range(200):
        kernel = ("rbf", "laplacian")[rng.integers(2)]
        n, d, D = int(rng.integers(1, 31)), int(rng.integers(1, 4)), 16
        alpha = 10 ** rng.uniform(-3, 2)
        M = 10 ** rng.uniform(-1, 1)
        frequencies = _fourier_frequencies(kernel, 10 ** rng.uniform(-1, 1), d, D, 0)
        X = rng.uniform(-2, 2, size=(n, d))
        y = M * rng.choice([-1.0, 1.0], size=n)
        i = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        X2[i] = rng.uniform(-2, 2, size=d) if rng.random() < 0.5 else X[i]
        y2[i] = -y[i]
        w = _fit_weights(_fourier_features(X, frequencies), y, alpha)
        w2 = _fit_weights(_fourier_features(X2, frequencies), y2, alpha)
        bound = 2 * (M / math.sqrt(alpha) + M) / (alpha * n)
        ratios.append(np.linalg.norm(w - w2) / bound)
    assert max(ratios) <= 1 + 1e-9
    print(f"\nRFF weight sensitivity: tightest observed/bound = {max(ratios):.4f}")


def test_primal_and_dual_weight_solves_agree():
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(40, 12))
    y = rng.normal(size=40)
    primal = _fit_weights(phi, y, 0.1)  # n >= p: primal system
    dual = _fit_weights(phi[:8], y[:8], 0.1)  # n < p: dual system
    direct = np.linalg.solve(phi.T @ phi + 0.1 * 40 * np.eye(12), phi.T @ y)
    np.testing.assert_allclose(primal, direct, rtol=1e-10)
    direct_small = np.linalg.solve(
        phi[:8].T @ phi[:8] + 0.1 * 8 * np.eye(12), phi[:8].T @ y[:8]
    )
    np.testing.assert_allclose(dual, direct_small, rtol=1e-8)


# --------------------------------------------------------------------------
# OutputPerturbation(release="predictions")
# --------------------------------------------------------------------------


def test_prediction_sensitivity_and_per_query_epsilon_are_as_stated():
    X, y = _data(n=150)
    model = PrivateKernelRidge(
        alpha=0.5,
        y_bound=2.0,
        epsilon=3.0,
        delta=1e-6,
        max_queries=77,
        mechanism="output_perturbation",
    ).fit(X, y)
    R = 2.0 / math.sqrt(0.5)
    assert model.sensitivity_ == pytest.approx(min(2 * (R + 2.0) / (0.5 * 150), 4.0))
    eps_q, name = per_release_epsilon(3.0, 1e-6, 77, release="laplace")
    assert model.per_query_epsilon_ == eps_q and model.calibration_ == name
    g = _power_of_two_step(model.sensitivity_)
    assert model.grid_step_ == g
    units = math.floor(model.sensitivity_ / g) + 1
    assert model.noise_scale_ == pytest.approx(g * units / eps_q)
    # A tiny alpha n makes Lemma 2 exceed 2M: the clipped range takes over.
    small = PrivateKernelRidge(
        alpha=1e-3, y_bound=2.0, mechanism="output_perturbation"
    ).fit(X[:10], y[:10])
    assert small.sensitivity_ == 4.0


def test_predictions_are_clipped_grid_values():
    X, y = _data()
    model = PrivateKernelRidge(
        y_bound=1.0, max_queries=500, mechanism="output_perturbation"
    ).fit(X, y)
    pred = model.predict(X)
    assert np.all(np.abs(pred) <= 1.0)
    inside = np.abs(pred) < 1.0
    units = pred[inside] / model.grid_step_
    np.testing.assert_array_equal(units, np.round(units))


def test_prediction_noise_scale_matches_stated_sensitivity():
    """Sample variance of the noise in grid units vs the exact DLap variance.

    4,000 noisy answers at one query point; the sample variance of a discrete
    Laplace has relative standard deviation about sqrt(5/4000) = 3.5%, and the
    test allows 5 standard deviations (two-sided failure probability about
    1e-6 on a random seed; a noise scale off by 10% or more fails).
    """
    X, y = _data(n=1500, d=2, seed=5)
    m = 4000
    model = PrivateKernelRidge(
        alpha=1.0,
        y_bound=1.0,
        epsilon=40.0,
        max_queries=m,
        noise_random_state=11,
        mechanism="output_perturbation",
    ).fit(X, y)
    x0 = np.zeros((1, 2))
    exact = model._exact_predictions(x0)[0]
    assert abs(exact) < 0.5  # far from the clipping edge: no clipped answer
    g = model.grid_step_
    answers = model.predict(np.repeat(x0, m, axis=0))
    noise_units = answers / g - np.rint(exact / g)
    np.testing.assert_array_equal(noise_units, np.round(noise_units))
    sensitivity = 2 * (1.0 / math.sqrt(1.0) + 1.0) / (1.0 * 1500)
    units = math.floor(sensitivity / g) + 1
    a = math.exp(-model.per_query_epsilon_ / units)
    variance = 2 * a / (1 - a) ** 2  # Var DLap(t) with a = exp(-1/t)
    ratio = noise_units.var() / variance
    assert abs(ratio - 1) < 5 * math.sqrt(5 / m), ratio


def test_budget_counts_rows_and_exhaustion_keeps_paid_answers():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    model = PrivateKernelRidge(
        y_bound=1.0,
        max_queries=5,
        accountant=acc,
        noise_random_state=0,
        mechanism="output_perturbation",
    ).fit(X, y)
    events_after_fit = acc.events
    assert model.predict(X[:3]).shape == (3,)
    assert model.budget_status().query_units_remaining == 2
    values, abstained = model.predict(X[3:7], return_abstained=True)
    # Two rows paid for (noisy, on the grid); the rest abstained on with 0,
    # the centre of [-y_bound, y_bound].
    np.testing.assert_array_equal(abstained, [False, False, True, True])
    np.testing.assert_array_equal(values[2:], [0.0, 0.0])
    same = PrivateKernelRidge(
        y_bound=1.0,
        max_queries=5,
        noise_random_state=0,
        mechanism="output_perturbation",
    ).fit(X, y)
    same.predict(X[:3])
    np.testing.assert_array_equal(values[:2], same.predict(X[3:5]))
    status = model.budget_status()
    assert status.n_served == 5 and status.halted
    values, abstained = model.predict(X[:1], return_abstained=True)
    assert values.tolist() == [0.0] and abstained.all()
    model.score(X[:2], y[:2])  # score is a release too: abstained on
    assert model.budget_status().n_served == 5
    assert acc.events == events_after_fit  # queries never spend beyond the fit


@pytest.mark.parametrize(
    ("max_queries", "delta", "spent_delta"),
    # One query: basic composition, pure; many: a split that uses delta;
    # delta = 0: pure.
    [(1, 1e-5, 0.0), (100, 1e-5, 1e-5), (100, 0.0, 0.0)],
)
def test_whole_budget_reserved_at_fit(max_queries, delta, spent_delta):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    model = PrivateKernelRidge(
        y_bound=1.0,
        epsilon=2.0,
        delta=delta,
        max_queries=max_queries,
        accountant=acc,
        mechanism="output_perturbation",
    ).fit(X, y)
    # Basic composition exactly when it spends no delta.
    assert (model.calibration_ == "basic") == (spent_delta == 0.0)
    epsilon, spent = acc.spent
    assert epsilon == pytest.approx(2.0, rel=1e-9)
    assert spent == pytest.approx(spent_delta)
    with pytest.raises(BudgetExhaustedError):  # a second fit does not fit
        PrivateKernelRidge(
            y_bound=1.0, epsilon=2.0, accountant=acc, mechanism="output_perturbation"
        ).fit(X, y)
    assert len(acc.events) == 1


def test_set_params_after_fit_does_not_change_the_running_model():
    X, y = _data()
    model = PrivateKernelRidge(
        y_bound=1.0,
        max_queries=50,
        noise_random_state=0,
        mechanism="output_perturbation",
    )
    model.fit(X, y)
    scale = model.noise_scale_
    model.set_params(y_bound=100.0, max_queries=10**6, kernel="linear")
    assert np.all(np.abs(model.predict(X[:20])) <= 1.0)
    assert model.noise_scale_ == scale
    assert model.budget_status().max_queries == 50


def test_sparse_input_gives_the_same_answers_as_dense():
    X, y = _data()
    kwargs = dict(y_bound=1.0, epsilon=1e4, max_queries=100, noise_random_state=3)
    bound = {"x_bound": 1.2}
    dense = PrivateKernelRidge(
        "linear", kernel_params=bound, **kwargs, mechanism="output_perturbation"
    ).fit(X, y)
    sparse = PrivateKernelRidge(
        "linear", kernel_params=bound, **kwargs, mechanism="output_perturbation"
    ).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(
        dense.predict(X[:30]), sparse.predict(sp.csr_matrix(X[:30]))
    )


def test_a_pickled_copy_draws_fresh_noise():
    X, y = _data()
    model = PrivateKernelRidge(
        y_bound=1.0, epsilon=0.5, max_queries=200, mechanism="output_perturbation"
    ).fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    assert not np.array_equal(model.predict(X[:50]), copy.predict(X[:50]))


# --------------------------------------------------------------------------
# OutputPerturbation(release="model")
# --------------------------------------------------------------------------


def _recomputed_weights(model, X, y):
    # The unnoised weights are not on the model; the test recomputes them from
    # the public frequencies and the data it owns.
    phi = _fourier_features(X, model.random_frequencies_)
    return _fit_weights(phi, np.clip(y, -model.y_bound_, model.y_bound_), model.alpha)


def test_released_model_predictions_are_free_deterministic_and_unlimited():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    model = PrivateKernelRidge(
        y_bound=1.0,
        mechanism=OutputPerturbation(release="model", n_components=30),
        accountant=acc,
        random_state=0,
    ).fit(X, y)
    events = acc.events
    assert acc.spent == pytest.approx((1.0, 1e-5))
    queries = np.random.default_rng(0).uniform(-1, 1, size=(5000, 3))
    first = model.predict(queries)
    for _ in range(3):
        np.testing.assert_array_equal(model.predict(queries), first)
    assert model.score(X, y) == model.score(X, y)
    assert acc.events == events
    assert model.budget_status().query_units_remaining is None
    assert np.all(np.abs(first) <= 1.0)


def test_released_model_keeps_no_private_state():
    X, y = _data()
    n = X.shape[0]
    model = PrivateKernelRidge(
        y_bound=1.0, max_queries=10, mechanism="output_perturbation"
    ).fit(X, y)
    assert hasattr(model, "X_fit_")
    released = OutputPerturbation(release="model", n_components=25)
    model.set_params(mechanism=released).fit(X, y)  # refit
    for name in ("X_fit_", "dual_coef_", "per_query_epsilon_"):
        assert not hasattr(model, name), name
    # Its serving state only records the release: no engine answers queries.
    assert model._serving_state_.engine is None
    arrays = [v for v in vars(model).values() if isinstance(v, np.ndarray)]
    assert all(a.shape[0] != n for a in arrays)
    blob = pickle.dumps(model)
    assert X[0].tobytes() not in blob and X[-1].tobytes() not in blob
    weights = _recomputed_weights(model, X, y)
    assert weights.tobytes() not in blob
    assert not np.allclose(model.coef_, weights)


def _chi2_bounds(dof, failure=1e-6):
    return stats.chi2.ppf(failure / 2, dof), stats.chi2.isf(failure / 2, dof)


def test_model_gaussian_noise_matches_stated_sensitivity():
    """Weights' noise in grid units is round(N(0, sigma_u^2)), sigma_u stated.

    sigma_u is recomputed here from the stated L2 sensitivity 2 (R + M) /
    (alpha n), the grid (Delta/g + sqrt(2D)) and the analytic Gaussian.
    Chi-square on 4 x 1,000 coordinates against the exact variance of the
    rounded Gaussian, two-sided failure probability 1e-6 on a random seed.
    """
    X, y = _data(n=400)
    D, alpha, M, epsilon, delta = 500, 0.2, 1.0, 1.0, 1e-6
    sensitivity = 2 * (M / math.sqrt(alpha) + M) / (alpha * 400)
    g = _power_of_two_step(sensitivity)
    units = sensitivity / g + math.sqrt(2 * D)
    sigma_u = analytic_gaussian_sigma(epsilon, delta, units)
    k = np.arange(-int(12 * sigma_u), int(12 * sigma_u) + 1)
    mass = ndtr((k + 0.5) / sigma_u) - ndtr((k - 0.5) / sigma_u)
    variance = float(np.sum(k.astype(float) ** 2 * mass))
    statistic, dof = 0.0, 0
    for seed in range(4):
        model = PrivateKernelRidge(
            alpha=alpha,
            y_bound=M,
            epsilon=epsilon,
            delta=delta,
            mechanism=OutputPerturbation(release="model", n_components=D),
            random_state=1,
            noise_random_state=seed,
        ).fit(X, y)
        assert model.release_ == "grid_gaussian"
        assert model.sensitivity_ == pytest.approx(sensitivity)
        assert model.grid_step_ == g
        assert model.noise_scale_ == pytest.approx(g * sigma_u)
        weights = _recomputed_weights(model, X, y)
        noise = model.coef_ / g - np.rint(weights / g)
        np.testing.assert_allclose(noise, np.round(noise), atol=1e-6)
        statistic += float(np.sum(noise**2) / variance)
        dof += noise.size
    low, high = _chi2_bounds(dof)
    assert low < statistic < high, (statistic, dof)


def test_model_pure_dp_uses_high_dimensional_laplace_at_stated_scale():
    """delta = 0: noise round(Z), ||Z|| ~ Gamma(2D, (Delta/g + sqrt(2D))/eps).

    The sum of 8 norms is Gamma(16 D, s) up to the rounding of each
    coordinate (at most sqrt(2D)/2 per vector); two-sided failure probability
    1e-6 on a random seed.
    """
    X, y = _data(n=300)
    D, alpha, M, epsilon = 50, 0.5, 1.0, 2.0
    acc = PrivacyAccountant(epsilon=100.0)
    sensitivity = 2 * (M / math.sqrt(alpha) + M) / (alpha * 300)
    g = _power_of_two_step(sensitivity)
    scale_u = (sensitivity / g + math.sqrt(2 * D)) / epsilon
    total = 0.0
    for seed in range(8):
        model = PrivateKernelRidge(
            alpha=alpha,
            y_bound=M,
            epsilon=epsilon,
            delta=0.0,
            mechanism=OutputPerturbation(release="model", n_components=D),
            random_state=1,
            noise_random_state=seed,
            accountant=acc,
        ).fit(X, y)
        assert model.release_ == "grid_high_dimensional_laplace"
        assert model.noise_scale_ == pytest.approx(g * scale_u)
        noise = model.coef_ / g - np.rint(_recomputed_weights(model, X, y) / g)
        total += float(np.linalg.norm(noise))
    slack = 8 * math.sqrt(2 * D) / 2
    low = stats.gamma.ppf(5e-7, 8 * 2 * D, scale=scale_u) - slack
    high = stats.gamma.isf(5e-7, 8 * 2 * D, scale=scale_u) + slack
    assert low < total < high
    assert acc.spent == pytest.approx((8 * epsilon, 0.0))  # pure: no delta


def test_model_release_is_useful_with_enough_data():
    # n = 4000, alpha = 0.1: weight sensitivity 2 (sqrt(10) + 1) / 400 = 0.021,
    # per-prediction noise sd about 0.04 at epsilon = 2; the error is mostly
    # the bias of the strong regularisation (measured: 0.18 of var(y)).
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(4000, 2))
    y = np.sin(2 * X[:, 0])
    model = PrivateKernelRidge(
        alpha=0.1,
        y_bound=1.0,
        kernel_params={"gamma": 1.0},
        epsilon=2.0,
        mechanism=OutputPerturbation(release="model", n_components=50),
        random_state=0,
        noise_random_state=0,
    ).fit(X, y)
    mse = np.mean((model.predict(X) - y) ** 2)
    assert mse < 0.3 * np.var(y)


@pytest.mark.parametrize("release", ["model", "predictions"])
def test_a_target_range_away_from_zero_is_centred(release):
    # The same data shifted into the public range (5, 7): the fit runs on
    # targets centred at 6, Lemma 2's M is the half-width 1 (as for y_bound=1
    # on the unshifted data), and every answer lies in the range. Before the
    # centring, M was max(|5|, |7|) = 7 and the uncentred model, having no
    # intercept, predicted around 0, outside the range.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 2))
    y = np.sin(2 * X[:, 0])
    params = dict(
        alpha=0.1,
        kernel_params={"gamma": 1.0},
        epsilon=8.0,
        max_queries=500,
        mechanism=OutputPerturbation(release=release, n_components=50),
        random_state=0,
        noise_random_state=0,
    )
    shifted = PrivateKernelRidge(y_bound=(5.0, 7.0), **params).fit(X, y + 6.0)
    centred = PrivateKernelRidge(y_bound=1.0, **params).fit(X, y)
    assert shifted.y_bound_ == 1.0 and shifted.target_range_ == (5.0, 7.0)
    assert shifted.sensitivity_ == centred.sensitivity_
    answers = shifted.predict(X[:400])
    assert np.all((answers >= 5.0) & (answers <= 7.0))
    # Same noise seed, same centred fit: the answers are the centred ones + 6.
    np.testing.assert_allclose(answers, centred.predict(X[:400]) + 6.0, atol=1e-9)
    # Better than the midpoint, the best constant the public range gives.
    residual = np.mean((answers - (y[:400] + 6.0)) ** 2)
    assert residual < 0.8 * np.mean(y[:400] ** 2)


# --------------------------------------------------------------------------
# Bad input: refused before any budget is spent
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"kernel": "sigmoid"}, "kernel='sigmoid' is not supported"),
        ({"kernel": "precomputed"}, "kernel='precomputed' is not supported"),
        (
            {"kernel": "poly", "kernel_params": {"coef0": -1.0, "x_bound": 1.0}},
            r"kernel_params\['coef0'\]=-1.0 is refused",
        ),
        (
            {"kernel": "poly", "kernel_params": {"degree": 2.5, "x_bound": 1.0}},
            r"kernel_params\['degree'\]=2.5 is refused",
        ),
        (
            {"kernel": "poly", "kernel_params": {"degree": 0, "x_bound": 1.0}},
            r"kernel_params\['degree'\]=0 is refused",
        ),
        ({"kernel_params": {"gamma": 1.0, "alpha": 2.0}}, "kernel_params"),
        ({"y_bound": 0.0}, "y_bound"),
        ({"y_bound": -1.0}, "y_bound"),
        ({"y_bound": math.inf}, "y_bound"),
        ({"kernel_params": {"x_bound": -1.0}, "kernel": "linear"}, "x_bound"),
        (
            {
                "mechanism": OutputPerturbation(release="model"),
                "kernel": "linear",
                "kernel_params": {"x_bound": 1.0},
            },
            "shift-invariant",
        ),
        (
            {"mechanism": OutputPerturbation(release="model"), "kernel": "cosine"},
            "shift-invariant",
        ),
        ({"mechanism": OutputPerturbation(release="weights")}, "release"),
        ({"mechanism": OutputPerturbation(n_components=0)}, "n_components"),
        ({"mechanism": OutputPerturbation(n_shards=0)}, "n_shards"),
        ({"mechanism": "gnmax"}, "mechanism"),
        ({"max_queries": None}, "max_queries=None"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"alpha": 0.0}, "alpha"),
    ],
)
def test_bad_input_raises_before_any_budget_is_spent(params, match):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-4)
    params = {"y_bound": 1.0, "mechanism": "output_perturbation", **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            PrivateKernelRidge(accountant=acc, **params).fit(X, y)
    assert acc.events == []


@pytest.mark.parametrize("bad", ["nan_x", "inf_y", "empty", "multioutput"])
def test_bad_data_raises_before_any_budget_is_spent(bad):
    X, y = _data()
    if bad == "nan_x":
        X[3, 1] = np.nan
    elif bad == "inf_y":
        y[0] = np.inf
    elif bad == "empty":
        X, y = X[:0], y[:0]
    else:
        y = np.column_stack([y, y])
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-4)
    with pytest.raises(ValueError):
        PrivateKernelRidge(
            y_bound=1.0, accountant=acc, mechanism="output_perturbation"
        ).fit(X, y)
    assert acc.events == []


def test_a_callable_kernel_is_refused():
    X, y = _data()
    with pytest.raises((TypeError, ValueError), match="kernel"):
        PrivateKernelRidge(
            kernel=lambda a, b: a @ b.T, y_bound=1.0, mechanism="output_perturbation"
        ).fit(X, y)


def test_query_with_wrong_feature_count_is_refused_without_charge():
    X, y = _data()
    model = PrivateKernelRidge(
        y_bound=1.0, max_queries=5, mechanism="output_perturbation"
    ).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:2, :2])
    assert model.budget_status().n_served == 0


def test_unset_y_bound_is_inferred_with_a_privacy_leak_warning():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="y_bound is None"):
        model = PrivateKernelRidge(mechanism="output_perturbation").fit(X, 3 * y)
    assert model.y_bound_ == pytest.approx(np.abs(3 * y).max())


@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_unset_x_bound_is_inferred_with_a_privacy_leak_warning(kernel):
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match=r"kernel_params\['x_bound'\] is unset"):
        model = PrivateKernelRidge(
            kernel, y_bound=1.0, mechanism="output_perturbation"
        ).fit(X, y)
    assert model.x_bound_ == pytest.approx(np.linalg.norm(X, axis=1).max())


def test_x_bound_is_not_needed_by_bounded_kernels():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for kernel in ("rbf", "laplacian", "cosine"):
            model = PrivateKernelRidge(
                kernel, y_bound=1.0, mechanism="output_perturbation"
            ).fit(X, y)
            assert model.x_bound_ is None and model.kappa_ == 1.0


def test_all_zero_data_gets_a_valid_positive_bound():
    X = np.zeros((20, 2))
    y = np.zeros(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = PrivateKernelRidge("linear", mechanism="output_perturbation").fit(X, y)
    assert model.y_bound_ == 1.0 and model.x_bound_ == 1.0
    assert model.predict(X[:2]).shape == (2,)


def test_clone_keeps_a_shared_accountant():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    model = PrivateKernelRidge(accountant=acc, mechanism="output_perturbation")
    assert clone(model).accountant is acc


# --------------------------------------------------------------------------
# kernel_ridge_schedule (Nie and Wang 2017, Theorem 3, with R = M / sqrt(alpha))
# --------------------------------------------------------------------------


def test_schedule_matches_hand_computation_saturated_source_condition():
    # r = 1 >= 1/2: s = 1, alpha = epsilon = n^(-1/3); n = 10^6 gives 10^-2.
    s = kernel_ridge_schedule(10**6, r=1.0)
    assert s.alpha == pytest.approx(1e-2, rel=1e-12)
    assert s.epsilon == pytest.approx(1e-2, rel=1e-12)
    assert s.alpha_exponent == pytest.approx(1 / 3)
    assert s.error_exponent == pytest.approx(1 / 3)
    # the paper: alpha = n^(-2/min(4, 5)) = n^(-1/2); epsilon = n^(-1/3)
    assert s.paper_alpha_exponent == 0.5
    assert s.paper_epsilon_exponent == pytest.approx(1 / 3)


def test_schedule_matches_hand_computation_rough_regression_function():
    # r = 1/4: s = 1/2, alpha = n^(-2/4.5) = n^(-4/9), epsilon = n^(-2/9).
    # n = 4096 = 2^12: alpha = 2^(-16/3) = 1/(32 * 2^(1/3)) = 0.0248031...,
    # epsilon = 2^(-8/3) = 1/(4 * 2^(2/3)) = 0.1574901...
    s = kernel_ridge_schedule(4096, r=0.25, alpha_scale=2.0)
    assert s.alpha == pytest.approx(2 * 0.0248031, rel=1e-5)
    assert s.epsilon == pytest.approx(0.1574901, rel=1e-6)
    assert s.alpha_exponent == pytest.approx(4 / 9)
    assert s.epsilon_exponent == pytest.approx(2 / 9)
    # the paper: alpha exponent 2/min(4, 3.5) = 4/7; epsilon min(1/3, 2/9) = 2/9
    assert s.paper_alpha_exponent == pytest.approx(4 / 7)
    assert s.paper_epsilon_exponent == pytest.approx(s.epsilon_exponent)


@pytest.mark.parametrize("r", [0.1, 0.3, 0.5, 2.0])
def test_schedule_balances_the_error_terms(r):
    n = 10**5
    s = kernel_ridge_schedule(n, r=r)
    smooth = min(2 * r, 1.0)
    privacy, approximation = s.epsilon, s.alpha**smooth
    noise = 1.0 / (s.alpha**3 * n**2 * s.epsilon**2)
    assert privacy == pytest.approx(approximation, rel=1e-9)
    assert privacy == pytest.approx(noise, rel=1e-9)
    assert privacy >= n**-0.5  # the sample term never dominates


@pytest.mark.parametrize(
    "kwargs", [{"n": 0}, {"n": 2.5}, {"n": 10, "r": 0}, {"n": 10, "alpha_scale": -1}]
)
def test_schedule_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        kernel_ridge_schedule(**kwargs)


# --------------------------------------------------------------------------
# Vector noise primitives (dpsklearn.noise) used by the model release
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-8), (10.0, 1e-3)]
)
def test_analytic_gaussian_sigma_is_the_smallest_private_sigma(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert analytic_gaussian_delta(sigma, epsilon) <= delta
    assert analytic_gaussian_delta(sigma * (1 - 1e-9), epsilon) > delta
    assert analytic_gaussian_sigma(epsilon, delta, 7.5) == pytest.approx(7.5 * sigma)

    # Independent check of Balle and Wang's formula: the hockey-stick
    # divergence E[(1 - e^(eps - L))_+] of the privacy loss L = (1 + 2Z) /
    # (2 sigma^2), Z ~ N(0, sigma^2), integrated numerically.
    def integrand(z):
        loss = (1 + 2 * z) / (2 * sigma**2)
        return -math.expm1(epsilon - loss) * stats.norm.pdf(z, scale=sigma)

    start = epsilon * sigma**2 - 0.5  # L > epsilon
    numeric, _ = integrate.quad(integrand, start, start + 40 * sigma, limit=500)
    assert numeric == pytest.approx(delta, rel=1e-6)


def test_analytic_gaussian_beats_the_classic_formula_where_it_holds():
    for epsilon in (0.05, 0.5, 0.99):
        classic = math.sqrt(2 * math.log(1.25 / 1e-5)) / epsilon
        assert analytic_gaussian_sigma(epsilon, 1e-5) < classic


def test_rounded_gaussian_and_grid_gaussian_are_integers_on_the_grid():
    rng = np.random.default_rng(0)
    noise = rounded_gaussian(4.0, size=200_000, rng=rng)
    assert noise.dtype == np.int64
    k = np.arange(-60, 61)
    mass = ndtr((k + 0.5) / 4.0) - ndtr((k - 0.5) / 4.0)
    exact = float(np.sum(k**2 * mass))
    # relative sd of the sample variance ~ sqrt(2/200000); 6 sd allowed
    assert abs(noise.var() / exact - 1) < 6 * math.sqrt(2 / 200_000)
    values = rng.normal(size=8)
    out, sigma = grid_gaussian(values, 1.0, 1.0, 1e-5, rng=rng, grid_step=0.125)
    np.testing.assert_array_equal(out / 0.125, np.round(out / 0.125))
    assert sigma == pytest.approx(
        0.125 * analytic_gaussian_sigma(1.0, 1e-5, l2_grid_units(1.0, 0.125, 8))
    )
    assert l2_grid_units(1.0, 0.125, 8) == pytest.approx(8 + math.sqrt(8))


def test_high_dimensional_laplace_norm_and_direction():
    """Norm ~ Gamma(d, scale); direction uniform (in R^3 a coordinate of the
    unit vector is uniform on [-1, 1], Archimedes). KS tests at level 1e-6."""
    rng = np.random.default_rng(1)
    z = high_dimensional_laplace(2.5, 3, size=20_000, rng=rng)
    norms = np.linalg.norm(z, axis=1)
    assert stats.kstest(norms, stats.gamma(3, scale=2.5).cdf).pvalue > 1e-6
    coordinate = z[:, 0] / norms
    assert stats.kstest(coordinate, stats.uniform(-1, 2).cdf).pvalue > 1e-6
    out, scale = grid_high_dimensional_laplace(
        np.zeros(6), 1.0, 2.0, rng=rng, grid_step=0.25
    )
    np.testing.assert_array_equal(out / 0.25, np.round(out / 0.25))
    assert scale == pytest.approx(0.25 * (4 + math.sqrt(6)) / 2.0)


# -- public feature bounds: the kernel's width assumes unit-variance columns ---
def _friedman(n, seed=0):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n, noise=1.0, random_state=seed)


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_feature_bounds_map_columns_as_public_constants_would():
    # Fitting with feature_bounds=(0, 1) is fitting on the columns mapped by
    # those public bounds to unit variance: the same model, the same answers.
    X, y = _friedman(3000)
    params = dict(y_bound=(0, 30), random_state=0, noise_random_state=3)
    inside = PrivateKernelRidge(kernel_params={"feature_bounds": (0, 1)}, **params)
    inside.fit(X[:2500], y[:2500])
    scaled = (np.clip(X, 0, 1) - 0.5) / 0.5 * np.sqrt(3.0)
    outside = PrivateKernelRidge(**params).fit(scaled[:2500], y[:2500])
    np.testing.assert_allclose(inside.predict(X[2500:]), outside.predict(scaled[2500:]))
    np.testing.assert_array_equal(inside.feature_bounds_[0], np.zeros(10))


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_feature_bounds_lift_the_default_width_on_unscaled_columns():
    # Friedman #1 as generated (columns in [0, 1], variance 1/12): the
    # default width 1 / n_features is too wide for them; the public bounds
    # put them at unit variance. 20,000 rows, epsilon 1, one noise draw.
    X, y = _friedman(22_000)
    scores = []
    for kernel_params in (None, {"feature_bounds": (0, 1)}):
        model = PrivateKernelRidge(
            kernel_params=kernel_params,
            y_bound=(0, 30),
            random_state=0,
            noise_random_state=0,
        ).fit(X[:20_000], y[:20_000])
        scores.append(model.score(X[20_000:], y[20_000:]))
    assert scores[1] > scores[0] + 0.03  # measured: 0.756 against 0.708


@pytest.mark.parametrize(
    "bounds, match",
    [((1, 0), "lo < hi"), (np.zeros((3, 10)), "shape"), ((0, np.inf), "finite")],
)
def test_bad_feature_bounds_are_refused_before_any_spend(bounds, match):
    X, y = _friedman(300)
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = PrivateKernelRidge(
        kernel_params={"feature_bounds": bounds}, y_bound=(0, 30), accountant=shared
    )
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)
    assert shared.events == []


def test_feature_bounds_need_dense_rows():
    X, y = _friedman(300)
    model = PrivateKernelRidge(
        kernel_params={"feature_bounds": (0, 1)},
        y_bound=(0, 30),
        mechanism="output_perturbation",
    )
    with pytest.raises(ValueError, match="dense rows"):
        model.fit(sp.csr_matrix(X), y)
