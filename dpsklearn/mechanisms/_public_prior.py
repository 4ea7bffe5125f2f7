"""The public-prior sparse vector test (Amin et al. 2024).

A public model's answer ``a_i`` to each query (computed from public data
only: a model fitted on public rows, or a published private student) is
checked against the teachers with the sparse vector technique. The query's
score is the number of teachers that vote for ``a_i``; replacing one record
changes one teacher, so the score has sensitivity 1. When the noisy score
clears the noisy threshold the public answer ``a_i`` is released; otherwise
the instance ends (a failed test), a paid mechanism answers (the
exponential mechanism on the votes) or the model abstains, and a fresh
threshold is drawn. The model halts after ``max_unstable`` failures.

Privacy (``docs/design.rst``, "The public-prior test"). What is released is
the sequence of test outcomes and the fallback answers: a released ``a_i``
is a function of the public query and the public model alone once the
outcome "passed" is known. So the guarantee is the sparse vector's alone,
``T`` AboveThreshold instances on sensitivity-1 scores (Lyu, Su and Li
2017, Algorithm 7, which needs no monotonicity) composed with the at most
``T`` paid fallback answers, as for
:class:`~dpsklearn.mechanisms.StabilityTest`. Unlike the stability test,
nothing is released *because* it is stable, so no stability margin and no
share of delta for a bad event is needed: the calibration is the stability
test's with no stability part (``stability=False``), which composes the
instances and the fallbacks at the whole delta (at epsilon 1, delta 1e-5,
``T = 100``: ``eps0`` 0.024100 instead of 0.023274), and the threshold is
public, chosen for accuracy only.

The threshold. A released ``a_i`` should agree with the teachers' majority.
With ``w = floor(k/2) + margin``, a query whose public answer holds at most
half of the ``k`` votes (so is not a strict majority) passes with
probability at most ``P(Z_query - Z_threshold >= margin + 1)``; ``margin``
is the smallest integer that keeps that below ``disagreement``. Nothing
about the data enters the threshold.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone

from .._param_validation import HasMethods, Interval, StrOptions
from .._warn import warn_user
from ..accounting import smallest_integer
from ..noise import NoiseSource
from ._base import Release
from ._options import (
    _UNANSWERED,
    NOTHING_PASSES,
    MechanismOptions,
    MechanismPlan,
    PlanContext,
)
from ._sparse_vector_calibration import SparseVectorCalibration
from ._sparse_vector_tails import difference_tail
from ._stability import StabilityEngine, StabilityTest, noisy_max_test_calibration

__all__ = ["PublicPrior", "PublicPriorEngine", "PublicPriorTest", "agreement_margin"]


def agreement_margin(
    query_scale: float, threshold_scale: float, noise: str, disagreement: float
) -> int:
    """The smallest ``m >= 0`` with ``P(Z_query - Z_threshold > m) <= disagreement``.

    Parameters
    ----------
    query_scale, threshold_scale : float
        The scales of the query and threshold noises.
    noise : {"laplace", "gaussian"}
    disagreement : float
        In (0, 1).

    Returns
    -------
    margin : int

    Examples
    --------
    >>> from dpsklearn.mechanisms import agreement_margin
    >>> agreement_margin(2.0, 1.0, "laplace", 0.05)
    5
    """

    def within(margin):
        tail = difference_tail(margin + 1, query_scale, threshold_scale, noise)
        return tail <= disagreement

    return smallest_integer(within, low=0)  # the tail falls as the margin grows


#: The score of a public answer that is no class: below any noisy threshold
#: (noise draws are many orders of magnitude smaller), so the query fails.
_NO_CLASS_SCORE = -(2**60)


class PublicPriorEngine(StabilityEngine):
    """Runs :class:`PublicPriorTest`: the statistic is ``(votes, public_index)``."""

    def answer(self, method: str, statistic: tuple[ArrayLike, ArrayLike]) -> Release:
        votes, public = statistic
        votes = np.asarray(votes)
        public = np.asarray(public, dtype=np.int64)
        known = public >= 0
        # The teachers' votes for the public answer. An answer that is no class
        # gets a constant far below any threshold: it fails (a constant query
        # has sensitivity 0), so a pass never releases a label outside the
        # classes (docs/design.rst, "The public-prior test").
        score = np.full(votes.shape[0], _NO_CLASS_SCORE, dtype=np.int64)
        score[known] = votes[np.flatnonzero(known), public[known]]
        passed, n_done = self.test.run(score)
        labels = public[:n_done].copy()
        release = self._fallback(votes[:n_done], labels, passed)
        return Release(release, n_done)


class PublicPriorTest(StabilityTest):
    """The calibrated public-prior test: a stability test's noises, a public threshold.

    Parameters
    ----------
    calibration : SparseVectorCalibration
        The noises of the ``T`` instances and their fallbacks (as
        :class:`StabilityTest`), with ``threshold`` the public agreement
        threshold ``floor(k/2) + margin``.
    max_unstable : int
    fallback : {"noisy_max", "abstain"}
    fallback_epsilon : float
    margin : int
        Votes above half of the teachers a public answer needs (before noise).
    disagreement : float
        The planned bound on the pass probability of a public answer that
        does not hold a strict majority.

    Examples
    --------
    >>> from dpsklearn.mechanisms import PublicPriorTest
    >>> test = PublicPriorTest.calibrate(
    ...     1.0, 1e-5, max_unstable=20, n_teachers=500, disagreement=0.05)
    >>> test.calibration.threshold == 250 + test.margin
    True
    """

    def __init__(
        self,
        calibration: SparseVectorCalibration,
        max_unstable: int,
        fallback: str,
        fallback_epsilon: float,
        margin: int,
        disagreement: float,
    ) -> None:
        super().__init__(calibration, max_unstable, fallback, fallback_epsilon)
        self.margin = int(margin)
        self.disagreement = float(disagreement)

    @classmethod
    def calibrate(  # type: ignore[override]
        cls,
        epsilon: float,
        delta: float,
        *,
        max_unstable: int,
        n_teachers: int,
        disagreement: float = 0.5,
        noise: str = "laplace",
        fallback: str = "noisy_max",
        noisy_max_share: float = 0.5,
        max_queries: int | None = None,
    ) -> PublicPriorTest:
        """Calibrate the instances and fallbacks; set the threshold for accuracy.

        No stability part: all of ``delta`` goes to the composition of the
        ``T`` instances and the fallbacks (the module's docstring).
        """
        cal = noisy_max_test_calibration(
            epsilon,
            delta,
            max_unstable,
            noise,
            fallback,
            noisy_max_share,
            max_queries,
            stability=False,
        )
        margin = agreement_margin(
            cal.query_scale, cal.threshold_scale, cal.noise, disagreement
        )
        # The threshold is public and chosen for accuracy only.
        cal = dataclasses.replace(cal, threshold=float(n_teachers // 2 + margin))
        return cls(
            cal, max_unstable, fallback, cal.fallback_epsilon, margin, disagreement
        )

    def engine(self, noise: NoiseSource) -> PublicPriorEngine:
        return PublicPriorEngine(self, noise)

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            **super().fitted_attributes(),
            "agreement_margin_": self.margin,
        }


class PublicPrior(MechanismOptions):
    """Check a public model's answer against the teachers; pay only where they disagree.

    Amin et al. (2024), "Private prediction for large-scale synthetic text
    generation": a public model answers each query; the sparse vector
    technique tests whether more than half of the teachers (plus a public
    margin) vote for that answer. Where they do, the public answer is
    released, and costs nothing beyond the test; where they do not, the
    exponential mechanism on the votes answers (``fallback="noisy_max"``)
    or the model abstains, and the failure counts against
    ``max_unstable``. The released value needs no stability margin, so the
    test works with hundreds of teachers, not thousands.
    :class:`PublicPriorTest`, ``docs/design.rst``, "The public-prior test".

    Parameters
    ----------
    public_model : estimator
        A fitted classifier whose ``predict`` runs on the query rows in the
        form the teachers take them: fitted on public rows only, or a
        published private release (a
        :class:`~dpsklearn.KnowledgeTransferClassifier` student). Its
        predictions are treated as public; ``clone`` keeps it fitted.
    max_unstable : int, default=100
        ``T``: failed tests (disagreements) the budget pays for.
    fallback : {"noisy_max", "abstain"}, default="noisy_max"
    noisy_max_share : float, default=0.5
        Share of the budget for the ``"noisy_max"`` fallback.
    noise : {"auto", "laplace", "gaussian"}, default="auto"
        The sparse vector's noise family, as :class:`SparseVector`.
    disagreement : float, default=0.5
        Sets the public margin above ``k/2`` that a public answer's votes must
        clear: the smallest margin such that, in each threshold draw, the
        first query whose public answer holds at most half of the votes is
        released with probability at most ``disagreement`` (per threshold
        draw, not per query: a draw that released one may release more,
        ``docs/design.rst``, "The public-prior test"). The default 0.5 (no
        margin: the noisy vote decides) answered best on the validation rows
        of Adult and nycflights13 (``docs/benchmarks/public_prior.md``);
        smaller values release fewer minority answers at the price of more
        failed tests.
    unanswered : {"student", "abstain"}, default="student"
        Rows the mechanism does not answer (failed tests under
        ``fallback="abstain"``, every row once the model has halted):
        ``"student"`` answers them with a student fitted on the query rows
        and the labels released so far (post-processing, free);
        ``"abstain"`` returns the estimator's free ``abstain_label_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn import PublicPrior, SubsampleAggregateClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 2)); y = (X[:, 0] > 0).astype(int)
    >>> public = LogisticRegression().fit(X[:200], y[:200])  # public rows
    >>> prior = PublicPrior(public, max_unstable=20, fallback="abstain")
    >>> model = SubsampleAggregateClassifier(
    ...     n_estimators=400, epsilon=2.0, classes=[0, 1], random_state=0,
    ...     mechanism=prior).fit(X[200:], y[200:])
    >>> model.agreement_margin_  # public: 200 + 0 votes plus noise suffice
    0
    >>> labels, abstained = model.predict(X[:200], return_abstained=True)
    >>> bool(abstained.mean() < 0.2)  # the teachers mostly agree with it
    True
    """

    shorthand = "public_prior"
    serves = frozenset({"vote_labels"})

    _parameter_constraints: dict = {
        "public_model": [HasMethods(["predict"])],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "fallback": [StrOptions({"noisy_max", "abstain"})],
        "noisy_max_share": [Interval(Real, 0, 1, closed="neither")],
        "noise": [StrOptions({"auto", "laplace", "gaussian"})],
        "disagreement": [Interval(Real, 0, 1, closed="neither")],
        "unanswered": [_UNANSWERED],
    }

    def __init__(
        self,
        public_model: Any,
        max_unstable: int = 100,
        fallback: str = "noisy_max",
        noisy_max_share: float = 0.5,
        noise: str = "auto",
        disagreement: float = 0.5,
        unanswered: str = "student",
    ) -> None:
        self.public_model = public_model
        self.max_unstable = max_unstable
        self.fallback = fallback
        self.noisy_max_share = noisy_max_share
        self.noise = noise
        self.disagreement = disagreement
        self.unanswered = unanswered

    @property
    def abstains(self) -> bool:
        """Whether a failed test is answered by abstaining."""
        return self.fallback == "abstain"

    def __sklearn_clone__(self) -> PublicPrior:
        # The public model is fitted: clone keeps it (as FrozenEstimator does),
        # and clones the other options.
        params = self.get_params(deep=False)
        return type(self)(
            **{
                name: value if name == "public_model" else clone(value, safe=False)
                for name, value in params.items()
            }
        )

    def public_indices(self, X: Any, classes: np.ndarray) -> np.ndarray:
        """The public model's answers as indices into ``classes`` (-1: no class).

        Parameters
        ----------
        X : {array-like, DataFrame, sparse matrix}
            Public query rows.
        classes : ndarray
            The estimator's public label set, sorted.

        Returns
        -------
        indices : ndarray of int
        """
        answers = np.asarray(self.public_model.predict(X))
        index = np.searchsorted(classes, answers)
        index = np.clip(index, 0, len(classes) - 1)
        return np.where(classes[index] == answers, index, -1).astype(np.int64)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        n_teachers: int,
        max_queries: int | None = None,
        **public: Any,
    ) -> PublicPriorTest:
        """The calibrated test for ``k = n_teachers``.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        n_teachers : int
            The number of teachers k.
        max_queries : int or None, default=None
            The queries the release pays for (None: unlimited where the
            mechanism allows it).
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : PublicPriorTest
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        return PublicPriorTest.calibrate(
            epsilon,
            delta,
            max_unstable=self.max_unstable,
            n_teachers=n_teachers,
            disagreement=self.disagreement,
            noise=self.noise,
            fallback=self.fallback,
            noisy_max_share=self.noisy_max_share,
            max_queries=max_queries,
        )

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The test for the context's ``k``; no cap beyond ``max_queries``.

        A warning says when even unanimous agreement with the public answer
        rarely clears the threshold (public numbers only: ``k``, the
        threshold, the noise).

        Parameters
        ----------
        context : PlanContext

        Returns
        -------
        plan : MechanismPlan
        """
        n_estimators = context.n_estimators
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            n_teachers=n_estimators,
            max_queries=context.max_queries,
        )
        # A unanimous vote for the public answer (k votes) is the best score.
        calibration = mechanism.calibration
        unanimous = calibration.pass_probability(n_estimators)
        if unanimous < 0.5:
            outcome = (
                "will answer nothing: every query is abstained on"
                if self.fallback == "abstain" and unanimous < NOTHING_PASSES
                else "fails almost every test"
            )
            warn_user(
                f"PublicPrior with {n_estimators} teachers at epsilon="
                f"{context.epsilon} {outcome}: even all {n_estimators} teachers "
                "agreeing with the public answer pass its threshold "
                f"({calibration.threshold:.0f} votes plus noise) with "
                f"probability {unanimous:.2g}. Use more teachers, a larger "
                "epsilon, a smaller max_unstable or a larger disagreement.",
                UserWarning,
            )
        return MechanismPlan(mechanism, self, n_estimators, context.max_queries)

    def statistic(self, votes: np.ndarray, X: Any, classes: np.ndarray) -> Any:
        """The votes and the public model's answers (public) on the rows.

        Parameters
        ----------
        votes : ndarray of shape (n_rows, n_classes)
        X : {array-like, DataFrame, sparse matrix}
            The query rows.
        classes : ndarray

        Returns
        -------
        statistic : tuple of (ndarray, ndarray)
            ``(votes, public_indices(X, classes))``.
        """
        return votes, self.public_indices(X, classes)
