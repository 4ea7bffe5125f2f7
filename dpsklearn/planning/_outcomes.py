"""Expected outcomes of the vote mechanisms, from vote histograms, without running them.

Exact or numerically integrated probabilities that a mechanism answers a
query with a given vote histogram, and that its answer is a given class:
the building blocks of the regime guide (:func:`predict_regime`) and of
:func:`confident_gnmax_outcome`. Nothing here touches private data.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_softmax, ndtr
from scipy.stats import binom

from .._validation import FINITE_POSITIVE, validate_params
from ..mechanisms import check_vote_counts, noise_quantiles, noise_survival

__all__ = [
    "argmax_win_probability",
    "confident_gnmax_outcome",
    "expected_min_binomial",
    "exponential_win_probability",
    "sparse_vector_outcome",
]

_THRESHOLD_NODES = 2001  # quantile nodes for the sparse vector threshold noise


def _discrete_gaussian_cdf_table(sigma):
    """``(offset, cdf)``: ``P(Z <= z) = cdf[z + offset]`` for ``|z| <= offset``."""
    half = int(math.ceil(14.0 * sigma)) + 2
    support = np.arange(-half, half + 1, dtype=np.float64)
    log_w = -(support**2) / (2.0 * sigma * sigma)
    pmf = np.exp(log_w - log_w.max())
    pmf /= pmf.sum()
    return half, np.cumsum(pmf), pmf


def _tail_at_least(values, sigma):
    """``P(Z >= v)`` for ``Z ~ N_Z(0, sigma^2)`` and real ``v`` (vectorised)."""
    half, cdf, _ = _discrete_gaussian_cdf_table(sigma)
    # Z >= v  <=>  Z >= ceil(v);  P(Z >= n) = 1 - cdf[n - 1]
    n = np.ceil(np.asarray(values, dtype=np.float64)) - 1.0
    index = np.clip(n + half, -1, 2 * half).astype(np.int64)
    below = np.where(index < 0, 0.0, cdf[np.maximum(index, 0)])
    return 1.0 - below


def argmax_win_probability(counts, target, sigma):
    """``P(argmax(counts + noise) = target)`` per row.

    Two classes: exact for the discrete Gaussian (ties go to the lower index).
    More classes: the continuous Gaussian, by Gauss-Hermite quadrature over
    the target's noise (an approximation; ties have probability 0 there).
    """
    rows = np.arange(counts.shape[0])
    n_classes = counts.shape[1]
    if n_classes == 1:
        return np.ones(counts.shape[0])
    if n_classes == 2:
        half, _, pmf = _discrete_gaussian_cdf_table(sigma)
        diff_pmf = np.convolve(pmf, pmf)  # Z_other - Z_target, support +-2 half
        diff_cdf = np.cumsum(diff_pmf)
        other = 1 - target
        gap = counts[rows, target] - counts[rows, other]  # target wins iff D <= gap
        # (or D == gap exactly and target is the lower index)
        strict = np.where(target < other, gap, gap - 1)
        index = np.clip(strict + 2 * half, -1, 4 * half)
        return np.where(index < 0, 0.0, diff_cdf[np.maximum(index, 0)])
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    own = counts[rows, target].astype(np.float64)
    others = np.delete(
        counts.astype(np.float64).reshape(-1), rows * n_classes + target
    ).reshape(counts.shape[0], n_classes - 1)
    # P(win) = E_z prod_i Phi((own - other_i) / sigma + z)
    shifted = (own[:, None] - others)[:, :, None] / sigma + nodes[None, None, :]
    return np.prod(ndtr(shifted), axis=1) @ weights


@validate_params(
    {
        "counts": ["array-like"],
        "threshold": [Real],
        "sigma_threshold": [FINITE_POSITIVE],
        "sigma_argmax": [FINITE_POSITIVE],
        "max_answers": [Integral, None],
        "labels": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def confident_gnmax_outcome(
    counts: ArrayLike,
    threshold: float,
    sigma_threshold: float,
    sigma_argmax: float,
    *,
    max_answers: int | None = None,
    labels: ArrayLike | None = None,
) -> dict[str, float]:
    """Expected answered fraction and accuracy of Confident-GNMax on vote histograms.

    For a sequence of ``m`` queries with known vote counts (for instance from
    teachers trained on public labelled data, or a private histogram of
    margins), without running the mechanism: query ``i`` passes the
    threshold check with probability ``p_i = P(max_j n_ij + N_Z(0, sigma1^2)
    >= threshold)`` (exact), and the noisy argmax returns the class ``y_i``
    (``labels``, default the plurality) with probability ``q_i`` (exact for
    two classes, Gaussian quadrature otherwise). With ``max_answers = A`` the
    model halts after ``A`` answers, so query ``i`` is answered only if fewer
    than ``A`` of the queries before it passed; that probability is taken from
    a normal approximation of the number of earlier passes
    (``P(S_{i-1} <= A - 1)``, continuity-corrected).

    Parameters
    ----------
    counts : int array-like of shape (n_queries, n_classes)
    threshold, sigma_threshold, sigma_argmax : float
        As fitted (``threshold_``, ``sigma_threshold_``, ``sigma_argmax_``).
    max_answers : int, optional
    labels : int array-like of shape (n_queries,), optional
        Class indices counted as correct; default the plurality vote.

    Returns
    -------
    outcome : dict
        ``answered_fraction``, ``accuracy_answered`` (expected correct /
        expected answered), ``accuracy_all`` (abstentions count as wrong) and
        ``expected_answers``.

    Examples
    --------
    >>> from dpsklearn.planning import confident_gnmax_outcome
    >>> out = confident_gnmax_outcome([[95, 5], [50, 50]], 80, 5.0, 5.0)
    >>> round(out["answered_fraction"], 3), round(out["accuracy_answered"], 3)
    (0.5, 1.0)
    """
    counts = check_vote_counts(counts)
    n_queries = counts.shape[0]
    if n_queries == 0:
        raise ValueError("counts must hold at least one query.")
    target = (
        np.argmax(counts, axis=1)
        if labels is None
        else np.asarray(labels, dtype=np.int64)
    )
    if (
        target.shape != (n_queries,)
        or np.any(target < 0)
        or np.any(target >= counts.shape[1])
    ):
        raise ValueError("labels must be class indices, one per query.")
    p_pass = _tail_at_least(float(threshold) - counts.max(axis=1), sigma_threshold)
    p_correct = argmax_win_probability(counts, target, sigma_argmax)
    if max_answers is None:
        reach = np.ones(n_queries)
    else:
        earlier = np.r_[0.0, np.cumsum(p_pass)[:-1]]
        spread = np.sqrt(np.r_[0.0, np.cumsum(p_pass * (1 - p_pass))[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (max_answers - 0.5 - earlier) / spread
        reach = np.where(spread > 0, ndtr(z), (earlier <= max_answers - 1) * 1.0)
    answered = p_pass * reach
    expected_answers = float(answered.sum())
    expected_correct = float((answered * p_correct).sum())
    return {
        "answered_fraction": expected_answers / n_queries,
        "accuracy_answered": (
            expected_correct / expected_answers if expected_answers > 0 else math.nan
        ),
        "accuracy_all": expected_correct / n_queries,
        "expected_answers": expected_answers,
    }


def exponential_win_probability(counts, target, eps_q):
    """P(exponential mechanism returns ``target``): softmax(eps_q counts / 2)."""
    logp = log_softmax(eps_q * counts / 2.0, axis=1)
    return np.exp(logp[np.arange(len(counts)), target])


def sparse_vector_outcome(gap, correct, weights, calibration, m):
    """Expected passes and accuracy of the stability test (fallback "abstain")."""
    w, cutoff, noise = calibration.threshold, calibration.cutoff, calibration.noise
    dist = np.maximum(0, np.ceil(gap / 2.0) - 1)  # the distance to instability
    values, inverse = np.unique(dist, return_inverse=True)
    mass = np.bincount(inverse, weights=weights)
    good = np.bincount(inverse, weights=weights * correct)
    w_hat = w + noise_quantiles(calibration.threshold_scale, noise, _THRESHOLD_NODES)
    # Pass: dist + Z_query > w_hat, i.e. Z_query >= floor(w_hat - d) + 1.
    per_value = noise_survival(
        np.floor(w_hat[:, None] - values[None, :]) + 1, calibration.query_scale, noise
    )
    p = np.clip(per_value @ mass, 0.0, 1.0)  # pass probability per threshold draw
    # Renewal: each threshold draw starts a cycle of Geometric(1 - p) passes
    # ended by a failure; the model halts at the T-th failure or after the m
    # queries. The expected passes are computed over simulated cycle
    # sequences (threshold draws from the quadrature nodes, a fixed seed:
    # a deterministic function of the inputs, no query-level simulation).
    rng = np.random.default_rng(0)
    cycles = min(cutoff, m)  # at most m failures fit in m queries
    n_runs = max(20, 2_000_000 // cycles)
    p_cycle = p[rng.integers(len(p), size=(n_runs, cycles))]
    passes = rng.geometric(np.maximum(1.0 - p_cycle, 1e-12)) - 1
    passes = np.minimum(passes, m).astype(np.int64)
    before = np.cumsum(passes + 1, axis=1) - (passes + 1)  # queries used before
    answered = np.clip(m - before, 0, passes).sum(axis=1).mean()
    # Relative weight of each query type among the passes: within a cycle at
    # threshold w_hat the passes are spread over types as per_value, and the
    # expected cycle length (truncated at m) is (1 - p^m) / (1 - p).
    with np.errstate(divide="ignore", invalid="ignore"):
        length = np.where(p < 1.0, -np.expm1(m * np.log(p)) / (1.0 - p), m)
    length = np.where(np.isfinite(length), length, m)
    rate = np.mean(per_value * length[:, None], axis=0)  # relative pass weight
    total = rate @ mass
    accuracy = float(rate @ good / total) if total > 0 else math.nan
    return float(answered) / m, accuracy


def expected_min_binomial(m, p, cap):
    """E[min(Binomial(m, p), cap)]."""
    if cap >= m:
        return m * p
    return float(np.sum(binom.sf(np.arange(cap), m, p)))
