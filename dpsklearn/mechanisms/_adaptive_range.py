"""Regression answers clipped to a privately estimated range of the teachers.

The clipped mean of ``k`` teachers' predictions, each clipped to a public
``target_range = (lo, hi)``, has sensitivity ``(hi - lo) / k`` (Dwork and
Feldman 2018, Theorem 4 and Lemma 2), so its noise is proportional to the
width of the public range, however narrow the band the teachers' predictions
actually occupy. :class:`AdaptiveRangeRelease` spends a stated share of the
budget once to estimate that band, ``[a, b]``, by two private quantiles of
the teachers' pooled predictions (the exponential mechanism over a public
grid inside ``target_range``), then clips every teacher's prediction to
``[a, b]`` before the aggregate: the answers' noise is proportional to
``b - a`` instead of ``hi - lo`` (``docs/regression.rst``, "Adaptive
clipping of regression answers").

* The range: teacher ``j`` predicts ``p_j(x_1..x_r)`` on the ``r`` rows of
  the first batch (or on public rows given at ``fit``); each prediction gets
  weight ``1/r``, so one teacher's total weight is 1 and the pooled count
  ``N(t) = sum_j (1/r) #{i : p_j(x_i) < t}`` moves by at most 1 when one
  record (hence one teacher) is replaced. The utility ``-|N(t) - rank|`` has
  sensitivity 1, and the exponential mechanism draws each end at
  ``epsilon_range / 2``.
* The answers: ``mean`` -- the mean of the ``k`` predictions clipped to
  ``[a, b]`` (sensitivity ``(b - a) / k``) with discrete Gaussian noise on a
  grid (pure: discrete Laplace); ``median`` -- the exponential mechanism
  over a grid of ``[a, b]`` with utility ``-|#{j : p_j < t} - k/2|``
  (sensitivity 1), whose error is measured in teachers, not in the width.
  :func:`choose_aggregate` picks one from public numbers only.

Privacy: with ``delta > 0`` every part is a zCDP release (the exponential
mechanism is ``eps^2/8``-zCDP, bounded range, Cesar and Rogers 2021; the
discrete Gaussian ``u^2/(2 sigma_u^2)``, Canonne, Kamath and Steinke 2020),
and the total ``rho`` is the largest one the chosen conversion certifies
within ``(epsilon, delta)``; with ``delta = 0`` the parts are pure and
compose by addition.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._param_validation import Interval, StrOptions
from .._validation import COUNT, DELTA, FINITE_POSITIVE, validate_params
from ..accounting import (
    ApproximateEvent,
    BoundedRangeEvent,
    GaussianEvent,
    PrivacyEvent,
    PureEvent,
    rdp_epsilon_of_rho,
    zcdp_epsilon,
)
from ..noise import (
    NoiseSource,
    default_grid_step,
    exponential_mechanism,
    grid_discrete_gaussian,
    grid_laplace,
    grid_units,
)
from ._base import Engine, Mechanism, Release
from ._gaussian_calibration import gaussian_spent, largest_gaussian_rho

#: The fewest grid units a clipped mean's sensitivity can take: the default
#: grid step is a power of two within a factor sqrt(2) of sensitivity/1024.
#: The exact Gaussian certificate loses least at many units, so certifying at
#: the fewest holds for every width the range can release.
_FEWEST_UNITS = 725

__all__ = [
    "AdaptiveRangeEngine",
    "AdaptiveRangeRelease",
    "choose_aggregate",
    "private_range",
    "range_grid",
    "range_tilt",
    "rank_error",
]

#: The aggregates of :class:`AdaptiveRangeRelease`.
AGGREGATES = ("mean", "median")
#: Failure probability of the exponential mechanism's rank error bound, used
#: by the aggregate rule and to widen the range's target ranks (a public
#: constant; it enters no privacy figure).
RANK_FAILURE = 0.1
#: How many rank errors the range's utility tilts towards the middle of the
#: grid over its whole span (:func:`private_range`; chosen on simulated bands
#: and validation rows: 1 leaves the ends spread over the empty grid, 5
#: clips more of the band).
RANGE_TILT = 3.0


def range_grid(
    target_range: tuple[float, float], grid_size: int
) -> NDArray[np.float64]:
    """``grid_size`` evenly spaced candidate ends in ``target_range``, ends included.

    Public: it depends on the public range and size only.

    Examples
    --------
    >>> from dpsklearn.mechanisms import range_grid
    >>> range_grid((0.0, 1.0), 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    lo, hi = (float(v) for v in target_range)
    return np.linspace(lo, hi, int(grid_size))


def _pooled_below(predictions, grid):
    """``N(t_g) = sum_j (1/r) #{i : p_j(x_i) < t_g}`` for every grid point.

    ``predictions`` has shape ``(r, k)`` (rows, teachers). Every prediction
    carries weight ``1/r``: one teacher's predictions weigh 1 in all.
    """
    predictions = np.asarray(predictions, dtype=np.float64)
    n_rows = predictions.shape[0]
    # Grid points strictly above p are those from searchsorted(side="right").
    first_above = np.searchsorted(grid, predictions.ravel(), side="right")
    weights = np.bincount(first_above, minlength=grid.size + 1) / n_rows
    return np.cumsum(weights)[: grid.size]


def rank_error(
    epsilon: float, n_candidates: int, failure: float = RANK_FAILURE
) -> float:
    """Rank error of the exponential mechanism: ``(2/eps) ln(G / failure)``.

    With utility sensitivity 1 over ``G`` candidates, the output's utility
    is below the best by more than this with probability at most
    ``failure`` (McSherry and Talwar 2007; Dwork and Roth 2014, Theorem 3.11).
    """
    return 2.0 / float(epsilon) * math.log(int(n_candidates) / float(failure))


def range_tilt(epsilon_each: float, grid_size: int, n_teachers: int) -> float:
    """The public tilt ``s = min(c e, k / 4)`` of :func:`private_range`'s utilities.

    ``e`` is the exponential mechanism's rank error (:func:`rank_error`),
    ``c = RANGE_TILT``: a grid point a fraction ``f`` of the range beyond
    the teachers' band is ``(G / 0.1)^(c f)`` times less likely than one
    next to it, at every epsilon. The cap ``k / 4`` keeps the tilt from
    pulling an end into the band: inside it the count rises by ``k`` over
    the band's width, so the tilt moves an end only through tails thinner
    than a quarter of the average density over the whole range.
    """
    return min(RANGE_TILT * rank_error(epsilon_each, grid_size), n_teachers / 4.0)


def private_range(
    predictions: np.ndarray,
    grid: np.ndarray,
    epsilon_each: float,
    quantiles: tuple[float, float],
    *,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Two private quantiles ``(a, b)`` of the teachers' pooled predictions.

    Each end is drawn by the exponential mechanism over ``grid`` at
    ``epsilon_each``, together ``2 epsilon_each``-DP. The lower end's
    utility is::

        u(t) = -|N(t) - q_low k| + s (t - lo) / (hi - lo),

    the upper end's the mirror image, with ``N(t)`` the pooled count (one
    teacher weighs 1, so the first term has sensitivity 1 under replace-one)
    and ``s`` the public tilt of :func:`range_tilt`. The second
    term depends on the public grid only, so it changes no sensitivity: it
    breaks the tie between the many grid points beyond the teachers' band,
    where ``N`` is flat, in favour of the points next to the band (without
    it an end lands uniformly anywhere beyond the band). The ends are
    ordered and, when they coincide, widened by one grid step
    (post-processing).

    Parameters
    ----------
    predictions : ndarray of shape (n_rows, n_teachers)
        Already clipped to the grid's span.
    grid : ndarray of shape (G,)
    epsilon_each : float
    quantiles : (float, float)
    rng : numpy.random.Generator

    Returns
    -------
    (a, b) : tuple of float
    """
    n_teachers = predictions.shape[1]
    below = _pooled_below(predictions, grid)
    position = (grid - grid[0]) / (grid[-1] - grid[0])
    tilt = range_tilt(epsilon_each, grid.size, n_teachers)
    utilities = np.stack(
        [
            -np.abs(below - quantiles[0] * n_teachers) + tilt * position,
            -np.abs(below - quantiles[1] * n_teachers) + tilt * (1.0 - position),
        ]
    )
    index = np.sort(exponential_mechanism(utilities, epsilon_each, 1.0, rng=rng))
    if index[0] == index[1]:  # a degenerate range: widen it by one step
        index = np.clip(index + np.array([-1, 1]), 0, grid.size - 1)
    return float(grid[index[0]]), float(grid[index[1]])


def _median_counts(predictions, grid):
    """``#{j : p_j(x) < t_g}`` per query row and grid point, shape ``(n, G)``."""
    n_rows = predictions.shape[0]
    first_above = np.searchsorted(grid, predictions, side="right")  # (n, k)
    flat = first_above + (grid.size + 1) * np.arange(n_rows)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_rows * (grid.size + 1))
    return np.cumsum(counts.reshape(n_rows, grid.size + 1), axis=1)[:, : grid.size]


