"""Teachers fitted where the partitions of a Dask collection live.

The shards are the very shards of a NumPy fit with the same ``random_state``
(``docs/design.rst``, "Shards and teachers"; ``docs/cluster.rst``, "Data
larger than one machine"): the client draws the same permutation
(:func:`~dpsklearn.teachers.partition_indices`) from the number of rows
alone, and turns it into each row's **position** in the permutation, an
int32 per row (the shard of a row is the block its position falls in, and
positions order a shard's rows as ``X[shard]`` orders them). Each
partition gets its slice of positions (scattered once when a
``distributed`` client is active); the rows stay on the workers:

1. per partition, a task checks the rows
   (:func:`~dpsklearn._dask_input.check_partition`),
   keeps those of the current wave's shards and cuts them by batch of
   teachers (vectorised: one ``searchsorted`` and one ``argsort``);
2. per batch, a task gathers the batch's pieces from every partition,
   sorts them by position (which lines them up exactly as the NumPy path's
   ``X[rows]``), checks that every position arrived exactly once, and fits
   the batch's teachers with their seeds of :func:`teacher_seeds`;
3. only the fitted teachers come back to the client.

A wave is the set of batches whose rows the cluster holds at once: a
table larger than the workers' memory is read once per wave (each read
keeps only that wave's rows), so no worker holds more than its share
(:data:`_WAVE_MEMORY_SHARE`) of its memory limit in pieces. Every teacher is
fitted on exactly its shard's rows, in the NumPy path's order and with the
NumPy path's seed: the votes are identical (``tests/test_dask_collections.py``).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.utils import check_random_state

from .._dask_input import DaskLabels, DaskRows, check_partition
from .._progress import Progress
from .._validation import take_rows
from ._sharding import _fit_in_this_process, partition_indices, teacher_seeds

__all__ = ["fit_teachers_on_partitions", "shard_positions"]

#: Bytes of rows per batch of teachers: a batch task holds its pieces, their
#: concatenation and the sorted copy, about three times this.
_BATCH_BYTES = 128 * 2**20
#: The share of the workers' summed memory limits that one wave's rows may
#: take (the rest: the partition being read, the batch tasks, Dask itself).
_WAVE_MEMORY_SHARE = 0.2


def shard_positions(
    n_samples: int, n_shards: int, rng: np.random.RandomState
) -> tuple[NDArray[np.signedinteger], NDArray[np.int64]]:
    """Each row's position in the partition's permutation, and the shard sizes.

    Draws exactly what :func:`partition_indices` draws from ``rng`` (so the
    teachers' seeds drawn next are the NumPy path's too). Shard ``j`` holds
    the rows whose position lies in ``[starts[j], starts[j + 1])``, in
    increasing position: ``X[partition_indices(...)[j]]``.

    Returns
    -------
    positions : int32 ndarray (int64 past 2**31 rows) of shape (n_samples,)
    sizes : int64 ndarray of shape (n_shards,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.teachers._partitions import shard_positions
    >>> from dpsklearn.teachers import partition_indices
    >>> positions, sizes = shard_positions(10, 3, np.random.RandomState(0))
    >>> shards = partition_indices(10, 3, np.random.RandomState(0))
    >>> bool(np.array_equal(np.argsort(positions), np.concatenate(shards)))
    True
    """
    shards = partition_indices(n_samples, n_shards, rng)
    dtype = np.int32 if n_samples < 2**31 else np.int64
    positions = np.empty(n_samples, dtype=dtype)
    sizes = np.array([len(shard) for shard in shards], dtype=np.int64)
    start = 0
    for shard in shards:  # one vectorised assignment per shard, not per row
        positions[shard] = np.arange(start, start + len(shard), dtype=dtype)
        start += len(shard)
    return positions, sizes


def _active_client() -> Any:
    """The ``distributed`` client Dask computes on, or None (a local scheduler)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:  # distributed installed, no client started
        return None


def _cluster_capacity(client: Any) -> tuple[int, float]:
    """``(threads, summed memory limit in bytes)`` of the workers."""
    if client is not None:
        workers = client.scheduler_info().get("workers", {}).values()
        threads = sum(int(w.get("nthreads", 1)) for w in workers)
        memory = sum(float(w.get("memory_limit") or 0) for w in workers)
        if threads and memory:
            return threads, memory
    try:
        import psutil

        memory = float(psutil.virtual_memory().total)
    except ImportError:
        memory = 4.0 * 2**30
    return os.cpu_count() or 1, memory


def _plan_batches(
    n_teachers: int, n_samples: int, row_bytes: int, client: Any, verbose: int
) -> list[list[NDArray[np.int64]]]:
    """Teachers cut into batches, and batches into waves (public numbers only)."""
    threads, memory = _cluster_capacity(client)
    total_bytes = float(n_samples) * max(1, row_bytes)
    n_batches = max(threads, math.ceil(total_bytes / _BATCH_BYTES))
    if verbose:
        n_batches = max(n_batches, 20)
    n_batches = max(1, min(n_batches, n_teachers))
    batches = np.array_split(np.arange(n_teachers), n_batches)
    batch_bytes = total_bytes / n_batches
    per_wave = max(threads, int(_WAVE_MEMORY_SHARE * memory // max(1.0, batch_bytes)))
    return [batches[i : i + per_wave] for i in range(0, n_batches, per_wave)]


def _rows_by_batch(
    X: Any,
    y: Any,
    positions: NDArray[np.signedinteger],
    bounds: NDArray[np.int64],
    classes: NDArray[Any] | None,
    allow_nan: bool,
    consumer: str,
    numeric: bool = False,
) -> tuple:
    """One partition's rows of this wave, cut by batch (runs on a worker).

    ``bounds`` are the positions where the wave's batches start, and the
    end of the last one. Returns one ``(X rows, class indices or targets,
    positions)`` per batch.
    """
    labels = check_partition(
        X, y, classes, allow_nan=allow_nan, consumer=consumer, numeric=numeric
    )
    if len(labels) != len(positions) or X.shape[0] != len(positions):
        raise ValueError(
            f"a partition of X has {X.shape[0]} rows and y's has {len(labels)}, "
            f"but {len(positions)} were counted: the collections changed "
            "between the count and the fit."
        )
    inside = np.flatnonzero((positions >= bounds[0]) & (positions < bounds[-1]))
    batch = np.searchsorted(bounds, positions[inside], side="right") - 1
    order = inside[np.argsort(batch, kind="stable")]
    ends = np.cumsum(np.bincount(batch, minlength=len(bounds) - 1))
    X_wave, labels, positions = take_rows(X, order), labels[order], positions[order]
    pieces = []
    start = 0
    for end in ends:  # one slice per batch
        rows = slice(start, int(end))
        pieces.append((take_rows(X_wave, rows), labels[rows], positions[rows]))
        start = int(end)
    return tuple(pieces)


def _concatenate_rows(parts: list) -> Any:
    if hasattr(parts[0], "iloc"):
        import pandas as pd

        return pd.concat(parts, axis=0)
    return np.concatenate(parts, axis=0)


def _fit_batch(
    estimator: Any,
    pieces: list[tuple],
    sizes: NDArray[np.int64],
    first_position: int,
    seeds: list,
    n_classes: int | None,
) -> list:
    """Fit one batch of teachers from its pieces of every partition (on a worker)."""
    positions = np.concatenate([piece[2] for piece in pieces])
    order = np.argsort(positions, kind="stable")
    expected = np.arange(first_position, first_position + int(sizes.sum()))
    if not np.array_equal(positions[order], expected):  # each row exactly once
        raise RuntimeError(
            "the rows gathered for a batch of teachers are not exactly its "
            "shards' rows; the partitions changed between the count and the fit."
        )
    X_rows = take_rows(_concatenate_rows([piece[0] for piece in pieces]), order)
    labels = np.concatenate([piece[1] for piece in pieces])[order]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    local = [np.arange(offsets[j], offsets[j + 1]) for j in range(len(sizes))]
    return _fit_in_this_process(estimator, X_rows, labels, local, seeds, n_classes)


def fit_teachers_on_partitions(
    estimator: Any,
    rows: DaskRows,
    labels: DaskLabels,
    n_estimators: int,
    *,
    random_state: int | np.random.RandomState | None = None,
    n_classes: int | None = None,
    verbose: int = 0,
) -> list:
    """Fit the teachers of a NumPy fit, each where its shard's rows are read.

    Parameters
    ----------
    estimator : estimator
        Unfitted base estimator.
    rows, labels : DaskRows, DaskLabels
        From :func:`~dpsklearn._dask_input.dask_training_data`;
        ``labels.classes`` set for classifiers, ``labels.numeric`` for
        regression targets.
    n_estimators : int
    random_state : int, RandomState instance or None
        The partition and the seeds, as for
        :func:`~dpsklearn.teachers.fit_teacher_ensemble`.
    n_classes : int or None
    verbose : int, default=0

    Returns
    -------
    teachers : list of fitted estimators, in shard order
    """
    import dask

    rng = check_random_state(random_state)
    positions, sizes = shard_positions(rows.n_samples, n_estimators, rng)
    seeds = teacher_seeds(rng, n_estimators)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    offsets = np.concatenate([[0], np.cumsum(rows.lengths)])
    slices = [positions[offsets[p] : offsets[p + 1]] for p in range(len(rows.lengths))]
    client = _active_client()
    if client is not None:
        # Sent once for every wave; the client's copy is dropped at once.
        position_parts: list = client.scatter(slices, hash=False)
    else:
        position_parts = [slice_.copy() for slice_ in slices]
    del positions, slices
    waves = _plan_batches(n_estimators, rows.n_samples, rows.row_bytes, client, verbose)
    base = clone(estimator)
    teachers: list = []
    with Progress(
        n_estimators, desc="fitting teachers", unit="teacher", verbose=verbose
    ) as progress:
        for wave in waves:
            bounds = np.array([starts[b[0]] for b in wave] + [starts[wave[-1][-1] + 1]])
            grouped = [
                dask.delayed(_rows_by_batch, nout=len(wave))(
                    X_part,
                    y_part,
                    position_part,
                    bounds,
                    labels.classes,
                    rows.allow_nan,
                    rows.consumer,
                    labels.numeric,
                )
                for X_part, y_part, position_part in zip(
                    rows.partitions, labels.partitions, position_parts, strict=True
                )
            ]
            tasks = [
                dask.delayed(_fit_batch)(
                    base,
                    [pieces[i] for pieces in grouped],
                    sizes[batch],
                    int(starts[batch[0]]),
                    [int(seeds[j]) for j in batch],
                    n_classes,
                )
                for i, batch in enumerate(wave)
            ]
            for fitted in dask.compute(*tasks):
                teachers.extend(fitted)
                progress.update(len(fitted))
    return teachers
