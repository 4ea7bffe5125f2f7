"""Tests for the regime guide (dpsklearn.planning): predicted answer rates and
accuracy against Monte Carlo runs of the real estimators."""

import copy
import math
import warnings

import numpy as np
import pytest
from _helpers import STUMP, fit_quietly
from scipy.special import expit

from dpsklearn import (
    BudgetExhaustedError,
    ConfidentGNMax,
    PrivacyAccountant,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import per_release_epsilon
from dpsklearn.exceptions import PrivacyLeakWarning
from dpsklearn.mechanisms._sparse_vector_tails import noise_quantiles, noise_survival
from dpsklearn.planning import (
    MarginHistogram,
    predict_regime,
    private_margin_histogram,
    public_vote_counts,
)


def _by(rows):
    return {(r["mechanism"], r["calibration"], r.get("max_answers")): r for r in rows}


# -- hand-checkable cases ----------------------------------------------------
def test_unanimous_votes_are_answered_by_the_right_mechanisms():
    # 20,000 unanimous teachers: dist 9,999 is far above every threshold w
    # (2,104 for laplace, 6,962 for gaussian at epsilon 1, T = 100 and 2,000
    # queries; the paper's calibrations, 2,578 to 6,645, are references in
    # the tests, not rows of the guide).
    counts = np.tile([[20000, 0]], (10, 1))
    rows = _by(
        predict_regime(
            counts, epsilon=1.0, delta=1e-5, max_queries=2000, max_answers=2000
        )
    )
    assert {name for mech, name, _ in rows if mech == "sparse_vector"} == {
        "laplace",
        "gaussian",
    }
    for name in ("laplace", "gaussian"):
        row = rows[("sparse_vector", name, None)]
        assert row["answered"] > 0.999
        assert row["accuracy_answered"] == 1.0
    assert rows[("private_prediction", "zcdp", None)]["accuracy_answered"] > 0.999
    assert rows[("confident_gnmax", "gdp", 2000)]["answered"] > 0.999
    assert rows[("gnmax", "gdp", None)]["accuracy_answered"] > 0.999


def test_tied_votes_are_not_answered_by_the_stability_test():
    counts = np.tile([[500, 500]], (10, 1))
    rows = _by(
        predict_regime(
            counts,
            epsilon=1.0,
            delta=1e-5,
            max_queries=1000,
            mechanisms=("sparse_vector", "private_prediction"),
        )
    )
    for name in ("laplace", "gaussian"):
        assert rows[("sparse_vector", name, None)]["answered"] < 1e-6
    # The exponential mechanism on a tie is a fair coin.
    assert rows[("private_prediction", "zcdp", None)]["accuracy_answered"] == (
        pytest.approx(0.5)
    )


def test_binary_exponential_mechanism_matches_theorem_1():
    # P(1) = e^(eps nu / 2) / (1 + e^(eps nu / 2)), nu = 2 count_1 - k.
    counts = np.array([[40, 60], [10, 90]])
    y_true = np.array([1, 1])
    rows = _by(
        predict_regime(
            counts,
            epsilon=2.0,
            delta=1e-5,
            max_queries=20,
            y_true=y_true,
            mechanisms=("private_prediction",),
        )
    )
    for name in ("basic", "zcdp", "rdp"):
        eps_q, _ = per_release_epsilon(2.0, 1e-5, 20, calibration=name)
        expected = np.mean(expit(eps_q * np.array([20, 80]) / 2))
        row = rows[("private_prediction", name, None)]
        assert row["accuracy_answered"] == pytest.approx(expected, rel=1e-12)
        assert row["accuracy_of"] == "truth"


def test_gnmax_binary_is_the_exact_discrete_gaussian_win():
    from scipy.stats import norm

    counts = np.array([[70, 30]])
    row = predict_regime(
        counts, epsilon=1.0, delta=1e-5, max_queries=10, mechanisms=("gnmax",)
    )[0]
    sigma = row["sigma_argmax"]
    # Independent computation: the class-0 count wins when Z1 - Z0 <= 40
    # (ties go to the lower index), Z0, Z1 i.i.d. discrete Gaussians.
    support = np.arange(-int(20 * sigma), int(20 * sigma) + 1)
    pmf = np.exp(-(support**2) / (2 * sigma**2))
    pmf /= pmf.sum()
    diff = np.convolve(pmf, pmf)  # Z1 - Z0 on 2 * support
    offsets = np.arange(-2 * support[-1], 2 * support[-1] + 1)
    expected = diff[offsets <= 40].sum()
    assert row["accuracy_answered"] == pytest.approx(expected, abs=1e-9)
    # ... within a few thousandths of the continuous normal tail.
    assert expected == pytest.approx(norm.cdf(40 / (math.sqrt(2) * sigma)), abs=5e-3)


def test_confident_gnmax_answer_limit_caps_the_answered_fraction():
    counts = np.tile([[1000, 0]], (5, 1))
    rows = predict_regime(
        counts,
        epsilon=4.0,
        delta=1e-5,
        max_queries=400,
        max_answers=[400, 100],
        mechanisms=("confident_gnmax",),
    )
    by_limit = {r["max_answers"]: r for r in rows}
    assert by_limit[100]["answered"] == pytest.approx(0.25, abs=1e-3)
    assert by_limit[400]["answered"] > 0.9


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_noise_survival_and_quantile_helpers(noise):
    from dpsklearn.noise import discrete_gaussian, discrete_laplace

    scale = 3.7
    z = np.arange(-200, 201)
    if noise == "laplace":
        b = math.exp(-1 / scale)
        pmf = (1 - b) / (1 + b) * b ** np.abs(z)
        sampler = discrete_laplace
    else:
        pmf = np.exp(-(z**2) / (2 * scale**2))
        pmf /= pmf.sum()
        sampler = discrete_gaussian
    for n in (-6, -1, 0, 1, 5):
        got = noise_survival(np.array([n]), scale, noise)[0]
        assert got == pytest.approx(pmf[z >= n].sum(), rel=1e-12)
    draws = sampler(scale, size=100_000, rng=np.random.default_rng(0))
    nodes = noise_quantiles(scale, noise, 999)
    # 100,000 draws: each sample quantile is within one integer step of the
    # true one except with probability far below 1e-6.
    assert np.quantile(nodes, [0.05, 0.5, 0.95]) == pytest.approx(
        np.quantile(draws, [0.05, 0.5, 0.95]), abs=1
    )


def test_inadmissible_calibration_is_listed_without_figures():
    # gaussian's log(max_queries) term alone exceeds a tiny budget.
    counts = np.tile([[60, 40]], (3, 1))
    rows = _by(
        predict_regime(
            counts,
            epsilon=0.05,
            delta=1e-5,
            max_queries=10**6,
            max_unstable=1000,
            mechanisms=("sparse_vector",),
        )
    )
    gaussian = rows[("sparse_vector", "gaussian", None)]
    assert gaussian["admissible"] is False and gaussian["answered"] is None
    assert rows[("sparse_vector", "laplace", None)]["admissible"] is True


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"counts": [[1, 2], [2, 2]]}, "same number of teachers"),
        ({"counts": [[1.5, 2]]}, "integer"),
        ({"counts": [1, 2]}, "2-D"),
        ({"epsilon": 0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"max_queries": 0}, "max_queries"),
        ({"max_answers": 11}, "max_answers"),
        ({"mechanisms": ("laplace",)}, "mechanisms"),
        ({"y_true": [2]}, "y_true"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    args = {"counts": [[3, 1]], "epsilon": 1.0, "delta": 1e-5, "max_queries": 10}
    args.update(kwargs)
    counts = args.pop("counts")
    with pytest.raises(ValueError, match=match):
        predict_regime(counts, **args)


# -- Monte Carlo against the real estimators ----------------------------------
@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(3000, 1))
    y = ((X[:, 0] + rng.normal(0, 0.7, size=3000)) > 0).astype(int)
    X_query = np.linspace(-2, 2, 200)[:, None]
    y_query = (X_query[:, 0] > 0).astype(int)
    return X, y, X_query, y_query


