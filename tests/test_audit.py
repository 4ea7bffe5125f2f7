"""Privacy audits of the noise primitives and the sparse vector engine.

Every audit runs a mechanism many times on a pair of neighbouring inputs
chosen from its proof (the worst case under replace-one: docs/design.rst,
"Neighbouring datasets and what epsilon covers") and computes
a lower confidence bound ``epsilon_lower`` on its privacy loss with
:func:`dpsklearn.audit.audit`. Each correct mechanism must satisfy

* ``epsilon_lower <= claimed epsilon`` (no evidence of a leak), and
* ``epsilon_lower >= 0.5 * claimed`` (the audit has power: a 2x bug would show),

and every known-bad variant of ``tests/_bad_variants.py`` must be flagged:
``epsilon_lower > claimed``. Where the outputs can be enumerated the exact
loss (:func:`dpsklearn.audit.exact_epsilon`) is checked too, and the sampled
estimate is compared with it.

Confidence: every bound holds with probability 0.95 (``CONFIDENCE``), split
by Bonferroni over the two directions and the two Clopper-Pearson bounds of
each. Runs: stated per test as runs per neighbour (``RUNS_*``); the noise is
seeded, so the file is deterministic. Time: the whole file runs in about
25 s on 2 cores (pytest uses one; the real-engine audits dominate: one
engine object per run, ~20 us each).

The measured figures are printed as a table at the end of the module (the
terminal reporter shows it without ``-s``).
"""

from __future__ import annotations

import io
import itertools
import math
import pathlib
import tokenize

import _bad_variants as bad
import numpy as np
import pytest
from _helpers import AuditTable
from _helpers import assert_private as _assert_private
from scipy import stats

import dpsklearn
from dpsklearn.audit import (
    AuditResult,
    audit,
    clopper_pearson,
    epsilon_lower_bound,
    exact_epsilon,
)
from dpsklearn.noise import (
    discrete_laplace,
    exponential_mechanism,
    grid_laplace,
    truncated_geometric,
)

CONFIDENCE = 0.95
# Runs per neighbour. Cheap vectorised mechanisms get many runs; the real
# sparse vector engine (one engine object per run, ~20 us each) gets fewer,
# chosen so that the power check still has a wide margin (see the table).
RUNS_PRIMITIVE = 200_000
RUNS_SOFT_MAJORITY_BAD = 1_000_000  # to measure the leak near 2 precisely
RUNS_SIMULATED_SVT = 400_000  # half of them choose the event
RUNS_ENGINE = 100_000

_TABLE = AuditTable(
    "privacy audit",
    f"confidence {CONFIDENCE} per bound (Bonferroni over both directions); "
    "runs/side include event-selection runs where the event was chosen.",
)
_audit_table = _TABLE.fixture()


def _record(mechanism, neighbours, result: AuditResult, claimed, exact=None):
    caught = result.epsilon_lower > claimed
    _TABLE.add(
        mechanism,
        neighbours,
        f"{result.n_runs + result.n_selection_runs:,}",
        f"{claimed:g}",
        f"{result.epsilon_lower:.3f}",
        f"{result.epsilon_hat:.3f}",
        "" if exact is None else f"{exact:.3f}",
        "LEAK CAUGHT" if caught else "ok",
    )


def _assert_caught(result, claimed):
    assert result.epsilon_lower > claimed, (
        f"known-bad variant not caught: {result} (claimed {claimed})"
    )


# ---------------------------------------------------------------------------
# The audit itself
# ---------------------------------------------------------------------------


