"""Private selection by random repetition (Papernot and Steinke 2022).

A base mechanism ``Q`` picks a candidate uniformly from a grid, fits it
privately and scores it with a noisy count; ``Q`` is run ``K`` times, ``K``
drawn from a truncated negative binomial or a Poisson distribution, and
only the best run (its fitted model and its noisy score) is released. If
``Q`` has Renyi curve ``eps(alpha)``, the whole selection has the curve of
their Theorem 2 (truncated negative binomial) or Theorem 6 (Poisson)
(:func:`repeat_and_select_curve`, checked against ``dp_accounting``'s
``RepeatAndSelectDpEvent``); ``docs/design.rst``, "Private model selection".

:class:`RepeatedSelection` owns the calibration: the largest per-candidate
epsilon whose run curve repeats and selects within the total ``(epsilon,
delta)``. The curve of ``Q``, at every order, is the **maximum** of

* every candidate's curve: a uniform mixture of mechanisms is no worse than
  the worst of them (Renyi divergence is jointly quasi-convex);
* the score's Gaussian curve ``alpha / (2 sigma^2)``: the fit reads only the
  training rows and the score only the validation rows (a public split), so
  a replaced training row changes the fit (the score is then
  post-processing of the model on unchanged rows) and a replaced validation
  row changes the score alone, never both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._monotone import bisection, largest_within
from ..accounting import ApproximateEvent, PrivacyEvent, dp_accounting
from ..noise import NoiseSource, discrete_gaussian, repeated_candidates
from ._base import Engine, Mechanism

__all__ = [
    "RUN_DISTRIBUTIONS",
    "RepeatedSelection",
    "curve_of_events",
    "fit_dp_event",
    "repeat_and_select_curve",
    "repetition_gamma",
    "selection_orders",
    "worst_candidate_curve",
]

#: Shapes of the distribution of the number of runs, by name.
RUN_DISTRIBUTIONS = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0}


def _tnb_mean(gamma, shape):
    """Mean of the truncated negative binomial (Papernot and Steinke, Definition 1)."""
    if gamma >= 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / gamma
    if shape == 0.0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return shape * (1.0 / gamma - 1.0) / (1.0 - gamma**shape)


def repetition_gamma(mean, shape):
    """``gamma`` of the truncated negative binomial of a given mean, from the safe side.

    The mean decreases in ``gamma``; the returned ``gamma`` has mean at most
    ``mean`` and is at least the value ``dp_accounting`` analyses (its
    search returns the lower end), so the accounting covers the runs drawn.
    """
    if shape == 1.0:
        return 1.0 / mean
    # Within (0, 1]: the mean is not defined at gamma = 0.
    return bisection(
        lambda gamma: _tnb_mean(gamma, shape) <= mean, 1.0, 0.0, rtol=1e-15
    )


def _rdp_accountant():
    dpa = dp_accounting()
    return dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )


def _curve(dp_event):
    """Renyi curve of a ``dp_accounting`` event at the accountant's orders."""
    accountant = _rdp_accountant()
    accountant.compose(dp_event)
    return accountant.rdp


def fit_dp_event(events):
    """One ``dp_accounting`` event for a candidate's typed events (Renyi curves only).

    Raises TypeError for an event without a Renyi curve (an approximate
    ``(epsilon, delta)`` event, such as a sparse vector instance).
    """
    dpa = dp_accounting()
    parts = []
    for event in events:
        if isinstance(event, ApproximateEvent):
            raise TypeError("an approximate (epsilon, delta) event has no Renyi curve")
        if event.count:
            parts.append(dpa.SelfComposedDpEvent(event.rdp_event(), event.count))
    return dpa.ComposedDpEvent(parts)


def curve_of_events(events: Iterable[PrivacyEvent]) -> np.ndarray:
    """Renyi curve of typed events (at ``dp_accounting``'s default orders).

    Examples
    --------
    >>> from dpsklearn.accounting import BoundedRangeEvent
    >>> from dpsklearn.mechanisms import curve_of_events
    >>> curve = curve_of_events([BoundedRangeEvent(0.1, count=8)])
    >>> bool(curve[0] < curve[-1])
    True
    """
    return _curve(fit_dp_event(events))


