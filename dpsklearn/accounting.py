"""Privacy accounting: one budget, atomic spends, tight composition (SPEC section 4).

A :class:`PrivacyAccountant` holds a total ``(epsilon, delta)`` budget and a
list of :class:`PrivacyEvent` records, each describing one kind of release
(and how many of them). ``spend`` checks the composed total *with* the new
events against the budget and records them, atomically, under a lock.

Compositions (``composition=``)
-------------------------------
``"basic"``
    Sums of epsilons and of deltas.
``"advanced"``
    Dwork, Rothblum and Vadhan (2010, Theorem III.3), in its heterogeneous
    form: ``sqrt(2 ln(1/delta') sum_i eps_i^2) + sum_i eps_i (e^eps_i - 1)``
    with total delta ``sum_i delta_i + delta'``. The slack ``delta'`` is the
    part of the target delta that the events' own deltas leave free
    (``delta' = delta_target - sum_i delta_i``).
``"zcdp"``
    Bun and Steinke (2016): a pure ``eps``-DP release is ``eps^2/2``-zCDP,
    an exponential-mechanism (bounded-range) release ``eps^2/8``-zCDP
    (Cesar and Rogers 2021), a Gaussian release ``Delta^2/(2 sigma^2)``;
    the total ``rho`` converts with ``eps = rho + 2 sqrt(rho ln(1/delta))``.
``"rdp"``, ``"pld"``
    Google's ``dp_accounting`` (pinned to 0.6.x): its ``RdpAccountant`` and
    ``PLDAccountant`` fed with ``DpEvent`` objects.

In every tight composition an approximate ``(eps, delta)`` event that has no
finer description (a sparse vector instance reserved as a whole) is carried
beside the rest and added by basic composition: the other events are
converted at ``delta_target - sum(delta_approx)`` and ``sum(eps_approx)`` is
added to the result. Every composed figure is ``min(basic, chosen)``: a
tight method never reports more than the plain sum, and with ``delta = 0``
only basic composition applies (SPEC section 4).

How events are fed to ``dp_accounting``
---------------------------------------
dpsklearn's neighbouring relation is replace-one (SPEC section 1), and every
sensitivity an estimator states is a *replace-one* sensitivity: the largest
change of the released statistic when one record is replaced. Those
sensitivities are what we feed to ``dp_accounting``'s calculations, and we
always pass ``neighboring_relation`` explicitly:

* RDP: ``RdpAccountant(neighboring_relation=REPLACE_ONE)``. In 0.6 its
  Laplace, Gaussian and zCDP formulas do not depend on the relation (they
  take the stated shift as the sensitivity), and its randomized-response
  formula is the replace-one one.
* PLD: ``PLDAccountant(neighboring_relation=ADD_OR_REMOVE_ONE)``. In 0.6 the
  PLD accountant refuses ``LaplaceDpEvent`` and ``DiscreteLaplaceDpEvent``
  under ``REPLACE_ONE`` and, for ``GaussianDpEvent`` under ``REPLACE_ONE``,
  doubles the sensitivity (it reads the noise multiplier as relative to an
  add/remove bound). Under ``ADD_OR_REMOVE_ONE`` it computes the privacy loss
  of the noise against the noise shifted by the stated sensitivity, in both
  directions; with our replace-one sensitivity that is exactly the pair of
  output distributions of two replace-one neighbours.

Mechanism models (what each event is accounted as; s = sensitivity):

==================  ==============  ====================  ======================
event               zCDP rho        RDP event             PLD event
==================  ==============  ====================  ======================
pure / laplace      eps^2/2         RandomizedResponse    DiscreteLaplace(eps, 1)
exponential         eps^2/8         ZCDp(eps^2/8)         DiscreteLaplace(eps, 1)
discrete_laplace    eps^2/2         RandomizedResponse    DiscreteLaplace(1/t, s)
continuous_laplace  eps^2/2         Laplace(b/s)          Laplace(b/s)
gaussian            s^2/(2 sig^2)   Gaussian(sig/s)       Gaussian(sig/s)
approximate         beside          beside                beside
==================  ==============  ====================  ======================

(``X`` in the table is ``dp_accounting``'s ``XDpEvent``.)

``"laplace"`` (and any other pure kind) is accounted as a *worst-case*
``eps``-DP release: its privacy loss pair is binary randomized response with
``P(keep) = e^eps / (1 + e^eps)``, which dominates every ``eps``-DP mechanism
(Kairouz, Oh and Viswanath 2015) and is *exactly* the pair of discrete
Laplace noise at sensitivity one unit. dpsklearn never adds floating-point
Laplace noise (SPEC section 1: grid / discrete Laplace only), so this is the
sound reading of ``kind="laplace"``; the continuous-Laplace curves of
``LaplaceDpEvent`` are slightly tighter and would *under*-count a discrete
release, so they are used only for ``kind="continuous_laplace"``. For RDP,
``dp_accounting`` 0.6 has no discrete Laplace event, so discrete Laplace
uses the randomized-response curve at ``eps = s/t`` (exact at ``s = 1``).
The exponential mechanism has no ``DpEvent`` of its own: for RDP we use its
bounded-range / zCDP characterisation, ``ZCDpEvent(rho=eps^2/8)`` (RDP
``alpha * eps^2/8`` at every order); for PLD it is accounted as a generic
``eps``-DP release (a valid, looser dominating pair).

Sharing and filters (SPEC section 4)
------------------------------------
An accountant a user constructs and passes to estimators is *shared*: it
survives ``clone`` and ``deepcopy`` as the same object, refuses to be pickled
(use a ``PrivacyLedger`` across processes) and, since it sees adaptively
chosen events across fits, accepts only compositions usable as privacy
filters: basic (Rogers, Roth, Ullman and Vadhan 2016) and the zCDP / RDP
filters (Feldman and Zrnic 2021). ``"advanced"`` and ``"pld"`` need the
sequence of mechanisms fixed in advance and are refused there; a model's own
accountant (created by ``PrivacyAccountant._for_model``), whose mechanisms
are known at ``fit``, may use any composition.
"""