class TestAuditTool:
    def test_clopper_pearson_closed_forms(self):
        # k = 0: upper = 1 - alpha^(1/n); k = n: lower = alpha^(1/n)
        lo, hi = clopper_pearson(0, 50, 0.01)
        assert lo == 0.0
        assert math.isclose(hi, 1 - 0.01 ** (1 / 50), rel_tol=1e-10)
        lo, hi = clopper_pearson(50, 50, 0.01)
        assert math.isclose(lo, 0.01 ** (1 / 50), rel_tol=1e-10)
        assert hi == 1.0

    def test_clopper_pearson_is_the_binomial_tail_inversion(self):
        n, k, alpha = 40, 13, 0.05
        lo, hi = clopper_pearson(k, n, alpha)
        assert math.isclose(stats.binom.sf(k - 1, n, lo), alpha, rel_tol=1e-8)
        assert math.isclose(stats.binom.cdf(k, n, hi), alpha, rel_tol=1e-8)

    def test_bound_has_its_coverage(self):
        # An event with P0 = e P1 exactly (true loss 1): the bound may exceed 1
        # with probability at most 1 - CONFIDENCE. Draw the counts directly.
        rng = np.random.default_rng(7)
        n, p1 = 2_000, 0.1
        p0 = math.e * p1
        c0 = rng.binomial(n, p0, size=400)
        c1 = rng.binomial(n, p1, size=400)
        over = sum(
            epsilon_lower_bound(a, n, b, n, confidence=CONFIDENCE)[0] > 1.0
            for a, b in zip(c0, c1, strict=True)
        )
        assert over / 400 <= 1 - CONFIDENCE

    def test_bound_with_delta(self):
        eps0, _ = epsilon_lower_bound(6000, 10_000, 2000, 10_000)
        eps_d, _ = epsilon_lower_bound(6000, 10_000, 2000, 10_000, delta=0.1)
        assert 0 < eps_d < eps0
        assert epsilon_lower_bound(100, 10_000, 0, 10_000, delta=0.5)[0] == 0.0

    def test_both_directions(self):
        eps_a, side_a = epsilon_lower_bound(6000, 10_000, 2000, 10_000)
        eps_b, side_b = epsilon_lower_bound(2000, 10_000, 6000, 10_000)
        assert (side_a, side_b) == (0, 1)
        assert math.isclose(eps_a, eps_b)

    @pytest.mark.parametrize("seed", range(6))
    def test_exact_epsilon_matches_brute_force_over_events(self, seed):
        rng = np.random.default_rng(seed)
        p = rng.dirichlet(np.ones(6))
        q = rng.dirichlet(np.ones(6))
        if seed == 0:  # an outcome impossible on one side
            p[0], q[0] = 0.0, 0.05
            p, q = p / p.sum(), q / q.sum()
        for delta in (0.0, 0.01, 0.1, 0.3):
            brute = 0.0
            for mask in itertools.product([False, True], repeat=6):
                s = np.array(mask)
                for a, b in ((p, q), (q, p)):
                    pa, pb = a[s].sum(), b[s].sum()
                    if pa - delta <= 1e-15:
                        continue
                    brute = max(
                        brute, math.inf if pb == 0 else math.log((pa - delta) / pb)
                    )
            assert math.isclose(exact_epsilon(p, q, delta), brute, rel_tol=1e-9), delta

    def test_exact_epsilon_validates(self):
        with pytest.raises(ValueError, match="sum to 1"):
            exact_epsilon([0.5, 0.4], [0.5, 0.5])
        with pytest.raises(ValueError, match="same shape"):
            exact_epsilon([1.0], [0.5, 0.5])
        with pytest.raises(ValueError, match="delta"):
            exact_epsilon([1.0], [1.0], delta=1.0)

    def test_audit_validates(self):
        def mech(nb, n, rng):
            return np.zeros(n)

        with pytest.raises(ValueError, match="n_runs"):
            audit(mech, n_runs=1)
        with pytest.raises(ValueError, match="confidence"):
            audit(mech, n_runs=10, confidence=1.0)
        with pytest.raises(ValueError, match="delta"):
            audit(mech, n_runs=10, delta=-0.1)
        with pytest.raises(ValueError, match="expected 10"):
            audit(lambda nb, n, rng: np.zeros(3), lambda o: o > 0, n_runs=10)
        with pytest.raises(TypeError, match="event"):
            audit(mech, "not an event", n_runs=10)

    def test_audit_batches_and_chosen_events(self):
        def mech(nb, n, rng):
            return nb + discrete_laplace(1.0, size=n, rng=rng)

        whole = audit(mech, lambda o: o >= 1, n_runs=20_000, rng=1)
        batched = audit(mech, lambda o: o >= 1, n_runs=20_000, rng=1, batch_size=3_000)
        assert whole.n_runs == batched.n_runs == 20_000
        assert 0.7 < batched.epsilon_lower <= 1.0
        chosen = audit(
            mech,
            {"nonsense": lambda o: o == 100, "right tail": lambda o: o >= 1},
            n_runs=20_000,
            rng=2,
        )
        assert chosen.event.startswith("right tail")
        assert chosen.n_selection_runs == chosen.n_runs == 10_000
        assert 0.6 < chosen.epsilon_lower <= 1.0

    def test_auto_event_on_multidimensional_outputs(self):
        # rows of two independent 0.5-DP counts: the pair is 1-DP, and the
        # auto event (a set of rows) should see most of it.
        def mech(nb, n, rng):
            return nb + discrete_laplace(2.0, size=(n, 2), rng=rng)

        res = audit(mech, n_runs=100_000, rng=3)
        assert "output in" in res.event
        assert 0.5 <= res.epsilon_lower <= 1.0

    def test_no_leak_gives_no_evidence(self):
        res = audit(lambda nb, n, rng: rng.integers(0, 2, n), n_runs=20_000, rng=4)
        assert res.epsilon_lower < 0.1


