"""scikit-learn's estimator checks for every dpsklearn estimator, from one registry.

:data:`REGISTRY` lists one :class:`CheckCase` per configured instance: the
instance the checks run on, and the checks it is expected to fail, each with
the privacy reason it must fail. One ``parametrize_with_checks`` call reads
the registry; add an estimator (or a configuration) by adding a case.

How the instances are configured for the checks:

* ``noise_random_state=0``, so the checks are deterministic and refits replay
  the same noise (the idempotence and pickling checks need it);
* no shared accountant: each instance owns its budget;
* budgets (``max_queries``, ``max_unstable``) large enough that no check runs
  out within one fit, and small ensembles (``n_estimators=5``);
* ``PrivacyLeakWarning`` ignored for this test only (unset public bounds and
  labels are inferred from the data, with that warning, so every estimator is
  default-constructible);
* ``SCIPY_ARRAY_API=1`` from ``conftest.py``, so no check is skipped.

``KnowledgeTransferClassifier`` and ``KnowledgeTransferRegressor`` are checked
through test-only subclasses whose ``fit`` passes ``X_public=X``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpsklearn import (
    AdaptiveRange,
    ConfidentGNMax,
    DecisionStumps,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    KnowledgeTransferClassifier,
    KnowledgeTransferRegressor,
    OutputPerturbation,
    PrivateKernelRidge,
    PrivateLeastSquaresClassifier,
    PrivateLinearRegression,
    PrivateNaiveBayes,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.decomposition import PrivatePCA, PrivateStandardScaler
from dpsklearn.model_selection import PrivateGridSearch


@dataclass(frozen=True)
class CheckCase:
    """One instance for the checks and its declared expected failures.

    ``expected_failures`` maps a check's name to the reason it fails: always
    a property of the privacy mechanism, never a bug.
    """

    estimator: BaseEstimator
    expected_failures: dict[str, str] = field(default_factory=dict)


# -- reasons, shared by the cases below --------------------------------------

# Answers depend on the order of the queries through the sparse vector state
# (abstention count, redrawn thresholds): the same row answered in another
# position, or in a subset, sees other noise. That is the mechanism, not a bug.
SPARSE_VECTOR_ORDER_DEPENDENT = {
    "check_methods_sample_order_invariance": (
        "sparse vector state makes answers depend on query order"
    ),
    "check_methods_subset_invariance": (
        "sparse vector state makes answers depend on which queries came before"
    ),
    # The check wraps the *same* object in a Pipeline, so the pipeline's score
    # is that model's second batch of queries: fresh noise (and, for a model
    # that abstains, a moved abstention count) must give other answers; a
    # replay of the first batch's noise would let anyone cancel it.
    "check_pipeline_consistency": (
        "the second score on the same fitted model is a new private release"
    ),
}

# predict and predict_proba are two independent noisy releases of the same
# votes: argmax(predict_proba(X)) == predict(X) cannot hold row by row without
# releasing one from the other (and then paying for the joint release).
PROBA_AND_PREDICT_ARE_SEPARATE_RELEASES = {
    "check_classifiers_train": (
        "argmax(predict_proba) and predict are two independent noisy releases"
    ),
}

# Every prediction of the served kernel ridge is a new private release drawing
# fresh noise, so the same row answered in another position, in a subset, or
# in a second call gets another noisy value; replaying the noise would let
# anyone cancel it.
FRESH_NOISE_PER_QUERY = {
    "check_methods_sample_order_invariance": (
        "each prediction is a new private release with its own noise draw"
    ),
    "check_methods_subset_invariance": (
        "each prediction is a new private release with its own noise draw"
    ),
    "check_pipeline_consistency": (
        "the second call on the same fitted model is a new private release"
    ),
}


class KnowledgeTransferForChecks(KnowledgeTransferClassifier):
    """Test-only: the checks call ``fit(X, y)``; the public rows are ``X``."""

    def fit(self, X, y):
        return super().fit(X, y, X_public=X)


class KnowledgeTransferRegressorForChecks(KnowledgeTransferRegressor):
    """Test-only: the checks call ``fit(X, y)``; the public rows are ``X``."""

    def fit(self, X, y):
        return super().fit(X, y, X_public=X)


#: The checks fit five teachers on a few dozen rows, whose answers would lose
#: to a constant (fit refuses them, docs/regression.rst, "When answers lose
#: to a constant"); a stated spread far above the noise lets them check the
#: API, not the answers' quality.
_API_ONLY = AdaptiveRange(target_std=1e12)


def _regression_teacher():
    # The checks seed only the outer random_state, so the teacher's partition
    # is seeded here (real-valued labels show any change of shards).
    return PrivatePredictionRegressor(
        n_estimators=5,
        max_queries=10_000,
        mechanism=_API_ONLY,
        random_state=0,
        noise_random_state=0,
    )


# -- the registry -------------------------------------------------------------

REGISTRY: list[CheckCase] = [
    # -- SubsampleAggregateClassifier: the sparse vector stability test ------
    CheckCase(
        SubsampleAggregateClassifier(
            n_estimators=5,
            mechanism=SparseVector(max_unstable=1000, fallback="noisy_max"),
            noise_random_state=0,
        ),
        SPARSE_VECTOR_ORDER_DEPENDENT,
    ),
    # Confident-GNMax. A huge epsilon keeps the threshold reachable by 5
    # teachers and makes the noise negligible, which is why the order and
    # subset checks pass here; at a real epsilon each query draws fresh
    # noise and the model halts after max_answers, so answers do depend
    # on the order of the queries (nothing is replayed). Its abstention
    # label is chosen from the labels it is fitted on (``abstain_label_``),
    # so check_classifiers_classes, which refits it on strings, passes.
    CheckCase(
        SubsampleAggregateClassifier(
            n_estimators=5,
            mechanism=ConfidentGNMax(max_answers=10_000),
            epsilon=1e6,
            max_queries=10_000,
            noise_random_state=0,
        ),
        {
            "check_methods_sample_order_invariance": (
                "a failed threshold check is answered by the student of the "
                "answers released before it, so it depends on the order"
            ),
        },
    ),
    # -- the per-query ensembles ----------------------------------------------
    # A query row asked again gets the answer already released for it, so the
    # order- and subset-invariance checks and check_pipeline_consistency pass.
    CheckCase(
        PrivatePredictionClassifier(
            n_estimators=5, max_queries=10_000, noise_random_state=0
        ),
        PROBA_AND_PREDICT_ARE_SEPARATE_RELEASES,
    ),
    # GNMax: predict and predict_proba read one noisy count vector per row, so
    # argmax(predict_proba) == predict and check_classifiers_train passes. A
    # huge epsilon keeps sigma small enough for the accuracy checks.
    CheckCase(
        PrivatePredictionClassifier(
            n_estimators=5,
            mechanism="gnmax",
            epsilon=1e6,
            max_queries=10_000,
            noise_random_state=0,
        )
    ),
    CheckCase(
        PrivatePredictionRegressor(
            n_estimators=5,
            max_queries=10_000,
            mechanism=_API_ONLY,
            noise_random_state=0,
        )
    ),
    CheckCase(
        SoftLabelPrivateRegressor(
            n_estimators=5,
            mechanism=SoftLabelHistogram(max_unstable=1000, fallback="noisy_mean"),
            noise_random_state=0,
        )
    ),
    # The checks seed only the outer random_state: the teacher's partition is
    # seeded here, or two fits on the same rows may shard differently.
    CheckCase(
        KnowledgeTransferForChecks(
            PrivatePredictionClassifier(
                n_estimators=5, max_queries=10_000, random_state=0, noise_random_state=0
            )
        )
    ),
    # Margin sampling: every row is asked (the teacher pays for more than
    # any check's data), in five rounds chosen by the student.
    CheckCase(
        KnowledgeTransferForChecks(
            PrivatePredictionClassifier(
                n_estimators=5, max_queries=10_000, random_state=0, noise_random_state=0
            ),
            query_strategy="uncertainty",
            random_state=0,
        )
    ),
    # The regression student: sequential, and bootstrap disagreement.
    CheckCase(
        KnowledgeTransferRegressorForChecks(
            _regression_teacher(), query_strategy="sequential"
        )
    ),
    CheckCase(
        KnowledgeTransferRegressorForChecks(
            _regression_teacher(), query_strategy="uncertainty", random_state=0
        )
    ),
    # -- PrivateKernelRidge ---------------------------------------------------
    # The served model: max_queries covers every prediction a check makes on
    # one fit; the large epsilon keeps the noise below the target scale, so
    # the checks see a working regressor and the declared failures fail for
    # their stated reason (not by a coincidence of clipped coin flips).
    CheckCase(
        PrivateKernelRidge(
            epsilon=1e4,
            max_queries=10_000,
            mechanism="output_perturbation",
            noise_random_state=0,
        ),
        FRESH_NOISE_PER_QUERY,
    ),
    # The default: a released sufficient-statistics model (free, deterministic
    # predictions: no expected failure).
    CheckCase(PrivateKernelRidge(random_state=0, noise_random_state=0)),
    # Sharded (divide and conquer): three exact shard fits, averaged.
    CheckCase(
        PrivateKernelRidge(
            epsilon=1e4,
            max_queries=10_000,
            mechanism=OutputPerturbation(n_shards=3),
            noise_random_state=0,
        ),
        FRESH_NOISE_PER_QUERY,
    ),
    CheckCase(
        PrivateKernelRidge(
            mechanism=OutputPerturbation(release="model", n_components=20, n_shards=3),
            random_state=0,
            noise_random_state=0,
        )
    ),
    # The released model: its predictions are deterministic post-processing.
    CheckCase(
        PrivateKernelRidge(
            mechanism=OutputPerturbation(release="model", n_components=20),
            random_state=0,
            noise_random_state=0,
        )
    ),
    # -- ERM and the statistical-query oracle -------------------------------
    # No expected failures: the exponential mechanism runs once, at fit, and
    # the fitted model is a fixed hypothesis, so its predictions are
    # deterministic, order- and subset-invariant and free. The oracle has no
    # prediction method, so the checks exercise its fit, parameters and
    # pickling.
    CheckCase(ExponentialMechanismERM(noise_random_state=0)),
    CheckCase(ExponentialMechanismERMRegressor(noise_random_state=0)),
    CheckCase(PrivateStatisticalQueries(noise_random_state=0)),
    # -- no public rows: least squares on released sufficient statistics ------
    # A released model (post-processing of one AdaSSP release): deterministic,
    # free predictions. The large epsilon keeps the noise below the signal of
    # the checks' small datasets, so the classifier checks see a classifier.
    CheckCase(PrivateLeastSquaresClassifier(epsilon=1e4, noise_random_state=0)),
    CheckCase(PrivateLinearRegression(epsilon=1e4, noise_random_state=0)),
    CheckCase(PrivateNaiveBayes(epsilon=1e4, noise_random_state=0)),
    CheckCase(PrivatePCA(epsilon=1e4, noise_random_state=0)),
    CheckCase(PrivateStandardScaler(epsilon=1e4, noise_random_state=0)),
    # -- the private search ---------------------------------------------------
    # Over two ERM configurations, with the candidates' and the selection's
    # noise seeded: refits replay the same search, and the released model is
    # a fixed hypothesis.
    CheckCase(
        PrivateGridSearch(
            ExponentialMechanismERM(noise_random_state=0),
            {"hypotheses": [None, DecisionStumps(n_thresholds=8)]},
            epsilon=2.0,
            random_state=0,
            noise_random_state=0,
        )
    ),
]


def _expected_failed_checks(estimator):
    """The registry's declared failures for this instance (looked up by identity)."""
    for case in REGISTRY:
        if case.estimator is estimator:
            return dict(case.expected_failures)
    raise LookupError(f"{estimator!r} is not in the registry")


@pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")
@parametrize_with_checks(
    [case.estimator for case in REGISTRY],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
