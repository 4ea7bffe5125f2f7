"""Calibrations of the sparse vector stability test.

The guarantee of the test has two parts (``docs/design.rst``, "The sparse
vector stability test"):

* the *sparse vector part*: ``T`` AboveThreshold instances with threshold
  noise of scale ``s_t`` and query noise of scale ``s_q``, composed over the
  ``T`` threshold draws, together with the paid fallback answers;
* the *stability part*: the bad event that a query whose answer differs
  between neighbours passes. Over at most ``T`` threshold draws it has
  probability at most ``T p`` with ``p = P(Z_query - Z_threshold > w)``.

A calibration chooses the noises, ``w`` and the fallback's epsilon for a
budget ``(epsilon, delta)``:

``"laplace"``
    Discrete Laplace noises at the split of ``eps0`` that minimises ``w``
    (Lyu, Su and Li 2017), the exact tail inverted, the delta split
    searched, and the instances composed jointly with the fallbacks by
    optimal composition (``docs/design.rst``, "The sparse vector test at
    full strength").
``"gaussian"``
    Discrete Gaussian noises, composed in RDP (Zhu and Wang 2020, Theorem
    8). Its bound grows with the number of queries one instance can see, so
    it needs ``max_queries`` (None makes it inadmissible).

``"auto"`` takes the admissible calibration with the smallest threshold
``w``: the pass rate depends on ``w``.

The calibrations with the structure of Bassily, Thakkar and Thakurta
(2018), Algorithm 3 (``"paper"``, ``"exact"``, ``"pure"``: query noise twice
the threshold noise, the instances composed on their own, the fallbacks paid
apart by basic composition) were removed in 0.2: ``laplace``'s threshold is
below theirs at every budget checked up to epsilon 64, so ``"auto"``, which
takes the smallest, has no use for them. They are reference implementations in the
tests, which pin the corrections to the paper with them
(``docs/corrections.rst``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike

from .._param_validation import Interval, InvalidParameterError, StrOptions
from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    validate_params,
)
from ..accounting import (
    cks_epsilon,
    two_kind_epsilon,
    two_kind_log_delta,
)
from ._sparse_vector_routes import (
    _FALLBACK_ZCDP,
    alternating_certified,
    gaussian_route,
    laplace_route,
    rdp_route_epsilon,
)
from ._sparse_vector_tails import difference_tail, pass_probabilities

__all__ = [
    "REMOVED_SPARSE_VECTOR_CALIBRATIONS",
    "SPARSE_VECTOR_CALIBRATIONS",
    "SPARSE_VECTOR_CALIBRATION_OPTION",
    "SparseVectorCalibration",
    "calibrate_sparse_vector",
    "sparse_vector_candidates",
]

#: Calibrations of the sparse vector engine, in order of preference on ties.
SPARSE_VECTOR_CALIBRATIONS = ("laplace", "gaussian")
#: The calibrations with the structure of Bassily, Thakkar and Thakurta
#: (2018) that left the library in 0.2 (reference implementations in the
#: tests, ``docs/corrections.rst``).
REMOVED_SPARSE_VECTOR_CALIBRATIONS = ("paper", "exact", "pure")


class _CalibrationOption(StrOptions):
    """``"auto"`` or a calibration on offer; a removed name gets its own message."""

    def is_satisfied_by(self, value):
        if isinstance(value, str) and value in REMOVED_SPARSE_VECTOR_CALIBRATIONS:
            raise InvalidParameterError(
                f"calibration={value!r} was removed in 0.2: the calibrations with "
                "the structure of Bassily, Thakkar and Thakurta (2018) ('paper', "
                "'exact', 'pure') have a larger threshold than 'laplace' at every "
                "budget checked up to epsilon 64, so calibration='auto' has no use "
                "for them. "
                "They live on as reference implementations in dpsklearn's tests "
                "(tests/_reference.py), their history in docs/corrections.rst. "
                "Use calibration='auto', 'laplace' or 'gaussian'."
            )
        return super().is_satisfied_by(value)


#: The ``calibration`` constraint of every function that calibrates the test.
SPARSE_VECTOR_CALIBRATION_OPTION = _CalibrationOption(
    {"auto", *SPARSE_VECTOR_CALIBRATIONS}
)


# -- the calibrations ----------------------------------------------------------
@dataclass(frozen=True)
class SparseVectorCalibration:
    """The frozen noises, threshold and fallback epsilon of a stability test.

    Attributes
    ----------
    name : {"laplace", "gaussian"}
        Which calibration produced it.
    epsilon : float
        The whole test's epsilon: its AboveThreshold instances and its paid
        fallback answers.
    delta : float
        The total delta (sparse vector part plus stability part).
    cutoff : int
        T, the number of threshold draws paid for.
    noise : {"laplace", "gaussian"}
        The discrete noise of the threshold and of the queries.
    threshold_scale, query_scale : float
        Their scales: ``DLap(scale)`` or ``N_Z(0, scale^2)``.
    threshold : float
        ``w``.
    sparse_vector_delta : float
        The delta of the sparse vector part; the rest of ``delta`` is the
        stability part's.
    tail_probability : float
        ``p = P(Z_query - Z_threshold > w)`` (exact for Laplace noises, an
        upper bound for Gaussian ones); the stability part's delta is at
        most ``T p``.
    composition : {"joint", "alternating", "rdp"}
        How the instances and the fallbacks compose, always together: the
        optimal composition of both as pure releases (``laplace``,
        ``"joint"``), or, for exponential-mechanism fallbacks each following
        its instance, the exact game of pure and bounded-range releases in
        turn (``laplace``, ``"alternating"``); RDP (``gaussian``).
    per_instance : float
        ``eps0`` of one instance (Laplace noises), or its RDP coefficient
        ``c`` (``alpha c`` plus the ``log K`` term; Gaussian noises).
    n_fallbacks : int
        Fallback answers paid for (0 without a paid fallback).
    fallback_epsilon : float
        Epsilon of one fallback answer.
    fallback_kind : {"bounded_range", "pure"}
        The exponential mechanism (bounded range) or a pure release.
    max_queries : int or None
        ``K``, the most queries one instance can see (``gaussian`` only).
    composed_epsilon : float
        What the calibration's composition gives for all ``T`` instances and
        ``n_fallbacks`` answers. At most ``epsilon`` for an admissible one.

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100, calibration="laplace")
    >>> cal.noise, cal.composition, cal.threshold
    ('laplace', 'joint', 2104.0)
    >>> round(cal.threshold_scale, 2), round(cal.query_scale, 2)
    (108.75, 117.12)
    """

    name: str
    epsilon: float
    delta: float
    cutoff: int
    noise: str
    threshold_scale: float
    query_scale: float
    threshold: float
    sparse_vector_delta: float
    tail_probability: float
    composition: str
    per_instance: float
    n_fallbacks: int = 0
    fallback_epsilon: float = 0.0
    fallback_kind: str = "bounded_range"
    max_queries: int | None = None
    composed_epsilon: float = math.nan

    @property
    def noise_scale(self) -> float:
        """The threshold noise's scale (``threshold_scale``)."""
        return self.threshold_scale

    @property
    def per_instance_epsilon(self) -> float:
        """``eps0`` of one AboveThreshold instance (inf for Gaussian noises)."""
        return self.per_instance if self.noise == "laplace" else math.inf

    @property
    def stability_delta(self) -> float:
        """The delta reserved for the stability part (its bad event)."""
        return self.delta - self.sparse_vector_delta

    @property
    def sparse_vector_epsilon(self) -> float:
        """What the ``T`` instances alone, without the fallbacks, compose to."""
        return self.epsilon_after(self.cutoff, 0)

    @property
    def admissible(self) -> bool:
        """Whether the composed epsilon and the stability bound fit the budget."""
        return self.composed_epsilon <= self.epsilon * (
            1 + 1e-12
        ) and self.cutoff * self.tail_probability <= self.stability_delta * (1 + 1e-12)

    def epsilon_after(self, n_instances: int, n_fallbacks: int = 0) -> float:
        """Epsilon of the first ``n_instances`` instances and ``n_fallbacks`` answers.

        The calibration's own composition at the sparse vector part's delta,
        never above basic composition (nor, for a prefix of what was paid
        for, above ``epsilon``).
        """
        n, f = max(0, int(n_instances)), max(0, int(n_fallbacks))
        return _composed(self, n, f)

    def delta_after(self, n_instances: int) -> float:
        """Delta of the first ``n_instances`` instances: their part plus ``n p``."""
        n = int(n_instances)
        if n <= 0:
            return 0.0
        return self.sparse_vector_delta + n * self.tail_probability

    def pass_probability(self, distance: ArrayLike) -> float | np.ndarray:
        """``P(d + Z_query > w + Z_threshold)`` for distances ``d`` (planning).

        Examples
        --------
        >>> from dpsklearn.mechanisms import calibrate_sparse_vector
        >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
        >>> round(cal.pass_probability(cal.threshold), 2)  # d = w: about 1/2
        0.5
        """
        return pass_probabilities(
            distance, self.threshold, self.query_scale, self.threshold_scale, self.noise
        )


