"""A teacher ensemble's two steps: fit k teachers on disjoint shards, count votes.

The estimators of :mod:`dpsklearn.ensemble` (and the shards of
:mod:`dpsklearn.kernel_ridge`) call these; what they release about the
teachers is their mechanism's business, never this module's. A fit whose
teachers were already fitted (same rows, base estimator, number of teachers
and integer ``random_state``: only privacy parameters differ) reuses them
(:mod:`dpsklearn.teachers._cache`). Rows given as Dask collections are fitted
where their partitions live (:mod:`dpsklearn.teachers._partitions`), and
bypass the cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone
from sklearn.utils import check_random_state

from .._dask_input import DaskLabels, DaskRows
from .._validation import n_rows
from ._cache import cached_derived, cached_fit, cached_statistic, ensemble_key
from ._fused import FusedLinearEnsemble, _fuse
from ._inference import count_teacher_votes
from ._partitions import fit_teachers_on_partitions
from ._sharding import fit_teachers, partition_indices, teacher_seeds

__all__ = ["count_votes", "fit_teacher_ensemble", "fuse_teachers"]


def fit_teacher_ensemble(
    estimator: Any,
    X: ArrayLike | DaskRows,
    y: np.ndarray | DaskLabels,
    n_estimators: int,
    *,
    random_state: int | np.random.RandomState | None = None,
    n_classes: int | None = None,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> list:
    """Fit ``n_estimators`` clones of ``estimator`` on a random partition of the rows.

    The partition and every teacher's seed come from ``random_state``
    (``docs/design.rst``, "Shards and teachers"), never from the mechanism
    noise. With an integer ``random_state`` the teachers are looked up
    first in the teacher cache (``dpsklearn.set_config(teacher_cache=...)``):
    a fit on the same rows with the same base estimator, number of teachers
    and classes gets the very teachers a fresh fit would give. Rows given as
    Dask collections (:class:`~dpsklearn._dask_input.DaskRows`) are fitted
    on the cluster, the same shards and seeds as for a NumPy ``X``
    (:func:`~dpsklearn.teachers._partitions.fit_teachers_on_partitions`),
    and never through the cache: a collection cannot be hashed without
    reading it, so a Dask fit always trains its teachers where the data
    lives (``docs/cluster.rst``).

    Parameters
    ----------
    estimator : estimator
        Unfitted base estimator.
    X : array, DataFrame, sparse matrix, list of documents or DaskRows
        Validated private rows, in the form the teachers take.
    y : ndarray of shape (n_samples,) or DaskLabels
        Class indices into the global classes (classifiers) or targets.
    n_estimators : int
    random_state : int, RandomState instance or None
    n_classes : int or None
        The number of global classes for classifier teachers; ``None`` for
        regressors.
    n_jobs, verbose : joblib parameters.

    Returns
    -------
    teachers : list of fitted estimators, in shard order
    """

    if isinstance(X, DaskRows) or isinstance(y, DaskLabels):
        if not (isinstance(X, DaskRows) and isinstance(y, DaskLabels)):
            raise TypeError("Rows on a Dask cluster take labels on it (DaskLabels).")
        return fit_teachers_on_partitions(
            estimator,
            X,
            y,
            n_estimators,
            random_state=random_state,
            n_classes=n_classes,
            verbose=verbose,
        )

    def fit():
        rng = check_random_state(random_state)
        shards = partition_indices(n_rows(X), n_estimators, rng)
        seeds = teacher_seeds(rng, n_estimators)
        return fit_teachers(
            clone(estimator),
            X,
            y,
            shards,
            seeds,
            n_classes=n_classes,
            n_jobs=n_jobs,
            verbose=verbose,
        )

    key = ensemble_key(estimator, X, y, n_estimators, random_state, n_classes)
    return cached_fit(key, fit)


def fuse_teachers(
    teachers: list, n_classes: int, mode: bool | str = "auto"
) -> FusedLinearEnsemble | None:
    """Stack linear teachers for the fused vote path, or None.

    ``mode="auto"`` fuses when every teacher can be fused; ``True`` requires
    it (``ValueError`` naming the first teacher that cannot); ``False``
    keeps the per-teacher path. Votes are identical either way
    (:mod:`dpsklearn.teachers`, the fused path).

    Returns
    -------
    fused : FusedLinearEnsemble or None
    """
    if mode is False:
        return None
    fused, reason = cached_derived(
        teachers, ("fused", int(n_classes)), lambda: _fuse(teachers, n_classes)
    )
    if fused is None and mode is True:
        raise ValueError(
            "fused=True needs every teacher to be a linear classifier or a "
            "Pipeline of affine scalers (optionally after a ColumnTransformer "
            "of OneHotEncoder and those scalers) and one; here: "
            f"{reason}. Use fused='auto' or False."
        )
    return fused


def count_votes(
    teachers: list,
    X: ArrayLike,
    n_classes: int,
    fused: FusedLinearEnsemble | None = None,
    *,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> np.ndarray:
    """Vote counts ``(n_queries, n_classes)`` of the teachers on ``X``.

    Teachers vote with class indices into the global classes. Through
    ``fused`` when given (identical votes), otherwise in parallel over
    blocks of teachers (:func:`~dpsklearn.teachers.count_teacher_votes`).
    Teachers held by the teacher cache keep the counts of the batches they
    were asked (a search asks every epsilon the same rows).

    Parameters
    ----------
    teachers : list of fitted classifiers
    X : validated query rows
    n_classes : int
    fused : FusedLinearEnsemble, optional
    n_jobs : int, default=None
    verbose : int, default=0

    Returns
    -------
    counts : int64 ndarray of shape (n_queries, n_classes)
    """

    def compute():
        if fused is not None:
            return fused.vote_counts(X, teachers)
        return count_teacher_votes(
            teachers, X, n_classes, n_jobs=n_jobs, verbose=verbose
        )

    return cached_statistic(teachers, X, ("votes", int(n_classes)), compute)
