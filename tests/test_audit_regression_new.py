"""Privacy audits of the adaptive-range answers and of AdaSSP's releases.

Same rules as ``tests/test_audit_regression.py``: each audit runs the
package's own release on the worst-case neighbours of its proof (replace-one:
one record changes one teacher, or one row of the statistics), asserts
``epsilon_lower <= claimed`` and, so that the audit has power,
``epsilon_lower >= 0.5 x claimed``, and shows that a plausible broken
variant exceeds the claim (docs/regression.rst):

* the range (:func:`~dpsklearn.mechanisms.private_range`, two exponential
  mechanisms, claimed ``2 epsilon_each``) on teachers of which one moves
  all its predictions from the bottom to the top of the range; the broken
  variant counts every prediction with weight 1 instead of ``1/r`` (one
  teacher then moves the count by ``r``);
* the exponential-mechanism median of one answer, claimed ``eps_q``, one
  teacher crossing the median; the broken variant scores ``-|N_< - N_>|``
  (sensitivity 2) at the calibration of sensitivity 1;
* the clipped mean of one answer (pure calibration, grid Laplace) with the
  range fixed inside the public one, one teacher from below the range to
  above it; the broken variant clips the mean instead of each teacher
  (sensitivity ``(hi - lo)/k`` calibrated as ``(b - a)/k``);
* AdaSSP's three Gaussian releases, claimed ``(epsilon, delta)`` by their
  calibration, on two rows replaced by an orthogonal one (the Gram matrix's
  sensitivity ``sqrt(2) B_x^2`` and the eigenvalue's ``B_x^2`` attained); the
  test statistic is the Neyman-Pearson projection onto the neighbours'
  difference; the broken variant serves half the calibrated noise.

The runs per neighbour are stated per test; confidence 0.95 per bound;
every audit is seeded, so the file is deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import AuditTable, gaussian_threshold, ssp_projection, ssp_runs
from _helpers import assert_private as _assert_private
from scipy.special import logsumexp

from dpsklearn.audit import audit, exact_epsilon
from dpsklearn.mechanisms import (
    AdaptiveRangeRelease,
    SufficientStatisticsRelease,
    private_range,
    range_grid,
    range_tilt,
)
from dpsklearn.mechanisms import _adaptive_range as adaptive
from dpsklearn.noise import grid_laplace

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

CONFIDENCE = 0.95
RUNS_RANGE = 100_000
RUNS_ANSWER = 400_000  # one batched answer per neighbour
RUNS_SSP = 60_000

_TABLE = AuditTable(
    "regression privacy audit (adaptive range, AdaSSP)",
    f"confidence {CONFIDENCE} per bound (Bonferroni over both directions); "
    "'exact' is the loss of the enumerated output distributions; a BAD row "
    "is a known-bad variant that must show a leak.",
)
_audit_table = _TABLE.fixture()
_record = _TABLE.record


# ---------------------------------------------------------------------------
# 1. The range: two exponential mechanisms over a public grid
# ---------------------------------------------------------------------------
RANGE_GRID = range_grid((0.0, 1.0), 9)
RANGE_EPS_EACH = 2.0
RANGE_QUANTILES = (0.25, 0.75)
# k = 8 teachers, r = 3 rows, the ends aiming at ranks k/4 and 3k/4.
# Teacher 0 predicts 0 everywhere on one side and 1 on the other, which
# lowers the pooled count by exactly 1 at every grid point above 0; the
# other teachers (spread over 0.385 .. 0.885) put the likeliest ends where
# some grid points gain a unit of utility and others lose one. The
# configuration was found by searching small ones for the largest expected
# audit bound, computed from the exact distributions, of the mechanism (0.58
# of the claim) and of its broken variant (1.7 times the claim).
RANGE_PREDICTIONS = []
for value in (0.0, 1.0):
    predictions = np.tile(
        [value, 0.885, 0.385, 0.635, 0.76, 0.51, 0.51, 0.385], (3, 1)
    )
    RANGE_PREDICTIONS.append(predictions)


def _range_runs(nb, n, rng):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        a, b = private_range(
            RANGE_PREDICTIONS[nb], RANGE_GRID, RANGE_EPS_EACH, RANGE_QUANTILES, rng=rng
        )
        out[i] = int(round(a * 8)) * 9 + int(round(b * 8))
    return out


def _range_exact(nb, below=None):
    """The exact distribution of the encoded (a, b), from the utilities."""
    grid, k = RANGE_GRID, RANGE_PREDICTIONS[nb].shape[1]
    if below is None:
        below = adaptive._pooled_below(RANGE_PREDICTIONS[nb], grid)
    position = (grid - grid[0]) / (grid[-1] - grid[0])
    tilt = range_tilt(RANGE_EPS_EACH, grid.size, k)
    utilities = [
        -np.abs(below - RANGE_QUANTILES[0] * k) + tilt * position,
        -np.abs(below - RANGE_QUANTILES[1] * k) + tilt * (1 - position),
    ]
    half = RANGE_EPS_EACH / 2
    logp = [u * half - logsumexp(u * half) for u in utilities]
    pmf = np.zeros(81)
    for i in range(9):
        for j in range(9):
            lo, hi = sorted((i, j))
            if lo == hi:
                lo, hi = max(lo - 1, 0), min(hi + 1, 8)
            pmf[lo * 9 + hi] += math.exp(logp[0][i] + logp[1][j])
    return pmf


def _set_with_most_power(p_likely, p_unlikely, n_runs, delta=0.0):
    """The output set (top likelihood ratios) with the largest expected bound,
    from the exact distributions only (never from the runs)."""
    from scipy import stats

    z = stats.norm.isf((1 - CONFIDENCE) / 4)
    order = np.argsort(-(np.log(p_likely + 1e-300) - np.log(p_unlikely + 1e-300)))
    a = np.clip(np.cumsum(p_likely[order]), 0.0, 1.0)
    b = np.clip(np.cumsum(p_unlikely[order]), 0.0, 1.0)
    lower = a - z * np.sqrt(a * (1 - a) / n_runs) - delta
    upper = b + z * np.sqrt(b * (1 - b) / n_runs)
    expected = np.log(np.maximum(lower, 1e-300) / np.maximum(upper, 1e-300))
    best = int(np.argmax(expected))
    return order[: best + 1], expected[best]


def _range_audit(pmfs, seed):
    # the direction and output set with the larger expected bound
    candidates = [
        _set_with_most_power(pmfs[d], pmfs[1 - d], RUNS_RANGE) for d in (0, 1)
    ]
    chosen = max(candidates, key=lambda c: c[1])[0]
    return audit(
        _range_runs, lambda out: np.isin(out, chosen), n_runs=RUNS_RANGE, rng=seed
    )


def test_range_audit():
    claimed = 2 * RANGE_EPS_EACH
    pmfs = [_range_exact(0), _range_exact(1)]
    exact = exact_epsilon(*pmfs)
    res = _range_audit(pmfs, 0)
    _record("private range (2 EMs)", "1 teacher 0 -> 1", res, claimed, exact)
    assert exact <= claimed + 1e-9
    _assert_private(res, claimed)


def test_range_audit_catches_unweighted_counts(monkeypatch):
    claimed = 2 * RANGE_EPS_EACH
    original = adaptive._pooled_below

    def broken(predictions, grid):  # each prediction weighs 1, not 1/r
        return original(predictions, grid) * predictions.shape[0]

    pmfs = [
        _range_exact(nb, broken(RANGE_PREDICTIONS[nb], RANGE_GRID)) for nb in (0, 1)
    ]
    monkeypatch.setattr(adaptive, "_pooled_below", broken)
    res = _range_audit(pmfs, 1)
    _record(
        "BAD range: weight 1 per prediction",
        "1 teacher 0 -> 1",
        res,
        claimed,
        exact_epsilon(*pmfs),
    )
    assert res.epsilon_lower > claimed


# ---------------------------------------------------------------------------
# 2. One median answer (exponential mechanism over a grid of the range)
# ---------------------------------------------------------------------------
MEDIAN_K = 8


def _median_mechanism():
    mech = AdaptiveRangeRelease.calibrate(
        2.0,
        0.0,
        1,
        target_range=(0.0, 1.0),
        n_teachers=MEDIAN_K,
        aggregate="median",
        range_share=0.5,
        grid_size=5,
    )
    return mech


def _median_predictions(nb):
    # Four teachers below the grid point 0.25, one between 0.25 and 0.5,
    # three above 0.75; teacher 0 moves from 0.1 to 0.9. The count below
    # 0.25 drops from 4 (= k/2, utility 0) to 3 and the count below 0.5 from
    # 5 to 4: the two likeliest answers swap utilities, the worst case.
    predictions = np.array([0.1] * 4 + [0.4] + [0.9] * 3)
    if nb:
        predictions[0] = 0.9
    return predictions


def _median_runs(mech):
    def run(nb, n, rng):
        engine = mech.engine([rng, rng])
        engine.set_state({"range": [0.0, 1.0]})  # the range audited above
        rows = np.broadcast_to(_median_predictions(nb), (n, MEDIAN_K))
        return engine.answer("predict", rows).values["value"]

    return run


def test_median_answer_audit():
    mech = _median_mechanism()
    claimed = mech.epsilon_per_query
    res = audit(_median_runs(mech), n_runs=RUNS_ANSWER, rng=2)
    grid = range_grid((0.0, 1.0), 5)
    exact_p = []
    for nb in (0, 1):
        counts = adaptive._median_counts(_median_predictions(nb)[None, :], grid)[0]
        u = -np.abs(counts - MEDIAN_K / 2) * claimed / 2
        exact_p.append(np.exp(u - logsumexp(u)))
    exact = exact_epsilon(*exact_p)
    _record("median answer (EM)", "1 teacher 0.1 -> 0.9", res, claimed, exact)
    assert exact <= claimed + 1e-9
    _assert_private(res, claimed)


def test_median_audit_catches_a_two_sided_score(monkeypatch):
    mech = _median_mechanism()
    claimed = mech.epsilon_per_query
    original = adaptive._median_counts

    def two_sided(predictions, grid):
        # -|2 N_< - k| = -|N_< - N_>| for a grid point no teacher sits on:
        # sensitivity 2, served at the calibration of sensitivity 1
        return 2 * original(predictions, grid) - MEDIAN_K / 2

    monkeypatch.setattr(adaptive, "_median_counts", two_sided)
    res = audit(_median_runs(mech), n_runs=RUNS_ANSWER, rng=3)
    _record("BAD median: |N< - N>| score", "1 teacher 0.1 -> 0.9", res, claimed)
    assert res.epsilon_lower > claimed


# ---------------------------------------------------------------------------
# 3. One clipped-mean answer inside a released range (pure: grid Laplace)
# ---------------------------------------------------------------------------
MEAN_K = 10
MEAN_RANGE = (0.4, 0.6)


def _mean_mechanism():
    return AdaptiveRangeRelease.calibrate(
        2.0,
        0.0,
        1,
        target_range=(0.0, 1.0),
        n_teachers=MEAN_K,
        aggregate="mean",
        range_share=0.5,
    )


def _mean_predictions(nb):
    predictions = np.full(MEAN_K, 0.5)
    predictions[0] = 1.0 if nb else 0.0  # from below the range to above it
    return predictions


def _mean_runs(mech, broken=False):
    def run(nb, n, rng):
        rows = np.broadcast_to(_mean_predictions(nb), (n, MEAN_K))
        if broken:
            # the mean of unclipped teachers, clipped afterwards: one teacher
            # moves it by (hi - lo)/k, but the noise is for (b - a)/k
            a, b = MEAN_RANGE
            sensitivity = (b - a) / MEAN_K
            return grid_laplace(
                np.clip(rows.mean(axis=1), a, b),
                sensitivity,
                mech.epsilon_per_query,
                rng=rng,
                grid_step=2.0 ** round(math.log2(sensitivity / 1024)),
                bounds=(a, b),
            )
        engine = mech.engine([rng, rng])
        engine.set_state({"range": list(MEAN_RANGE)})
        return engine.answer("predict", rows).values["value"]

    return run


def test_clipped_mean_answer_audit():
    mech = _mean_mechanism()
    claimed = mech.epsilon_per_query
    res = audit(_mean_runs(mech), n_runs=RUNS_ANSWER, rng=4)
    _record("clipped mean in range", "1 teacher 0 -> 1", res, claimed)
    _assert_private(res, claimed)


def test_clipped_mean_audit_catches_clipping_the_mean():
    mech = _mean_mechanism()
    claimed = mech.epsilon_per_query
    res = audit(_mean_runs(mech, broken=True), n_runs=RUNS_ANSWER, rng=5)
    _record("BAD mean: clip the mean, not teachers", "1 teacher 0 -> 1", res, claimed)
    assert res.epsilon_lower > claimed


# ---------------------------------------------------------------------------
# 4. AdaSSP's three Gaussian releases
# ---------------------------------------------------------------------------
SSP_EPSILON, SSP_DELTA = 2.0, 1e-3
# The worst-case neighbours of the proof: _helpers.SSP_NEIGHBOUR_ROWS.


def _ssp_mechanism():
    return SufficientStatisticsRelease.calibrate(
        SSP_EPSILON,
        SSP_DELTA,
        n_features=2,
        feature_bound=1.0,
        label_bound=1.0,
        shares=(0.97, 0.01, 0.02),
    )


def test_ssp_audit():
    mech = _ssp_mechanism()
    statistic, mu = ssp_projection([mech])
    t = gaussian_threshold(mu, SSP_DELTA, RUNS_SSP, CONFIDENCE)
    res = audit(
        ssp_runs([mech], statistic),
        lambda z: np.asarray(z) >= t,
        n_runs=RUNS_SSP,
        delta=SSP_DELTA,
        rng=6,
    )
    _record("AdaSSP (Gram, moment, eigenvalue)", "row e1 -> e2", res, SSP_EPSILON)
    _assert_private(res, SSP_EPSILON)


def test_ssp_audit_catches_halved_noise(monkeypatch):
    mech = _ssp_mechanism()
    monkeypatch.setattr(
        mech, "sigma_units", tuple(s / 2 for s in mech.sigma_units), raising=True
    )
    statistic, mu = ssp_projection([mech])
    t = gaussian_threshold(mu, SSP_DELTA, RUNS_SSP, CONFIDENCE)
    res = audit(
        ssp_runs([mech], statistic),
        lambda z: np.asarray(z) >= t,
        n_runs=RUNS_SSP,
        delta=SSP_DELTA,
        rng=7,
    )
    _record("BAD AdaSSP: half the noise", "row e1 -> e2", res, SSP_EPSILON)
    assert res.epsilon_lower > SSP_EPSILON
