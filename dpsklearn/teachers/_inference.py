"""Teachers' inference: their outputs on query rows, in parallel over teacher blocks.

Each joblib task takes a **block of teachers and the whole batch** of query
rows, and calls each of its teachers once per batch (rows are cut into
chunks of :data:`_MAX_CALL_ROWS` only for very large batches), so a
teacher's fixed cost per call (input checks, a ``ColumnTransformer``, a
forest's own dispatch) is paid once per teacher per batch, as in
:meth:`~sklearn.ensemble.BaggingClassifier.predict`. What a task returns:

* votes: the block's vote counts, an ``(n_queries, n_classes)`` int64 array,
  which the caller adds up (integers: the sum is exact, so the counts are
  identical to counting all teachers' votes at once, ties included);
* other outputs (a regressor's predictions, soft labels, class
  probabilities): the block's outputs stacked, ``(n_block, chunk_rows)``
  (``(n_block, chunk_rows, width)``), which the caller stacks in teacher
  order, so every float the estimators compute from them (clipped sums,
  means) is computed in the same order as before. Query chunks bound that
  stack to :data:`_MAX_BLOCK_ENTRIES` entries.

Parallel only when it pays: with ``n_jobs`` worker processes, one teacher is
first asked in this process; when all teachers at that pace would take less
than :data:`_PARALLEL_SECONDS`, the rest are asked here too (shipping the
teachers to worker processes would cost more than it saves).

**On a Dask cluster** (``joblib.parallel_config(backend="dask")``) the
blocks of teachers are scattered to the workers once and kept there
(:func:`_scattered`, keyed by the teachers' identity); later batches send
only the query rows (which joblib scatters once per batch). Workers return
vote counts (or the stacked outputs above), nothing else; every noise draw
is made afterwards by the mechanism, in the calling process.

Input was validated once by the estimator, so the teachers skip their own
finiteness checks (``assume_finite``).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from joblib import effective_n_jobs, parallel_config
from joblib.parallel import get_active_backend
from numpy.typing import ArrayLike, NDArray
from sklearn import config_context
from sklearn.utils.parallel import Parallel, delayed

from .._progress import Progress
from .._validation import n_rows, take_rows
from ..mechanisms import vote_counts
from ._sharding import ConstantTeacher

__all__ = ["count_teacher_votes", "teacher_class_probabilities", "teacher_outputs"]

# Upper bound on the entries of one (n_teachers, chunk_rows) block of stacked
# teacher outputs: query chunks bound its memory.
_MAX_BLOCK_ENTRIES = 1 << 24
# Query rows per teacher call when counting votes: larger batches are cut,
# so that a teacher's own working memory (an encoding, a forest's
# probabilities) stays bounded.
_MAX_CALL_ROWS = 1 << 16
# Entries of the predictions stacked before they are counted.
_VOTE_STACK_ENTRIES = 1 << 22
# Below this estimated time for all teachers, they are asked in this process.
_PARALLEL_SECONDS = 0.5
# With verbose, at least this many blocks (a report at every tenth).
_VERBOSE_BLOCKS = 10
# Seconds of teacher inference before its progress is shown (short calls stay
# quiet).
_PROGRESS_DELAY = 2.0
# Teacher ensembles kept scattered on a Dask cluster.
_SCATTER_CAPACITY = 2


def _query_chunks(n_queries, n_teachers, width=1):
    rows = max(1, _MAX_BLOCK_ENTRIES // max(1, n_teachers * width))
    for start in range(0, n_queries, rows):
        yield slice(start, min(n_queries, start + rows))


def _bounds(n_teachers, n_blocks):
    """``(start, stop)`` of ``n_blocks`` near-equal blocks of teachers."""
    n_blocks = max(1, min(int(n_blocks), n_teachers))
    edges = np.linspace(0, n_teachers, n_blocks + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


# -- what one task computes ------------------------------------------------------


def _votes_of_block(teachers, X, n_classes):
    """Vote counts ``(n_queries, n_classes)`` of a block of teachers on ``X``."""
    n_queries = n_rows(X)
    counts = np.zeros((n_queries, n_classes), dtype=np.int64)
    call_rows = min(max(1, n_queries), _MAX_CALL_ROWS)
    with config_context(assume_finite=True):
        for start in range(0, n_queries, call_rows):
            rows = slice(start, min(n_queries, start + call_rows))
            X_rows = X if call_rows >= n_queries else take_rows(X, rows)
            group = max(1, _VOTE_STACK_ENTRIES // call_rows)
            for first in range(0, len(teachers), group):
                predictions = np.stack(
                    [t.predict(X_rows) for t in teachers[first : first + group]]
                )
                counts[rows] += vote_counts(predictions.astype(np.int64), n_classes)
    return counts


def _outputs_of_block(teachers, X, method):
    """``getattr(teacher, method)(X)`` of a block, stacked over its teachers."""
    with config_context(assume_finite=True):
        return np.stack([getattr(t, method)(X) for t in teachers])


def _class_columns(teacher, n_columns):
    classes = getattr(teacher, "classes_", None)
    if classes is None:
        return np.arange(n_columns)
    return np.asarray(classes, dtype=np.int64)


def _probabilities_of_block(teachers, X, n_classes):
    """Class probabilities of a block on the global classes, stacked."""
    out = np.zeros((len(teachers), n_rows(X), n_classes))
    with config_context(assume_finite=True):
        for index, teacher in enumerate(teachers):
            proba = np.asarray(teacher.predict_proba(X), dtype=np.float64)
            out[index][:, _class_columns(teacher, proba.shape[1])] = proba
    return out


# -- where the tasks run -----------------------------------------------------------


def _ask_block(function, block, X, *args):
    """Run one task with the teachers' own joblib calls kept in this process.

    The blocks are the parallelism: a teacher's internal ``Parallel`` (a
    forest's trees) would otherwise go to the nested backend, which on a Dask
    worker sends every tree back through the scheduler (measured 6 times
    slower than one process).
    """
    with parallel_config(backend="sequential"):
        return function(block, X, *args)


_SCATTER_LOCK = threading.Lock()
# [(client ref, teacher refs, bounds, futures)], newest last
_SCATTERED: list[tuple] = []


def _dask_client():
    """The Dask client of joblib's active backend, or None."""
    try:
        backend, _ = get_active_backend()
    except Exception:  # pragma: no cover - joblib without a backend
        return None
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    return getattr(backend, "client", None)


