"""The stability-test planner: which (k, T) answers most of a query stream.

:func:`plan_stability_test` evaluates, for each number of teachers ``k``
and each ``T`` (``max_unstable``), what the sparse vector stability test of
:class:`~dpsklearn.SubsampleAggregateClassifier` will do on ``m`` queries,
from public numbers and two stated assumptions: the fraction of queries on
which the teachers disagree (``unstable_fraction``) and the teacher
agreement of the others (``agreement``). The model is in
``docs/design.rst``, "The stability planner":

* the calibration (it does not depend on ``k``) gives ``w`` and the noises;
* an unstable query has distance 0 and fails (it passes with probability
  ``P(D > w)``, at most ``delta / T``); a stable one has the distance of
  :func:`~dpsklearn.planning.distance_at_agreement` and passes with
  probability ``pi_s`` at a fresh threshold;
* each query passes independently with ``pi = u P(D > w) + (1 - u) pi_s``
  (the planner ignores the correlation through a shared threshold draw), so
  the expected number of queries answered by passing before the ``T``-th
  failure, within ``m`` queries, is ``pi sum_{i<m} P(Binomial(i, 1 - pi) <
  T)``.

Nothing can pass when even unanimous teachers give a distance
``ceil(k/2) - 1`` at or below ``w``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import nbinom

from .._param_validation import Interval, StrOptions
from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    validate_params,
)
from ..mechanisms import SPARSE_VECTOR_CALIBRATION_OPTION, calibrate_sparse_vector
from ._sparse_vector import AGREEMENT, _min_distance_to_pass, distance_at_agreement

__all__ = ["StabilityPlanRow", "plan_stability_test"]

#: The ``T`` tried when none are given.
DEFAULT_MAX_UNSTABLE = (10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000)
#: How many ``k`` are tried (geometrically spaced) when none are given.
_N_K = 24
# Rows whose expected answered fraction is within this of the best tie.
_NEAR_BEST = 0.01


@dataclass(frozen=True)
class StabilityPlanRow:
    """What the stability test does at one ``(k, T)``: public numbers only.

    Attributes
    ----------
    n_estimators : int
        ``k``.
    max_unstable : int
        ``T``.
    rows_per_shard : int
        ``floor(n / k)``.
    calibration : str
        The calibration ``calibration="auto"`` (or the one asked for) takes.
    threshold : float
        ``w``.
    can_pass : bool
        Whether unanimous teachers clear ``w`` (``ceil(k/2) - 1 > w``);
        otherwise essentially nothing passes.
    agreement_to_pass : float or None
        The teacher agreement (share of votes on the majority label, the
        others on one label) at which a query passes with probability 1/2;
        None when no agreement reaches it.
    stable_pass_probability : float
        ``pi_s``: the pass probability of a query at the assumed agreement.
    expected_answered : float
        Expected fraction of the ``m`` queries answered by passing the test
        before the model halts.
    expected_failures : float
        Expected failed tests over the queries served (at most ``T``).

    Examples
    --------
    >>> from dpsklearn.planning import plan_stability_test
    >>> best = plan_stability_test(300_000, 2000, 2.0, 1e-5, unstable_fraction=0.08,
    ...                            agreement=0.8)[0]
    >>> best.can_pass, best.expected_answered > 0.85
    (True, True)
    """

    n_estimators: int
    max_unstable: int
    rows_per_shard: int
    calibration: str
    threshold: float
    can_pass: bool
    agreement_to_pass: float | None
    stable_pass_probability: float
    expected_answered: float
    expected_failures: float

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for tables)."""
        return asdict(self)


def _expected_answered(pass_probability, n_queries, cutoff):
    """``(E[passes], E[failures])`` before the ``T``-th failure within ``m`` queries."""
    fail = 1.0 - pass_probability
    if fail <= 0.0:
        return float(n_queries), 0.0
    i = np.arange(n_queries, dtype=np.float64)
    # P(Binomial(i, fail) <= T - 1) = P(passes before the T-th failure >= i - T + 1):
    # the passes before the T-th failure are NegativeBinomial(T, fail).
    alive = nbinom.sf(i - cutoff, cutoff, fail)
    served = float(np.sum(alive))  # E[min(m, N_T)]: queries tested
    return pass_probability * served, fail * served


def _agreement_to_pass(calibration, n_estimators):
    d_half = _min_distance_to_pass(calibration, 0.5)
    top = n_estimators // 2 + d_half + 1  # dist = top - floor(k/2) - 1
    return None if top > n_estimators else top / n_estimators


def _k_grid(supported):
    """Geometrically spaced ``k`` up to ``supported``, including it."""
    grid = np.unique(np.geomspace(1, supported, _N_K).round().astype(np.int64))
    return tuple(int(k) for k in grid)