def choose_aggregate(n_teachers: int, epsilon_per_query: float, grid_size: int) -> str:
    """``"median"`` when its rank error is within a quarter of the teachers.

    The exponential-mechanism median over ``grid_size`` points at
    ``epsilon_per_query`` lands, with probability at least ``1 -
    RANK_FAILURE``, between the teachers' ``1/2 - e/k`` and ``1/2 + e/k``
    quantiles, ``e`` the rank error (:func:`rank_error`). The rule takes the
    median when that window is inside the teachers' interquartile range
    (``e <= k / 4``) and the clipped mean otherwise. It reads public
    numbers only, so choosing costs nothing.

    Examples
    --------
    >>> from dpsklearn.mechanisms import choose_aggregate
    >>> choose_aggregate(2000, 0.01, 64), choose_aggregate(20_000, 0.05, 64)
    ('mean', 'median')
    """
    error = rank_error(epsilon_per_query, grid_size)
    return "median" if error <= n_teachers / 4.0 else "mean"


class AdaptiveRangeEngine(Engine):
    """Serves an :class:`AdaptiveRangeRelease`: the range once, then each answer.

    ``statistic`` is the teachers' predictions, shape ``(n_rows, k)``. The
    first batch (unless :meth:`fix_range` was called at ``fit`` with public
    rows) spends the range's share on its rows.
    """

    def __init__(self, mechanism: AdaptiveRangeRelease, noise: NoiseSource) -> None:
        self.mechanism = mechanism
        self.noise = noise
        # Without a range share the range is the public one: nothing to release.
        self.range_: tuple[float, ...] | None = (
            None if mechanism.range_share > 0 else mechanism.target_range
        )

    def fix_range(self, predictions: ArrayLike) -> tuple[float, float]:
        """Estimate the range now, on the teachers' predictions of public rows."""
        if self.range_ is not None:
            raise RuntimeError(
                "the range of this model is already released (or fixed to the "
                "public target_range)."
            )
        mech = self.mechanism
        clipped = np.clip(np.asarray(predictions, np.float64), *mech.target_range)
        self.range_ = private_range(
            clipped,
            range_grid(mech.target_range, mech.grid_size),
            mech.range_epsilon_each,
            mech.quantiles,
            rng=self.noise[0],
        )
        return self.range_

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        mech = self.mechanism
        predictions = np.clip(np.asarray(statistic, np.float64), *mech.target_range)
        if predictions.ndim != 2 or predictions.shape[1] != mech.n_teachers:
            raise ValueError(
                f"expected the predictions of {mech.n_teachers} teachers, shape "
                f"(n_rows, {mech.n_teachers}); got {predictions.shape}."
            )
        if self.range_ is None:
            self.fix_range(predictions)
        a, b = cast("tuple[float, float]", self.range_)  # fixed just above
        if mech.aggregate == "median":
            grid = range_grid((a, b), mech.grid_size)
            utilities = -np.abs(
                _median_counts(predictions, grid) - mech.n_teachers / 2.0
            )
            index = np.atleast_1d(
                exponential_mechanism(
                    utilities, mech.epsilon_per_query, 1.0, rng=self.noise[1]
                )
            )
            values = grid[index]
        else:
            # Clip every teacher before the mean: one changed teacher then
            # moves it by at most (b - a) / k.
            mean = np.clip(predictions, a, b).mean(axis=1)
            sensitivity = (b - a) / mech.n_teachers
            step = default_grid_step(sensitivity)
            if mech.delta > 0:
                units = grid_units(sensitivity, step)
                values = grid_discrete_gaussian(
                    mean,
                    units * cast(float, mech.sigma_per_unit),  # set: delta > 0
                    rng=self.noise[1],
                    grid_step=step,
                    bounds=(a, b),
                )
            else:
                values = grid_laplace(
                    mean,
                    sensitivity,
                    mech.epsilon_per_query,
                    rng=self.noise[1],
                    grid_step=step,
                    bounds=(a, b),
                )
        values = np.asarray(values, dtype=np.float64)
        return Release({"value": values}, values.shape[0])

    def get_state(self) -> dict | None:
        return None if self.range_ is None else {"range": list(self.range_)}

    def set_state(self, state: dict) -> None:
        if state and state.get("range") is not None:
            self.range_ = tuple(float(v) for v in state["range"])


