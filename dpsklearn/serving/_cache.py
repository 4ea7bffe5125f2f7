"""The release cache: a query row asked again gets the answer already released.

A repeated row's answer is a copy of a release already paid for
(post-processing), so it is free, and nobody can average the noise away by
asking again (``docs/design.rst``, "Per-query releases").
"""

from __future__ import annotations

import numpy as np

__all__ = ["ReleaseCache", "row_keys"]


def row_keys(X):
    """Exact keys of the rows of a dense 2-D array, one ``numpy.void`` per row.

    Two rows get the same key exactly when their float64 values are equal
    (``-0.0`` and ``0.0`` are made equal). Keys sort and compare without a
    Python loop, so a batch of queries is looked up in ``O(m log m)``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Validated, finite query rows.

    Returns
    -------
    keys : ndarray of shape (n_rows,), dtype void

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.serving import row_keys
    >>> k = row_keys(np.array([[1.0, -0.0], [1.0, 0.0], [2.0, 0.0]]))
    >>> bool(k[0] == k[1]), bool(k[0] == k[2])
    (True, False)
    """
    values = np.asarray(X, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("row_keys needs a 2-D array of query rows.")
    values = np.ascontiguousarray(values + 0.0)  # + 0.0 turns -0.0 into 0.0
    width = values.dtype.itemsize * values.shape[1]
    return values.view(np.dtype((np.void, width))).reshape(values.shape[0])


class ReleaseCache:
    """Answers already released by a fitted model, keyed by their query row.

    A query row asked again gets the answer already released for it: that
    answer is a copy of a release already paid for (post-processing), so it
    is free, and nobody can average the noise away by asking again. Only
    the *distinct* new rows of a batch are computed and charged, in the order
    of their first appearance; when the budget allows fewer than all of
    them, the rows answered are the longest prefix of the batch whose new
    rows were paid for (so ``partial_predictions`` is a prefix).

    The keys are the query rows (public, they belong to the caller) and the
    values are released answers, so the cache is no more secret than the
    model's outputs. Arrays are replaced, never written in place (a fitted
    model's arrays may be memory-mapped read-only).

    Parameters
    ----------
    fields : dict of str to (dtype, tuple)
        Name, dtype and trailing shape of each value stored per row.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.serving import ReleaseCache, row_keys
    >>> cache = ReleaseCache({"answer": (np.int64, ())})
    >>> def compute(rows):  # the mechanism: here, the row index
    ...     return {"answer": np.asarray(rows)}, len(rows)
    >>> keys = row_keys(np.array([[5.0], [6.0], [5.0]]))
    >>> out, n_answered, n_new = cache.serve(keys, 10, compute)
    >>> out["answer"].tolist(), n_answered, n_new
    ([0, 1, 0], 3, 2)
    >>> out, n_answered, n_new = cache.serve(keys[::-1], 10, compute)
    >>> out["answer"].tolist(), n_new
    ([0, 1, 0], 0)
    """

    def __init__(self, fields):
        self.fields = {
            name: (np.dtype(dtype), tuple(shape))
            for name, (dtype, shape) in fields.items()
        }
        self._keys = None
        self._values = {
            name: np.empty((0, *shape), dtype=dtype)
            for name, (dtype, shape) in self.fields.items()
        }

    def __len__(self):
        return 0 if self._keys is None else int(self._keys.shape[0])

    def _lookup(self, keys):
        """Index of each key in the cache, or -1."""
        n_cached = len(self)
        if n_cached == 0:
            return np.full(keys.shape[0], -1, dtype=np.int64)
        position = np.minimum(np.searchsorted(self._keys, keys), n_cached - 1)
        return np.where(self._keys[position] == keys, position, -1)

    def _add(self, keys, values):
        if keys.shape[0] == 0:
            return
        if self._keys is None:
            all_keys = keys
            all_values = {name: values[name] for name in self.fields}
        else:
            all_keys = np.concatenate([self._keys, keys])
            all_values = {
                name: np.concatenate([self._values[name], values[name]])
                for name in self.fields
            }
        order = np.argsort(all_keys, kind="stable")
        self._keys = all_keys[order]
        self._values = {name: all_values[name][order] for name in self.fields}

    def serve(self, keys, n_affordable, compute):
        """Answer a batch: cached rows from the cache, new distinct rows by ``compute``.

        Parameters
        ----------
        keys : void ndarray of shape (m,)
            From :func:`row_keys`.
        n_affordable : int
            How many distinct new rows the budget can pay for now.
        compute : callable
            ``compute(positions)`` releases answers for the batch rows at
            ``positions`` (distinct new rows, ascending) and returns
            ``(values, n_done)``: a dict of arrays (one per field) whose first
            ``n_done`` entries were released, ``n_done <= len(positions)``
            (fewer when the mechanism halts part-way).

        Returns
        -------
        values : dict of str to ndarray
            Answers for the first ``n_answered`` rows of the batch.
        n_answered : int
            Length of the answered prefix (``m`` when nothing ran out).
        n_new : int
            Distinct new rows released (and to be charged) in this call.
        """
        m = keys.shape[0]
        where = self._lookup(keys)
        new_rows = np.flatnonzero(where < 0)
        if new_rows.size:
            _, first, inverse = np.unique(
                keys[new_rows], return_index=True, return_inverse=True
            )
            order = np.argsort(first, kind="stable")
            distinct = new_rows[first[order]]  # first appearances, ascending
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            new_rank = rank[inverse.ravel()]
        else:
            distinct = new_rows
            new_rank = new_rows
        n_request = int(min(max(int(n_affordable), 0), distinct.size))
        fresh, n_done = ({}, 0)
        if n_request:
            fresh, n_done = compute(distinct[:n_request])
            n_done = int(n_done)
        n_answered = m if n_done == distinct.size else int(distinct[n_done])

        out = {}
        hits = np.flatnonzero(where[:n_answered] >= 0)
        n_new_in_prefix = int(np.searchsorted(new_rows, n_answered))
        for name, (dtype, shape) in self.fields.items():
            column = np.empty((n_answered, *shape), dtype=dtype)
            column[hits] = self._values[name][where[hits]]
            if n_new_in_prefix:
                column[new_rows[:n_new_in_prefix]] = np.asarray(fresh[name])[
                    new_rank[:n_new_in_prefix]
                ]
            out[name] = column
        if n_done:
            self._add(
                keys[distinct[:n_done]],
                {name: np.asarray(fresh[name])[:n_done] for name in self.fields},
            )
        return out, n_answered, n_done
