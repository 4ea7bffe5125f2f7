"""The vectorised sparse vector engine against the sequential reference.

The engine is described in docs/design.rst, "The sparse vector stability test".

Both consume the same injected noise (``tests/_reference.py``: query noise by
query index, threshold noise by draw index), so every decision, counter and
the noisy threshold must agree exactly, across several ``run`` calls per case.
"""

from __future__ import annotations

import numpy as np
import pytest
from _reference import ArrayNoise, ReferenceSparseVector
from hypothesis import event, example, given, seed, settings
from hypothesis import strategies as st

from dpsklearn.mechanisms import SparseVectorEngine
from dpsklearn.mechanisms._sparse_vector import _INITIAL_WINDOW
from dpsklearn.noise import DiscreteLaplaceStream


def _pair(threshold, cutoff, query_values, threshold_values):
    """An engine and a reference, each with its own callables over the same arrays."""
    engine = SparseVectorEngine(
        threshold=threshold,
        noise_scale=1.0,
        cutoff=cutoff,
        query_noise=ArrayNoise(query_values),
        threshold_noise=ArrayNoise(threshold_values),
    )
    reference = ReferenceSparseVector(
        threshold, cutoff, ArrayNoise(query_values), ArrayNoise(threshold_values)
    )
    return engine, reference


def _assert_same(engine, reference, result, expected):
    passed, n_processed = result
    ref_passed, ref_n = expected
    assert n_processed == ref_n
    assert passed.dtype == bool and passed.shape == (ref_n,)
    np.testing.assert_array_equal(passed, ref_passed)
    assert engine.abstention_count == reference.abstention_count
    assert engine.n_queries == reference.n_queries
    assert engine.n_threshold_draws == reference.n_threshold_draws
    assert engine.halted == reference.halted
    assert engine.get_state()["noisy_threshold"] == reference.noisy_threshold


def _make_scores(rng, n, base, width, fail_rate):
    """Scores near ``base``: sure passes, and a ``fail_rate`` share that may fail.

    With noise in ``[-width, width]`` and ``w <= base + 1/2``, a score of at
    least ``base + 2 width + 1`` always passes; the others straddle the
    threshold, so they fail, pass or tie with the noisy threshold.
    """
    hard = rng.random(n) < fail_rate
    easy_scores = base + 2 * width + 1 + rng.integers(0, 3, size=n)
    hard_scores = base + rng.integers(-2 * width - 2, 2 * width + 1, size=n)
    return np.where(hard, hard_scores, easy_scores).astype(np.int64)


_LENGTHS = {"empty": (0, 0), "tiny": (1, 12), "medium": (0, 300), "long": (250, 2000)}


@st.composite
def engine_cases(draw):
    cutoff = draw(st.integers(1, 8))
    threshold = draw(st.integers(-6, 24)) / 2  # integers and halves
    width = draw(st.integers(0, 4))  # noise in [-width, width]: ties are common
    fail_rate = draw(st.sampled_from([0.0, 0.0005, 0.002, 0.01, 0.05, 0.3, 1.0]))
    # Batch kinds; "long" batches outgrow the 256-query first galloping window.
    kinds = draw(st.lists(st.sampled_from(sorted(_LENGTHS)), min_size=1, max_size=4))
    noise_seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(noise_seed)
    # Log-uniform within each kind: long batches reach 2000, but cheaply.
    lengths = [
        int(np.exp(rng.uniform(np.log(lo + 1), np.log(hi + 2)))) - 1
        for lo, hi in map(_LENGTHS.get, kinds)
    ]
    return cutoff, threshold, width, fail_rate, lengths, noise_seed


@seed(20240615)
@settings(max_examples=1000, deadline=None)
@given(engine_cases())
@example((1, 0.0, 0, 1.0, [0, 5, 0], 0))  # empty batches around an immediate halt
@example((3, 2.0, 1, 0.002, [2000, 2000, 10], 1))  # halts inside long batches
@example((8, 5.5, 2, 0.0, [1999, 0, 1], 2))  # no failure at all
def test_engine_matches_sequential_reference(case):
    cutoff, threshold, width, fail_rate, lengths, noise_seed = case
    rng = np.random.default_rng([noise_seed, 1])
    total = sum(lengths)
    query_values = rng.integers(-width, width + 1, size=total)
    threshold_values = rng.integers(-width, width + 1, size=cutoff)
    engine, reference = _pair(threshold, cutoff, query_values, threshold_values)
    _assert_same(
        engine,
        reference,
        (np.zeros(0, dtype=bool), 0),
        (np.zeros(0, dtype=bool), 0),
    )
    base = int(np.floor(threshold))
    for length in lengths:
        scores = _make_scores(rng, length, base, width, fail_rate)
        expected = reference.run(scores)
        result = engine.run(scores)
        _assert_same(engine, reference, result, expected)
        if length == 0:
            event("empty batch")
        elif 0 < result[1] < length:
            event("halt inside a batch" + (" of > 256" if length > 256 else ""))
        if result[1] > 2 * 256 and result[0][256:].all():
            event("galloping past the first window")
    # The (T+1)-th threshold draw would have raised IndexError in ArrayNoise.
    assert engine.n_threshold_draws <= cutoff