def _composed(cal, n, f):
    """Epsilon of ``n`` instances and ``f`` fallback answers under ``cal``."""
    if n == 0 and f == 0:
        return 0.0
    delta_sv = cal.sparse_vector_delta
    if cal.composition == "rdp":
        fallback_coef = _FALLBACK_ZCDP[cal.fallback_kind] * cal.fallback_epsilon**2
        return rdp_route_epsilon(
            n, cal.per_instance, cal.max_queries, f, fallback_coef, delta_sv
        )
    eps0, eps_f = cal.per_instance, cal.fallback_epsilon
    basic = n * eps0 + f * eps_f
    if cal.composition == "alternating":
        # The game certifies all the pairs within epsilon, so any prefix; a
        # running figure: the least of that, basic, zCDP at the best order
        # (pure eps0^2/2, bounded range eps_f^2/8) and the optimal
        # composition of both kinds as pure releases.
        rho = n * eps0**2 / 2.0 + f * eps_f**2 / 8.0
        bound = min(
            basic,
            cks_epsilon(rho, delta_sv),
            two_kind_epsilon(eps0, n, eps_f, f, delta_sv),
        )
        if n <= cal.cutoff and f <= cal.n_fallbacks:
            bound = min(bound, cal.epsilon)
        return bound
    # "joint": both kinds as pure releases, optimally composed.
    return min(basic, two_kind_epsilon(eps0, n, eps_f, f, delta_sv))


