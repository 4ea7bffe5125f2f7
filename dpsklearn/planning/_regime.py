"""The regime guide: which private mechanism answers, and how well.

Every dpsklearn teacher-ensemble mechanism turns a query's vote histogram
into an answer or an abstention, and how often it answers, and how often it
is right, depends only on the distribution of those histograms, on the
budget and on ``max_queries``. :func:`predict_regime` takes such a
distribution and predicts, for each mechanism and calibration, the expected
fraction of ``max_queries`` answered and the expected accuracy, without
spending anything:

* ``"sparse_vector"`` (:class:`~dpsklearn.SubsampleAggregateClassifier`,
  ``fallback="abstain"``; calibrations ``laplace`` and ``gaussian``, the
  ones ``SparseVector(noise=...)`` offers): the sparse vector stability test
  on ``dist = max(0, ceil(gap/2) - 1)``. The paper's own calibrations are
  reference implementations in the tests, not rows here.
* ``"private_prediction"`` (:class:`~dpsklearn.PrivatePredictionClassifier`;
  calibrations ``basic``, ``zcdp``, ``rdp``, ``kov``, and ``bounded_range``
  when ``calibration="auto"`` takes it): the exponential mechanism on the
  votes at ``epsilon_per_query``; it answers every query.
* ``"confident_gnmax"`` (``SubsampleAggregateClassifier(mechanism=
  "confident_gnmax")``, one row per ``max_answers``): the noisy threshold
  check on the largest count, then the Gaussian noisy argmax.
* ``"gnmax"``: the Gaussian noisy argmax on every query at
  :func:`~dpsklearn.mechanisms.gnmax_sigma`.

The vote histograms come from one of two places:

1. **Public labelled data** (no privacy cost): :func:`public_vote_counts`
   trains ``k`` teachers on disjoint shards of data the user may look at
   (a public sample like the private data), and counts their votes on held
   out rows whose labels are known, so the prediction includes accuracy
   against the truth.
2. **The private teachers** on a sample of public queries, through
   :func:`private_margin_histogram`: a differentially private histogram of
   the vote margins, charged to an accountant at a stated ``epsilon``.
   Accuracy is then *agreement with the teachers' majority vote* (the truth
   of the public queries is unknown).

Model of the query stream: the ``max_queries`` queries are drawn i.i.d.
from the given distribution. Under that model the Confident-GNMax and
exponential-mechanism figures are exact up to the continuous approximation
of the discrete Gaussian; the sparse vector figures use a renewal argument
(one threshold draw per cycle, a geometric number of passes within it)
averaged over simulated cycle sequences with a fixed seed, with a quantile
quadrature over the threshold noise: within a few percent of the estimator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr
from sklearn.base import BaseEstimator

from .._param_validation import HasMethods, Interval
from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    OPEN_UNIT,
    validate_params,
)
from ..accounting import per_release_epsilon
from ..mechanisms import (
    HistogramRelease,
    calibrate_confident_gnmax,
    confident_gnmax_threshold,
    gnmax_sigma,
    sparse_vector_candidates,
    vote_counts,
)
from ..noise import NoiseSource, make_noise_generators
from ..teachers import (
    fit_teachers,
    partition_indices,
    teacher_outputs,
    teacher_seeds,
)
from ._outcomes import (
    argmax_win_probability,
    expected_min_binomial,
    exponential_win_probability,
    sparse_vector_outcome,
)

__all__ = [
    "MarginHistogram",
    "predict_regime",
    "private_margin_histogram",
    "public_vote_counts",
]

MECHANISMS = ("sparse_vector", "private_prediction", "confident_gnmax", "gnmax")
_PER_QUERY_CALIBRATIONS = ("basic", "zcdp", "rdp", "kov")


# -- inputs ------------------------------------------------------------------
@dataclass(frozen=True)
class MarginHistogram:
    """A differentially private distribution of teacher vote margins.

    Attributes
    ----------
    n_estimators : int
        ``k``, the number of teachers.
    gaps : ndarray of shape (n_bins,)
        Bin centres, as vote gaps ``top - second`` (0 to ``k``).
    weights : ndarray of shape (n_bins,)
        Noisy fraction of queries per bin, clipped at 0 and normalised
        (post-processing).
    epsilon : float
        What the release cost (charged to the accountant).
    noise_scale : float
        Discrete Laplace scale per bin, in fractions of the queries.
    n_queries : int
        Public queries the histogram was built on (public).
    """

    n_estimators: int
    gaps: np.ndarray
    weights: np.ndarray
    epsilon: float
    noise_scale: float
    n_queries: int

    def vote_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Binary vote counts ``(top, second)`` per bin, and the bin weights.

        Only the gap is released, so each bin is read as a two-way split
        ``top = (k + gap) / 2`` (rounded), ``second = k - top``; for more
        than two classes that overstates the top count slightly.
        """
        k = self.n_estimators
        top = np.clip(np.rint((k + self.gaps) / 2.0), 0, k).astype(np.int64)
        return np.column_stack([top, k - top]), self.weights


