"""The release cache: a query row asked again gets the answer already released.

A repeated row's answer is a copy of a release already paid for
(post-processing), so it is free, and nobody can average the noise away by
asking again (``docs/design.rst``, "Per-query releases").

Exact keys (``docs/design.rst``, "Exact keys of the release cache"). A row
is keyed by all of its content, never by a hash alone, so two different
rows never share an answer. Every cell becomes one 64-bit word: a number by
its float64 value (``-0.0`` as ``0.0``, every NaN as one NaN; an integer
beyond ``2**53``, which float64 would round, by its int64 value under another
column tag), a string or any other object by its id in the cache's
vocabulary of the values it has seen (exact: a dict keyed by the value and
its kind, so ``1``, ``1.0``, ``True`` and ``"1"`` get different ids), a
sparse row by its column indices and values after canonicalisation (sorted,
duplicates summed, explicit zeros dropped). Rows whose words have the same
layout (the same column tags; for sparse rows the same number of stored
entries) form a group, and within a group a key is the fixed-width byte
string of the words: compared exactly, sorted and searched without a Python
loop per row. A row given in another form (int columns one day, float the
next) can only miss the cache and be paid for again; it never gets another
row's answer.
"""

from __future__ import annotations

import numbers
import pickle
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from scipy import sparse

from .._validation import is_frame

__all__ = ["ReleaseCache", "RowKeys", "row_keys"]

# Integers up to 2**53 are exact in float64: they share the float keys (a
# teacher reads 1 and 1.0 alike); larger ones keep their int64 value.
_EXACT_INT = 2**53


def _canonical_floats(values):
    """float64 bit patterns: ``-0.0`` as ``0.0``, every NaN as one NaN."""
    floats = np.asarray(values, dtype=np.float64) + 0.0  # + 0.0: -0.0 -> 0.0
    floats = np.where(np.isnan(floats), np.nan, floats)
    return np.ascontiguousarray(floats).view(np.uint64)


def _numeric_words(column):
    """``(tag, words)`` of a numeric column (1-D bool, int, uint or float)."""
    kind = column.dtype.kind
    if (
        kind in "iu"
        and column.size
        and np.abs(column.astype(np.float64)).max() > (_EXACT_INT)
    ):
        # float64 would round these: keep the integers themselves.
        return f"{kind}8", np.ascontiguousarray(column.astype(f"{kind}8")).view(
            np.uint64
        )
    if kind in "mM":
        return str(column.dtype), column.astype(np.int64).view(np.uint64)
    return "f8", _canonical_floats(column)


def _numeric_matrix_words(values):
    """``(tags, words)`` of a 2-D numeric array at once, or None.

    The words of :func:`_numeric_words`, column by column, computed on the
    whole matrix (no Python call per column). None when an integer column
    holds values beyond ``2**53`` (those columns keep their int64 words:
    :func:`_numeric_words` per column) or there is no column.
    """
    n_columns = values.shape[1]
    kind = values.dtype.kind
    if n_columns == 0:
        return None
    if kind in "mM":
        words = np.ascontiguousarray(values.astype(np.int64)).view(np.uint64)
        return [str(values.dtype)] * n_columns, words
    if (
        kind in "iu"
        and values.size
        and np.abs(values.astype(np.float64)).max() > _EXACT_INT
    ):
        return None
    return ["f8"] * n_columns, _canonical_floats(values)


def _vocabulary_key(tag, value):
    """The exact vocabulary key of one object value."""
    if value is None:
        return ("none",)
    if tag == "float" and value != value:  # every NaN is one value
        return ("float", "nan")
    if tag in ("str", "bytes", "bool", "int", "float"):
        return (tag, value)
    # Anything else by its pickled bytes: equal bytes mean an equal value,
    # whatever the object's own __eq__ says.
    return ("pickle", tag, pickle.dumps(value, protocol=4))


def _type_tag(kind):
    if issubclass(kind, str):
        return "str"
    if issubclass(kind, bytes):
        return "bytes"
    if issubclass(kind, (bool, np.bool_)):
        return "bool"
    if issubclass(kind, numbers.Integral):
        return "int"
    if issubclass(kind, numbers.Real):
        return "float"
    return f"{kind.__module__}.{kind.__qualname__}"