# -- building the calibrations ---------------------------------------------------------
def _from_route(name, route, per_instance, composition, common):
    """A full-strength calibration from its route's parameters.

    The route paid for ``common["n_fallbacks"]`` fallback slots; the tail is
    that of the route's two noises at ``w + 1``.
    """
    return SparseVectorCalibration(
        **common,
        name=name,
        noise=name,
        threshold_scale=route["threshold_scale"],
        query_scale=route["query_scale"],
        threshold=route["threshold"],
        sparse_vector_delta=route["sparse_vector_delta"],
        tail_probability=float(
            difference_tail(
                int(route["threshold"]) + 1,
                route["query_scale"],
                route["threshold_scale"],
                name,
            )
        ),
        composition=composition,
        per_instance=per_instance,
        fallback_epsilon=route["fallback_epsilon"],
    )


def _build(name, epsilon, delta, cutoff, n_fallbacks, share, kind, max_queries):
    """One calibration, admissible or not; None where it cannot be built."""
    common = dict(
        epsilon=epsilon,
        delta=delta,
        cutoff=cutoff,
        n_fallbacks=n_fallbacks,
        fallback_kind=kind,
        max_queries=max_queries,
    )
    if name == "laplace":
        # The instances and the n_fallbacks slots composed together
        # (``docs/design.rst``, "Joint composition of the test and its
        # fallback").
        route = laplace_route(
            epsilon, delta, cutoff, share if n_fallbacks else 0.0, n_fallbacks, kind
        )
        cal = _from_route("laplace", route, route["eps0"], route["composition"], common)
    else:  # gaussian
        if max_queries is None:
            return None
        route = gaussian_route(
            epsilon,
            delta,
            cutoff,
            share if n_fallbacks else 0.0,
            max_queries,
            kind,
            n_fallbacks,
        )
        if route is None:
            return None
        cal = _from_route("gaussian", route, route["coefficient"], "rdp", common)
    composed = _composed(cal, cal.cutoff, cal.n_fallbacks)
    if cal.composition == "alternating":
        # Admissible only where the game itself certifies the whole test
        # (the running figure of _composed is capped by it).
        composed = epsilon if _delta_checked(cal) else math.inf
    if _delta_checked(cal):
        # delta(epsilon) <= sparse_vector_delta holds exactly; the bisection
        # that inverts it may overshoot epsilon by 1e-13.
        composed = min(composed, epsilon)
    return _replace(cal, composed_epsilon=composed)


