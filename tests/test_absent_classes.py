"""A class in ``classes`` that does not occur in ``y``.

Checking ``set(classes) - set(y)`` before the spend would read the private
labels: a ``y`` without one class is a neighbour of one with it (replace one
record), so a refusal or a warning that depended on it would be an unpaid
release (``docs/privacy_contract.rst``, "What fit reads before the spend").
Instead ``fit`` says, from public numbers only, how often the mechanism's
noise alone would name a class no teacher votes for, and ``predict`` watches
the released answers (free) for a class named no more often than that.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from dpsklearn import PrivatePredictionClassifier, SubsampleAggregateClassifier
from dpsklearn.ensemble._base import absent_class_share

X, Y = make_classification(
    n_samples=6000, n_features=6, class_sep=1.0, random_state=0
)
FIT_WARNING = "a class that no teacher votes for would still be named"
PREDICT_WARNING = "no more often than the noise alone"


def _model(epsilon=1.0, cls=PrivatePredictionClassifier, **params):
    return cls(
        LogisticRegression(),
        **params,
        epsilon=epsilon,
        max_queries=500,
        classes=[0, 1, 2],
        random_state=0,
        noise_random_state=0,
    )


def _shown(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_an_absent_class_is_said_at_fit_and_seen_in_the_answers():
    # classes [0, 1, 2], y in {0, 1}: 250 teachers at epsilon 1 name the
    # empty class 2 in about 5 % of answers, by the noise alone.
    model = _model()
    at_fit = _shown(lambda: model.fit(X[:5000], Y[:5000]))
    assert sum(FIT_WARNING in m for m in at_fit) == 1
    labels = []
    at_predict = _shown(lambda: labels.append(model.predict(X[5000:5500])))
    named = [m for m in at_predict if PREDICT_WARNING in m]
    assert len(named) == 1 and named[0].startswith("class 2 is named in")
    share = np.mean(labels[0] == 2)
    expected = absent_class_share(model.privacy_mechanism_, 250, 3)
    assert 0 < share <= expected + 3 * np.sqrt(expected / 500)
    # Said once: a later batch does not say it again.
    again = _shown(lambda: model.predict(X[:300]))
    assert not [m for m in again if PREDICT_WARNING in m]


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_the_fit_warning_reads_public_numbers_only():
    # The same public inputs with a y that holds all three classes: the
    # same warning, word for word, and the fit is never refused.
    y_three = Y.copy()
    y_three[::7] = 2
    said = []
    for y in (Y, y_three):
        said.append(
            [m for m in _shown(lambda y=y: _model().fit(X[:5000], y[:5000]))
             if FIT_WARNING in m]
        )
    assert said[0] == said[1] and len(said[0]) == 1


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_a_class_that_occurs_is_not_named():
    y_three = Y.copy()
    y_three[Y == 1] = np.where(X[Y == 1, 0] > 0, 2, 1)  # three real classes
    model = _model(epsilon=4.0)
    model.fit(X[:5000], y_three[:5000])
    shown = _shown(lambda: model.predict(X[5000:5500]))
    assert not [m for m in shown if PREDICT_WARNING in m]


@pytest.mark.filterwarnings("ignore:noise_random_state is set")
def test_exact_answers_never_naming_a_class_are_seen():
    # Confident-GNMax's answers on agreeing teachers are nearly exact: the
    # empty class is never named, and 200 answers without it say so (free).
    model = _model(
        epsilon=4.0, cls=SubsampleAggregateClassifier, mechanism="confident_gnmax"
    )
    model.fit(X[:5000], Y[:5000])
    out = []
    shown = _shown(
        lambda: out.append(model.predict(X[5000:5500], return_abstained=True))
    )
    labels, abstained = out[0]
    assert (~abstained).sum() >= 200 and not np.any(labels[~abstained] == 2)
    assert len([m for m in shown if PREDICT_WARNING in m]) == 1
