"""GNMax and Confident-GNMax: Gaussian noisy argmax on teacher votes.

Papernot, Song, Mironov, Raghunathan, Talwar and Erlingsson (2018),
"Scalable private learning with PATE", Section 4:

* **GNMax** answers a query with ``argmax_j(n_j + N(0, sigma^2))``, the
  noisy argmax of its vote counts ``n_j``.
* **Confident-GNMax** (their Algorithm 1) first checks whether the teachers
  agree: only if ``max_j n_j + N(0, sigma1^2) >= threshold`` is the query
  answered, by GNMax with ``sigma2``; otherwise it abstains.

Privacy under replace-one: one record changes one teacher,
which moves one vote from one class to another, so the largest count has
sensitivity 1 and the count vector L2 sensitivity ``sqrt(2)``. Both steps
are Gaussian mechanisms on integer counts; dpsklearn adds *discrete*
Gaussian noise (:func:`dpsklearn.noise.discrete_gaussian`, Canonne, Kamath
and Steinke 2020), which has the same Renyi-DP curve as the continuous
Gaussian and leaves no floating-point low-order bits to read. Ties of the
noisy integer counts go to the lowest class index (a fixed rule applied to
the noisy counts: post-processing).

This module holds the mechanisms as functions vectorised over queries, the
engines that run them on a fitted model, and the mechanism objects
:class:`GNMaxRelease` and :class:`ConfidentGNMaxRelease`. The noise scales are
calibrated at ``fit`` (:mod:`._gaussian_calibration`) for the worst case: every
threshold check charged, plus ``max_answers`` noisy argmaxes
(``docs/design.rst``, "GNMax and Confident-GNMax").
Accounting is data-independent, so PATE's data-dependent savings (which need
smooth sensitivity to release their epsilon) are not claimed.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

from .._param_validation import Interval
from .._validation import COUNT, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ..accounting import ApproximateEvent, GaussianEvent, PrivacyEvent
from ..noise import NoiseSource, discrete_gaussian
from ._base import Engine, Mechanism, Release
from ._gaussian_calibration import (
    GaussianCalibration,
    calibrate_confident_gnmax,
    calibrate_gnmax,
    gaussian_spent,
)

__all__ = [
    "ConfidentGNMaxRelease",
    "ConfidentGNMaxEngine",
    "GNMaxRelease",
    "GNMaxEngine",
    "check_vote_counts",
    "confident_gnmax",
    "confident_gnmax_threshold",
    "gnmax",
    "gnmax_noisy_counts",
]


def check_vote_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """``counts`` as a 2-D int64 array of vote counts, or a ValueError naming it.

    Examples
    --------
    >>> from dpsklearn.mechanisms import check_vote_counts
    >>> check_vote_counts([[3, 1], [0, 4]]).dtype
    dtype('int64')
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] < 1:
        raise ValueError(
            "counts must be a 2-D array of vote counts (n_queries, n_classes), "
            f"got shape {counts.shape}."
        )
    if counts.dtype.kind not in "iu":
        if counts.dtype.kind != "f" or not np.all(counts == np.round(counts)):
            raise ValueError("counts must be integer vote counts.")
    return counts.astype(np.int64, copy=False)


