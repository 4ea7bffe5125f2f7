"""Privacy events: typed, public descriptions of what a mechanism releases.

An event describes one release (or ``count`` identical ones) by the noise it
adds, never by the data. Each type knows how it composes: its pure epsilon
(for basic composition), its zero-concentrated DP cost ``rho`` and the
``dp_accounting`` events that model it for Renyi DP and privacy loss
distributions. The composer asks the event; it never dispatches on a name.
The mapping, with its reasons, is in ``docs/design.rst``, "Composition":

=====================  ================  =====================  ======================
event                  zCDP rho          RDP (dp_accounting)    PLD (dp_accounting)
=====================  ================  =====================  ======================
PureEvent              eps^2/2           RandomizedResponse     DiscreteLaplace(eps, 1)
BoundedRangeEvent      eps^2/8           ZCDp(eps^2/8)          DiscreteLaplace(eps, 1)
DiscreteLaplaceEvent   (s/t)^2/2         RandomizedResponse     DiscreteLaplace(1/t, s)
LaplaceEvent           (s/b)^2/2         Laplace(b/s)           Laplace(b/s)
GaussianEvent          s^2/(2 sigma^2)   Gaussian(sigma/s)      Gaussian(sigma/s)
ApproximateEvent       none: carried beside every tight composition
=====================  ================  =====================  ======================

A :class:`PureEvent` is accounted as a *worst-case* ``eps``-DP release
(randomized response, :mod:`._dp_accounting`); the continuous-Laplace
curves of :class:`LaplaceEvent` are only for real-valued Laplace noise. The
exponential mechanism is ``eps``-bounded-range, hence ``eps^2/8``-zCDP
(Cesar and Rogers 2021); it has no ``DpEvent`` of its own, so its PLD is the
worst-case ``eps``-DP pair. Fields are checked, and overrides documented, by
:mod:`._frozen_records`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING, Any, ClassVar

from .._validation import DELTA, FINITE_POSITIVE, NON_NEGATIVE
from ._dp_accounting import dp_accounting, randomized_response
from ._frozen_records import inherit_method_docs, validated_fields

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "DiscreteLaplaceEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "PureEvent",
]


@dataclass(frozen=True)
class PrivacyEvent:
    """One release, or ``count`` identical ones: public figures only.

    The base of the typed events; use a subclass (:class:`PureEvent`,
    :class:`BoundedRangeEvent`, :class:`DiscreteLaplaceEvent`,
    :class:`LaplaceEvent`, :class:`GaussianEvent`,
    :class:`ApproximateEvent`) or one of the constructors below.

    Parameters
    ----------
    count : int, default=1
        How many identical releases the event stands for.
    label : str, optional
        Who spent it (an estimator's name), shown in reports.
    time : float
        When it was recorded (seconds since the epoch).

    Examples
    --------
    >>> from dpsklearn.accounting import PrivacyEvent
    >>> round(PrivacyEvent.exponential(0.05, count=10).rho, 12)
    0.003125
    >>> PrivacyEvent.discrete_laplace(scale=20, sensitivity=2).epsilon
    0.1
    """

    #: The stable name of the event type (stored in ledgers, shown in reports).
    kind: ClassVar[str] = "event"

    count: int = field(default=1, kw_only=True, compare=False)
    label: str | None = field(default=None, kw_only=True, compare=False)
    time: float = field(default_factory=time.time, kw_only=True, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, Integral):
            raise TypeError(f"count must be an integer, got {self.count!r}.")
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count!r}.")
        object.__setattr__(self, "count", int(self.count))

    # -- what every event answers ---------------------------------------------
    # Every subclass has ``epsilon`` (the release's own epsilon, for basic
    # composition; ``inf`` when none is stated) and ``delta`` (its own delta).
    if TYPE_CHECKING:

        @property
        def epsilon(self) -> float: ...

        @property
        def delta(self) -> float: ...

    def unit_rho(self) -> float | None:
        """zCDP ``rho`` of one release, or None when the event has none.

        Returns
        -------
        rho : float or None
        """
        raise NotImplementedError

    @property
    def rho(self) -> float | None:
        """zCDP ``rho`` of all ``count`` releases (None for an approximate event)."""
        unit = self.unit_rho()
        return None if unit is None else unit * self.count

    def rdp_event(self) -> DpEvent:
        """The ``dp_accounting`` event of one release for Renyi DP.

        Returns
        -------
        event : dp_accounting.DpEvent
        """
        raise NotImplementedError

    def pld_event(self) -> DpEvent:
        """The ``dp_accounting`` event of one release for its PLD accountant.

        Returns
        -------
        event : dp_accounting.DpEvent
        """
        raise NotImplementedError

    def describe(self) -> str:
        """A short public description of the mechanism (no data, no noise draws).

        Returns
        -------
        text : str
        """
        raise NotImplementedError

    @property
    def mechanism(self) -> str:
        """The model the event is accounted as (its :attr:`kind`)."""
        return self.kind

    # -- helpers -------------------------------------------------------------
    def with_count(self, count: int) -> PrivacyEvent:
        """The same release, ``count`` times.

        Parameters
        ----------
        count : int

        Returns
        -------
        event : PrivacyEvent
            A copy with that count (the same label and time).
        """
        return dataclasses.replace(self, count=count, label=self.label, time=self.time)

    def unit(self) -> PrivacyEvent:
        """One release of this mechanism, without label or time (a composition key).

        Returns
        -------
        event : PrivacyEvent
        """
        return dataclasses.replace(self, count=1, label=None, time=0.0)

    def record(self) -> dict[str, Any]:
        """The columns a ledger stores for this event.

        Returns
        -------
        columns : dict
            ``kind``, ``epsilon``, ``delta``, ``count``, ``label``, ``time``
            and the noise's ``sigma``, ``sensitivity``, ``scale`` (None where
            the event has none).
        """
        return {
            "kind": self.kind,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "count": self.count,
            "label": self.label,
            "time": self.time,
            "sigma": getattr(self, "sigma", None),
            "sensitivity": getattr(self, "sensitivity", None),
            "scale": getattr(self, "scale", None),
        }

    @classmethod
    def from_record(
        cls,
        kind: str,
        epsilon: float,
        delta: float,
        count: int,
        label: str | None,
        time: float,
        sigma: float | None = None,
        sensitivity: float | None = None,
        scale: float | None = None,
    ) -> PrivacyEvent:
        """Rebuild an event from the columns :meth:`record` gives.

        ``kind`` is a type name; the names an earlier dpsklearn stored
        (``"laplace"``, ``"exponential"``, ``"sparse_vector"``, ...) are read
        as the model they were accounted as then.
        """
        common: dict[str, Any] = {"count": count, "label": label, "time": time}
        kind = _LEGACY_KINDS.get(kind, kind)
        if kind == "gaussian":
            return GaussianEvent(
                sigma,  # type: ignore[arg-type]  # None: GaussianEvent rejects it
                1.0 if sensitivity is None else sensitivity,
                epsilon=None if math.isinf(epsilon) else epsilon,
                delta=delta,
                **common,
            )
        if kind == "discrete_laplace" and scale is not None:
            return DiscreteLaplaceEvent(scale, int(sensitivity or 1), **common)
        if kind == "continuous_laplace" and scale is not None:
            return LaplaceEvent(scale, sensitivity or 1.0, **common)
        if delta > 0:
            return ApproximateEvent(epsilon, delta, **common)
        if kind == "bounded_range":
            return BoundedRangeEvent(epsilon, **common)
        return PureEvent(epsilon, **common)

    # -- constructors ----------------------------------------------------------
    @staticmethod
    def laplace(
        epsilon: float | None = None,
        *,
        scale: float | None = None,
        sensitivity: float | None = None,
        count: int = 1,
        label: str | None = None,
    ) -> PureEvent:
        """A Laplace-type pure ``epsilon``-DP release (worst-case accounting).

        Parameters
        ----------
        epsilon : float, optional
            Give it, or ``scale``.
        scale, sensitivity : float, optional
            The noise scale and the L1 sensitivity (``epsilon = sensitivity / scale``).
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : PureEvent
        """
        if scale is not None:
            derived = float(1.0 if sensitivity is None else sensitivity) / float(scale)
            if epsilon is not None and not math.isclose(
                float(epsilon), derived, rel_tol=1e-9, abs_tol=1e-15
            ):
                raise ValueError(
                    f"epsilon={epsilon!r} does not match sensitivity/scale={derived!r}."
                )
            epsilon = derived
        if epsilon is None:
            raise ValueError("give epsilon or scale.")
        return PureEvent(epsilon, count=count, label=label)

    @staticmethod
    def discrete_laplace(
        scale: float, sensitivity: int = 1, *, count: int = 1, label: str | None = None
    ) -> DiscreteLaplaceEvent:
        """Discrete Laplace ``DLap(scale)`` noise, integer ``sensitivity``.

        Parameters
        ----------
        scale : float
        sensitivity : int, default=1
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : DiscreteLaplaceEvent
        """
        return DiscreteLaplaceEvent(scale, sensitivity, count=count, label=label)

    @staticmethod
    def continuous_laplace(
        scale: float,
        sensitivity: float = 1.0,
        *,
        count: int = 1,
        label: str | None = None,
    ) -> LaplaceEvent:
        """Real-valued Laplace(``scale``) noise (not dpsklearn's grid Laplace).

        Parameters
        ----------
        scale : float
        sensitivity : float, default=1.0
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : LaplaceEvent
        """
        return LaplaceEvent(scale, sensitivity, count=count, label=label)

    @staticmethod
    def exponential(
        epsilon: float, *, count: int = 1, label: str | None = None
    ) -> BoundedRangeEvent:
        """An exponential-mechanism (``epsilon``-bounded-range) release.

        Parameters
        ----------
        epsilon : float
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : BoundedRangeEvent
        """
        return BoundedRangeEvent(epsilon, count=count, label=label)

    @staticmethod
    def gaussian(
        sigma: float,
        sensitivity: float = 1.0,
        *,
        epsilon: float | None = None,
        delta: float = 0.0,
        count: int = 1,
        label: str | None = None,
    ) -> GaussianEvent:
        """Gaussian noise of standard deviation ``sigma``, L2 ``sensitivity``.

        Parameters
        ----------
        sigma : float
        sensitivity : float, default=1.0
        epsilon : float, optional
            A stated guarantee, with ``delta``, for basic composition.
        delta : float, default=0.0
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : GaussianEvent
        """
        return GaussianEvent(
            sigma, sensitivity, epsilon=epsilon, delta=delta, count=count, label=label
        )

    @staticmethod
    def approximate(
        epsilon: float, delta: float, *, count: int = 1, label: str | None = None
    ) -> ApproximateEvent:
        """An ``(epsilon, delta)``-DP release accounted as a whole.

        Parameters
        ----------
        epsilon : float
        delta : float
        count : int, default=1
        label : str, optional

        Returns
        -------
        event : ApproximateEvent
        """
        return ApproximateEvent(epsilon, delta, count=count, label=label)


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """A pure ``epsilon``-DP release, accounted as the worst case of its epsilon.

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "pure"
    epsilon: float

    @property
    def delta(self) -> float:
        """0: a pure release."""
        return 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        validated_fields(self, {"epsilon": [NON_NEGATIVE]})

    def unit_rho(self) -> float:
        return self.epsilon**2 / 2.0  # Bun and Steinke 2016, Proposition 1.4

    def rdp_event(self) -> DpEvent:
        return randomized_response(self.epsilon)

    def pld_event(self) -> DpEvent:
        # The worst-case eps-DP pair is discrete Laplace at sensitivity 1.
        return dp_accounting().dp_event.DiscreteLaplaceDpEvent(
            noise_parameter=self.epsilon, sensitivity=1
        )

    def describe(self) -> str:
        return "pure eps-DP"


@dataclass(frozen=True)
class BoundedRangeEvent(PureEvent):
    """An exponential-mechanism release: ``epsilon``-DP and ``epsilon``-bounded range.

    Bounded range makes it ``epsilon^2/8``-zCDP (Cesar and Rogers 2021), four
    times cheaper in ``rho`` than a generic ``epsilon``-DP release.

    Parameters
    ----------
    epsilon : float
        ``>= 0``: the range of the privacy loss.
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "bounded_range"

    def unit_rho(self) -> float:
        return self.epsilon**2 / 8.0

    def rdp_event(self) -> DpEvent:
        # RDP alpha * eps^2 / 8 at every order, through its zCDP bound.
        return dp_accounting().ZCDpEvent(rho=self.unit_rho())

    def describe(self) -> str:
        return "bounded range"


@dataclass(frozen=True)
class DiscreteLaplaceEvent(PrivacyEvent):
    """Discrete Laplace noise ``DLap(scale)`` on an integer of integer ``sensitivity``.

    Its epsilon is ``sensitivity / scale``.

    Parameters
    ----------
    scale : float
        The noise's scale ``t`` (``P(z)`` proportional to ``exp(-|z|/t)``).
    sensitivity : int, default=1
        In grid units.
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "discrete_laplace"
    scale: float
    sensitivity: int = 1

    @property
    def delta(self) -> float:
        """0: a pure release."""
        return 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        validated_fields(
            self, {"scale": [FINITE_POSITIVE], "sensitivity": [FINITE_POSITIVE]}
        )
        sensitivity = self.sensitivity
        if sensitivity != int(sensitivity):
            raise ValueError(
                "discrete Laplace sensitivity must be an integer (in grid units), "
                f"got {self.sensitivity!r}."
            )
        object.__setattr__(self, "sensitivity", int(sensitivity))

    @property
    def epsilon(self) -> float:
        """``sensitivity / scale``: the release is pure ``epsilon``-DP."""
        return self.sensitivity / self.scale

    def unit_rho(self) -> float:
        return self.epsilon**2 / 2.0

    def rdp_event(self) -> DpEvent:
        # dp_accounting 0.6 has no discrete Laplace RDP; randomized response
        # at eps = s/t is the worst case, and exact at s = 1.
        return randomized_response(self.epsilon)

    def pld_event(self) -> DpEvent:
        return dp_accounting().dp_event.DiscreteLaplaceDpEvent(
            noise_parameter=1.0 / self.scale, sensitivity=self.sensitivity
        )

    def describe(self) -> str:
        return f"DLap t={self.scale:.4g} Delta={self.sensitivity}"


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Real-valued Laplace(``scale``) noise at L1 ``sensitivity`` (not on a grid).

    Parameters
    ----------
    scale : float
    sensitivity : float, default=1.0
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "continuous_laplace"
    scale: float
    sensitivity: float = 1.0

    @property
    def delta(self) -> float:
        """0: a pure release."""
        return 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        validated_fields(
            self, {"scale": [FINITE_POSITIVE], "sensitivity": [FINITE_POSITIVE]}
        )

    @property
    def epsilon(self) -> float:
        """``sensitivity / scale``: the release is pure ``epsilon``-DP."""
        return self.sensitivity / self.scale

    def unit_rho(self) -> float:
        return self.epsilon**2 / 2.0

    def rdp_event(self) -> DpEvent:
        return dp_accounting().LaplaceDpEvent(
            noise_multiplier=self.scale / self.sensitivity
        )

    pld_event = rdp_event

    def describe(self) -> str:
        return f"Laplace b/Delta={self.scale / self.sensitivity:.4g}"


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian noise of standard deviation ``sigma`` at L2 ``sensitivity``.

    Discrete Gaussian noise has the continuous one's Renyi curve (Canonne,
    Kamath and Steinke 2020), so both are described by this event under the
    Renyi and zCDP compositions. A ``"gdp"`` budget reads it as continuous
    Gaussian noise, which is exactly ``(sensitivity/sigma)``-GDP; discrete
    Gaussian noise is not (``docs/accounting_theory.rst``), and the library's
    discrete Gaussian mechanisms do not offer themselves to such a budget.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation.
    sensitivity : float, default=1.0
        The L2 sensitivity of the noised statistic.
    epsilon, delta : float, optional
        A stated ``(epsilon, delta)`` guarantee, for basic composition; it is
        checked against ``sigma`` with the analytic Gaussian conversion
        (Balle and Wang 2018). Without one, basic composition cannot use the
        event (``epsilon = inf``); tight compositions use ``sigma``.
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "gaussian"
    sigma: float
    sensitivity: float = 1.0
    # None only as an argument: __post_init__ stores inf ("no stated guarantee").
    epsilon: float | None = None  # type: ignore[assignment]
    delta: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.epsilon is not None and math.isinf(self.epsilon):
            object.__setattr__(self, "epsilon", None)  # "no stated guarantee"
        validated_fields(
            self,
            {
                "sigma": [FINITE_POSITIVE],
                "sensitivity": [FINITE_POSITIVE],
                "delta": [DELTA],
                "epsilon": [NON_NEGATIVE, None],
            },
        )
        sigma, sensitivity, delta = self.sigma, self.sensitivity, self.delta
        if self.epsilon is None:
            object.__setattr__(self, "epsilon", math.inf)
            return
        epsilon = self.epsilon
        if delta <= 0:
            raise ValueError(
                "a Gaussian release is never pure: its stated delta must be > 0."
            )
        needed = dp_accounting().get_epsilon_gaussian(sigma / sensitivity, delta)
        if epsilon < needed * (1 - 1e-9) - 1e-12:
            raise ValueError(
                f"a Gaussian with sigma/sensitivity={sigma / sensitivity:g} is not "
                f"({epsilon:g}, {delta:g})-DP; it needs epsilon >= {needed:.6g}."
            )

    def unit_rho(self) -> float:
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    def rdp_event(self) -> DpEvent:
        return dp_accounting().GaussianDpEvent(
            noise_multiplier=self.sigma / self.sensitivity
        )

    pld_event = rdp_event

    def describe(self) -> str:
        return f"gaussian sigma/Delta={self.sigma / self.sensitivity:.4g}"


