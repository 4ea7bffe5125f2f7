"""Attack audits of the value releases and the published models.

``PrivatePredictionRegressor``, ``SoftLabelPrivateRegressor``,
``PrivateKernelRidge`` (predictions and ``release="model"``),
``PrivateStatisticalQueries``, and the publishable estimators through what
they publish: the knowledge transfer students and
``ExponentialMechanismERM``'s hypothesis. The threat model, the fresh noise
of each run, the failure probabilities and the one table of estimators are
those of ``tests/test_audit_attack.py`` (``ESTIMATORS``).
"""

from __future__ import annotations

import contextlib
import math

import _bad_variants as bad
import numpy as np
from scipy import stats
from test_audit_attack import (
    ATTACK_MARKS,
    ESTIMATORS,
    K_SOFT_LABEL,
    PLANTED_POINT,
    SEED,
    VOTES_PAIR,
    _assert_caught,
    _assert_within,
    _attack_audit,
    _dlap_cdf,
    _exponential_probabilities,
    _false_alarm,
    _grid_laplace_below,
    _miss,
    _rows,
    attack_table,
    one_row_shards,
    one_row_targets,
)

from dpsklearn import BudgetExhaustedError
from dpsklearn.audit import exact_epsilon, plant_record, shard_rows
from dpsklearn.noise import default_grid_step

pytestmark = ATTACK_MARKS
_audit_table, _record = attack_table(
    "attack audits of the value releases and published models"
)


# ---------------------------------------------------------------------------
# 7. PrivatePredictionRegressor: the clipped mean with grid Laplace
# ---------------------------------------------------------------------------
# Ten one-row shards of DummyRegressor teachers; the planted target 0 against
# 1 among nine targets 0.5: the clipped mean 0.45 against 0.55, the whole
# sensitivity (hi - lo)/k. One query for the whole budget; the event "release
# <= 0.45" has probability 1/2 + against 1/2 e^(-1024/1025), from the grid
# Laplace's exact distribution.

REGRESSION_DATA = one_row_targets([0.5] * 9, 0.0, 1.0)


def value_attack(model, rng):
    """The released value at the planted point."""
    return float(model.predict(PLANTED_POINT)[0])


def _value_case(name, datasets, means, n_runs, rng, factor=None, **kwargs):
    model = ESTIMATORS[name](1.0, SEED).fit(*datasets[0])
    mech = model.privacy_mechanism_
    g, cut = mech.grid_step, min(means) + mech.grid_step / 2
    p = [
        _grid_laplace_below(
            m, cut, mech.sensitivity, mech.epsilon_per_query, g, factor or 1.0
        )
        for m in means
    ]
    broken = (
        contextlib.nullcontext() if factor is None else bad.value_laplace_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            name,
            1.0,
            datasets,
            value_attack,
            n_runs,
            rng,
            event=lambda value: value <= cut,
            **kwargs,
        )
    return result, p


