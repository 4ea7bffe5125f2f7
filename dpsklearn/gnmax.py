"""GNMax and Confident-GNMax: Gaussian noisy argmax on teacher votes (SPEC 3.1, 3.3).

Papernot, Song, Mironov, Raghunathan, Talwar and Erlingsson (2018),
"Scalable private learning with PATE", Section 4:

* **GNMax** answers a query with ``argmax_j(n_j + N(0, sigma^2))``, the
  noisy argmax of its vote counts ``n_j``.
* **Confident-GNMax** (their Algorithm 1) first checks whether the teachers
  agree: only if ``max_j n_j + N(0, sigma1^2) >= threshold`` is the query
  answered, by GNMax with ``sigma2``; otherwise it abstains.

Privacy under replace-one (SPEC 1, 3.1): one record changes one teacher,
which moves one vote from one class to another, so the largest count has
sensitivity 1 and the count vector L2 sensitivity ``sqrt(2)``. Both steps
are Gaussian mechanisms on integer counts; dpsklearn adds *discrete*
Gaussian noise (:func:`dpsklearn.noise.discrete_gaussian`, Canonne, Kamath
and Steinke 2020), which has the same Renyi-DP curve as the continuous
Gaussian and leaves no floating-point low-order bits to read. Ties of the
noisy integer counts go to the lowest class index (a fixed rule applied to
the noisy counts: post-processing).

This module holds the mechanism as functions vectorised over queries, and
:class:`ConfidentGNMaxEngine`, the serving state of a fitted model that runs
it (answer counter, halting). The noise scales are calibrated at ``fit`` by
:func:`dpsklearn.calibration.calibrate_confident_gnmax` for the worst case:
every threshold check charged, plus ``max_answers`` noisy argmaxes.
Accounting is data-independent, so PATE's data-dependent savings (which need
smooth sensitivity to release their epsilon) are not claimed.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from scipy.special import ndtr, ndtri

from .noise import discrete_gaussian

__all__ = [
    "ConfidentGNMaxEngine",
    "confident_gnmax",
    "confident_gnmax_outcome",
    "confident_gnmax_threshold",
    "gnmax",
    "gnmax_noisy_counts",
]


def _check_counts(counts):
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


def _check_sigma(sigma, name):
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.number)):
        raise ValueError(f"{name} must be a finite number > 0, got {sigma!r}.")
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {sigma!r}.")
    return sigma


def gnmax(counts, sigma, *, rng):
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
    >>> from dpsklearn.gnmax import gnmax
    >>> gnmax([[90, 10], [5, 95]], 5.0, rng=np.random.default_rng(0)).tolist()
    [0, 1]
    """
    noisy = gnmax_noisy_counts(counts, sigma, rng=rng)
    return np.argmax(noisy, axis=1).astype(np.int64)


def gnmax_noisy_counts(counts, sigma, *, rng):
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
    >>> from dpsklearn.gnmax import gnmax, gnmax_noisy_counts
    >>> counts = [[90, 10], [5, 95]]
    >>> noisy = gnmax_noisy_counts(counts, 5.0, rng=np.random.default_rng(0))
    >>> noisy.shape, noisy.dtype.name
    ((2, 2), 'int64')
    >>> labels = gnmax(counts, 5.0, rng=np.random.default_rng(0))  # same noise
    >>> (noisy.argmax(axis=1) == labels).tolist()
    [True, True]
    """
    counts = _check_counts(counts)
    sigma = _check_sigma(sigma, "sigma")
    return counts + discrete_gaussian(sigma, size=counts.shape, rng=rng)


def confident_gnmax(
    counts, threshold, sigma_threshold, sigma_argmax, *, rng, max_answers=None
):
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
    >>> from dpsklearn.gnmax import confident_gnmax
    >>> counts = [[98, 2], [50, 50], [3, 97], [99, 1]]
    >>> answers, answered, n = confident_gnmax(
    ...     counts, 80, 4.0, 4.0, rng=np.random.default_rng(0), max_answers=2)
    >>> answers.tolist(), answered.tolist(), n
    ([0, -1, 1], [True, False, True], 3)
    """
    counts = _check_counts(counts)
    sigma_threshold = _check_sigma(sigma_threshold, "sigma_threshold")
    sigma_argmax = _check_sigma(sigma_argmax, "sigma_argmax")
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, got nan.")
    if max_answers is not None:
        if isinstance(max_answers, bool) or not isinstance(max_answers, Integral):
            raise ValueError(
                f"max_answers must be None or an integer >= 0, got {max_answers!r}."
            )
        if max_answers < 0:
            raise ValueError(
                f"max_answers must be None or an integer >= 0, got {max_answers!r}."
            )
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


