"""Attack audits of the vote mechanisms: Confident-GNMax, the exponential
mechanism (``predict``, ``predict_proba``) and GNMax.

The threat model, the fresh noise of each run, the failure probabilities and
the one table of estimators are those of ``tests/test_audit_attack.py``
(``ESTIMATORS``); this module attacks the estimators that release votes.
"""

from __future__ import annotations

import contextlib
import copy
import math

import _bad_variants as bad
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp
from test_audit_attack import (
    ATTACK_MARKS,
    ESTIMATORS,
    K_GNMAX,
    PLANTED_POINT,
    SEED,
    VOTES_PAIR,
    _assert_caught,
    _assert_within,
    _attack_audit,
    _bound_pairs,
    _dlap_difference_sf,
    _exponential_probabilities,
    _false_alarm,
    _gauss_difference_sf,
    _miss,
    _rows,
    attack_table,
    one_row_shards,
    planted_tree_shard,
)

from dpsklearn.audit import exact_epsilon

pytestmark = ATTACK_MARKS
_audit_table, _record = attack_table("attack audits of the vote mechanisms")


# ---------------------------------------------------------------------------
# 3. Confident-GNMax (SubsampleAggregateClassifier, mechanism="confident_gnmax")
# ---------------------------------------------------------------------------
# Claim (1, 1e-5) for max_queries=2000 threshold checks and max_answers=1
# answer: the answer's noise sigma2 is small (half of rho goes to it), the
# threshold checks' sigma1 large. Votes [14, 7] against [13, 8] (21 one-row
# shards). The adversary asks 2000 rows at the planted point at once: the
# model answers the first that clears the threshold and halts. The score is
# the share of answers that are 1; the shipped model's one answer is 1 with
# P(Z1 - Z0 > 7) against P(Z1 - Z0 > 5). With answers uncharged (past
# max_answers) about 1000 rows are answered and their share of 1s separates
# the sides.

CONFIDENT_DATA = one_row_shards(zeros=13, ones=7)
CONFIDENT_QUERIES = _rows(1e-6 * np.arange(1, 2001))


def confident_attack(model, rng):
    """The share of rows the mechanism answered labelled 1 (-1 when none).

    Rows the student of released answers fills in (post-processing) are left
    out: the event reads the mechanism's own answers.
    """
    labels, source = model.predict(CONFIDENT_QUERIES, return_source=True)
    answered = labels[source == "private"]
    return float(np.mean(answered == 1)) if answered.size else -1.0


def _confident_label_probabilities():
    model = ESTIMATORS["confident_gnmax"](1.0, SEED).fit(*CONFIDENT_DATA[0])
    sigma = model.sigma_argmax_
    return model, [_gauss_difference_sf(gap, sigma) for gap in (7, 5)]


def _dgauss_sf(threshold, sigma):
    """P(N_Z(0, sigma^2) >= threshold)."""
    half = int(40 * sigma) + 40
    z = np.arange(-half, half + 1)
    log_pmf = -(z.astype(np.float64) ** 2) / (2 * sigma * sigma)
    return float(np.exp(log_pmf - logsumexp(log_pmf))[z >= threshold].sum())


