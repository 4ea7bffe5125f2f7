"""Per-query releases of a real value with discrete Gaussian noise on a grid.

A value of sensitivity ``Delta`` (the clipped mean of ``k`` teachers,
``Delta = (hi - lo) / k``) is rounded to a grid of step ``g`` and released
as ``g * (round(v/g) + N_Z(0, sigma_u^2))``: rounded neighbours differ by
at most ``u = floor(Delta/g) + 1`` grid units, so one release is
``u^2 / (2 sigma_u^2)``-zCDP with the continuous Gaussian's Renyi curve
(Canonne, Kamath and Steinke 2020), and ``m = max_queries`` releases compose
to ``rho = m u^2 / (2 sigma_u^2)``. ``sigma_u`` is the smallest whose
releases the chosen conversion (their exact composition through Gaussian DP
with the lattice correction, dp_accounting's RDP accountant, or zCDP)
certifies within ``(epsilon, delta)`` (``docs/design.rst``, "Per-query
releases", "Gaussian per-query releases").

:func:`value_release` chooses between this mechanism and grid Laplace
(:class:`~dpsklearn.mechanisms.GridLaplaceRelease`, at the per-query
epsilon :func:`~dpsklearn.accounting.per_release_epsilon` gives): under
``calibration="auto"`` the one whose released noise has the smaller standard
deviation. Laplace wins for a few queries (basic composition spends
``epsilon / m`` each), Gaussian for many (``sigma`` grows as ``sqrt(m)``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import ApproximateEvent, GaussianEvent, PrivacyEvent
from ..noise import NoiseSource, default_grid_step, grid_discrete_gaussian, grid_units
from ._base import Engine, Mechanism, Release
from ._gaussian_calibration import gaussian_spent, largest_gaussian_rho
from ._per_query import GridLaplaceRelease

__all__ = [
    "GridGaussianEngine",
    "GridGaussianRelease",
    "clipped_mean_release",
    "value_release",
]


class GridGaussianEngine(Engine):
    """Releases values of a :class:`GridGaussianRelease`, one unit each."""

    def __init__(self, mechanism: GridGaussianRelease, noise: NoiseSource) -> None:
        self.mechanism = mechanism
        self.noise = noise
        self.sigma_units = mechanism.sigma_units

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        mech = self.mechanism
        lo, hi = mech.bounds
        values = grid_discrete_gaussian(
            np.clip(np.asarray(statistic, dtype=np.float64), lo, hi),
            self.sigma_units,
            rng=self.noise[0],
            grid_step=mech.grid_step,
            bounds=(lo, hi),
        )
        return Release({"value": values}, values.shape[0])


class GridGaussianRelease(Mechanism):
    """A real value of known sensitivity in ``bounds``, released per query, Gaussian.

    ``max_queries`` releases of ``g * (round(v/g) + N_Z(0, sigma_u^2))``,
    clipped to ``bounds`` (post-processing). Values are clipped to
    ``bounds`` before the noise: the sensitivity must hold for values in
    ``bounds``. The whole release is ``(epsilon, delta)``-DP, certified by
    :attr:`conversion` (``docs/design.rst``, "Gaussian per-query releases").

    Parameters
    ----------
    epsilon, delta : float
        The total budget (``delta > 0``).
    max_queries : int
        ``m``: releases paid for (part of the guarantee).
    rho : float
        Total zCDP ``rho`` certified within ``(epsilon, delta)``.
    conversion : {"rdp", "zcdp"}
        What certified ``rho``.
    sensitivity : float
        ``Delta`` of one value.
    bounds : (float, float)

    Examples
    --------
    >>> from dpsklearn.mechanisms import GridGaussianRelease
    >>> mech = GridGaussianRelease.calibrate(
    ...     1.0, 1e-5, max_queries=2000, sensitivity=0.004, bounds=(5.75, 9.9))
    >>> mech.conversion, round(mech.noise_std, 3)
    ('gdp', 0.668)
    """

    n_streams = 1
    calibration_name = "gaussian"

    def __init__(
        self,
        epsilon: float,
        delta: float,
        max_queries: int,
        rho: float,
        conversion: str,
        sensitivity: float,
        bounds: tuple[float, float],
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.max_queries = int(max_queries)
        self.rho = float(rho)
        self.conversion = str(conversion)
        self.sensitivity = float(sensitivity)
        self.bounds = (float(bounds[0]), float(bounds[1]))
        self.grid_step = default_grid_step(self.sensitivity)
        # m releases of u^2 / (2 sigma_u^2) each add up to rho.
        self.sigma_units = self.units * math.sqrt(self.max_queries / (2.0 * self.rho))

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        max_queries: int,
        *,
        sensitivity: float,
        bounds: tuple[float, float],
        calibration: str = "auto",
    ) -> GridGaussianRelease:
        """``sigma_u`` for ``max_queries`` releases within ``(epsilon, delta)``.

        ``calibration``: ``"gdp"``, ``"rdp"``, ``"zcdp"`` or ``"auto"`` (the
        largest certified ``rho``, :func:`largest_gaussian_rho`; ``"gdp"``
        composes the ``m`` discrete Gaussian releases exactly through
        Gaussian DP).
        """
        if not delta > 0:
            raise ValueError(
                "a Gaussian release needs delta > 0 (it is never pure "
                f"epsilon-DP), got delta={delta!r}. Use a Laplace calibration "
                "or delta > 0."
            )
        units = grid_units(float(sensitivity), default_grid_step(float(sensitivity)))
        rho, conversion = largest_gaussian_rho(
            epsilon, delta, calibration, max_queries=max_queries, units=units
        )
        return cls(epsilon, delta, max_queries, rho, conversion, sensitivity, bounds)

    @property
    def units(self) -> int:
        """The sensitivity in grid units, ``floor(sensitivity/g) + 1``."""
        return grid_units(self.sensitivity, self.grid_step)

    @property
    def noise_scale(self) -> float:
        """``sigma`` of the released noise in the values' units, ``g sigma_u``."""
        return self.grid_step * self.sigma_units

    @property
    def noise_std(self) -> float:
        """Standard deviation of the released noise (at most ``noise_scale``)."""
        return self.noise_scale

    @property
    def composition(self) -> str:  # type: ignore[override]  # a class attribute
        # A model's own accountant composes the Gaussian events as calibrated
        # in RDP or zCDP; a Gaussian-DP calibration certifies the whole
        # (epsilon, delta), which the accountant records as one event.
        return self.conversion if self.conversion in ("rdp", "zcdp") else "basic"

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """Gaussian events for an accountant that composes them, else the whole.

        An RDP or zCDP accountant records the ``m`` discrete Gaussian events
        themselves (integer sensitivity ``u``, scale ``sigma_u``: the
        continuous Gaussian's Renyi curve); any other records the calibrated
        ``(epsilon, delta)`` of the whole release.
        """
        whole = self.privacy_events(label)
        if composition not in ("rdp", "zcdp"):
            return [whole]
        gaussian: list[PrivacyEvent] = [
            GaussianEvent(
                self.sigma_units, self.units, count=self.max_queries, label=label
            )
        ]
        return [gaussian, whole]

    def engine(self, noise: NoiseSource) -> GridGaussianEngine:
        return GridGaussianEngine(self, noise)

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        rho = units * self.units**2 / (2.0 * self.sigma_units**2)
        groups = [(self.sigma_units, self.units, units)]
        return gaussian_spent(self.conversion, self.delta, rho, groups)

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "epsilon_per_query_": None,
            "calibration_": self.calibration_name,
            "sensitivity_": self.sensitivity,
            "grid_step_": self.grid_step,
            "noise_scale_": self.noise_scale,
            "noise_std_": self.noise_std,
            "sigma_": self.noise_scale,
        }


