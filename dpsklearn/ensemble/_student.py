"""The student of a classifier's released answers: every row answered, for free.

A private classifier stops answering when its budget is spent (``max_queries``
query units, Confident-GNMax's ``max_answers``, the sparse vector's ``T``
failed tests), and some mechanisms abstain on single rows (a failed
Confident-GNMax threshold check, ``SparseVector(fallback="abstain")``).
:class:`AnswerStudent` answers those rows instead of the abstention: it is a
model fitted on the **query rows the askers sent** and the **labels the
mechanism released for them**, nothing else.

Privacy (``docs/privacy_contract.rst``, "Rows the mechanism does not
answer"): the query rows are the caller's (public) and the released labels
are outputs of the ``(epsilon, delta)``-DP mechanism, so the student, and
everything it answers, is post-processing of the release: free, and inside
the same guarantee. No training row, vote count or noise value enters it.
It lives in the fitted model (and pickles with it); a copy of the model
carries a copy of the answers released so far.

The student is refitted lazily: when it is asked, and only when the released
answers have grown by :data:`_GROWTH` since its last fit, so a stream of
single rows does not refit it per row. With fewer than :data:`_MIN_ANSWERS`
answers, or answers of one class only, it answers the most frequent released
label; with no released answer it cannot answer (the rows stay abstained).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from .._validation import is_frame

__all__ = ["AnswerStudent", "ValueStudent", "stack_rows"]

#: Refit when the released answers have grown by this factor since the last fit.
_GROWTH = 2.0
#: Fewer released answers than this: the most frequent released label.
_MIN_ANSWERS = 10
#: Query rows kept to fit the student (the first ones released; a stream
#: longer than this keeps counting labels but stores no more rows).
_MAX_ROWS = 50_000


def _seeded_clone(template: Any) -> Any:
    """A clone whose unset ``random_state`` parameters are fixed (to 0).

    The student answers are post-processing, so any randomness will do; a
    fixed seed makes them reproducible, as the mechanism's answers are with
    ``noise_random_state``.
    """
    student = clone(template)
    try:
        unset = {
            name: 0
            for name, value in student.get_params(deep=True).items()
            if name.split("__")[-1] == "random_state" and value is None
        }
        if unset:
            student.set_params(**unset)
    except Exception:  # not a scikit-learn estimator: as it is
        pass
    return student


def stack_rows(parts: list) -> Any:
    """Concatenate validated query rows of one form (arrays, frames, sparse).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.ensemble._student import stack_rows
    >>> stack_rows([np.zeros((2, 3)), np.ones((1, 3))]).shape
    (3, 3)
    """
    first = parts[0]
    if len(parts) == 1:
        return first
    if is_frame(first):
        import pandas as pd

        return pd.concat(parts, ignore_index=True)
    if sp.issparse(first):
        return sp.vstack(parts, format="csr")
    return np.concatenate([np.asarray(part) for part in parts])


class AnswerStudent:
    """A student fitted on released answers only (query rows and their labels).

    Parameters
    ----------
    estimator : estimator
        The template fitted as the student (a clone of the teachers' base
        estimator: it takes the query rows as the teachers do); when it
        cannot be fitted, a :class:`~sklearn.linear_model.LogisticRegression`
        on the rows, then the most frequent released label.
    n_classes : int
        Labels are class indices in ``range(n_classes)``.

    Attributes
    ----------
    n_answers : int
        Released answers seen (not counting abstentions).
    class_counts : ndarray of shape (n_classes,)
        How often each class was released.
    kind : str or None
        What answered last: ``"estimator"``, ``"logistic"``, ``"most_frequent"``
        or None (nothing released yet).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn.ensemble._student import AnswerStudent
    >>> student = AnswerStudent(LogisticRegression(), n_classes=2)
    >>> student.predict(np.zeros((2, 1))) is None  # nothing released yet
    True
    >>> X = np.linspace(-1, 1, 40).reshape(-1, 1)
    >>> student.add(X, (X[:, 0] > 0).astype(int))
    >>> student.predict(np.array([[-0.9], [0.9]])).tolist()
    [0, 1]
    """

    def __init__(self, estimator: Any, n_classes: int) -> None:
        self.estimator = estimator
        self.n_classes = int(n_classes)
        self.n_answers = 0
        self.class_counts = np.zeros(self.n_classes, dtype=np.int64)
        self.kind: str | None = None
        self._rows: list = []
        self._labels: list = []
        self._n_rows = 0
        self._model: Any = None
        self._fitted_on = 0
        self._lock = threading.Lock()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def add(self, X_rows: Any, labels: np.ndarray) -> None:
        """Remember released answers: query rows and their class indices."""
        labels = np.asarray(labels, dtype=np.int64)
        if labels.size == 0:
            return
        with self._lock:
            self.n_answers += int(labels.size)
            self.class_counts = self.class_counts + np.bincount(
                labels, minlength=self.n_classes
            )
            room = _MAX_ROWS - self._n_rows
            if room <= 0:
                return
            if labels.size > room:
                X_rows, labels = X_rows[:room], labels[:room]
            self._rows.append(X_rows)
            self._labels.append(labels)
            self._n_rows += int(labels.size)

    def _most_frequent(self) -> int:
        return int(np.argmax(self.class_counts))  # ties: the lowest index

    def _refit(self) -> None:
        """Fit the student on the stored answers (warnings of the fit dropped)."""
        X = stack_rows(self._rows)
        y = np.concatenate(self._labels)
        self._rows, self._labels = [X], [y]
        self._fitted_on = self.n_answers
        self._model, self.kind = None, "most_frequent"
        if np.count_nonzero(np.bincount(y, minlength=self.n_classes)) < 2:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for kind, template in (
                ("estimator", self.estimator),
                ("logistic", LogisticRegression()),
            ):
                try:
                    self._model = _seeded_clone(template).fit(X, y)
                    self.kind = kind
                    return
                except Exception:  # the template cannot take these rows
                    continue

    def _ready(self) -> bool:
        """Whether a fitted student answers (refit when the answers doubled)."""
        if self.n_answers < _MIN_ANSWERS or np.count_nonzero(self.class_counts) < 2:
            self.kind = "most_frequent"
            return False
        if self._model is None and self._fitted_on and (
            self.n_answers < _GROWTH * self._fitted_on
        ):
            return False  # its last fit fell back; wait for more answers
        if self._model is None or self.n_answers >= _GROWTH * self._fitted_on:
            self._refit()
        return self._model is not None

    def predict(self, X_rows: Any) -> np.ndarray | None:
        """Class indices for ``X_rows``, or None when nothing was released yet."""
        with self._lock:
            if self.n_answers == 0:
                self.kind = None
                return None
            n = X_rows.shape[0]
            if not self._ready():
                return np.full(n, self._most_frequent(), dtype=np.int64)
            model = self._model
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                index = np.asarray(model.predict(X_rows)).astype(np.int64)
        except Exception:  # a row the student cannot read: the frequent label
            return np.full(n, self._most_frequent(), dtype=np.int64)
        return np.clip(index, 0, self.n_classes - 1)

    def predict_proba(self, X_rows: Any) -> np.ndarray | None:
        """Class probabilities for ``X_rows`` (None when nothing was released)."""
        with self._lock:
            if self.n_answers == 0:
                return None
            n = X_rows.shape[0]
            frequencies = self.class_counts / self.class_counts.sum()
            ready = self._ready()
            model = self._model
        if not ready or not hasattr(model, "predict_proba"):
            if ready:
                index = self.predict(X_rows)
                proba = np.zeros((n, self.n_classes))
                proba[np.arange(n), index] = 1.0
                return proba
            return np.tile(frequencies, (n, 1))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                part = np.asarray(model.predict_proba(X_rows), dtype=np.float64)
        except Exception:
            return np.tile(frequencies, (n, 1))
        proba = np.zeros((n, self.n_classes))
        proba[:, np.asarray(model.classes_, dtype=np.int64)] = part
        return proba


class ValueStudent:
    """A student of released values in ``[0, 1]`` (a soft-label regressor's answers).

    Fitted on the query rows answered and the values released for them
    only (post-processing, free): a clone of a regressor ``estimator`` on the
    values, or of a classifier ``estimator`` on the values rounded to ``{0,
    1}``, answering its ``predict_proba[:, 1]``; the mean released value
    while fewer than :data:`_MIN_ANSWERS` were released (or one rounded
    class); None while none were. Refitted when the answers double.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from dpsklearn.ensemble._student import ValueStudent
    >>> student = ValueStudent(Ridge(alpha=1e-6))
    >>> X = np.linspace(0, 1, 40).reshape(-1, 1)
    >>> student.add(X, X[:, 0])
    >>> np.round(student.predict(np.array([[0.25]])), 2).tolist()
    [0.25]
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self.n_answers = 0
        self.total = 0.0
        self._rows: list = []
        self._values: list = []
        self._n_rows = 0
        self._model: Any = None
        self._fitted_on = 0

    def add(self, X_rows: Any, values: np.ndarray) -> None:
        """Remember released values of query rows."""
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return
        self.n_answers += int(values.size)
        self.total += float(values.sum())
        room = _MAX_ROWS - self._n_rows
        if room <= 0:
            return
        if values.size > room:
            X_rows, values = X_rows[:room], values[:room]
        self._rows.append(X_rows)
        self._values.append(values)
        self._n_rows += int(values.size)

    def _refit(self):
        from sklearn.base import is_classifier

        X = stack_rows(self._rows)
        values = np.concatenate(self._values)
        self._rows, self._values = [X], [values]
        self._fitted_on = self.n_answers
        self._model = None
        target = (values >= 0.5).astype(np.int64) if is_classifier(
            self.estimator
        ) else values
        if is_classifier(self.estimator) and np.unique(target).size < 2:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._model = _seeded_clone(self.estimator).fit(X, target)
            except Exception:  # the template cannot take these rows
                self._model = None

    def predict(self, X_rows: Any) -> np.ndarray | None:
        """Values in ``[0, 1]`` for ``X_rows``, or None when nothing was released."""
        if self.n_answers == 0:
            return None
        n = X_rows.shape[0]
        mean = self.total / self.n_answers
        if self.n_answers < _MIN_ANSWERS:
            return np.full(n, mean)
        if self.n_answers >= _GROWTH * max(self._fitted_on, 1) or (
            self._model is None and not self._fitted_on
        ):
            self._refit()
        model = self._model
        if model is None:
            return np.full(n, mean)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if hasattr(model, "predict_proba") and hasattr(model, "classes_"):
                    proba = np.asarray(model.predict_proba(X_rows), dtype=np.float64)
                    column = list(np.asarray(model.classes_)).index(1)
                    out = proba[:, column]
                else:
                    out = np.asarray(model.predict(X_rows), dtype=np.float64)
        except Exception:
            return np.full(n, mean)
        return np.clip(out.reshape(n), 0.0, 1.0)
