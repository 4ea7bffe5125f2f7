"""Answers of a model released at ``fit``: post-processing, free and unlimited.

A publishable estimator (:class:`~dpsklearn.KnowledgeTransferClassifier`'s
student, :class:`~dpsklearn.PrivateGridSearch`'s chosen model) keeps one
released model; its prediction methods read that model only, so they cost
nothing and may be called without limit (``docs/privacy_contract.rst``,
"What may be published"). :class:`ReleasedModelMixin` writes those methods
once: a subclass names the attribute that holds the released model, the
model as configured before ``fit`` (for ``available_if``), and how query
rows are validated.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

__all__ = ["ReleasedModelMixin"]


def _released_has(method: str):
    """``available_if`` check: the released (else configured) model has ``method``."""

    def check(self) -> bool:
        model = getattr(self, self._released_attribute, None)
        if model is None:
            model = self._configured_model()
        getattr(model, method)  # AttributeError when it lacks the method
        return True

    return check


class ReleasedModelMixin:
    """``predict``, ``predict_proba``, ``predict_log_proba``, ``decision_function``
    of the model a private fit released (free).

    Subclasses set ``_released_attribute`` and implement
    :meth:`_configured_model` and :meth:`_validate_released_query`.
    """

    #: The fitted attribute that holds the released model.
    _released_attribute: ClassVar[str] = ""

    def _configured_model(self) -> Any:
        """The model as configured before ``fit`` (for ``available_if``)."""
        raise NotImplementedError

    def _validate_released_query(self, X: Any) -> Any:
        """Query rows as the released model takes them (nothing is spent)."""
        raise NotImplementedError

    def _released(self, method: str, X: Any) -> Any:
        check_is_fitted(self)
        model = getattr(self, self._released_attribute)
        return getattr(model, method)(self._validate_released_query(X))

    def predict(self, X: Any) -> Any:
        """The released model's predictions for ``X`` (free: post-processing).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        return self._released("predict", X)

    @available_if(_released_has("predict_proba"))
    def predict_proba(self, X: Any) -> Any:
        """The released model's class probabilities for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
        """
        return self._released("predict_proba", X)

    @available_if(_released_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> Any:
        """The released model's class log-probabilities for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_queries, n_classes)
        """
        return self._released("predict_log_proba", X)

    @available_if(_released_has("decision_function"))
    def decision_function(self, X: Any) -> Any:
        """The released model's decision function for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        scores : ndarray of shape (n_queries,) or (n_queries, n_classes)
        """
        return self._released("decision_function", X)