def _scattered(client, teachers, bounds):
    """Futures of the blocks of ``teachers`` on the cluster, scattered once.

    Kept per client while the very same teacher objects are alive (weak
    references: a model that is deleted frees its entry), for the last
    :data:`_SCATTER_CAPACITY` ensembles.
    """
    with _SCATTER_LOCK:
        for entry in list(_SCATTERED):
            client_ref, refs, entry_bounds, futures = entry
            if client_ref() is None or any(ref() is None for ref in refs[:1]):
                _SCATTERED.remove(entry)
                continue
            if (
                client_ref() is client
                and entry_bounds == bounds
                and len(refs) == len(teachers)
                and all(ref() is t for ref, t in zip(refs, teachers, strict=True))
                and all(f.status == "finished" for f in futures)
            ):
                _SCATTERED.remove(entry)
                _SCATTERED.append(entry)
                return futures
    try:
        refs = [weakref.ref(t) for t in teachers]
        client_ref = weakref.ref(client)
    except TypeError:  # not weakly referenceable: scatter for this call only
        refs = client_ref = None
    futures = client.scatter(
        [list(teachers[a:b]) for a, b in bounds], hash=False, broadcast=False
    )
    if refs is not None:
        with _SCATTER_LOCK:
            _SCATTERED.append((client_ref, refs, bounds, futures))
            del _SCATTERED[:-_SCATTER_CAPACITY]
    return futures


def _evaluate(function, teachers, X, args, *, n_jobs, verbose, desc):
    """``function(block, X, *args)`` over blocks of teachers, results in order."""
    n_teachers = len(teachers)
    n_workers = effective_n_jobs(n_jobs) if n_teachers > 1 else 1
    if n_workers == 1 and not verbose:
        return [function(teachers, X, *args)]
    progress = Progress(
        n_teachers,
        desc=desc,
        unit="teacher",
        verbose=verbose,
        delay=_PROGRESS_DELAY,
        leave=False,
    )
    with progress:
        client = _dask_client() if n_workers > 1 else None
        results, done = [], 0
        if client is None:
            # The first teachers here (up to the first that is not a constant
            # vote): is the rest worth shipping to worker processes?
            constant = [isinstance(t, ConstantTeacher) for t in teachers]
            done = 1 + (constant.index(False) if False in constant else n_teachers - 1)
            start = time.perf_counter()
            results.append(function(teachers[:done], X, *args))
            estimate = (time.perf_counter() - start) * n_teachers
            progress.update(done)
            if done == n_teachers:
                return results
            if n_workers == 1 or estimate < _PARALLEL_SECONDS:
                n_blocks = _VERBOSE_BLOCKS if verbose else 1
                for a, b in _bounds(n_teachers - done, n_blocks):
                    results.append(function(teachers[done + a : done + b], X, *args))
                    progress.update(b - a)
                return results
        rest = teachers[done:]
        n_blocks = max(n_workers, _VERBOSE_BLOCKS if verbose else 1)
        bounds = _bounds(len(rest), n_blocks)
        if client is not None:
            blocks = _scattered(client, rest, bounds)
        else:
            blocks = [rest[a:b] for a, b in bounds]
        parallel = Parallel(n_jobs=n_jobs, return_as="generator")
        outputs = parallel(
            delayed(_ask_block)(function, block, X, *args) for block in blocks
        )
        for (a, b), output in zip(bounds, outputs, strict=True):
            results.append(output)
            progress.update(b - a)
    return results