from __future__ import annotations

import copy
import datetime
import math
import threading
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

from .exceptions import BudgetExhaustedError

__all__ = [
    "COMPOSITIONS",
    "PrivacyAccountant",
    "PrivacyEvent",
    "calibrate_epsilon",
    "compose_epsilon",
    "max_events",
    "zcdp_epsilon",
    "zcdp_rho",
]

#: The compositions a :class:`PrivacyAccountant` understands.
COMPOSITIONS = ("basic", "advanced", "zcdp", "rdp", "pld")
# Filter-valid compositions: the only ones a shared accountant accepts,
# because across fits the events are chosen adaptively (SPEC section 4).
_FILTER_VALID = ("basic", "zcdp", "rdp")

# Slack for floating-point sums: a budget spent in several equal parts must
# not be refused because 0.1 + 0.2 > 0.3 in binary.
_TOLERANCE = 1e-12

# PLD discretisation (dp_accounting's default); pessimistic rounding keeps the
# figures upper bounds.
_PLD_DISCRETIZATION = 1e-4

# Event kinds by mechanism model. Any other kind is accounted as a worst-case
# pure eps-DP release (delta = 0) or an approximate (eps, delta) release.
_BOUNDED_RANGE_KINDS = frozenset(
    {"exponential", "exponential_mechanism", "bounded_range", "gumbel_max"}
)
_DISCRETE_LAPLACE_KINDS = frozenset({"discrete_laplace", "geometric"})
_CONTINUOUS_LAPLACE_KINDS = frozenset({"continuous_laplace"})
_GAUSSIAN_KINDS = frozenset({"gaussian"})
_SCALE_KINDS = (
    frozenset({"laplace"}) | _DISCRETE_LAPLACE_KINDS | _CONTINUOUS_LAPLACE_KINDS
)


def _dp_accounting():
    # Imported lazily: dp_accounting takes about two seconds to import and
    # only the rdp / pld compositions and Gaussian checks need it.
    import dp_accounting

    return dp_accounting


def _check_budget_value(value, name, *, allow_zero, upper=math.inf):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}.") from None
    if (
        math.isnan(value)
        or value < 0
        or (value == 0 and not allow_zero)
        or value >= upper
    ):
        bound = "[0" if allow_zero else "(0"
        raise ValueError(f"{name} must be in {bound}, {upper}), got {value!r}.")
    return value


def _positive_finite(value, name):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