# ---------------------------------------------------------------------------
# Noise primitives (docs/design.rst, "Noise primitives")
# ---------------------------------------------------------------------------


def _left_tail(out):
    """output <= 0 (the tail where the Laplace likelihood ratio is largest)"""
    return out <= 0


def test_grid_laplace_default_grid():
    # values 0 and the sensitivity; grid step 2^-10 gives 1025 units of noise
    # for a shift of 1024: the exact loss on the left tail is 1024/1025 eps.
    eps, sens = 1.0, 1.0

    def mech(nb, n, rng):
        return grid_laplace(np.full(n, nb * sens), sens, eps, rng=rng)

    res = audit(mech, _left_tail, n_runs=RUNS_PRIMITIVE, rng=10)
    _record("grid Laplace (g=2^-10)", "v=0 vs v=1", res, eps, exact=1024 / 1025)
    _assert_private(res, eps)


def test_grid_laplace_worst_rounding():
    # A coarse grid g = 0.3, sensitivity 1: v = 0.14 rounds to 0 units and
    # v = 1.14 to 4 units (rounding adds a unit to the sensitivity): the noise has
    # floor(1/0.3) + 1 = 4 units per epsilon, so the loss is exactly eps.
    eps, sens, g = 1.0, 1.0, 0.3
    values = (0.14, 1.14)

    def mech(nb, n, rng):
        return grid_laplace(np.full(n, values[nb]), sens, eps, rng=rng, grid_step=g)

    res = audit(mech, _left_tail, n_runs=RUNS_PRIMITIVE, rng=11)
    _record("grid Laplace (g=0.3)", "v=0.14 vs 1.14", res, eps, exact=1.0)
    _assert_private(res, eps)


def test_geometric_mechanism_auto_event():
    # The truncated geometric mechanism (Chan, CSCI4230 notes 21, Theorem 1)
    # on counts 0 and 1 in [0, 10];
    # the audit chooses the event (P[out = 0] ratio is exactly e^eps).
    eps = 1.0

    def mech(nb, n, rng):
        return truncated_geometric(np.full(n, nb), eps, 0, 10, rng=rng)

    res = audit(mech, n_runs=RUNS_PRIMITIVE, rng=12)
    _record("truncated geometric (auto event)", "count 0 vs 1", res, eps, exact=eps)
    _assert_private(res, eps)


_SOFT_MAJORITY_PAIRS = {
    # one vote moved between classes under replace-one, k = 10 teachers
    "[5,5] vs [4,6]": (np.array([5, 5]), np.array([4, 6])),
    "[3,7] vs [2,8]": (np.array([3, 7]), np.array([2, 8])),
}


def _soft_majority_exact(c0, c1, eps, factor):
    def dist(c):
        w = np.exp(factor * eps * (c - c.max()))
        return w / w.sum()

    return exact_epsilon(dist(c0), dist(c1))


