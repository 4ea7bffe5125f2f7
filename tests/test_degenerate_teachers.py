"""Teachers that collapse to one class are named, from the released answers only.

The check reads what the model released (post-processing of private answers:
free, nothing else about the data shown) and public numbers, and warns once
when 200 or more answers name one class as often as teachers voting that
class on at least 97 % of the queries would, given the mechanism's own blur
(the exponential mechanism and GNMax release a unanimous class with a
probability known from public numbers). It fires on a text task split into
tiny shards (each teacher sees a few documents and votes the majority
class), blurred or not, and not on Adult, whose answers are 89-94 % one
class, nor on blurred answers of two classes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dpsklearn import (
    KnowledgeTransferClassifier,
    PrivatePredictionClassifier,
    SubsampleAggregateClassifier,
)
from dpsklearn.datasets import load_adult
from dpsklearn.demo import adult_frames, frame_teacher

ONE_CLASS = "name one class"


def _documents(n, rng):
    """Short texts; the minority class uses a few rare words of its own."""
    common = [f"w{i}" for i in range(400)]
    rare = [f"r{i}" for i in range(40)]
    y = (rng.random(n) < 0.3).astype(int)
    docs = []
    for label in y:
        words = list(rng.choice(common, 8))
        if label:
            words += list(rng.choice(rare, 1))
        docs.append(" ".join(words))
    return np.array(docs, dtype=object), y


def _messages(caught):
    return [str(w.message) for w in caught]


def test_text_teachers_on_tiny_shards_are_named():
    rng = np.random.default_rng(0)
    docs, y = _documents(6_400, rng)
    model = SubsampleAggregateClassifier(
        make_pipeline(TfidfVectorizer(), LogisticRegression()),
        n_estimators=600,  # 10 documents each: they learn the majority only
        epsilon=1.0,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(docs[:6_000], y[:6_000])
        labels, abstained = model.predict(docs[6_000:], return_abstained=True)
    named = [m for m in _messages(caught) if ONE_CLASS in m]
    assert len(named) == 1  # once
    answered = labels[~abstained]
    assert np.mean(answered == 0) >= 0.97  # what the warning reports
    # Warned once: a later call does not warn again.
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        model.predict(docs[6_000:6_010])
    assert not [m for m in _messages(again) if ONE_CLASS in m]


def _text_labeller(epsilon):
    return PrivatePredictionClassifier(
        make_pipeline(TfidfVectorizer(), LogisticRegression()),
        n_estimators=600,  # 10 documents each: they learn the majority only
        epsilon=epsilon,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_blurred_answers_of_one_class_teachers_are_named():
    # The exponential mechanism at epsilon 0.35 releases the class all 600
    # teachers vote for 96 % of the time (public numbers), so answers of
    # teachers that vote the majority on every query are 91 % one class:
    # below 97 %, yet what the noise alone gives. The warning compares the
    # share with that noise and says so.
    rng = np.random.default_rng(0)
    docs, y = _documents(6_400, rng)
    model = _text_labeller(0.35)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(docs[:6_000], y[:6_000])
        labels = model.predict(docs[6_000:])
    assert 0.85 < np.mean(labels == 0) < 0.97
    named = [m for m in _messages(caught) if ONE_CLASS in m]
    assert len(named) == 1 and "noise alone" in named[0]


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_blurred_answers_of_majority_teachers_are_named_quick():
    # The quick sibling: 100 teachers that always vote the majority class;
    # at epsilon 2 the exponential mechanism releases their class 92 % of
    # the time, so the answers are 91 % one class.
    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6_000, 2))
    y = (rng.random(6_000) < 0.3).astype(int)
    model = PrivatePredictionClassifier(
        DummyClassifier(),
        n_estimators=100,
        epsilon=2.0,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
        labels = model.predict(rng.normal(size=(400, 2)))
    assert 0.85 < np.mean(labels == 0) < 0.97
    named = [m for m in _messages(caught) if ONE_CLASS in m]
    assert len(named) == 1 and "noise alone" in named[0]


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_a_student_of_one_class_teachers_is_told():
    rng = np.random.default_rng(0)
    docs, y = _documents(6_400, rng)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        KnowledgeTransferClassifier(_text_labeller(0.35)).fit(
            docs[:6_000], y[:6_000], X_public=docs[6_000:]
        )
    assert len([m for m in _messages(caught) if ONE_CLASS in m]) == 1


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_blurred_answers_of_two_classes_are_not_named():
    # Teachers that separate two classes (70 % / 30 % of the queries) with
    # the blur of the quick test above: the released share is far from what
    # one-class votes give, and nothing is said.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6_400, 2))
    y = (X[:, 0] > 0.52).astype(int)  # 30 % ones
    model = PrivatePredictionClassifier(
        LogisticRegression(),
        n_estimators=100,
        epsilon=2.0,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X[:6_000], y[:6_000])
        labels = model.predict(X[6_000:])
    assert np.mean(labels == 0) < 0.8
    assert not [m for m in _messages(caught) if ONE_CLASS in m]


@pytest.mark.slow  # 1,628 DataFrame teachers on 32,561 rows: 10-12 s each
@pytest.mark.parametrize("estimator", ["subsample", "private_prediction"])
def test_adult_answers_are_not_named(estimator):
    # The Adult DataFrame with the demo's teacher (one-hot and scaling on its
    # own shard): the answers are 89-94 % "<=50K".
    train, test = load_adult(as_frame=True), load_adult(subset="test", as_frame=True)
    X, X_test, strings, numbers = adult_frames(train, test)
    y = np.asarray(train.target)
    classes = np.unique(y)
    teacher = frame_teacher(strings, numbers)
    if estimator == "subsample":
        model = SubsampleAggregateClassifier(
            teacher, max_queries=1_000, classes=classes, random_state=0
        )
    else:
        model = PrivatePredictionClassifier(
            teacher, max_queries=1_000, classes=classes,
            random_state=0,
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
        model.predict(X_test.iloc[:1_000])
    assert not [m for m in _messages(caught) if ONE_CLASS in m]
