"""Every estimator that serves queries keeps its counters durable in a ledger.

On both storage backends (``tests/_ledger_backends.py``).

A pickled copy made before serving, or a second copy, continues the stored
counters instead of answering again from its own stale copy (docs/design.rst,
"Serving state, copies and the ledger"): the
number of answers released over all copies never exceeds what was paid for.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from _ledger_backends import ledger_url_fixture  # noqa: F401 (ledger_url)
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dpsklearn import (
    BudgetExhaustedError,
    ConfidentGNMax,
    Exponential,
    GNMax,
    PrivacyLedger,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SubsampleAggregateClassifier,
)

X, Y = make_classification(n_samples=400, n_features=5, random_state=0)
QUERIES = np.random.RandomState(1).normal(size=(12, 5))


def _fit(model, ledger):
    model.set_params(accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, Y)


def _models():
    tree = DecisionTreeClassifier(max_depth=2)
    return {
        # Abstentions asked for: the tests read what the budget still pays.
        "private_prediction": PrivatePredictionClassifier(
            tree,
            n_estimators=10,
            max_queries=12,
            mechanism=Exponential(unanswered="abstain"),
            classes=[0, 1],
            random_state=0,
        ),
        "private_prediction_gnmax": PrivatePredictionClassifier(
            tree,
            n_estimators=10,
            mechanism=GNMax(unanswered="abstain"),
            max_queries=12,
            classes=[0, 1],
            random_state=0,
        ),
        "private_regressor": PrivatePredictionRegressor(
            DecisionTreeRegressor(max_depth=2),
            n_estimators=10,
            max_queries=12,
            target_range=(0.0, 1.0),
            random_state=0,
        ),
        "confident_gnmax": SubsampleAggregateClassifier(
            tree,
            n_estimators=10,
            mechanism=ConfidentGNMax(unanswered="abstain"),
            max_queries=12,
            classes=[0, 1],
            random_state=0,
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "private_prediction",
        "private_prediction_gnmax",
        "private_regressor",
        "confident_gnmax",
    ],
)
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_stale_copy_continues_the_stored_counter(ledger_url, name):
    ledger = PrivacyLedger(ledger_url("budget"), epsilon=10.0, delta=1e-3)
    model = _fit(_models()[name], ledger)
    stale = pickle.loads(pickle.dumps(model))  # a copy made before serving
    model.predict(QUERIES[:8])
    # The copy has paid for nothing new: it may answer only what is left of
    # the one budget (4 distinct rows), not another 12; the rest is abstained
    # on.
    _, abstained = stale.predict(QUERIES[-8:] + 100.0, return_abstained=True)
    assert abstained[4:].all()
    assert stale.budget_status().n_served == 12 and stale.budget_status().halted
    if name != "confident_gnmax":  # Confident-GNMax abstains by itself too
        assert not abstained[:4].any()


def test_gnmax_proba_and_labels_draw_on_one_durable_counter(ledger_url):
    # Under mechanism="gnmax" predict_proba reads the same release as predict:
    # one unit per row, durable across copies like the exponential mechanism.
    ledger = PrivacyLedger(ledger_url("budget"), epsilon=10.0, delta=1e-3)
    model = _fit(_models()["private_prediction_gnmax"], ledger)
    stale = pickle.loads(pickle.dumps(model))
    model.predict(QUERIES[:4])
    model.predict_proba(QUERIES[:8])  # rows 0-3 free: 4 units
    assert model.budget_status().query_units_spent == 8
    proba = stale.predict_proba(QUERIES[-8:] + 100.0)
    np.testing.assert_array_equal(proba[4:], np.full((4, 2), 0.5))  # abstained
    assert stale.budget_status().query_units_spent == 12
    assert model.budget_status().query_units_remaining == 0


def test_statistical_queries_never_reuse_a_chunk(ledger_url):
    ledger = PrivacyLedger(ledger_url("budget"), epsilon=1.0)
    oracle = PrivateStatisticalQueries(n_queries=3, epsilon=1.0, random_state=0)
    oracle.set_params(accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle.fit(X, Y)
    stale = pickle.loads(pickle.dumps(oracle))
    for _ in range(2):
        oracle.query_mean(lambda x, y: y)
    stale.query_mean(lambda x, y: y)  # the third and last chunk
    with pytest.raises(BudgetExhaustedError):
        oracle.query_mean(lambda x, y: y)