def _class_0(labels):
    """label == 0 (the class that lost a vote)"""
    return labels == 0


@pytest.mark.parametrize("pair", list(_SOFT_MAJORITY_PAIRS))
def test_exponential_mechanism_soft_majority(pair):
    eps = 1.0
    c0, c1 = _SOFT_MAJORITY_PAIRS[pair]

    def mech(nb, n, rng):
        votes = (c0, c1)[nb]
        return exponential_mechanism(np.broadcast_to(votes, (n, 2)), eps, rng=rng)

    res = audit(mech, _class_0, n_runs=RUNS_PRIMITIVE, rng=13)
    exact = _soft_majority_exact(c0, c1, eps, 0.5)
    _record("soft majority exp(eps c/2)", pair, res, eps, exact=exact)
    assert exact <= eps
    _assert_private(res, eps)
    assert res.epsilon_lower <= exact


@pytest.mark.parametrize("n_classes", [2, 3])
def test_exponential_mechanism_exact_over_all_histograms(n_classes):
    # Enumerate every histogram of k = 10 votes and every one-vote move: the
    # exact loss of exp(eps c / 2) never exceeds eps; exp(eps c) exceeds it.
    eps, k = 1.0, 10
    good = worst_bad = 0.0
    for c in itertools.product(range(k + 1), repeat=n_classes):
        if sum(c) != k:
            continue
        c = np.array(c)
        for a, b in itertools.permutations(range(n_classes), 2):
            if c[a] == 0:
                continue
            moved = c.copy()
            moved[a] -= 1
            moved[b] += 1
            good = max(good, _soft_majority_exact(c, moved, eps, 0.5))
            worst_bad = max(worst_bad, _soft_majority_exact(c, moved, eps, 1.0))
    assert good <= eps + 1e-12
    assert good >= 0.95 * eps  # the worst case is nearly tight
    assert worst_bad > 1.9 * eps


# ---------------------------------------------------------------------------
# Known-bad variants of the primitives: the audit must catch each
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("pair", list(_SOFT_MAJORITY_PAIRS))
def test_bad_soft_majority_double_is_caught(pair):
    eps = 1.0
    c0, c1 = _SOFT_MAJORITY_PAIRS[pair]

    def mech(nb, n, rng):
        votes = (c0, c1)[nb]
        return bad.soft_majority_double(np.broadcast_to(votes, (n, 2)), eps, rng=rng)

    res = audit(mech, _class_0, n_runs=RUNS_SOFT_MAJORITY_BAD, rng=20)
    exact = _soft_majority_exact(c0, c1, eps, 1.0)
    _record("BAD soft majority exp(eps c)", pair, res, eps, exact=exact)
    _assert_caught(res, eps)


def test_bad_float_laplace_half_scale_is_caught():
    eps = 1.0

    def mech(nb, n, rng):
        return bad.laplace_half_scale(np.full(n, float(nb)), 1.0, eps, rng=rng)

    res = audit(mech, _left_tail, n_runs=RUNS_PRIMITIVE, rng=21)
    _record("BAD float Laplace, half scale", "v=0 vs v=1", res, eps, exact=2 * eps)
    _assert_caught(res, eps)


def test_bad_grid_laplace_half_scale_is_caught():
    eps = 1.0

    def mech(nb, n, rng):
        return bad.grid_laplace_half_scale(np.full(n, float(nb)), 1.0, eps, rng=rng)

    res = audit(mech, _left_tail, n_runs=RUNS_PRIMITIVE, rng=22)
    _record("BAD grid Laplace, half scale", "v=0 vs v=1", res, eps, exact=2048 / 1025)
    _assert_caught(res, eps)


def test_bad_grid_laplace_without_rounding_unit_is_caught():
    eps, g = 1.0, 0.3
    values = (0.14, 1.14)

    def mech(nb, n, rng):
        return bad.grid_laplace_no_rounding_unit(
            np.full(n, values[nb]), 1.0, eps, rng=rng, grid_step=g
        )

    res = audit(mech, _left_tail, n_runs=RUNS_PRIMITIVE, rng=23)
    _record("BAD grid Laplace, no +1 unit", "v=0.14 vs 1.14", res, eps, exact=4 / 3)
    _assert_caught(res, eps)