@pytest.mark.parametrize(
    "failure_at",
    [
        0,
        1,
        _INITIAL_WINDOW - 1,
        _INITIAL_WINDOW,
        _INITIAL_WINDOW + 1,
        767,
        768,
        1791,
        1792,
        3839,
        3840,
        3999,
    ],
)
@pytest.mark.parametrize("cutoff", [1, 2])
def test_failures_at_galloping_window_edges(failure_at, cutoff):
    """A failure exactly at (or beside) a galloping window boundary."""
    m = 4000
    scores = np.full(m, 100, dtype=np.int64)
    scores[failure_at] = 0
    if cutoff == 2:  # a second failure later in the same batch
        scores[min(m - 1, failure_at + 300)] = 0
    query_values = np.zeros(2 * m, dtype=np.int64)
    threshold_values = np.zeros(cutoff, dtype=np.int64)
    engine, reference = _pair(50.0, cutoff, query_values, threshold_values)
    for batch in (scores, scores):
        _assert_same(engine, reference, engine.run(batch), reference.run(batch))


def test_halt_does_not_draw_noise_it_never_uses():
    """A failure at the first query of a huge batch with T = 1 stops the draws."""
    m = 200_000
    query = ArrayNoise(np.zeros(m, dtype=np.int64))
    threshold = ArrayNoise(np.zeros(1, dtype=np.int64))
    engine = SparseVectorEngine(10.0, 1.0, 1, query, threshold)
    scores = np.full(m, 100, dtype=np.int64)
    scores[0] = 0
    passed, n_processed = engine.run(scores)
    assert n_processed == 1 and not passed[0] and engine.halted
    assert query.max_stop <= _INITIAL_WINDOW
    assert threshold.max_stop == 1  # no threshold draw after the halt
    # A halted engine tests nothing more and draws nothing more.
    passed, n_processed = engine.run(scores)
    assert n_processed == 0 and passed.shape == (0,)
    assert query.max_stop <= _INITIAL_WINDOW and threshold.max_stop == 1


def test_engine_matches_reference_on_discrete_laplace_streams():
    """With the package's own streams (same seeds) both paths see the same noise.

    The batch is long enough that the galloping windows outgrow the streams'
    4096-draw chunks, so this also checks that a draw does not depend on how
    the stream was asked for it.
    """
    lam = 2.0

    def streams():
        rng_q, rng_t = (np.random.default_rng(s) for s in (11, 12))
        return (
            DiscreteLaplaceStream(2 * lam, rng_q, reseed_on_copy=False),
            DiscreteLaplaceStream(lam, rng_t, reseed_on_copy=False),
        )

    rng = np.random.default_rng(3)
    engine = SparseVectorEngine(8.0, lam, 6, *streams())
    reference = ReferenceSparseVector(8.0, 6, *streams())
    for m in (30_000, 500, 20_000):
        scores = np.where(rng.random(m) < 2e-4, 0, 60).astype(np.int64)
        scores[rng.integers(m)] = 9  # near the threshold: noise decides
        _assert_same(engine, reference, engine.run(scores), reference.run(scores))


def test_get_state_set_state_round_trip():
    rng = np.random.default_rng(5)
    query_values = rng.integers(-2, 3, size=3000)
    threshold_values = rng.integers(-2, 3, size=10)
    scores = _make_scores(rng, 3000, 4, 2, 0.01)
    first, second = scores[:1200], scores[1200:]

    engine, reference = _pair(4.0, 10, query_values, threshold_values)
    engine.run(first)
    reference.run(first)
    state = engine.get_state()
    assert set(state) == {
        "abstention_count",
        "n_queries",
        "n_threshold_draws",
        "noisy_threshold",
    }
    assert state["abstention_count"] > 0  # the case is not trivial

    restored = SparseVectorEngine(
        4.0, 1.0, 10, ArrayNoise(query_values), ArrayNoise(threshold_values)
    )
    restored.set_state(state)
    assert restored.get_state() == state
    result = restored.run(second)
    _assert_same(restored, reference, result, reference.run(second))
    # ... and the original, continuing in place, agrees with the restored copy.
    original = engine.run(second)
    np.testing.assert_array_equal(original[0], result[0])
    assert original[1] == result[1]
    assert engine.get_state() == restored.get_state()


def test_set_state_without_noisy_threshold_redraws_and_charges():
    threshold_values = np.array([0, 3, -4, 7, 1], dtype=np.int64)
    query_values = np.zeros(100, dtype=np.int64)
    engine, _ = _pair(10.0, 5, query_values, threshold_values)
    engine.run(np.array([50, 0, 50], dtype=np.int64))  # one failure
    state = engine.get_state()
    assert (state["abstention_count"], state["n_threshold_draws"]) == (1, 2)
    assert state["noisy_threshold"] == 10.0 + 3

    lost = dict(state, noisy_threshold=None)
    restored = SparseVectorEngine(
        10.0, 1.0, 5, ArrayNoise(query_values), ArrayNoise(threshold_values)
    )
    restored.set_state(lost)
    # Charged as an abstention, and the threshold is the next, fresh draw.
    assert restored.abstention_count == 2
    assert restored.n_threshold_draws == 3
    assert restored.get_state()["noisy_threshold"] == 10.0 + threshold_values[2]
    assert restored.n_queries == 3

    # One abstention from the cutoff: the charge halts it, with no new draw.
    last = {
        "abstention_count": 4,
        "n_queries": 7,
        "n_threshold_draws": 5,
        "noisy_threshold": None,
    }
    threshold_noise = ArrayNoise(threshold_values)
    restored = SparseVectorEngine(
        10.0, 1.0, 5, ArrayNoise(query_values), threshold_noise
    )
    restored.set_state(last)
    assert restored.halted and restored.abstention_count == 5
    assert restored.n_threshold_draws == 5
    assert threshold_noise.max_stop == 1  # only the constructor's draw
    assert restored.run(np.array([99], dtype=np.int64))[1] == 0


def test_repr_hides_the_noisy_threshold():
    engine, _ = _pair(1234.5, 3, np.zeros(10, np.int64), np.array([77, 0, 0]))
    text = repr(engine)
    assert "1311" not in text and "1234" not in text and "77" not in text