def confident_gnmax_threshold(n_teachers, n_classes, sigma_argmax, error=0.1):
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
    >>> from dpsklearn.gnmax import confident_gnmax_threshold
    >>> round(confident_gnmax_threshold(1000, 2, 50.0), 1)
    545.3
    """
    if not 0.0 < error < 1.0:
        raise ValueError(f"error must be in (0, 1), got {error!r}.")
    sigma_argmax = _check_sigma(sigma_argmax, "sigma_argmax")
    n_classes = max(int(n_classes), 2)
    z = float(ndtri(1.0 - error / (n_classes - 1)))
    return 0.5 * (int(n_teachers) + math.sqrt(2.0) * sigma_argmax * z)


class ConfidentGNMaxEngine:
    """The running state of Confident-GNMax on a fitted model.

    Holds the frozen calibration (threshold, ``sigma1``, ``sigma2``,
    ``max_answers``) and the counters; the noise generator is passed to
    :meth:`run` (it lives in the model's serving state, which reseeds it on
    copies). Counters are public: answers, abstentions, queries processed.

    Parameters
    ----------
    threshold : float
    sigma_threshold : float
    sigma_argmax : float
    max_answers : int
        The model halts after this many answers.

    Attributes
    ----------
    n_answers : int
    abstention_count : int
        Queries that failed the threshold check.
    n_queries : int
        Queries processed.
    halted : bool
        ``n_answers == max_answers``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.gnmax import ConfidentGNMaxEngine
    >>> engine = ConfidentGNMaxEngine(80, 4.0, 4.0, max_answers=2)
    >>> rng = np.random.default_rng(0)
    >>> answers, answered, n = engine.run([[98, 2], [50, 50], [3, 97], [99, 1]], rng)
    >>> answers.tolist(), n, engine.halted, engine.abstention_count
    ([0, -1, 1], 3, True, 1)
    """

    def __init__(self, threshold, sigma_threshold, sigma_argmax, max_answers):
        self.threshold = float(threshold)
        self.sigma_threshold = _check_sigma(sigma_threshold, "sigma_threshold")
        self.sigma_argmax = _check_sigma(sigma_argmax, "sigma_argmax")
        if (
            isinstance(max_answers, bool)
            or not isinstance(max_answers, Integral)
            or max_answers < 1
        ):
            raise ValueError(
                f"max_answers must be an integer >= 1, got {max_answers!r}."
            )
        self.max_answers = int(max_answers)
        self.n_answers = 0
        self.abstention_count = 0
        self.n_queries = 0

    @property
    def halted(self):
        return self.n_answers >= self.max_answers

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

    def run(self, counts, rng):
        """Process queries in order until the answers run out.

        Parameters
        ----------
        counts : int array-like of shape (n_queries, n_classes)
        rng : numpy.random.Generator

        Returns
        -------
        answers, answered, n_processed
            As :func:`confident_gnmax`.
        """
        answers, answered, n_processed = confident_gnmax(
            counts,
            self.threshold,
            self.sigma_threshold,
            self.sigma_argmax,
            rng=rng,
            max_answers=self.max_answers - self.n_answers,
        )
        n_answered = int(answered.sum())
        self.n_answers += n_answered
        self.abstention_count += n_processed - n_answered
        self.n_queries += n_processed
        return answers, answered, n_processed

    def __repr__(self):
        return (
            f"ConfidentGNMaxEngine(n_answers={self.n_answers}, "
            f"max_answers={self.max_answers}, abstentions={self.abstention_count})"
        )


# --------------------------------------------------------------------------
# Expected outcome from vote histograms (issue 7, item 4: the regime guide)
# --------------------------------------------------------------------------


def _discrete_gaussian_cdf_table(sigma):
    """``(offset, cdf)``: ``P(Z <= z) = cdf[z + offset]`` for ``|z| <= offset``."""
    half = int(math.ceil(14.0 * sigma)) + 2
    support = np.arange(-half, half + 1, dtype=np.float64)
    log_w = -(support**2) / (2.0 * sigma * sigma)
    pmf = np.exp(log_w - log_w.max())
    pmf /= pmf.sum()
    return half, np.cumsum(pmf), pmf


def _tail_at_least(values, sigma):
    """``P(Z >= v)`` for ``Z ~ N_Z(0, sigma^2)`` and real ``v`` (vectorised)."""
    half, cdf, _ = _discrete_gaussian_cdf_table(sigma)
    # Z >= v  <=>  Z >= ceil(v);  P(Z >= n) = 1 - cdf[n - 1]
    n = np.ceil(np.asarray(values, dtype=np.float64)) - 1.0
    index = np.clip(n + half, -1, 2 * half).astype(np.int64)
    below = np.where(index < 0, 0.0, cdf[np.maximum(index, 0)])
    return 1.0 - below


def _argmax_win_probability(counts, target, sigma):
    """``P(argmax(counts + noise) = target)`` per row.

    Two classes: exact for the discrete Gaussian (ties go to the lower index).
    More classes: the continuous Gaussian, by Gauss-Hermite quadrature over
    the target's noise (an approximation; ties have probability 0 there).
    """
    rows = np.arange(counts.shape[0])
    n_classes = counts.shape[1]
    if n_classes == 1:
        return np.ones(counts.shape[0])
    if n_classes == 2:
        half, _, pmf = _discrete_gaussian_cdf_table(sigma)
        diff_pmf = np.convolve(pmf, pmf)  # Z_other - Z_target, support +-2 half
        diff_cdf = np.cumsum(diff_pmf)
        other = 1 - target
        gap = counts[rows, target] - counts[rows, other]  # target wins iff D <= gap
        # (or D == gap exactly and target is the lower index)
        strict = np.where(target < other, gap, gap - 1)
        index = np.clip(strict + 2 * half, -1, 4 * half)
        return np.where(index < 0, 0.0, diff_cdf[np.maximum(index, 0)])
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    own = counts[rows, target].astype(np.float64)
    others = np.delete(
        counts.astype(np.float64).reshape(-1), rows * n_classes + target
    ).reshape(counts.shape[0], n_classes - 1)
    # P(win) = E_z prod_i Phi((own - other_i) / sigma + z)
    shifted = (own[:, None] - others)[:, :, None] / sigma + nodes[None, None, :]
    return np.prod(ndtr(shifted), axis=1) @ weights


def confident_gnmax_outcome(
    counts, threshold, sigma_threshold, sigma_argmax, *, max_answers=None, labels=None
):
    """Expected answered fraction and accuracy of Confident-GNMax on vote histograms.

    For a sequence of ``m`` queries with known vote counts (for instance from
    teachers trained on public labelled data, or a private histogram of
    margins), without running the mechanism: query ``i`` passes the
    threshold check with probability ``p_i = P(max_j n_ij + N_Z(0, sigma1^2)
    >= threshold)`` (exact), and the noisy argmax returns the class ``y_i``
    (``labels``, default the plurality) with probability ``q_i`` (exact for
    two classes, Gaussian quadrature otherwise). With ``max_answers = A`` the
    model halts after ``A`` answers, so query ``i`` is answered only if fewer
    than ``A`` of the queries before it passed; that probability is taken from
    a normal approximation of the number of earlier passes
    (``P(S_{i-1} <= A - 1)``, continuity-corrected).

    Parameters
    ----------
    counts : int array-like of shape (n_queries, n_classes)
    threshold, sigma_threshold, sigma_argmax : float
        As fitted (``threshold_``, ``sigma_threshold_``, ``sigma_argmax_``).
    max_answers : int, optional
    labels : int array-like of shape (n_queries,), optional
        Class indices counted as correct; default the plurality vote.

    Returns
    -------
    outcome : dict
        ``answered_fraction``, ``accuracy_answered`` (expected correct /
        expected answered), ``accuracy_all`` (abstentions count as wrong) and
        ``expected_answers``.

    Examples
    --------
    >>> from dpsklearn.gnmax import confident_gnmax_outcome
    >>> out = confident_gnmax_outcome([[95, 5], [50, 50]], 80, 5.0, 5.0)
    >>> round(out["answered_fraction"], 3), round(out["accuracy_answered"], 3)
    (0.5, 1.0)
    """
    counts = _check_counts(counts)
    sigma_threshold = _check_sigma(sigma_threshold, "sigma_threshold")
    sigma_argmax = _check_sigma(sigma_argmax, "sigma_argmax")
    n_queries = counts.shape[0]
    if n_queries == 0:
        raise ValueError("counts must hold at least one query.")
    target = (
        np.argmax(counts, axis=1)
        if labels is None
        else np.asarray(labels, dtype=np.int64)
    )
    if target.shape != (n_queries,) or np.any(target < 0) or np.any(
        target >= counts.shape[1]
    ):
        raise ValueError("labels must be class indices, one per query.")
    p_pass = _tail_at_least(float(threshold) - counts.max(axis=1), sigma_threshold)
    p_correct = _argmax_win_probability(counts, target, sigma_argmax)
    if max_answers is None:
        reach = np.ones(n_queries)
    else:
        earlier = np.r_[0.0, np.cumsum(p_pass)[:-1]]
        spread = np.sqrt(np.r_[0.0, np.cumsum(p_pass * (1 - p_pass))[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (max_answers - 0.5 - earlier) / spread
        reach = np.where(spread > 0, ndtr(z), (earlier <= max_answers - 1) * 1.0)
    answered = p_pass * reach
    expected_answers = float(answered.sum())
    expected_correct = float((answered * p_correct).sum())
    return {
        "answered_fraction": expected_answers / n_queries,
        "accuracy_answered": (
            expected_correct / expected_answers if expected_answers > 0 else math.nan
        ),
        "accuracy_all": expected_correct / n_queries,
        "expected_answers": expected_answers,
    }