# ---------------------------------------------------------------------------
# The sparse vector engine at T = 1 (docs/design.rst,
# "The sparse vector stability test")
# ---------------------------------------------------------------------------
# With lam = 2 / eps0 one threshold draw is eps0-DP for sensitivity-1 scores.
# Worst case from the AboveThreshold proof: every query before the halting one
# moves up by 1 and the halting one moves down by 1 (the threshold shift pays
# eps0/2, the halting query's shift of 2 against DLap(2 lam) pays eps0/2). As
# vote histograms (k = 9 teachers, one teacher's votes change):
#   neighbour 0: six queries [5,4] (gap 1), then [6,3] (gap 3)
#   neighbour 1: six queries [6,3] (gap 3), then [5,4] (gap 1)
# Our dist ceil(g/2)-1 gives [0]*6+[1] vs [1]*6+[0] (moves by 1); the printed
# formula of Bassily, Thakkar and Thakurta (2018)
# g-1 gives [0]*6+[2] vs [2]*6+[0] (moves by 2). The output is the index of the
# query that halts the engine (7 = no halt). Its exact distribution is a sum
# over the threshold noise (below), so every claim is also checked exactly.

SVT_EPS0 = 1.0
SVT_LAM = 2.0 / SVT_EPS0
SVT_THRESHOLD = 0
SVT_HISTOGRAMS = (
    np.array([[5, 4]] * 6 + [[6, 3]]),
    np.array([[6, 3]] * 6 + [[5, 4]]),
)


def _our_dist(counts):
    votes = pytest.importorskip("dpsklearn.mechanisms")
    return votes.distance_to_instability(counts)


def _dlap_pmf(z, scale):
    a = math.exp(-1.0 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(z)


def _dlap_cdf(z, scale):
    """P(DLap(scale) <= z) for integer z."""
    a = math.exp(-1.0 / scale)
    z = np.asarray(z)
    return np.where(z >= 0, 1 - a ** (z + 1) / (1 + a), a ** (-z) / (1 + a))


def svt_first_fail_exact(scores, threshold, lam, query_scale=None, reach=600):
    """Exact P[first fail at i] (i = len(scores): none) for T = 1.

    Sums over the threshold noise z in [-reach, reach] (the tail beyond has
    mass below 1e-60 at lam = 2): P = sum_z P(z) prod_{j<i} P(pass_j | z)
    P(fail_i | z), with fail_i iff q_i + DLap(query_scale) <= threshold + z.
    """
    query_scale = 2 * lam if query_scale is None else query_scale
    z = np.arange(-reach, reach + 1)
    pz = _dlap_pmf(z, lam)
    survive = np.ones_like(pz)
    out = []
    for q in scores:
        fail = _dlap_cdf(threshold + z - q, query_scale)
        out.append(float(np.sum(pz * survive * fail)))
        survive = survive * (1 - fail)
    out.append(float(np.sum(pz * survive)))
    return np.array(out)


def _simulated_svt(scores, threshold, lam, n_runs, rng):
    """Reference T = 1 sparse vector, vectorised over runs: first-fail index."""
    scores = np.asarray(scores, dtype=np.int64)
    noisy_threshold = threshold + discrete_laplace(lam, size=(n_runs, 1), rng=rng)
    noisy = scores + discrete_laplace(2 * lam, size=(n_runs, scores.size), rng=rng)
    fails = noisy <= noisy_threshold
    return np.where(fails.any(axis=1), fails.argmax(axis=1), scores.size)


def _halts_at_last(first_fail):
    """halted at the last query (after every earlier one passed)"""
    return first_fail == SVT_HISTOGRAMS[0].shape[0] - 1


def test_svt_exact_worst_case():
    # our dist: exactly within eps0 and nearly tight; the bad variants: above.
    s0, s1 = (_our_dist(h) for h in SVT_HISTOGRAMS)
    assert s0.tolist() == [0] * 6 + [1] and s1.tolist() == [1] * 6 + [0]
    p, q = (svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM) for s in (s0, s1))
    assert 0.9 * SVT_EPS0 < exact_epsilon(p, q) <= SVT_EPS0
    paper0, paper1 = (bad.paper_distance(h) for h in SVT_HISTOGRAMS)
    assert paper0.tolist() == [0] * 6 + [2]
    p2, q2 = (svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM) for s in (paper0, paper1))
    assert exact_epsilon(p2, q2) > 1.5 * SVT_EPS0
    p3, q3 = (
        svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM, query_scale=SVT_LAM)
        for s in (s0, s1)
    )
    assert exact_epsilon(p3, q3) > 1.4 * SVT_EPS0


