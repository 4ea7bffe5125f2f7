"""Vote counts and the distance to instability (Bassily et al. 2018, Algorithm 2).

Replace-one neighbours change one record, hence one teacher, hence move one
vote from one class to another: every count has sensitivity 1 and the gap
between the two largest counts moves by up to 2. The distance to instability
is therefore

    dist = max(0, ceil(gap / 2) - 1)

which has sensitivity 1 and is 0 whenever one changed record can change the
majority. The paper prints ``max(0, top - second - 1)``, which is right for
add/remove-one but has sensitivity 2 under replace-one and reads 1 at gap 2,
where the majority can flip (``docs/corrections.rst``, "Distance to
instability under replace-one"; tested exhaustively).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "distance_from_gap",
    "distance_to_instability",
    "majority_and_gap",
    "vote_counts",
]


def vote_counts(teacher_predictions: ArrayLike, n_classes: int) -> NDArray[np.int64]:
    """Count the teachers' votes per query, without a Python loop over queries.

    Parameters
    ----------
    teacher_predictions : int array-like of shape (n_teachers, n_queries)
        Class indices in ``[0, n_classes)``.
    n_classes : int

    Returns
    -------
    counts : int64 ndarray of shape (n_queries, n_classes)

    Examples
    --------
    >>> from dpsklearn.mechanisms import vote_counts
    >>> vote_counts([[0, 1], [0, 0], [1, 1]], 2).tolist()
    [[2, 1], [1, 2]]
    """
    predictions = np.asarray(teacher_predictions)
    if predictions.ndim != 2:
        raise ValueError("teacher_predictions must be 2-D (n_teachers, n_queries).")
    n_teachers, n_queries = predictions.shape
    if n_classes <= 16:
        # A comparison per class reduces over teachers with no scatter; for a
        # few classes it is several times faster than bincount.
        counts = np.empty((n_queries, n_classes), dtype=np.int64)
        for class_index in range(n_classes):
            counts[:, class_index] = np.count_nonzero(
                predictions == class_index, axis=0
            )
        return counts
    flat = predictions.astype(np.int64) + (
        np.arange(n_queries, dtype=np.int64) * n_classes
    )
    return np.bincount(flat.ravel(), minlength=n_queries * n_classes).reshape(
        n_queries, n_classes
    )


def majority_and_gap(counts: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """The majority class index (ties to the lowest index) and the top-two gap.

    ``second`` is 0 when one class holds every vote (or there is one class).

    Returns
    -------
    majority : int64 ndarray of shape (n_queries,)
    gap : int64 ndarray of shape (n_queries,)
    """
    counts = np.asarray(counts, dtype=np.int64)
    majority = np.argmax(counts, axis=1)
    top = np.take_along_axis(counts, majority[:, None], axis=1)[:, 0]
    if counts.shape[1] >= 2:
        second = np.partition(counts, -2, axis=1)[:, -2]
    else:
        second = np.zeros_like(top)
    return majority, top - second


def distance_from_gap(gap: ArrayLike) -> NDArray[np.int64]:
    """``max(0, ceil(gap/2) - 1)``: the distance to instability of a top-two gap.

    Examples
    --------
    >>> from dpsklearn.mechanisms import distance_from_gap
    >>> distance_from_gap([0, 1, 2, 3, 4]).tolist()
    [0, 0, 0, 1, 1]
    """
    gap = np.asarray(gap, dtype=np.int64)
    return np.maximum(0, (gap + 1) // 2 - 1)


def distance_to_instability(counts: ArrayLike) -> NDArray[np.int64]:
    """The distance to instability ``max(0, ceil(gap/2) - 1)`` per query.

    Examples
    --------
    >>> from dpsklearn.mechanisms import distance_to_instability
    >>> distance_to_instability([[5, 5], [6, 4], [7, 3], [10, 0]]).tolist()
    [0, 0, 1, 4]
    """
    _, gap = majority_and_gap(counts)
    return distance_from_gap(gap)
