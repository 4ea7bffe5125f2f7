"""The short predict path: rules decided at fit, the public vote counts.

docs/architecture.rst, "The path of one query", draws it.

* :class:`~dpsklearn._validation.QueryRule`, the query input rule decided
  once at ``fit``, gives exactly what ``validate_input(reset=False)`` gives
  (the same array or DataFrame, the same error, the same warning) on the
  forms it reads directly and on those it hands to ``validate_input``.
* A bad query is refused with a ValueError before anything is spent.
* ``vote_counts(X)`` is the teachers' votes (non-private), on classifier
  ensembles only.
* One ``predict`` makes a single ledger transaction.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpsklearn import (
    PrivatePredictionRegressor,
    SubsampleAggregateClassifier,
)
from dpsklearn._validation import QueryRule, validate_input
from dpsklearn.accounting import PrivacyLedger

RNG = np.random.RandomState(0)
X = RNG.normal(size=(300, 3))
Y = (X[:, 0] > 0).astype(int)
FRAME = pd.DataFrame(X, columns=["a", "b", "c"])


def _fitted(X_train, **params):
    model = SubsampleAggregateClassifier(
        LogisticRegression(), classes=[0, 1], random_state=0, **params
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X_train, Y)


def _outcome(function, X_query):
    """What ``function(X_query)`` returns, raises and warns."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = function(X_query)
        except (TypeError, ValueError) as exc:
            result = (type(exc), str(exc))
    return result, [str(w.message) for w in caught]


QUERIES = {
    "array": X[:4],
    "int array": np.arange(12).reshape(4, 3),
    "list": X[:4].tolist(),
    "wide": X[:4, :2],
    "empty": X[:0],
    "nan": np.where(np.eye(4, 3) > 0, np.nan, X[:4]),
    "inf": np.where(np.eye(4, 3) > 0, np.inf, X[:4]),
    "frame": FRAME[:4],
    "renamed frame": FRAME[:4].rename(columns={"a": "z"}),
    "reordered frame": FRAME[:4][["b", "a", "c"]],
    "1-D": X[0],
}


@pytest.mark.parametrize("fitted_on", ["array", "frame"])
@pytest.mark.parametrize("query", list(QUERIES))
def test_query_rule_is_validate_input(fitted_on, query):
    model = _fitted(X if fitted_on == "array" else FRAME)
    rule = model._query_rule_
    assert isinstance(rule, QueryRule)
    X_query = QUERIES[query]
    fast, fast_warnings = _outcome(lambda q: rule.validate(model, q), X_query)
    full, full_warnings = _outcome(
        lambda q: validate_input(
            model, q, reset=False, allow_nan=False, consumer=rule.consumer
        ),
        X_query,
    )
    assert fast_warnings == full_warnings
    if isinstance(full, tuple):
        assert fast == full
    elif isinstance(full, pd.DataFrame):
        pd.testing.assert_frame_equal(fast, full)
    else:
        np.testing.assert_array_equal(fast, full)
        assert type(fast) is type(full) and fast.dtype == full.dtype


def test_bad_query_refused_before_any_spend():
    model = _fitted(X)
    before = model.budget_status()
    for bad in (X[:4, :2], QUERIES["nan"], QUERIES["inf"], X[:0]):
        with pytest.raises(ValueError):
            model.predict(bad)
        with pytest.raises(ValueError):
            model.vote_counts(bad)
    assert model.budget_status() == before


def test_vote_counts_are_the_teachers_votes():
    model = _fitted(X)
    counts = model.vote_counts(X[:50])
    assert counts.shape == (50, 2) and counts.dtype == np.int64
    assert (counts.sum(axis=1) == model.n_estimators_).all()
    np.testing.assert_array_equal(counts, model._vote_counts(X[:50]))
    by_teacher = np.stack([t.predict(X[:50]) for t in model.estimators_])
    np.testing.assert_array_equal(counts[:, 1], (by_teacher == 1).sum(axis=0))
    # Not private: nothing is spent.
    assert model.budget_status().n_served == 0


def test_vote_counts_only_on_classifiers():
    regressor = PrivatePredictionRegressor(LinearRegression(), random_state=0)
    assert not hasattr(regressor, "vote_counts")
    assert hasattr(clone(_fitted(X)), "vote_counts")


def test_one_ledger_transaction_per_predict(tmp_path):
    ledger = PrivacyLedger(str(tmp_path / "ledger.db"), epsilon=10.0, delta=1e-5)
    model = _fitted(X, accountant=ledger)
    model.predict(X[:5])
    opened = []
    transaction = ledger.model_transaction

    def counting(model_id):
        opened.append(model_id)
        return transaction(model_id)

    ledger.model_transaction = counting
    labels, source = model.predict(X[5:10], return_source=True)
    assert len(opened) == 1
    status = model.budget_status()
    assert status.n_answered + status.n_student + status.n_abstained == 10