def test_svt_simulation_auto_event():
    # The reference simulation, the event chosen by the audit on half the runs.
    scores = [_our_dist(h) for h in SVT_HISTOGRAMS]

    def mech(nb, n, rng):
        return _simulated_svt(scores[nb], SVT_THRESHOLD, SVT_LAM, n, rng)

    res = audit(mech, n_runs=RUNS_SIMULATED_SVT, rng=30)
    exact = exact_epsilon(
        *(svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM) for s in scores)
    )
    _record(
        "SVT T=1 simulation (auto event)",
        "dist [0]*6+[1] / [1]*6+[0]",
        res,
        SVT_EPS0,
        exact=exact,
    )
    _assert_private(res, SVT_EPS0)


def test_bad_svt_simulation_small_query_noise_is_caught():
    scores = [_our_dist(h) for h in SVT_HISTOGRAMS]

    def mech(nb, n, rng):
        return bad.sparse_vector_small_query_noise(
            scores[nb], SVT_THRESHOLD, SVT_LAM, n, rng=rng
        )

    res = audit(mech, _halts_at_last, n_runs=RUNS_PRIMITIVE, rng=31)
    exact = exact_epsilon(
        *(svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM, SVT_LAM) for s in scores)
    )
    _record(
        "BAD SVT sim, query noise DLap(lam)",
        "dist [0]*6+[1] / [1]*6+[0]",
        res,
        SVT_EPS0,
        exact=exact,
    )
    _assert_caught(res, SVT_EPS0)


# The noisy-score release: 16 queries that pass (scores 20 vs 19, threshold 0);
# each released q + DLap(2 lam) is 1/(2 lam) = eps0/4-DP on its own, so 16 of
# them can leak 4 eps0. The likelihood ratio only depends on how many released
# scores are >= 20, so the candidate events are "at least j of them".
RELEASE_SCORES = (np.full(16, 20), np.full(16, 19))
_SENTINEL = np.iinfo(np.int64).min


def _count_high_events(offset):
    def at_least(j):
        def event(out):
            shown = out[:, offset:]
            return ((shown != _SENTINEL) & (shown >= 20)).sum(axis=1) >= j

        return event

    return {
        f"at least {j} of 16 released scores >= 20": at_least(j) for j in range(8, 17)
    }


def test_bad_svt_simulation_releasing_noisy_score_is_caught():
    def mech(nb, n, rng):
        return bad.sparse_vector_releasing_noisy_score(
            RELEASE_SCORES[nb], SVT_THRESHOLD, SVT_LAM, n, rng=rng
        )

    res = audit(mech, _count_high_events(1), n_runs=RUNS_PRIMITIVE, rng=32)
    _record("BAD SVT sim, releases noisy score", "16 scores 20 vs 19", res, SVT_EPS0)
    _assert_caught(res, SVT_EPS0)


# --- the real engine -------------------------------------------------------


