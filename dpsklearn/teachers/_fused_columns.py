"""The common encoding of teachers that start with a ColumnTransformer.

A teacher ``Pipeline(ColumnTransformer, affine scalers..., linear model)``
whose column transformer holds only :class:`~sklearn.preprocessing.OneHotEncoder`,
the affine scalers of :mod:`dpsklearn.teachers._fused`, ``"passthrough"``
and ``"drop"`` is an affine map of one *common encoding* of the query row
(``docs/design.rst``, "The fused vote path"): each categorical column
one-hot encoded on the union of the categories the teachers learned on
their shards, each numeric column as it is. Teacher ``t``'s weight on the
common column of category ``c`` is its own weight on ``c``, or 0 when ``c``
is unknown to it (``handle_unknown="ignore"`` encodes an unknown category
as all zeros) or is the category it drops; its scalers fold into the
weights of the numeric columns. So one encoding of a query chunk and one
matrix product give every teacher's scores, as for teachers on numeric
arrays.

A teacher whose encoder refuses unknown categories (``handle_unknown=
"error"``, the default) raises on a query holding a category its shard
never saw; :meth:`ColumnEncoding.unknown_to` finds those rows, and the
fused path asks that teacher itself, which raises as the per-teacher path
would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from .._validation import is_frame

__all__ = ["ColumnEncoding", "column_blocks", "is_column_front"]

_IGNORES_UNKNOWN = ("ignore", "infrequent_if_exist", "warn")


class _Block:
    """One transformer of a fitted ColumnTransformer, as the fused path reads it.

    ``kind`` is ``"onehot"`` or ``"numeric"``; ``columns`` the input columns
    (labels or positions, as the transformer selected them); ``output`` the
    slice of the transformer's output columns; for ``"numeric"``, ``scale``
    and ``shift`` of the affine map (``None``: passthrough).
    """

    def __init__(
        self, name, kind, columns, output, encoder=None, scale=None, shift=None
    ):
        self.name = name
        self.kind = kind
        self.columns = columns
        self.output = output
        self.encoder = encoder
        self.scale = scale
        self.shift = shift

    def layout(self):
        """What every teacher must agree on (their fitted values may differ)."""
        return (self.name, self.kind, _hashable(self.columns))


def _hashable(columns):
    return tuple(np.asarray(columns).tolist())


def _resolved_columns(columns, n_features, feature_names):
    """Column labels or positions as a list (slices and masks resolved)."""
    if isinstance(columns, slice):
        pool = list(feature_names) if feature_names is not None else range(n_features)
        return list(pool[columns])
    values = np.asarray(columns)
    if values.dtype.kind == "b":
        return np.flatnonzero(values).tolist()
    if values.ndim == 0:
        return None  # a scalar selection gives 1-D input: not an encoder's
    return values.tolist()


def _onehot_reason(encoder):
    if getattr(encoder, "min_frequency", None) is not None or (
        getattr(encoder, "max_categories", None) is not None
    ):
        return "OneHotEncoder with infrequent categories is not fused"
    if encoder.handle_unknown not in (*_IGNORES_UNKNOWN, "error"):
        return f"OneHotEncoder(handle_unknown={encoder.handle_unknown!r}) is not fused"
    return None


def column_blocks(transformer, affine_of):
    """The blocks of a fitted ColumnTransformer, or why it cannot be fused.

    Parameters
    ----------
    transformer : ColumnTransformer
        Fitted.
    affine_of : callable
        ``affine_of(step) -> (a, b, reason)``: a scaler as ``a * x + b``.

    Returns
    -------
    blocks : list of _Block or None
    reason : str or None
    """
    if transformer.transformer_weights:
        return None, "ColumnTransformer with transformer_weights is not fused"
    n_features = transformer.n_features_in_
    names = getattr(transformer, "feature_names_in_", None)
    used = set()
    blocks = []
    fitted = [
        (name, step, columns)
        for name, step, columns in transformer.transformers_
        if name != "remainder"
    ]
    for name, step, columns in fitted:
        columns = _resolved_columns(columns, n_features, names)
        if columns is None:
            return None, f"transformer {name!r} selects a single column (1-D input)"
        used.update(columns)
        output = transformer.output_indices_.get(name, slice(0, 0))
        block, reason = _block(name, step, columns, output, affine_of)
        if reason is not None:
            return None, reason
        if block is not None:
            blocks.append(block)
    remainder = transformer.output_indices_.get("remainder", slice(0, 0))
    if remainder.stop > remainder.start:
        pool = list(names) if names is not None else list(range(n_features))
        # The columns no transformer selected, in input order.
        columns = [c for c in pool if c not in used]
        step = dict((n, s) for n, s, _ in transformer.transformers_)["remainder"]
        block, reason = _block("remainder", step, columns, remainder, affine_of)
        if reason is not None:
            return None, reason
        blocks.append(block)
    return blocks, None


def _block(name, step, columns, output, affine_of):
    if output.stop == output.start or (isinstance(step, str) and step == "drop"):
        return None, None  # no output columns
    if isinstance(step, OneHotEncoder) and type(step) is OneHotEncoder:
        reason = _onehot_reason(step)
        return (
            (None, reason)
            if reason
            else (
                _Block(name, "onehot", columns, output, encoder=step),
                None,
            )
        )
    scale, shift = np.ones(len(columns)), np.zeros(len(columns))
    steps = step.steps if isinstance(step, Pipeline) else [(None, step)]
    for _, inner in steps:
        a, b, reason = affine_of(inner)
        if reason is not None:
            return None, f"in {name!r}: {reason}"
        scale, shift = scale * a, shift * a + b
    return _Block(name, "numeric", columns, output, scale=scale, shift=shift), None


def _union(arrays):
    """The union of category arrays: sorted when comparable, else first seen."""
    joined = np.concatenate(arrays)
    try:
        return np.unique(joined)
    except TypeError:
        seen: dict[Any, None] = {}
        for value in joined:
            seen.setdefault(value, None)
        return np.asarray(list(seen), dtype=object)


def _take_columns(X, columns):
    """The columns of a query chunk (labels for DataFrames, else positions)."""
    if is_frame(X):
        if all(isinstance(c, str) for c in columns):
            return X[columns]
        return X.iloc[:, columns]
    return X[:, columns]


def _float_dtype(values):
    """The least precise float dtype in ``values`` (a DataFrame or array)."""
    dtypes = values.dtypes if hasattr(values, "dtypes") else [values.dtype]
    floats = [np.dtype(d) for d in dtypes if isinstance(d, np.dtype) and d.kind == "f"]
    return max(floats, key=lambda d: np.finfo(d).eps, default=np.dtype(np.float64))


def _refuses_unknown(block):
    return block.kind == "onehot" and block.encoder.handle_unknown == "error"


class ColumnEncoding:
    """The common encoding of ColumnTransformer teachers, and each one's map into it.

    Built by :meth:`build` from the fitted column transformers of the
    teachers; :meth:`transform` encodes a query chunk once for all of them.

    Attributes
    ----------
    n_columns : int
        Width of the common encoding.
    """

    def __init__(self, blocks, encoders, n_columns, known, error_teachers):
        self.blocks = blocks  # the first teacher's, for the layout and columns
        self.encoders = encoders  # per block: OneHotEncoder on the union, or None
        self.n_columns = int(n_columns)
        # (n_columns, n_error_teachers): 1 where a teacher that refuses
        # unknown categories knows the category of that common column.
        self._known = known
        self._error_teachers = np.asarray(error_teachers, dtype=np.int64)
        self._n_refusing_columns = sum(
            len(b.columns) for b in blocks if _refuses_unknown(b)
        )

    @classmethod
    def build(cls, per_teacher, teacher_ids, feature_names):
        """The common encoding of teachers whose blocks have one layout.

        Parameters
        ----------
        per_teacher : list of list of _Block
        teacher_ids : list of int
            The teachers' indices in the ensemble.
        feature_names : ndarray of str or None
            The input column names the column transformers saw (None: they
            read arrays), to fit the union encoders with (no data is used).

        Returns
        -------
        encoding : ColumnEncoding or None
        maps : list of int ndarray or None
            Per teacher, the common column of each of its output columns.
        reason : str or None
        """
        first = per_teacher[0]
        layout = [b.layout() for b in first]
        if any([b.layout() for b in blocks] != layout for blocks in per_teacher):
            return None, None, "the teachers' column transformers differ in layout"
        error_teachers = (
            list(teacher_ids) if any(_refuses_unknown(b) for b in first) else []
        )
        encoders: list[Any] = []
        maps: list[list[np.ndarray]] = [[] for _ in per_teacher]
        known_parts = []
        offset = 0
        for position, block in enumerate(first):
            width = len(block.columns)
            if block.kind == "numeric":
                encoders.append(None)
                for own_map in maps:
                    own_map.append(offset + np.arange(width))
                known_parts.append(np.zeros((width, len(error_teachers))))
                offset += width
                continue
            categories = [
                _union([b[position].encoder.categories_[i] for b in per_teacher])
                for i in range(width)
            ]
            encoder, reason = _union_encoder(block.columns, categories, feature_names)
            if reason is not None:
                return None, None, reason
            encoders.append(encoder)
            sizes = [len(c) for c in categories]
            starts = np.cumsum([0, *sizes[:-1]])
            known = np.zeros((sum(sizes), len(error_teachers)))
            for t, blocks in enumerate(per_teacher):
                own = blocks[position].encoder
                drops = getattr(own, "drop_idx_", None)
                columns = []
                for i, own_categories in enumerate(own.categories_):
                    where = starts[i] + _positions(categories[i], own_categories)
                    if _refuses_unknown(block):
                        known[where, t] = 1.0
                    if drops is not None and drops[i] is not None:
                        where = np.delete(where, int(drops[i]))
                    columns.append(offset + where)
                maps[t].append(np.concatenate(columns))
            known_parts.append(known)
            offset += sum(sizes)
        known_all = np.vstack(known_parts) if error_teachers else None
        index_maps = [np.concatenate(m).astype(np.int64) for m in maps]
        return cls(first, encoders, offset, known_all, error_teachers), index_maps, None

    def transform(self, X):
        """The common encoding of a query chunk: a CSR matrix, and its float dtype.

        The float dtype is the least precise one the teachers compute in
        (a float32 column, an encoder's ``dtype``), for the error bound.

        Raises
        ------
        ValueError
            When a numeric column holds NaN or infinity (a linear teacher
            cannot score it; validation refuses them before this).
        """
        parts, dtypes = [], [np.dtype(np.float64)]
        for block, encoder in zip(self.blocks, self.encoders, strict=True):
            values = _take_columns(X, block.columns)
            if encoder is None:
                dtypes.append(_float_dtype(values))
                numeric = np.asarray(values, dtype=np.float64)
                if not np.isfinite(numeric).all():
                    raise ValueError(
                        "X holds NaN or infinity in a numeric column; the fused "
                        "linear teachers cannot score it."
                    )
                parts.append(sparse.csr_matrix(numeric))
            else:
                dtypes.append(np.dtype(block.encoder.dtype))
                parts.append(sparse.csr_matrix(encoder.transform(values)))
        dtype = max(dtypes, key=lambda d: np.finfo(d).eps)
        return sparse.hstack(parts, format="csr"), dtype

    def unknown_to(self, encoded):
        """``(rows, teacher ids)`` where a teacher that refuses unknowns would raise.

        A row is fine for such a teacher when each column its encoders refuse
        unknowns in holds one of its categories: then that many of its known
        common columns are set in the row.
        """
        if self._known is None:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        indicator = encoded.copy()
        indicator.data = (indicator.data != 0).astype(np.float64)
        known_counts = np.asarray(indicator @ self._known)
        rows, which = np.nonzero(known_counts < self._n_refusing_columns)
        return rows, self._error_teachers[which]


def _positions(union, categories):
    """Positions of ``categories`` in ``union`` (every one is there)."""
    index = {value: i for i, value in enumerate(union.tolist())}
    return np.fromiter(
        (index[value] for value in categories.tolist()),
        dtype=np.int64,
        count=len(categories),
    )


def _union_encoder(columns, categories, feature_names):
    """A OneHotEncoder on the union of the categories (fitted on no data)."""
    encoder = OneHotEncoder(
        categories=[np.asarray(c) for c in categories],
        handle_unknown="ignore",
        sparse_output=True,
        dtype=np.float64,
    )
    # With the categories given, fit learns nothing from the rows: one row
    # of known categories sets the input columns (and their names).
    try:
        if feature_names is not None:
            import pandas as pd

            labels = [
                c if isinstance(c, str) else str(feature_names[c]) for c in columns
            ]
            row = pd.DataFrame(
                {
                    label: pd.Series(values[:1], dtype=np.asarray(values).dtype)
                    for label, values in zip(labels, categories, strict=True)
                }
            )
        else:
            row = np.asarray([[c[0] for c in categories]], dtype=object)
        encoder.fit(row)
    except (TypeError, ValueError) as exc:
        return None, f"no common encoding of the categories ({exc})"
    return encoder, None


def is_column_front(teacher):
    """Whether ``teacher`` is a Pipeline that starts with a ColumnTransformer."""
    return isinstance(teacher, Pipeline) and isinstance(
        teacher.steps[0][1], ColumnTransformer
    )
