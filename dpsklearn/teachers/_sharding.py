"""Sharding and the parallel fit of teachers.

Shards are a data-independent partition of the row indices: a random
permutation from ``random_state``, then ``k`` nearly equal contiguous
blocks, so one record influences exactly one teacher. Teachers are fitted in
batches, one batch per joblib task as :class:`~sklearn.ensemble.BaggingClassifier`
does, each task carrying only its shards' rows; under
``joblib.parallel_config(backend="dask")`` the same code trains on a Dask
cluster. Every teacher gets its own integer seed from one
:class:`numpy.random.SeedSequence`, so the fitted teachers do not depend on
``n_jobs`` or on the backend (``docs/design.rst``, "Shards and teachers").
Rows are taken by :func:`~dpsklearn._validation.take_rows`, so the teachers
see ``X`` in the form the user gave it (a DataFrame's shard is a DataFrame).

Within a batch, the first teacher's ``fit`` validates the parameters (every
teacher of the ensemble has the same parameters but its integer seed) and
the others skip scikit-learn's parameter validation; every teacher skips
the finiteness check of its rows, which the estimator made once for all
(``sklearn.config_context(skip_parameter_validation=True,
assume_finite=True)``, public settings since scikit-learn 1.3). With
``verbose``, the teachers are cut into at least :data:`_VERBOSE_BATCHES`
batches and their progress is reported as batches finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from joblib import effective_n_jobs, parallel_config
from numpy.typing import ArrayLike, NDArray
from sklearn import config_context
from sklearn.base import clone
from sklearn.utils.parallel import Parallel, delayed

from .._progress import Progress
from .._validation import n_rows, take_rows

__all__ = [
    "ConstantTeacher",
    "fit_teachers",
    "partition_indices",
    "teacher_seeds",
]

# With verbose, at least this many batches: a report at every tenth (and
# more than one batch per worker, so that no worker idles at the end).
_VERBOSE_BATCHES = 20


def partition_indices(
    n_samples: int, n_shards: int, rng: np.random.RandomState
) -> list[NDArray[np.int64]]:
    """A random permutation of the rows cut into ``n_shards`` near-equal blocks.

    Parameters
    ----------
    n_samples, n_shards : int
    rng : numpy.random.RandomState
        From :func:`sklearn.utils.check_random_state` (``random_state``).

    Returns
    -------
    shards : list of int64 ndarray
        Disjoint index arrays whose sizes differ by at most one.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.teachers import partition_indices
    >>> shards = partition_indices(10, 3, np.random.RandomState(0))
    >>> sorted(len(s) for s in shards), sorted(np.concatenate(shards).tolist())[:3]
    ([3, 3, 4], [0, 1, 2])
    """
    # No copy when the permutation already is int64 (30M rows: 240 MB saved).
    permutation = rng.permutation(n_samples).astype(np.int64, copy=False)
    return np.array_split(permutation, n_shards)


def teacher_seeds(
    rng: np.random.RandomState, n_shards: int
) -> NDArray[np.unsignedinteger]:
    """One integer seed per teacher, spawned from a single SeedSequence."""
    entropy = int(rng.randint(np.iinfo(np.int32).max))
    return np.random.SeedSequence(entropy).generate_state(n_shards)


class ConstantTeacher:
    """The teacher of a shard that holds a single class: it always votes for it.

    A shard whose rows all share one label cannot train most classifiers; it
    still casts one vote per query, for that label (``docs/design.rst``,
    "Shards and teachers").
    """

    def __init__(self, class_index: int, n_classes: int):
        self.class_index = int(class_index)
        self.n_classes = int(n_classes)
        self.classes_ = np.arange(n_classes)

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        return np.full(n_rows(X), self.class_index, dtype=np.int64)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        proba = np.zeros((n_rows(X), self.n_classes))
        proba[:, self.class_index] = 1.0
        return proba


def _set_random_states(estimator, seed):
    """Seed every ``random_state`` parameter of ``estimator`` (nested ones too)."""
    params = estimator.get_params(deep=True)
    to_set = {
        key: int(seed)
        for key in params
        if key == "random_state" or key.endswith("__random_state")
    }
    if to_set:
        estimator.set_params(**to_set)
    return estimator


def _fit_in_this_process(*args):
    """A batch run as a parallel task: the teachers' own joblib calls stay here.

    The batches are the parallelism; a teacher's internal ``Parallel`` (a
    forest's trees) would otherwise go to the nested backend, which on a
    Dask worker sends every tree back through the scheduler.
    """
    with parallel_config(backend="sequential"):
        return _fit_teacher_batch(*args)


def _fit_teacher_batch(estimator, X_rows, y_rows, local_shards, seeds, n_classes):
    teachers = []
    validated = False  # has a teacher of this batch validated the parameters?
    for shard, seed in zip(local_shards, seeds, strict=True):
        y_shard = y_rows[shard]
        if n_classes is not None:
            present = np.unique(y_shard)
            if present.size == 1:
                teachers.append(ConstantTeacher(present[0], n_classes))
                continue
        teacher = _set_random_states(clone(estimator), seed)
        with config_context(assume_finite=True, skip_parameter_validation=validated):
            teacher.fit(take_rows(X_rows, shard), y_shard)
        validated = True
        teachers.append(teacher)
    return teachers


def fit_teachers(
    estimator: Any,
    X: ArrayLike,
    y: np.ndarray,
    shards: Sequence[np.ndarray],
    seeds: Sequence[int] | NDArray[np.unsignedinteger],
    *,
    n_classes: int | None = None,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> list[Any]:
    """Fit ``clone(estimator)`` on each shard, in parallel batches.

    Parameters
    ----------
    estimator : estimator
        Unfitted base estimator.
    X : array, DataFrame or sparse matrix of shape (n_samples, ...)
        Validated rows, in the form the teachers take (a DataFrame, a 1-D
        array of documents, ...): each teacher gets its shard's rows of it.
    y : ndarray of shape (n_samples,)
        For classifiers, class indices into the global ``classes_`` (so every
        teacher's vote maps onto the global classes).
    shards : list of int ndarray
    seeds : sequence of int
    n_classes : int or None
        Set for classifiers: a single-class shard yields a
        :class:`ConstantTeacher`. ``None`` for regressors.
    n_jobs : int, default=None
        joblib's ``n_jobs`` (a Dask cluster under ``parallel_config``).
    verbose : int, default=0
        Report the teachers fitted, the time elapsed and an estimate of the
        rest (:class:`~dpsklearn._progress.Progress`); joblib's own lines
        above 1.

    Returns
    -------
    teachers : list, in shard order
    """
    n_teachers = len(shards)
    n_tasks = effective_n_jobs(n_jobs)
    task = _fit_in_this_process if n_tasks > 1 else _fit_teacher_batch
    if verbose:
        n_tasks = max(n_tasks, _VERBOSE_BATCHES)
    n_tasks = max(1, min(n_tasks, n_teachers))
    batches = np.array_split(np.arange(n_teachers), n_tasks)
    tasks = []
    for batch in batches:
        rows = np.concatenate([shards[i] for i in batch])
        # Each task ships only its own rows; shard indices become local.
        offsets = np.cumsum([0] + [len(shards[i]) for i in batch])
        local = [np.arange(offsets[j], offsets[j + 1]) for j in range(len(batch))]
        tasks.append(
            delayed(task)(
                estimator,
                take_rows(X, rows),
                y[rows],
                local,
                [seeds[i] for i in batch],
                n_classes,
            )
        )
    # joblib's own lines only above verbose=1; the progress report says more.
    parallel = Parallel(
        n_jobs=n_jobs, verbose=max(0, int(verbose) - 1), return_as="generator"
    )
    teachers = []
    with Progress(
        n_teachers, desc="fitting teachers", unit="teacher", verbose=verbose
    ) as progress:
        for batch in parallel(tasks):
            teachers.extend(batch)
            progress.update(len(batch))
    return teachers
