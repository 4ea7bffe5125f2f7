"""Test-only reference implementations of the sparse vector test.

Two references, each sharing nothing with the library but what it is
compared on:

* :class:`ReferenceSparseVector`, the textbook loop of Bassily, Thakkar and
  Thakurta (2018), Algorithm 1, with the corrections of docs/corrections.rst
  ("Halting at T", "A threshold based on T, not on the number of queries
  m"), one query at a time and with no look-ahead::

      w_hat = w + threshold_noise(draw 0)
      for each query, in order, while c < T:
          q_hat = q + query_noise(query index)
          q_hat >  w_hat  ->  pass
          q_hat <= w_hat  ->  fail: c += 1;
                              if c < T: w_hat = w + threshold_noise(next draw)

  It shares nothing with :class:`dpsklearn.mechanisms.SparseVectorEngine`
  except the two noise callables, so the tests can feed both the same noise
  and demand identical decisions. :class:`ArrayNoise` is such a callable: it
  serves slices of a pre-generated array and refuses any index outside it,
  so an engine that asks for a threshold draw after the halt (index ``T``)
  fails loudly instead of silently getting noise.

* :func:`paper_calibration` and its two wrappers, the calibrations with the
  structure of Bassily, Thakkar and Thakurta (2018), Algorithm 3: threshold
  noise ``DLap(lam)``, query noise ``DLap(2 lam)``, the ``T`` AboveThreshold
  instances composed on their own and the paid fallbacks by basic
  composition. They were library options (``calibration="paper"``,
  ``"exact"``, ``"pure"``) until ``"auto"`` was shown never to choose them
  (the library's ``laplace`` calibration has a threshold at most theirs
  everywhere, ``tests/test_calibration.py``); they live on here, written
  from the formulas, so that the tests keep pinning the corrections to the
  papers (docs/corrections.rst) and comparing the library with them:

  ``paper``
      ``lam = sqrt(32 T ln(2/delta)) / epsilon`` (advanced composition,
      Dwork, Rothblum and Vadhan 2010, at ``delta/2``), ``w = 2 lam
      ln(2T/delta)``; admissible only where the advanced composition bound
      really is at most its epsilon.
  ``exact``
      ``eps0 = 2 / lam`` the largest per-instance epsilon whose ``T``-fold
      optimal composition (Kairouz, Oh and Viswanath 2015, Theorem 3.3) is
      ``(epsilon, delta/2)``-DP, ``w = 2 lam ln(2T/delta)``.
  ``pure``
      ``lam = 2T / epsilon`` (basic composition), ``w = 2 lam ln(T/delta)``:
      the whole delta goes to the stability part.

  With a paid fallback the instances get ``(1 - share) epsilon`` and each of
  the ``n_fallbacks`` answers ``share * epsilon / n_fallbacks``. The
  soft-label double test is calibrated for ``T + 1`` draws with at most
  ``ceil(T/2)`` noisy means (docs/corrections.rst, "Soft-label
  calibration"). The stability part's bad event has probability ``p =
  P(DLap(2 lam) - DLap(lam) > w)`` per draw, in closed form
  (:func:`stability_tail_probability`, docs/design.rst, "The sparse vector
  stability test"; checked against mpmath brute force in
  ``tests/test_calibration.py``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PAPER_CALIBRATIONS",
    "ArrayNoise",
    "PaperCalibration",
    "ReferenceSparseVector",
    "drv_epsilon",
    "kov_delta",
    "kov_largest_epsilon0",
    "paper_calibration",
    "reference_n_estimators",
    "soft_label_reference",
    "stability_reference",
    "stability_tail_bound",
    "stability_tail_probability",
]


class ArrayNoise:
    """A deterministic noise callable ``noise(start, stop)`` over a fixed array.

    Parameters
    ----------
    values : array-like of int
        The draw for index ``i`` is ``values[i]``.

    Attributes
    ----------
    max_stop : int
        The largest ``stop`` requested so far (how much noise was consumed).
    n_calls : int
    """

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)
        self.values.setflags(write=False)
        self.max_stop = 0
        self.n_calls = 0

    def __call__(self, start, stop):
        if not 0 <= start <= stop <= self.values.size:
            raise IndexError(
                f"noise requested for indices [{start}, {stop}) but only "
                f"{self.values.size} draws exist"
            )
        self.n_calls += 1
        if stop > self.max_stop:
            self.max_stop = int(stop)
        return self.values[start:stop].copy()


class ReferenceSparseVector:
    """Sequential sparse vector test: one query at a time, state across calls.

    Parameters
    ----------
    threshold : float
        ``w``.
    cutoff : int
        ``T``: halt when the abstention count reaches it.
    query_noise, threshold_noise : callable
        ``noise(start, stop)``: query noise by query index, threshold noise by
        draw index (the same callables the engine takes).
    """

    def __init__(self, threshold, cutoff, query_noise, threshold_noise):
        self.threshold = float(threshold)
        self.cutoff = int(cutoff)
        self.query_noise = query_noise
        self.threshold_noise = threshold_noise
        self.abstention_count = 0
        self.n_queries = 0
        self.n_threshold_draws = 0
        self.noisy_threshold = self._draw_threshold()

    def _draw_threshold(self):
        index = self.n_threshold_draws
        noise = int(self.threshold_noise(index, index + 1)[0])
        self.n_threshold_draws += 1
        return self.threshold + noise

    @property
    def halted(self):
        return self.abstention_count >= self.cutoff

    def run(self, scores):
        """Return ``(decisions, n_processed)`` for the leading queries tested."""
        decisions = []
        for score in np.asarray(scores, dtype=np.int64).ravel().tolist():
            if self.halted:
                break
            index = self.n_queries
            noisy_score = score + int(self.query_noise(index, index + 1)[0])
            self.n_queries += 1
            if noisy_score > self.noisy_threshold:
                decisions.append(True)
                continue
            decisions.append(False)
            self.abstention_count += 1
            if not self.halted:
                self.noisy_threshold = self._draw_threshold()
        return np.array(decisions, dtype=bool), len(decisions)


# -- the paper's structure: paper, exact, pure -----------------------------------
#: The calibrations with the structure of Bassily, Thakkar and Thakurta (2018).
PAPER_CALIBRATIONS = ("paper", "exact", "pure")


def stability_tail_probability(lam, w):
    """``P(DLap(2 lam) - DLap(lam) > w)``, exactly.

    ``D`` is an integer, so the event is ``D >= n`` with ``n = floor(w) + 1``;
    with ``b = exp(-1/(2 lam))`` (docs/design.rst, "The sparse vector
    stability test")::

        P(D >= n) = b^n / (1 + b + b^2) * ((1 + b) - b^(n+1) / (1 + b^2))

    for ``n >= 0``, and ``1 - P(D >= 1 - n)`` for ``n <= 0`` (``D`` is
    symmetric). The bracket lies in (1/2, 2): only ``b^n`` needs log space.
    """
    log_b = -1.0 / (2.0 * lam)
    b = math.exp(log_b)

    def log_at_least(n):
        bracket = (1.0 + b) - math.exp((n + 1) * log_b) / (1.0 + b * b)
        return n * log_b + math.log(bracket) - math.log1p(b + b * b)

    n = math.floor(w) + 1
    if n >= 1:
        return math.exp(log_at_least(n))
    return -math.expm1(log_at_least(1 - n))


def stability_tail_bound(lam, w):
    """The first term alone: ``b^(floor(w)+1) (1+b) / (1+b+b^2)``, capped at 1.

    Below ``exp(-w / (2 lam))``, the bound that sets the paper's ``w``
    (Bassily, Thakkar and Thakurta 2018, proof of Theorem 3.6).
    """
    log_b = -1.0 / (2.0 * lam)
    b = math.exp(log_b)
    log_bound = (math.floor(w) + 1) * log_b + math.log1p(b) - math.log1p(b + b * b)
    return math.exp(min(0.0, log_bound))


@functools.lru_cache(maxsize=64)
def _log_binomials(k):
    """``log C(k, l)`` for ``l = 0..k``, from the exact integers."""
    return np.array([math.log(math.comb(k, l)) for l in range(k + 1)])


def kov_delta(eps0, k, epsilon):
    """Delta at ``epsilon`` of ``k`` pure ``eps0``-DP mechanisms, composed optimally.

    Kairouz, Oh and Viswanath (2015), Theorem 3.3: the worst pair is ``k``
    randomized responses, whose privacy loss is ``(k - 2l) eps0`` with
    probability ``C(k, l) e^((k-l) eps0) / (1 + e^eps0)^k``, so::

        delta = sum_l C(k, l) (e^((k-l) eps0) - e^epsilon e^(l eps0))_+
                / (1 + e^eps0)^k.

    Each term in log space (exact binomials), summed with ``math.fsum``.
    """
    l = np.arange(k + 1)
    loss = (k - 2 * l) * eps0
    keep = loss > epsilon
    if not keep.any():
        return 0.0
    l, loss = l[keep], loss[keep]
    log_p = -math.log1p(math.exp(-eps0))  # e^eps0 / (1 + e^eps0)
    log_q = -eps0 + log_p  # 1 / (1 + e^eps0)
    log_terms = (
        _log_binomials(k)[keep]
        + (k - l) * log_p
        + l * log_q
        + np.log(-np.expm1(epsilon - loss))
    )
    return math.fsum(np.exp(log_terms).tolist())


def kov_largest_epsilon0(epsilon, delta, k):
    """The largest ``eps0`` with ``kov_delta(eps0, k, epsilon) <= delta``.

    Bisection to the last bit: ``kov_delta`` grows with ``eps0``, is 0 at
    basic composition's ``epsilon / k`` and tends to 1.
    """
    lo, hi = epsilon / k, 2.0 * epsilon / k + 1.0
    while kov_delta(hi, k, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return lo
        if kov_delta(mid, k, epsilon) <= delta:
            lo = mid
        else:
            hi = mid


def drv_epsilon(eps0, k, delta):
    """Advanced composition (Dwork, Rothblum and Vadhan 2010, Theorem III.3).

    ``sqrt(2 k ln(1/delta)) eps0 + k eps0 (e^eps0 - 1)``.
    """
    return math.sqrt(2.0 * k * math.log(1.0 / delta)) * eps0 + k * eps0 * math.expm1(
        eps0
    )


@dataclass(frozen=True)
class PaperCalibration:
    """One calibration with the paper's structure: the numbers, nothing else.

    ``noise_scale`` is ``lam`` (threshold noise ``DLap(lam)``; the query
    noise is ``DLap(2 lam)``), ``threshold`` is ``w``. The ``cutoff`` (``T``,
    or ``T + 1`` for soft labels) instances of ``eps0 = 2 / lam`` get
    ``sparse_vector_epsilon`` at ``sparse_vector_delta``; the
    ``n_fallbacks`` answers ``fallback_epsilon`` each, by basic composition.
    ``composed_epsilon`` is the total by the calibration's own theorem
    (advanced, optimal or basic composition, plus the fallbacks).
    """

    name: str
    epsilon: float
    delta: float
    cutoff: int
    noise_scale: float
    threshold: float
    sparse_vector_epsilon: float
    sparse_vector_delta: float
    composed_epsilon: float
    n_fallbacks: int = 0
    fallback_epsilon: float = 0.0

    @property
    def query_scale(self):
        return 2.0 * self.noise_scale

    @property
    def per_instance_epsilon(self):
        return 2.0 / self.noise_scale

    @property
    def tail_probability(self):
        """``p``: an unstable query passes one threshold draw."""
        return stability_tail_probability(self.noise_scale, self.threshold)

    @property
    def stability_delta(self):
        return self.delta - self.sparse_vector_delta

    @property
    def admissible(self):
        """The composed epsilon and ``T p`` fit the budget (``paper`` may not)."""
        return (
            self.composed_epsilon <= self.epsilon * (1 + 1e-12)
            and self.cutoff * self.tail_probability <= self.stability_delta
        )

    def pass_probability(self, distance):
        """``P(d + DLap(2 lam) > w + DLap(lam))`` for a fresh threshold draw."""
        return stability_tail_probability(self.noise_scale, self.threshold - distance)

    def figures(self):
        """The fitted figures an estimator reported under this calibration."""
        return {
            "calibration_": self.name,
            "threshold_": self.threshold,
            "noise_scale_": self.noise_scale,
            "sparse_vector_epsilon_": self.sparse_vector_epsilon,
            "fallback_epsilon_": self.fallback_epsilon,
        }


def paper_calibration(
    name, epsilon, delta, cutoff, *, n_fallbacks=0, fallback_share=0.0
):
    """The ``paper``, ``exact`` or ``pure`` calibration (see the module docstring).

    Returned whether admissible or not (``paper`` overspends at large
    epsilon: check ``.admissible``).
    """
    T = int(cutoff)
    eps_sv = epsilon * (1.0 - fallback_share)
    fallback = epsilon * fallback_share / n_fallbacks if n_fallbacks else 0.0
    paid = n_fallbacks * fallback
    if name == "paper":
        lam = math.sqrt(32.0 * T * math.log(2.0 / delta)) / eps_sv
        w = 2.0 * lam * math.log(2.0 * T / delta)
        sv_delta = delta / 2.0
        composed = drv_epsilon(2.0 / lam, T, sv_delta) + paid
    elif name == "exact":
        lam = 2.0 / kov_largest_epsilon0(eps_sv, delta / 2.0, T)
        while kov_delta(2.0 / lam, T, eps_sv) > delta / 2.0:
            lam = math.nextafter(lam, math.inf)  # 2 / (2 / eps0) may round up
        w = 2.0 * lam * math.log(2.0 * T / delta)
        sv_delta = delta / 2.0
        composed = eps_sv + paid  # the KOV certificate at delta / 2
    elif name == "pure":
        lam = 2.0 * T / eps_sv
        w = 2.0 * lam * math.log(T / delta)
        sv_delta = 0.0
        composed = T * (2.0 / lam) + paid
    else:
        raise ValueError(f"name must be one of {PAPER_CALIBRATIONS}, got {name!r}.")
    return PaperCalibration(
        name=name,
        epsilon=epsilon,
        delta=delta,
        cutoff=T,
        noise_scale=lam,
        threshold=w,
        sparse_vector_epsilon=eps_sv,
        sparse_vector_delta=sv_delta,
        composed_epsilon=composed,
        n_fallbacks=n_fallbacks,
        fallback_epsilon=fallback,
    )


def stability_reference(
    name, epsilon, delta, max_unstable, *, fallback="noisy_max", noisy_max_share=0.5
):
    """The classifier's stability test: ``T`` draws, ``T`` paid noisy maxima."""
    paid = fallback == "noisy_max"
    return paper_calibration(
        name,
        epsilon,
        delta,
        max_unstable,
        n_fallbacks=max_unstable if paid else 0,
        fallback_share=noisy_max_share if paid else 0.0,
    )


def soft_label_reference(
    name, epsilon, delta, max_unstable, *, fallback="midpoint", noisy_mean_share=0.5
):
    """The soft-label double test: ``T + 1`` draws, ``ceil(T/2)`` paid noisy means."""
    paid = fallback == "noisy_mean"
    return paper_calibration(
        name,
        epsilon,
        delta,
        max_unstable + 1,
        n_fallbacks=math.ceil(max_unstable / 2) if paid else 0,
        fallback_share=noisy_mean_share if paid else 0.0,
    )


def reference_n_estimators(agreement, calibration, beta=0.05):
    """Smallest ``k`` whose query of teacher agreement ``a`` passes w.p. >= 1 - beta.

    By scanning: the smallest distance ``d`` that passes a fresh threshold
    with probability ``1 - beta`` under ``calibration.pass_probability``,
    then the smallest ``k`` whose distance at agreement ``a`` (``top =
    ceil(a k)`` against ``k - top``: ``top - floor(k/2) - 1``) reaches it.
    """
    d = 0
    step = max(1, int(calibration.threshold) // 64)
    while calibration.pass_probability(d) < 1 - beta:  # coarse, then one by one
        d += step
    while d > 0 and calibration.pass_probability(d - 1) >= 1 - beta:
        d -= 1
    k = np.arange(1, int((d + 2) / (agreement - 0.5)) + 3)
    distance = np.ceil(agreement * k - 1e-9).astype(np.int64) - k // 2 - 1
    return int(k[np.flatnonzero(distance >= d)[0]])