# -- zCDP conversions (SPEC section 4) ---------------------------------------
def zcdp_epsilon(rho, delta):
    """Epsilon of a ``rho``-zCDP mechanism: ``rho + 2 sqrt(rho ln(1/delta))``.

    Bun and Steinke (2016), Proposition 1.3; the conversion SPEC section 4
    prescribes. Infinite at ``delta = 0`` unless ``rho = 0``.

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.
    delta : float
        Target delta.

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> round(zcdp_epsilon(0.5, 1e-6), 4)
    5.7565
    """
    rho = float(rho)
    if rho <= 0:
        return 0.0
    if not delta > 0:
        return math.inf
    if delta >= 1:
        return rho
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho(epsilon, delta):
    """The largest ``rho`` with ``zcdp_epsilon(rho, delta) <= epsilon``.

    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2`` (SPEC
    section 3.3), the inverse of :func:`zcdp_epsilon`.

    Examples
    --------
    >>> rho = zcdp_rho(1.0, 1e-6)
    >>> round(zcdp_epsilon(rho, 1e-6), 12)
    1.0
    """
    epsilon = float(epsilon)
    if not delta > 0 or epsilon <= 0:
        return 0.0
    log_term = math.log(1.0 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


# -- events ------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyEvent:
    """One recorded release (or ``count`` identical ones): public figures only.

    Parameters
    ----------
    epsilon : float or None
        The release's own epsilon (its guarantee on its own). May be None
        when it follows from the noise: ``sensitivity / scale`` for the
        Laplace kinds; for ``"gaussian"`` without a stated ``(epsilon,
        delta)`` basic composition cannot use the event and records
        ``epsilon = inf`` (tight compositions use ``sigma``).
    delta : float, default=0.0
        The release's own delta. A release with ``delta > 0`` that is not
        Gaussian is an *approximate* event (e.g. a sparse vector instance
        reserved as a whole), carried beside tight compositions.
    kind : str, default="generic"
        The mechanism: ``"laplace"`` (any Laplace-type eps-DP release,
        dpsklearn's grid / discrete Laplace included), ``"discrete_laplace"``,
        ``"continuous_laplace"`` (real-valued Laplace noise only),
        ``"exponential"`` (or ``"bounded_range"``), ``"gaussian"``,
        ``"sparse_vector"``; any other name is a generic eps-DP release, or an
        approximate one when ``delta > 0``.
    label : str or None
        Who spent it (e.g. the estimator), shown in reports.
    count : int, default=1
        How many identical releases this event stands for.
    time : float
        When it was recorded (seconds since the epoch).
    sigma : float, optional
        Gaussian noise standard deviation (``kind="gaussian"`` only).
    sensitivity : float, optional
        Replace-one sensitivity: L2 for Gaussian, L1 for the Laplace kinds (an
        integer for ``"discrete_laplace"``). Default 1.
    scale : float, optional
        Laplace scale ``b`` (continuous) or discrete Laplace scale ``t``
        (``P(z) ~ exp(-|z|/t)``).

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyEvent
    >>> round(PrivacyEvent.exponential(0.05, count=10).rho, 12)
    0.003125
    >>> PrivacyEvent.discrete_laplace(scale=20, sensitivity=2).epsilon
    0.1
    """

    epsilon: float | None
    delta: float = 0.0
    kind: str = "generic"
    label: str | None = None
    count: int = 1
    time: float = field(default_factory=time.time)
    sigma: float | None = None
    sensitivity: float | None = None
    scale: float | None = None

    def __post_init__(self):
        kind = str(self.kind)
        object.__setattr__(self, "kind", kind)
        if isinstance(self.count, bool) or not isinstance(self.count, Integral):
            raise TypeError(f"count must be an integer, got {self.count!r}.")
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count!r}.")
        object.__setattr__(self, "count", int(self.count))
        delta = _check_budget_value(self.delta, "delta", allow_zero=True, upper=1.0)
        object.__setattr__(self, "delta", delta)

        if kind in _GAUSSIAN_KINDS:
            self._init_gaussian()
            return
        if self.sigma is not None:
            raise ValueError(
                f"sigma is only meaningful for kind='gaussian', not {kind!r}."
            )
        epsilon = self.epsilon
        if self.scale is not None or self.sensitivity is not None:
            if kind not in _SCALE_KINDS:
                raise ValueError(
                    f"scale / sensitivity describe Laplace noise; kind {kind!r} takes "
                    "only epsilon (and delta)."
                )
            if delta > 0:
                raise ValueError(
                    "A Laplace release with a scale is pure: delta must be 0."
                )
            sensitivity = 1.0 if self.sensitivity is None else self.sensitivity
            sensitivity = _positive_finite(sensitivity, "sensitivity")
            if kind in _DISCRETE_LAPLACE_KINDS and sensitivity != int(sensitivity):
                raise ValueError(
                    "discrete Laplace sensitivity must be an integer (in grid units), "
                    f"got {sensitivity!r}."
                )
            object.__setattr__(self, "sensitivity", sensitivity)
            if self.scale is None:
                if epsilon is None:
                    raise ValueError("give epsilon or scale.")
                object.__setattr__(self, "scale", sensitivity / float(epsilon))
            scale = _positive_finite(self.scale, "scale")
            object.__setattr__(self, "scale", scale)
            derived = sensitivity / scale
            if epsilon is not None and not math.isclose(
                float(epsilon), derived, rel_tol=1e-9, abs_tol=1e-15
            ):
                raise ValueError(
                    f"epsilon={epsilon!r} does not match sensitivity/scale={derived!r}."
                )
            epsilon = derived
        if epsilon is None:
            raise ValueError(f"kind {kind!r} needs epsilon (or a scale).")
        epsilon = _check_budget_value(epsilon, "epsilon", allow_zero=True)
        object.__setattr__(self, "epsilon", epsilon)

    def _init_gaussian(self):
        if self.scale is not None:
            raise ValueError("a Gaussian event is described by sigma, not scale.")
        if self.sigma is None:
            raise ValueError(
                "kind='gaussian' needs sigma (the noise standard deviation)."
            )
        sigma = _positive_finite(self.sigma, "sigma")
        sensitivity = _positive_finite(
            1.0 if self.sensitivity is None else self.sensitivity, "sensitivity"
        )
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivity", sensitivity)
        if self.epsilon is None or math.isinf(float(self.epsilon)):
            # No stated guarantee: basic composition cannot use it.
            object.__setattr__(self, "epsilon", math.inf)
            return
        epsilon = _check_budget_value(self.epsilon, "epsilon", allow_zero=True)
        object.__setattr__(self, "epsilon", epsilon)
        if self.delta <= 0:
            raise ValueError(
                "a Gaussian release is never pure: its stated delta must be > 0."
            )
        # The stated (epsilon, delta) must hold for this sigma: exact analytic
        # Gaussian conversion (Balle and Wang 2018) through dp_accounting.
        needed = _dp_accounting().get_epsilon_gaussian(sigma / sensitivity, self.delta)
        if epsilon < needed * (1 - 1e-9) - 1e-12:
            raise ValueError(
                f"a Gaussian with sigma/sensitivity={sigma / sensitivity:g} is not "
                f"({epsilon:g}, {self.delta:g})-DP; it needs epsilon >= {needed:.6g}."
            )

    # -- constructors --------------------------------------------------------
    @classmethod
    def laplace(
        cls, epsilon=None, *, scale=None, sensitivity=None, count=1, label=None
    ):
        """A Laplace-type pure ``epsilon``-DP release (worst-case eps-DP accounting)."""
        return cls(
            epsilon, 0.0, "laplace", label, count, scale=scale, sensitivity=sensitivity
        )

    @classmethod
    def discrete_laplace(cls, scale, sensitivity=1, *, count=1, label=None):
        """Discrete Laplace ``DLap(scale)`` noise, integer ``sensitivity``."""
        return cls(
            None,
            0.0,
            "discrete_laplace",
            label,
            count,
            scale=scale,
            sensitivity=sensitivity,
        )

    @classmethod
    def continuous_laplace(cls, scale, sensitivity=1.0, *, count=1, label=None):
        """Real-valued Laplace(``scale``) noise (not dpsklearn's grid Laplace)."""
        return cls(
            None,
            0.0,
            "continuous_laplace",
            label,
            count,
            scale=scale,
            sensitivity=sensitivity,
        )

    @classmethod
    def exponential(cls, epsilon, *, count=1, label=None):
        """An exponential-mechanism (``epsilon``-bounded-range) release."""
        return cls(epsilon, 0.0, "exponential", label, count)

    @classmethod
    def gaussian(
        cls, sigma, sensitivity=1.0, *, epsilon=None, delta=0.0, count=1, label=None
    ):
        """Gaussian noise of standard deviation ``sigma``, L2 ``sensitivity``."""
        return cls(
            epsilon,
            delta,
            "gaussian",
            label,
            count,
            sigma=sigma,
            sensitivity=sensitivity,
        )

    @classmethod
    def approximate(cls, epsilon, delta, *, kind="sparse_vector", count=1, label=None):
        """An ``(epsilon, delta)``-DP release accounted as a whole (sparse vector)."""
        return cls(epsilon, delta, kind, label, count)

    # -- derived -------------------------------------------------------------
    @property
    def mechanism(self):
        """The model the event is accounted as (see the module docstring)."""
        return self._signature()[0]

    def _signature(self):
        # A hashable description of one release, for tight composition.
        if self.kind in _GAUSSIAN_KINDS:
            return ("gaussian", self.sigma / self.sensitivity)
        if self.delta > 0:
            return ("approximate", self.epsilon, self.delta)
        if self.kind in _BOUNDED_RANGE_KINDS:
            return ("bounded_range", self.epsilon)
        if self.scale is not None and self.kind in _CONTINUOUS_LAPLACE_KINDS:
            return ("continuous_laplace", self.scale / self.sensitivity)
        if self.scale is not None and self.kind in _DISCRETE_LAPLACE_KINDS:
            return ("discrete_laplace", 1.0 / self.scale, int(self.sensitivity))
        return ("pure", self.epsilon)

    @property
    def rho(self):
        """zCDP ``rho`` of all ``count`` releases (None for an approximate event)."""
        return (
            _rho(self._signature()) * self.count
            if self.mechanism != "approximate"
            else None
        )

    def describe(self):
        """A short public description of the mechanism (no data, no noise draws)."""
        sig = self._signature()
        if sig[0] == "gaussian":
            return f"gaussian sigma/Delta={sig[1]:.4g}"
        if sig[0] == "continuous_laplace":
            return f"Laplace b/Delta={sig[1]:.4g}"
        if sig[0] == "discrete_laplace":
            return f"DLap t={1 / sig[1]:.4g} Delta={sig[2]}"
        if sig[0] == "bounded_range":
            return "bounded range"
        if sig[0] == "approximate":
            return "(eps, delta) whole"
        return "pure eps-DP"


