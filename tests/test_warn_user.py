"""Warnings point at the user's line, whatever the depth of dpsklearn's calls.

A warning about a call (a mechanism chosen for the user, a bound read from
the data, an abstaining score) is attributed to the line that made the call,
as scikit-learn's own warnings are, and never to a dpsklearn module.
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
from _helpers import STUMP, two_blobs
from sklearn.model_selection import GridSearchCV

import dpsklearn
from dpsklearn import (
    PrivacyLeakWarning,
    PrivatePredictionRegressor,
    SubsampleAggregateClassifier,
)

PACKAGE = pathlib.Path(dpsklearn.__file__).parent


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def test_a_fit_warning_points_at_the_fit_line():
    X, y = two_blobs(400, seed=0)
    model = SubsampleAggregateClassifier(STUMP, n_estimators=20, random_state=0)
    # classes inferred (a leak warning) and mechanism="auto" choosing for the
    # user (a UserWarning raised three template methods deep)
    caught = _caught(lambda: model.fit(X, y))
    assert any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    assert any("mechanism='auto' chose" in str(w.message) for w in caught)
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_regressor_bound_warning_points_at_the_fit_line():
    X, y = two_blobs(400, seed=0)
    model = PrivatePredictionRegressor(n_estimators=10, max_queries=10, random_state=0)
    caught = _caught(lambda: model.fit(X, y.astype(float)))
    assert caught
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]


def test_inside_a_search_the_warning_is_scikit_learns_frame_not_ours():
    X, y = two_blobs(300, seed=0)
    model = SubsampleAggregateClassifier(STUMP, n_estimators=10, random_state=0)
    search = GridSearchCV(model, {"epsilon": [1.0, 2.0]}, cv=2)
    caught = _caught(lambda: search.fit(X, y))
    assert caught
    files = [pathlib.Path(w.filename) for w in caught]
    inside = [f for f in files if f.is_relative_to(PACKAGE)]
    assert not inside, inside
    assert np.isfinite(search.best_score_)
