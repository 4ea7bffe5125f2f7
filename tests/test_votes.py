"""Vote counts and the distance to instability.

See docs/design.rst, "Vote counts and the distance to instability", and
docs/corrections.rst, "Distance to instability under replace-one".

The exhaustive test enumerates every vote histogram of k <= 12 teachers over
2 to 4 classes and every one-vote move (replace-one changes one teacher: one
count -1, another +1).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpsklearn.mechanisms import distance_to_instability, majority_and_gap, vote_counts


def _histograms(k, n_classes):
    """Every vector of ``n_classes`` non-negative counts summing to ``k``."""
    # Stars and bars: choose the n_classes - 1 bar positions among k + n_classes - 1.
    rows = []
    for bars in itertools.combinations(range(k + n_classes - 1), n_classes - 1):
        edges = (-1, *bars, k + n_classes - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(n_classes)])
    return np.array(rows, dtype=np.int64)


def _moves(n_classes):
    """Every (from, to) pair of distinct classes."""
    return [(a, b) for a in range(n_classes) for b in range(n_classes) if a != b]


def _majority(counts):
    """Plain reference: the first index holding the largest count."""
    best = 0
    for i, c in enumerate(counts):
        if c > counts[best]:
            best = i
    return best


def _paper_distance(counts):
    """The printed formula of Bassily et al. (2018), max(0, top - second - 1)."""
    ordered = np.sort(counts, axis=1)
    return np.maximum(0, ordered[:, -1] - ordered[:, -2] - 1)


def _exhaustive(distance):
    """Check the two properties of ``distance`` over every histogram and move.

    Returns ``(n_pairs, n_sensitivity_violations, n_stability_violations)``:
    a sensitivity violation is a move that changes the distance by more than
    1; a stability violation is a histogram whose majority one move can change
    while its distance is positive.
    """
    n_pairs = n_sensitivity = n_stability = 0
    for n_classes in (2, 3, 4):
        for k in range(1, 13):
            hist = _histograms(k, n_classes)
            assert len(hist) == len({tuple(h) for h in hist.tolist()})
            assert (hist.sum(axis=1) == k).all() and (hist >= 0).all()
            dist = distance(hist)
            majority = np.array([_majority(h) for h in hist.tolist()])
            can_flip = np.zeros(len(hist), dtype=bool)
            for a, b in _moves(n_classes):
                movable = hist[:, a] > 0
                moved = hist[movable].copy()
                moved[:, a] -= 1
                moved[:, b] += 1
                n_pairs += int(movable.sum())
                moved_dist = distance(moved)
                n_sensitivity += int((np.abs(moved_dist - dist[movable]) > 1).sum())
                moved_majority = np.array([_majority(h) for h in moved.tolist()])
                can_flip[movable] |= moved_majority != majority[movable]
            n_stability += int((can_flip & (dist > 0)).sum())
            # Stability is only meaningful if flips exist at every size.
            assert can_flip.any()
    return n_pairs, n_sensitivity, n_stability


def test_histogram_enumeration_is_complete():
    from math import comb

    for n_classes in (2, 3, 4):
        for k in range(0, 13):
            assert len(_histograms(k, n_classes)) == comb(k + n_classes - 1, k)


def test_distance_to_instability_exhaustive():
    """Ours: sensitivity 1, and 0 wherever one changed teacher can flip the answer."""
    n_pairs, n_sensitivity, n_stability = _exhaustive(distance_to_instability)
    assert n_pairs > 10_000  # every histogram and move was visited
    assert n_sensitivity == 0
    assert n_stability == 0


def test_paper_formula_violates_both_properties():
    """Bassily et al. (2018)'s max(0, top - second - 1) breaks both properties."""
    _, n_sensitivity, n_stability = _exhaustive(_paper_distance)
    assert n_sensitivity > 0
    assert n_stability > 0
    # The textbook witnesses: at gap 2 the paper's formula reads 1 although one move
    # ties the top two (and the tie goes to the lower index) ...
    assert _paper_distance(np.array([[2, 4]]))[0] == 1
    assert _majority([3, 3]) != _majority([2, 4])
    # ... and one move changes it by 2.
    assert (
        _paper_distance(np.array([[0, 6]]))[0] - _paper_distance(np.array([[1, 5]]))[0]
        == 2
    )


def test_distance_formula_values():
    counts = [[5, 5], [6, 4], [7, 3], [8, 2], [10, 0], [0, 0], [3, 0, 3], [1, 4, 0]]
    got = [int(distance_to_instability(np.array([c]))[0]) for c in counts]
    # gap 0, 2, 4, 6, 10, 0, 0, 3 -> ceil(g/2) - 1 clipped at 0
    assert got == [0, 0, 1, 2, 4, 0, 0, 1]


def test_majority_and_gap_ties_to_lowest_index():
    counts = np.array([[3, 3, 1], [1, 4, 4], [0, 0, 5], [2, 2, 2], [7, 0, 0]])
    majority, gap = majority_and_gap(counts)
    assert majority.tolist() == [0, 1, 2, 0, 0]
    assert gap.tolist() == [0, 0, 5, 0, 7]
    # One class: second is 0.
    majority, gap = majority_and_gap(np.array([[4], [0]]))
    assert majority.tolist() == [0, 0] and gap.tolist() == [4, 0]


def _loop_vote_counts(predictions, n_classes):
    predictions = np.asarray(predictions)
    n_teachers, n_queries = predictions.shape
    counts = np.zeros((n_queries, n_classes), dtype=np.int64)
    for q in range(n_queries):
        for t in range(n_teachers):
            counts[q, predictions[t, q]] += 1
    return counts


@pytest.mark.parametrize(
    "n_classes, n_teachers, n_queries",
    [(1, 3, 5), (2, 7, 40), (5, 12, 33), (16, 9, 25), (17, 9, 25), (40, 31, 60)],
)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.intp])
def test_vote_counts_matches_loop(n_classes, n_teachers, n_queries, dtype):
    """Both code paths (<= 16 classes by comparison, > 16 by bincount)."""
    rng = np.random.default_rng(n_classes * 1000 + n_teachers)
    predictions = rng.integers(0, n_classes, size=(n_teachers, n_queries)).astype(dtype)
    counts = vote_counts(predictions, n_classes)
    assert counts.shape == (n_queries, n_classes)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, _loop_vote_counts(predictions, n_classes))
    assert (counts.sum(axis=1) == n_teachers).all()
    # Lists work too.
    np.testing.assert_array_equal(vote_counts(predictions.tolist(), n_classes), counts)


def test_vote_counts_rejects_non_2d():
    with pytest.raises(ValueError, match="2-D"):
        vote_counts([0, 1, 1], 2)


def test_vote_counts_no_queries():
    assert vote_counts(np.zeros((4, 0), dtype=np.int64), 3).shape == (0, 3)
    assert vote_counts(np.zeros((4, 0), dtype=np.int64), 20).shape == (0, 20)
