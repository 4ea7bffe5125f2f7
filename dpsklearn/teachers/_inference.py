"""Teachers' inference: their outputs on query rows, in chunks that bound memory.

Every teacher is asked the same query chunk, so the outputs stack into one
``(n_teachers, chunk_rows)`` block (``(n_teachers, chunk_rows, width)`` for
probabilities); chunks bound that block's memory. Input was validated once
by the estimator, so the teachers skip their own finiteness checks.
"""

from __future__ import annotations

import numpy as np
from sklearn import config_context

from .._validation import n_rows, take_rows

__all__ = ["teacher_class_probabilities", "teacher_outputs"]

# Upper bound on the entries of one (n_teachers, chunk_rows) block of teacher
# outputs: query chunks bound the memory of the vote matrix.
_MAX_BLOCK_ENTRIES = 1 << 24


def _query_chunks(n_queries, n_teachers, width=1):
    rows = max(1, _MAX_BLOCK_ENTRIES // max(1, n_teachers * width))
    for start in range(0, n_queries, rows):
        yield slice(start, min(n_queries, start + rows))


def teacher_outputs(teachers, X, method="predict", *, width=1):
    """Yield ``(row_slice, outputs)`` per query chunk, outputs stacked over teachers.

    ``outputs`` has shape ``(n_teachers, chunk_rows)`` for ``predict`` or
    ``(n_teachers, chunk_rows, width)`` for ``predict_proba``. Input was
    validated once by the caller, so the teachers skip their finiteness check.
    """
    n_queries = n_rows(X)
    with config_context(assume_finite=True):
        for rows in _query_chunks(n_queries, len(teachers), width):
            X_chunk = take_rows(X, rows)
            yield rows, np.stack([getattr(t, method)(X_chunk) for t in teachers])


def _class_columns(teacher, n_columns):
    classes = getattr(teacher, "classes_", None)
    if classes is None:
        return np.arange(n_columns)
    return np.asarray(classes, dtype=np.int64)


def teacher_class_probabilities(teachers, X, n_classes):
    """Yield ``(row_slice, probabilities)`` per query chunk, on the global classes.

    Teachers are fitted on class *indices* into the global ``classes_``; a
    teacher whose shard missed some classes has fewer ``predict_proba``
    columns. Its columns are placed at its ``classes_`` (class indices), the
    missing classes getting probability 0, so every teacher's row has
    ``n_classes`` entries.

    Parameters
    ----------
    teachers : list of fitted classifiers with ``predict_proba``
    X : ndarray of shape (n_queries, n_features)
    n_classes : int

    Yields
    ------
    rows : slice
    probabilities : float ndarray of shape (n_teachers, chunk_rows, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.teachers import ConstantTeacher, teacher_class_probabilities
    >>> teachers = [ConstantTeacher(0, 3), ConstantTeacher(2, 3)]
    >>> rows, proba = next(teacher_class_probabilities(teachers, np.zeros((2, 1)), 3))
    >>> proba.shape, proba[1, 0].tolist()
    ((2, 2, 3), [0.0, 0.0, 1.0])
    """
    n_queries = n_rows(X)
    with config_context(assume_finite=True):
        for rows in _query_chunks(n_queries, len(teachers), n_classes):
            X_chunk = take_rows(X, rows)
            out = np.zeros((len(teachers), n_rows(X_chunk), n_classes))
            for index, teacher in enumerate(teachers):
                proba = np.asarray(teacher.predict_proba(X_chunk), dtype=np.float64)
                out[index][:, _class_columns(teacher, proba.shape[1])] = proba
            yield rows, out