def _object_words(values, vocabulary):
    """Vocabulary ids of a column of objects (strings, categories, ...).

    The distinct values are found by ``np.unique`` when the column holds
    one kind of comparable value, so the vocabulary (a dict) is consulted
    once per distinct value; a column of mixed kinds is mapped value by
    value.
    """
    values = np.asarray(values, dtype=object)
    tags = {kind: _type_tag(kind) for kind in set(map(type, values))}

    def ids_of(items, tag_of):
        return np.fromiter(
            (
                vocabulary.setdefault(_vocabulary_key(tag_of(v), v), len(vocabulary))
                for v in items
            ),
            dtype=np.int64,
            count=len(items),
        )

    if len(set(tags.values())) == 1:
        tag = next(iter(tags.values()))
        if tag in ("str", "bytes", "bool", "int", "float"):
            try:
                distinct, inverse = np.unique(values, return_inverse=True)
            except TypeError:  # not comparable after all
                pass
            else:
                ids = ids_of(distinct, lambda v: tag)
                return ids[inverse.ravel()].view(np.uint64)
    return ids_of(values, lambda v: tags[type(v)]).view(np.uint64)


class RowKeys:
    """Exact keys of a batch of query rows, made by :func:`row_keys`.

    Numeric columns are turned into words at once; columns of objects are
    kept until :meth:`encode` maps them through the cache's vocabulary.

    Attributes
    ----------
    n_rows : int
    """

    def __init__(
        self,
        n_rows: int,
        columns: list[tuple[str, np.ndarray]] | None = None,
        sparse_rows: sparse.csr_matrix | None = None,
        numeric: tuple[list[str], np.ndarray] | None = None,
    ) -> None:
        self.n_rows = int(n_rows)
        # [(tag, uint64 words)] or [("object", object array)]
        self._columns = columns
        self._sparse = sparse_rows  # canonical CSR, or None
        # A numeric array's (column tags, uint64 words of shape (n_rows, d)).
        self._numeric = numeric

    def __len__(self) -> int:
        return self.n_rows

    def encode(self, vocabulary: dict) -> list[tuple[tuple, np.ndarray, np.ndarray]]:
        """Groups of exact keys: a list of ``(layout, rows, keys)``.

        Parameters
        ----------
        vocabulary : dict
            The cache's ids of object values (extended in place).

        Returns
        -------
        groups : list of (tuple, int64 ndarray, void ndarray)
            Each group's word layout, its row positions (ascending) and one
            fixed-width key per row.
        """
        if self._sparse is not None:
            return self._sparse_groups(self._sparse)
        if self._numeric is not None:
            numeric_tags, matrix = self._numeric
            keys = matrix.view(np.dtype((np.void, 8 * matrix.shape[1]))).ravel()
            return [(("dense", *numeric_tags), np.arange(self.n_rows), keys)]
        tags, words = [], []
        columns = cast("list[tuple[str, np.ndarray]]", self._columns)  # dense rows
        for tag, column in columns:
            if tag == "object":
                words.append(_object_words(column, vocabulary))
                tags.append("o")
            else:
                words.append(column)
                tags.append(tag)
        if not words:  # no column: every row is the same row
            words = [np.zeros(self.n_rows, dtype=np.uint64)]
        matrix = np.ascontiguousarray(np.column_stack(words))
        keys = matrix.view(np.dtype((np.void, 8 * matrix.shape[1]))).ravel()
        return [(("dense", *tags), np.arange(self.n_rows), keys)]

    def _sparse_groups(self, X):
        stored = np.diff(X.indptr)
        tag, data_words = _numeric_words(X.data)
        indices = X.indices.astype(np.int64)
        groups = []
        for width in np.unique(stored):
            rows = np.flatnonzero(stored == width)
            if width == 0:
                matrix = np.zeros((rows.size, 1), dtype=np.uint64)
            else:
                # the stored entries of rows with `width` entries, row by row
                where = X.indptr[rows][:, None] + np.arange(width)
                matrix = np.hstack([indices[where].view(np.uint64), data_words[where]])
            matrix = np.ascontiguousarray(matrix)
            keys = matrix.view(np.dtype((np.void, 8 * matrix.shape[1]))).ravel()
            groups.append((("sparse", X.shape[1], tag, int(width)), rows, keys))
        return groups


