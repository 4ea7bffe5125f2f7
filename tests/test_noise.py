"""Noise primitives (docs/design.rst, "Noise primitives").

Statistical tests use fixed seeds, so they are deterministic; the stated
failure probabilities are those of a correct sampler under a random seed.
Each goodness-of-fit test also shows its power: the same test rejects a
plausible wrong distribution on the same samples.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpsklearn.exceptions import PrivacyLeakWarning
from dpsklearn.noise import (
    DiscreteLaplaceStream,
    default_grid_step,
    discrete_laplace,
    exponential_mechanism,
    grid_laplace,
    grid_units,
    make_noise_generators,
)

# A correct sampler fails one goodness-of-fit test with this probability.
ALPHA = 1e-4


def _dlap_pmf(z, scale):
    a = math.exp(-1.0 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(z)


def _dlap_chisquare_pvalue(samples, scale, max_abs):
    """Chi-square of integer samples against DLap(scale): bins -K..K and two tails."""
    a = math.exp(-1.0 / scale)
    support = np.arange(-max_abs, max_abs + 1)
    probs = _dlap_pmf(support, scale)
    tail = a ** (max_abs + 1) / (1 + a)  # P(Z > K) = P(Z < -K)
    expected = np.concatenate([[tail], probs, [tail]]) * samples.size
    assert math.isclose(expected.sum(), samples.size, rel_tol=1e-9)
    assert expected.min() >= 5  # the chi-square approximation holds
    observed = np.concatenate(
        [
            [np.sum(samples < -max_abs)],
            np.bincount(
                samples[np.abs(samples) <= max_abs] + max_abs, minlength=support.size
            ),
            [np.sum(samples > max_abs)],
        ]
    )
    return stats.chisquare(observed, expected).pvalue


# -- discrete Laplace ---------------------------------------------------------


@pytest.mark.parametrize("scale, max_abs", [(0.5, 4), (1.0, 7), (3.0, 20)])
def test_discrete_laplace_pmf(scale, max_abs):
    rng = np.random.default_rng(12345)
    samples = discrete_laplace(scale, size=200_000, rng=rng)
    assert samples.dtype == np.int64 and samples.shape == (200_000,)
    assert _dlap_chisquare_pvalue(samples, scale, max_abs) > ALPHA
    # Power: the same samples reject a scale 10% off.
    assert _dlap_chisquare_pvalue(samples, scale * 1.1, max_abs) < ALPHA


@pytest.mark.parametrize("scale", [0.3, 2.0, 10.0])
def test_discrete_laplace_moments(scale):
    """Mean 0 and variance 2a/(1-a)^2, within 5 standard errors (p < 1e-6 each)."""
    a = math.exp(-1.0 / scale)
    variance = 2 * a / (1 - a) ** 2
    fourth = 2 * a * (1 + 10 * a + a * a) / (1 - a) ** 4  # E[Z^4]
    n = 200_000
    samples = discrete_laplace(scale, size=n, rng=np.random.default_rng(7))
    assert abs(samples.mean()) < 5 * math.sqrt(variance / n)
    var_se = math.sqrt((fourth - variance**2) / n)
    assert abs(np.mean(samples.astype(float) ** 2) - variance) < 5 * var_se


def test_discrete_laplace_shapes_and_edge_cases():
    rng = np.random.default_rng(0)
    scalar = discrete_laplace(2.0, rng=rng)
    assert isinstance(scalar, np.integer)
    assert discrete_laplace(2.0, size=(3, 4), rng=rng).shape == (3, 4)
    # A scale so small that exp(-1/scale) underflows: the noise is 0.
    assert (discrete_laplace(1e-4, size=100, rng=rng) == 0).all()
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="scale"):
            discrete_laplace(bad, size=3, rng=rng)


def test_discrete_laplace_draws_from_the_given_generator():
    a = discrete_laplace(3.0, size=50, rng=np.random.default_rng(1))
    b = discrete_laplace(3.0, size=50, rng=np.random.default_rng(1))
    c = discrete_laplace(3.0, size=50, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# -- grid Laplace ---------------------------------------------------------------


def _scale_from_mean_abs(mean_abs):
    """Invert E|Z| = 2a / (1 - a^2) for DLap: a = (sqrt(1 + m^2) - 1) / m."""
    a = (math.sqrt(1 + mean_abs**2) - 1) / mean_abs
    return -1.0 / math.log(a)


@pytest.mark.parametrize(
    "sensitivity, grid_step, n_coordinates, epsilon",
    [
        (1.0, 0.25, 1, 2.0),  # floor(4) + 1 = 5 units
        (1.0, 0.3, 1, 2.0),  # floor(3.33) + 1 = 4 units: the floor matters
        (2.0, 0.5, 3, 1.0),  # vector: floor(4) + 3 = 7 units
        (0.7, 0.125, 4, 3.0),  # floor(5.6) + 4 = 9 units
        (1.0, None, 1, 200.0),  # default step 2^-10: 1025 units
    ],
)
def test_grid_laplace_grid_and_scale(sensitivity, grid_step, n_coordinates, epsilon):
    g = default_grid_step(sensitivity) if grid_step is None else grid_step
    units = math.floor(sensitivity / g) + n_coordinates
    assert grid_units(sensitivity, g, n_coordinates) == units
    rng = np.random.default_rng(99)
    n_rows = 120_000 // n_coordinates
    shape = (n_rows,) if n_coordinates == 1 else (n_rows, n_coordinates)
    values = rng.uniform(-5, 5, size=shape)
    out = grid_laplace(
        values,
        sensitivity,
        epsilon,
        rng=rng,
        grid_step=grid_step,
        n_coordinates=n_coordinates,
    )
    assert out.shape == values.shape and out.dtype == np.float64
    # On the grid: exactly for a power-of-two step, up to rounding otherwise.
    in_units = out / g
    if math.log2(g).is_integer():
        np.testing.assert_array_equal(in_units, np.rint(in_units))
    else:
        np.testing.assert_allclose(in_units, np.rint(in_units), rtol=0, atol=1e-9)
    noise = (np.rint(in_units) - np.rint(values / g)).ravel()
    # The noise in grid units has scale units / epsilon: estimated from E|Z|
    # to within 2% (about 10 standard errors at 120,000 draws). For the small
    # unit counts the nearest wrong count (units - 1, e.g. a forgotten
    # rounding unit) is at least 11% away and is rejected.
    expected = units / epsilon
    estimate = _scale_from_mean_abs(np.mean(np.abs(noise)))
    assert abs(estimate / expected - 1) < 0.02
    if units <= 9:
        assert abs(estimate / ((units - 1) / epsilon) - 1) > 0.05


def test_grid_laplace_bounds_clip():
    rng = np.random.default_rng(0)
    out = grid_laplace(
        np.full(1000, 0.5), 1.0, 0.05, rng=rng, grid_step=0.25, bounds=(0.0, 1.0)
    )
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert (out == 0.0).any() and (out == 1.0).any()  # the noise was large


def test_default_grid_step_is_a_power_of_two_near_delta_over_1024():
    for delta in (1e-3, 0.5, 1.0, 3.0, 1000.0):
        g = default_grid_step(delta)
        assert math.log2(g).is_integer()
        assert 1 / math.sqrt(2) <= (delta / 1024) / g <= math.sqrt(2)


# -- exponential mechanism ------------------------------------------------------


def _em_frequencies(utilities, epsilon, sensitivity, n, seed):
    rows = np.tile(np.asarray(utilities, dtype=float), (n, 1))
    picks = exponential_mechanism(
        rows, epsilon, sensitivity, rng=np.random.default_rng(seed)
    )
    assert picks.shape == (n,)
    return np.bincount(picks, minlength=len(utilities))


def _em_probabilities(utilities, factor):
    logits = factor * np.asarray(utilities, dtype=float)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


@pytest.mark.parametrize(
    "utilities, epsilon, sensitivity",
    [([0, 1, 2, 3, 5], 1.0, 1.0), ([0, 2, 4], 1.5, 2.0), ([3, 3, 1, 0], 0.8, 1.0)],
)
def test_exponential_mechanism_frequencies(utilities, epsilon, sensitivity):
    n = 100_000
    counts = _em_frequencies(utilities, epsilon, sensitivity, n, seed=5)
    right = _em_probabilities(utilities, epsilon / (2 * sensitivity)) * n
    assert stats.chisquare(counts, right).pvalue > ALPHA
    # Power: the soft-majority rule as printed in Dwork and Feldman (2018),
    # exp(epsilon u / Delta), is rejected (docs/corrections.rst).
    wrong = _em_probabilities(utilities, epsilon / sensitivity) * n
    assert stats.chisquare(counts, wrong).pvalue < ALPHA


def test_exponential_mechanism_no_overflow_for_huge_utilities():
    n = 50_000
    utilities = [1e6, 1e6 - 1, 0.0, -1e6]
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        counts = _em_frequencies(utilities, 1.0, 1.0, n, seed=11)
        # 1e6 apart at epsilon 1e3: the top one, always.
        top = exponential_mechanism([0.0, 1e6], 1e3, rng=np.random.default_rng(0))
        assert int(top) == 1
        low = exponential_mechanism(
            np.array([[-1e6, 0.0, -2e6]] * 100), 50.0, rng=np.random.default_rng(0)
        )
        assert (low == 1).all()
    assert counts[2] == 0 and counts[3] == 0
    # The top two are 1 apart: P = e^(1/2) / (1 + e^(1/2)) = 0.6225.
    p = math.exp(0.5) / (1 + math.exp(0.5))
    assert stats.binomtest(int(counts[0]), n, p).pvalue > ALPHA


def test_exponential_mechanism_shapes():
    rng = np.random.default_rng(0)
    assert np.ndim(exponential_mechanism([1, 2, 3], 1.0, rng=rng)) == 0
    assert exponential_mechanism(np.zeros((7, 3)), 1.0, rng=rng).shape == (7,)
    with pytest.raises(ValueError, match="epsilon"):
        exponential_mechanism([1, 2], 0.0, rng=rng)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential_mechanism([1, 2], 1.0, -1.0, rng=rng)


# -- DiscreteLaplaceStream ----------------------------------------------------


@st.composite
def call_patterns(draw):
    """Requests (start, stop) with non-decreasing starts and no skipped index."""
    requests = []
    reached = 0  # one past the highest index requested so far
    start = 0
    for _ in range(draw(st.integers(1, 12))):
        start = draw(st.integers(start, reached))
        stop = start + draw(st.integers(0, 100))
        requests.append((start, stop))
        reached = max(reached, stop)
    return requests


@settings(max_examples=150, deadline=None)
@given(
    pattern=call_patterns(),
    chunk_size=st.integers(1, 64),
    seed=st.integers(0, 2**32 - 1),
)
def test_stream_draw_depends_only_on_the_index(pattern, chunk_size, seed):
    reached = max(stop for _, stop in pattern)
    one_block = DiscreteLaplaceStream(
        2.5, np.random.default_rng(seed), chunk_size=chunk_size
    )(0, reached)
    # One index at a time, and the given pattern: both see the same draws.
    single = DiscreteLaplaceStream(
        2.5, np.random.default_rng(seed), chunk_size=chunk_size
    )
    stepwise = np.array([single(i, i + 1)[0] for i in range(reached)], dtype=np.int64)
    np.testing.assert_array_equal(stepwise, one_block)
    stream = DiscreteLaplaceStream(
        2.5, np.random.default_rng(seed), chunk_size=chunk_size
    )
    for start, stop in pattern:
        got = stream(start, stop)
        assert got.dtype == np.int64 and got.shape == (stop - start,)
        np.testing.assert_array_equal(got, one_block[start:stop])


def test_stream_repeated_requests_return_the_same_draws():
    stream = DiscreteLaplaceStream(3.0, np.random.default_rng(0), chunk_size=16)
    first = stream(0, 40).copy()
    np.testing.assert_array_equal(stream(5, 40), first[5:])
    np.testing.assert_array_equal(stream(5, 60)[:35], first[5:])


def test_stream_only_moves_forward():
    stream = DiscreteLaplaceStream(3.0, np.random.default_rng(0), chunk_size=8)
    stream(0, 10)
    stream(9, 20)
    with pytest.raises(ValueError, match="forward"):
        stream(3, 5)


def test_stream_distribution():
    stream = DiscreteLaplaceStream(1.0, np.random.default_rng(8), chunk_size=1000)
    samples = np.concatenate([stream(i, i + 997) for i in range(0, 99_700, 997)])
    assert _dlap_chisquare_pvalue(samples, 1.0, 7) > ALPHA


@pytest.mark.parametrize(
    "make_copy",
    [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy],
    ids=["pickle", "deepcopy"],
)
def test_stream_copy_reseeds(make_copy):
    original = DiscreteLaplaceStream(3.0, np.random.default_rng(0))
    original(0, 10)  # a served model: some draws used, a chunk buffered
    clone = make_copy(original)
    assert clone.scale == 3.0 and clone.reseed_on_copy
    future_copy = clone(10, 2010)
    future_original = original(10, 2010)
    # A replay would match all 2,000 draws; independent streams almost never
    # agree on more than a third of them (DLap(3) collides w.p. about 0.16).
    assert np.mean(future_copy == future_original) < 1 / 3
    # Two copies do not replay each other either.
    other = make_copy(original)
    assert np.mean(other(2010, 4010) == make_copy(original)(2010, 4010)) < 1 / 3


@pytest.mark.parametrize(
    "make_copy",
    [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy],
    ids=["pickle", "deepcopy"],
)
def test_stream_copy_replays_without_reseed(make_copy):
    original = DiscreteLaplaceStream(
        3.0, np.random.default_rng(0), reseed_on_copy=False
    )
    original(0, 10)
    clone = make_copy(original)
    np.testing.assert_array_equal(clone(10, 9000), original(10, 9000))


# -- generators -----------------------------------------------------------------


def test_make_noise_generators_seeded_warns_and_replays():
    with pytest.warns(PrivacyLeakWarning, match="noise_random_state"):
        gens, reseed = make_noise_generators(3, 2)
    assert reseed is False and len(gens) == 2
    with pytest.warns(PrivacyLeakWarning):
        again, _ = make_noise_generators(3, 2)
    for a, b in zip(gens, again, strict=True):
        np.testing.assert_array_equal(
            a.integers(0, 2**62, 20), b.integers(0, 2**62, 20)
        )


def test_make_noise_generators_streams_differ():
    with pytest.warns(PrivacyLeakWarning):
        gens, _ = make_noise_generators(3, 3)
    draws = [g.integers(0, 2**62, 20) for g in gens]
    assert not np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[1], draws[2])


def test_make_noise_generators_unseeded_is_fresh_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (a,), reseed_a = make_noise_generators(None, 1)
        (b,), reseed_b = make_noise_generators(None, 1)
    assert reseed_a is True and reseed_b is True
    # Two fits draw different noise: equal 20 x 62-bit draws means a replay.
    assert not np.array_equal(a.integers(0, 2**62, 20), b.integers(0, 2**62, 20))
    noise_a = discrete_laplace(3.0, size=1000, rng=a)
    noise_b = discrete_laplace(3.0, size=1000, rng=b)
    assert np.mean(noise_a == noise_b) < 1 / 3


@pytest.mark.parametrize("bad", [1.5, "0", True, np.random.default_rng(0)])
def test_make_noise_generators_rejects_other_types(bad):
    with pytest.raises(TypeError, match="noise_random_state"):
        make_noise_generators(bad, 1)
