"""Per-query releases: each answer is a fresh private release of a fixed budget.

A model that answers ``m = max_queries`` query units splits its total
``(epsilon, delta)`` into ``eps_q`` per unit once, at ``fit``
(:func:`~dpsklearn.accounting.per_release_epsilon`), so ``max_queries`` is
part of the guarantee. The whole ``(epsilon, delta)`` is reserved at ``fit``:
as ``m`` pure events under basic composition, as one approximate event when
the split was certified through zCDP or its RDP reading
(``docs/design.rst``, "Per-query releases").

* :class:`SoftMajority` -- Dwork and Feldman's (2018) soft majority: the
  exponential mechanism on the vote counts, ``P(b) ~ exp(eps_q count_b /
  2)`` (one record moves one vote: utility sensitivity 1), and private
  class probabilities by grid Laplace noise on the teachers' mean
  probability row (L1 sensitivity ``2/k``).
* :class:`GridLaplaceRelease` -- a real value of known sensitivity on a
  grid with discrete Laplace noise: the clipped mean of ``k`` teachers
  (sensitivity ``(hi - lo) / k``, :func:`~._grid_gaussian.clipped_mean_release`,
  which may choose the discrete Gaussian of :mod:`._grid_gaussian` instead)
  or a kernel ridge prediction (:mod:`._kernel_ridge`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import (
    ApproximateEvent,
    BoundedRangeEvent,
    DiscreteLaplaceEvent,
    PrivacyEvent,
    PureEvent,
    per_release_epsilon,
    per_release_spent,
)
from ..noise import (
    NoiseSource,
    default_grid_step,
    exponential_mechanism_unchecked,
    grid_laplace,
    grid_units,
    project_to_simplex,
)
from ._base import Engine, Mechanism, Release

__all__ = ["GridLaplaceRelease", "SoftMajority"]


class _PerQuery(Mechanism):
    """``m`` query units of ``eps_q`` each, out of a total ``(epsilon, delta)``."""

    #: The release one query unit is (its zCDP cost per eps_q^2).
    unit_event = PureEvent
    #: How :func:`per_release_epsilon` splits a budget over these releases.
    release = "laplace"

    def __init__(
        self,
        epsilon: float,
        delta: float,
        max_queries: int,
        epsilon_per_query: float,
        name: str,
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.max_queries = int(max_queries)
        self.epsilon_per_query = float(epsilon_per_query)
        self.calibration_name = name

    def _basic_events(self, label):
        return [
            self.unit_event(self.epsilon_per_query, count=self.max_queries, label=label)
        ]

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        if self.calibration_name == "basic":
            # m pure releases of eps_q each; delta unused.
            return self._basic_events(label)
        # Certified by a tight composition of the m releases (zCDP, RDP,
        # optimal, bounded range): as a whole they are (epsilon, delta)-DP.
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def _curve_events(self, label):
        """The ``m`` releases as events with a Renyi curve (whatever the split)."""
        return self._basic_events(label)

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        # An accountant that composes Renyi curves (the candidates' budget
        # in a private search, a shared zCDP budget, which refuses a whole
        # (epsilon, delta) event) can take the m releases themselves, which
        # a whole (epsilon, delta) event does not describe.
        options = [self.privacy_events(label)]
        if composition in ("rdp", "zcdp") and self.calibration_name != "basic":
            options.insert(0, self._curve_events(label))
        return options

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return per_release_spent(
            units,
            self.epsilon_per_query,
            self.epsilon,
            self.delta,
            self.release,
            self.calibration_name,
        )

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "epsilon_per_query_": self.epsilon_per_query,
            "calibration_": self.calibration_name,
        }


class SoftMajorityEngine(Engine):
    """Answers ``predict`` rows by the exponential mechanism, ``predict_proba`` rows
    by grid Laplace on the mean probability row."""

    def __init__(self, mechanism: SoftMajority, noise: NoiseSource) -> None:
        self.mechanism = mechanism
        self.noise = noise

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        mech = self.mechanism
        if method == "predict_proba":
            # Replacing one record changes one teacher's row (L1 norm 1) into
            # another, so the mean moves by at most 2/k in L1: grid Laplace
            # per coordinate with floor((2/k)/g) + n_classes units, then the
            # simplex projection (post-processing).
            noisy = grid_laplace(
                statistic,
                2.0 / mech.n_teachers,
                mech.proba_epsilon,
                rng=self.noise[1],
                grid_step=mech.proba_grid_step,
                n_coordinates=mech.n_classes,
            )
            proba = project_to_simplex(noisy)
            return Release({"proba": proba}, proba.shape[0])
        # P(b) ~ exp(eps_q count_b / 2): Delta_u = 1, one record moves one vote.
        # eps_q was checked once, when the mechanism was calibrated.
        labels = np.atleast_1d(
            exponential_mechanism_unchecked(
                statistic, mech.epsilon_per_query, 1.0, rng=self.noise[0]
            )
        )
        return Release({"label": labels}, labels.shape[0])


class SoftMajority(_PerQuery):
    """The soft majority of ``k`` teachers' votes, at ``eps_q`` per query unit.

    ``predict`` rows cost one unit: the exponential mechanism on the vote
    counts (Dwork and Feldman 2018, Theorem 1, with the factor 1/2 of
    ``docs/corrections.rst``, "The soft majority's missing 1/2").
    ``predict_proba`` rows are Laplace-type releases, ``eps_q^2/2``-zCDP
    against the exponential mechanism's ``eps_q^2/8`` (bounded range, Cesar
    and Rogers 2021): under a zCDP or RDP calibration a probability row
    costs :attr:`proba_cost` = 4 units, under basic and optimal (``kov``)
    composition 1; under the exact ``bounded_range`` calibration a row is
    released at ``eps_q/2`` (:attr:`proba_epsilon`) for 1 unit.

    Examples
    --------
    >>> from dpsklearn.mechanisms import SoftMajority
    >>> mech = SoftMajority.calibrate(
    ...     1.0, 1e-5, max_queries=1000, n_teachers=100, n_classes=2,
    ...     calibration="rdp")
    >>> mech.calibration_name, round(mech.epsilon_per_query, 4), mech.proba_cost
    ('rdp', 0.0156, 4)
    >>> mech = SoftMajority.calibrate(
    ...     1.0, 1e-5, max_queries=1000, n_teachers=100, n_classes=2)
    >>> mech.calibration_name, round(mech.epsilon_per_query, 4), mech.proba_cost
    ('bounded_range', 0.0169, 1)
    """

    n_streams = 2  # predict, predict_proba
    unit_event = BoundedRangeEvent
    release = "exponential"

    def __init__(
        self,
        epsilon: float,
        delta: float,
        max_queries: int,
        epsilon_per_query: float,
        name: str,
        n_teachers: int,
        n_classes: int,
    ) -> None:
        super().__init__(epsilon, delta, max_queries, epsilon_per_query, name)
        self.n_teachers = int(n_teachers)
        self.n_classes = int(n_classes)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        max_queries: int,
        *,
        n_teachers: int,
        n_classes: int,
        calibration: str = "auto",
    ) -> SoftMajority:
        """Split ``(epsilon, delta)`` over ``max_queries`` units of soft majority."""
        eps_q, name = per_release_epsilon(
            epsilon, delta, max_queries, release="exponential", calibration=calibration
        )
        return cls(epsilon, delta, max_queries, eps_q, name, n_teachers, n_classes)

    @staticmethod
    def epsilon_per_query_for(
        epsilon: float, delta: float, max_queries: int, calibration: str = "auto"
    ) -> tuple[float, str]:
        """``(eps_q, calibration)`` before the number of teachers is known."""
        return per_release_epsilon(
            epsilon, delta, max_queries, release="exponential", calibration=calibration
        )

    def _basic_events(self, label):
        # "pure" dominates both the exponential-mechanism and the Laplace-type
        # rows, which share the units.
        return [PureEvent(self.epsilon_per_query, count=self.max_queries, label=label)]

    def _curve_events(self, label):
        if self.calibration_name in ("basic", "kov"):
            return self._basic_events(label)
        # zcdp, rdp: a probability row is 4 units of eps_q^2/8 = its eps_q^2/2;
        # bounded_range: it is pure eps_q/2, also eps_q^2/8 (and eps_q-BR).
        eps_q, m = self.epsilon_per_query, self.max_queries
        return [BoundedRangeEvent(eps_q, count=m, label=label)]

    @property
    def proba_cost(self) -> int:
        """Query units of one ``predict_proba`` row."""
        if self.calibration_name in ("basic", "kov", "bounded_range"):
            return 1
        ratio = PureEvent(1.0).unit_rho() / BoundedRangeEvent(1.0).unit_rho()
        return int(round(ratio))

    @property
    def proba_epsilon(self) -> float:
        """The pure epsilon of one ``predict_proba`` row.

        ``eps_q``, except under the ``bounded_range`` calibration, whose
        units are ``eps_q``-bounded-range releases: a pure ``eps_q/2`` row
        has privacy loss in ``[-eps_q/2, eps_q/2]``, a range of ``eps_q``,
        so it is one such unit (``docs/design.rst``, "Per-query releases").
        """
        if self.calibration_name == "bounded_range":
            return self.epsilon_per_query / 2.0
        return self.epsilon_per_query

    @property
    def proba_grid_step(self) -> float:
        return default_grid_step(2.0 / self.n_teachers)

    def engine(self, noise: NoiseSource) -> SoftMajorityEngine:
        return SoftMajorityEngine(self, noise)

    def argmax_noise(self) -> tuple[str, float] | None:
        return "exponential", float(self.epsilon_per_query)

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            **super().fitted_attributes(),
            "sigma_": None,
            "proba_cost_": self.proba_cost,
            "proba_grid_step_": self.proba_grid_step,
        }


class GridLaplaceEngine(Engine):
    """Releases values of a :class:`GridLaplaceRelease`, one unit each."""

    def __init__(self, mechanism: GridLaplaceRelease, noise: NoiseSource) -> None:
        self.mechanism = mechanism
        self.noise = noise

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        mech = self.mechanism
        lo, hi = mech.bounds
        values = grid_laplace(
            np.clip(np.asarray(statistic, dtype=np.float64), lo, hi),
            mech.sensitivity,
            mech.epsilon_per_query,
            rng=self.noise[0],
            grid_step=mech.grid_step,
            bounds=(lo, hi),
        )
        return Release({"value": values}, values.shape[0])


class GridLaplaceRelease(_PerQuery):
    """A real value of known sensitivity in ``bounds``, released per query.

    The release is ``g * (round(v/g) + DLap(units/eps_q))`` with ``units =
    floor(sensitivity/g) + 1``, clipped to ``bounds`` (post-processing;
    ``docs/design.rst``, "Noise primitives"). Values are clipped to
    ``bounds`` before the noise: the sensitivity must hold for values in
    ``bounds``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import GridLaplaceRelease
    >>> mech = GridLaplaceRelease.calibrate(
    ...     1.0, 1e-5, max_queries=100, sensitivity=0.01, bounds=(0.0, 1.0))
    >>> mech.calibration_name, mech.grid_step
    ('kov', 7.62939453125e-06)
    """

    n_streams = 1

    def __init__(
        self,
        epsilon: float,
        delta: float,
        max_queries: int,
        epsilon_per_query: float,
        name: str,
        sensitivity: float,
        bounds: tuple[float, float],
    ) -> None:
        super().__init__(epsilon, delta, max_queries, epsilon_per_query, name)
        self.sensitivity = float(sensitivity)
        self.bounds = (float(bounds[0]), float(bounds[1]))
        self.grid_step = default_grid_step(self.sensitivity)

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
    ) -> GridLaplaceRelease:
        """Split ``(epsilon, delta)`` over ``max_queries`` pure releases."""
        eps_q, name = per_release_epsilon(
            epsilon, delta, max_queries, release="laplace", calibration=calibration
        )
        return cls(epsilon, delta, max_queries, eps_q, name, sensitivity, bounds)

    @property
    def units(self) -> int:
        """The sensitivity in grid units, ``floor(sensitivity/g) + 1``."""
        return grid_units(self.sensitivity, self.grid_step)

    @property
    def noise_scale(self) -> float:
        """The scale of the released noise in the values' units."""
        return self.grid_step * self.units / self.epsilon_per_query

    @property
    def noise_std(self) -> float:
        """Standard deviation of the released noise, ``g sqrt(2 q) / (1 - q)``.

        ``DLap(t)`` with ``q = exp(-1/t)`` has variance ``2 q / (1 - q)^2``
        (about ``2 t^2``).
        """
        q = math.exp(-self.epsilon_per_query / self.units)
        return self.grid_step * math.sqrt(2.0 * q) / (1.0 - q)

    def _basic_events(self, label):
        units = self.units
        return [
            DiscreteLaplaceEvent(
                units / self.epsilon_per_query,
                units,
                count=self.max_queries,
                label=label,
            )
        ]

    def engine(self, noise: NoiseSource) -> GridLaplaceEngine:
        return GridLaplaceEngine(self, noise)

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            **super().fitted_attributes(),
            "sensitivity_": self.sensitivity,
            "grid_step_": self.grid_step,
            "noise_scale_": self.noise_scale,
            "noise_std_": self.noise_std,
        }
