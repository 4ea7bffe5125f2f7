"""Which vote mechanism answers a query stream best: the ``"auto"`` of the classifiers.

:func:`plan_vote_mechanisms` predicts, from public numbers only (rows,
classes, ``epsilon``, ``delta``, the planned queries) and a stated prior on
the teachers' votes, the accuracy over *all* the planned queries of each
mechanism :class:`~dpsklearn.SubsampleAggregateClassifier` can run:

* the **sparse vector stability test** with its default options (its
  planner, :func:`~dpsklearn.planning.plan_stability_test`, at ``T = 100``;
  a passed query gets the majority, free);
* **Confident-GNMax** at ``max_answers`` = the planned queries and its
  halves down to an eighth (the threshold check, then the Gaussian noisy
  argmax);
* the per-query **exponential mechanism** (Dwork and Feldman 2018), with
  the teachers :class:`~dpsklearn.PrivatePredictionClassifier` takes
  (Theorem 1's ``r``, at most the 20-rows-per-shard cap).

Rows a mechanism leaves unanswered are counted with the student of the
released answers that answers them (post-processing). They are taken to be
the queries of least agreement (a mechanism abstains where the teachers
split), and on a query whose teachers agree at ``a`` the student agrees
with their majority ``1/C + (s(a) - 1/C) min(1, n_eff / n_0)`` of the time:
``s(a) = min(0.97, a + (a - 1/2) / 2)`` (a student of many released labels
agrees with the majority more often than one teacher does, half as far
again above chance), ``n_eff = n (C q - 1)^2 / (C - 1)^2`` the effective
number of ``n`` released labels of agreement ``q`` (noisy labels carry
less: the squared margin of a label over chance) and ``n_0 = 200``; with no
answer released it abstains (counted wrong).

**The prior** (stated, public): each query's teachers put a share ``a`` of
their votes on the majority label and the rest on one other label, with
``a`` uniform on ``[1/2, 1]``, the neutral choice between unanimous and
split teachers. Accuracy is *agreement with the teachers' majority*: the
prior knows nothing of the teachers' own accuracy, which is the same for
every mechanism (same teachers).

A mechanism whose own check says nothing but noise can pass is never
chosen: the stability test when even unanimous teachers cannot clear its
threshold, Confident-GNMax when its vote threshold exceeds ``k``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import log_softmax

from ..mechanisms import ConfidentGNMax, Exponential, MechanismOptions, SparseVector
from ._outcomes import confident_gnmax_outcome
from ._sample_size import private_prediction_r
from ._stability_plan import plan_stability_test

__all__ = ["VoteMechanismPlan", "plan_vote_mechanisms"]

#: Grid of the prior on the majority's share of the votes (uniform on [1/2, 1]).
_AGREEMENT_GRID = np.linspace(0.5, 1.0, 51)
#: The student's agreement with the teachers' majority (the model above):
#: at most this, and the effective answers it needs.
STUDENT_AGREEMENT = 0.97
STUDENT_ANSWERS = 200
#: How much better over all planned queries another mechanism must be
#: predicted than the exponential mechanism to be chosen.
MARGIN = 0.05
#: Rows per shard the teachers keep at least.
_MIN_ROWS = 20


@dataclass(frozen=True)
class VoteMechanismPlan:
    """One mechanism's predicted outcome on the planned queries (public numbers).

    Attributes
    ----------
    mechanism : str
        ``"exponential"``, ``"confident_gnmax"`` or ``"sparse_vector"``.
    n_estimators : int
        The teachers it would use.
    max_answers : int or None
        Confident-GNMax's answer limit.
    hopeless : bool
        Its own check says only noise can pass (never chosen).
    answered : float
        Expected share of the planned queries answered by the mechanism.
    accuracy_answered : float
        Expected agreement with the teachers' majority on those.
    accuracy_student : float
        The modelled student's agreement on the rest.
    accuracy_all : float
        ``answered * accuracy_answered + (1 - answered) * accuracy_student``.
    """

    mechanism: str
    n_estimators: int
    max_answers: int | None
    hopeless: bool
    answered: float
    accuracy_answered: float
    accuracy_student: float
    accuracy_all: float

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for tables)."""
        return asdict(self)

    def options(self) -> MechanismOptions:
        """The mechanism parameter object this row stands for (default options)."""
        if self.mechanism == "sparse_vector":
            return SparseVector()
        if self.mechanism == "confident_gnmax":
            return ConfidentGNMax(max_answers=self.max_answers)
        return Exponential()

    def describe(self) -> str:
        """One phrase for messages: the mechanism and its predicted accuracy."""
        limit = "" if self.max_answers is None else f"(max_answers={self.max_answers})"
        outcome = "only noise can pass" if self.hopeless else f"{self.accuracy_all:.2f}"
        return f"{self.mechanism}{limit} {outcome}"


