"""The planner: the theorems of the seeds turned into numbers (SPEC 5).

Every function here is a pure function of public numbers and cites the
theorem it evaluates. All logarithms are natural.

=======================================  =====================================
function                                 theorem
=======================================  =====================================
:func:`theorem_3_11_n_estimators`        seed 002, Theorem 3.11 (with SPEC 2.2's
                                         distance, and a T-based variant)
:func:`n_estimators_for_agreement`       SPEC 2.4's engine: smallest k at which
                                         a query with teacher agreement ``a``
                                         passes with probability >= 1 - beta
:func:`auto_n_estimators`                ``SubsampleAggregateClassifier(
                                         n_estimators="auto")``
:func:`private_prediction_r`             seed 000, Theorem 1 (Dwork-Feldman)
:func:`erm_sample_size`                  seed 004, private PAC learning by the
                                         exponential mechanism (realizable)
:func:`statistical_query_sample_size`    seed 003, Theorem 1 (explicit
                                         constants; seed's noise vs ours)
:func:`kernel_ridge_schedule`            seed 001, Theorem 3 (from
                                         :mod:`dpsklearn.kernel_ridge`)
=======================================  =====================================
"""

from __future__ import annotations

import functools
import math
from numbers import Integral, Real

import numpy as np

from .calibration import (
    SPARSE_VECTOR_CALIBRATIONS,
    calibrate_sparse_vector,
    sparse_vector_candidates,
    stability_tail_probability,
)

__all__ = [
    "auto_n_estimators",
    "distance_at_agreement",
    "erm_sample_size",
    "kernel_ridge_schedule",
    "min_distance_to_pass",
    "n_estimators_for_agreement",
    "n_estimators_for_agreement_by_calibration",
    "pass_probability",
    "private_prediction_r",
    "statistical_query_sample_size",
    "theorem_3_11_n_estimators",
]


# --------------------------------------------------------------------------
# Validation (SPEC 6: name the parameter and the allowed values)
# --------------------------------------------------------------------------


def _real(value, name, *, low=0.0, high=math.inf, low_open=True, high_open=True):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if not (math.isfinite(value) and ok_low and ok_high):
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lb}{low:g}, {high:g}{hb}, got {value!r}.")
    return value