def test_regressor_within_claim():
    """Shipped: bound <= 1 (false alarm below 5e-3, exact: this event's loss
    is the whole claim, 1024/1025 of it)."""
    result, (p0, p1) = _value_case(
        "regressor", REGRESSION_DATA, (0.45, 0.55), 600, 60, fresh_noise="copy"
    )
    _record("PrivatePredictionRegressor", "mean .45 vs .55, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_regressor_halved_noise_caught():
    """Grid Laplace at half the scale: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _value_case(
        "regressor", REGRESSION_DATA, (0.45, 0.55), 400, 61, 0.5, fresh_noise="copy"
    )
    _record("BAD regressor, noise x 1/2", "mean .45 vs .55, k=10", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 8. SoftLabelPrivateRegressor: two stability tests, the noisy-mean fallback
# ---------------------------------------------------------------------------
# Ten one-row shards of constant classifiers (soft labels 0 or 1): five 0s
# and four 1s besides the planted 0 against 1. The gamma-histogram [6,0,0,4]
# against [5,0,0,5] has distance 0 and the shifted histogram is empty, so the
# query fails both tests and is answered by the fallback, the noisy mean 0.4
# against 0.5 (grid Laplace at the fallback's epsilon), and the model halts
# (T = 1). Uncharged, the fallback answers every further row: the adversary
# asks REPEATS_SOFT rows and averages; a shipped model pads them with the
# midpoint 0.5, so its average moves by at most 1/REPEATS_SOFT.

SOFT_DATA = one_row_shards(zeros=5, ones=4)
REPEATS_SOFT = 200
SOFT_QUERIES = _rows(1e-6 * np.arange(1, REPEATS_SOFT + 1))


def soft_mean_attack(model, rng):
    """The average released value over REPEATS_SOFT rows at the planted point."""
    return float(np.mean(model.predict(SOFT_QUERIES)))


def test_soft_label_within_claim():
    """Shipped: bound <= 2 (false alarm below 1e-9, exact: one noisy mean)."""
    model = ESTIMATORS["soft_label"](2.0, SEED).fit(*SOFT_DATA[0])
    mech = model.privacy_mechanism_
    eps_fb, sensitivity = mech.fallback_epsilon, 1.0 / K_SOFT_LABEL
    g = default_grid_step(sensitivity)
    # the average is 0.5 + (v - 0.5) / REPEATS_SOFT: a threshold on v
    cut = 0.4 + g / 2
    average_cut = 0.5 + (cut - 0.5) / REPEATS_SOFT
    p0, p1 = (_grid_laplace_below(m, cut, sensitivity, eps_fb, g) for m in (0.4, 0.5))
    result = _attack_audit(
        "soft_label",
        2.0,
        SOFT_DATA,
        soft_mean_attack,
        400,
        70,
        event=lambda average: average <= average_cut,
    )
    _record("SoftLabelPrivateRegressor (noisy mean)", "mean .4 vs .5, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 2.0) < 1e-9


def _clipped_grid_laplace_moments(value, sensitivity, epsilon, grid_step):
    """Mean and variance of a grid Laplace release clipped to [0, 1] (exact)."""
    units = math.floor(sensitivity / grid_step) + 1
    scale = units / epsilon
    reach = int(40 * scale) + 10
    z = np.arange(-reach, reach + 1)
    a = math.exp(-1.0 / scale)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    released = np.clip((round(value / grid_step) + z) * grid_step, 0.0, 1.0)
    mean = float(pmf @ released)
    return mean, float(pmf @ (released - mean) ** 2)


def test_soft_label_uncharged_fallback_caught():
    """The cutoff not enforced: caught (miss below 1e-6, by the normal tails
    of an average of REPEATS_SOFT independent clipped noisy means, from their
    exact mean and variance: the two sides sit six standard deviations
    apart)."""
    model = ESTIMATORS["soft_label"](2.0, SEED).fit(*SOFT_DATA[0])
    eps_fb = model.privacy_mechanism_.fallback_epsilon
    sensitivity = 1.0 / K_SOFT_LABEL
    tails = []
    for mean in (0.4, 0.5):
        mu, var = _clipped_grid_laplace_moments(
            mean, sensitivity, eps_fb, default_grid_step(sensitivity)
        )
        tails.append(stats.norm.cdf((0.45 - mu) / math.sqrt(var / REPEATS_SOFT)))
    with bad.sparse_vector_never_halts():
        result = _attack_audit(
            "soft_label",
            2.0,
            SOFT_DATA,
            soft_mean_attack,
            150,
            71,
            event=lambda average: average <= 0.45,
        )
    _record("BAD soft label, never halts", "mean .4 vs .5, k=10", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 2.0) < 1e-6


# ---------------------------------------------------------------------------
# 9-10. PrivateKernelRidge: predictions, and the released model
# ---------------------------------------------------------------------------
# Twenty rows ten apart (K(x_i, x_j) ~ 0 for i != j at gamma = 1). With
# alpha = 1e-6 the fit interpolates: the planted label -1 against +1 at x = 0
# moves the clipped prediction there by 2 M, the whole clipped sensitivity.
# One query for the whole budget; "release <= -M" has probability 1/2 + on
# the first side and 1/2 e^(-1024/1025) on the second.
#
# The released model (release="model", alpha = 1, two random Fourier pairs):
# the planted label moves the ridge weights by at most 2/(n alpha), half the
# weight sensitivity the release is calibrated for (2 (R + M)/(n alpha), R =
# M/sqrt(alpha)), and the prediction at x = 0 by 0.08 against the noise's
# 0.75. Halving or quartering that noise is caught at the mechanism level
# (WeightRelease in tests/test_audit_gaussian.py); through the published model
# a cut of 1/32 is what a CI-affordable run count resolves.

KR_X = np.arange(20, dtype=np.float64).reshape(-1, 1) * 10.0
KR_Y = np.where(np.random.default_rng(3).random(20) < 0.5, -1.0, 1.0)
KR_DATA = plant_record(KR_X, KR_Y, 0, ([0.0], -1.0), ([0.0], 1.0))


def test_kernel_ridge_within_claim():
    """Shipped predictions: bound <= 1 (false alarm below 5e-3, exact)."""
    result, (p0, p1) = _value_case(
        "kernel_ridge", KR_DATA, (-1.0, 1.0), 600, 80, fresh_noise="copy"
    )
    _record("PrivateKernelRidge predict", "label -1 vs +1, interpolating", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_kernel_ridge_halved_noise_caught():
    """Grid Laplace at half the scale: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _value_case(
        "kernel_ridge", KR_DATA, (-1.0, 1.0), 400, 81, 0.5, fresh_noise="copy"
    )
    _record("BAD kernel ridge, noise x 1/2", "label -1 vs +1, interpolating", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def _model_case(n_runs, rng, factor=1.0):
    """The released prediction at x = 0 is the noiseless one plus noise of
    standard deviation noise_scale_ (one weight's, times ||phi(0)|| = 1;
    rounding adds g^2/12 to its variance): the event is the midpoint of the
    two noiseless predictions (from fits with the noise scaled to nothing),
    and its probabilities are normal tails."""
    with bad.weight_release_scaled(1e-12):
        noiseless = [
            ESTIMATORS["kernel_ridge_model"](1.0, SEED)
            .fit(X, y)
            .predict(PLANTED_POINT)[0]
            for X, y in KR_DATA
        ]
    model = ESTIMATORS["kernel_ridge_model"](1.0, SEED).fit(*KR_DATA[0])
    sigma = math.sqrt((factor * model.noise_scale_) ** 2 + model.grid_step_**2 / 12)
    cut = sum(noiseless) / 2
    tails = [stats.norm.sf((cut - mean) / sigma) for mean in noiseless]
    broken = (
        contextlib.nullcontext() if factor == 1.0 else bad.weight_release_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            "kernel_ridge_model",
            1.0,
            KR_DATA,
            value_attack,
            n_runs,
            rng,
            event=lambda value: value >= cut,
        )
    return result, tails, noiseless


def test_kernel_ridge_model_within_claim():
    """Shipped model release: bound <= 1 (false alarm below 1e-9, normal tails)."""
    result, tails, noiseless = _model_case(200, 90)
    _record("PrivateKernelRidge release=model", "label -1 vs +1, alpha=1", result)
    assert 0 < noiseless[1] - noiseless[0] < 0.1  # 2/(n alpha) at most
    _assert_within(result)
    assert _false_alarm(*tails, result.n_runs, result.delta, 1.0) < 1e-9


def test_kernel_ridge_model_noise_cut_caught():
    """Weights with 1/32 of the noise: caught (miss below 1e-3, normal tails:
    the two sides' released predictions sit 3.3 noise deviations apart)."""
    result, tails, _ = _model_case(200, 91, factor=1 / 32)
    _record("BAD kernel ridge model, noise x 1/32", "label -1 vs +1, alpha=1", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 11. PrivateStatisticalQueries: one chunk per query
# ---------------------------------------------------------------------------
# Four rows in two chunks; the planted row (1 against 0 in its only column)
# sits in the second chunk, which the adversary knows from the partition: it
# spends the first query on a constant (no information) and asks the count of
# ones on the planted chunk, then keeps cycling while the oracle answers. The
# shipped oracle refuses the third query (BudgetExhaustedError): one noisy
# count, the truncated geometric of 1 against 0, whose 0 has probability
# ratio exactly e^epsilon. An oracle that reuses its chunks answers the planted
# chunk SQ_CYCLES times.

SQ_ROWS = 4
SQ_CHUNKS = shard_rows(SQ_ROWS, 2, SEED)
SQ_PLANTED = int(SQ_CHUNKS[1][0])
SQ_DATA = plant_record(
    np.zeros((SQ_ROWS, 1)), None, SQ_PLANTED, ([1.0], None), ([0.0], None)
)
SQ_CYCLES = 6


def _ones(X, y):
    return X[:, 0]


def _nothing(X, y):
    return np.zeros(X.shape[0])


def statistical_query_attack(model, rng):
    """The sum of the planted chunk's answers while the oracle answers."""
    total = 0.0
    for _ in range(SQ_CYCLES):
        try:
            model.query_count(_nothing)
            total += model.query_count(_ones)
        except BudgetExhaustedError:
            break
    return total


def test_statistical_queries_within_claim():
    """Shipped: bound <= 1 (false alarm below 5e-3, exact: the event's loss is
    the whole claim)."""
    scale = 1.0  # DLap(1/epsilon) at epsilon = 1
    p0, p1 = (float(_dlap_cdf(-count, scale)) for count in (1, 0))
    result = _attack_audit(
        "statistical_queries",
        1.0,
        SQ_DATA,
        statistical_query_attack,
        600,
        100,
        fresh_noise="copy",
        event=lambda total: total == 0,
    )
    _record("PrivateStatisticalQueries", "planted chunk 1 vs 0", result, 1.0)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def _truncated_count_pmf(count, size, epsilon):
    """Output pmf of the truncated geometric on [0, size] for a true count."""
    scale = 1.0 / epsilon
    below = [float(_dlap_cdf(j - count, scale)) for j in range(size + 1)]
    return np.diff(np.r_[0.0, below[:-1], 1.0])


def test_statistical_queries_reused_chunks_caught():
    """Chunks answered again for free: caught (miss below 1e-3, exact: six
    independent answers of 1 against 0, the event at most one in total)."""
    tails = []
    for count in (1, 0):
        pmf = _truncated_count_pmf(count, 2, 1.0)
        total = pmf
        for _ in range(SQ_CYCLES - 1):
            total = np.convolve(total, pmf)
        tails.append(float(total[:2].sum()))
    with bad.statistical_queries_reuse_chunks():
        result = _attack_audit(
            "statistical_queries",
            1.0,
            SQ_DATA,
            statistical_query_attack,
            150,
            101,
            fresh_noise="copy",
            event=lambda total: total <= 1,
        )
    _record("BAD SQ oracle reuses chunks", "planted chunk 1 vs 0", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 12-13. Knowledge transfer: the published students
# ---------------------------------------------------------------------------
# The adversary's public rows are the planted point alone; the private
# teacher labels it once (max_queries=1) and the student, a tree on that one
# labelled row, answers it for free. Classifier: votes [5, 5] against [4, 6]
# (the exponential mechanism's 0 has probability 1/2 against 0.27).
# Regressor: the clipped mean 0.45 against 0.55 as above. Broken: teachers
# that label the public rows with their non-private vote (or mean): the
# student repeats the planted record's effect exactly.

PUBLIC_ROWS = {"X_public": PLANTED_POINT}


def student_label_attack(model, rng):
    """1 when the published student predicts 0 at the planted point."""
    return float(model.predict(PLANTED_POINT)[0] == 0)


def test_knowledge_transfer_within_claim():
    """Shipped student: bound <= 1 (false alarm below 1e-7, exact)."""
    p0, p1 = _exponential_probabilities([5, 5], [4, 6], 1.0)
    result = _attack_audit(
        "knowledge_transfer",
        1.0,
        VOTES_PAIR,
        student_label_attack,
        200,
        110,
        fit_params=PUBLIC_ROWS,
        event=lambda zero: zero == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record(
        "KnowledgeTransferClassifier student", "votes [5,5] vs [4,6]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-7


def test_knowledge_transfer_plain_vote_caught():
    """Public rows labelled by the plain vote: caught (the student's answer is
    certain on both sides: bound above 3 with 100 runs whatever the seed)."""
    with bad.teacher_plain_vote():
        result = _attack_audit(
            "knowledge_transfer",
            1.0,
            VOTES_PAIR,
            student_label_attack,
            100,
            111,
            fit_params=PUBLIC_ROWS,
            event=lambda zero: zero == 1,
        )
    _record("BAD student of the plain vote", "votes [5,5] vs [4,6]", result)
    assert result.counts == (result.n_runs, 0)
    _assert_caught(result)


def test_knowledge_transfer_regressor_within_claim():
    """Shipped student: bound <= 1 (false alarm below 5e-3, exact)."""
    model = ESTIMATORS["regressor"](1.0, SEED).fit(*REGRESSION_DATA[0])
    mech = model.privacy_mechanism_
    cut = 0.45 + mech.grid_step / 2
    p0, p1 = (
        _grid_laplace_below(
            m, cut, mech.sensitivity, mech.epsilon_per_query, mech.grid_step
        )
        for m in (0.45, 0.55)
    )
    result = _attack_audit(
        "knowledge_transfer_regressor",
        1.0,
        REGRESSION_DATA,
        value_attack,
        200,
        120,
        fit_params=PUBLIC_ROWS,
        event=lambda value: value <= cut,
    )
    _record("KnowledgeTransferRegressor student", "mean .45 vs .55, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_knowledge_transfer_regressor_plain_mean_caught():
    """Public rows labelled by the plain mean: caught (certain on both sides)."""
    with bad.teacher_plain_vote():
        result = _attack_audit(
            "knowledge_transfer_regressor",
            1.0,
            REGRESSION_DATA,
            value_attack,
            100,
            121,
            fit_params=PUBLIC_ROWS,
            event=lambda value: value <= 0.5,
        )
    _record("BAD student of the plain mean", "mean .45 vs .55, k=10", result)
    assert result.counts == (result.n_runs, 0)
    _assert_caught(result)


# ---------------------------------------------------------------------------
# 14. ExponentialMechanismERM: the published hypothesis
# ---------------------------------------------------------------------------
# Two stumps at 0.5 (either orientation) on ten rows, five at 0.25 and five at
# 0.75; the planted record (0.25, 1) against (0.25, 0) moves their error
# counts from (5, 5) to (4, 6). The adversary reads the published stump's
# prediction at 0.25: the first stump (0 on the left) has probability 1/2
# against 1/(1 + e^-1) = 0.73.

ERM_X = _rows([0.25] * 5 + [0.75] * 5)
ERM_Y = np.array([0, 0, 0, 1, 1, 1, 1, 0, 0, 0])
ERM_DATA = plant_record(ERM_X, ERM_Y, 3, ([0.25], 1), ([0.25], 0))


def hypothesis_attack(model, rng):
    """1 when the published stump says 1 at 0.25 (the second orientation)."""
    return float(model.predict(_rows([0.25]))[0] == 1)


def test_erm_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-9, exact)."""
    p0, p1 = 0.5, 1 / (1 + math.exp(1.0))
    result = _attack_audit(
        "erm", 1.0, ERM_DATA, hypothesis_attack, 600, 130, event=lambda one: one == 1
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("ExponentialMechanismERM", "errors (5,5) vs (4,6)", result, exact)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


def test_erm_halved_sensitivity_caught():
    """Half the utility sensitivity: caught (miss below 1e-3, exact)."""
    p0, p1 = 0.5, 1 / (1 + math.exp(2.0))
    with bad.erm_utility_sensitivity_halved():
        result = _attack_audit(
            "erm",
            1.0,
            ERM_DATA,
            hypothesis_attack,
            1500,
            131,
            event=lambda one: one == 1,
        )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("BAD ERM, sensitivity / 2", "errors (5,5) vs (4,6)", result, exact)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3
