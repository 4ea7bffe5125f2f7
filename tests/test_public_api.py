"""The public surface, pinned: each public module's ``__all__`` is a reviewed list.

A public name is a promise (a docstring, type hints, a deprecation cycle to
remove it). A new one is a decision: add it to :data:`PUBLIC` below in the
same change, and say why in the commit. Engines, calibrations and helpers
stay importable from their subpackage (its ``__init__`` imports what sibling
subpackages use) or private module, for tests and for the next engineer, but
are not listed. ``docs/architecture.rst`` ("The public surface") says what
belongs here.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import dpsklearn

#: Every public module and what it exports.
PUBLIC = {
    "dpsklearn": [
        "AbstentionWarning",
        "AdaptiveRange",
        "BudgetCopyWarning",
        "BudgetExhaustedError",
        "BudgetStatus",
        "ClippedMean",
        "ConfidentGNMax",
        "DecisionStumps",
        "Exponential",
        "ExponentialMechanismERM",
        "ExponentialMechanismERMRegressor",
        "GNMax",
        "KnowledgeTransferClassifier",
        "KnowledgeTransferRegressor",
        "LedgerError",
        "OutputPerturbation",
        "PrivacyAccountant",
        "PrivacyEvent",
        "PrivacyLeakWarning",
        "PrivacyLedger",
        "PrivateGridSearch",
        "PrivateKernelRidge",
        "PrivateLeastSquaresClassifier",
        "PrivateLinearRegression",
        "PrivateNaiveBayes",
        "PrivatePredictionClassifier",
        "PrivatePredictionRegressor",
        "PrivateStatisticalQueries",
        "PublicPrior",
        "PublicSchema",
        "RepeatAndSelect",
        "SoftLabelHistogram",
        "SoftLabelPrivateRegressor",
        "SparseVector",
        "StudentFitError",
        "SubsampleAggregateClassifier",
        "SufficientStatistics",
        "Thresholds",
        "__version__",
        "config_context",
        "get_config",
        "kernel_ridge_schedule",
        "set_config",
    ],
    "dpsklearn.accounting": [
        "ApproximateEvent",
        "BoundedRangeEvent",
        "DiscreteLaplaceEvent",
        "GaussianEvent",
        "LaplaceEvent",
        "LedgerError",
        "PrivacyAccountant",
        "PrivacyEvent",
        "PrivacyLedger",
        "PureEvent",
        "compose_epsilon",
        "max_events",
        "per_release_epsilon",
    ],
    "dpsklearn.audit": [
        "AttackAuditResult",
        "AuditResult",
        "audit",
        "audit_private_prediction",
    ],
    "dpsklearn.baselines": ["base_rate", "teacher_majority_vote"],
    "dpsklearn.datasets": ["load_adult", "load_diamonds", "load_flights"],
    "dpsklearn.decomposition": ["PrivatePCA", "PrivateStandardScaler"],
    "dpsklearn.demo": [],
    "dpsklearn.ensemble": [
        "KnowledgeTransferClassifier",
        "KnowledgeTransferRegressor",
        "PrivatePredictionClassifier",
        "PrivatePredictionRegressor",
        "SoftLabelPrivateRegressor",
        "SubsampleAggregateClassifier",
    ],
    "dpsklearn.erm": [
        "DecisionStumps",
        "ExponentialMechanismERM",
        "ExponentialMechanismERMRegressor",
        "Thresholds",
    ],
    "dpsklearn.exceptions": [
        "AbstentionWarning",
        "BudgetCopyWarning",
        "BudgetExhaustedError",
        "PrivacyLeakWarning",
        "StudentFitError",
    ],
    "dpsklearn.kernel_ridge": [
        "KernelRidgeSchedule",
        "PrivateKernelRidge",
        "kernel_ridge_schedule",
    ],
    "dpsklearn.mechanisms": [
        "AdaptiveRange",
        "ClippedMean",
        "ConfidentGNMax",
        "Exponential",
        "GNMax",
        "MechanismOptions",
        "OutputPerturbation",
        "PublicPrior",
        "RepeatAndSelect",
        "SoftLabelHistogram",
        "SparseVector",
        "SufficientStatistics",
    ],
    "dpsklearn.linear_model": [
        "PrivateLeastSquaresClassifier",
        "PrivateLinearRegression",
    ],
    "dpsklearn.metrics": ["make_abstention_scorer", "predict_with_abstentions"],
    "dpsklearn.model_selection": ["PrivateGridSearch", "is_publishable"],
    "dpsklearn.naive_bayes": ["PrivateNaiveBayes"],
    "dpsklearn.noise": [],
    "dpsklearn.pipeline": ["make_private_pipeline"],
    "dpsklearn.planning": [
        "KernelRidgeSchedule",
        "erm_sample_size",
        "kernel_ridge_schedule",
        "plan_regression_answers",
        "plan_stability_test",
        "predict_regime",
        "statistical_query_sample_size",
    ],
    "dpsklearn.preprocessing": ["AdditiveFeatureMap", "PublicSchema"],
    "dpsklearn.queries": ["PrivateStatisticalQueries"],
    "dpsklearn.serving": ["BudgetStatus"],
    "dpsklearn.statistics": ["histogram", "mean", "quantile", "var"],
    "dpsklearn.teachers": ["clear_teacher_cache"],
}

#: The most public objects (distinct, over every public module), and the most
#: in ``dpsklearn.mechanisms``.
MAX_PUBLIC_OBJECTS = 80
MAX_MECHANISMS = 20


def public_modules():
    """``dpsklearn`` and every module or subpackage of it without a leading _."""
    names = ["dpsklearn"]
    for info in pkgutil.iter_modules(dpsklearn.__path__):
        if not info.name.startswith("_"):
            names.append(f"dpsklearn.{info.name}")
    return sorted(names)


def public_objects():
    """The distinct objects exported, as ``{id: (module, name)}`` (first home)."""
    seen = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            key = (module_name, name) if isinstance(value, str) else id(value)
            seen.setdefault(key, (module_name, name))
    return seen


def test_every_public_module_is_pinned():
    assert public_modules() == sorted(PUBLIC)


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_all_is_the_reviewed_list(module_name):
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name]), (
        "a public name was added or removed: update tests/test_public_api.py "
        "(a reviewed decision) and the CHANGELOG"
    )
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_the_surface_stays_small():
    objects = public_objects()
    assert len(objects) <= MAX_PUBLIC_OBJECTS, sorted(objects.values())
    assert len(PUBLIC["dpsklearn.mechanisms"]) <= MAX_MECHANISMS


def test_a_reexported_name_is_one_object():
    # A name exported by several modules (the estimators at the top level and
    # in their subpackage) is the same object everywhere.
    homes = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            homes.setdefault(name, set()).add(id(getattr(module, name)))
    assert {name for name, ids in homes.items() if len(ids) > 1} == set()
