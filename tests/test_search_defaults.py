"""scikit-learn's search tools with dpsklearn's defaults.

``random_state=None`` is a seed drawn once per estimator and kept by
``clone``, so the fits of a search over privacy parameters reuse their
teachers; a search shows each kind of warning once.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import PrivatePredictionClassifier, SubsampleAggregateClassifier


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 3)) + 2.0 * y[:, None]
    return X, y


X, Y = _data()
STUMP = DecisionTreeClassifier(max_depth=1)


def test_clones_share_the_seed_and_the_teachers():
    model = SubsampleAggregateClassifier(STUMP, classes=[0, 1])
    first = clone(model)
    second = clone(model).set_params(epsilon=4.0)
    # clone: equal parameters (the estimator cloned, the numbers equal)
    assert first.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    assert first.epsilon == model.epsilon and first.random_state is None
    assert first._shared_seed == second._shared_seed == model._shared_seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first.fit(X, Y)
        second.fit(X, Y)
    # The teacher cache hands the second fit the first one's teachers.
    assert all(
        a is b for a, b in zip(first.estimators_, second.estimators_, strict=True)
    )
    # A new estimator draws its own seed: another partition.
    other = SubsampleAggregateClassifier(STUMP, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.fit(X, Y)
    assert other._shared_seed != model._shared_seed
    assert not all(
        a is b for a, b in zip(first.estimators_, other.estimators_, strict=True)
    )


def test_an_integer_random_state_still_decides():
    a = SubsampleAggregateClassifier(STUMP, classes=[0, 1], random_state=3)
    b = SubsampleAggregateClassifier(STUMP, classes=[0, 1], random_state=3)
    assert a._teacher_random_state() == b._teacher_random_state() == 3


def _kinds(caught):
    return [
        (w.category, re.sub(r"\d[\d.,]*", "#", str(w.message))) for w in caught
    ]


def test_a_search_shows_each_kind_of_warning_once():
    for model in (
        SubsampleAggregateClassifier(STUMP, classes=[0, 1]),
        PrivatePredictionClassifier(STUMP, classes=[0, 1]),
    ):
        search = GridSearchCV(model, {"epsilon": [0.5, 1.0, 2.0]}, cv=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search.fit(X, Y)
        kinds = _kinds(caught)
        assert kinds, "the fits do warn (a planned max_queries, the student)"
        assert len(kinds) == len(set(kinds)), kinds
        # A new estimator is a new scope: its warnings are shown again.
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            fresh = type(model)(**model.get_params(deep=False))
            cross_val_score(fresh, X, Y, cv=3)
        assert set(_kinds(again)) & set(kinds)
