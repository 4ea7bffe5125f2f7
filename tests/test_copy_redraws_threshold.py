"""A copy of a fitted sparse vector model never replays its noisy threshold.

A pickled or deep-copied model reseeds its noise from OS entropy; the
noisy threshold drawn before the copy was made is part of that noise, so the
copy draws a fresh one and charges it as a failed test (its current
instance may already have answered queries with the old value), exactly as
a restart that cannot restore its threshold does (``docs/design.rst``,
"Serving state, copies and the ledger"). With ``noise_random_state`` set,
copies replay the noise on purpose (tests), and nothing is redrawn.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest
from sklearn.datasets import make_classification

from dpsklearn import (
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)


def _fitted(noise_random_state=None):
    X, y = make_classification(n_samples=4000, random_state=0)
    model = SubsampleAggregateClassifier(
        n_estimators=100,
        classes=[0, 1],
        random_state=0,
        noise_random_state=noise_random_state,
        mechanism=SparseVector(max_unstable=20),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
        model.predict(X[:5])
    return model


def _engine(model):
    return model._serving_state_.engine.test


@pytest.mark.parametrize(
    "make_copy", [copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))]
)
def test_a_copy_draws_and_charges_a_fresh_threshold(make_copy):
    model = _fitted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BudgetCopyWarning: that is the point
        twin = make_copy(model)
    original, copied = _engine(model), _engine(twin)
    assert copied.n_threshold_draws == original.n_threshold_draws + 1
    assert copied.abstention_count == original.abstention_count + 1
    assert twin.budget_status().n_failed_tests == original.abstention_count + 1


def test_a_seeded_model_replays_its_noise_in_copies():
    model = _fitted(noise_random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin = copy.deepcopy(model)
    original, copied = _engine(model), _engine(twin)
    assert copied.n_threshold_draws == original.n_threshold_draws
    assert copied._noisy_threshold == original._noisy_threshold


def test_soft_labels_redraw_too():
    X, y = make_classification(n_samples=4000, random_state=0)
    model = SoftLabelPrivateRegressor(
        n_estimators=50,
        target_range=(0, 1),
        random_state=0,
        mechanism=SoftLabelHistogram(gamma=0.25, max_unstable=20),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y.astype(float))
        twin = copy.deepcopy(model)
    original, copied = _engine(model), _engine(twin)
    assert copied.n_threshold_draws == original.n_threshold_draws + 1