def _delta_checked(cal):
    """Whether the joint composition's delta at ``cal.epsilon`` fits exactly."""
    log_target = math.log(cal.sparse_vector_delta) if cal.sparse_vector_delta else None
    if log_target is None:
        return False
    if cal.composition == "alternating":
        return cal.n_fallbacks == cal.cutoff and alternating_certified(
            cal.per_instance,
            cal.fallback_epsilon,
            cal.cutoff,
            cal.epsilon,
            cal.sparse_vector_delta,
        )
    if cal.composition == "joint":
        log_delta = two_kind_log_delta(
            cal.per_instance,
            cal.cutoff,
            cal.fallback_epsilon,
            cal.n_fallbacks,
            cal.epsilon,
        )
        return log_delta <= log_target
    return False


def _replace(cal, **changes):
    return SparseVectorCalibration(**{**cal.__dict__, **changes})


@functools.lru_cache(maxsize=1024)
def _candidates(epsilon, delta, cutoff, n_fallbacks, share, kind, max_queries):
    return {
        name: _build(
            name, epsilon, delta, cutoff, n_fallbacks, share, kind, max_queries
        )
        for name in SPARSE_VECTOR_CALIBRATIONS
    }


_SHARE = Interval(Real, 0, 1, closed="left")
_KINDS = StrOptions({"bounded_range", "pure"})


def _check_fallback(n_fallbacks, fallback_share):
    if fallback_share > 0 and n_fallbacks == 0:
        raise ValueError(
            "fallback_share > 0 needs n_fallbacks >= 1 (the paid fallback "
            f"answers), got n_fallbacks=0 and fallback_share={fallback_share!r}."
        )


_PARAMS = {
    "epsilon": [FINITE_POSITIVE],
    "delta": [DELTA_POSITIVE],
    "cutoff": [COUNT],
    "n_fallbacks": [Interval(Integral, 0, None, closed="left")],
    "fallback_share": [_SHARE],
    "fallback_kind": [_KINDS],
    "max_queries": [COUNT, None],
}


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def sparse_vector_candidates(
    epsilon: float,
    delta: float,
    cutoff: int,
    *,
    n_fallbacks: int = 0,
    fallback_share: float = 0.0,
    fallback_kind: str = "bounded_range",
    max_queries: int | None = None,
) -> dict[str, SparseVectorCalibration | None]:
    """All sparse vector calibrations for a budget; None where not admissible.

    Parameters
    ----------
    epsilon : float
        Epsilon of the whole test (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    cutoff : int
        T, the number of threshold draws (``max_unstable``, or ``T + 1`` for
        the soft-label double test).
    n_fallbacks : int, default=0
        Fallback answers paid for, composed jointly with the instances: ``T``
        noisy maxima (one per instance), or ``ceil(T/2)`` noisy means for the
        soft-label test's ``T + 1`` instances.
    fallback_share : float, default=0.0
        The fallbacks' share of the budget, in [0, 1).
    fallback_kind : {"bounded_range", "pure"}, default="bounded_range"
    max_queries : int, default=None
        The most queries one instance can see; ``gaussian`` needs it.

    Returns
    -------
    candidates : dict of str to SparseVectorCalibration or None
        Keys ``"laplace"`` and ``"gaussian"``. None where not admissible
        (``gaussian`` without ``max_queries``, or where its ``log K`` term
        alone exceeds the budget).

    Examples
    --------
    >>> from dpsklearn.mechanisms import sparse_vector_candidates
    >>> cands = sparse_vector_candidates(1.0, 1e-5, 100, max_queries=2000)
    >>> cands["laplace"].threshold, cands["gaussian"].threshold
    (2104.0, 6962.0)
    >>> sparse_vector_candidates(1.0, 1e-5, 100)["gaussian"] is None
    True
    """
    _check_fallback(n_fallbacks, fallback_share)
    cands = _candidates(
        float(epsilon),
        float(delta),
        int(cutoff),
        int(n_fallbacks),
        float(fallback_share),
        fallback_kind,
        None if max_queries is None else int(max_queries),
    )
    return {
        name: (c if c is not None and c.admissible else None)
        for name, c in cands.items()
    }


