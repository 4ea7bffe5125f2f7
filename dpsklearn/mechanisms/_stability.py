"""The stability tests: the sparse vector test on the distance to instability.

:class:`StabilityTest` answers a classification query with the teachers'
exact majority when its distance to instability passes the sparse vector
test (free), and otherwise with its fallback: the exponential mechanism on
the votes (``"noisy_max"``, at most ``T`` answers paid for) or an
abstention. :class:`SoftLabelTest` does the same for soft labels in
``[0, 1]``, with a second test on the shifted partition. Bassily, Thakkar and
Thakurta (2018), Algorithms 3, 4, 6 and 8, with the corrections of
``docs/corrections.rst`` and the guarantee derived in ``docs/design.rst``,
"The sparse vector stability test" and "Soft-label queries: the double
test". Both tests are calibrated by the full-strength ``laplace`` or
``gaussian`` calibration, the instances and the fallbacks composed
together; the paper's own calibrations (the fallbacks paid apart by basic
composition) are reference implementations kept in the tests, not options
here (``docs/corrections.rst``).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .._param_validation import Interval, StrOptions
from .._warn import warn_user
from ..accounting import ApproximateEvent
from ..noise import (
    DiscreteNoiseStream,
    NoiseSource,
    default_grid_step,
    exponential_mechanism_unchecked,
    grid_laplace,
)
from ._base import Engine, Mechanism, Release
from ._options import _NOISE, MechanismOptions, MechanismPlan, PlanContext
from ._sparse_vector import SparseVectorEngine
from ._sparse_vector_calibration import (
    SparseVectorCalibration,
    calibrate_sparse_vector,
)
from ._votes import distance_from_gap, majority_and_gap, vote_counts

__all__ = [
    "SoftLabelHistogram",
    "SoftLabelTest",
    "StabilityTest",
    "soft_label_bins",
    "soft_label_histograms",
]


def _noise_stream(calibration, scale, generator, reseed):
    return DiscreteNoiseStream(scale, generator, reseed, distribution=calibration.noise)


def _sparse_vector_engine(calibration, cutoff, noise):
    """A sparse vector engine on the first two noise streams."""
    reseed = noise.reseed_on_copy
    return SparseVectorEngine(
        threshold=calibration.threshold,
        noise_scale=calibration.threshold_scale,
        cutoff=cutoff,
        query_noise=_noise_stream(
            calibration, calibration.query_scale, noise[0], reseed
        ),
        threshold_noise=_noise_stream(
            calibration, calibration.threshold_scale, noise[1], reseed
        ),
    )


def _instances_started(test):
    """AboveThreshold instances that have seen a query (each costs eps0)."""
    return test.n_threshold_draws if test.n_queries else 0


def noisy_max_test_calibration(
    epsilon,
    delta,
    max_unstable,
    calibration,
    fallback,
    noisy_max_share,
    max_queries,
    stability=True,
):
    """The ``T`` instances and their noisy-max fallbacks, calibrated together.

    One fallback slot per instance when ``fallback="noisy_max"``, none for
    ``"abstain"``. ``stability=False`` gives all of ``delta`` to the
    instances and the fallbacks (:func:`calibrate_sparse_vector`): only for
    a test that releases nothing because it is stable.
    """
    share = noisy_max_share if fallback == "noisy_max" else 0.0
    return calibrate_sparse_vector(
        epsilon,
        delta,
        max_unstable,
        calibration,
        n_fallbacks=max_unstable if share else 0,
        fallback_share=share,
        fallback_kind="bounded_range",
        max_queries=max_queries,
        stability=stability,
    )


class _TestEngine(Engine):
    """The serving state shared by both tests: a sparse vector engine."""

    mechanism: _TestMechanism
    test: SparseVectorEngine
    n_fallback: int

    @property
    def chunk_invariant(self):
        """Whether answering a batch in consecutive chunks releases the same.

        True: the test's noise is addressed by query index and the noisy-max
        fallback draws one Gumbel variate per entry, in order. The noisy-mean
        fallback draws its noise per call, so chunks would change it.
        """
        return self.mechanism.fallback != "noisy_mean"

    @property
    def halted(self):
        return self.test.halted

    @property
    def n_failed_tests(self):
        return self.test.abstention_count

    def halt_reason(self):
        return (
            f"the model halted after max_unstable={self.test.cutoff} failed "
            "stability tests"
        )

    def get_state(self):
        return {**self.test.get_state(), "n_fallback": self.n_fallback}

    def set_state(self, state):
        self.test.set_state(state)
        self.n_fallback = int(state.get("n_fallback", self.n_fallback))


class StabilityEngine(_TestEngine):
    """Runs :class:`StabilityTest` on vote counts; answers are class indices."""

    def __init__(self, mechanism, noise):
        self.mechanism = mechanism
        self.noise = noise
        self.test = _sparse_vector_engine(
            mechanism.calibration, mechanism.max_unstable, noise
        )
        self.n_fallback = 0

    def answer(self, method, statistic):
        votes = np.asarray(statistic)
        majority, gap = majority_and_gap(votes)
        passed, n_done = self.test.run(distance_from_gap(gap))
        labels = majority[:n_done].copy()
        return Release(self._fallback(votes[:n_done], labels, passed), n_done)

    def _fallback(self, votes, labels, passed):
        """Answer the failed tests of a batch: noisy max on the votes, or abstain.

        ``labels`` holds the passed rows' answers; the failed rows' are set
        here. Returns the released fields.
        """
        abstained = np.zeros(len(labels), dtype=bool)
        failed = np.flatnonzero(~passed)
        if failed.size and self.mechanism.fallback == "noisy_max":
            # The exponential mechanism on the votes: one record moves one
            # vote, so the utility has sensitivity 1. Its epsilon was checked
            # once, at calibration: no checks on every batch.
            labels[failed] = exponential_mechanism_unchecked(
                votes[failed],
                self.mechanism.fallback_epsilon,
                1.0,
                rng=self.noise[2],
            )
            self.n_fallback += failed.size
        elif failed.size:
            labels[failed] = -1
            abstained[failed] = True
        return {"label": labels, "abstained": abstained}


class _TestMechanism(Mechanism):
    """What both tests share: a sparse vector calibration and a paid fallback."""

    calibration: SparseVectorCalibration
    max_unstable: int
    fallback: str
    fallback_epsilon: float

    def spent(self, units, engine):
        # Each threshold draw that saw a query is one AboveThreshold instance,
        # and every started instance carries a fallback slot, up to the slots
        # paid for (``docs/design.rst``, "Joint composition of the test and
        # its fallback").
        started = _instances_started(engine.test)
        cal = self.calibration
        fallbacks = min(started, cal.n_fallbacks)
        return cal.epsilon_after(started, fallbacks), cal.delta_after(started)

    def privacy_events(self, label=None):
        # The instances and the fallbacks were composed together: one event.
        cal = self.calibration
        return [ApproximateEvent(cal.epsilon, cal.delta, label=label)]

    def fitted_attributes(self):
        cal = self.calibration
        return {
            "calibration_": cal.name,
            "threshold_": cal.threshold,
            "noise_scale_": cal.threshold_scale,
            "query_noise_scale_": cal.query_scale,
            "sparse_vector_epsilon_": cal.sparse_vector_epsilon,
            "fallback_epsilon_": self.fallback_epsilon,
            "max_unstable_": self.max_unstable,
        }


class StabilityTest(_TestMechanism):
    """The sparse vector test on the distance to instability, with a fallback.

    A query whose distance to instability ``max(0, ceil(gap/2) - 1)`` plus
    ``DLap(2 lam)`` exceeds the noisy threshold ``w + DLap(lam)`` gets the
    exact majority label. A query that fails gets the fallback and ends the
    threshold draw; the engine halts after ``max_unstable = T`` failures.

    Privacy (``docs/design.rst``, "The sparse vector stability test" and
    "The sparse vector test at full strength"): the ``T`` AboveThreshold
    instances and the ``"noisy_max"`` fallback answers (at most one per
    instance) are composed together by the ``"laplace"`` or ``"gaussian"``
    calibration to its ``(epsilon, delta)``, the stability part included.
    (The paper's structure, which paid the instances ``(1 - share)
    epsilon`` and the fallbacks ``share * epsilon / T`` each by basic
    composition, is a reference implementation in the tests.)

    Parameters
    ----------
    calibration : SparseVectorCalibration
    max_unstable : int
    fallback : {"noisy_max", "abstain"}
    fallback_epsilon : float
        Epsilon of each noisy-max answer (0 for ``"abstain"``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import StabilityTest
    >>> test = StabilityTest.calibrate(1.0, 1e-5, max_unstable=100)
    >>> test.calibration.name, test.calibration.threshold
    ('laplace', 2375.0)
    >>> [type(e).__name__ for e in test.privacy_events()]
    ['ApproximateEvent']
    >>> round(test.fallback_epsilon, 4)  # each noisy max, composed jointly
    0.0233
    """

    n_streams = 3

    def __init__(
        self,
        calibration: SparseVectorCalibration,
        max_unstable: int,
        fallback: str,
        fallback_epsilon: float,
    ) -> None:
        self.calibration = calibration
        self.max_unstable = int(max_unstable)
        self.fallback = fallback
        self.fallback_epsilon = float(fallback_epsilon)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        *,
        max_unstable: int,
        calibration: str = "auto",
        fallback: str = "noisy_max",
        noisy_max_share: float = 0.5,
        max_queries: int | None = None,
    ) -> StabilityTest:
        """Calibrate the test and its fallback for the whole budget.

        ``calibration`` is ``"auto"``, ``"laplace"`` or ``"gaussian"`` (as in
        :func:`~dpsklearn.mechanisms.calibrate_sparse_vector`);
        ``max_queries`` bounds the queries one instance can see (the
        ``"gaussian"`` calibration needs it).
        """
        sparse_vector = noisy_max_test_calibration(
            epsilon,
            delta,
            max_unstable,
            calibration,
            fallback,
            noisy_max_share,
            max_queries,
        )
        return cls(
            sparse_vector, max_unstable, fallback, sparse_vector.fallback_epsilon
        )

    def engine(self, noise: NoiseSource) -> StabilityEngine:
        return StabilityEngine(self, noise)


# -- soft labels -----------------------------------------------------------------
def _n_bins(gamma):
    """``1/gamma`` as an integer >= 2, or a ValueError naming gamma."""
    gamma = float(gamma)
    n_bins = round(1.0 / gamma) if 0 < gamma <= 0.5 else 0
    if n_bins < 2 or not math.isclose(n_bins * gamma, 1.0, rel_tol=1e-9):
        raise ValueError(
            f"gamma must be 1/b for an integer b >= 2 (0.5, 1/3, 0.25, 0.2, "
            f"..., 0.1, ...), got gamma={gamma!r}."
        )
    return n_bins


def soft_label_histograms(
    soft_labels: ArrayLike, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Vote histograms of soft labels on the gamma- and the shifted partition.

    With ``gamma = 1/n_bins`` (Bassily, Thakkar and Thakurta 2018,
    Definition 5.1; ``docs/design.rst``, "Soft-label queries: the double test"): the
    gamma-partition has bins ``[(j-1) gamma, j gamma)``, ``j = 1..n_bins``,
    the last one closed; the shifted partition moves them right by
    ``gamma/2`` and drops the two half-bins at the ends, leaving
    ``n_bins - 1`` bins ``[(j - 1/2) gamma, (j + 1/2) gamma)``; values in
    ``[0, gamma/2)`` or ``[1 - gamma/2, 1]`` are not counted there. Soft
    labels are clipped to [0, 1] first (a negative bin index would wrap
    around).

    Parameters
    ----------
    soft_labels : array-like of shape (n_teachers, n_queries)
    n_bins : int
        ``1/gamma`` (>= 2).

    Returns
    -------
    counts : int64 ndarray of shape (n_queries, n_bins)
    shifted_counts : int64 ndarray of shape (n_queries, n_bins - 1)

    Examples
    --------
    >>> from dpsklearn.mechanisms import soft_label_histograms
    >>> counts, shifted = soft_label_histograms([[0.1], [0.3], [0.6], [1.0]], 4)
    >>> counts.tolist(), shifted.tolist()
    ([[1, 1, 1, 1]], [[1, 1, 0]])
    """
    scaled = np.clip(np.asarray(soft_labels, dtype=np.float64), 0.0, 1.0) * n_bins
    if scaled.ndim != 2:
        raise ValueError("soft_labels must be 2-D (n_teachers, n_queries).")
    first = np.minimum(np.floor(scaled), n_bins - 1).astype(np.int64)
    shifted = np.floor(scaled - 0.5).astype(np.int64)
    # Half-bins at the ends go to a spare column, then dropped.
    outside = (shifted < 0) | (shifted > n_bins - 2)
    shifted = np.where(outside, n_bins - 1, shifted)
    return (
        vote_counts(first, n_bins),
        vote_counts(shifted, n_bins)[:, : n_bins - 1],
    )


def _distance(counts):
    """The distance to instability and the fullest bin (lowest on ties)."""
    fullest, gap = majority_and_gap(counts)
    return distance_from_gap(gap), fullest


class SoftLabelEngine(_TestEngine):
    """Runs :class:`SoftLabelTest` on soft labels; answers are values in [0, 1]."""

    mechanism: SoftLabelTest

    def __init__(self, mechanism, noise):
        self.mechanism = mechanism
        self.noise = noise
        self.test = _sparse_vector_engine(
            mechanism.calibration, mechanism.max_unstable, noise
        )
        # The shifted test's query noise, addressed by query index.
        self.second_query_noise = _noise_stream(
            mechanism.calibration,
            mechanism.calibration.query_scale,
            noise[2],
            noise.reseed_on_copy,
        )
        self.n_fallback = 0

    def answer(self, method, statistic):
        soft = np.asarray(statistic)
        n_bins = self.mechanism.n_bins
        counts, shifted_counts = soft_label_histograms(soft, n_bins)
        first_distance, first_bin = _distance(counts)
        second_distance, second_bin = _distance(shifted_counts)
        outcome, n_done = self.test.run_two_stage(
            first_distance, second_distance, self.second_query_noise
        )
        # Algorithm 8: (2v - 1) gamma / 2 for the fullest bin v (1-based) of
        # the first partition, v gamma for the shifted one.
        answers = np.where(
            outcome == 0,
            (first_bin[:n_done] + 0.5) / n_bins,
            (second_bin[:n_done] + 1.0) / n_bins,
        )
        abstained = outcome == 2
        if abstained.any():
            self.n_fallback += int(abstained.sum())
            if self.mechanism.fallback == "noisy_mean":
                # The mean of k soft labels in [0, 1]: sensitivity 1/k.
                sensitivity = 1.0 / soft.shape[0]
                answers[abstained] = grid_laplace(
                    soft[:, :n_done][:, abstained].mean(axis=0),
                    sensitivity,
                    self.mechanism.fallback_epsilon,
                    rng=self.noise[3],
                    grid_step=default_grid_step(sensitivity),
                    bounds=(0.0, 1.0),
                )
            else:
                answers[abstained] = 0.5  # the midpoint, data independent
        return Release({"value": answers, "abstained": abstained}, n_done)


class SoftLabelTest(_TestMechanism):
    """Two stability tests on a histogram of soft labels in ``[0, 1]``.

    A query whose gamma-histogram is stable gets the midpoint of its fullest
    bin, free. Otherwise a fresh threshold tests the histogram on the
    partition shifted by ``gamma/2``: a pass answers the shifted bin's
    midpoint and adds 1 to the failure count ``c``; a second fail answers
    the fallback (``"midpoint"``: 0.5, free; ``"noisy_mean"``: the grid
    Laplace mean of the soft labels) and adds 2. ``c`` counts failed tests
    and the last query may add 2, so at most ``T + 1`` thresholds are drawn
    and the sparse vector part is calibrated for ``T + 1``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import SoftLabelTest
    >>> test = SoftLabelTest.calibrate(1.0, 1e-5, max_unstable=100, n_bins=10)
    >>> test.calibration.cutoff
    101
    """

    n_streams = 4

    def __init__(
        self,
        calibration: SparseVectorCalibration,
        max_unstable: int,
        n_bins: int,
        fallback: str,
        fallback_epsilon: float,
    ) -> None:
        self.calibration = calibration
        self.max_unstable = int(max_unstable)
        self.n_bins = int(n_bins)
        self.fallback = fallback
        self.fallback_epsilon = float(fallback_epsilon)

    @property
    def n_fallback_answers(self) -> int:
        """At most ``ceil(T/2)`` queries fail both tests before ``c`` reaches ``T``."""
        return math.ceil(self.max_unstable / 2)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        *,
        max_unstable: int,
        n_bins: int,
        calibration: str = "auto",
        fallback: str = "midpoint",
        noisy_mean_share: float = 0.5,
        max_queries: int | None = None,
    ) -> SoftLabelTest:
        """Calibrate the tests (``T + 1`` draws) and the fallback for the budget.

        ``calibration`` is ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        """
        share = noisy_mean_share if fallback == "noisy_mean" else 0.0
        sparse_vector = calibrate_sparse_vector(
            epsilon,
            delta,
            max_unstable + 1,
            calibration,
            n_fallbacks=math.ceil(max_unstable / 2) if share else 0,
            fallback_share=share,
            fallback_kind="pure",
            # An instance sees each query's first test and at most one second
            # test (the one that started it).
            max_queries=None if max_queries is None else max_queries + 1,
        )
        return cls(
            sparse_vector,
            max_unstable,
            n_bins,
            fallback,
            sparse_vector.fallback_epsilon,
        )

    def engine(self, noise: NoiseSource) -> SoftLabelEngine:
        return SoftLabelEngine(self, noise)

    def fitted_attributes(self) -> dict[str, Any]:
        return {**super().fitted_attributes(), "n_bins_": self.n_bins}