def test_confident_gnmax_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-9 at the exact probabilities)."""
    _, (p0, p1) = _confident_label_probabilities()
    result = _attack_audit(
        "confident_gnmax",
        1.0,
        CONFIDENT_DATA,
        confident_attack,
        600,
        30,
        fresh_noise="copy",
        event=lambda share: share == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1], result.delta)
    _record(
        "SubsampleAggregate Confident-GNMax", "votes [14,7] vs [13,8]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


def test_confident_gnmax_uncharged_answers_caught():
    """Answers past max_answers: caught (miss probability below 1e-6 by the
    binomial tails of about 1000 answers per run)."""
    model, (p0, p1) = _confident_label_probabilities()
    cut = (p0 + p1) / 2
    with bad.confident_gnmax_answers_uncharged():
        result = _attack_audit(
            "confident_gnmax",
            1.0,
            CONFIDENT_DATA,
            confident_attack,
            150,
            31,
            fresh_noise="copy",
            event=lambda share: share >= cut,
        )
    _record("BAD Confident-GNMax, answers uncharged", "votes [14,7] vs [13,8]", result)
    _assert_caught(result)
    # Each row passes the threshold check with probability P(top + Z1 >=
    # threshold) (top count 14 or 13): the answers per run are at least a
    # number whose binomial tail is below 1e-9, and with that many answers the
    # share's tails at the cut (a smaller count only widens them) bound the
    # event's probability on each side.
    passed = min(
        _dgauss_sf(math.ceil(model.threshold_ - top), model.sigma_threshold_)
        for top in (14, 13)
    )
    answers = int(stats.binom.ppf(1e-9, CONFIDENT_QUERIES.shape[0], passed))
    below = stats.binom.cdf(math.ceil(cut * answers) - 1, answers, p1)
    above = stats.binom.sf(math.ceil(cut * answers) - 1, answers, p0)
    assert (
        _miss(1 - below - 1e-9, above + 1e-9, result.n_runs, result.delta, 1.0) < 1e-6
    )


# ---------------------------------------------------------------------------
# 4-5. PrivatePredictionClassifier: the exponential mechanism, predict and
#      predict_proba
# ---------------------------------------------------------------------------
# Ten one-row shards, one query for the whole budget (max_queries=1). predict:
# the adversary reads score() on the planted point with label 0, which is the
# private answer's correctness; votes [3, 7] against [2, 8], where one vote
# moves the rare label's probability by e^0.92. predict_proba: the released
# vote share of class 0, the mean of the teachers' rows plus grid Laplace
# noise per class, projected to the simplex; its event is chosen on half the
# runs.

VOTES_DATA = one_row_shards(zeros=2, ones=7)  # [3, 7] against [2, 8]


def score_attack(model, rng):
    """score() of the planted point with label 0: 1 when the answer is 0."""
    return float(model.score(PLANTED_POINT, [0]))


def proba_attack(model, rng):
    """The released probability of class 0 at the planted point."""
    return float(model.predict_proba(PLANTED_POINT)[0, 0])


def test_exponential_predict_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-3 at the exact probabilities:
    this output's loss is 0.92 of the claim)."""
    p0, p1 = _exponential_probabilities([3, 7], [2, 8], 1.0)
    result = _attack_audit(
        "exponential",
        1.0,
        VOTES_DATA,
        score_attack,
        600,
        40,
        fresh_noise="copy",
        event=lambda correct: correct == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record(
        "PrivatePrediction predict (exp. mech.)", "votes [3,7] vs [2,8]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def test_exponential_predict_without_half_caught():
    """exp(eps count): caught (miss probability below 1e-3, exact)."""
    # the broken sampler's probabilities: twice the logit
    p0, p1 = _exponential_probabilities([5, 5], [4, 6], 2.0)
    with bad.soft_majority_without_half():
        result = _attack_audit(
            "exponential",
            1.0,
            VOTES_PAIR,
            score_attack,
            1500,
            41,
            fresh_noise="copy",
            event=lambda correct: correct == 1,
        )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("BAD exp. mech. without 1/2", "votes [5,5] vs [4,6]", result, exact)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def _proba_case(n_runs, rng, factor=None):
    """The released share of class 0 is ``clip((1 + g T) / 2, 0, 1)`` with
    ``T = c0 - c1 + Z0 - Z1`` (grid units of the two classes' mean rows plus
    their DLap noises): the event ``T >= tau`` is a threshold on the release,
    chosen from these exact tails (``_likeliest_set`` on the tail sums)."""
    model = ESTIMATORS["exponential"](1.0, SEED).fit(*VOTES_DATA[0])
    mech = model.privacy_mechanism_
    g = mech.proba_grid_step
    units = math.floor((2.0 / mech.n_teachers) / g) + mech.n_classes
    scale = units / mech.proba_epsilon * (1.0 if factor is None else factor)
    centres = [round(-0.4 / g), round(-0.6 / g)]  # c0 - c1: shares .3/.7, .2/.8
    taus = np.arange(centres[1] - 3 * int(scale), centres[0] + 4 * int(scale), 8)
    tails = np.array([_dlap_difference_sf(taus - c, scale) for c in centres])
    expected = _bound_pairs(
        n_runs, 0.0, np.rint(tails[0] * n_runs), np.rint(tails[1] * n_runs)
    )
    best = int(np.argmax(expected))
    cut = (1 + g * (taus[best] - 0.5)) / 2  # the release at T = tau - 1/2
    broken = (
        contextlib.nullcontext() if factor is None else bad.proba_laplace_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            "exponential",
            1.0,
            VOTES_DATA,
            proba_attack,
            n_runs,
            rng,
            fresh_noise="copy",
            event=lambda share: share >= cut,
        )
    return result, tails[:, best]


def test_exponential_proba_within_claim():
    """Shipped predict_proba: bound <= 1 (false alarm below 1e-6, exact tails)."""
    result, (p0, p1) = _proba_case(600, 42)
    _record("PrivatePrediction predict_proba", "shares .3 vs .2", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-6


def test_exponential_proba_quartered_noise_caught():
    """Grid Laplace at a quarter of the scale: caught (miss probability below
    1e-9, exact tails). Halving needs 3,000 runs per side (the slow variant;
    at 600 its miss probability is 0.48)."""
    result, (p0, p1) = _proba_case(600, 43, factor=0.25)
    _record("BAD predict_proba, noise x 1/4", "shares .3 vs .2", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


@pytest.mark.slow
def test_exponential_proba_halved_noise_caught_slow():
    """Half the scale, 3,000 runs per side: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _proba_case(3000, 44, factor=0.5)
    _record("BAD predict_proba, noise x 1/2", "shares .3 vs .2", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 6. PrivatePredictionClassifier(mechanism="gnmax"): noisy vote counts
# ---------------------------------------------------------------------------
# Forty teachers: the planted tree shard and 39 single-class shards split
# 20 : 19. At x = 0.001 the votes are [21, 19] against [20, 20]; at x = 7 the
# planted teacher votes 1 on both sides: [20, 20]. One query for the whole
# budget, read through predict_proba (the vote shares of the noisy counts, the
# whole release). The Gaussian's loss sits in its far tail: the event is
# chosen on half the runs, and the bound stays far below the claim (halving
# sigma is caught at the mechanism level, tests/test_audit_gaussian.py).
#
# The attack that copies: the adversary copies the model it is given before
# asking anything (the claim then covers two budgets, 2 epsilon), asks the
# planted point of one copy and x = 7 of the other, and checks whether the
# two shares differ by exactly the one vote the planted teacher moves. Copies
# that reseed make the difference noisy on both sides; copies that replay the
# noise (tests/_bad_variants.py) cancel it: exactly one vote apart on the
# first side, exactly equal on the second.

GNMAX_DATA = planted_tree_shard(K_GNMAX, [0] * 20 + [1] * 19)
GNMAX_POINT, GNMAX_REFERENCE = _rows([0.001]), _rows([7.0])


def gnmax_share_attack(model, rng):
    """The released vote share of class 0 at the planted point."""
    return float(model.predict_proba(GNMAX_POINT)[0, 0])


def gnmax_cancel_attack(model, rng):
    """1 when two copies' shares are exactly equal (the noise cancelled)."""
    twin = copy.deepcopy(model)
    first = model.predict_proba(GNMAX_POINT)[0, 0]
    second = twin.predict_proba(GNMAX_REFERENCE)[0, 0]
    return float(first == second)


def test_gnmax_neighbours_differ_by_one_vote_at_the_planted_point():
    counts = []
    for X, y in GNMAX_DATA:
        model = ESTIMATORS["gnmax"](1.0, SEED).fit(X, y)
        counts.append(model._vote_counts(np.vstack([GNMAX_POINT, GNMAX_REFERENCE])))
    assert counts[0].tolist() == [[21, 19], [20, 20]]
    assert counts[1].tolist() == [[20, 20], [20, 20]]


def test_gnmax_within_claim():
    """Shipped: bound <= 1 (false alarm at most 0.05)."""
    result = _attack_audit(
        "gnmax", 1.0, GNMAX_DATA, gnmax_share_attack, 600, 50, fresh_noise="copy"
    )
    _record("PrivatePrediction GNMax predict_proba", "votes [21,19] vs [20,20]", result)
    _assert_within(result)


def _gnmax_equal_probabilities():
    """P(two reseeded copies' shares are equal) on each side: the two noisy
    differences n0 - n1 of the copies differ by the planted vote's 2 (first
    side) or 0 (second), so the event is D_B - D_A = 2 or 0 for four
    independent discrete Gaussians (clipping, below 1e-9 at k = 40, aside)."""
    model = ESTIMATORS["gnmax"](1.0, SEED).fit(*GNMAX_DATA[0])
    sigma = model.sigma_
    half = int(40 * sigma) + 40
    z = np.arange(-half, half + 1)
    log_pmf = -(z.astype(np.float64) ** 2) / (2 * sigma * sigma)
    pmf = np.exp(log_pmf - logsumexp(log_pmf))
    difference = np.convolve(pmf, pmf)  # one copy's Z0 - Z1
    of_two = np.convolve(difference, difference)  # D_B - D_A, centred at 4 half
    return [float(of_two[4 * half + gap]) for gap in (2, 0)]


def _gnmax_copies_case(rng, broken=None):
    """The attack that copies, on fresh fits (OS entropy), claim 2 epsilon."""
    with broken or contextlib.nullcontext():
        return _attack_audit(
            "gnmax",
            1.0,
            GNMAX_DATA,
            gnmax_cancel_attack,
            200,
            rng,
            fresh_noise="entropy",
            claimed=2.0,
            event=lambda equal: equal == 1,
        )


def test_gnmax_copies_within_twice_the_claim():
    """Two reseeded copies: bound <= 2 (false alarm below 1e-9, exact: the
    event has probability about 0.035 on both sides)."""
    p0, p1 = _gnmax_equal_probabilities()
    result = _gnmax_copies_case(51)
    _record("GNMax, two copies", "planted vs reference point", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 2.0) < 1e-9


def test_gnmax_copies_replaying_noise_caught():
    """Copies that replay the noise: caught (the second side's shares are
    always equal and the first side's never, up to clipping below 1e-9: a
    certain event, bound above 2 with 200 runs whatever the seed)."""
    result = _gnmax_copies_case(52, bad.copies_replay_noise())
    _record("BAD GNMax copies replay noise", "planted vs reference point", result)
    assert result.counts[1] == result.n_runs
    _assert_caught(result)