def _signature_epsilon(sig):
    kind = sig[0]
    if kind in ("pure", "bounded_range"):
        return sig[1]
    if kind == "continuous_laplace":
        return 1.0 / sig[1]
    if kind == "discrete_laplace":
        return sig[1] * sig[2]
    raise ValueError(kind)


def _rho(sig):
    """zCDP rho of one release (SPEC section 4)."""
    kind = sig[0]
    if kind == "gaussian":
        return 1.0 / (2.0 * sig[1] ** 2)  # Delta^2 / (2 sigma^2)
    if kind == "bounded_range":
        return sig[1] ** 2 / 8.0  # Cesar and Rogers 2021
    return _signature_epsilon(sig) ** 2 / 2.0  # Bun and Steinke 2016, Prop. 1.4


def _randomized_response(epsilon):
    # Binary randomized response that is exactly epsilon-DP: keep the input
    # with probability e^eps / (1 + e^eps), i.e. dp_accounting's noise
    # parameter p = 2 / (1 + e^eps).
    dpa = _dp_accounting()
    p = 2.0 / (1.0 + math.exp(epsilon)) if epsilon < 700 else 0.0
    return dpa.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)


def _rdp_event(sig):
    dpa = _dp_accounting()
    kind = sig[0]
    if kind == "gaussian":
        return dpa.GaussianDpEvent(noise_multiplier=sig[1])
    if kind == "continuous_laplace":
        return dpa.LaplaceDpEvent(noise_multiplier=sig[1])
    if kind == "bounded_range":
        # Bounded range -> zCDP (Cesar and Rogers 2021): RDP alpha * eps^2 / 8.
        return dpa.ZCDpEvent(rho=sig[1] ** 2 / 8.0)
    # pure eps-DP and discrete Laplace: randomized response is the worst case
    # eps-DP pair, and exactly discrete Laplace at sensitivity 1. dp_accounting
    # 0.6 has no discrete Laplace RDP.
    return _randomized_response(_signature_epsilon(sig))


def _pld_event(sig):
    dpa = _dp_accounting()
    kind = sig[0]
    if kind == "gaussian":
        return dpa.GaussianDpEvent(noise_multiplier=sig[1])
    if kind == "continuous_laplace":
        return dpa.LaplaceDpEvent(noise_multiplier=sig[1])
    if kind == "discrete_laplace":
        return dpa.dp_event.DiscreteLaplaceDpEvent(
            noise_parameter=sig[1], sensitivity=sig[2]
        )
    # pure eps-DP and the exponential mechanism: the worst-case eps-DP pair,
    # which is discrete Laplace with parameter eps at sensitivity 1.
    return dpa.dp_event.DiscreteLaplaceDpEvent(noise_parameter=sig[1], sensitivity=1)


def _new_rdp_accountant():
    dpa = _dp_accounting()
    # Explicit relation: replace-one sensitivities are fed to its formulas.
    return dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )


def _new_pld_accountant():
    dpa = _dp_accounting()
    # Explicit relation: ADD_OR_REMOVE_ONE with replace-one sensitivities is the
    # shift-by-sensitivity pair (see the module docstring); REPLACE_ONE would
    # refuse Laplace and double Gaussian sensitivities.
    return dpa.pld.PLDAccountant(
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=_PLD_DISCRETIZATION,
    )