def _signature(events):
    """A hashable key of what typed events spend (labels and times dropped)."""
    return tuple((e.unit(), e.count) for e in events if e.count)


@functools.lru_cache(maxsize=1024)
def _event_and_curve(signature):
    event = fit_dp_event([unit.with_count(count) for unit, count in signature])
    return event, _curve(event)


def selection_orders():
    """The Renyi orders every curve here is computed at (``dp_accounting``'s)."""
    return _rdp_accountant().orders


def worst_candidate_curve(candidate_events):
    """The pointwise maximum of the candidates' Renyi curves.

    A run draws its candidate uniformly; the mixture's Renyi divergence is at
    most the largest candidate's, at every order separately (joint
    quasi-convexity).
    """
    return _worst(frozenset(_signature(found) for found in candidate_events))


@functools.lru_cache(maxsize=1024)
def _worst(signatures):
    # Candidates usually spend the same events: each curve is computed once
    # (and memoised: searches refit with the same budgets).
    curves = [_event_and_curve(signature)[1] for signature in signatures]
    return np.max(np.vstack(curves), axis=0)


def _tnb_gamma_and_mean(mean_runs, shape):
    """``gamma`` drawn from (:func:`repetition_gamma`) and its actual mean."""
    gamma = repetition_gamma(mean_runs, shape)
    return gamma, min(float(mean_runs), _tnb_mean(gamma, shape))


def repeat_and_select_curve(orders, curve, mean_runs: float, shape: float):
    """Renyi curve of the best of a random number of runs of a curve-``curve`` run.

    Papernot and Steinke (2022): Theorem 6 for a Poisson number of runs
    (``shape = inf``), ``eps(l) + mu delta_hat + ln(mu) / (l - 1)`` with
    ``delta_hat`` the run's delta at ``ln(1 + 1/(l - 1))``; Theorem 2 for
    the truncated negative binomial of shape ``shape`` (0: logarithmic, 1:
    geometric), ``eps(l) + ln(mu) / (l - 1) + (1 + shape) min over l' of
    ((1 - 1/l') eps(l') - ln(gamma) / l')``, then monotone in the order.
    The same formulas as ``dp_accounting``'s ``RepeatAndSelectDpEvent``
    (the tests compare them), applied to any curve, at the ``gamma`` the
    runs are drawn from and its own mean.

    Examples
    --------
    >>> import math
    >>> from dpsklearn.mechanisms._repeat_select import (
    ...     repeat_and_select_curve, selection_orders)
    >>> orders = selection_orders()
    >>> out = repeat_and_select_curve(orders, orders * 0.01, 12.0, math.inf)
    >>> bool((out[orders > 2] > orders[orders > 2] * 0.01).all())
    True
    """
    compute_delta = dp_accounting().rdp.rdp_privacy_accountant.compute_delta
    orders = np.asarray(orders, dtype=float)
    curve = np.asarray(curve, dtype=float)
    out = np.full_like(orders, np.inf)
    if shape == math.inf:
        for i, order in enumerate(orders):
            if order <= 1:
                continue
            delta_hat, _ = compute_delta(orders, curve, math.log1p(1 / (order - 1)))
            out[i] = (
                curve[i] + mean_runs * delta_hat + math.log(mean_runs) / (order - 1)
            )
        return out
    gamma, mean = _tnb_gamma_and_mean(mean_runs, shape)
    constant = (1 + shape) * np.min((1 - 1 / orders) * curve - math.log(gamma) / orders)
    above = orders > 1
    out[above] = curve[above] + math.log(mean) / (orders[above] - 1) + constant
    # Monotone in the order: a lower order's divergence is at most a higher's.
    order_sorted = np.argsort(orders, kind="stable")
    monotone = np.minimum.accumulate(out[order_sorted][::-1])[::-1]
    result = np.empty_like(out)
    result[order_sorted] = monotone
    return result


def run_curve(candidate_curve, score_sigma):
    """A run's curve: the larger of the fit's and the score's, at each order."""
    score = selection_orders() / (2.0 * float(score_sigma) ** 2)
    return np.maximum(np.asarray(candidate_curve, dtype=float), score)