def _fit(model, X, y):
    return fit_quietly(model, X, y, UserWarning)


def _monte_carlo(model, X_query, y_query, repeats, seed=0):
    """Answered fraction and accuracy of ``repeats`` runs of the real estimator.

    Each run is a copy of the fitted model (copies reseed their noise)
    asked an i.i.d. stream of ``len(X_query)`` rows drawn from ``X_query``:
    the query model of :func:`predict_regime`.
    """
    rng = np.random.default_rng(seed)
    answered, correct = [], []
    for _ in range(repeats):
        rows = rng.integers(len(y_query), size=len(y_query))
        # The mechanism's own answers (the student's rows count as unanswered).
        labels, source = copy.deepcopy(model).predict(
            X_query[rows], return_source=True
        )
        abstained = source != "private"
        answered.append(~abstained)
        correct.append((labels == y_query[rows]) & ~abstained)
    answered, correct = np.array(answered), np.array(correct)
    return answered.mean(), correct.sum() / answered.sum()


def _predicted(model, X_query, y_query, **kwargs):
    counts = model._vote_counts(X_query)
    return _by(predict_regime(counts, y_true=y_query, **kwargs))


TEACHER = STUMP


def test_private_prediction_matches_monte_carlo(synthetic):
    X, y, X_query, y_query = synthetic
    model = _fit(
        PrivatePredictionClassifier(
            TEACHER,
            n_estimators=60,
            epsilon=2.0,
            delta=1e-5,
            max_queries=200,
            classes=[0, 1],
            random_state=0,
        ),
        X,
        y,
    )
    row = _predicted(
        model,
        X_query,
        y_query,
        epsilon=2.0,
        delta=1e-5,
        max_queries=200,
        mechanisms=("private_prediction",),
    )[("private_prediction", model.calibration_, None)]
    # predict(return_abstained=True) is not part of PrivatePrediction's API in
    # every version: compare plain predictions.
    accuracy = np.mean(
        [np.mean(copy.deepcopy(model).predict(X_query) == y_query) for _ in range(20)]
    )
    assert 0.6 < row["accuracy_answered"] < 0.95  # a regime with noise to see
    assert accuracy == pytest.approx(row["accuracy_answered"], abs=0.02)


