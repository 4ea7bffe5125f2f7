"""The games' rounds read their windows in place: the same values, to the last bit.

``_one_round`` (``dpsklearn/accounting/_bounded_range.py``) hands
``_Cells.best`` the ``grid + 1`` shifted windows of the padded values as one
strided view of them, where it used to copy each into a table. The arithmetic
is untouched, so every figure must be equal bit for bit: here the copying
round is kept verbatim and both are run on the same rounds and on whole games
(a certified figure is a computation; how it reads its inputs must not change
it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsklearn.accounting import _alternating, _bounded_range
from dpsklearn.accounting._bounded_range import _Cells


def _copying_one_round(values, cells, grid, a, b, padded):
    # The round before the views, verbatim (its tables allocated here).
    n_nodes = values.size
    upper = np.empty((grid + 1, n_nodes))
    lower = np.empty((grid + 1, n_nodes))
    padded[:grid] = values[0]
    padded[grid : grid + n_nodes] = values
    padded[grid + n_nodes :] = 1.0
    n_rows = b - a + 1
    for c in range(grid + 1):
        upper[c, :n_rows] = padded[a + grid + c : a + grid + c + n_rows]
        lower[c, :n_rows] = padded[a + c : a + c + n_rows]
    return np.minimum(cells.best(upper[:, :n_rows], lower[:, :n_rows]), 1.0)


@pytest.fixture
def copying(monkeypatch):
    """Run a computation with the copying rounds."""

    def run(function, *args):
        with monkeypatch.context() as m:
            m.setattr(_bounded_range, "_one_round", _copying_one_round)
            m.setattr(_alternating, "_one_round", _copying_one_round)
            return function(*args)

    return run


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("grid", [8, 16])
@pytest.mark.parametrize("eps0", [0.02, 0.3, 1.7])
def test_one_round_on_many_windows(grid, eps0):
    rng = np.random.default_rng(grid)
    cells = _Cells(eps0, grid)
    for n_nodes in (1, 2, 5, 40, 700):
        x = np.arange(n_nodes) * eps0 / grid - 0.3
        shapes = [
            np.maximum(-np.expm1(0.2 - x), 0.0),  # V_0 itself
            np.cumsum(rng.random(n_nodes) * (rng.random(n_nodes) < 0.7)),
            (x > 0).astype(np.float64),  # zeros, then ones
            np.sort(rng.random(n_nodes)) * 1e-300,  # tiny values
        ]
        shapes[1] = shapes[1] / max(shapes[1][-1], 1.0) * 0.9  # flat runs
        for values in shapes:
            padded = np.empty(n_nodes + 2 * grid + 1)
            for a, b in {(0, n_nodes - 1), (0, 0), (n_nodes // 3, n_nodes - 1)}:
                old = _copying_one_round(values, cells, grid, a, b, padded.copy())
                new = _bounded_range._one_round(values, cells, grid, a, b, padded)
                assert _same(old, new)


@pytest.mark.parametrize(
    "eps0, k, epsilon, grid",
    [(0.0169, 1000, 1.0, 16), (0.3, 40, 2.0, 16), (0.1, 50, 1.0, 8), (1.0, 1, 0.5, 16)],
)
def test_bounded_range_game_unchanged(copying, eps0, k, epsilon, grid):
    old = copying(_bounded_range._game, eps0, k, epsilon, grid, 1e-5)
    assert _same(old, _bounded_range._game(eps0, k, epsilon, grid, 1e-5))


def test_block_profile_unchanged(copying):
    old = copying(_bounded_range.block_profile, 0.02, 300, 8)
    new = _bounded_range.block_profile(0.02, 300, 8)
    assert _same(old[0], new[0]) and _same(old[1], new[1])


@pytest.mark.parametrize(
    "args",
    [
        (0.0184, 0.0184, 100, 1.0),
        (0.05, 0.1, 100, 2.0),
        (0.02, 0.02, 200, 1.0),  # in blocks
    ],
)
def test_alternating_game_unchanged(copying, args):
    assert _same(
        copying(_alternating.alternating_delta, *args),
        _alternating.alternating_delta(*args),
    )


@pytest.mark.parametrize("epsilon, k", [(8.0, 1000), (0.5, 200)])
def test_certified_splits_unchanged(copying, epsilon, k):
    # The searches call the game a few times: the same end point, bit for bit.
    search = _bounded_range._max_epsilon0.__wrapped__
    old = copying(search, epsilon, 1e-5, k, None, 5e-4)
    assert old == search(epsilon, 1e-5, k, None, 5e-4)
    scale = _alternating.largest_alternating_scale.__wrapped__
    start = 0.5 * epsilon / k
    old = copying(scale, epsilon, 5e-6, 50, 1.0, start)
    assert old == scale(epsilon, 5e-6, 50, 1.0, start)
    assert math.isfinite(old)