class AdaptiveRangeRelease(Mechanism):
    """Per-query regression answers clipped to a privately estimated range.

    A share ``range_share`` of the budget releases ``[a, b]``, two private
    quantiles of the teachers' pooled predictions on the rows of the first
    batch (or on public rows, :meth:`AdaptiveRangeEngine.fix_range`); the
    rest pays for ``max_queries`` answers, each the teachers' predictions
    clipped to ``[a, b]`` and aggregated by ``aggregate`` (module notes;
    ``docs/regression.rst``, "Adaptive clipping of regression answers").

    With ``delta > 0`` the total zCDP ``rho`` is the largest that
    ``calibration`` certifies within ``(epsilon, delta)``
    (:func:`~dpsklearn.mechanisms.largest_gaussian_rho`); the range gets
    ``range_share * rho`` (two exponential mechanisms, ``eps^2/8`` each) and
    the ``m`` answers the rest: a discrete Gaussian clipped mean with
    ``sigma_u = u sqrt(m / (2 rho_answers))`` (``u`` the sensitivity
    ``(b - a)/k`` in grid units), or an exponential-mechanism median at
    ``eps_q = sqrt(8 rho_answers / m)``. With ``delta = 0`` the parts are
    pure: ``range_share * epsilon`` for the range, ``eps_q = (1 -
    range_share) epsilon / m`` per answer (grid Laplace mean or
    exponential-mechanism median), by basic composition.

    Parameters
    ----------
    epsilon, delta : float
    max_queries : int
        Answers paid for (part of the guarantee).
    target_range : (float, float)
        Public bounds ``(lo, hi)``; the grid of candidate ends spans it.
    n_teachers : int
    range_share : float
        Share of ``rho`` (of ``epsilon`` when ``delta = 0``) spent on the range.
    aggregate : {"mean", "median"}
    quantiles : (float, float)
        Pooled quantiles the range aims at.
    grid_size : int
        Candidate ends (and median grid points).
    rho, conversion : float, str
        The certified total and what certified it (``delta > 0``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import AdaptiveRangeRelease
    >>> mech = AdaptiveRangeRelease.calibrate(
    ...     1.0, 1e-5, 2000, target_range=(5.0, 10.0), n_teachers=2000)
    >>> mech.aggregate, mech.conversion, mech.split
    ('mean', 'gdp', 'sequential')
    >>> round(mech.noise_std(width=5.0), 3), round(mech.noise_std(width=1.0), 3)
    (0.459, 0.092)
    """

    n_streams = 2  # the range, the answers
    # Set when delta > 0 (the Gaussian parts), None for a pure model; rho is
    # None again under the sequential split.
    rho: float | None
    rho_answers: float | None
    sigma_per_unit: float | None
    conversion: str | None

    def __init__(
        self,
        epsilon: float,
        delta: float,
        max_queries: int,
        target_range: tuple[float, float],
        n_teachers: int,
        range_share: float,
        aggregate: str,
        quantiles: tuple[float, float],
        grid_size: int,
        rho: float | None,
        conversion: str | None,
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.max_queries = int(max_queries)
        self.target_range = (float(target_range[0]), float(target_range[1]))
        self.n_teachers = int(n_teachers)
        self.range_share = float(range_share)
        self.aggregate = str(aggregate)
        self.quantiles = (float(quantiles[0]), float(quantiles[1]))
        self.grid_size = int(grid_size)
        self.rho = rho
        self.conversion = conversion
        self.range_skipped = False
        self.split = "rho"
        m = self.max_queries
        if self.delta > 0:
            rho = cast(float, rho)  # calibrated when delta > 0
            rho_range = self.range_share * rho
            self.rho_answers = rho - rho_range
            # Two exponential mechanisms of eps^2/8 each make rho_range.
            self.range_epsilon_each = math.sqrt(4.0 * rho_range)
            # Mean: u^2/(2 sigma_u^2) = rho_answers/m per answer, sigma_u = u s.
            self.sigma_per_unit = math.sqrt(m / (2.0 * self.rho_answers))
            # Median: eps_q^2/8 = rho_answers/m per answer.
            self.epsilon_per_query = math.sqrt(8.0 * self.rho_answers / m)
        else:
            self.rho_answers = None
            self.range_epsilon_each = self.range_share * self.epsilon / 2.0
            self.sigma_per_unit = None
            self.epsilon_per_query = (1.0 - self.range_share) * self.epsilon / m

    @classmethod
    @validate_params(
        {
            "epsilon": [FINITE_POSITIVE],
            "delta": [DELTA],
            "max_queries": [COUNT],
            "target_range": ["array-like"],
            "n_teachers": [COUNT],
            "range_share": [Interval(Real, 0, 1, closed="left")],
            "aggregate": [StrOptions({"auto", *AGGREGATES})],
            "quantiles": ["array-like"],
            "grid_size": [Interval(Integral, 2, None, closed="left")],
            "calibration": [StrOptions({"auto", "rdp", "zcdp"})],
        },
        prefer_skip_nested_validation=True,
    )
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        max_queries: int,
        *,
        target_range: tuple[float, float],
        n_teachers: int,
        range_share: float = 0.1,
        aggregate: str = "auto",
        quantiles: tuple[float, float] = (0.01, 0.99),
        grid_size: int = 128,
        calibration: str = "auto",
    ) -> AdaptiveRangeRelease:
        """Split ``(epsilon, delta)`` between the range and ``max_queries`` answers.

        ``aggregate="auto"`` applies :func:`choose_aggregate` (public numbers).
        When the range's exponential mechanism would err by more than a
        quarter of the teachers (:func:`rank_error` of ``range_epsilon_each``
        over ``grid_size`` points above ``k / 4``), no range is estimated:
        ``range_share`` drops to 0, the answers get the whole budget and are
        clipped to ``target_range`` (``range_skipped_`` says so). The rule
        reads public numbers only.
        """
        lo, hi = (float(v) for v in target_range)
        if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
            raise ValueError(
                f"target_range must be finite with lo < hi, got {target_range!r}."
            )
        q_lo, q_hi = (float(q) for q in quantiles)
        if not 0.0 <= q_lo < q_hi <= 1.0:
            raise ValueError(
                f"quantiles must satisfy 0 <= low < high <= 1, got {quantiles!r}."
            )
        rho, conversion = (None, None)
        if delta > 0:
            rho, conversion = largest_gaussian_rho(epsilon, delta, calibration)

        def build(share):
            return cls(
                epsilon,
                delta,
                max_queries,
                (lo, hi),
                n_teachers,
                share,
                "mean",
                (q_lo, q_hi),
                grid_size,
                rho,
                conversion,
            )

        mech = build(range_share)
        skipped = range_share > 0 and (
            rank_error(mech.range_epsilon_each, grid_size) > n_teachers / 4.0
        )
        if skipped:
            mech = build(0.0)
        mech.range_skipped = bool(skipped)
        if aggregate == "auto":
            aggregate = choose_aggregate(n_teachers, mech.epsilon_per_query, grid_size)
        mech.aggregate = aggregate
        if delta > 0 and aggregate == "mean" and calibration == "auto":
            mech._take_sequential_split_if_tighter()
        return mech

    def _take_sequential_split_if_tighter(self):
        """Pure range, then the answers' exact Gaussian composition, if less noisy.

        The other split: the range's two exponential mechanisms as pure
        releases of ``range_share * epsilon`` in all, and the ``m`` Gaussian
        answers composed exactly through Gaussian DP (the discrete
        Gaussian's correction certified at the fewest units a mean can
        take) within the rest, ``((1 - range_share) epsilon, delta)``; the
        two parts by basic composition. Taken when its answers get the
        larger ``rho`` (``docs/regression.rst``, "Adaptive clipping of
        regression answers").
        """
        epsilon_range = self.range_share * self.epsilon
        rho_answers, conversion = largest_gaussian_rho(
            self.epsilon - epsilon_range,
            self.delta,
            "auto",
            max_queries=self.max_queries,
            units=_FEWEST_UNITS,
        )
        if rho_answers <= cast(float, self.rho_answers):  # set: delta > 0
            return
        self.split = "sequential"
        self.conversion = conversion
        self.rho_answers = rho_answers
        self.rho = None
        self.range_epsilon_each = epsilon_range / 2.0
        self.sigma_per_unit = math.sqrt(self.max_queries / (2.0 * rho_answers))

    # -- public figures ------------------------------------------------------
    def noise_std(self, width: float | None = None) -> float:
        """Standard deviation of a mean answer's noise for a range of ``width``.

        ``width=None``: the whole ``target_range`` (the worst case). For the
        median the error is in teachers' ranks (:func:`rank_error`), not in
        these units; this is the clipped mean's figure.
        """
        width = self.target_range[1] - self.target_range[0] if width is None else width
        sensitivity = float(width) / self.n_teachers
        units = grid_units(sensitivity, default_grid_step(sensitivity))
        step = default_grid_step(sensitivity)
        if self.delta > 0:
            return step * units * cast(float, self.sigma_per_unit)
        q = math.exp(-self.epsilon_per_query / units)
        return step * math.sqrt(2.0 * q) / (1.0 - q)

    @property
    def composition(self) -> str:  # type: ignore[override]  # a class attribute
        # A model's own accountant composes the parts as calibrated in RDP or
        # zCDP; the sequential split (pure range, certified answers) and a
        # pure model compose by basic composition.
        if self.delta == 0 or self.split == "sequential":
            return "basic"
        return cast(str, self.conversion)  # set: delta > 0

    def _answer_events(self, label):
        m = self.max_queries
        if self.aggregate == "median":
            return [BoundedRangeEvent(self.epsilon_per_query, count=m, label=label)]
        if self.delta > 0:
            sigma = cast(float, self.sigma_per_unit)  # set: delta > 0
            return [GaussianEvent(sigma, 1.0, count=m, label=label)]
        return [PureEvent(self.epsilon_per_query, count=m, label=label)]

    def _tight_events(self, label):
        if self.range_share == 0:
            return self._answer_events(label)
        return [
            BoundedRangeEvent(self.range_epsilon_each, count=2, label=label),
            *self._answer_events(label),
        ]

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        if self.delta == 0:
            return self._tight_events(label)  # pure parts, basic composition
        if self.split == "sequential":
            # The pure range, then the answers' certified (epsilon, delta).
            epsilon_range = 2.0 * self.range_epsilon_each
            answers = ApproximateEvent(
                self.epsilon - epsilon_range, self.delta, label=label
            )
            if self.range_share == 0:
                return [answers]
            return [PureEvent(epsilon_range, label=label), answers]
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """The parts themselves for an accountant that composes them, else the whole."""
        whole = self.privacy_events(label)
        if self.delta > 0 and composition in ("rdp", "zcdp"):
            return [self._tight_events(label), whole]
        return [whole]

    def engine(self, noise: NoiseSource) -> AdaptiveRangeEngine:
        return AdaptiveRangeEngine(self, noise)

    def spent(  # type: ignore[override]  # the engine it made
        self, units: int, engine: AdaptiveRangeEngine | None
    ) -> tuple[float, float]:
        started = (
            self.range_share > 0 and engine is not None and engine.range_ is not None
        )
        if self.delta == 0:
            eps = (2 * self.range_epsilon_each if started else 0.0) + (
                units * self.epsilon_per_query
            )
            return eps, 0.0
        # delta > 0: the Gaussian parts are calibrated.
        rho_answers = cast(float, self.rho_answers)
        if self.split == "sequential":
            rho = units * rho_answers / self.max_queries
            sigma = cast(float, self.sigma_per_unit)
            conversion = cast(str, self.conversion)
            groups = [(_FEWEST_UNITS * sigma, _FEWEST_UNITS, units)]
            epsilon, delta = gaussian_spent(conversion, self.delta, rho, groups)
            range_epsilon = 2.0 * self.range_epsilon_each if started else 0.0
            return epsilon + range_epsilon, delta
        rho = (cast(float, self.rho) - rho_answers if started else 0.0) + (
            units * rho_answers / self.max_queries
        )
        if rho <= 0:
            return 0.0, 0.0
        if self.conversion == "zcdp":
            return zcdp_epsilon(rho, self.delta), self.delta
        return rdp_epsilon_of_rho(rho, self.delta), self.delta

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "aggregate_": self.aggregate,
            "range_share_": self.range_share,
            "range_skipped_": self.range_skipped,
            "range_epsilon_": 2.0 * self.range_epsilon_each,
            "epsilon_per_query_": self.epsilon_per_query
            if self.aggregate == "median" or self.delta == 0
            else None,
            "calibration_": "basic" if self.delta == 0 else self.conversion,
        }