def test_confident_gnmax_matches_monte_carlo(synthetic):
    X, y, X_query, y_query = synthetic
    model = _fit(
        SubsampleAggregateClassifier(
            TEACHER,
            n_estimators=100,
            epsilon=8.0,
            delta=1e-5,
            max_queries=200,
            mechanism=ConfidentGNMax(max_answers=150),
            classes=[0, 1],
            random_state=0,
        ),
        X,
        y,
    )
    row = _predicted(
        model,
        X_query,
        y_query,
        epsilon=8.0,
        delta=1e-5,
        max_queries=200,
        max_answers=150,
        mechanisms=("confident_gnmax",),
    )[("confident_gnmax", model.calibration_, 150)]
    answered, accuracy = _monte_carlo(model, X_query, y_query, 25)
    assert 0.2 < row["answered"] < 0.75
    assert answered == pytest.approx(row["answered"], abs=0.03)
    assert accuracy == pytest.approx(row["accuracy_answered"], abs=0.03)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_sparse_vector_matches_monte_carlo(synthetic, noise):
    X, y, X_query, y_query = synthetic
    params = dict(epsilon=30.0, delta=1e-3, max_queries=200)
    model = _fit(
        SubsampleAggregateClassifier(
            TEACHER,
            n_estimators=200,
            mechanism=SparseVector(max_unstable=20, fallback="abstain", noise=noise),
            classes=[0, 1],
            random_state=0,
            **params,
        ),
        X,
        y,
    )
    assert model.calibration_ == noise
    row = _predicted(
        model,
        X_query,
        y_query,
        max_unstable=20,
        mechanisms=("sparse_vector",),
        **params,
    )[("sparse_vector", noise, None)]
    answered, accuracy = _monte_carlo(model, X_query, y_query, 30)
    assert 0.5 < row["answered"] < 0.95  # halts part-way through the stream
    # one run's answered fraction has a standard deviation of about 0.1
    assert answered == pytest.approx(row["answered"], abs=0.05)
    assert accuracy == pytest.approx(row["accuracy_answered"], abs=0.03)


