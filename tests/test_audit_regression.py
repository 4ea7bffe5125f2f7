"""Privacy audits of the regression releases added beside the ensembles.

Same rules as ``tests/test_audit_estimators.py``: each audit runs the
estimator's own release on the worst-case neighbours of its proof
(replace-one: docs/design.rst, "Neighbouring datasets and what epsilon
covers"), asserts ``epsilon_lower <= claimed`` and, so that the audit has
power, ``epsilon_lower >= 0.5 x claimed``, and shows that a known-bad
variant (``tests/_bad_variants.py``) exceeds the claim:

* the discrete Gaussian per-query release of
  :class:`PrivatePredictionRegressor` (``ClippedMean(noise="gaussian")``), at the
  ``sigma`` of a model claiming ``(1, 1e-5)`` for one query, on teachers
  trained on one-row shards whose labels differ in one record (the clipped
  mean moves by the whole sensitivity ``(hi - lo) / k``); the bad variant
  serves at ``sigma / 2``;
* the sharded kernel ridge prediction release of :class:`PrivateKernelRidge`
  (``OutputPerturbation(n_shards=k)``), whose sensitivity is ``min(Lemma 2 at n/k rows,
  2 M) / k`` (docs/design.rst, "Sharded kernel ridge"), on two fits that
  differ in one label (``-M`` against ``+M``) at a point the shard fits
  interpolate; the bad variant divides the sensitivity by ``k`` once more.

Where the output distribution can be written down it is (the "exact"
column: discrete Gaussian and discrete Laplace on the grid, clipped), and
the audited event is chosen from it, never from the runs. Confidence 0.95
per bound (Bonferroni over both directions); runs per neighbour are stated
per test; every audit is seeded, so the file is deterministic.
"""

from __future__ import annotations

import math

import _bad_variants as bad
import numpy as np
import pytest
from _helpers import AuditTable
from _helpers import assert_private as _assert_private
from scipy import stats
from scipy.special import logsumexp
from sklearn.dummy import DummyRegressor

from dpsklearn import (
    ClippedMean,
    OutputPerturbation,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.accounting import discrete_gaussian_epsilon
from dpsklearn.audit import audit, exact_epsilon

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning"),
    pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning"),
]

CONFIDENCE = 0.95
RUNS_GAUSSIAN = 400_000  # one batched predict per neighbour (~1 s)
RUNS_SHARDED_RIDGE = 200_000  # one batched predict per neighbour

_TABLE = AuditTable(
    "regression privacy audit",
    f"confidence {CONFIDENCE} per bound (Bonferroni over both directions); "
    "'exact' is the loss of the enumerated output distributions; a BAD row "
    "is a known-bad variant that must show a leak.",
)
_audit_table = _TABLE.fixture()


_record = _TABLE.record


def _query_ids(m):
    # distinct rows: a repeated row would be answered from the release cache
    return np.arange(m, dtype=np.float64).reshape(-1, 1)


def _clipped_grid_pmf(centre, log_pmf, offsets, top):
    """PMF over the grid units ``0..top`` of ``clip(centre + Z, 0, top)``."""
    values = centre + offsets
    pmf = np.exp(log_pmf)
    out = np.zeros(top + 1)
    inside = (values >= 0) & (values <= top)
    np.add.at(out, values[inside], pmf[inside])
    out[0] += pmf[values < 0].sum()
    out[top] += pmf[values > top].sum()
    return out / out.sum()


def _upper_threshold_with_most_power(p_likely, p_unlikely, delta, n_runs):
    """The grid unit ``c`` whose event ``output >= c`` has the largest expected
    lower bound, from the exact distributions only (never from the runs)."""
    a = np.clip(np.cumsum(p_likely[::-1])[::-1], 0.0, 1.0)
    b = np.clip(np.cumsum(p_unlikely[::-1])[::-1], 0.0, 1.0)
    z = stats.norm.isf((1 - CONFIDENCE) / 4)
    lower = a - z * np.sqrt(a * (1 - a) / n_runs) - delta
    upper = b + z * np.sqrt(b * (1 - b) / n_runs)
    expected = np.log(np.maximum(lower, 1e-300) / np.maximum(upper, 1e-300))
    return int(np.argmax(expected))


