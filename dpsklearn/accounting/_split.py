"""One budget over many identical releases, and figures for a list of events.

A model whose ``m`` releases are known at ``fit`` (the per-query mechanisms)
splits its total ``(epsilon, delta)`` once, with :func:`per_release_epsilon`,
never per query. :func:`max_events` answers the inverse question (how many
copies of a release fit), and :func:`compose_epsilon` the direct one (what a
list of events costs). The compositions are those of ``docs/design.rst``,
"Composition".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection

from .._monotone import largest_within, smallest_integer
from .._param_validation import StrOptions
from .._validation import COUNT, DELTA, FINITE_POSITIVE, validate_params
from ._bounded_range import bounded_range_max_epsilon0
from ._composer import COMPOSITIONS, Composer
from ._composition import (
    kov_epsilon,
    kov_max_epsilon0,
    largest_rdp_rho,
    rho_to_epsilon,
    zcdp_rho,
)
from ._events import BoundedRangeEvent, PrivacyEvent, PureEvent

__all__ = [
    "PER_RELEASE_CALIBRATIONS",
    "compose_epsilon",
    "max_events",
    "per_release_epsilon",
    "per_release_spent",
]

#: The kinds of release :func:`per_release_epsilon` splits a budget over.
RELEASES = {"exponential": BoundedRangeEvent, "laplace": PureEvent}
#: Its calibrations; ``"auto"`` chooses among basic, zcdp, rdp, kov and
#: bounded_range.
PER_RELEASE_CALIBRATIONS = (
    "basic",
    "zcdp",
    "rdp",
    "advanced",
    "pld",
    "kov",
    "bounded_range",
)
_AUTO_CHOICES = ("basic", "zcdp", "rdp", "kov", "bounded_range")
# "auto" moves to a later calibration only for more than this factor.
_AUTO_MARGIN = 1.001


def _rho_per_epsilon_squared(release):
    """zCDP cost of one release per ``eps^2``: 1/8 bounded range, 1/2 pure."""
    return RELEASES[release](1.0).unit_rho()


def _basic(epsilon, delta, m, release):
    return epsilon / m


def _zcdp(epsilon, delta, m, release):
    # The m releases cost m * c * eps_q^2 in rho (c = 1/8 or 1/2), which must
    # convert to at most epsilon: rho + 2 sqrt(rho ln(1/delta)) <= epsilon
    # (Bun and Steinke 2016, Proposition 1.3).
    if delta == 0:
        return None
    return math.sqrt(zcdp_rho(epsilon, delta) / (m * _rho_per_epsilon_squared(release)))


def _rdp(epsilon, delta, m, release):
    # The same rho read as the RDP curve alpha * rho, which composes by adding
    # under adaptive choice (Mironov 2017, Proposition 1), converted by
    # dp_accounting's RDP accountant (Canonne, Kamath and Steinke 2020).
    if delta == 0:
        return None
    rho = largest_rdp_rho(epsilon, delta)
    # A hair below the bisection's safe end, so that the accountant's own
    # composition of the m events never lands a rounding error above epsilon.
    return math.sqrt(rho / (m * _rho_per_epsilon_squared(release))) * (1.0 - 1e-9)


def _kov(epsilon, delta, m, release):
    # Optimal composition of m pure eps_q-DP releases under adaptive choice
    # (Kairouz, Oh and Viswanath 2015, Theorem 3.3): exact for the worst
    # eps_q-DP pair, so also valid for the exponential mechanism.
    if delta == 0:
        return None
    return kov_max_epsilon0(epsilon, delta, m)


def _bounded_range(epsilon, delta, m, release):
    # The exact adaptive composition of eps_q-bounded-range releases (Dong,
    # Durfee and Rogers 2020): only for the exponential mechanism, whose
    # answers are bounded range; a Laplace-type release is not. Played
    # directly up to 1,500 releases and in blocks beyond: a few seconds at
    # any m (2.6 s at 200,000), memoised.
    if delta == 0 or release != "exponential":
        return None
    return bounded_range_max_epsilon0(epsilon, delta, m)


def _by_accountant(composition):
    def split(epsilon, delta, m, release, rtol=1e-6):
        # The largest eps_q whose m releases the composer fits: bracket by
        # doubling from the basic split, then bisect (PLD cost grows with
        # the per-release epsilon, so start small).
        def fits(eps):
            event = RELEASES[release](eps, count=m)
            return Composer(composition).add([event]).fits(epsilon, delta)

        low = epsilon / m
        if not fits(low * (1 + 2 * rtol)):
            return low
        return largest_within(fits, low, epsilon, rtol=rtol)

    return split


_SPLITS = {
    "basic": _basic,
    "zcdp": _zcdp,
    "rdp": _rdp,
    "advanced": _by_accountant("advanced"),
    "pld": _by_accountant("pld"),
    "kov": _kov,
    "bounded_range": _bounded_range,
}


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
        "n_releases": [COUNT],
        "release": [StrOptions(set(RELEASES))],
        "calibration": [StrOptions({"auto", *PER_RELEASE_CALIBRATIONS})],
    },
    prefer_skip_nested_validation=True,
)
def per_release_epsilon(
    epsilon: float,
    delta: float,
    n_releases: int,
    *,
    release: str = "exponential",
    calibration: str = "auto",
) -> tuple[float, str]:
    """The epsilon of each of ``n_releases`` identical releases within a total budget.

    The ``m`` releases together are ``(epsilon, delta)``-DP, under adaptive
    choice of what each one is asked.

    Parameters
    ----------
    epsilon : float
        Total epsilon (finite, > 0).
    delta : float
        Total delta, in [0, 1). Every calibration but ``"basic"`` needs
        ``delta > 0``.
    n_releases : int
        ``m`` (an estimator's ``max_queries``).
    release : {"exponential", "laplace"}, default="exponential"
        ``"exponential"``: an exponential-mechanism release, bounded range,
        ``eps^2/8``-zCDP (Cesar and Rogers 2021); ``"laplace"``: a pure
        ``eps``-DP release of Laplace type, ``eps^2/2``-zCDP.
    calibration : {"auto", "basic", "zcdp", "rdp", "advanced", "pld", "kov", \
"bounded_range"}, default="auto"
        ``"basic"``: ``epsilon / m``. ``"zcdp"``: the largest per-release
        epsilon whose total ``rho`` converts to ``epsilon`` by ``rho + 2
        sqrt(rho ln(1/delta))``. ``"rdp"``: the same ``rho`` read as the RDP
        curve ``alpha * rho`` and converted by dp_accounting (tighter).
        ``"advanced"`` and ``"pld"``: the largest value the accountant's
        composition of the ``m`` events fits (bisection; never below the
        basic split). ``"kov"``: optimal composition of ``m`` pure releases
        (Kairouz, Oh and Viswanath 2015), exact for the worst pure pair.
        ``"bounded_range"`` (``release="exponential"`` only): the exact
        adaptive composition of bounded-range releases (Dong, Durfee and
        Rogers 2020), computed from above
        (:func:`~dpsklearn.accounting.bounded_range_max_epsilon0`).
        ``"auto"``: the largest of basic, zcdp, rdp, kov and bounded_range;
        a later one is taken only when it beats the earlier by more than
        0.1 %, so a pure basic split is kept when the others gain nothing.

    Returns
    -------
    epsilon_per_release : float
    name : str
        The calibration used.

    Notes
    -----
    Memoised on its inputs: estimator checks and grid searches fit hundreds
    of times.

    Examples
    --------
    >>> from dpsklearn.accounting import per_release_epsilon
    >>> per_release_epsilon(1.0, 1e-5, 1)
    (1.0, 'basic')
    >>> eps_q, name = per_release_epsilon(1.0, 1e-5, 1000, calibration="zcdp")
    >>> name, round(eps_q, 4)
    ('zcdp', 0.0129)
    >>> eps_q, name = per_release_epsilon(1.0, 1e-5, 1000, calibration="rdp")
    >>> name, round(eps_q, 4)
    ('rdp', 0.0156)
    >>> eps_q, name = per_release_epsilon(1.0, 1e-5, 1000)
    >>> name, round(eps_q, 4)
    ('bounded_range', 0.0169)
    >>> eps_q, name = per_release_epsilon(1.0, 1e-5, 1000, release="laplace")
    >>> name, round(eps_q, 4)
    ('kov', 0.0085)
    """
    return _per_release_cached(
        float(epsilon), float(delta), int(n_releases), release, calibration
    )


@functools.lru_cache(maxsize=1024)
def _per_release_cached(epsilon, delta, m, release, calibration):
    if calibration != "auto":
        value = _SPLITS[calibration](epsilon, delta, m, release)
        if value is None and calibration == "bounded_range" and delta > 0:
            raise ValueError(
                "calibration='bounded_range' applies to release='exponential' only: "
                "a Laplace-type release is not bounded range (use 'kov')."
            )
        if value is None:
            raise ValueError(
                f"calibration={calibration!r} needs delta > 0, got delta={delta!r}."
            )
        return value, calibration
    best = None
    for name in _AUTO_CHOICES:
        value = _SPLITS[name](epsilon, delta, m, release)
        if value is not None and (best is None or value > best[0] * _AUTO_MARGIN):
            best = (value, name)
    return best


per_release_epsilon.cache_clear = _per_release_cached.cache_clear
per_release_epsilon.cache_info = _per_release_cached.cache_info


@validate_params(
    {
        "events": ["array-like"],
        "delta": [DELTA],
        "composition": [StrOptions(set(COMPOSITIONS))],
    },
    prefer_skip_nested_validation=True,
)
def compose_epsilon(
    events: Collection[PrivacyEvent], delta: float, composition: str = "basic"
) -> float:
    """The composed epsilon at ``delta`` of ``events``: ``min(basic, composition)``.

    Parameters
    ----------
    events : list of PrivacyEvent
    delta : float
        Target delta of the composition.
    composition : {"basic", "advanced", "zcdp", "rdp", "pld"}, default="basic"

    Returns
    -------
    epsilon : float
        ``inf`` when no certificate at this delta exists.

    Examples
    --------
    >>> from dpsklearn.accounting import PureEvent, compose_epsilon
    >>> events = [PureEvent(0.01, count=1000)]
    >>> round(compose_epsilon(events, 1e-6, "basic"), 6)
    10.0
    >>> round(compose_epsilon(events, 1e-6, "rdp"), 2)
    1.47
    """
    events = list(events)
    for event in events:
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"events must be PrivacyEvent objects, got {event!r}.")
    return Composer(composition).add(events).epsilon_at(float(delta))


@validate_params(
    {
        "event": [PrivacyEvent],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
        "composition": [StrOptions(set(COMPOSITIONS))],
        "limit": [COUNT],
    },
    prefer_skip_nested_validation=True,
)
def max_events(
    event: PrivacyEvent,
    epsilon: float,
    delta: float = 0.0,
    composition: str = "basic",
    *,
    limit: int = 10**9,
) -> int:
    """How many copies of ``event`` fit in ``(epsilon, delta)`` under a composition.

    Parameters
    ----------
    event : PrivacyEvent
        One release (its ``count`` is ignored).
    epsilon, delta : float
        The total budget.
    composition : str, default="basic"
    limit : int, default=10**9
        Search cap; a release of zero cost raises ValueError.

    Returns
    -------
    n : int

    Examples
    --------
    >>> from dpsklearn.accounting import BoundedRangeEvent, max_events
    >>> e = BoundedRangeEvent(0.05)
    >>> [max_events(e, 1.0, 1e-6, c) for c in ("basic", "zcdp", "rdp")]
    [20, 77, 77]
    """

    def fits(n):
        return Composer(composition).add([event.with_count(n)]).fits(epsilon, delta)

    if not fits(1):
        return 0
    # The first count that does not fit, searched no further than limit + 1.
    refused = smallest_integer(lambda n: n > limit or not fits(n), low=2)
    if refused > limit:
        raise ValueError("this release costs nothing: any number fits.")
    return refused - 1


def per_release_spent(
    units: int,
    epsilon_per_release: float,
    epsilon: float,
    delta: float,
    release: str,
    calibration: str,
) -> tuple[float, float]:
    """``(epsilon, delta)`` of the first ``units`` of ``m`` releases of a split.

    What a model whose ``(epsilon, delta)`` was split with
    :func:`per_release_epsilon` has spent after ``units`` releases, for
    ``BudgetStatus.spent``: ``units * eps_q`` under basic; the zCDP or RDP
    conversion of their ``rho``; their optimal composition under ``"kov"``.
    Under ``"bounded_range"`` the exact game is too slow to replay at
    every status call, so the figure is the RDP conversion capped by the
    whole budget, which the calibration certifies for all ``m`` (and so
    for fewer).

    Examples
    --------
    >>> from dpsklearn.accounting._split import per_release_spent
    >>> per_release_spent(10, 0.01, 1.0, 1e-5, "laplace", "basic")
    (0.1, 0.0)
    """
    if units <= 0:
        return 0.0, 0.0
    if calibration == "basic":
        return units * epsilon_per_release, 0.0
    if calibration == "kov":
        return min(epsilon, kov_epsilon(epsilon_per_release, units, delta)), delta
    rho = units * RELEASES[release](epsilon_per_release).unit_rho()
    if calibration == "bounded_range":
        spent, _ = rho_to_epsilon(rho, delta, "rdp")
        return min(epsilon, spent), delta
    return rho_to_epsilon(rho, delta, calibration)
