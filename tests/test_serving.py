"""The one serving loop and its one status schema, across every estimator.

Every fitted private model answers through ``dpsklearn.serving.serve`` and
reports through ``budget_status()`` as a ``BudgetStatus``; these tests run
the same checks on each estimator: the schema's invariants, the budget
spent never above the model's own, ``NotFittedError`` before ``fit``, and a
refit refused by a shared accountant that leaves the live model serving.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError

from dpsklearn import (
    BudgetExhaustedError,
    BudgetStatus,
    ExponentialMechanismERM,
    OutputPerturbation,
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.erm import DecisionStumps

X_CLF, Y_CLF = make_classification(n_samples=1200, n_features=5, random_state=0)
X_REG, Y_REG = make_regression(n_samples=1200, n_features=5, noise=1.0, random_state=0)


def _cases():
    """(name, factory(**params) -> unfitted model, X, y, serve(model, rows))."""
    return {
        "sparse_vector": (
            lambda **p: SubsampleAggregateClassifier(
                n_estimators=20,
                mechanism="sparse_vector",
                classes=[0, 1],
                random_state=0,
                **p,
            ),
            X_CLF,
            Y_CLF,
        ),
        "sparse_vector_abstain": (
            lambda **p: SubsampleAggregateClassifier(
                n_estimators=200,
                epsilon=30.0,
                mechanism=SparseVector(max_unstable=20, fallback="abstain"),
                classes=[0, 1],
                random_state=0,
                **p,
            ),
            X_CLF,
            Y_CLF,
        ),
        "confident_gnmax": (
            lambda **p: SubsampleAggregateClassifier(
                n_estimators=100,
                epsilon=8.0,
                mechanism="confident_gnmax",
                max_queries=200,
                classes=[0, 1],
                random_state=0,
                **p,
            ),
            X_CLF,
            Y_CLF,
        ),
        "soft_majority": (
            lambda **p: PrivatePredictionClassifier(
                n_estimators=20, max_queries=200, classes=[0, 1], random_state=0, **p
            ),
            X_CLF,
            Y_CLF,
        ),
        "gnmax": (
            lambda **p: PrivatePredictionClassifier(
                n_estimators=20,
                max_queries=200,
                mechanism="gnmax",
                classes=[0, 1],
                random_state=0,
                **p,
            ),
            X_CLF,
            Y_CLF,
        ),
        "clipped_mean": (
            lambda **p: PrivatePredictionRegressor(
                n_estimators=20,
                max_queries=200,
                target_range=(-300, 300),
                random_state=0,
                **p,
            ),
            X_REG,
            Y_REG,
        ),
        "soft_label": (
            lambda **p: SoftLabelPrivateRegressor(
                n_estimators=20,
                mechanism=SoftLabelHistogram(max_unstable=30),
                target_range=(-300, 300),
                random_state=0,
                **p,
            ),
            X_REG,
            Y_REG,
        ),
        "kernel_ridge_predictions": (
            lambda **p: PrivateKernelRidge(
                y_bound=300.0, max_queries=200, mechanism=OutputPerturbation(), **p
            ),
            X_REG[:300],
            Y_REG[:300],
        ),
    }


CASES = _cases()


def _fit(name, **params):
    factory, X, y = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (PrivacyLeakWarning, UserWarning))
        return factory(**params).fit(X, y), X


def _ask(model, X):
    # Rows past the budget are abstained on (free); the paid-for answers count.
    model.predict(X)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_status_schema_and_invariants(name):
    model, X = _fit(name)
    before = model.budget_status()
    assert isinstance(before, BudgetStatus)
    assert (before.n_served, before.query_units_spent) == (0, 0)
    assert before.spent == (0.0, 0.0)
    _ask(model, X[:150])
    status = model.budget_status()
    # Every row returned was answered privately, by the student of the
    # released answers, or abstained on; the mechanism released n_served.
    assert status.n_answered + status.n_student + status.n_abstained == 150
    assert status.n_answered <= status.n_served
    assert 0 < status.n_served <= 150
    epsilon, delta = model.epsilon, model.delta
    # What the releases so far cost never exceeds the model's budget.
    assert 0.0 < status.spent[0] <= epsilon * (1 + 1e-9)
    assert 0.0 <= status.spent[1] <= delta * (1 + 1e-9)
    assert status.remaining == (
        pytest.approx(epsilon - status.spent[0]),
        pytest.approx(delta - status.spent[1]),
    )
    # Spending only grows.
    _ask(model, X[150:300])
    later = model.budget_status()
    assert later.spent[0] >= status.spent[0]
    assert later.n_served >= status.n_served


@pytest.mark.parametrize("name", sorted(CASES))
def test_unfitted_status_is_not_fitted_error(name):
    factory, _, _ = CASES[name]
    with pytest.raises(NotFittedError):
        factory().budget_status()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_refused_refit_keeps_the_live_model(name):
    model, X = _fit(name)
    _ask(model, X[:5])
    before = model.budget_status()
    state, accountant = model._serving_state_, model.accountant_
    shared = PrivacyAccountant(epsilon=model.epsilon / 2, delta=1e-5)
    with pytest.raises(BudgetExhaustedError):
        model.set_params(accountant=shared).fit(*CASES[name][1:])
    assert shared.events == []
    assert model._serving_state_ is state and model.accountant_ is accountant
    assert model.budget_status() == before
    _ask(model, X[5:10])  # still serving, from the same budget
    assert model.budget_status().n_served >= before.n_served


@pytest.mark.parametrize(
    "model",
    [
        ExponentialMechanismERM(DecisionStumps(feature_bounds=(-5, 5)), classes=[0, 1]),
        PrivateKernelRidge(
            y_bound=300.0,
            mechanism=OutputPerturbation(release="model", n_components=10),
        ),
        PrivateStatisticalQueries(4),
    ],
    ids=type,
)
def test_models_released_at_fit_report_their_whole_budget(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        if isinstance(model, PrivateKernelRidge):
            model.fit(X_REG[:200], Y_REG[:200])
        else:
            model.fit(X_CLF, Y_CLF)
    status = model.budget_status()
    assert isinstance(status, BudgetStatus) and not status.halted
    if isinstance(model, PrivateStatisticalQueries):
        assert status.spent == (0.0, 0.0)  # nothing answered yet
        model.query_mean(lambda X, y: X[:, 0] > 0)
        assert model.budget_status().spent == (1.0, 0.0)
    else:
        assert status.spent == (model.epsilon, getattr(model, "delta", 0.0))
    assert np.all(np.asarray(status.remaining) >= 0)


def test_demo_reads_the_status_schema():
    # The demo's table takes "halted_after" from budget_status(); a change of
    # the status schema must break this test, not the README's demo command.
    from sklearn.linear_model import LogisticRegression

    from dpsklearn.demo import _answer

    model = SubsampleAggregateClassifier(
        LogisticRegression(),
        n_estimators=20,
        epsilon=1.0,
        delta=1e-5,
        mechanism=SparseVector(max_unstable=3),
        random_state=0,
    )
    classes = np.unique(Y_CLF)
    labels, abstained, halted_after = _answer(
        model, "SubsampleAggregate", X_CLF[:1000], Y_CLF[:1000], X_CLF[1000:], classes
    )
    status = model.budget_status()
    assert halted_after == status.n_answered
    assert labels.shape == abstained.shape == (200,)
    assert int(np.sum(~abstained)) == status.n_answered