def _total(candidate_curve, score_sigma, mean_runs, shape, delta):
    compute_epsilon = dp_accounting().rdp.rdp_privacy_accountant.compute_epsilon
    orders = selection_orders()
    curve = repeat_and_select_curve(
        orders, run_curve(candidate_curve, score_sigma), mean_runs, shape
    )
    return float(compute_epsilon(orders, curve, delta)[0])


@functools.lru_cache(maxsize=4096)
def _total_of_candidates(signatures, score_sigma, mean_runs, shape, delta):
    """The total for candidates spending ``signatures`` (memoised: refits repeat it)."""
    curve = _worst(signatures)
    return _total(curve, score_sigma, mean_runs, shape, delta), curve


@functools.lru_cache(maxsize=256)
def _largest_run_rho(epsilon, delta, mean_runs, shape):
    """The largest ``rho`` of a run whose repetition fits ``(epsilon, delta)``."""
    dpa = dp_accounting()

    def fits(rho):
        accountant = _rdp_accountant()
        accountant.compose(
            dpa.dp_event.RepeatAndSelectDpEvent(dpa.ZCDpEvent(rho), mean_runs, shape)
        )
        return accountant.get_epsilon(delta) <= epsilon

    return largest_within(
        fits, 1e-12, math.inf, hi=1.0, factor=4.0, log=True, rtol=0.01
    )