def _engine_runs(scores, n_runs, rng, *, query_scale=None, release=False):
    """Run ``n_runs`` fresh T = 1 engines on ``scores``; noise drawn in one go.

    Each engine reads its own row of pre-drawn noise through the index-addressed
    noise callables (query noise by query index, threshold noise by draw
    index), so the engine's decisions are its own. Returns the
    first-fail index per run (``len(scores)``: no halt); with ``release`` also
    the noisy scores of the queries that passed (the bad variant).
    """
    sv = pytest.importorskip("dpsklearn.mechanisms")
    scores = np.asarray(scores, dtype=np.int64)
    query_scale = 2 * SVT_LAM if query_scale is None else query_scale
    thr_noise = discrete_laplace(SVT_LAM, size=(n_runs, 1), rng=rng)
    q_noise = discrete_laplace(query_scale, size=(n_runs, scores.size), rng=rng)
    first = np.empty(n_runs, dtype=np.int64)
    for r in range(n_runs):
        qr, tr = q_noise[r], thr_noise[r]
        engine = sv.SparseVectorEngine(
            SVT_THRESHOLD,
            SVT_LAM,
            1,
            lambda a, b, qr=qr: qr[a:b],
            lambda a, b, tr=tr: tr[a:b],
        )
        passed, n_processed = engine.run(scores)
        if engine.halted:
            assert n_processed == int(np.flatnonzero(~passed)[0]) + 1
            first[r] = n_processed - 1
        else:
            assert n_processed == scores.size and passed.all()
            first[r] = scores.size
    if not release:
        return first
    shown = np.where(
        np.arange(scores.size) < first[:, None], scores + q_noise, _SENTINEL
    )
    return np.column_stack([first, shown])


def test_engine_matches_simulation_distribution():
    # The engine's first-fail frequencies agree with the exact distribution.
    s0 = _our_dist(SVT_HISTOGRAMS[0])
    first = _engine_runs(s0, 20_000, np.random.default_rng(40))
    freq = np.bincount(first, minlength=s0.size + 1) / first.size
    exact = svt_first_fail_exact(s0, SVT_THRESHOLD, SVT_LAM)
    chi2 = stats.chisquare(freq * first.size, exact * first.size)
    assert chi2.pvalue > 1e-4


def test_engine_worst_case():
    scores = [_our_dist(h) for h in SVT_HISTOGRAMS]

    def mech(nb, n, rng):
        return _engine_runs(scores[nb], n, rng)

    res = audit(mech, _halts_at_last, n_runs=RUNS_ENGINE, rng=41)
    exact = exact_epsilon(
        *(svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM) for s in scores)
    )
    _record(
        "SparseVectorEngine T=1",
        "hist [5,4]x6+[6,3] / [6,3]x6+[5,4]",
        res,
        SVT_EPS0,
        exact=exact,
    )
    _assert_private(res, SVT_EPS0)


def test_bad_engine_paper_distance_is_caught():
    scores = [bad.paper_distance(h) for h in SVT_HISTOGRAMS]

    def mech(nb, n, rng):
        return _engine_runs(scores[nb], n, rng)

    res = audit(mech, _halts_at_last, n_runs=RUNS_ENGINE, rng=42)
    exact = exact_epsilon(
        *(svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM) for s in scores)
    )
    _record(
        "BAD engine fed seed dist g-1",
        "hist [5,4]x6+[6,3] / [6,3]x6+[5,4]",
        res,
        SVT_EPS0,
        exact=exact,
    )
    _assert_caught(res, SVT_EPS0)


def test_bad_engine_small_query_noise_is_caught():
    scores = [_our_dist(h) for h in SVT_HISTOGRAMS]

    def mech(nb, n, rng):
        return _engine_runs(scores[nb], n, rng, query_scale=SVT_LAM)

    res = audit(mech, _halts_at_last, n_runs=RUNS_ENGINE, rng=43)
    exact = exact_epsilon(
        *(svt_first_fail_exact(s, SVT_THRESHOLD, SVT_LAM, SVT_LAM) for s in scores)
    )
    _record(
        "BAD engine, query noise DLap(lam)",
        "hist [5,4]x6+[6,3] / [6,3]x6+[5,4]",
        res,
        SVT_EPS0,
        exact=exact,
    )
    _assert_caught(res, SVT_EPS0)