def _count(value, name, low=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return int(value)


# --------------------------------------------------------------------------
# Seed 002, Theorem 3.11
# --------------------------------------------------------------------------


def theorem_3_11_n_estimators(
    epsilon, delta, max_unstable, beta=0.05, n_queries=None, distance="ours"
):
    """Number of teachers k from seed 002's Theorem 3.11, with our distance.

    Theorem 3.11 (Bassily, Thakkar, Thakurta 2018): if every query in a set
    ``L`` (all but at most ``T`` of the ``m`` queries) has an answer that a
    teacher trained on ``n/k`` rows gives with probability >= 3/4, then with
    probability >= 1 - beta Algorithm 4 answers every query of ``L``
    correctly, for ``k = 136 ln(4mT/min(delta, beta/2)) sqrt(T ln(2/delta))
    / epsilon``.

    Derivation with SPEC 2.2's distance. The proof's Chernoff step gives, with
    probability >= 1 - beta/2 and when ``k >= 72 ln(2m/beta)``, at least
    ``2k/3`` teachers agreeing on every query of ``L``, hence a vote gap
    ``g >= k/3``. The seed's distance ``g - 1`` is then ``>= k/3 - 1``; ours,
    ``ceil(g/2) - 1``, is only ``>= k/6 - 1`` (it has sensitivity 1 under
    replace-one, the seed's has 2). Corollary 3.9 needs the distance to reach
    ``alpha = 32 ln(4mT/min(delta, beta/2)) sqrt(2 T ln(2/delta)) / epsilon``,
    so ``k/6 >= alpha`` gives ``k >= 192 sqrt(2) (...) = 271.5 (...)``:

        k = 272 ln(4mT / min(delta, beta/2)) sqrt(T ln(2/delta)) / epsilon,

    twice the printed 136 (which is ``96 sqrt(2) = 135.8`` rounded up). The
    returned k is the ceiling of the largest of this, ``6 (alpha + 1)`` (the
    ``- 1`` of the distance, which the seed drops) and the Chernoff condition.

    T-based variant (``n_queries=None``). The ``m`` inside the logarithm has
    two sources: the seed's threshold ``w = 2 lam ln(2m/delta)`` and the
    union bound of Theorem 2.8 over the noise of all ``m`` queries. SPEC 2.4
    sets ``w = 2 lam ln(2T/delta)`` (the bad event is charged per threshold
    draw, at most ``T`` of them), which removes the first. Asking for each
    query of ``L`` to be answered with probability >= 1 - beta (instead of
    all of them at once) removes the second: one query's noise plus the at
    most ``T + 1`` threshold draws give Theorem 2.8's term with
    ``ln(2(T+1)/beta) <= ln(4T/beta)``, and the Chernoff step needs
    ``k >= 72 ln(2/beta)``. With ``lam = sqrt(32 T ln(2/delta))/epsilon``,
    ``w + alpha_2.8 <= 8 sqrt(2) S ln(2T/delta)/epsilon + 16 sqrt(2) S
    ln(4T/beta)/epsilon <= 32 sqrt(2) S ln(4T/min(delta, beta))/epsilon``
    with ``S = sqrt(T ln(2/delta))``, so

        k_T = 272 ln(4T / min(delta, beta/2)) sqrt(T ln(2/delta)) / epsilon.

    The per-query guarantee holds for the queries the model reaches: stable
    queries that fail on noise also count towards ``T`` (about ``beta m`` of
    them in expectation), so leave that much room in ``max_unstable``.

    Parameters
    ----------
    epsilon : float
        Epsilon of the sparse vector part (> 0).
    delta : float
        In (0, 1).
    max_unstable : int
        ``T``.
    beta : float, default=0.05
        Failure probability, in (0, 1).
    n_queries : int, default=None
        ``m``. ``None`` gives the T-based, per-query variant.
    distance : {"ours", "seed"}, default="ours"
        ``"seed"`` evaluates the printed theorem (constant 136, distance
        ``g - 1``) for comparison.

    Returns
    -------
    k : int

    Examples
    --------
    >>> from dpsklearn.planning import theorem_3_11_n_estimators
    >>> theorem_3_11_n_estimators(1.0, 1e-5, 100, beta=0.05, n_queries=1000)
    231987
    >>> theorem_3_11_n_estimators(1.0, 1e-5, 100, beta=0.05)  # T-based
    166343
    """
    epsilon = _real(epsilon, "epsilon")
    delta = _real(delta, "delta", high=1.0)
    t = _count(max_unstable, "max_unstable")
    beta = _real(beta, "beta", high=1.0)
    if distance not in ("ours", "seed"):
        raise ValueError(f"distance must be 'ours' or 'seed', got {distance!r}.")
    if n_queries is None:
        log_term = math.log(4.0 * t / min(delta, beta / 2.0))
        chernoff = 72.0 * math.log(2.0 / beta)
    else:
        m = _count(n_queries, "n_queries")
        log_term = math.log(4.0 * m * t / min(delta, beta / 2.0))
        chernoff = 72.0 * math.log(2.0 * m / beta)
    root = math.sqrt(t * math.log(2.0 / delta))
    alpha = 32.0 * log_term * math.sqrt(2.0) * root / epsilon  # Corollary 3.9
    if distance == "ours":
        printed, exact = 272.0 * log_term * root / epsilon, 6.0 * (alpha + 1.0)
    else:
        printed, exact = 136.0 * log_term * root / epsilon, 3.0 * (alpha + 1.0)
    return int(math.ceil(max(printed, exact, chernoff)))


# --------------------------------------------------------------------------
# The sparse vector engine: smallest k at a given teacher agreement
# --------------------------------------------------------------------------


def distance_at_agreement(agreement, n_estimators):
    """Distance to instability (SPEC 2.2) when a fraction ``agreement`` of k agree.

    With ``top = ceil(a k)`` teachers on the majority label and the other
    ``k - top`` on one other label (the worst case for the gap), ``g = 2 top
    - k`` and ``dist = max(0, ceil(g/2) - 1) = max(0, top - floor(k/2) - 1)``,
    which is ``ceil((2a - 1) k / 2) - 1`` when ``a k`` is an integer.

    Parameters
    ----------
    agreement : float
        In [0, 1].
    n_estimators : int or array of int
        ``k``.

    Returns
    -------
    dist : int or int64 ndarray

    Examples
    --------
    >>> from dpsklearn.planning import distance_at_agreement
    >>> distance_at_agreement(0.75, 100)  # top 75, second 25: gap 50
    24
    """
    a = _real(
        agreement, "agreement", low=0.0, high=1.0, low_open=False, high_open=False
    )
    k = np.asarray(n_estimators, dtype=np.int64)
    top = np.ceil(a * k - 1e-9).astype(np.int64)
    dist = np.maximum(0, top - k // 2 - 1)
    return int(dist) if dist.ndim == 0 else dist


def pass_probability(distance, noise_scale, threshold):
    """Probability that a query of distance ``d`` passes a fresh threshold draw.

    SPEC 2.4: the query passes when ``d + DLap(2 lam) > w + DLap(lam)``,
    i.e. ``DLap(2 lam) - DLap(lam) > w - d``, an exact discrete-Laplace tail
    (:func:`dpsklearn.calibration.stability_tail_probability`). A threshold
    that has survived earlier queries is, if anything, lower, so this is the
    pessimistic case.

    Parameters
    ----------
    distance : float
    noise_scale : float
        ``lam`` (> 0).
    threshold : float
        ``w``.

    Returns
    -------
    p : float

    Examples
    --------
    >>> from dpsklearn.planning import pass_probability
    >>> round(pass_probability(100, 10.0, 100.0), 3)  # d = w: just under 1/2
    0.492
    """
    return stability_tail_probability(noise_scale, float(threshold) - float(distance))


def min_distance_to_pass(noise_scale, threshold, beta=0.05):
    """Smallest integer distance that passes with probability >= 1 - beta.

    Parameters
    ----------
    noise_scale : float
        ``lam``.
    threshold : float
        ``w``.
    beta : float, default=0.05

    Returns
    -------
    d : int

    Examples
    --------
    >>> from dpsklearn.planning import min_distance_to_pass, pass_probability
    >>> d = min_distance_to_pass(10.0, 100.0, beta=0.05)
    >>> pass_probability(d, 10.0, 100.0) >= 0.95 > pass_probability(d - 1, 10.0, 100.0)
    True
    """
    lam = _real(noise_scale, "noise_scale")
    w = _real(threshold, "threshold", low=-math.inf)
    beta = _real(beta, "beta", high=1.0)
    target = 1.0 - beta

    def ok(d):
        return pass_probability(d, lam, w) >= target

    if ok(0):
        return 0
    lo, hi = 0, max(1, math.ceil(w))
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # ok(hi) and not ok(lo): the pass probability grows with d
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _min_k_for_distance(agreement, d):
    """Smallest k with distance_at_agreement(a, k) >= d (dist is not monotone in k)."""
    if d <= 0:
        return 1
    slope = agreement - 0.5
    # (a - 1/2) k - 1 <= dist(k) <= (a - 1/2) k + 1/2, so the answer lies between:
    k_lo = max(1, math.floor((d - 0.5) / slope))
    k_hi = math.ceil((d + 1) / slope) + 2
    ks = np.arange(k_lo, k_hi + 1, dtype=np.int64)
    hits = np.flatnonzero(distance_at_agreement(agreement, ks) >= d)
    return int(ks[hits[0]])


def _check_agreement(agreement):
    a = _real(agreement, "agreement", low=0.5, high=1.0, high_open=False)
    return a


def n_estimators_for_agreement(
    agreement, epsilon, delta, max_unstable, *, beta=0.05, calibration="auto"
):
    """Smallest k at which a query with teacher agreement ``a`` passes w.p. >= 1 - beta.

    Evaluates SPEC 2.4's engine exactly: the calibration gives ``lam`` and
    ``w`` (:func:`dpsklearn.calibration.calibrate_sparse_vector`); a query on
    which a fraction ``a`` of the ``k`` teachers agree has distance
    :func:`distance_at_agreement`, and passes with
    :func:`pass_probability`. The answer is the smallest ``k`` whose distance
    reaches :func:`min_distance_to_pass`, about ``(w + margin) / (a - 1/2)``.

    Parameters
    ----------
    agreement : float
        ``a`` in (1/2, 1]; at ``a <= 1/2`` the distance is 0 for every k.
    epsilon : float
        Epsilon of the sparse vector part (for ``SubsampleAggregateClassifier``
        with ``fallback="noisy_max"``: ``epsilon * (1 - noisy_max_share)``).
    delta : float
        In (0, 1).
    max_unstable : int
        ``T``.
    beta : float, default=0.05
    calibration : {"auto", "paper", "exact", "pure"}, default="auto"

    Returns
    -------
    k : int

    See Also
    --------
    n_estimators_for_agreement_by_calibration : every calibration at once.

    Examples
    --------
    >>> from dpsklearn.planning import n_estimators_for_agreement
    >>> n_estimators_for_agreement(0.9, 1.0, 1e-5, 100)  # exact: w about 2,580
    7433
    """
    a = _check_agreement(agreement)
    cal = calibrate_sparse_vector(epsilon, delta, max_unstable, calibration)
    d = min_distance_to_pass(cal.noise_scale, cal.threshold, beta)
    return _min_k_for_distance(a, d)


def n_estimators_for_agreement_by_calibration(
    agreement, epsilon, delta, max_unstable, *, beta=0.05
):
    """:func:`n_estimators_for_agreement` under each calibration.

    Returns
    -------
    ks : dict of str to int or None
        Keys ``"pure"``, ``"exact"``, ``"paper"``; None where the calibration
        is not admissible (``paper`` at large epsilon).

    Examples
    --------
    >>> from dpsklearn.planning import n_estimators_for_agreement_by_calibration
    >>> n_estimators_for_agreement_by_calibration(0.9, 1.0, 1e-5, 100)
    {'pure': 18689, 'exact': 7433, 'paper': 19153}
    """
    a = _check_agreement(agreement)
    beta = _real(beta, "beta", high=1.0)
    out = {}
    candidates = sparse_vector_candidates(epsilon, delta, max_unstable)
    for name in SPARSE_VECTOR_CALIBRATIONS:
        cal = candidates[name]
        if cal is None:
            out[name] = None
            continue
        d = min_distance_to_pass(cal.noise_scale, cal.threshold, beta)
        out[name] = _min_k_for_distance(a, d)
    return out


def auto_n_estimators(
    n_samples,
    min_samples_per_shard,
    noise_scale,
    threshold,
    *,
    agreement=0.75,
    beta=0.05,
):
    """``n_estimators="auto"`` (SPEC 3.1): what the data supports, capped by need.

    The data supports ``floor(n / min_samples_per_shard)`` teachers (at least
    1). More teachers than it takes for a query with teacher agreement
    ``agreement`` to pass with probability >= 1 - beta only make each shard
    smaller, so the answer is the smaller of the two. The default
    ``agreement=0.75`` is Theorem 3.11's premise (each teacher right with
    probability 3/4).

    Parameters
    ----------
    n_samples, min_samples_per_shard : int
    noise_scale, threshold : float
        ``lam`` and ``w`` of the calibration in use.
    agreement : float, default=0.75
    beta : float, default=0.05

    Returns
    -------
    k : int

    Examples
    --------
    >>> from dpsklearn.calibration import calibrate_sparse_vector
    >>> from dpsklearn.planning import auto_n_estimators
    >>> cal = calibrate_sparse_vector(0.5, 1e-5, 100)
    >>> auto_n_estimators(10_000, 20, cal.noise_scale, cal.threshold)  # data-bound
    500
    >>> auto_n_estimators(10**8, 20, cal.noise_scale, cal.threshold)  # need-bound
    22531
    """
    n = _count(n_samples, "n_samples")
    per_shard = _count(min_samples_per_shard, "min_samples_per_shard")
    a = _check_agreement(agreement)
    supported = max(1, n // per_shard)
    needed = _needed_k(a, float(noise_scale), float(threshold), float(beta))
    return max(1, min(supported, needed))


@functools.lru_cache(maxsize=256)
def _needed_k(agreement, noise_scale, threshold, beta):
    # Memoised: estimator checks and grid searches fit hundreds of times.
    d = min_distance_to_pass(noise_scale, threshold, beta)
    return _min_k_for_distance(agreement, d)


# --------------------------------------------------------------------------
# Seed 000, Theorem 1 (Dwork and Feldman 2018)
# --------------------------------------------------------------------------


def private_prediction_r(target_error, epsilon):
    """Teachers ``r`` of seed 000's Theorem 1: ``r = ceil(6 ln(4/alpha) / epsilon)``.

    Theorem 1 (Dwork and Feldman 2018, "Privacy-preserving prediction"):
    training ``r`` learners on disjoint parts (each to error ``alpha/4`` with
    confidence ``beta/r``) and answering by the exponential mechanism on the
    votes gives an ``epsilon``-DP prediction algorithm with error at most
    ``alpha``, using ``n = r m(alpha/4, beta/r)`` examples. (The extracted
    seed prints ``m(delta/4, ...)``; the proof uses ``alpha/4``.)

    Parameters
    ----------
    target_error : float
        ``alpha`` in (0, 1).
    epsilon : float
        Per-prediction epsilon (> 0).

    Returns
    -------
    r : int

    Examples
    --------
    >>> from dpsklearn.planning import private_prediction_r
    >>> private_prediction_r(0.1, 1.0)  # 6 ln 40 = 22.13
    23
    """
    alpha = _real(target_error, "target_error", high=1.0)
    epsilon = _real(epsilon, "epsilon")
    return int(math.ceil(6.0 * math.log(4.0 / alpha) / epsilon))


# --------------------------------------------------------------------------
# Seed 004: private PAC learning by the exponential mechanism
# --------------------------------------------------------------------------


def erm_sample_size(n_hypotheses, epsilon, alpha, beta=0.05):
    """Seed 004's sample size for private learning of a finite class (realizable).

    A class ``C`` is learned to error ``alpha`` with probability ``1 - beta``
    by the ``epsilon``-DP exponential mechanism with ``u = -L_X`` when

        n >= max(4 ln(2|C|/beta) / (epsilon alpha), 2 ln(2|C|/beta) / alpha^2).

    Realizable case (some ``c`` in ``C`` has zero error, so ``OPT = 0``): the
    mechanism's accuracy bound gives empirical error ``<= alpha/2`` w.p.
    ``1 - beta/2`` (first term), and uniform convergence moves it by at most
    ``alpha/2`` w.p. ``1 - beta/2`` (second term). An agnostic guarantee
    needs more samples and is not what this evaluates.

    Parameters
    ----------
    n_hypotheses : int
        ``|C|``.
    epsilon : float
    alpha : float
        Target error in (0, 1).
    beta : float, default=0.05

    Returns
    -------
    n : int

    Examples
    --------
    >>> from dpsklearn.planning import erm_sample_size
    >>> erm_sample_size(51_200, 1.0, 0.1, 0.05)  # uniform convergence binds
    2907
    """
    c = _count(n_hypotheses, "n_hypotheses")
    epsilon = _real(epsilon, "epsilon")
    alpha = _real(alpha, "alpha", high=1.0)
    beta = _real(beta, "beta", high=1.0)
    log_term = math.log(2.0 * c / beta)
    return int(
        math.ceil(max(4.0 * log_term / (epsilon * alpha), 2.0 * log_term / alpha**2))
    )


# --------------------------------------------------------------------------
# Seed 003, Theorem 1: statistical queries
# --------------------------------------------------------------------------


def statistical_query_sample_size(
    n_queries, tolerance, epsilon, beta=0.05, noise="ours"
):
    """Seed 003's Theorem 1 with explicit constants: rows needed for M queries.

    Theorem 1 answers ``M`` statistical queries of tolerance ``tau`` on ``M``
    disjoint chunks of size ``s`` and needs every answer within ``tau`` of
    the truth with probability ``1 - beta``. Per chunk (union bound over
    ``2M`` events of probability ``beta/(2M)``):

    * sampling (Hoeffding): ``2 exp(-s tau^2 / 2) <= beta/(2M)``, i.e.
      ``s >= 2 ln(4M/beta) / tau^2``;
    * noise ``Lap(b)``: ``exp(-tau/(2b)) <= beta/(2M)``, with ``b = 1/(s
      epsilon)`` for our parallel-composition oracle (SPEC 3.7) or the seed's
      ``b = M/(s epsilon)``: ``s >= 2 ln(2M/beta) / (epsilon tau)``, times
      ``M`` for the seed.

    The total is ``n = M s``: ``O((M/(epsilon tau) + M/tau^2) ln(M/beta))``
    for ours, against the seed's ``O((M^2/(epsilon tau) + M/tau^2)
    ln(M/beta))`` with its noise (the theorem's ``M/(alpha tau)`` needs the
    parallel-composition noise). This evaluates continuous Laplace tails;
    the oracle's grid noise is wider by a factor ``1 + g |S_i|`` (about
    ``1 + 1/1024``).

    Parameters
    ----------
    n_queries : int
        ``M``.
    tolerance : float
        ``tau`` in (0, 1).
    epsilon : float
        Total epsilon (seed 003 calls it ``alpha``).
    beta : float, default=0.05
    noise : {"ours", "seed"}, default="ours"

    Returns
    -------
    n : int
        ``M`` times the chunk size.

    Examples
    --------
    >>> from dpsklearn.planning import statistical_query_sample_size
    >>> statistical_query_sample_size(10, 0.1, 0.1)  # sampling binds
    13370
    >>> statistical_query_sample_size(10, 0.1, 0.1, noise="seed")  # noise binds
    119830
    """
    m = _count(n_queries, "n_queries")
    tau = _real(tolerance, "tolerance", high=1.0)
    epsilon = _real(epsilon, "epsilon")
    beta = _real(beta, "beta", high=1.0)
    if noise not in ("ours", "seed"):
        raise ValueError(f"noise must be 'ours' or 'seed', got {noise!r}.")
    sampling = 2.0 * math.log(4.0 * m / beta) / tau**2
    privacy = 2.0 * math.log(2.0 * m / beta) / (epsilon * tau)
    if noise == "seed":
        privacy *= m
    return m * int(math.ceil(max(sampling, privacy)))


# --------------------------------------------------------------------------
# Seed 001, Theorem 3 (written by the kernel ridge module)
# --------------------------------------------------------------------------


def kernel_ridge_schedule(*args, **kwargs):
    """Seed 001's schedule of ``alpha`` and ``epsilon`` (SPEC 3.5).

    Re-exported from :func:`dpsklearn.kernel_ridge.kernel_ridge_schedule`,
    imported lazily so the rest of the planner works without it; see that
    function for the parameters and the derivation.

    Raises
    ------
    ImportError
        When :mod:`dpsklearn.kernel_ridge` (or its schedule) is not available.
    """
    try:
        from .kernel_ridge import kernel_ridge_schedule as schedule
    except ImportError as exc:
        raise ImportError(
            "kernel_ridge_schedule needs dpsklearn.kernel_ridge, which is not "
            "available in this installation."
        ) from exc
    return schedule(*args, **kwargs)