def _prior_counts(k, n_classes):
    """Vote histograms of the prior: ``a k`` on class 0, the rest on class 1."""
    top = np.ceil(_AGREEMENT_GRID * k).astype(np.int64)
    counts = np.zeros((len(top), max(2, n_classes)), dtype=np.int64)
    counts[:, 0] = top
    counts[:, 1] = k - top
    return counts


def _student(n_answers, quality, n_classes, unanswered):
    """The modelled student's agreement with the majority on the unanswered share.

    The unanswered queries are the ``unanswered`` share of least agreement
    under the prior (module docstring).
    """
    chance = 1.0 / n_classes
    if n_answers < 1 or not math.isfinite(quality) or unanswered <= 0:
        return 0.0  # nothing released (abstentions), or nothing to answer
    margin = max(0.0, (n_classes * quality - 1.0) / (n_classes - 1.0))
    learned = min(1.0, n_answers * margin**2 / STUDENT_ANSWERS)
    a = _AGREEMENT_GRID[_AGREEMENT_GRID <= 0.5 + 0.5 * unanswered]
    agreement = np.minimum(STUDENT_AGREEMENT, a + (a - 0.5) / 2)
    return float(np.mean(chance + (agreement - chance) * learned))


def _row(mechanism, k, max_answers, hopeless, answered, accuracy, m, n_classes):
    student = _student(answered * m, accuracy, n_classes, 1.0 - answered)
    if hopeless:
        answered, accuracy, student = 0.0, math.nan, 0.0
    total = (answered * accuracy if answered > 0 else 0.0) + (1 - answered) * student
    return VoteMechanismPlan(
        mechanism, int(k), max_answers, bool(hopeless), float(answered),
        float(accuracy), float(student), float(total),
    )