class _Composer:
    """The composed state of a list of events under one composition.

    Counts are kept per distinct release, so figures cost O(distinct
    releases); for ``rdp`` / ``pld`` a ``dp_accounting`` accountant is kept
    and extended incrementally (events are composed in the order recorded).
    A composer is copied before a candidate spend is added, so a refused
    spend leaves the accountant's state untouched; the ``dp_accounting``
    object is shared until one side needs to extend it (copy on write).
    """

    def __init__(self, composition):
        self.composition = composition
        self.basic_counts = {}  # (epsilon, delta) -> count
        self.mech_counts = {}  # signature -> count
        self._dpa = None
        self._dpa_shared = False
        self._pending = []  # (signature, count) not yet in _dpa
        self._memo = {}

    def copy(self):
        new = object.__new__(_Composer)
        new.composition = self.composition
        new.basic_counts = dict(self.basic_counts)
        new.mech_counts = dict(self.mech_counts)
        new._dpa = self._dpa
        new._pending = list(self._pending)
        new._memo = {}
        self._dpa_shared = new._dpa_shared = self._dpa is not None
        return new

    def add(self, events):
        for event in events:
            if event.count == 0:
                continue
            key = (event.epsilon, event.delta)
            self.basic_counts[key] = self.basic_counts.get(key, 0) + event.count
            sig = event._signature()
            self.mech_counts[sig] = self.mech_counts.get(sig, 0) + event.count
            if self.composition in ("rdp", "pld") and sig[0] != "approximate":
                self._pending.append((sig, event.count))
        self._memo = {}
        return self

    # -- figures -------------------------------------------------------------
    def basic(self):
        """``(sum of epsilons, sum of deltas)``."""
        items = self.basic_counts.items()
        if any(math.isinf(eps) for (eps, _), _ in items):
            epsilon = math.inf
        else:
            epsilon = math.fsum(eps * c for (eps, _), c in items)
        return epsilon, math.fsum(d * c for (_, d), c in items)

    def basic_epsilon_at(self, delta):
        epsilon, spent_delta = self.basic()
        return epsilon if _delta_fits(spent_delta, delta) else math.inf

    def _approx(self):
        pairs = [
            (s[1] * c, s[2] * c)
            for s, c in self.mech_counts.items()
            if s[0] == "approximate"
        ]
        return math.fsum(p[0] for p in pairs), math.fsum(p[1] for p in pairs)

    def _dp_accountant(self):
        if self._pending:
            if self._dpa is None:
                self._dpa = (
                    _new_rdp_accountant()
                    if self.composition == "rdp"
                    else _new_pld_accountant()
                )
            elif self._dpa_shared:
                self._dpa = copy.deepcopy(self._dpa)
            self._dpa_shared = False
            make = _rdp_event if self.composition == "rdp" else _pld_event
            for sig, count in self._pending:
                self._dpa.compose(make(sig), count)
            self._pending = []
        return self._dpa

    def tight_epsilon_at(self, delta, composition=None):
        """Epsilon at ``delta`` under ``composition`` alone (no min with basic)."""
        composition = composition or self.composition
        if composition == "basic":
            return self.basic_epsilon_at(delta)
        if composition == "advanced":
            return self._advanced_epsilon_at(delta)
        approx_eps, approx_delta = self._approx()
        conv_delta = delta - approx_delta
        tight = [s for s in self.mech_counts if s[0] != "approximate"]
        if not tight:
            return approx_eps if _delta_fits(approx_delta, delta) else math.inf
        if not conv_delta > 0:
            return math.inf
        if composition == "zcdp":
            rho = math.fsum(_rho(s) * self.mech_counts[s] for s in tight)
            return zcdp_epsilon(rho, conv_delta) + approx_eps
        if composition != self.composition:
            raise ValueError("rdp / pld figures need a composer built for them.")
        epsilon = float(self._dp_accountant().get_epsilon(conv_delta))
        return epsilon + approx_eps

    def _advanced_epsilon_at(self, delta):
        # Dwork, Rothblum, Vadhan 2010, Thm III.3 (heterogeneous form, Azuma
        # with ranges eps_i): delta' = delta - sum(delta_i) is the slack.
        items = [(eps, d, c) for (eps, d), c in self.basic_counts.items()]
        if any(math.isinf(eps) for eps, _, _ in items):
            return math.inf
        slack = delta - math.fsum(d * c for _, d, c in items)
        if not items:
            return 0.0
        if not slack > 0:
            return math.inf
        sum_sq = math.fsum(c * eps * eps for eps, _, c in items)
        drift = math.fsum(c * eps * math.expm1(eps) for eps, _, c in items)
        return math.sqrt(2.0 * math.log(1.0 / slack) * sum_sq) + drift

    def epsilon_at(self, delta):
        """min(basic, chosen composition) epsilon at ``delta`` (memoised)."""
        if delta not in self._memo:
            basic = self.basic_epsilon_at(delta)
            if self.composition == "basic":
                value = basic
            else:
                value = min(basic, self.tight_epsilon_at(delta))
            self._memo[delta] = value
        return self._memo[delta]

    def fits(self, epsilon, delta):
        basic_epsilon, basic_delta = self.basic()
        # Fast path: min(basic, chosen) <= basic.
        if _delta_fits(basic_delta, delta) and _epsilon_fits(basic_epsilon, epsilon):
            return True
        if self.composition == "basic":
            return False
        return _epsilon_fits(self.epsilon_at(delta), epsilon)

    def spent(self, delta_budget):
        """The ``(epsilon, delta)`` certificate reported as spent."""
        basic_epsilon, basic_delta = self.basic()
        if self.composition == "basic" or not self.mech_counts:
            return basic_epsilon, basic_delta
        tight = self.epsilon_at(delta_budget)
        if _delta_fits(basic_delta, delta_budget) and basic_epsilon <= tight:
            return basic_epsilon, basic_delta
        # A tight conversion states its epsilon at the budget's delta.
        return tight, delta_budget