class RepeatedSelection(Mechanism):
    """The best of a random number of private runs, within ``(epsilon, delta)``.

    Build it with :meth:`calibrate`. The total ``(epsilon, delta)`` is
    charged as one approximate event (its Renyi certificate,
    :attr:`total_epsilon`, is at most ``epsilon``).

    Examples
    --------
    >>> from dpsklearn.accounting import BoundedRangeEvent
    >>> from dpsklearn.mechanisms import RepeatedSelection
    >>> def events_at(eps_c):  # one candidate: an exponential mechanism at eps_c
    ...     return [[BoundedRangeEvent(eps_c)]]
    >>> sel = RepeatedSelection.calibrate(
    ...     2.0, 1e-5, events_at, mean_runs=12, runs="poisson", score_sigma=50.0)
    >>> round(sel.candidate_epsilon, 2), sel.total_epsilon <= 2.0
    (0.39, True)
    """

    n_streams = 2  # the runs and their candidates; the scores' noise

    def __init__(
        self,
        epsilon: float,
        delta: float,
        candidate_epsilon: float,
        candidate_curve: ArrayLike,
        mean_runs: float,
        shape: float,
        score_sigma: float,
        total_epsilon: float,
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.candidate_epsilon = float(candidate_epsilon)
        self.candidate_curve = np.asarray(candidate_curve, dtype=float)
        self.mean_runs = float(mean_runs)
        self.shape = float(shape)
        self.score_sigma = float(score_sigma)
        self.total_epsilon = float(total_epsilon)

    @classmethod
    def total(
        cls,
        candidate_curve: ArrayLike,
        score_sigma: float,
        mean_runs: float,
        shape: float,
        delta: float,
    ) -> float:
        """The selection's epsilon at ``delta`` (Renyi, replace-one).

        ``candidate_curve`` is the candidates' Renyi curve at
        :func:`selection_orders` (:func:`worst_candidate_curve`); a run
        scores with ``N_Z(0, score_sigma^2)`` on a count of sensitivity 1.
        """
        return _total(candidate_curve, score_sigma, mean_runs, shape, delta)

    @staticmethod
    def default_score_sigma(
        epsilon: float,
        delta: float,
        *,
        mean_runs: float,
        runs: str | float,
        n_validation: int,
    ) -> float:
        """Score noise taking at most a tenth of a run's zCDP budget, or more noise.

        ``max(n_validation / 200, 1 / sqrt(2 rho_s))`` with ``rho_s`` a tenth
        of the largest ``rho`` a run may have within the total: the score
        count then moves by about half a point of accuracy at most, and
        leaves nine tenths of the run's budget to the fit.
        """
        # A name, or a float shape (its own value).
        shape = float(RUN_DISTRIBUTIONS.get(runs, runs))  # type: ignore[arg-type]
        rho = _largest_run_rho(float(epsilon), float(delta), float(mean_runs), shape)
        return max(n_validation / 200.0, 1.0 / math.sqrt(2.0 * 0.1 * rho))

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        events_at: Callable[[float], Iterable[Iterable[PrivacyEvent]]],
        *,
        mean_runs: float,
        runs: str | float,
        score_sigma: float,
        rtol: float = 1e-3,
    ) -> RepeatedSelection:
        """The largest per-candidate epsilon that fits, by bisection.

        Parameters
        ----------
        epsilon, delta : float
            The total budget of the selection (``delta > 0``).
        events_at : callable
            ``events_at(eps_c)`` returns, for every candidate configured at
            per-candidate epsilon ``eps_c``, the typed events its fit spends
            (each with a Renyi curve); its curve grows with ``eps_c``.
        mean_runs : float
            Mean number of runs (>= 1).
        runs : {"poisson", "geometric", "logarithmic"} or float
            Distribution of the number of runs (a float is the truncated
            negative binomial's shape).
        score_sigma : float
            Scale of the discrete Gaussian noise on each score count.
        """
        # A name, or a float shape (its own value).
        shape = RUN_DISTRIBUTIONS.get(runs, runs)  # type: ignore[arg-type]
        shape = float(shape)

        def total_at(eps_c):
            signatures = frozenset(_signature(found) for found in events_at(eps_c))
            return _total_of_candidates(
                signatures, float(score_sigma), float(mean_runs), shape, float(delta)
            )

        lo, hi = epsilon * 1e-4, epsilon
        value, curve = total_at(lo)
        if value > epsilon:
            raise ValueError(
                f"the budget (epsilon={epsilon:g}, delta={delta:g}) cannot pay for "
                f"{mean_runs:g} runs on average with score noise of standard "
                f"deviation {score_sigma:g}, even at per-candidate epsilon "
                f"{lo:.3g}; raise "
                "the budget, the score noise, or lower mean_runs."
            )
        fitted = {lo: (curve, value)}  # what each fitting eps_c spends

        def fits(eps_c):
            value, curve = total_at(eps_c)
            if value <= epsilon:
                fitted[eps_c] = (curve, value)
            return value <= epsilon

        eps_c = bisection(fits, lo, hi, log=True, rtol=rtol, max_steps=10_000)
        curve, value = fitted[eps_c]
        return cls(epsilon, delta, eps_c, curve, mean_runs, shape, score_sigma, value)

    @property
    def runs_parameter(self) -> float:
        """The Poisson mean, or ``gamma`` of the truncated negative binomial."""
        if self.shape == math.inf:
            return self.mean_runs
        return repetition_gamma(self.mean_runs, self.shape)

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        # The whole selection, charged as stated (its Renyi certificate is
        # total_epsilon <= epsilon).
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def draw_runs(self, n_candidates: int, noise: NoiseSource) -> NDArray[np.int64]:
        """The secret candidates of the runs, one per run."""
        return repeated_candidates(
            n_candidates, self.shape, self.runs_parameter, rng=noise[0]
        )

    def select(
        self,
        n_candidates: int,
        run: Callable[[int], tuple[int, Any]],
        noise: NoiseSource,
    ) -> tuple[int, int, Any] | None:
        """Run the secret runs; return the best ``(noisy count, index, result)``.

        ``run(index)`` fits candidate ``index`` and returns ``(count,
        result)``: its count of correct validation rows (sensitivity 1) and
        what to release if it wins. The first run with the highest noisy
        count wins. Returns None when no run was drawn (Poisson only).
        """
        best = None
        for index in self.draw_runs(n_candidates, noise):
            count, result = run(int(index))
            score = cast(int, self.noisy_count(count, noise))  # an int count
            if best is None or score > best[0]:
                best = (score, int(index), result)
        return best

    def noisy_count(
        self, count: ArrayLike, noise: NoiseSource
    ) -> int | NDArray[np.int64]:
        """Score counts (int or array), each released with ``N_Z(0, score_sigma^2)``."""
        count = np.asarray(count, dtype=np.int64)
        noisy = count + discrete_gaussian(
            self.score_sigma, size=count.shape, rng=noise[1]
        )
        return int(noisy) if noisy.ndim == 0 else noisy

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return self.epsilon, self.delta

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "candidate_epsilon_": self.candidate_epsilon,
            "total_epsilon_": self.total_epsilon,
            "score_sigma_": self.score_sigma,
            "mean_runs_": self.mean_runs,
        }