def row_keys(X: ArrayLike) -> RowKeys:
    """Exact keys of the rows of a validated ``X``, for the release cache.

    Two rows get the same key exactly when they hold the same values (numbers
    compared as float64 values, with ``-0.0`` equal to ``0.0`` and NaN equal
    to NaN; strings and other objects by value and kind; sparse rows by
    their canonical entries). Keys compare, sort and search without a Python
    loop per row; object values are mapped to ids once per distinct value.

    Parameters
    ----------
    X : ndarray, DataFrame, Series, 1-D array of str or sparse matrix
        Validated query rows.

    Returns
    -------
    keys : RowKeys

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.serving import ReleaseCache, row_keys
    >>> cache = ReleaseCache({"answer": (np.int64, ())})
    >>> def compute(rows):  # the mechanism: here, the row position
    ...     return {"answer": np.asarray(rows)}, len(rows)
    >>> docs = np.array(["spam", "ham", "spam"], dtype=object)
    >>> out, n_answered, n_new = cache.serve(row_keys(docs), 10, compute)
    >>> out["answer"].tolist(), n_new
    ([0, 1, 0], 2)
    >>> keys = row_keys(np.array([[1.0, -0.0], [1.0, 0.0], [2.0, 0.0]]))
    >>> out, _, n_new = ReleaseCache({"answer": (np.int64, ())}).serve(
    ...     keys, 10, compute)
    >>> out["answer"].tolist(), n_new
    ([0, 0, 2], 2)
    """
    if sparse.issparse(X):
        canonical = sparse.csr_matrix(X, copy=True)
        canonical.sum_duplicates()  # also sorts the indices
        canonical.eliminate_zeros()  # explicit zeros, -0.0 included
        return RowKeys(canonical.shape[0], sparse_rows=canonical)
    if not isinstance(X, np.ndarray) and is_frame(X):
        frame = X.to_frame() if X.ndim == 1 else X
        columns = [frame.iloc[:, j] for j in range(frame.shape[1])]
        dtypes = [column.dtype for column in columns]
        arrays = [
            column.to_numpy() if isinstance(dtype, np.dtype) else None
            for column, dtype in zip(columns, dtypes, strict=True)
        ]
        parts = []
        for column, array in zip(columns, arrays, strict=True):
            if array is not None and array.dtype.kind in "biufmM":
                parts.append(_numeric_words(array))
            else:  # strings, categories, extension dtypes: as objects
                parts.append(("object", np.asarray(column, dtype=object)))
        return RowKeys(frame.shape[0], parts)
    values = np.asarray(X)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError("row_keys needs 1-D or 2-D query rows.")
    if values.dtype.kind in "biufmM":
        numeric = _numeric_matrix_words(values)
        if numeric is not None:
            return RowKeys(values.shape[0], numeric=numeric)
        parts = [_numeric_words(values[:, j]) for j in range(values.shape[1])]
    else:
        parts = [("object", values[:, j]) for j in range(values.shape[1])]
    return RowKeys(values.shape[0], parts)