def _epsilon_fits(value, budget):
    return value <= budget * (1 + _TOLERANCE) + _TOLERANCE


def _delta_fits(value, budget):
    return value <= budget * (1 + _TOLERANCE) + 1e-300


def _check_composition(composition):
    if composition not in COMPOSITIONS:
        raise ValueError(
            f"composition must be one of {list(COMPOSITIONS)}, got {composition!r}."
        )
    return composition


# -- planning helpers (calibrate once at fit; SPEC section 4) ----------------
def compose_epsilon(events, delta, composition="basic"):
    """The composed epsilon at ``delta`` of ``events``: min(basic, composition).

    Parameters
    ----------
    events : iterable of PrivacyEvent
    delta : float
        Target delta of the composition.
    composition : {"basic", "advanced", "zcdp", "rdp", "pld"}, default="basic"

    Returns
    -------
    epsilon : float
        ``inf`` when no certificate at this delta exists.

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyEvent, compose_epsilon
    >>> events = [PrivacyEvent.laplace(0.01, count=1000)]
    >>> round(compose_epsilon(events, 1e-6, "basic"), 6)
    10.0
    >>> round(compose_epsilon(events, 1e-6, "rdp"), 2)
    1.47
    """
    composer = _Composer(_check_composition(composition)).add(list(events))
    return composer.epsilon_at(float(delta))


