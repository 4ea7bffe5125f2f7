"""Whether ``fit`` succeeds is a release too: audited on one-class neighbours.

With a public ``classes``, a training set whose labels are all one class is
a replace-one neighbour of one with a second class (docs/design.rst,
"Neighbouring datasets and what epsilon covers"). A ``fit`` that refused the
first and accepted the second would show which one it was given, whatever
its noise: an infinite privacy loss, before anything is spent
(docs/privacy_contract.rst, "What fit reads before the spend").

For each teacher-ensemble classifier, each of the two 7-row neighbours
(classes ``[0, 1]``; all labels 0, against six 0 and one 1) is fitted many
times with fresh noise, the outcome "fit raised" is counted on each side,
and :func:`dpsklearn.audit.epsilon_lower_bound` turns the two frequencies
into a Clopper-Pearson lower bound on epsilon (confidence 0.95), asserted
to be at most the claim. A deliberately broken variant, which refuses a
``y`` of one class as the library once did, must show a bound above the
claim: 300/300 refusals against 0/300 give about 4.2 (60/60 against 0/60,
the quick sibling, about 2.6).

Failure probabilities. For the two classifiers that serve queries, nothing
in ``fit`` depends on the noise, so the outcome is deterministic: refused
never (bound 0) for the fixed code and always on one side only for the
broken variant (bound as above); neither assertion can fail by chance. For
:class:`KnowledgeTransferClassifier` a ``StudentFitError`` after the spend
(released labels of one class) is possible on either side; it is
post-processing of the private release, so for a correct estimator the
bound exceeds the claim with probability at most 0.05 (the bound's
confidence). Every run is seeded, so the file is deterministic.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import STUMP
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import (
    KnowledgeTransferClassifier,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn._base import PublicLabelsMixin
from dpsklearn.audit import epsilon_lower_bound
from dpsklearn.teachers import clear_teacher_cache

EPSILON = 1.0  # the claim of every audited model
CONFIDENCE = 0.95
RUNS = 300  # per neighbour, slow audit
RUNS_QUICK = 60  # per neighbour, quick sibling

_rng = np.random.RandomState(0)
X = _rng.normal(size=(7, 2))
X_PUBLIC = _rng.normal(size=(12, 2))
Y_ONE_CLASS = np.zeros(7, dtype=int)  # neighbour 0: every label 0
Y_TWO_CLASSES = Y_ONE_CLASS.copy()
Y_TWO_CLASSES[3] = 1  # neighbour 1: one record replaced by a label 1


def _private_prediction(seed):
    return PrivatePredictionClassifier(
        STUMP,
        n_estimators=3,
        epsilon=EPSILON,
        max_queries=12,
        classes=[0, 1],
        random_state=seed,
        noise_random_state=seed,
    )


def _subsample(seed):
    return SubsampleAggregateClassifier(
        STUMP,
        n_estimators=3,
        epsilon=EPSILON,
        mechanism=SparseVector(max_unstable=1),
        max_queries=12,
        classes=[0, 1],
        random_state=seed,
        noise_random_state=seed,
    )


def _knowledge_transfer(seed):
    return KnowledgeTransferClassifier(_private_prediction(seed), random_state=seed)


MODELS = {
    "PrivatePredictionClassifier": _private_prediction,
    "SubsampleAggregateClassifier": _subsample,
    "KnowledgeTransferClassifier": _knowledge_transfer,
}


def _fit_raised(make, y, seed):
    model = make(seed)
    extra = (X_PUBLIC,) if isinstance(model, KnowledgeTransferClassifier) else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small on purpose: k against n, delta
        try:
            model.fit(X, y, *extra)
        except Exception:  # any refusal or failure is the observable outcome
            return True
    return False


def _refusal_bound(make, runs):
    """``(epsilon lower bound, refusals on neighbour 0, on neighbour 1)``."""
    # Seeds differ between the sides (independent runs, as the bound assumes).
    refused_0 = sum(_fit_raised(make, Y_ONE_CLASS, seed) for seed in range(runs))
    refused_1 = sum(
        _fit_raised(make, Y_TWO_CLASSES, runs + seed) for seed in range(runs)
    )
    bound, _ = epsilon_lower_bound(
        refused_0, runs, refused_1, runs, confidence=CONFIDENCE
    )
    return bound, refused_0, refused_1


@pytest.fixture
def refuses_one_class(monkeypatch):
    """The broken variant: ``fit`` refuses a ``y`` of one class (read from y)."""
    validate = PublicLabelsMixin._validate_classification_data

    def refusing(self, X, y):
        X, y_encoded, classes = validate(self, X, y)
        if np.unique(y_encoded).size < 2:
            raise ValueError("y holds one class only")
        return X, y_encoded, classes

    monkeypatch.setattr(PublicLabelsMixin, "_validate_classification_data", refusing)


@pytest.mark.parametrize("name", MODELS)
def test_one_class_y_with_public_classes_is_fitted(name):
    make = MODELS[name]
    for y in (Y_ONE_CLASS, Y_TWO_CLASSES):
        assert not _fit_raised(make, y, 0)
    model = make(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(model, KnowledgeTransferClassifier):
            model.fit(X, Y_ONE_CLASS, X_PUBLIC)
        else:
            model.fit(X, Y_ONE_CLASS)
        labels = model.predict(X_PUBLIC)
    assert set(np.unique(labels)) <= {-1, 0, 1}
    if isinstance(model, PrivatePredictionClassifier):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            proba = model.predict_proba(X_PUBLIC)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "make", [_private_prediction, _subsample, _knowledge_transfer], ids=list(MODELS)
)
def test_one_class_y_without_classes_says_it_read_y(make):
    model = make(0).set_params(
        **(
            {"teacher__classes": None}
            if isinstance(make(0), KnowledgeTransferClassifier)
            else {"classes": None}
        )
    )
    extra = (X_PUBLIC,) if isinstance(model, KnowledgeTransferClassifier) else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="classes is None.*read from the private"):
            model.fit(X, Y_ONE_CLASS, *extra)


@pytest.mark.parametrize("name", MODELS)
def test_fit_outcome_quick(name):
    bound, refused_0, refused_1 = _refusal_bound(MODELS[name], RUNS_QUICK)
    assert bound <= EPSILON, (name, bound, refused_0, refused_1)


@pytest.mark.parametrize("name", MODELS)
def test_fit_outcome_refusing_one_class_caught_quick(name, refuses_one_class):
    bound, refused_0, refused_1 = _refusal_bound(MODELS[name], RUNS_QUICK)
    assert (refused_0, refused_1) == (RUNS_QUICK, 0)
    assert bound > EPSILON, (name, bound)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_fit_outcome_within_claim(name):
    bound, refused_0, refused_1 = _refusal_bound(MODELS[name], RUNS)
    print(
        f"{name}: refused {refused_0}/{RUNS} vs {refused_1}/{RUNS}, "
        f"eps_lower={bound:.3f}"
    )
    assert bound <= EPSILON, (name, bound, refused_0, refused_1)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_fit_outcome_refusing_one_class_caught(name, refuses_one_class):
    bound, refused_0, refused_1 = _refusal_bound(MODELS[name], RUNS)
    print(
        f"{name} (broken): refused {refused_0}/{RUNS} vs {refused_1}/{RUNS}, "
        f"eps_lower={bound:.3f}"
    )
    assert (refused_0, refused_1) == (RUNS, 0)
    assert bound > 4 * EPSILON, (name, bound)


class _WarnsOnLabelOne(DecisionTreeClassifier):
    """A teacher whose fit warns when its shard holds a label 1 (private)."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        if np.any(np.asarray(y) == 1):
            warnings.warn("this shard holds a label 1", UserWarning, stacklevel=2)
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


@pytest.mark.parametrize("name", MODELS)
def test_teachers_warnings_are_not_shown(name):
    """A teacher's warning reads its shard: showing it would release the shard."""
    # The teacher cache would otherwise hand one model the teachers another
    # test fitted, and nothing would be trained (or warn).
    clear_teacher_cache()
    model = MODELS[name](0)
    teacher = _WarnsOnLabelOne(max_depth=1)
    if isinstance(model, KnowledgeTransferClassifier):
        # The student is fitted on public rows and released labels: a plain
        # one, so that only the teacher's warnings are in question.
        model.set_params(
            teacher__estimator=teacher,
            teacher__n_estimators=1,
            student=LogisticRegression(),
        )
        extra = (X_PUBLIC,)
    else:
        model.set_params(estimator=teacher, n_estimators=1)
        extra = ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, Y_TWO_CLASSES, *extra)
    assert not [w for w in caught if "label 1" in str(w.message)]