# ---------------------------------------------------------------------------
# 1. The discrete Gaussian per-query release (docs/design.rst, "Gaussian
#    per-query releases")
# ---------------------------------------------------------------------------
# A hundred one-row shards; DummyRegressor teachers predict their one label,
# so the clipped mean is the mean label: 0.5 on one side and 0.51 on the
# other (one record's label 0 -> 1), the whole sensitivity (hi - lo) / k =
# 0.01. The noise (sigma about 0.04) then rarely reaches the clipped ends of
# [0, 1], which would hide the tail the audit reads.
# Claim: a model with max_queries=1, epsilon=1, delta=1e-5 releases one value
# with sigma_u, (1, 1e-5)-DP. The audited models serve R distinct rows at
# that sigma_u: their epsilon is the zCDP conversion rho + 2 sqrt(rho
# ln(1/delta)) of R discrete Gaussians at sigma_u (rho = R u^2 / (2
# sigma_u^2), computed here; at such a large rho the closed form certifies
# more than dp_accounting's RDP orders, so "auto" takes it and inverts it
# back to sigma_u), so each of their rows is one independent run of the
# claim.

GAUSS_DELTA = 1e-5
GAUSS_K = 100
GAUSS_X = np.arange(GAUSS_K, dtype=np.float64).reshape(-1, 1)
GAUSS_Y = (
    np.repeat([0.0, 1.0], GAUSS_K // 2),
    np.concatenate([[1.0], np.repeat([0.0, 1.0], [GAUSS_K // 2 - 1, GAUSS_K // 2])]),
)


def _gaussian_model(nb, epsilon, n_queries, seed=None):
    return PrivatePredictionRegressor(
        DummyRegressor(),
        n_estimators=GAUSS_K,
        epsilon=epsilon,
        delta=GAUSS_DELTA,
        max_queries=n_queries,
        # The stated spread (the most a target in (0, 1) can have) only lets
        # fit serve the audit's answers; the calibration does not read it.
        mechanism=ClippedMean(noise="gaussian", target_std=0.5),
        target_range=(0.0, 1.0),
        random_state=0,
        noise_random_state=seed,
    ).fit(GAUSS_X, GAUSS_Y[nb])


def _gaussian_rdp_epsilon(sigma_units, units, count):
    """Independent dp_accounting RDP epsilon of ``count`` releases."""
    import dp_accounting as dpa

    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    accountant.compose(dpa.GaussianDpEvent(sigma_units / units), count)
    return accountant.get_epsilon(GAUSS_DELTA)


def _gaussian_exact(models, sigma_units):
    """The released grid values' distributions (clipped to [0, 1]) per side."""
    g = models[0].grid_step_
    top = int(round(1.0 / g))
    span = int(math.ceil(14 * sigma_units))
    offsets = np.arange(-span, span + 1)
    log_pmf = -(offsets.astype(np.float64) ** 2) / (2 * sigma_units**2)
    log_pmf -= logsumexp(log_pmf)
    centres = [int(np.rint(GAUSS_Y[nb].mean() / g)) for nb in (0, 1)]
    return [_clipped_grid_pmf(c, log_pmf, offsets, top) for c in centres], g


def _gaussian_audit(sigma_units, seed, broken=False):
    single = _gaussian_model(0, 1.0, 1)
    units = single.privacy_mechanism_.units
    # R discrete Gaussians at sigma_u, composed exactly (Gaussian DP with the
    # lattice correction), which "auto" inverts back to sigma_u.
    groups = [(sigma_units, units, RUNS_GAUSSIAN)]
    epsilon = discrete_gaussian_epsilon(GAUSS_DELTA, groups)
    models = []
    for nb in (0, 1):
        model = _gaussian_model(nb, epsilon, RUNS_GAUSSIAN, seed + nb)
        assert model.calibration_ == "gaussian"
        assert model.privacy_mechanism_.conversion == "gdp"
        assert model.privacy_mechanism_.sigma_units == pytest.approx(
            sigma_units, rel=1e-5
        )
        assert model.sensitivity_ == pytest.approx(1 / GAUSS_K)
        if broken:
            bad.grid_gaussian_half_sigma(model)
        models.append(model)
    served = models[0]._serving_state_.engine.sigma_units
    (p0, p1), g = _gaussian_exact(models, served)
    # the side whose mean is larger makes large outputs likelier
    threshold = _upper_threshold_with_most_power(p1, p0, GAUSS_DELTA, RUNS_GAUSSIAN)

    def event(values):
        return np.rint(np.asarray(values) / g) >= threshold

    def mech(nb, n, rng):
        return models[nb].predict(_query_ids(n))

    res = audit(mech, event, n_runs=RUNS_GAUSSIAN, delta=GAUSS_DELTA, rng=seed)
    for model in models:
        assert model.budget_status().query_units_remaining == 0
    return res, exact_epsilon(p1, p0, GAUSS_DELTA)


def test_gaussian_release_audit():
    single = _gaussian_model(0, 1.0, 1)
    claimed = single.epsilon
    sigma_units = single.privacy_mechanism_.sigma_units
    assert single.calibration_ == "gaussian" and single.epsilon_per_query_ is None
    units = single.privacy_mechanism_.units
    # One release at sigma_u is (1, 1e-5)-DP by its exact composition (Gaussian
    # DP with the lattice correction), and not much less (tight).
    groups = [(sigma_units, units, 1)]
    assert 0.999 < discrete_gaussian_epsilon(GAUSS_DELTA, groups) <= claimed
    res, exact = _gaussian_audit(sigma_units, 800)
    _record(
        f"PrivatePredictionRegressor gaussian (delta={GAUSS_DELTA:g})",
        "mean label 0.5 vs 0.51, k=100",
        res,
        claimed,
        exact,
    )
    _assert_private(res, claimed)
    # A lower confidence bound on this output's loss: below its exact value.
    assert res.epsilon_lower <= exact <= claimed


def test_bad_gaussian_half_sigma_is_caught():
    single = _gaussian_model(0, 1.0, 1)
    claimed = single.epsilon
    res, exact = _gaussian_audit(single.privacy_mechanism_.sigma_units, 810, True)
    _record(
        f"BAD gaussian at sigma/2 (delta={GAUSS_DELTA:g})",
        "mean label 0.5 vs 0.51, k=100",
        res,
        claimed,
        exact,
    )
    assert exact > claimed
    assert res.epsilon_lower > claimed, f"audit missed a leak: {res}"


# ---------------------------------------------------------------------------
# 2. Sharded kernel ridge, one query (docs/design.rst, "Sharded kernel ridge")
# ---------------------------------------------------------------------------
# Twenty rows ten apart (K(x_i, x_j) ~ 0 for i != j at gamma = 1) in k = 4
# shards of five, with a regularisation so small that each shard's fit
# interpolates its rows and is ~0 elsewhere. Replacing record 0's label -M by
# +M moves its shard's clipped prediction at x_0 by the whole 2 M and leaves
# the other shards at ~0, so the average of the four moves by 2 M / 4 = 0.5:
# exactly sensitivity_ = min(Lemma 2 at 5 rows, 2 M) / 4. One query at
# eps_q = 1: a model claiming max_queries=1 and epsilon=1, audited through
# models that release R single-query answers with epsilon = R under basic
# composition (the same eps_q and sensitivity, checked).

KR_M = 1.0
KR_K = 4
KR_X = np.arange(20, dtype=np.float64).reshape(-1, 1) * 10.0
KR_Y = np.where(np.random.default_rng(3).random(20) < 0.5, -KR_M, KR_M)
KR_PARAMS = dict(
    kernel="rbf",
    kernel_params={"gamma": 1.0},
    alpha=1e-6,
    y_bound=KR_M,
    delta=0.0,  # basic composition
    mechanism=OutputPerturbation(n_shards=KR_K),
    random_state=0,
)


def _kr_labels(nb):
    y = KR_Y.copy()
    y[0] = (-KR_M, KR_M)[nb]  # the replaced record's label
    return y


def _kr_models(seed):
    return [
        PrivateKernelRidge(
            epsilon=float(RUNS_SHARDED_RIDGE),
            max_queries=RUNS_SHARDED_RIDGE,
            noise_random_state=seed + nb,
            **KR_PARAMS,
        ).fit(KR_X, _kr_labels(nb))
        for nb in (0, 1)
    ]


def _kr_exact(models):
    """Output distributions of one query at x_0 (grid units, clipped to +-M)."""
    engine = models[0]._serving_state_.engine
    mech = engine.mechanism
    g, scale = mech.grid_step, mech.units / mech.epsilon_per_query
    top = int(round(2 * KR_M / g))  # grid units shifted so that -M is 0
    span = int(math.ceil(60 * scale))
    offsets = np.arange(-span, span + 1)
    log_pmf = -np.abs(offsets) / scale
    log_pmf -= logsumexp(log_pmf)
    centres = [
        int(np.rint(m._exact_predictions(KR_X[:1])[0] / g)) + top // 2 for m in models
    ]
    return [_clipped_grid_pmf(c, log_pmf, offsets, top) for c in centres], g, top


def _kr_audit(seed, broken=False):
    models = _kr_models(seed)
    single = PrivateKernelRidge(epsilon=1.0, max_queries=1, **KR_PARAMS).fit(
        KR_X, _kr_labels(0)
    )
    for model in models:
        assert model.per_query_epsilon_ == single.per_query_epsilon_ == 1.0
        assert model.sensitivity_ == single.sensitivity_ == 2 * KR_M / KR_K
        if broken:
            bad.kernel_ridge_shards_divided_twice(model)
    gap = np.diff([m._exact_predictions(KR_X[:1])[0] for m in models])[0]
    assert gap == pytest.approx(2 * KR_M / KR_K, rel=1e-4)  # the bound, attained
    (p0, p1), g, top = _kr_exact(models)
    # side 0 has the smaller mean: small outputs are likelier there
    threshold = top - _upper_threshold_with_most_power(
        p0[::-1], p1[::-1], 0.0, RUNS_SHARDED_RIDGE
    )

    def event(values):
        return np.rint(np.asarray(values) / g) + top // 2 <= threshold

    def mech(nb, n, rng):
        return models[nb].predict(np.repeat(KR_X[:1], n, axis=0))

    res = audit(mech, event, n_runs=RUNS_SHARDED_RIDGE, rng=seed)
    return res, exact_epsilon(p0, p1)


def test_sharded_kernel_ridge_single_query_audit():
    res, exact = _kr_audit(900)
    _record(
        f"sharded kernel ridge, k={KR_K}, 1 query",
        "one label -M vs +M",
        res,
        1.0,
        exact,
    )
    _assert_private(res, 1.0)
    assert res.epsilon_lower <= exact <= 1.0


def test_bad_sharded_kernel_ridge_divided_twice_is_caught():
    res, exact = _kr_audit(910, broken=True)
    _record(
        f"BAD sharded kernel ridge, Delta/k^2, k={KR_K}",
        "one label -M vs +M",
        res,
        1.0,
        exact,
    )
    assert exact > 1.0
    assert res.epsilon_lower > 1.0, f"audit missed a leak: {res}"