def _check_counts(counts: ArrayLike) -> np.ndarray:
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[0] == 0 or counts.shape[1] < 2:
        raise ValueError(
            "counts must be a 2-D array of vote counts (n_queries >= 1, "
            f"n_classes >= 2), got shape {counts.shape}."
        )
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError("counts must be finite, non-negative vote counts.")
    if np.any(counts != np.round(counts)):
        raise ValueError("counts must be integer vote counts.")
    counts = counts.astype(np.int64)
    totals = counts.sum(axis=1)
    if np.any(totals != totals[0]) or totals[0] < 1:
        raise ValueError(
            "every row of counts must sum to the same number of teachers k >= 1."
        )
    return counts


def _top_two(counts):
    ordered = np.sort(counts, axis=1)
    return ordered[:, -1], ordered[:, -2]


# -- per-query probabilities -------------------------------------------------
# -- the guide ---------------------------------------------------------------
@validate_params(
    {
        "counts": ["array-like", MarginHistogram],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_queries": [COUNT],
        "y_true": ["array-like", None],
        "sample_weight": ["array-like", None],
        "max_unstable": [COUNT],
        "max_answers": ["array-like", Integral, None],
        "mechanisms": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def predict_regime(
    counts: ArrayLike | MarginHistogram,
    *,
    epsilon: float,
    delta: float,
    max_queries: int,
    y_true: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    max_unstable: int = 100,
    max_answers: ArrayLike | None = None,
    mechanisms: Sequence[str] = MECHANISMS,
) -> list[dict[str, Any]]:
    """Predict the answered fraction and accuracy of each mechanism and calibration.

    Parameters
    ----------
    counts : int array-like of shape (n_samples, n_classes) or MarginHistogram
        Vote histograms of ``k`` teachers on a sample of queries like the
        ones to be asked (from :func:`public_vote_counts`, or any fitted
        ensemble evaluated on public data), or the private
        :func:`private_margin_histogram`.
    epsilon : float
        Total budget of the model that would be fitted.
    delta : float
        Total delta, in (0, 1).
    max_queries : int
        ``m``: queries to be asked (the ``max_queries`` of the estimators).
    y_true : int array-like of shape (n_samples,), optional
        True class index of each sample (column of ``counts``). Without it
        (and always for a histogram) accuracy means agreement with the
        teachers' majority vote.
    sample_weight : array-like of shape (n_samples,), optional
        Weights of the samples (the histogram supplies its own).
    max_unstable : int, default=100
        ``T`` of the sparse vector mechanism.
    max_answers : int or sequence of int, optional
        Confident-GNMax answer limits to evaluate; default
        ``max_queries`` and its halves down to ``max_queries / 8``.
    mechanisms : sequence of str, default=all four
        A subset of ``("sparse_vector", "private_prediction",
        "confident_gnmax", "gnmax")``.

    Returns
    -------
    rows : list of dict
        One per mechanism and calibration (and ``max_answers``), with
        ``mechanism``, ``calibration``, ``answered`` (expected fraction of
        the ``max_queries`` queries answered), ``accuracy_answered`` (of the
        answered ones), ``accuracy_all`` (abstentions counted wrong),
        ``accuracy_of`` (``"truth"`` or ``"majority"``), ``admissible``
        and the noise parameters. Inadmissible calibrations (``gaussian``
        where its ``log K`` term alone exceeds the budget) are listed with
        ``admissible=False`` and no figures.

    Notes
    -----
    The queries are modelled as i.i.d. draws from the sample. The sparse
    vector mechanism is modelled with ``fallback="abstain"`` (the
    ``noisy_max`` fallback answers the failed queries with the exponential
    mechanism instead). Computing the guide from data that the user may see
    costs nothing; from private teachers, use
    :func:`private_margin_histogram` first.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.planning import predict_regime
    >>> counts = np.tile([[1000, 0]], (50, 1))  # 1,000 unanimous teachers
    >>> rows = predict_regime(counts, epsilon=1.0, delta=1e-5, max_queries=1000,
    ...                       max_answers=1000)
    >>> for row in rows:
    ...     print(row["mechanism"], row["calibration"], round(row["answered"], 2),
    ...           round(row["accuracy_answered"], 3))
    sparse_vector laplace 0.0 1.0
    sparse_vector gaussian 0.0 1.0
    private_prediction basic 1.0 0.622
    private_prediction zcdp 1.0 0.998
    private_prediction rdp 1.0 1.0
    private_prediction kov 1.0 0.986
    private_prediction bounded_range 1.0 1.0
    confident_gnmax gdp 0.96 0.999
    gnmax gdp 1.0 1.0

    Unanimous votes of 1,000 teachers: the stability test needs a distance
    above its threshold (about 2,100 votes at ``T = 100``), so it answers
    nothing; the per-query mechanisms answer nearly everything.
    """
    epsilon, delta = float(epsilon), float(delta)
    m, cutoff = int(max_queries), int(max_unstable)
    unknown = set(mechanisms) - set(MECHANISMS)
    if unknown or not len(mechanisms):
        raise ValueError(
            f"mechanisms must be a non-empty subset of {MECHANISMS}, got "
            f"{list(mechanisms)!r}."
        )
    if isinstance(counts, MarginHistogram):
        if y_true is not None or sample_weight is not None:
            raise ValueError(
                "y_true and sample_weight do not apply to a MarginHistogram."
            )
        counts, weights = counts.vote_counts()
        y_true = None
    else:
        counts = _check_counts(counts)
        weights = (
            np.ones(len(counts))
            if sample_weight is None
            else np.asarray(sample_weight, dtype=float)
        )
        if weights.shape != (len(counts),) or np.any(weights < 0):
            raise ValueError(
                "sample_weight must be non-negative, one per row of counts."
            )
    if weights.sum() <= 0:
        raise ValueError("the sample has no weight.")
    weights = weights / weights.sum()
    n_classes = counts.shape[1]
    k = int(counts[0].sum())
    majority = np.argmax(counts, axis=1)
    if y_true is None:
        target, accuracy_of = majority, "majority"
    else:
        target = np.asarray(y_true)
        if (
            target.shape != (len(counts),)
            or target.dtype.kind not in "iu"
            or np.any(target < 0)
            or np.any(target >= n_classes)
        ):
            raise ValueError(
                "y_true must hold one class index (a column of counts) per row."
            )
        accuracy_of = "truth"
    top, second = _top_two(counts)
    gap = top - second
    majority_correct = (majority == target).astype(float)
    if max_answers is None:
        answer_limits = sorted({max(1, m // d) for d in (1, 2, 4, 8)}, reverse=True)
    else:
        limits = np.atleast_1d(max_answers)
        answer_limits = [int(a) for a in limits]
        if any(not 1 <= a <= m for a in answer_limits):
            raise ValueError(
                f"max_answers must be integers in [1, max_queries={m}], got "
                f"{list(limits)!r}."
            )

    rows = []

    def add(mechanism, calibration, answered, accuracy, **extra):
        rows.append(
            {
                "mechanism": mechanism,
                "calibration": calibration,
                "admissible": answered is not None,
                "answered": answered,
                "accuracy_answered": accuracy,
                "accuracy_all": None if answered is None else answered * accuracy,
                "accuracy_of": accuracy_of,
                "epsilon": epsilon,
                "delta": delta,
                "max_queries": m,
                "n_estimators": k,
                **extra,
            }
        )

    if "sparse_vector" in mechanisms:
        candidates = sparse_vector_candidates(epsilon, delta, cutoff, max_queries=m)
        for name, cal in candidates.items():
            if cal is None:
                add("sparse_vector", name, None, None, max_unstable=cutoff)
                continue
            answered, accuracy = sparse_vector_outcome(
                gap, majority_correct, weights, cal, m
            )
            add(
                "sparse_vector",
                name,
                answered,
                accuracy,
                max_unstable=cutoff,
                threshold=cal.threshold,
                noise_scale=cal.noise_scale,
                query_noise_scale=cal.query_scale,
            )
    if "private_prediction" in mechanisms:
        splits = {}
        for name in _PER_QUERY_CALIBRATIONS:
            if name != "basic" and delta == 0:
                continue  # zCDP, RDP and optimal composition need delta > 0
            splits[name] = per_release_epsilon(epsilon, delta, m, calibration=name)[0]
        # What "auto" takes, when it is the exact bounded-range game (computed
        # only where that is affordable).
        eps_q, name = per_release_epsilon(epsilon, delta, m)
        splits.setdefault(name, eps_q)
        for name, eps_q in splits.items():
            p = exponential_win_probability(counts, target, eps_q)
            add(
                "private_prediction",
                name,
                1.0,
                float(weights @ p),
                epsilon_per_query=eps_q,
            )
    if "confident_gnmax" in mechanisms:
        for limit in answer_limits:
            cal = calibrate_confident_gnmax(epsilon, delta, m, limit)
            threshold = confident_gnmax_threshold(k, n_classes, cal.sigma_argmax)
            # top + N_Z(0, s1^2) >= threshold, with a continuity correction.
            need = np.ceil(threshold - top) - 0.5
            p_pass = ndtr(-need / cal.sigma_threshold)
            p_mean = float(weights @ p_pass)
            answered = expected_min_binomial(m, p_mean, limit) / m
            p_right = argmax_win_probability(counts, target, cal.sigma_argmax)
            accuracy = (
                float(weights @ (p_pass * p_right) / p_mean) if p_mean > 0 else math.nan
            )
            add(
                "confident_gnmax",
                cal.name,
                answered,
                accuracy,
                max_answers=limit,
                threshold=threshold,
                sigma_threshold=cal.sigma_threshold,
                sigma_argmax=cal.sigma_argmax,
            )
    if "gnmax" in mechanisms:
        sigma, name = gnmax_sigma(epsilon, delta, m)
        p = argmax_win_probability(counts, target, sigma)
        add("gnmax", name, 1.0, float(weights @ p), sigma_argmax=sigma)
    return rows


# -- where the margins come from ---------------------------------------------
@validate_params(
    {
        "estimator": [HasMethods(["fit", "predict"])],
        "X": ["array-like"],
        "y": ["array-like"],
        "n_estimators": [COUNT],
        "query_fraction": [OPEN_UNIT],
        "classes": ["array-like", None],
        # An integer seed: it seeds the query split and the shards
        # separately, so a shared RandomState object would not do.
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def public_vote_counts(
    estimator: BaseEstimator,
    X: ArrayLike,
    y: ArrayLike,
    *,
    n_estimators: int,
    query_fraction: float = 0.25,
    classes: ArrayLike | None = None,
    random_state: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Vote counts of teachers trained on public labelled data (no privacy cost).

    Holds out ``query_fraction`` of the rows as queries, trains
    ``n_estimators`` clones of ``estimator`` on disjoint shards of the rest
    (as the private ensembles do), and counts their votes on the queries.
    Use data the user may look at (public data from the same population);
    for a faithful guide, give the teachers shards of the size they will
    have on the private data (``n_private / k`` rows).

    Parameters
    ----------
    estimator : classifier
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    n_estimators : int
    query_fraction : float, default=0.25
    classes : array-like, optional
        The label set (default: the labels in ``y``; they are public here).
    random_state : int, optional
        Seed of the query split and of the shards (an integer or ``None``).

    Returns
    -------
    counts : int ndarray of shape (n_queries, n_classes)
    y_true : int ndarray of shape (n_queries,)
        Class index of each query, for :func:`predict_regime`'s ``y_true``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from dpsklearn.planning import public_vote_counts
    >>> X, y = make_classification(n_samples=1000, random_state=0)
    >>> counts, y_true = public_vote_counts(
    ...     DecisionTreeClassifier(max_depth=2), X, y, n_estimators=30,
    ...     random_state=0)
    >>> counts.shape, int(counts[0].sum())
    ((250, 2), 30)
    """
    X = np.asarray(X)
    y = np.asarray(y)
    rng = np.random.RandomState(random_state)
    order = rng.permutation(len(y))
    n_queries = max(1, int(round(query_fraction * len(y))))
    queries, train = order[:n_queries], order[n_queries:]
    labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
    # The teachers of a private ensemble, without any mechanism: the data
    # is public here and only its votes are counted.
    shard_rng = np.random.RandomState(random_state)
    teachers = fit_teachers(
        estimator,
        X[train],
        np.searchsorted(labels, y[train]).astype(np.int64),
        partition_indices(len(train), int(n_estimators), shard_rng),
        teacher_seeds(shard_rng, int(n_estimators)),
        n_classes=len(labels),
    )
    counts = np.empty((n_queries, len(labels)), dtype=np.int64)
    for rows, predictions in teacher_outputs(teachers, X[queries], "predict"):
        counts[rows] = vote_counts(predictions.astype(np.int64), len(labels))
    y_true = np.searchsorted(labels, y[queries])
    return counts, y_true.astype(np.int64)


@validate_params(
    {
        "model": [HasMethods(["vote_counts"])],
        "X": ["array-like"],
        "epsilon": [FINITE_POSITIVE],
        "accountant": [HasMethods(["spend_events"])],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "noise_random_state": [Integral, None],
    },
    prefer_skip_nested_validation=True,
)
def private_margin_histogram(
    model: BaseEstimator,
    X: ArrayLike,
    *,
    epsilon: float,
    accountant: Any,
    n_bins: int = 11,
    noise_random_state: int | None = None,
) -> MarginHistogram:
    """A differentially private histogram of the vote margins of private teachers.

    For each public query row the fitted ensemble's vote gap ``g = top -
    second`` (0 to ``k``) is placed on ``n_bins`` evenly spaced centres over
    ``[0, k]`` by linear interpolation (a soft histogram); the mean over the
    rows is released with grid Laplace noise (:func:`dpsklearn.noise.
    grid_laplace`) and ``epsilon`` is charged to ``accountant``.

    Privacy (replace-one): replacing one training record changes one
    teacher, which moves one vote and each row's gap by at most 2, i.e. by
    ``2/k`` of the range. Linear interpolation moves at most ``2 (2/k) /
    h`` of a row's unit mass in L1, with bin spacing ``h = 1/(n_bins-1)``;
    every row can move, so the mean has L1 sensitivity ``4 (n_bins - 1) /
    k``, whatever the number of rows. The noise per bin is therefore
    about ``4 (n_bins - 1) / (k epsilon)`` in fractions of the queries:
    useful for many teachers and few bins (k = 1,000, 11 bins and epsilon
    = 0.5 give about 0.08 per bin). The query rows are public; the released
    histogram, clipped at 0 and normalised, is post-processing.

    Parameters
    ----------
    model : fitted SubsampleAggregateClassifier or PrivatePredictionClassifier
        The private ensemble (its own budget is not touched).
    X : array-like of shape (n_queries, n_features)
        Public query rows, like those the model will be asked.
    epsilon : float
        Price of the release, charged to ``accountant`` (kind ``"laplace"``).
    accountant : PrivacyAccountant
        The budget that pays (for example a shared accountant with room
        left beside the model's release). It raises
        :class:`~dpsklearn.BudgetExhaustedError`, and nothing is released,
        when the budget is short.
    n_bins : int, default=11
        Bin centres over ``[0, k]`` (>= 2).
    noise_random_state : int, optional
        Seeds the noise, for tests only.

    Returns
    -------
    histogram : MarginHistogram
        Pass it to :func:`predict_regime`.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import PrivacyAccountant, SubsampleAggregateClassifier
    >>> from dpsklearn.planning import private_margin_histogram
    >>> X, y = make_classification(n_samples=4000, random_state=0)
    >>> model = SubsampleAggregateClassifier(
    ...     n_estimators=200, classes=[0, 1], random_state=0).fit(X[:3000], y[:3000])
    >>> budget = PrivacyAccountant(epsilon=0.5)
    >>> hist = private_margin_histogram(model, X[3000:], epsilon=0.5,
    ...                                 accountant=budget, noise_random_state=0)
    >>> len(hist.gaps), round(float(hist.weights.sum()), 6), budget.spent_basic
    (11, 1.0, (0.5, 0.0))
    """
    counts = model.vote_counts(X)
    k = int(counts[0].sum())
    top, second = _top_two(counts) if counts.shape[1] > 1 else (counts[:, 0], 0)
    position = (top - second) / k * (n_bins - 1)  # in bin units, 0..n_bins-1
    left = np.minimum(np.floor(position).astype(np.int64), n_bins - 2)
    frac = position - left
    soft: np.ndarray = np.bincount(left, weights=1.0 - frac, minlength=n_bins)
    soft += np.bincount(left + 1, weights=frac, minlength=n_bins)
    soft /= counts.shape[0]
    release = HistogramRelease(epsilon, 4.0 * (n_bins - 1) / k)
    # Charge first: a short budget raises before anything is released.
    accountant.spend_events(release.privacy_events("private_margin_histogram"))
    noise = NoiseSource(*make_noise_generators(noise_random_state, 1))
    noisy = release.release(soft, noise)
    total = noisy.sum()
    weights = noisy / total if total > 0 else np.full(n_bins, 1.0 / n_bins)
    return MarginHistogram(
        n_estimators=k,
        gaps=np.linspace(0.0, k, n_bins),
        weights=weights,
        epsilon=epsilon,
        noise_scale=release.sensitivity / epsilon,
        n_queries=int(counts.shape[0]),
    )
