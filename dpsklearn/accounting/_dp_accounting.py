"""Google's ``dp_accounting``, loaded on first use, and randomized response.

The composer hands RDP and PLD compositions to ``dp_accounting``
(``docs/design.rst``, "Composition"); importing it takes about two seconds,
so it is imported when an event first asks for it. A pure ``eps``-DP event
is modelled by binary randomized response with ``P(keep) = e^eps / (1 +
e^eps)``: it dominates every ``eps``-DP mechanism (Kairouz, Oh and
Viswanath 2015) and is exactly discrete Laplace noise at sensitivity one
unit, which is what dpsklearn's grid releases add. The continuous-Laplace
curves would under-count a discrete release.
"""

from __future__ import annotations

import functools
import math

__all__ = ["dp_accounting", "randomized_response"]


@functools.cache
def dp_accounting():
    """Google's ``dp_accounting``, imported on first use (about two seconds).

    Examples
    --------
    >>> from dpsklearn.accounting import dp_accounting
    >>> hasattr(dp_accounting(), "rdp")
    True
    """
    import dp_accounting as dpa

    return dpa


def randomized_response(epsilon):
    """Binary randomized response that is exactly ``epsilon``-DP.

    It keeps its input with probability ``e^eps / (1 + e^eps)``: in
    ``dp_accounting``'s parametrisation, noise parameter ``2 / (1 + e^eps)``.
    """
    p = 2.0 / (1.0 + math.exp(epsilon)) if epsilon < 700 else 0.0
    return dp_accounting().RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)