class ReleaseCache:
    """Answers already released by a fitted model, keyed by their query row.

    A query row asked again gets the answer already released for it: that
    answer is a copy of a release already paid for (post-processing), so it
    is free, and nobody can average the noise away by asking again. Only
    the *distinct* new rows of a batch are computed and charged, in the order
    of their first appearance; when the budget allows fewer than all of
    them, the rows answered are the longest prefix of the batch whose new
    rows were paid for (so ``partial_predictions`` is a prefix).

    The keys are the query rows, compared exactly (:func:`row_keys`), and
    the values are released answers, so the cache is no more secret than
    the model's outputs and the queries (public, they belong to the caller).
    Arrays are replaced, never written in place (a fitted model's arrays may
    be memory-mapped read-only).

    Parameters
    ----------
    fields : dict of str to (dtype, tuple)
        Name, dtype and trailing shape of each value stored per row.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.serving import ReleaseCache, row_keys
    >>> cache = ReleaseCache({"answer": (np.int64, ())})
    >>> def compute(rows):  # the mechanism: here, the row position
    ...     return {"answer": np.asarray(rows)}, len(rows)
    >>> rows = np.array([[5.0], [6.0], [5.0]])
    >>> out, n_answered, n_new = cache.serve(row_keys(rows), 10, compute)
    >>> out["answer"].tolist(), n_answered, n_new
    ([0, 1, 0], 3, 2)
    >>> out, n_answered, n_new = cache.serve(row_keys(rows[::-1]), 10, compute)
    >>> out["answer"].tolist(), n_new
    ([0, 1, 0], 0)
    """

    def __init__(self, fields: Mapping[str, tuple[DTypeLike, tuple[int, ...]]]) -> None:
        self.fields = {
            name: (np.dtype(dtype), tuple(shape))
            for name, (dtype, shape) in fields.items()
        }
        # Per key layout: (sorted keys, their slots in the value arrays).
        self._tables: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._vocabulary: dict[Any, int] = {}
        self._values = {
            name: np.empty((0, *shape), dtype=dtype)
            for name, (dtype, shape) in self.fields.items()
        }

    def __len__(self) -> int:
        return sum(int(keys.shape[0]) for keys, _ in self._tables.values())

    def _lookup(self, layout, keys):
        """Slot of each key in the cache, or -1 (exact comparison)."""
        table = self._tables.get(layout)
        if table is None:
            return np.full(keys.shape[0], -1, dtype=np.int64)
        cached, slots = table
        position = np.minimum(np.searchsorted(cached, keys), cached.shape[0] - 1)
        return np.where(cached[position] == keys, slots[position], -1)

    def _add(self, layout, keys, slots):
        table = self._tables.get(layout)
        if table is not None:
            keys = np.concatenate([table[0], keys])
            slots = np.concatenate([table[1], slots])
        order = np.argsort(keys, kind="stable")
        self._tables[layout] = (keys[order], slots[order])

    def serve(
        self,
        keys: RowKeys,
        n_affordable: int,
        compute: Callable[[np.ndarray], tuple[Mapping[str, ArrayLike], int]],
    ) -> tuple[dict[str, np.ndarray], int, int]:
        """Answer a batch: cached rows from the cache, new distinct rows by ``compute``.

        Parameters
        ----------
        keys : RowKeys
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
        m = len(keys)
        where = np.full(m, -1, dtype=np.int64)  # slot of a cached row
        new_id = np.full(m, -1, dtype=np.int64)  # distinct new row of the batch
        first_rows, new_keys = [], []  # per group, per distinct new row
        n_distinct = 0
        for layout, rows, group_keys in keys.encode(self._vocabulary):
            found = self._lookup(layout, group_keys)
            where[rows] = found
            missing = found < 0
            if missing.any():
                distinct, first, inverse = np.unique(
                    group_keys[missing], return_index=True, return_inverse=True
                )
                new_id[rows[missing]] = n_distinct + inverse.ravel()
                first_rows.append(rows[missing][first])
                new_keys.append((layout, distinct))
                n_distinct += distinct.size
        if n_distinct:
            first_row = np.concatenate(first_rows)  # per distinct id
            order = np.argsort(first_row, kind="stable")
            distinct_rows = first_row[order]  # first appearances, ascending
            rank = np.empty(n_distinct, dtype=np.int64)
            rank[order] = np.arange(n_distinct)
        else:
            distinct_rows = rank = np.empty(0, dtype=np.int64)
        new_rows = np.flatnonzero(new_id >= 0)

        n_request = int(min(max(int(n_affordable), 0), n_distinct))
        fresh: Mapping[str, ArrayLike]
        fresh, n_done = ({}, 0)
        if n_request:
            fresh, n_done = compute(distinct_rows[:n_request])
            n_done = int(n_done)
        n_answered = m if n_done == n_distinct else int(distinct_rows[n_done])

        out = {}
        hits = np.flatnonzero(where[:n_answered] >= 0)
        answered_new = new_rows[new_rows < n_answered]
        for name, (dtype, shape) in self.fields.items():
            column = np.empty((n_answered, *shape), dtype=dtype)
            column[hits] = self._values[name][where[hits]]
            if answered_new.size:
                column[answered_new] = np.asarray(fresh[name])[
                    rank[new_id[answered_new]]
                ]
            out[name] = column
        if n_done:
            self._store(new_keys, rank, n_done, fresh)
        return out, n_answered, n_done

    def _store(self, new_keys, rank, n_done, fresh):
        """Add the first ``n_done`` distinct new rows (in appearance order)."""
        base = len(self)
        start = 0
        for layout, distinct in new_keys:
            ranks = rank[start : start + distinct.size]
            start += distinct.size
            done = ranks < n_done
            if done.any():
                self._add(layout, distinct[done], base + ranks[done])
        self._values = {
            name: np.concatenate([self._values[name], np.asarray(fresh[name])[:n_done]])
            for name in self.fields
        }