# -- where margins come from -------------------------------------------------
def test_public_vote_counts_shapes_and_labels(synthetic):
    X, y, _, _ = synthetic
    counts, y_true = public_vote_counts(TEACHER, X, y, n_estimators=20, random_state=0)
    assert counts.shape == (750, 2) and np.all(counts.sum(axis=1) == 20)
    assert set(np.unique(y_true)) <= {0, 1}
    rows = predict_regime(
        counts,
        y_true=y_true,
        epsilon=1.0,
        delta=1e-5,
        max_queries=100,
        mechanisms=("gnmax",),
    )
    assert rows[0]["accuracy_of"] == "truth"


def test_public_vote_counts_names_a_random_state_object(synthetic):
    # The seed is used twice (query split, shards): only an integer does that.
    X, y, _, _ = synthetic
    with pytest.raises(ValueError, match="random_state"):
        public_vote_counts(
            TEACHER, X, y, n_estimators=5, random_state=np.random.RandomState(0)
        )


def test_private_margin_histogram_charges_and_releases(synthetic):
    X, y, X_query, _ = synthetic
    model = _fit(
        SubsampleAggregateClassifier(
            TEACHER, n_estimators=150, classes=[0, 1], random_state=0
        ),
        X,
        y,
    )
    budget = PrivacyAccountant(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        hist = private_margin_histogram(
            model,
            X_query,
            epsilon=0.5,
            accountant=budget,
            n_bins=6,
            noise_random_state=0,
        )
    assert isinstance(hist, MarginHistogram)
    assert budget.spent_basic[0] == pytest.approx(0.5)
    assert hist.noise_scale == pytest.approx(4 * 5 / 150 / 0.5)
    assert hist.weights.sum() == pytest.approx(1.0) and np.all(hist.weights >= 0)
    assert hist.gaps[0] == 0 and hist.gaps[-1] == 150
    # Against the noiseless gaps: the noise is about 0.27 per bin.
    counts = model._vote_counts(X_query)
    gap = np.abs(counts[:, 0] - counts[:, 1])
    mean_gap = np.sum(hist.weights * hist.gaps)
    assert mean_gap == pytest.approx(gap.mean(), abs=0.35 * 150)
    rows = predict_regime(
        hist,
        epsilon=1.0,
        delta=1e-5,
        max_queries=100,
        mechanisms=("private_prediction",),
    )
    assert rows[0]["accuracy_of"] == "majority"
    # A budget that is short raises and releases nothing.
    with pytest.raises(BudgetExhaustedError):
        private_margin_histogram(model, X_query, epsilon=0.6, accountant=budget)
    assert budget.spent_basic[0] == pytest.approx(0.5)


def test_private_margin_histogram_sensitivity_holds_for_one_vote_moves():
    # Linear interpolation: moving every gap by 2 votes moves the mean soft
    # histogram by at most 4 (n_bins - 1) / k in L1.
    import dpsklearn.planning._regime  # noqa: F401  (module importable)

    k, n_bins = 50, 6
    rng = np.random.default_rng(0)
    gaps = rng.integers(0, k - 1, size=500)

    def soft(g):
        pos = g / k * (n_bins - 1)
        left = np.minimum(np.floor(pos).astype(int), n_bins - 2)
        frac = pos - left
        h = np.bincount(left, 1 - frac, n_bins) + np.bincount(left + 1, frac, n_bins)
        return h / len(g)

    for shift in (-2, -1, 1, 2):
        moved = np.clip(gaps + shift, 0, k)
        assert np.abs(soft(moved) - soft(gaps)).sum() <= 4 * (n_bins - 1) / k + 1e-12


def test_private_margin_histogram_needs_an_accountant(synthetic):
    X, y, X_query, _ = synthetic
    model = _fit(
        SubsampleAggregateClassifier(
            TEACHER, n_estimators=10, classes=[0, 1], random_state=0
        ),
        X,
        y,
    )
    with pytest.raises(ValueError, match="accountant"):
        private_margin_histogram(model, X_query, epsilon=0.5, accountant=None)