def max_events(event, epsilon, delta=0.0, composition="basic", *, limit=10**9):
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
    >>> from dpsklearn.accounting import PrivacyEvent, max_events
    >>> e = PrivacyEvent.exponential(0.05)
    >>> [max_events(e, 1.0, 1e-6, c) for c in ("basic", "zcdp", "rdp")]
    [20, 55, 77]
    """
    composition = _check_composition(composition)

    def fits(n):
        single = PrivacyEvent(
            event.epsilon,
            event.delta,
            event.kind,
            count=n,
            sigma=event.sigma,
            sensitivity=event.sensitivity,
            scale=event.scale,
        )
        return _Composer(composition).add([single]).fits(epsilon, delta)

    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
        if high > limit:
            if fits(limit):
                raise ValueError("this release costs nothing: any number fits.")
            high = limit
            break
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
    return low


def calibrate_epsilon(
    count, epsilon, delta=0.0, *, kind="laplace", composition="basic", rtol=1e-6
):
    """The largest per-release epsilon such that ``count`` releases fit the budget.

    Solved once at ``fit`` for a model's known number of identical mechanisms
    (SPEC section 4), never per query. Never smaller than the basic split
    ``epsilon / count``.

    Parameters
    ----------
    count : int
        Number of identical releases.
    epsilon, delta : float
        Total budget.
    kind : str, default="laplace"
        A pure kind (``"laplace"``, ``"exponential"``, ...).
    composition : str, default="basic"
    rtol : float, default=1e-6
        Relative precision of the bisection (the result always fits).

    Returns
    -------
    eps_per_release : float

    Examples
    --------
    >>> from dpsklearn.accounting import calibrate_epsilon
    >>> calibrate_epsilon(20, 1.0)
    0.05
    >>> round(calibrate_epsilon(1000, 1.0, 1e-6, kind="exponential",
    ...                         composition="zcdp"), 5)
    0.01182
    """
    composition = _check_composition(composition)
    count = int(count)
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count!r}.")
    epsilon = _check_budget_value(epsilon, "epsilon", allow_zero=False)
    delta = _check_budget_value(delta, "delta", allow_zero=True, upper=1.0)
    if kind in _GAUSSIAN_KINDS:
        raise ValueError(
            "calibrate_epsilon handles pure kinds; calibrate sigma instead."
        )
    basic = epsilon / count

    def fits(eps):
        event = PrivacyEvent(eps, 0.0, kind, count=count)
        return _Composer(composition).add([event]).fits(epsilon, delta)

    if composition == "basic" or not fits(basic * (1 + 2 * rtol)):
        return basic
    # Bracket by doubling from the basic split (cheap: PLD cost grows with the
    # per-release epsilon), then bisect.
    low = basic
    while True:
        high = min(2.0 * low, epsilon)
        if not fits(high):
            break
        if high >= epsilon:
            return epsilon
        low = high
    while high - low > rtol * low:
        mid = 0.5 * (low + high)
        if fits(mid):
            low = mid
        else:
            high = mid
    return low


# -- the accountant ----------------------------------------------------------
class PrivacyAccountant:
    """A privacy budget with atomic, thread-safe check-and-spend and tight composition.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total epsilon budget.
    delta : float, default=0.0
        Total delta budget. With ``delta = 0`` only basic composition can
        certify anything (every tight figure is then min(basic, ...) = basic).
    composition : {"basic", "advanced", "zcdp", "rdp", "pld"}, default="basic"
        How spends compose (see the module docstring). A shared accountant
        (one you construct and pass to estimators) accepts only the
        filter-valid ``"basic"``, ``"zcdp"`` and ``"rdp"``.

    Attributes
    ----------
    spent : tuple of float
        The composed ``(epsilon, delta)`` spent: the basic sums, or, when the
        chosen composition certifies a smaller epsilon, ``(epsilon at the
        budget's delta, budget delta)``.
    remaining : tuple of float
        ``budget - spent``. Under a tight composition the conversion uses the
        whole delta budget, so ``remaining[1]`` can read 0 while further
        events still fit; ask :meth:`can_spend`.
    events : list of PrivacyEvent

    Notes
    -----
    Every spend is checked, at spend time and under the lock, against the
    composed total *including* the new events: ``min(basic, composition)`` at
    the budget's delta must not exceed the epsilon budget. A refused spend
    raises :class:`~dpsklearn.exceptions.BudgetExhaustedError` and records
    nothing.

    An accountant passed to estimators as a parameter is *shared*: ``clone``
    and ``copy.deepcopy`` return the same object, so the clones that
    ``GridSearchCV(n_jobs=1)`` makes draw from one budget. A shared
    accountant refuses to be pickled (a pickled copy would fork the budget);
    across processes use a ``PrivacyLedger``. The accountant a model creates
    for itself (``accountant=None``) pickles with the model; each copy then
    carries its own remaining budget.

    Filter validity. A shared accountant sees events chosen adaptively across
    fits, so it refuses ``"advanced"`` and ``"pld"``, which hold only for a
    sequence of mechanisms fixed in advance. Basic composition is a valid
    privacy filter (Rogers, Roth, Ullman and Vadhan 2016). For events with a
    zCDP parameter (pure, exponential, Gaussian), keeping the total ``rho``
    within the budget's ``rho`` is a zCDP filter (Feldman and Zrnic 2021,
    their Renyi filter at every order at once), and the min with basic stays
    valid because basic bounds the privacy loss of pure events pointwise.
    Two refinements are covered by those theorems only when the events are
    fixed in advance: RDP's choice of the best order after the fact (their
    filter fixes the order) and approximate events carried beside ``rho``
    (their epsilons and deltas move the ``rho`` budget).

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyAccountant
    >>> acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    >>> acc.spend(0.4, kind="laplace")
    >>> acc.remaining
    (0.6, 1e-05)
    >>> tight = PrivacyAccountant(epsilon=1.0, delta=1e-6, composition="rdp")
    >>> tight.spend(0.05, kind="exponential", count=77)
    >>> tight.can_spend(0.05, kind="exponential")
    False
    """

    def __init__(self, epsilon=1.0, delta=0.0, composition="basic"):
        self._init_state(epsilon, delta, composition, owned=False)

    def _init_state(self, epsilon, delta, composition, *, owned):
        self.epsilon = _check_budget_value(epsilon, "epsilon", allow_zero=False)
        self.delta = _check_budget_value(delta, "delta", allow_zero=True, upper=1.0)
        composition = _check_composition(composition)
        if not owned and composition not in _FILTER_VALID:
            raise ValueError(
                f"composition={composition!r} is not valid for a shared accountant: "
                "across fits the events are chosen adaptively, and "
                f"{composition!r} composition only holds for a sequence of mechanisms "
                "fixed in advance (it is not a privacy filter; SPEC section 4). Use "
                "'basic', 'zcdp' or 'rdp' for an accountant shared between fits; a "
                "model's own accountant (accountant=None) may use any composition."
            )
        self.composition = composition
        self._events: list[PrivacyEvent] = []
        self._composer = _Composer(composition)
        self._lock = threading.Lock()
        self._owned_by_model = bool(owned)

    @classmethod
    def _for_model(cls, epsilon, delta, composition="basic"):
        """The private accountant a model creates when ``accountant=None``."""
        accountant = cls.__new__(cls)
        PrivacyAccountant._init_state(
            accountant, epsilon, delta, composition, owned=True
        )
        return accountant

    # -- building events -----------------------------------------------------
    @staticmethod
    def _event(epsilon, delta, kind, label, count, sigma, sensitivity, scale):
        return PrivacyEvent(
            None if epsilon is None else float(epsilon),
            float(delta),
            kind,
            label,
            count,
            sigma=sigma,
            sensitivity=sensitivity,
            scale=scale,
        )

    def _check_usable(self, events):
        if self.composition in ("basic", "advanced"):
            for event in events:
                if math.isinf(event.epsilon) and event.count:
                    raise ValueError(
                        f"{self.composition} composition needs each release's own "
                        "(epsilon, delta); give them for the Gaussian release "
                        "(spend(epsilon, delta, kind='gaussian', sigma=...))."
                    )

    # -- spending ------------------------------------------------------------
    def can_spend(
        self,
        epsilon=None,
        delta=0.0,
        *,
        count=1,
        kind="generic",
        sigma=None,
        sensitivity=None,
        scale=None,
    ):
        """Whether ``count`` releases of this kind would fit now (records nothing)."""
        event = self._event(
            epsilon, delta, kind, None, count, sigma, sensitivity, scale
        )
        return self.can_spend_events([event])

    def can_spend_events(self, events):
        """Whether all ``events`` together would fit now (records nothing)."""
        events = list(events)
        self._check_usable(events)
        with self._lock:
            return self._composer.copy().add(events).fits(self.epsilon, self.delta)

    def spend(
        self,
        epsilon=None,
        delta=0.0,
        *,
        kind="generic",
        label=None,
        count=1,
        sigma=None,
        sensitivity=None,
        scale=None,
    ):
        """Atomic check-and-spend: record the release, or raise and record nothing.

        Parameters
        ----------
        epsilon : float or None
            The release's own epsilon (None when it follows from ``scale``,
            or for a Gaussian release described by ``sigma`` alone).
        delta : float, default=0.0
        kind : str, default="generic"
            See :class:`PrivacyEvent`.
        label : str, optional
            Who spends (shown in :meth:`report`).
        count : int, default=1
            Number of identical releases.
        sigma, sensitivity, scale : float, optional
            Noise description (see :class:`PrivacyEvent`).

        Raises
        ------
        BudgetExhaustedError
            When the composed total would exceed the budget.
        """
        self.spend_events(
            [self._event(epsilon, delta, kind, label, count, sigma, sensitivity, scale)]
        )

    def spend_events(self, events):
        """Atomically record several events: all of them, or none (then raise)."""
        events = list(events)
        for event in events:
            if not isinstance(event, PrivacyEvent):
                raise TypeError(f"expected PrivacyEvent objects, got {event!r}.")
        self._check_usable(events)
        with self._lock:
            candidate = self._composer.copy().add(events)
            if not candidate.fits(self.epsilon, self.delta):
                spent = self._composer.spent(self.delta)
                raise BudgetExhaustedError(
                    f"privacy budget exhausted: spent (epsilon={spent[0]:.6g}, "
                    f"delta={spent[1]:.3g}) of (epsilon={self.epsilon:.6g}, "
                    f"delta={self.delta:.3g}) under {self.composition} composition; "
                    "the requested spend does not fit.",
                    spends=list(self._events),
                )
            self._events.extend(e for e in events if e.count)
            self._composer = candidate

    # -- reading -------------------------------------------------------------
    @property
    def events(self):
        """The recorded events, oldest first (a copy)."""
        with self._lock:
            return list(self._events)

    @property
    def spent(self):
        """The composed ``(epsilon, delta)`` spent so far: min(basic, composition)."""
        with self._lock:
            return self._composer.spent(self.delta)

    @property
    def spent_basic(self):
        """``(sum of epsilons, sum of deltas)``: what basic composition would report."""
        with self._lock:
            return self._composer.basic()

    @property
    def remaining(self):
        """``(epsilon, delta)`` still available under the composition."""
        epsilon, delta = self.spent
        return (max(0.0, self.epsilon - epsilon), max(0.0, self.delta - delta))

    def epsilon_at(self, delta, composition=None):
        """Composed epsilon of the recorded events at ``delta`` (min with basic).

        ``composition`` defaults to the accountant's own; any other can be
        asked too (for comparison: it does not change what the accountant
        allows).
        """
        composition = _check_composition(composition or self.composition)
        with self._lock:
            composer = self._composer
            if composition == self.composition:
                return composer.epsilon_at(float(delta))
            basic = composer.basic_epsilon_at(float(delta))
            if composition == "basic":
                return basic
            if composition in ("rdp", "pld"):
                composer = _Composer(composition).add(self._events)
            return min(basic, composer.tight_epsilon_at(float(delta), composition))

    def summary(self):
        """Machine-readable totals: a dict of public figures."""
        with self._lock:
            basic = self._composer.basic()
            spent = self._composer.spent(self.delta)
            n_releases = sum(e.count for e in self._events)
            n_events = len(self._events)
        return {
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "composition": self.composition,
            "shared": not self._owned_by_model,
            "n_events": n_events,
            "n_releases": n_releases,
            "spent": {"epsilon": spent[0], "delta": spent[1]},
            "spent_basic": {"epsilon": basic[0], "delta": basic[1]},
        }

    def report(self):
        """A readable table of every event and the composed totals.

        Lists each event (time, estimator label, kind, count, epsilon, delta,
        mechanism model) and the total under the chosen composition
        (min with basic) and under basic composition, so the gain of tight
        accounting is visible. Only public figures appear: no votes, noise
        or thresholds.
        """
        summary = self.summary()
        events = self.events
        role = "shared" if summary["shared"] else "model-owned"
        lines = [
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, {role})",
            f"{'#':>3}  {'time (UTC)':<20} {'label':<30} {'kind':<18} {'count':>7} "
            f"{'epsilon':>10} {'delta':>10}  mechanism",
        ]
        for i, e in enumerate(events):
            stamp = datetime.datetime.fromtimestamp(e.time, datetime.timezone.utc)
            eps = "n/a" if math.isinf(e.epsilon) else f"{e.epsilon:.4g}"
            lines.append(
                f"{i:>3}  {stamp.strftime('%Y-%m-%dT%H:%M:%SZ'):<20} "
                f"{str(e.label or '-'):<30} {e.kind:<18} {e.count:>7} "
                f"{eps:>10} {e.delta:>10.3g}  {e.describe()}"
            )
        spent, basic = summary["spent"], summary["spent_basic"]
        if self.composition != "basic":
            lines.append(
                f"spent under {self.composition} (min with basic): "
                f"epsilon={spent['epsilon']:.6g}, delta={spent['delta']:.3g}"
            )
        lines.append(
            f"spent under basic: epsilon={basic['epsilon']:.6g}, "
            f"delta={basic['delta']:.3g}"
        )
        lines.append(
            f"remaining: epsilon={max(0.0, self.epsilon - spent['epsilon']):.6g}, "
            f"delta={max(0.0, self.delta - spent['delta']):.3g} "
            f"({summary['n_releases']} releases in {summary['n_events']} events)"
        )
        return "\n".join(lines)

    def __repr__(self):
        epsilon, delta = self.spent
        return (
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, spent=({epsilon:.4g}, {delta:.3g}))"
        )

    # -- sharing semantics ---------------------------------------------------
    def __sklearn_clone__(self):
        # One budget through clone(): GridSearchCV's clones draw from it.
        return self

    def __deepcopy__(self, memo):
        if self._owned_by_model:
            return self._copy_for_model()
        return self

    def _copy_for_model(self):
        new = object.__new__(type(self))
        new.__setstate__(self.__getstate__())
        return new

    def __getstate__(self):
        if not self._owned_by_model:
            raise TypeError(
                "A shared PrivacyAccountant cannot be pickled: a copy in another "
                "process would fork the budget. To share one budget across "
                "processes, use a PrivacyLedger (a SQLite file) as the accountant."
            )
        with self._lock:
            state = self.__dict__.copy()
            state["_events"] = list(self._events)
        # The composer (with dp_accounting objects) is rebuilt from the events.
        del state["_lock"]
        del state["_composer"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._composer = _Composer(self.composition).add(self._events)
