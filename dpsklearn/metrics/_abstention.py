"""The answered fraction beside the score.

A model that abstains answers some rows with ``abstain_label`` (or, for a
soft-label regressor, its fallback value); a score over all rows counts them
as answers, so a model that halted early scores like a constant and a grid
over epsilon can look flat. :func:`make_abstention_scorer` makes a scorer
for :class:`~sklearn.model_selection.GridSearchCV` that reports, from one
``predict`` per fold, the score over all rows, the fraction of rows
answered and the score on the answered rows (``cv_results_`` columns
``mean_test_score``, ``mean_test_answered``, ``mean_test_score_answered``).

Scoring uses the true labels of the validation rows, so a search over
private validation rows is outside the guarantee (the README's privacy
contract, "Tuning on private data").
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import is_classifier
from sklearn.metrics import accuracy_score, r2_score
from sklearn.pipeline import Pipeline

from .._warn import warn_user
from ..exceptions import AbstentionWarning

__all__ = [
    "AbstentionScorer",
    "make_abstention_scorer",
    "predict_with_abstentions",
    "warn_if_abstained",
]

_METRICS = {"accuracy": accuracy_score, "r2": r2_score}


def _final_step(estimator):
    while isinstance(estimator, Pipeline):
        estimator = estimator.steps[-1][1]
    return estimator


def _reports_abstentions(estimator):
    try:
        parameters = inspect.signature(_final_step(estimator).predict).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return "return_abstained" in parameters


def predict_with_abstentions(
    estimator: Any, X: ArrayLike
) -> tuple[np.ndarray, NDArray[np.bool_]]:
    """``predict(X)`` and the mask of the rows the model abstained on.

    Works for a dpsklearn model and for a :class:`~sklearn.pipeline.Pipeline`
    ending in one (the flag is passed to the final step's ``predict``); a
    model that never abstains gets an all-False mask.

    Parameters
    ----------
    estimator : fitted estimator
    X : array-like, DataFrame, list of str or sparse matrix

    Returns
    -------
    y_pred : ndarray of shape (n_rows,)
    abstained : bool ndarray of shape (n_rows,)

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn.metrics import predict_with_abstentions
    >>> model = LogisticRegression().fit([[0.0], [1.0]], [0, 1])
    >>> y_pred, abstained = predict_with_abstentions(model, [[0.2]])
    >>> y_pred.tolist(), abstained.tolist()
    ([0], [False])
    """
    if _reports_abstentions(estimator):
        y_pred, abstained = estimator.predict(X, return_abstained=True)
        return np.asarray(y_pred), np.asarray(abstained, dtype=bool)
    y_pred = np.asarray(estimator.predict(X))
    return y_pred, np.zeros(y_pred.shape[0], dtype=bool)


def warn_if_abstained(estimator: Any, abstained: NDArray[np.bool_]) -> None:
    """Warn with :class:`~dpsklearn.AbstentionWarning` when rows were abstained on."""
    n_abstained = int(np.count_nonzero(abstained))
    if not n_abstained:
        return
    what = (
        "answered with abstain_label_; they count as wrong answers"
        if is_classifier(estimator)
        else "answered with the fallback value; it enters the score as an answer"
    )
    warn_user(
        f"{type(estimator).__name__}.score: the model abstained on {n_abstained} "
        f"of {len(abstained)} rows ({what}). Use "
        "dpsklearn.metrics.make_abstention_scorer() to see the answered fraction "
        "beside the score.",
        AbstentionWarning,
    )


class AbstentionScorer:
    """The score, the answered fraction and the score on answered rows.

    Made by :func:`make_abstention_scorer`; call it as scikit-learn calls a
    scorer, ``scorer(estimator, X, y)``. It returns a dict, which
    :class:`~sklearn.model_selection.GridSearchCV` and
    :func:`~sklearn.model_selection.cross_validate` record as three metrics.

    Parameters
    ----------
    metric : {"accuracy", "r2"}, callable or None
        ``metric(y_true, y_pred, sample_weight=None)``; ``None``: accuracy
        for a classifier, R^2 otherwise.
    """

    def __init__(self, metric: str | Callable[..., float] | None = None) -> None:
        self.metric = metric

    def _metric(self, estimator):
        if self.metric is None:
            return accuracy_score if is_classifier(estimator) else r2_score
        if isinstance(self.metric, str):
            return _METRICS[self.metric]
        return self.metric

    def __call__(
        self,
        estimator: Any,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
    ) -> dict[str, float]:
        """``{"score", "answered", "score_answered"}`` from one ``predict``."""
        metric = self._metric(estimator)
        y_pred, abstained = predict_with_abstentions(estimator, X)
        y = np.asarray(y)
        answered = ~abstained

        def scored(mask):
            if not mask.any():
                return math.nan
            weight = None if sample_weight is None else np.asarray(sample_weight)[mask]
            if weight is None:
                return float(metric(y[mask], y_pred[mask]))
            return float(metric(y[mask], y_pred[mask], sample_weight=weight))

        return {
            "score": scored(np.ones_like(answered)),
            "answered": float(answered.mean()) if answered.size else math.nan,
            "score_answered": scored(answered),
        }

    def __repr__(self):
        return f"make_abstention_scorer(metric={self.metric!r})"


def make_abstention_scorer(
    metric: str | Callable[..., float] | None = None,
) -> AbstentionScorer:
    """A scorer for ``GridSearchCV`` that shows the answered fraction beside the score.

    Parameters
    ----------
    metric : {"accuracy", "r2"}, callable or None, default=None
        The score; ``None``: accuracy for classifiers, R^2 for regressors.
        A callable is ``metric(y_true, y_pred)`` (and ``sample_weight=`` when
        weights are passed).

    Returns
    -------
    scorer : AbstentionScorer
        ``scorer(estimator, X, y)`` returns ``{"score": ..., "answered": ...,
        "score_answered": ...}``: the score over all rows (abstentions
        included), the fraction of rows answered, and the score on answered
        rows only (NaN when none). Pass ``refit="score"`` (or another key)
        to ``GridSearchCV``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> from dpsklearn.metrics import make_abstention_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] > 0).astype(int)
    >>> model = SubsampleAggregateClassifier(
    ...     DecisionTreeClassifier(max_depth=1), n_estimators=30, classes=[0, 1],
    ...     max_queries=300, random_state=0)  # Confident-GNMax: it may abstain
    >>> search = GridSearchCV(model, {"epsilon": [0.5, 8.0]}, cv=2,
    ...                       scoring=make_abstention_scorer(), refit="score")
    >>> search = search.fit(X, y)
    >>> sorted(k for k in search.cv_results_ if k.startswith("mean_test"))
    ['mean_test_answered', 'mean_test_score', 'mean_test_score_answered']
    """
    return AbstentionScorer(metric)