def test_bad_engine_releasing_noisy_score_is_caught():
    def mech(nb, n, rng):
        return _engine_runs(RELEASE_SCORES[nb], n, rng, release=True)

    res = audit(mech, _count_high_events(1), n_runs=RUNS_ENGINE, rng=44)
    _record("BAD engine + noisy score release", "16 scores 20 vs 19", res, SVT_EPS0)
    _assert_caught(res, SVT_EPS0)


# ---------------------------------------------------------------------------
# Noise hygiene: no floating-point Laplace draws in the package
# ---------------------------------------------------------------------------


_NUMPY_SAMPLER_CLASSES = {"Generator", "RandomState"}


def float_laplace_uses(source: str):
    """Lines of ``source`` that use a floating-point Laplace sampler.

    Flags, in code (not comments, docstrings or other strings):

    * attribute access ``<x>.laplace`` on an object, such as ``rng.laplace(``,
      ``self.rng.laplace(``, ``np.random.laplace(``, ``random.laplace(``,
      ``stats.laplace``, ``default_rng().laplace(``,
      ``np.random.Generator.laplace(``;
    * the bare name ``laplace``: ``from numpy.random import laplace``, a call
      ``laplace(...)``;
    * ``getattr(x, "laplace")``.

    Not flagged: ``discrete_laplace``/``grid_laplace`` (other names), a
    mechanism *named* ``"laplace"`` (a string), a method *defined* as ``def
    laplace`` and called on a class (``PrivacyEvent.laplace(...)``,
    ``cls.laplace``, ``self.laplace``: constructors of accounting events,
    not samplers).
    """
    hits = []
    tokens = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    ]
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string == "laplace":
            prev = tokens[i - 1] if i >= 1 else None
            if prev is not None and prev.string == "def":
                continue  # a definition, not a draw
            if prev is not None and prev.string == ".":
                recv = tokens[i - 2] if i >= 2 else None
                if (
                    recv is not None
                    and recv.type == tokenize.NAME
                    and recv.string not in _NUMPY_SAMPLER_CLASSES
                    and (recv.string[0].isupper() or recv.string in ("cls", "self"))
                ):
                    continue  # a classmethod such as PrivacyEvent.laplace
            hits.append(tok.start[0])
        elif (
            tok.type == tokenize.NAME
            and tok.string == "getattr"
            and any(
                t.type == tokenize.STRING and t.string.strip("\"'") == "laplace"
                for t in tokens[i + 1 : i + 8]
            )
        ):
            hits.append(tok.start[0])
    return hits


def test_hygiene_scanner_flags_float_laplace():
    flagged = [
        "x = rng.laplace(0, 1)",
        "x = np.random.laplace(0.0, 2.0, size=3)",
        "import random\nx = random.laplace(1)",
        "from numpy.random import laplace",
        "f = rng.laplace",
        "from scipy import stats\nx = stats.laplace.rvs()",
        "x = getattr(rng, 'laplace')(0, 1)",
        "x = self.rng.laplace(scale=2.0)",
        "x = np.random.default_rng(0).laplace(0, 1)",
        "x = np.random.Generator.laplace(rng, 0, 1)",
        "from numpy.random import laplace as lap",
        "x = laplace(0, 1)",
    ]
    for src in flagged:
        assert float_laplace_uses(src), src
    clean = [
        "z = discrete_laplace(2.0, size=3, rng=rng)",
        "v = grid_laplace(x, 1.0, 1.0, rng=rng)",
        'kind = "laplace"  # rng.laplace( in a comment',
        'def f():\n    """Never call rng.laplace(0, 1)."""\n',
        "k = 'laplacian'",
        "class E:\n    @classmethod\n    def laplace(cls, epsilon):\n        pass",
        "events = [PrivacyEvent.laplace(0.01, count=1000)]",
        "e = cls.laplace(1.0)",
    ]
    for src in clean:
        assert not float_laplace_uses(src), src


def test_no_float_laplace_outside_noise_module():
    root = pathlib.Path(dpsklearn.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "noise.py":
            continue
        lines = float_laplace_uses(path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(root.parent)}:{line}" for line in lines]
    assert not offenders, (
        "floating-point Laplace draws outside dpsklearn/noise.py (use "
        f"discrete_laplace / grid_laplace): {offenders}"
    )