@validate_params(
    {**_PARAMS, "calibration": [SPARSE_VECTOR_CALIBRATION_OPTION]},
    prefer_skip_nested_validation=True,
)
def calibrate_sparse_vector(
    epsilon: float,
    delta: float,
    cutoff: int,
    calibration: str = "auto",
    *,
    n_fallbacks: int = 0,
    fallback_share: float = 0.0,
    fallback_kind: str = "bounded_range",
    max_queries: int | None = None,
) -> SparseVectorCalibration:
    """Noises, threshold and fallback epsilon of a sparse vector stability test.

    See ``docs/design.rst``, "The sparse vector stability test" and "The
    sparse vector test at full strength".

    Parameters
    ----------
    epsilon : float
        Epsilon of the whole test, fallbacks included (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    cutoff : int
        T, the number of threshold draws (>= 1).
    calibration : {"auto", "laplace", "gaussian"}, default="auto"
        ``"auto"`` takes the admissible calibration with the smallest
        threshold ``w``. The paper-structured ``"paper"``, ``"exact"`` and
        ``"pure"`` were removed in 0.2 (a ValueError says where their
        reference implementations live).
    n_fallbacks, fallback_share, fallback_kind, max_queries
        As in :func:`sparse_vector_candidates`.

    Returns
    -------
    calibration : SparseVectorCalibration
        Its ``name`` says which calibration was used.

    Raises
    ------
    ValueError
        For a bad input (naming the parameter), a removed calibration, or
        when ``gaussian`` is asked for and is not admissible (no
        ``max_queries``, or its ``log K`` term exceeds the budget).

    Notes
    -----
    Memoised on its inputs (``calibrate_sparse_vector.cache_info()``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
    >>> cal.name, cal.threshold
    ('laplace', 2104.0)
    >>> calibrate_sparse_vector(1.0, 1e-5, 100, "gaussian", max_queries=2000).name
    'gaussian'
    """
    _check_fallback(n_fallbacks, fallback_share)
    return _calibrate_cached(
        float(epsilon),
        float(delta),
        int(cutoff),
        calibration,
        int(n_fallbacks),
        float(fallback_share),
        fallback_kind,
        None if max_queries is None else int(max_queries),
    )


@functools.lru_cache(maxsize=1024)
def _calibrate_cached(
    epsilon, delta, cutoff, calibration, n_fallbacks, share, kind, max_queries
):
    cands = _candidates(epsilon, delta, cutoff, n_fallbacks, share, kind, max_queries)
    if calibration != "auto":
        chosen = cands[calibration]
        if chosen is None and max_queries is not None:
            raise ValueError(
                f"calibration='gaussian' has no noise scale that fits epsilon="
                f"{epsilon!r}, delta={delta!r} with max_unstable={cutoff} and "
                f"max_queries={max_queries}: the log(max_queries) term of its "
                "Renyi bound alone exceeds the budget. Use calibration='auto' "
                "or 'laplace'."
            )
        if chosen is None:
            raise ValueError(
                "calibration='gaussian' needs max_queries (the most queries one "
                "AboveThreshold instance can see is part of its guarantee); "
                "set max_queries or use calibration='auto' or 'laplace'."
            )
        if not chosen.admissible:
            raise ValueError(
                f"calibration={calibration!r} is not admissible for epsilon="
                f"{epsilon!r}, delta={delta!r}, max_unstable={cutoff}: its "
                f"composed epsilon is {chosen.composed_epsilon:.6g} > epsilon="
                f"{epsilon!r}."
            )
        return chosen
    admissible = [c for c in cands.values() if c is not None and c.admissible]
    if not admissible:
        # Never reached on the grid of tests/test_calibration.py; refuse
        # rather than answer outside the budget.
        raise ValueError(
            f"no sparse vector calibration is admissible for epsilon={epsilon!r}, "
            f"delta={delta!r}, max_unstable={cutoff}."
        )
    order = {name: i for i, name in enumerate(SPARSE_VECTOR_CALIBRATIONS)}
    return min(admissible, key=lambda c: (c.threshold, order[c.name]))


calibrate_sparse_vector.cache_info = _calibrate_cached.cache_info
calibrate_sparse_vector.cache_clear = _calibrate_cached.cache_clear