def value_release(
    epsilon: float,
    delta: float,
    max_queries: int,
    *,
    sensitivity: float,
    bounds: tuple[float, float],
    calibration: str = "auto",
) -> GridGaussianRelease | GridLaplaceRelease:
    """Per-query release of a value of known sensitivity: grid Laplace or Gaussian.

    ``calibration``: ``"gaussian"`` gives :class:`GridGaussianRelease`;
    any other name is a split of :func:`~dpsklearn.accounting.per_release_epsilon`
    for :class:`GridLaplaceRelease`; ``"auto"`` takes, of the Laplace release
    at ``per_release_epsilon``'s own ``"auto"`` and (when ``delta > 0``) the
    Gaussian one, the one whose noise has the smaller standard deviation
    (Laplace on a tie: it is pure). The choice depends on public numbers only.

    Examples
    --------
    >>> from dpsklearn.mechanisms import value_release
    >>> one = value_release(1.0, 1e-5, 1, sensitivity=0.01, bounds=(0.0, 1.0))
    >>> many = value_release(1.0, 1e-5, 2000, sensitivity=0.01, bounds=(0.0, 1.0))
    >>> one.calibration_name, many.calibration_name
    ('basic', 'gaussian')
    """
    common: dict[str, Any] = {"sensitivity": sensitivity, "bounds": bounds}
    if calibration == "gaussian":
        return GridGaussianRelease.calibrate(epsilon, delta, max_queries, **common)
    by_laplace = GridLaplaceRelease.calibrate(
        epsilon, delta, max_queries, calibration=calibration, **common
    )
    if calibration != "auto" or not delta > 0:
        return by_laplace
    by_gaussian = GridGaussianRelease.calibrate(epsilon, delta, max_queries, **common)
    return by_gaussian if by_gaussian.noise_std < by_laplace.noise_std else by_laplace


def clipped_mean_release(
    epsilon: float,
    delta: float,
    max_queries: int,
    *,
    target_range: tuple[float, float],
    n_teachers: int,
    calibration: str = "auto",
) -> GridGaussianRelease | GridLaplaceRelease:
    """The mean of ``k`` teachers' predictions, each clipped to ``target_range``.

    Clipping each prediction to ``(lo, hi)`` *before* averaging makes the
    mean move by at most ``(hi - lo) / k`` when one record (one teacher)
    changes (Dwork and Feldman 2018, Theorem 4 and Lemma 2: averaging ``k``
    disjoint teachers divides the stability by ``k``); clipping the mean
    instead would leave sensitivity ``hi - lo``. Released per query by
    :func:`value_release` (grid Laplace or discrete Gaussian).

    Examples
    --------
    >>> from dpsklearn.mechanisms import clipped_mean_release
    >>> mech = clipped_mean_release(
    ...     1.0, 1e-5, 100, target_range=(-1.0, 1.0), n_teachers=200)
    >>> mech.sensitivity
    0.01
    """
    lo, hi = target_range
    if not math.isfinite(hi - lo) or hi <= lo:
        raise ValueError(
            f"target_range must be finite with lo < hi, got {target_range}."
        )
    return value_release(
        epsilon,
        delta,
        max_queries,
        sensitivity=(hi - lo) / n_teachers,
        bounds=(lo, hi),
        calibration=calibration,
    )
