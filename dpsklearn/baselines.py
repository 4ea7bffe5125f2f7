"""Non-private reference figures that every privacy-utility number stands beside.

These functions read the fitted teachers directly. They are **not private**:
use them only to evaluate (benchmarks, the demo), never to answer queries
for someone who must not learn the training data.
"""

from __future__ import annotations

import numpy as np

__all__ = ["base_rate", "teacher_majority_vote"]


def teacher_majority_vote(model, X):
    """The non-private majority vote of a fitted ensemble's teachers on ``X``.

    An ensemble whose teachers collapse to constants answers every query
    "stably" at the base rate; comparing its private answers with this vote
    and with :func:`base_rate` shows it.

    Parameters
    ----------
    model : fitted teacher ensemble (for example a SubsampleAggregateClassifier)
    X : array-like of shape (n_queries, n_features)

    Returns
    -------
    labels : ndarray of shape (n_queries,)

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> from dpsklearn.baselines import teacher_majority_vote
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     model = SubsampleAggregateClassifier(n_estimators=5, classes=[0, 1],
    ...                                          random_state=0).fit(X, y)
    >>> teacher_majority_vote(model, X[:4]).shape
    (4,)
    """
    return model.classes_[np.argmax(model.vote_counts(X), axis=1)]


def base_rate(y_train, y_test):
    """Accuracy of always answering the training majority class on ``y_test``.

    Parameters
    ----------
    y_train : array-like of shape (n_train,)
        The labels whose majority class is answered.
    y_test : array-like of shape (n_test,)
        The labels it is scored on.

    Returns
    -------
    accuracy : float

    Examples
    --------
    >>> from dpsklearn.baselines import base_rate
    >>> base_rate([0, 0, 1], [0, 1, 0, 0])
    0.75
    """
    values, counts = np.unique(np.asarray(y_train), return_counts=True)
    majority = values[np.argmax(counts)]
    return float(np.mean(np.asarray(y_test) == majority))
