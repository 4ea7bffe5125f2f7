"""Private rows given as Dask collections: handles, never the rows themselves.

``fit(X, y)`` with a :class:`dask.dataframe.DataFrame` or a
:class:`dask.array.Array` (a Parquet or CSV table read lazily, say) must not
bring the rows into the client (``docs/cluster.rst``, "Data larger than one
machine"). What the estimators need before the spend is public: the number
of rows (public in the privacy contract, ``docs/privacy_contract.rst``), the
number and names of the columns, and the public label set. This module turns
``X`` and ``y`` into :class:`DaskRows` and :class:`DaskLabels`: one delayed
object per partition and the partitions' lengths, counted on the workers.
Everything else (the finiteness of ``X``, the labels against ``classes``) is
checked on the workers, partition by partition, by
:func:`check_partition`, before any teacher is returned and so before the
spend.

Dask is an optional dependency (the ``dask`` extra): nothing here imports it
unless the input already is a Dask collection (which means Dask is loaded).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DaskLabels",
    "DaskRows",
    "check_partition",
    "check_public_columns",
    "dask_column_partitions",
    "dask_label_set",
    "dask_rows",
    "dask_training_data",
    "is_dask_collection",
    "numeric_targets",
]

#: Bytes assumed per value of a column that is not numeric (strings, objects),
#: to size the teachers' batches from public numbers.
_OBJECT_VALUE_BYTES = 64


def is_dask_collection(value: Any) -> bool:
    """Whether ``value`` is a Dask collection (never imports Dask itself).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn._dask_input import is_dask_collection
    >>> is_dask_collection(np.zeros(3))
    False
    """
    if "dask" not in sys.modules:  # no collection exists before Dask is loaded
        return False
    from dask import is_dask_collection as dask_collection

    return bool(dask_collection(value))


@dataclass
class DaskRows:
    """The private rows ``X`` as partitions on the cluster (handles only).

    Attributes
    ----------
    partitions : list of dask.delayed.Delayed
        One per partition of ``X``, in row order; each computes to a pandas
        DataFrame (a Dask DataFrame's partition) or a 2-D ndarray.
    lengths : int64 ndarray
        The rows of each partition (counted on the workers).
    meta : pandas.DataFrame or ndarray
        An empty object of the partitions' type, columns and dtypes: what
        ``n_features_in_`` and ``feature_names_in_`` are read from.
    row_bytes : int
        Bytes of one row in memory (public: from the dtypes), which sizes
        the teachers' batches.
    allow_nan : bool
        Whether the teachers take NaN (checked on the workers).
    consumer : str
        Who reads ``X``, for the NaN message.
    """

    partitions: list
    lengths: NDArray[np.int64]
    meta: Any
    row_bytes: int
    allow_nan: bool = False
    consumer: str = "the teacher"

    @property
    def n_samples(self) -> int:
        return int(self.lengths.sum())

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_samples, int(self.meta.shape[1]))

    def __len__(self) -> int:
        return self.n_samples


@dataclass
class DaskLabels:
    """The private labels ``y`` as partitions lined up with :class:`DaskRows`.

    ``classes`` set: each partition's labels are turned into class indices
    into it on the workers, and a label outside it is refused there (before
    the spend), with the message of a NumPy ``y``.
    """

    partitions: list
    lengths: NDArray[np.int64]
    classes: NDArray[Any] | None = field(default=None)
    #: Regression targets: numbers, finite (checked on the workers).
    numeric: bool = False

    @property
    def shape(self) -> tuple[int]:
        return (int(self.lengths.sum()),)

    def __len__(self) -> int:
        return int(self.lengths.sum())

    def encoded(self, classes: NDArray[Any]) -> DaskLabels:
        """The same labels, to be turned into indices into ``classes``."""
        return DaskLabels(self.partitions, self.lengths, np.asarray(classes))

    def as_targets(self) -> DaskLabels:
        """The same labels as regression targets (numbers, checked on the workers)."""
        return DaskLabels(self.partitions, self.lengths, None, numeric=True)


def _kind(value: Any) -> str:
    """``"frame"``, ``"series"`` or ``"array"``: which Dask collection."""
    import dask.array as da

    if isinstance(value, da.Array):
        return "array"
    dataframe = sys.modules.get("dask.dataframe")
    if dataframe is not None:
        if isinstance(value, dataframe.DataFrame):
            return "frame"
        if isinstance(value, dataframe.Series):
            return "series"
    return type(value).__name__


def _array_lengths(value: Any, name: str) -> NDArray[np.int64]:
    lengths = np.asarray(value.chunks[0], dtype=np.float64)
    if not np.all(np.isfinite(lengths)):
        raise ValueError(
            f"{name} is a Dask array whose chunk lengths are unknown (NaN): "
            "the shards are drawn from the number of rows, so it must be "
            f"known before the fit. Call {name}.compute_chunk_sizes() first "
            "(it counts the rows on the workers)."
        )
    return lengths.astype(np.int64)


def _row_bytes(meta: Any) -> int:
    dtypes = getattr(meta, "dtypes", None)
    if dtypes is None:  # an ndarray
        return int(meta.dtype.itemsize) * int(meta.shape[1])
    return int(
        sum(
            d.itemsize if getattr(d, "kind", "O") in "biufcmMb" else _OBJECT_VALUE_BYTES
            for d in dtypes
        )
    )


def dask_training_data(
    X: Any, y: Any, *, allow_nan: bool = False, consumer: str = "the teacher"
) -> tuple[DaskRows, DaskLabels]:
    """``X`` and ``y`` as handles on their partitions; refuse what cannot line up.

    Reads no row: the partitions' lengths are counted on the workers (a Dask
    DataFrame's are not in its metadata), a Dask array's are its chunks.
    ``y``'s partitions must hold the same rows as ``X``'s (take both from one
    DataFrame, ``X = frame[features]``, ``y = frame["label"]``); a Dask array
    ``y`` is rechunked to ``X``'s partitions when only the chunks differ.

    Raises
    ------
    ValueError
        Naming ``X`` or ``y``: not both Dask collections, not 2-D and 1-D,
        unknown chunk lengths, different numbers of rows, or partitions that
        do not line up. Raised before anything is spent.
    """
    import dask

    if not is_dask_collection(X):
        raise ValueError(
            "y is a Dask collection but X is not: give X as a Dask DataFrame or "
            "array too (both are read where their partitions live), or compute y."
        )
    if not is_dask_collection(y):
        raise ValueError(
            f"X is a Dask collection but y is a {type(y).__name__}: give y as a "
            "Dask Series or 1-D array with X's partitions (y = frame['label'] "
            "of the frame X comes from), so that no row passes through this "
            "process."
        )
    x_kind, y_kind = _kind(X), _kind(y)
    if x_kind not in ("frame", "array"):
        raise ValueError(
            f"X must be a Dask DataFrame or a 2-D Dask array, got {x_kind}."
        )
    if y_kind not in ("series", "array"):
        raise ValueError(f"y must be a Dask Series or a 1-D Dask array, got {y_kind}.")
    if x_kind == "array" and X.ndim != 2:
        raise ValueError(f"X must be 2-D, got a Dask array of shape {X.shape}.")
    if y_kind == "array" and y.ndim != 1:
        raise ValueError(f"y must be 1-D, got a Dask array of shape {y.shape}.")

    # The partitions, as the graph defines them: an optimised graph may fuse
    # a Parquet table's small files, and differently for X's columns than
    # for y's, so X's and y's partitions would no longer line up.
    if x_kind == "array" and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # a partition is a block of whole rows
    x_parts = _partitions(X, x_kind)
    y_parts = _partitions(y, y_kind)
    # The lengths: known chunks, or one count per partition on the workers
    # (in one compute: a table read for X and y is read once).
    to_count = {}
    x_lengths = y_lengths = None
    if x_kind == "array":
        x_lengths = _array_lengths(X, "X")
    else:
        to_count["X"] = [dask.delayed(len)(part) for part in x_parts]
    if y_kind == "array":
        y_lengths = _array_lengths(y, "y")
    else:
        to_count["y"] = [dask.delayed(len)(part) for part in y_parts]
    if to_count:
        counted = dict(zip(to_count, dask.compute(*to_count.values()), strict=True))
        if "X" in counted:
            x_lengths = np.asarray(counted["X"], dtype=np.int64)
        if "y" in counted:
            y_lengths = np.asarray(counted["y"], dtype=np.int64)
    assert x_lengths is not None and y_lengths is not None
    n_x, n_y = int(x_lengths.sum()), int(y_lengths.sum())
    if n_x == 0:
        raise ValueError("X must not be empty: its Dask collection holds 0 rows.")
    if n_x != n_y:
        raise ValueError(f"X and y must have as many rows: X has {n_x}, y has {n_y}.")
    if x_lengths.shape != y_lengths.shape or not np.array_equal(x_lengths, y_lengths):
        if y_kind != "array":
            raise ValueError(
                "y's partitions do not hold the same rows as X's (X's "
                f"partition lengths {_head(x_lengths)}, y's {_head(y_lengths)}): "
                "take both from one Dask DataFrame (X = frame[features], y = "
                "frame['label']), or repartition them alike."
            )
        y = y.rechunk((tuple(int(v) for v in x_lengths),))
        y_parts = _partitions(y, y_kind)
    if x_kind == "array":
        meta = np.empty((0, X.shape[1]), dtype=X.dtype)
    else:
        meta = X._meta  # the empty pandas frame Dask keeps: columns and dtypes
    rows = DaskRows(
        x_parts,
        x_lengths,
        meta,
        _row_bytes(meta),
        allow_nan=allow_nan,
        consumer=consumer,
    )
    return rows, DaskLabels(y_parts, y_lengths)


def _partitions(value: Any, kind: str) -> list:
    """One delayed object per partition, as the collection defines them."""
    if kind == "array":
        return list(value.to_delayed().ravel())
    return list(value.to_delayed(optimize_graph=False))


def _head(lengths: NDArray[np.int64], size: int = 4) -> str:
    shown = ", ".join(str(int(v)) for v in lengths[:size])
    return f"[{shown}{', ...' if len(lengths) > size else ''}]"


def dask_label_set(labels: DaskLabels) -> NDArray[Any]:
    """``unique(y)``, computed per partition on the workers (only labels return).

    For ``classes=None``, which reads the label set from the private labels
    (with a :class:`~dpsklearn.PrivacyLeakWarning`, as for a NumPy ``y``).
    """
    import dask

    uniques = dask.compute(*[dask.delayed(_unique)(p) for p in labels.partitions])
    return np.unique(np.concatenate([np.asarray(u) for u in uniques]))


def _unique(partition: Any) -> NDArray[Any]:
    return np.unique(np.asarray(partition))


def check_partition(
    X: Any,
    y: Any,
    classes: NDArray[Any] | None,
    *,
    allow_nan: bool,
    consumer: str,
    numeric: bool = False,
) -> NDArray[Any]:
    """Check one partition on its worker; return its labels (class indices).

    The checks a NumPy ``X`` and ``y`` get at validation (no infinity; no NaN
    unless the teachers take it; every label one of ``classes``; with
    ``numeric``, regression targets that are finite numbers), with the same
    messages, made where the partition lives: a refusal raises there and
    reaches ``fit`` before anything is spent.
    """
    if hasattr(X, "select_dtypes"):  # a pandas frame
        # Column by column: a worker never holds a float copy of the partition.
        nan = any(bool(X[column].isna().any()) for column in X.columns)
        numbers = X.select_dtypes(include="number")
        inf = any(
            bool(np.isinf(numbers[column].to_numpy(np.float64, na_value=0.0)).any())
            for column in numbers.columns
        )
    elif X.dtype.kind in "fc":
        nan, inf = bool(np.isnan(X).any()), bool(np.isinf(X).any())
    else:
        nan = inf = False
    if inf:
        raise ValueError(
            "X contains infinity; it is refused before anything is spent (no "
            "scikit-learn estimator takes it: the allow_nan tag covers NaN only)."
        )
    if nan and not allow_nan:
        raise ValueError(
            f"X contains NaN or missing values, and {consumer} does not accept "
            "them (its tags say allow_nan=False); refused before anything is "
            "spent. Impute inside the teacher (a Pipeline whose tags allow NaN), "
            "or use an estimator that handles NaN, such as "
            "HistGradientBoostingClassifier."
        )
    if y is None:  # rows without labels (a transformer's fit)
        return np.empty(0)
    labels = np.asarray(y)
    if numeric:
        return numeric_targets(labels)
    if classes is None:
        return labels
    index = np.searchsorted(classes, labels)
    inside = index < len(classes)
    known = np.zeros(labels.shape[0], dtype=bool)
    known[inside] = classes[index[inside]] == labels[inside]
    if not known.all():
        raise ValueError(
            "y contains label(s) that are not in the given `classes`; every "
            "training label must be one of `classes`."
        )
    return index.astype(np.int64)


def numeric_targets(y: Any) -> NDArray[Any]:
    """Regression targets as a NumPy ``y`` gets them: numbers, finite.

    Strings and objects are converted to float, as
    :func:`~dpsklearn._validation.check_regression_targets` does; numbers
    keep their dtype (so the teachers see the NumPy path's targets). The
    messages never show the values (they are private).
    """
    values = np.asarray(y)
    if values.dtype.kind in "USO":
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                "y must hold numeric regression targets, got an array of dtype "
                f"{values.dtype} whose values are not numbers."
            ) from None
    if values.dtype.kind not in "biufc":
        raise ValueError(
            f"y must hold numeric regression targets, got dtype {values.dtype}."
        )
    if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
        raise ValueError(
            "y contains NaN or infinity; regression targets must be finite "
            "numbers (refused before anything is spent)."
        )
    return values


def check_public_columns(meta: Any, schema: Any) -> None:
    """Refuse a Dask ``X`` with a column whose bounds or categories are not public.

    On a cluster nothing is read from the rows to fill a schema's gaps (it
    would read the data before the spend): every column must be in
    ``schema.bounds`` or ``schema.categories``.
    """
    keys = (
        list(meta.columns) if hasattr(meta, "columns") else list(range(meta.shape[1]))
    )
    public = set() if schema is None else set(schema.bounds) | set(schema.categories)
    missing = [key for key in keys if key not in public]
    if missing:
        raise ValueError(
            f"schema: with a Dask X every column needs public bounds or "
            f"categories in a PublicSchema; none for {missing!r} (they are "
            "not read from the rows on a cluster)."
        )


def dask_rows(
    X: Any, *, allow_nan: bool = False, consumer: str = "the estimator"
) -> DaskRows:
    """``X`` alone as handles on its partitions (a transformer's ``fit``).

    As :func:`dask_training_data` without ``y``: the lengths are counted on
    the workers (or read from a Dask array's chunks), nothing else is read.

    Raises
    ------
    ValueError
        Naming ``X``: not a 2-D Dask array or DataFrame, unknown chunk lengths,
        or no row.
    """
    import dask

    kind = _kind(X)
    if kind not in ("frame", "array") or (kind == "array" and X.ndim != 2):
        raise ValueError(f"X must be a Dask DataFrame or a 2-D Dask array, got {kind}.")
    if kind == "array" and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # a partition is a block of whole rows
    parts = _partitions(X, kind)
    if kind == "array":
        lengths = _array_lengths(X, "X")
        meta = np.empty((0, X.shape[1]), dtype=X.dtype)
    else:
        counted = dask.compute(*[dask.delayed(len)(part) for part in parts])
        lengths = np.asarray(counted, dtype=np.int64)
        meta = X._meta
    if int(lengths.sum()) == 0:
        raise ValueError("X must not be empty: its Dask collection holds 0 rows.")
    return DaskRows(
        parts, lengths, meta, _row_bytes(meta), allow_nan=allow_nan, consumer=consumer
    )


def dask_column_partitions(x: Any) -> tuple[list, int, bool]:
    """A Dask array, Series or DataFrame of values: its partitions, no row read.

    For the statistics of :mod:`dpsklearn.statistics`, which sum each
    partition where it lives. Returns the delayed partitions (whole rows),
    the number of columns and whether ``x`` is one column (1-D).
    """
    kind = _kind(x)
    if kind == "array":
        if x.ndim == 1:
            return list(x.to_delayed().ravel()), 1, True
        if x.ndim != 2:
            raise ValueError(f"x must be 1-D or 2-D, got shape {x.shape}.")
        if len(x.chunks[1]) > 1:
            x = x.rechunk({1: -1})
        return list(x.to_delayed().ravel()), int(x.shape[1]), False
    if kind == "series":
        return _partitions(x, kind), 1, True
    if kind == "frame":
        return _partitions(x, kind), len(x.columns), False
    raise ValueError(f"x must be a Dask array, Series or DataFrame, got {kind}.")