class SoftLabelHistogram(MechanismOptions):
    """The double stability test on a histogram of soft labels.

    Bassily, Thakkar and Thakurta (2018), Algorithms 6-8, corrected
    (``docs/corrections.rst``): the teachers' soft labels in ``[0, 1]`` are
    binned at width ``gamma``; a query whose fullest bin is stable gets its
    midpoint, else the shifted histogram is tested; a query failing both
    gets the ``fallback``. :class:`SoftLabelTest`, ``docs/design.rst``,
    "Soft-label queries: the double test".

    Parameters
    ----------
    gamma : float, default=0.1
        Bin width; ``1 / gamma`` must be an integer >= 2.
    max_unstable : int, default=100
        ``T``: the failed-test count at which the model halts.
    fallback : {"midpoint", "noisy_mean"}, default="midpoint"
        A query failing both tests gets the centre of ``target_range``
        (free, data-independent: an abstention) or a grid-Laplace mean paid
        from ``noisy_mean_share`` of the budget.
    noisy_mean_share : float, default=0.5
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        The sparse vector's noise family (as :class:`SparseVector`).

    Examples
    --------
    >>> from dpsklearn.mechanisms import SoftLabelHistogram
    >>> SoftLabelHistogram(gamma=0.25).n_bins()
    4
    """

    shorthand = "soft_label"
    #: The double test's release: a bin midpoint, or an abstention.
    released_fields: ClassVar[dict] = {
        "value": (np.float64, ()),
        "abstained": (np.bool_, ()),
    }
    # The histogram is of every teacher's soft label.
    reads_each_teacher = True

    _parameter_constraints: dict = {
        "gamma": [Interval(Real, 0, 0.5, closed="right")],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "fallback": [StrOptions({"midpoint", "noisy_mean"})],
        "noisy_mean_share": [Interval(Real, 0, 1, closed="neither")],
        "noise": [_NOISE],
    }

    def __init__(
        self,
        gamma: float = 0.1,
        max_unstable: int = 100,
        fallback: str = "midpoint",
        noisy_mean_share: float = 0.5,
        noise: str = "auto",
    ) -> None:
        self.gamma = gamma
        self.max_unstable = max_unstable
        self.fallback = fallback
        self.noisy_mean_share = noisy_mean_share
        self.noise = noise

    @property
    def abstains(self) -> bool:
        """Whether a query failing both tests is answered by abstaining."""
        return self.fallback == "midpoint"

    def n_bins(self) -> int:
        """``1 / gamma`` as an integer >= 2 (``ValueError`` naming ``gamma``).

        Returns
        -------
        n_bins : int
        """
        return soft_label_bins(self.gamma)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        max_queries: int | None = None,
        **public: Any,
    ) -> SoftLabelTest:
        """The calibrated double test.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        max_queries : int or None, default=None
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : SoftLabelTest
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        return SoftLabelTest.calibrate(
            epsilon,
            delta,
            max_unstable=self.max_unstable,
            n_bins=self.n_bins(),
            calibration=self.noise,
            fallback=self.fallback,
            noisy_mean_share=self.noisy_mean_share,
            max_queries=max_queries,
        )

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The double test for the context's ``k``; no cap beyond ``max_queries``.

        A warning says when ``k`` was left to the estimator and even
        unanimous soft labels (distance ``ceil(k/2) - 1``) cannot clear the
        threshold.

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
            A row asked again is answered from the release cache.
        """
        n_estimators = context.n_estimators
        mechanism = self.calibrate(
            context.epsilon, context.delta, max_queries=context.max_queries
        )
        calibration = mechanism.calibration
        best_distance = math.ceil(n_estimators / 2) - 1  # unanimous teachers
        if not context.n_estimators_fixed and best_distance <= calibration.threshold:
            warn_user(
                f"n_estimators='auto' chose {n_estimators} teachers "
                f"({context.min_samples_per_shard} rows per shard); even when "
                "they all agree, their soft labels cannot pass the stability "
                f"test at this budget ({calibration.name} calibration, "
                f"max_unstable={self.max_unstable}), so almost every query will "
                f"get the fallback answer ({self.fallback!r}). More training "
                "rows, a larger epsilon or a smaller max_unstable help.",
                UserWarning,
            )
        return MechanismPlan(
            mechanism,
            self,
            n_estimators,
            context.max_queries,
            cached_fields=self.released_fields,
        )


def soft_label_bins(gamma: float) -> int:
    """The number of bins ``1 / gamma``; ``ValueError`` unless an integer >= 2."""
    return _n_bins(gamma)