def exponential_teachers(
    n_samples: int,
    epsilon: float,
    delta: float,
    max_queries: int,
    target_error: float = 0.1,
) -> tuple[int, float]:
    """The teachers of the exponential mechanism: Theorem 1's ``r``, capped.

    Dwork and Feldman (2018), Theorem 1: ``r = ceil(6 ln(4/target_error) /
    eps_q)``, at most the ``n / 20`` teachers the rows support (the rule of
    :class:`~dpsklearn.PrivatePredictionClassifier`).

    Returns
    -------
    n_estimators : int
    epsilon_per_query : float

    Examples
    --------
    >>> from dpsklearn.planning import exponential_teachers
    >>> exponential_teachers(26_049, 1.0, 1e-5, 1000)[0]  # capped by the rows
    1302
    """
    eps_q = Exponential(target_error=target_error).epsilon_per_query(
        epsilon, delta, max_queries
    )
    supported = max(1, n_samples // _MIN_ROWS)
    return min(private_prediction_r(target_error, eps_q), supported), eps_q


def plan_vote_mechanisms(
    n_samples: int,
    n_classes: int,
    epsilon: float,
    delta: float,
    max_queries: int,
    n_estimators: int | None = None,
) -> list[VoteMechanismPlan]:
    """Predict each vote mechanism's accuracy over all the planned queries.

    Parameters
    ----------
    n_samples : int
        Private training rows (public).
    n_classes : int
        The public label set's size.
    epsilon, delta : float
        The model's budget (``delta > 0``).
    max_queries : int
        The planned queries ``m``.
    n_estimators : int, optional
        A fixed number of teachers for every mechanism; None: each
        mechanism's own rule (above).

    Returns
    -------
    plans : list of VoteMechanismPlan
        Best first: the exponential mechanism (the configuration of
        :class:`~dpsklearn.PrivatePredictionClassifier`) unless another
        mechanism is predicted at least :data:`MARGIN` better over all the
        planned queries (the prior does not model how much better teachers
        on larger shards are, so it overstates what many small teachers
        gain), then by ``accuracy_all``; the hopeless last.

    Examples
    --------
    >>> from dpsklearn.planning import plan_vote_mechanisms
    >>> best = plan_vote_mechanisms(6_400, 2, 1.0, 1e-5, 1000)[0]
    >>> best.mechanism, best.hopeless
    ('exponential', False)
    >>> [p.hopeless for p in plan_vote_mechanisms(6_400, 2, 1.0, 1e-5, 1000)
    ...  if p.mechanism == "confident_gnmax" and p.max_answers == 1000]
    [True]
    """
    return list(
        _plans(
            int(n_samples),
            max(2, int(n_classes)),
            float(epsilon),
            float(delta),
            int(max_queries),
            None if n_estimators is None else int(n_estimators),
        )
    )


@functools.lru_cache(maxsize=256)
def _plans(n_samples, c, epsilon, delta, m, n_estimators):
    """:func:`plan_vote_mechanisms` on numbers (cached: the folds of a search
    ask the same question)."""
    supported = max(1, int(n_samples) // _MIN_ROWS)
    if n_estimators is not None:
        supported = int(n_estimators)
    weights = np.full(len(_AGREEMENT_GRID), 1.0 / len(_AGREEMENT_GRID))
    plans = []
    # The exponential mechanism: P(b) ~ exp(eps_q count_b / 2), every query.
    k, eps_q = exponential_teachers(n_samples, epsilon, delta, m)
    if n_estimators is not None:
        k = int(n_estimators)
    counts = _prior_counts(k, c)
    p = np.exp(log_softmax(eps_q * counts / 2.0, axis=1)[:, 0])
    plans.append(_row("exponential", k, None, False, 1.0, float(weights @ p), m, c))
    # The stability test (its planner; a pass releases the majority).
    # At the default options' T (the one SparseVector() runs): one
    # calibration, not the planner's eleven.
    default = SparseVector()
    stability = plan_stability_test(
        int(n_samples), m, float(epsilon), float(delta),
        unstable_fraction=default.unstable_fraction, fallback=default.fallback,
        n_estimators=n_estimators, max_unstable=default.max_unstable,
    )[0]
    plans.append(
        _row(
            "sparse_vector", stability.n_estimators, None, not stability.can_pass,
            stability.expected_answered, 1.0, m, c,
        )
    )
    # Confident-GNMax with the most teachers, at several answer limits.
    counts = _prior_counts(supported, c)
    sample = np.repeat(counts, max(1, m // len(counts)), axis=0)
    for limit in sorted({max(1, m // d) for d in (1, 2, 4, 8)}, reverse=True):
        release = ConfidentGNMax(max_answers=limit).calibrate(
            float(epsilon), float(delta), max_queries=m, n_teachers=supported,
            n_classes=c,
        )
        cal = release.calibration
        hopeless = release.threshold > supported
        outcome = confident_gnmax_outcome(
            sample, release.threshold, cal.sigma_threshold, cal.sigma_argmax,
            max_answers=max(1, round(limit * len(sample) / m)),
        )
        accuracy = outcome["accuracy_answered"]
        plans.append(
            _row(
                "confident_gnmax", supported, limit, hopeless,
                outcome["answered_fraction"],
                accuracy if math.isfinite(accuracy) else 0.0, m, c,
            )
        )
    exponential = plans[0].accuracy_all

    def order(plan):
        clearly_better = plan.accuracy_all >= exponential + MARGIN
        first = plan.mechanism == "exponential" or clearly_better
        return (plan.hopeless, not first, -plan.accuracy_all)

    return tuple(sorted(plans, key=order))