@dataclass(frozen=True)
class ApproximateEvent(PrivacyEvent):
    """An ``(epsilon, delta)``-DP release accounted as a whole.

    For example a sparse vector instance, reserved at ``fit`` with its whole
    guarantee. It has no finer description, so tight compositions carry it
    beside the rest and add it by basic composition (``docs/design.rst``,
    "Composition"). A shared ``"zcdp"`` or ``"gdp"`` budget refuses it
    (``docs/accountant.rst``, "Which events a shared budget accepts").

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    delta : float
        In ``[0, 1)``.
    count, label, time : int, str, float
        Keywords, as for :class:`PrivacyEvent`.
    """

    kind: ClassVar[str] = "approximate"
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        super().__post_init__()
        validated_fields(self, {"epsilon": [NON_NEGATIVE], "delta": [DELTA]})

    def unit_rho(self) -> None:
        return None

    def rdp_event(self) -> DpEvent:
        raise TypeError("an approximate event has no RDP curve; it is carried beside")

    pld_event = rdp_event

    def describe(self) -> str:
        return "(eps, delta) whole"


# Names an earlier version stored in ledgers, read as the model they meant.
_LEGACY_KINDS = {
    "laplace": "pure",
    "generic": "pure",
    "exponential": "bounded_range",
    "exponential_mechanism": "bounded_range",
    "gumbel_max": "bounded_range",
    "geometric": "discrete_laplace",
}


inherit_method_docs(
    PureEvent,
    BoundedRangeEvent,
    DiscreteLaplaceEvent,
    LaplaceEvent,
    GaussianEvent,
    ApproximateEvent,
)