@validate_params(
    {
        "n_samples": [COUNT],
        "n_queries": [COUNT],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "unstable_fraction": [Interval(Real, 0, 1, closed="left")],
        "agreement": [AGREEMENT],
        "n_estimators": ["array-like", Integral, None],
        "max_unstable": ["array-like", Integral, None],
        "min_samples_per_shard": [COUNT],
        "calibration": [SPARSE_VECTOR_CALIBRATION_OPTION],
        "fallback": [StrOptions({"abstain", "noisy_max"})],
        "noisy_max_share": [Interval(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def plan_stability_test(
    n_samples: int,
    n_queries: int,
    epsilon: float,
    delta: float,
    *,
    unstable_fraction: float,
    agreement: float = 0.75,
    n_estimators: ArrayLike | None = None,
    max_unstable: ArrayLike | None = None,
    min_samples_per_shard: int = 20,
    calibration: str = "auto",
    fallback: str = "abstain",
    noisy_max_share: float = 0.5,
) -> list[StabilityPlanRow]:
    """Plan ``k`` and ``T`` for the sparse vector stability test.

    Parameters
    ----------
    n_samples : int
        Private training rows (public: the model reveals ``k`` and the shard
        size).
    n_queries : int
        ``m``, the queries expected.
    epsilon, delta : float
        The model's budget (``delta > 0``).
    unstable_fraction : float
        In [0, 1): the assumed share of queries on which the teachers
        disagree (distance 0). A public assumption the user states; the
        planner cannot look at the data.
    agreement : float, default=0.75
        The assumed teacher agreement on the other queries, in (1/2, 1]
        (3/4 is the premise of Bassily, Thakkar and Thakurta 2018, Theorem
        3.11).
    n_estimators : int or array-like of int, default=None
        The ``k`` to evaluate; None: a geometric grid up to
        ``n_samples // min_samples_per_shard``.
    max_unstable : int or array-like of int, default=None
        The ``T`` to evaluate; None: 10 to 1,000.
    min_samples_per_shard : int, default=20
    calibration : {"auto", "laplace", "gaussian"}, default="auto"
        As in :func:`~dpsklearn.mechanisms.calibrate_sparse_vector`
        (``"gaussian"`` is evaluated with ``max_queries = n_queries``).
    fallback : {"abstain", "noisy_max"}, default="abstain"
        A paid ``"noisy_max"`` fallback takes ``noisy_max_share`` of the
        budget, which raises ``w``.
    noisy_max_share : float, default=0.5

    Returns
    -------
    plan : list of StabilityPlanRow
        Best first: by expected answered fraction; rows within 0.01 of the
        best are ordered by fewer teachers (more rows each), then smaller
        ``T``. When no row expects even 0.01 of the queries to pass, by
        pass probability, then the most teachers the data supports.

    Examples
    --------
    >>> from dpsklearn.planning import plan_stability_test
    >>> plan = plan_stability_test(32_000, 2000, 1.0, 1e-5, unstable_fraction=0.1)
    >>> plan[0].expected_answered < 0.01  # Adult-sized data: almost nothing passes
    True
    >>> plan[0].n_estimators  # so the most teachers 32,000 rows of 20 support
    1600
    """
    supported = max(1, int(n_samples) // int(min_samples_per_shard))
    ks = _k_grid(supported) if n_estimators is None else _as_ints(n_estimators)
    ts = DEFAULT_MAX_UNSTABLE if max_unstable is None else _as_ints(max_unstable)
    rows = [
        row
        for t in ts
        for row in _rows_for_cutoff(
            int(n_samples),
            int(n_queries),
            float(epsilon),
            float(delta),
            float(unstable_fraction),
            float(agreement),
            ks,
            int(t),
            calibration,
            fallback,
            float(noisy_max_share),
        )
    ]
    best = max(row.expected_answered for row in rows)

    def order(row):
        if best < _NEAR_BEST:
            # Nothing is expected to pass: "within 0.01 of the best" would
            # then hold for every row and hand the tie to one teacher, whose
            # vote can never clear w and whose noisy-max fallback answers at
            # chance. Rank by the (tiny) pass chances, then take the most
            # teachers the data supports (the largest distances, the best
            # fallback), then a smaller T.
            return (
                -row.expected_answered,
                -row.stable_pass_probability,
                -row.n_estimators,
                row.max_unstable,
            )
        if row.expected_answered >= best - _NEAR_BEST:
            # Fewer teachers (more rows each), then a smaller T.
            return (0, row.n_estimators, row.max_unstable, -row.expected_answered)
        return (1, 0, 0, -row.expected_answered)

    return sorted(rows, key=order)


def _as_ints(values):
    values = np.atleast_1d(np.asarray(values))
    if values.size == 0 or np.any(values < 1) or not np.all(values == values // 1):
        raise ValueError("n_estimators and max_unstable must be integers >= 1.")
    return tuple(int(v) for v in values)


@functools.lru_cache(maxsize=256)
def _rows_for_cutoff(
    n_samples,
    n_queries,
    epsilon,
    delta,
    unstable,
    agreement,
    ks,
    cutoff,
    calibration,
    fallback,
    share,
):
    paid = fallback == "noisy_max"
    cal = calibrate_sparse_vector(
        epsilon,
        delta,
        cutoff,
        calibration,
        n_fallbacks=cutoff if paid else 0,
        fallback_share=share if paid else 0.0,
        max_queries=n_queries,
    )
    unstable_pass = float(cal.pass_probability(0))
    rows = []
    for k in ks:
        stable_pass = float(cal.pass_probability(distance_at_agreement(agreement, k)))
        pass_probability = unstable * unstable_pass + (1.0 - unstable) * stable_pass
        answered, failures = _expected_answered(pass_probability, n_queries, cutoff)
        rows.append(
            StabilityPlanRow(
                n_estimators=k,
                max_unstable=cutoff,
                rows_per_shard=n_samples // k,
                calibration=cal.name,
                threshold=cal.threshold,
                can_pass=math.ceil(k / 2) - 1 > cal.threshold,
                agreement_to_pass=_agreement_to_pass(cal, k),
                stable_pass_probability=stable_pass,
                expected_answered=answered / n_queries,
                expected_failures=failures,
            )
        )
    return rows
