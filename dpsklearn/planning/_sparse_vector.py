"""Planning the sparse vector stability test: how many teachers, what passes.

Every function is a pure function of public numbers and cites the theorem it
evaluates (``docs/design.rst``, "The planner"); all logarithms are natural.

* :func:`theorem_3_11_n_estimators` -- Bassily, Thakkar and Thakurta (2018),
  Theorem 3.11, with our distance to instability and a ``T``-based variant.
* :func:`distance_at_agreement`, :func:`pass_probability`,
  :func:`min_distance_to_pass` -- the test's arithmetic for one query.
* :func:`n_estimators_for_agreement` (and ``..._by_calibration``) -- the
  smallest ``k`` at which a query with teacher agreement ``a`` passes with
  probability at least ``1 - beta``.
* :func:`auto_n_estimators` -- ``SubsampleAggregateClassifier(
  n_estimators="auto")``.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike

from .._param_validation import Interval, StrOptions
from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    OPEN_UNIT,
    validate_params,
)
from ..accounting import smallest_integer
from ..mechanisms import (
    SPARSE_VECTOR_CALIBRATION_OPTION,
    SPARSE_VECTOR_CALIBRATIONS,
    SparseVectorCalibration,
    calibrate_sparse_vector,
    sparse_vector_candidates,
)

__all__ = [
    "auto_n_estimators",
    "distance_at_agreement",
    "min_distance_to_pass",
    "n_estimators_for_agreement",
    "n_estimators_for_agreement_by_calibration",
    "pass_probability",
    "theorem_3_11_n_estimators",
]

#: A teacher agreement at which the distance can grow with k: (1/2, 1].
AGREEMENT = Interval(Real, 0.5, 1, closed="right")


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_unstable": [COUNT],
        "beta": [OPEN_UNIT],
        "n_queries": [COUNT, None],
        "distance": [StrOptions({"ours", "paper"})],
    },
    prefer_skip_nested_validation=True,
)
def theorem_3_11_n_estimators(
    epsilon: float,
    delta: float,
    max_unstable: int,
    beta: float = 0.05,
    n_queries: int | None = None,
    distance: str = "ours",
) -> int:
    """Number of teachers k from Theorem 3.11 of Bassily et al. 2018, with our distance.

    Theorem 3.11 (Bassily, Thakkar, Thakurta 2018): if every query in a set
    ``L`` (all but at most ``T`` of the ``m`` queries) has an answer that a
    teacher trained on ``n/k`` rows gives with probability >= 3/4, then with
    probability >= 1 - beta Algorithm 4 answers every query of ``L``
    correctly, for ``k = 136 ln(4mT/min(delta, beta/2)) sqrt(T ln(2/delta))
    / epsilon``.

    Derivation with our distance (``docs/corrections.rst``, "Distance to
    instability under replace-one"). The proof's Chernoff step gives, with
    probability >= 1 - beta/2 and when ``k >= 72 ln(2m/beta)``, at least
    ``2k/3`` teachers agreeing on every query of ``L``, hence a vote gap
    ``g >= k/3``. The paper's distance ``g - 1`` is then ``>= k/3 - 1``; ours,
    ``ceil(g/2) - 1``, is only ``>= k/6 - 1`` (it has sensitivity 1 under
    replace-one, the paper's has 2). Corollary 3.9 needs the distance to reach
    ``alpha = 32 ln(4mT/min(delta, beta/2)) sqrt(2 T ln(2/delta)) / epsilon``,
    so ``k/6 >= alpha`` gives ``k >= 192 sqrt(2) (...) = 271.5 (...)``:

        k = 272 ln(4mT / min(delta, beta/2)) sqrt(T ln(2/delta)) / epsilon,

    twice the printed 136 (which is ``96 sqrt(2) = 135.8`` rounded up). The
    returned k is the ceiling of the largest of this, ``6 (alpha + 1)`` (the
    ``- 1`` of the distance, which the paper drops) and the Chernoff condition.

    T-based variant (``n_queries=None``). The ``m`` inside the logarithm has
    two sources: the paper's threshold ``w = 2 lam ln(2m/delta)`` and the
    union bound of Theorem 2.8 over the noise of all ``m`` queries. We set
    ``w = 2 lam ln(2T/delta)`` (the bad event is charged per threshold
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
    distance : {"ours", "paper"}, default="ours"
        ``"paper"`` evaluates the printed theorem (constant 136, distance
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
    epsilon, delta, t, beta = float(epsilon), float(delta), int(max_unstable), beta
    if n_queries is None:
        log_term = math.log(4.0 * t / min(delta, beta / 2.0))
        chernoff = 72.0 * math.log(2.0 / beta)
    else:
        m = int(n_queries)
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


@validate_params(
    {
        "agreement": [Interval(Real, 0, 1, closed="both")],
        "n_estimators": ["array-like", Integral],
    },
    prefer_skip_nested_validation=True,
)
def distance_at_agreement(
    agreement: float, n_estimators: ArrayLike
) -> int | np.ndarray:
    """The distance to instability when a fraction ``agreement`` of k teachers agree.

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
    a = float(agreement)
    k = np.asarray(n_estimators, dtype=np.int64)
    top = np.ceil(a * k - 1e-9).astype(np.int64)
    dist = np.maximum(0, top - k // 2 - 1)
    return int(dist) if dist.ndim == 0 else dist


_CALIBRATION = [SparseVectorCalibration]


@validate_params(
    {"distance": ["array-like", Real], "calibration": _CALIBRATION},
    prefer_skip_nested_validation=True,
)
def pass_probability(
    distance: ArrayLike, calibration: SparseVectorCalibration
) -> float | np.ndarray:
    """Probability that a query of distance ``d`` passes a fresh threshold draw.

    The query passes when ``d + Z_query > w + Z_threshold``, i.e.
    ``Z_query - Z_threshold > w - d``: an exact tail of the difference of
    the calibration's two noises (``docs/design.rst``, "The tail of the
    difference of two discrete Laplace noises"; summed numerically for
    Gaussian noises). A threshold that has survived earlier queries is, if
    anything, lower, so this is the pessimistic case.

    Parameters
    ----------
    distance : int or array of int
    calibration : SparseVectorCalibration

    Returns
    -------
    p : float or ndarray

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> from dpsklearn.planning import pass_probability
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
    >>> round(pass_probability(cal.threshold, cal), 2)  # d = w: about 1/2
    0.5
    """
    return calibration.pass_probability(distance)


@validate_params(
    {"calibration": _CALIBRATION, "beta": [OPEN_UNIT]},
    prefer_skip_nested_validation=True,
)
def min_distance_to_pass(
    calibration: SparseVectorCalibration, beta: float = 0.05
) -> int:
    """Smallest integer distance that passes with probability >= 1 - beta.

    Parameters
    ----------
    calibration : SparseVectorCalibration
    beta : float, default=0.05

    Returns
    -------
    d : int

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> from dpsklearn.planning import min_distance_to_pass, pass_probability
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
    >>> d = min_distance_to_pass(cal, beta=0.05)
    >>> pass_probability(d, cal) >= 0.95 > pass_probability(d - 1, cal)
    True
    """
    return _min_distance_to_pass(calibration, float(beta))


@functools.lru_cache(maxsize=512)
def _min_distance_to_pass(calibration, beta):
    target = 1.0 - beta

    def ok(d):
        return calibration.pass_probability(d) >= target

    # The pass probability grows with d; the threshold is the natural guess.
    return smallest_integer(ok, low=0, guess=max(1, math.ceil(calibration.threshold)))


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


@validate_params(
    {
        "agreement": [AGREEMENT],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_unstable": [COUNT],
        "beta": [OPEN_UNIT],
        "calibration": [SPARSE_VECTOR_CALIBRATION_OPTION],
    },
    prefer_skip_nested_validation=True,
)
def n_estimators_for_agreement(
    agreement: float,
    epsilon: float,
    delta: float,
    max_unstable: int,
    *,
    beta: float = 0.05,
    calibration: str = "auto",
) -> int:
    """Smallest k at which a query of teacher agreement ``a`` passes w.p. 1 - beta.

    Evaluates the sparse vector test exactly: the calibration gives the
    noises and ``w`` (:func:`dpsklearn.mechanisms.calibrate_sparse_vector`); a query on
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
    calibration : {"auto", "laplace", "gaussian"}, default="auto"
        As in :func:`dpsklearn.mechanisms.calibrate_sparse_vector`
        (``"gaussian"`` needs ``max_queries``, so it is refused here).

    Returns
    -------
    k : int

    See Also
    --------
    n_estimators_for_agreement_by_calibration : every calibration at once.

    Examples
    --------
    >>> from dpsklearn.planning import n_estimators_for_agreement
    >>> n_estimators_for_agreement(0.9, 1.0, 1e-5, 100)  # laplace: w = 2,104
    6187
    """
    cal = calibrate_sparse_vector(epsilon, delta, max_unstable, calibration)
    return _needed_k(float(agreement), cal, float(beta))


@validate_params(
    {
        "agreement": [AGREEMENT],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_unstable": [COUNT],
        "beta": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def n_estimators_for_agreement_by_calibration(
    agreement: float,
    epsilon: float,
    delta: float,
    max_unstable: int,
    *,
    beta: float = 0.05,
) -> dict[str, int | None]:
    """:func:`n_estimators_for_agreement` under each calibration.

    Returns
    -------
    ks : dict of str to int or None
        Keys ``"laplace"`` and ``"gaussian"``; None where the calibration is
        not admissible (``gaussian``, which needs ``max_queries``).

    Examples
    --------
    >>> from dpsklearn.planning import n_estimators_for_agreement_by_calibration
    >>> n_estimators_for_agreement_by_calibration(0.9, 1.0, 1e-5, 100)
    {'laplace': 6187, 'gaussian': None}
    """
    out: dict[str, int | None] = {}
    candidates = sparse_vector_candidates(epsilon, delta, max_unstable)
    for name in SPARSE_VECTOR_CALIBRATIONS:
        cal = candidates[name]
        if cal is None:
            out[name] = None
            continue
        out[name] = _needed_k(float(agreement), cal, float(beta))
    return out


@validate_params(
    {
        "n_samples": [COUNT],
        "min_samples_per_shard": [COUNT],
        "calibration": _CALIBRATION,
        "agreement": [AGREEMENT],
        "beta": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def auto_n_estimators(
    n_samples: int,
    min_samples_per_shard: int,
    calibration: SparseVectorCalibration,
    *,
    agreement: float = 0.75,
    beta: float = 0.05,
) -> int:
    """What the data supports, capped by need: the ``k`` for a given calibration.

    The data supports ``floor(n / min_samples_per_shard)`` teachers (at least
    1). More teachers than it takes for a query with teacher agreement
    ``agreement`` to pass with probability >= 1 - beta only make each shard
    smaller, so the answer is the smaller of the two. The default
    ``agreement=0.75`` is Theorem 3.11's premise (each teacher right with
    probability 3/4).

    Parameters
    ----------
    n_samples, min_samples_per_shard : int
    calibration : SparseVectorCalibration
    agreement : float, default=0.75
    beta : float, default=0.05

    Returns
    -------
    k : int

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> from dpsklearn.planning import auto_n_estimators
    >>> cal = calibrate_sparse_vector(0.5, 1e-5, 100)
    >>> auto_n_estimators(10_000, 20, cal)  # data-bound
    500
    >>> auto_n_estimators(10**8, 20, cal)  # need-bound
    18739
    """
    supported = max(1, int(n_samples) // int(min_samples_per_shard))
    needed = _needed_k(float(agreement), calibration, float(beta))
    return max(1, min(supported, needed))


@functools.lru_cache(maxsize=256)
def _needed_k(agreement, calibration, beta):
    # Memoised: estimator checks and grid searches fit hundreds of times.
    d = _min_distance_to_pass(calibration, beta)
    return _min_k_for_distance(agreement, d)