# -- the public entry points ---------------------------------------------------------


def count_teacher_votes(
    teachers: Sequence[Any],
    X: ArrayLike,
    n_classes: int,
    *,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> NDArray[np.int64]:
    """Vote counts ``(n_queries, n_classes)`` of ``teachers`` on ``X``, in parallel.

    Each task counts the votes of a block of teachers on the whole batch and
    returns them (int64); the counts are added up here. Integer sums are
    exact, so the counts are those of counting every teacher's vote at once.

    Parameters
    ----------
    teachers : list of fitted classifiers
        Voting with class indices into the global classes.
    X : validated query rows
    n_classes : int
    n_jobs : int, default=None
        joblib's ``n_jobs`` (a Dask cluster under ``parallel_config``).
    verbose : int, default=0
        Report progress on long batches.

    Returns
    -------
    counts : int64 ndarray of shape (n_queries, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.teachers import ConstantTeacher, count_teacher_votes
    >>> teachers = [ConstantTeacher(0, 3), ConstantTeacher(2, 3), ConstantTeacher(2, 3)]
    >>> count_teacher_votes(teachers, np.zeros((2, 1)), 3).tolist()
    [[1, 0, 2], [1, 0, 2]]
    """
    parts = _evaluate(
        _votes_of_block,
        teachers,
        X,
        (int(n_classes),),
        n_jobs=n_jobs,
        verbose=verbose,
        desc="teachers' votes",
    )
    counts = parts[0]
    for part in parts[1:]:
        counts += part
    return counts


def teacher_outputs(
    teachers: Sequence[Any],
    X: ArrayLike,
    method: str = "predict",
    *,
    width: int = 1,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(row_slice, outputs)`` per query chunk, outputs stacked over teachers.

    ``outputs`` has shape ``(n_teachers, chunk_rows)`` for ``predict`` or
    ``(n_teachers, chunk_rows, width)`` for ``predict_proba``, in teacher
    order, whatever ``n_jobs``. Input was validated once by the caller, so
    the teachers skip their finiteness check.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.teachers import ConstantTeacher, teacher_outputs
    >>> teachers = [ConstantTeacher(0, 2), ConstantTeacher(1, 2)]
    >>> rows, outputs = next(teacher_outputs(teachers, np.zeros((3, 1))))
    >>> rows, outputs.tolist()
    (slice(0, 3, None), [[0, 0, 0], [1, 1, 1]])
    """
    n_queries = n_rows(X)
    for rows in _query_chunks(n_queries, len(teachers), width):
        X_chunk = take_rows(X, rows)
        parts = _evaluate(
            _outputs_of_block,
            teachers,
            X_chunk,
            (method,),
            n_jobs=n_jobs,
            verbose=verbose,
            desc="teachers' outputs",
        )
        yield rows, parts[0] if len(parts) == 1 else np.concatenate(parts)


def teacher_class_probabilities(
    teachers: Sequence[Any],
    X: ArrayLike,
    n_classes: int,
    *,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> Iterator[tuple[slice, NDArray[np.float64]]]:
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
    n_jobs : int, default=None
    verbose : int, default=0

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
    for rows in _query_chunks(n_queries, len(teachers), n_classes):
        X_chunk = take_rows(X, rows)
        parts = _evaluate(
            _probabilities_of_block,
            teachers,
            X_chunk,
            (int(n_classes),),
            n_jobs=n_jobs,
            verbose=verbose,
            desc="teachers' probabilities",
        )
        yield rows, parts[0] if len(parts) == 1 else np.concatenate(parts)