@validate_params(
    {
        "counts": ["array-like"],
        "sigma": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def gnmax(
    counts: ArrayLike, sigma: float, *, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Gaussian noisy argmax of vote counts, one answer per query (GNMax).

    Returns ``argmax_j(counts[i, j] + Z_ij)`` with i.i.d. discrete Gaussian
    ``Z_ij ~ N_Z(0, sigma^2)``, ties to the lowest index. Under replace-one
    the count vector has L2 sensitivity ``sqrt(2)``, so one answer is
    ``1/sigma^2``-zCDP (RDP ``alpha / sigma^2``) (Papernot et al. 2018,
    Proposition 8 with our sensitivity; Canonne, Kamath and Steinke 2020 for
    discrete noise).

    Parameters
    ----------
    counts : int array-like of shape (n_queries, n_classes)
    sigma : float
        Noise scale (> 0).
    rng : numpy.random.Generator

    Returns
    -------
    answers : int64 ndarray of shape (n_queries,)
        Class indices.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import gnmax
    >>> gnmax([[90, 10], [5, 95]], 5.0, rng=np.random.default_rng(0)).tolist()
    [0, 1]
    """
    noisy = gnmax_noisy_counts(counts, sigma, rng=rng)
    return np.argmax(noisy, axis=1).astype(np.int64)


@validate_params(
    {
        "counts": ["array-like"],
        "sigma": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def gnmax_noisy_counts(
    counts: ArrayLike, sigma: float, *, rng: np.random.Generator
) -> NDArray[np.int64]:
    """The noisy vote counts that GNMax takes the argmax of.

    ``counts[i, j] + Z_ij`` with i.i.d. discrete Gaussian ``Z_ij ~ N_Z(0,
    sigma^2)``: the whole vector of a query is ``1/sigma^2``-zCDP under
    replace-one (L2 sensitivity ``sqrt(2)``), so its argmax (:func:`gnmax`,
    which draws exactly this noise) and any other function of it are
    post-processing. :class:`~dpsklearn.PrivatePredictionClassifier` with
    ``mechanism="gnmax"`` releases these vectors.

    Parameters
    ----------
    counts : int array-like of shape (n_queries, n_classes)
    sigma : float
        Noise scale (> 0).
    rng : numpy.random.Generator

    Returns
    -------
    noisy_counts : int64 ndarray of shape (n_queries, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import gnmax, gnmax_noisy_counts
    >>> counts = [[90, 10], [5, 95]]
    >>> noisy = gnmax_noisy_counts(counts, 5.0, rng=np.random.default_rng(0))
    >>> noisy.shape, noisy.dtype.name
    ((2, 2), 'int64')
    >>> labels = gnmax(counts, 5.0, rng=np.random.default_rng(0))  # same noise
    >>> (noisy.argmax(axis=1) == labels).tolist()
    [True, True]
    """
    counts = check_vote_counts(counts)
    return counts + discrete_gaussian(sigma, size=counts.shape, rng=rng)


@validate_params(
    {
        "counts": ["array-like"],
        "threshold": [Real],
        "sigma_threshold": [FINITE_POSITIVE],
        "sigma_argmax": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
        "max_answers": [Interval(Integral, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def confident_gnmax(
    counts: ArrayLike,
    threshold: float,
    sigma_threshold: float,
    sigma_argmax: float,
    *,
    rng: np.random.Generator,
    max_answers: int | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.bool_], int]:
    """Confident-GNMax on a batch of queries, in order (Papernot et al. 2018, Alg. 1).

    Query ``i`` is answered when ``max_j counts[i, j] + N_Z(0, sigma1^2) >=
    threshold``, with ``gnmax(counts[i], sigma2)``; otherwise it abstains.
    When ``max_answers`` is given, the run stops right after the query that
    gives the ``max_answers``-th answer: later queries are not processed
    (their threshold noise is never used). Vectorised: the threshold noise of
    the whole batch is drawn at once and the stopping point found with a
    cumulative sum; argmax noise is drawn only for answered queries.

    Parameters
    ----------
    counts : int array-like of shape (n_queries, n_classes)
    threshold : float
        Threshold on the noisy largest count.
    sigma_threshold : float
        ``sigma1`` (> 0): threshold check, sensitivity 1.
    sigma_argmax : float
        ``sigma2`` (> 0): noisy argmax, L2 sensitivity ``sqrt(2)``.
    rng : numpy.random.Generator
    max_answers : int, optional
        Answers still allowed (>= 0); ``None`` for no limit.

    Returns
    -------
    answers : int64 ndarray of shape (n_processed,)
        Class index of each processed query, ``-1`` where it abstained.
    answered : bool ndarray of shape (n_processed,)
    n_processed : int
        Queries processed: ``n_queries`` unless ``max_answers`` ran out.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import confident_gnmax
    >>> counts = [[98, 2], [50, 50], [3, 97], [99, 1]]
    >>> answers, answered, n = confident_gnmax(
    ...     counts, 80, 4.0, 4.0, rng=np.random.default_rng(0), max_answers=2)
    >>> answers.tolist(), answered.tolist(), n
    ([0, -1, 1], [True, False, True], 3)
    """
    counts = check_vote_counts(counts)
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, got nan.")
    n_queries = counts.shape[0]
    if max_answers == 0 or n_queries == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool), 0
    top = counts.max(axis=1)
    noisy_top = top + discrete_gaussian(sigma_threshold, size=n_queries, rng=rng)
    passed = noisy_top >= threshold
    n_processed = n_queries
    if max_answers is not None:
        cumulative = np.cumsum(passed)
        if cumulative[-1] > max_answers:
            # the query that gives the max_answers-th answer is the last one
            n_processed = int(np.searchsorted(cumulative, max_answers)) + 1
            passed = passed[:n_processed]
    answers = np.full(n_processed, -1, dtype=np.int64)
    rows = np.flatnonzero(passed)
    if rows.size:
        answers[rows] = gnmax(counts[rows], sigma_argmax, rng=rng)
    return answers, passed, n_processed


@validate_params(
    {
        "n_teachers": [COUNT],
        "n_classes": [COUNT],
        "sigma_argmax": [FINITE_POSITIVE],
        "error": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def confident_gnmax_threshold(
    n_teachers: int, n_classes: int, sigma_argmax: float, error: float = 0.1
) -> float:
    """The data-independent threshold on the noisy largest count.

    A query whose largest count is ``v`` has a gap to the runner-up of at
    least ``2v - k`` (worst case: every other vote on one class), so its
    noisy argmax returns the plurality with probability at least
    ``1 - (C-1) Phi(-(2v - k) / (sqrt(2) sigma2))`` (union bound over the
    ``C-1`` other classes). The threshold is the ``v`` at which that bound
    equals ``1 - error``:

        threshold = (k + sqrt(2) sigma2 Phi^-1(1 - error/(C-1))) / 2

    It depends only on public numbers (``k``, the class count, ``sigma2``),
    so it costs nothing. A query at the threshold passes the check half the
    time; above ``k`` nothing but noise can pass (``fit`` warns).

    Parameters
    ----------
    n_teachers : int
        ``k``.
    n_classes : int
        ``C`` (>= 2; with one class every answer is that class).
    sigma_argmax : float
        ``sigma2``.
    error : float, default=0.1
        Worst-case error of the noisy argmax at the threshold, in (0, 1).

    Returns
    -------
    threshold : float

    Examples
    --------
    >>> from dpsklearn.mechanisms import confident_gnmax_threshold
    >>> round(confident_gnmax_threshold(1000, 2, 50.0), 1)
    545.3
    """
    sigma_argmax = float(sigma_argmax)
    n_classes = max(int(n_classes), 2)
    z = float(ndtri(1.0 - error / (n_classes - 1)))
    return 0.5 * (int(n_teachers) + math.sqrt(2.0) * sigma_argmax * z)


class ConfidentGNMaxEngine(Engine):
    """The running state of Confident-GNMax on a fitted model.

    Holds the frozen calibration (threshold, ``sigma1``, ``sigma2``,
    ``max_answers``), the noise and the public counters: answers, threshold
    checks failed (abstentions), queries processed.

    Parameters
    ----------
    threshold : float
    sigma_threshold : float
    sigma_argmax : float
    max_answers : int
        The model halts after this many answers.
    noise : NoiseSource
        Its first generator draws every noise.

    Attributes
    ----------
    n_answers : int
    abstention_count : int
        Queries that failed the threshold check.
    n_queries : int
        Queries processed.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import ConfidentGNMaxEngine
    >>> from dpsklearn.noise import NoiseSource
    >>> engine = ConfidentGNMaxEngine(
    ...     80, 4.0, 4.0, max_answers=2, noise=NoiseSource([np.random.default_rng(0)]))
    >>> release = engine.answer("predict", [[98, 2], [50, 50], [3, 97], [99, 1]])
    >>> release.values["label"].tolist(), release.n_done, engine.halted
    ([0, -1, 1], 3, True)
    """

    def __init__(
        self,
        threshold: float,
        sigma_threshold: float,
        sigma_argmax: float,
        max_answers: int,
        noise: NoiseSource,
    ) -> None:
        self.threshold = float(threshold)
        self.sigma_threshold = float(sigma_threshold)
        self.sigma_argmax = float(sigma_argmax)
        self.max_answers = int(max_answers)
        self.noise = noise
        self.n_answers = 0
        self.abstention_count = 0
        self.n_queries = 0

    @property
    def halted(self) -> bool:
        return self.n_answers >= self.max_answers

    @property
    def n_failed_tests(self) -> int:
        return self.abstention_count

    def halt_reason(self) -> str:
        return f"the model halted after max_answers={self.max_answers} answers"

    def get_state(self) -> dict:
        """The serving counters to persist in a ledger (nothing secret here)."""
        return {
            "n_answers": self.n_answers,
            "abstention_count": self.abstention_count,
            "n_queries": self.n_queries,
        }

    def set_state(self, state: dict) -> None:
        """Continue from persisted counters (a copy never gets answers back)."""
        self.n_answers = int(state["n_answers"])
        self.abstention_count = int(state["abstention_count"])
        self.n_queries = int(state["n_queries"])

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        """Process vote counts in order until the answers run out.

        Returns a :class:`Release` with ``"label"`` (class index, ``-1``
        where the query abstained) and ``"abstained"``.
        """
        answers, answered, n_processed = confident_gnmax(
            statistic,
            self.threshold,
            self.sigma_threshold,
            self.sigma_argmax,
            rng=self.noise[0],
            max_answers=self.max_answers - self.n_answers,
        )
        n_answered = int(answered.sum())
        self.n_answers += n_answered
        self.abstention_count += n_processed - n_answered
        self.n_queries += n_processed
        return Release({"label": answers, "abstained": ~answered}, n_processed)

    def __repr__(self):
        return (
            f"ConfidentGNMaxEngine(n_answers={self.n_answers}, "
            f"max_answers={self.max_answers}, abstentions={self.abstention_count})"
        )


class GNMaxEngine(Engine):
    """Releases each query's noisy count vector (GNMax): stateless but for noise."""

    def __init__(self, sigma: float, noise: NoiseSource) -> None:
        self.sigma = float(sigma)
        self.noise = noise

    def answer(self, method: str, statistic: ArrayLike) -> Release:
        noisy = gnmax_noisy_counts(statistic, self.sigma, rng=self.noise[0])
        return Release({"noisy_counts": noisy}, noisy.shape[0])


class GNMaxRelease(Mechanism):
    """GNMax for ``max_queries`` queries: each releases its noisy count vector.

    Each released vector, the vote counts plus ``N_Z(0, sigma^2)`` per class,
    is ``1/sigma^2``-zCDP (L2 sensitivity ``sqrt(2)``); ``sigma`` is the
    smallest that certifies ``max_queries`` of them within ``(epsilon,
    delta)`` (:func:`gnmax_sigma`). ``predict`` is the argmax of a vector
    and ``predict_proba`` its vote shares: both read one release.

    Parameters
    ----------
    calibration : GaussianCalibration
        From :func:`calibrate_confident_gnmax` with ``max_answers =
        max_queries`` and no threshold share (use :meth:`calibrate`).

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMaxRelease
    >>> mech = GNMaxRelease.calibrate(1.0, 1e-5, max_queries=1000)
    >>> round(mech.sigma), mech.calibration.name
    (167, 'gdp')
    """

    n_streams = 1

    def __init__(self, calibration: GaussianCalibration) -> None:
        self.calibration = calibration

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        max_queries: int,
        *,
        calibration: str = "auto",
    ) -> GNMaxRelease:
        """Calibrate ``sigma`` for ``max_queries`` released vectors."""
        return cls(calibrate_gnmax(epsilon, delta, max_queries, calibration))

    @property
    def sigma(self) -> float:
        return self.calibration.sigma_argmax

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        # The m releases as a whole are (epsilon, delta)-DP.
        cal = self.calibration
        return [ApproximateEvent(cal.epsilon, cal.delta, label=label)]

    def engine(self, noise: NoiseSource) -> GNMaxEngine:
        return GNMaxEngine(self.sigma, noise)

    def argmax_noise(self) -> tuple[str, float] | None:
        return ("gaussian", float(self.sigma)) if self.sigma else None

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        cal = self.calibration
        # Each released vector moves two counts by one: two unit releases.
        groups = [(self.sigma, 1, 2 * units)]
        return gaussian_spent(cal.name, cal.delta, units / self.sigma**2, groups)

    def fitted_attributes(self) -> dict[str, Any]:
        # A Gaussian release has no per-query epsilon; a vote-share row reads
        # the same release as a label, so it costs one unit and needs no grid.
        return {
            "sigma_": self.sigma,
            "calibration_": self.calibration.name,
            "epsilon_per_query_": None,
            "proba_cost_": 1,
            "proba_grid_step_": None,
        }


class ConfidentGNMaxRelease(Mechanism):
    """Confident-GNMax: answer only where the noisy top count clears a threshold.

    Papernot et al. (2018), Algorithm 1, with discrete Gaussian noise and
    data-independent accounting of its worst case: all ``max_queries``
    threshold checks (sensitivity 1, ``sigma1``) plus ``max_answers`` noisy
    argmaxes (L2 sensitivity ``sqrt(2)``, ``sigma2``), calibrated by
    :func:`calibrate_confident_gnmax`. The threshold on the noisy top count
    is :func:`confident_gnmax_threshold` of the public ``k``, class count and
    ``sigma2``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import ConfidentGNMaxRelease
    >>> mech = ConfidentGNMaxRelease.calibrate(
    ...     8.0, 1e-5, max_queries=2000, max_answers=2000, n_teachers=1000,
    ...     n_classes=2)
    >>> mech.calibration.name, bool(mech.threshold < 1000)
    ('gdp', True)
    """

    n_streams = 1

    def __init__(self, calibration: GaussianCalibration, threshold: float) -> None:
        self.calibration = calibration
        self.threshold = float(threshold)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        max_queries: int,
        max_answers: int,
        *,
        n_teachers: int,
        n_classes: int,
        calibration: str = "auto",
    ) -> ConfidentGNMaxRelease:
        """Calibrate the noise for the worst case and set the vote threshold."""
        cal = calibrate_confident_gnmax(
            epsilon, delta, max_queries, max_answers, calibration=calibration
        )
        return cls(
            cal, confident_gnmax_threshold(n_teachers, n_classes, cal.sigma_argmax)
        )

    @property
    def composition(self) -> str:  # type: ignore[override]  # a class attribute
        # A model's own accountant composes the Gaussian events as calibrated
        # in RDP or zCDP; a Gaussian-DP calibration certifies the whole
        # (epsilon, delta), which the accountant records as one event.
        name = self.calibration.name
        return name if name in ("rdp", "zcdp") else "basic"

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [
            ApproximateEvent(
                self.calibration.epsilon, self.calibration.delta, label=label
            )
        ]

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """Gaussian events for an accountant that composes them, else the whole.

        An RDP or zCDP accountant records the two Gaussian events themselves
        (discrete Gaussian noise has the continuous one's Renyi curve);
        basic, advanced and PLD composition (whose continuous-Gaussian loss
        curve does not cover discrete noise) record the calibrated
        ``(epsilon, delta)`` of the whole mechanism.
        """
        cal = self.calibration
        sigma_threshold = cast(float, cal.sigma_threshold)  # None only for GNMax
        gaussian: list[PrivacyEvent] = [
            GaussianEvent(sigma_threshold, 1.0, count=cal.max_queries, label=label),
            GaussianEvent(
                cal.sigma_argmax, math.sqrt(2.0), count=cal.max_answers, label=label
            ),
        ]
        whole = self.privacy_events(label)
        return [gaussian, whole] if composition in ("rdp", "zcdp") else [whole]

    def engine(self, noise: NoiseSource) -> ConfidentGNMaxEngine:
        cal = self.calibration
        return ConfidentGNMaxEngine(
            self.threshold,
            cast(float, cal.sigma_threshold),  # None only for GNMax
            cal.sigma_argmax,
            cal.max_answers,
            noise,
        )

    def argmax_noise(self) -> tuple[str, float] | None:
        sigma = self.calibration.sigma_argmax
        return ("gaussian", float(sigma)) if sigma else None

    def spent(  # type: ignore[override]  # the engine it made
        self, units: int, engine: ConfidentGNMaxEngine
    ) -> tuple[float, float]:
        cal = self.calibration
        sigma_threshold = cast(float, cal.sigma_threshold)  # None only for GNMax
        rho = engine.n_queries / (2.0 * sigma_threshold**2)
        rho += engine.n_answers / cal.sigma_argmax**2
        groups = [
            (sigma_threshold, 1, engine.n_queries),
            (cal.sigma_argmax, 1, 2 * engine.n_answers),
        ]
        return gaussian_spent(cal.name, cal.delta, rho, groups)

    def fitted_attributes(self) -> dict[str, Any]:
        cal = self.calibration
        return {
            "calibration_": cal.name,
            "threshold_": self.threshold,
            "sigma_threshold_": cal.sigma_threshold,
            "sigma_argmax_": cal.sigma_argmax,
            "max_answers_": cal.max_answers,
            "rho_": cal.rho,
        }
