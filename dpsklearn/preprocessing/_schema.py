"""The public schema of a table: column bounds, category lists, classes.

Estimators that release sufficient statistics map every row through a
feature map fixed *before* the data are read (``docs/no_public_rows.rst``,
"The public schema"): the numeric columns' bounds, the categorical columns'
category lists, the label set and the target's range come from the user.
Whatever is left unset is read from the private rows with a
:class:`~dpsklearn.PrivacyLeakWarning` (the one rule of the package,
``CONTRIBUTING.md``), and the warning names the columns.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning

__all__ = [
    "PublicSchema",
    "TabularInputMixin",
    "column_values",
    "is_missing",
    "resolve_classes",
    "resolve_columns",
]


class PublicSchema:
    """Public facts about a table, given by the user, never read from the rows.

    Parameters
    ----------
    bounds : mapping of column to (float, float), default=None
        The public range of each numeric column (values are clipped to it).
        Columns are keyed by name for a DataFrame, by position for an array.
    categories : mapping of column to sequence, default=None
        The public category list of each categorical column; a value outside
        it (or missing) goes to the column's own "missing or other" slot.
    classes : sequence, default=None
        The public label set of a classifier.
    target_range : (float, float), default=None
        The public range of a regression target.

    Examples
    --------
    >>> from dpsklearn.preprocessing import PublicSchema
    >>> schema = PublicSchema(bounds={"age": (17, 90)},
    ...                       categories={"sex": ["Female", "Male"]},
    ...                       classes=["<=50K", ">50K"])
    >>> schema.bounds["age"], schema.categories["sex"]
    ((17, 90), ['Female', 'Male'])
    """

    def __init__(
        self,
        bounds: Mapping[Hashable, tuple[float, float]] | None = None,
        categories: Mapping[Hashable, Sequence[Any]] | None = None,
        classes: Sequence[Any] | None = None,
        target_range: tuple[float, float] | None = None,
    ) -> None:
        self.bounds = dict(bounds or {})
        self.categories = dict(categories or {})
        self.classes = None if classes is None else list(classes)
        self.target_range = target_range

    def __repr__(self) -> str:
        return (
            f"PublicSchema(bounds={self.bounds!r}, categories={self.categories!r}, "
            f"classes={self.classes!r}, target_range={self.target_range!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicSchema) and repr(self) == repr(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


def is_missing(values: np.ndarray) -> np.ndarray:
    """``None`` and NaN (of any type) in a 1-D array, vectorised."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(values.shape, dtype=bool)
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def column_values(X: Any, key: Hashable) -> np.ndarray:
    """Column ``key`` of a DataFrame (by name) or an array (by position)."""
    if hasattr(X, "iloc"):
        column = X[key]
        if str(column.dtype) == "category":
            return column.astype(object).to_numpy()
        return column.to_numpy()
    position: Any = key  # arrays are keyed by column position
    return np.asarray(X)[:, position]


def _has_numeric_dtype(values: np.ndarray) -> bool:
    """Whether the column's dtype (public schema, not its values) is numeric."""
    return values.dtype.kind in "fiub"


def resolve_columns(
    X: Any, schema: PublicSchema | None
) -> list[tuple[Hashable, str, Any]]:
    """Each column's key, kind and public description, in column order.

    A column is categorical when the schema lists its categories, numeric
    when the schema gives its bounds; otherwise its dtype decides (numbers:
    numeric; strings, objects, a pandas Categorical: categorical), never its
    values. Bounds and category lists the schema leaves unset are read
    from ``X`` with one :class:`~dpsklearn.PrivacyLeakWarning` naming the
    columns (before any budget is spent; ``docs/privacy_contract.rst``).
    """
    schema = schema if schema is not None else PublicSchema()
    keys = list(X.columns) if hasattr(X, "columns") else list(range(X.shape[1]))
    unknown = [
        k for k in list(schema.bounds) + list(schema.categories) if k not in keys
    ]
    if unknown:
        raise ValueError(
            f"schema: columns {unknown!r} are not columns of X "
            "(name them as X does: by name for a DataFrame, by position otherwise)."
        )
    columns: list[tuple[Hashable, str, Any]] = []
    read = []
    for key in keys:
        values = column_values(X, key)
        if key in schema.categories:
            columns.append((key, "categorical", list(schema.categories[key])))
        elif key in schema.bounds or _has_numeric_dtype(values):
            if key in schema.bounds:
                lo, hi = (float(v) for v in schema.bounds[key])
                if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                    raise ValueError(
                        f"schema: bounds of column {key!r} must be finite with "
                        f"lower < upper, got {schema.bounds[key]!r}."
                    )
            else:
                read.append(key)
                numbers = values.astype(np.float64)
                numbers = numbers[~np.isnan(numbers)]
                lo, hi = (
                    (float(numbers.min()), float(numbers.max()))
                    if numbers.size
                    else (0.0, 1.0)
                )
                hi = hi if hi > lo else lo + 1.0
            columns.append((key, "numeric", (lo, hi)))
        else:
            read.append(key)
            present = values[~is_missing(values)]
            levels = sorted({str(v) for v in present})
            columns.append((key, "categorical", levels))
    if read:
        warn_user(
            f"schema: no public bounds or categories for columns {read!r}: they "
            "are read from the private training rows, so a value held by one "
            "record can shape the model. Pass them in a PublicSchema.",
            PrivacyLeakWarning,
        )
    return columns


def resolve_classes(y: np.ndarray, classes: Any) -> tuple[np.ndarray, np.ndarray]:
    """The public label set and ``y`` as indices into it.

    ``classes=None`` reads the set from ``y`` with a
    :class:`~dpsklearn.PrivacyLeakWarning` (a label held by one record would
    otherwise appear in the output range); a training label outside a given
    set is refused with a ``ValueError`` (before any spend).
    """
    if classes is None:
        warn_user(
            "classes is None: the label set is taken from the private "
            "training labels (classes_ = unique(y)), so a label held by one "
            "record can appear in the output range. Pass the public label "
            "set as `classes` or in the schema.",
            PrivacyLeakWarning,
        )
        classes = np.unique(y)
    classes = np.unique(np.asarray(classes))
    unseen = np.setdiff1d(np.unique(y), classes)
    if unseen.size:
        raise ValueError(
            f"y contains {unseen.size} label(s) that are not in the given "
            "classes; every training label must be one of them."
        )
    return classes, np.searchsorted(classes, y)


class TabularInputMixin:
    """Estimators that read a table through a public schema.

    Strings, pandas Categoricals and missing values reach the feature map as
    given (it maps a missing value to its column's own slot or a public
    fill), so the tags say so; dense input only. For a private estimator
    (its ``_validate_input``).
    """

    schema: PublicSchema | None
    classes: Any

    def __sklearn_tags__(self):
        # A mixin: scikit-learn's BaseEstimator comes after it in the MRO.
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _input_allows_nan(self) -> bool:
        return True

    def _validate_labelled_table(self, X: Any, y: Any) -> tuple[Any, np.ndarray, Any]:
        """``X``, the public classes and ``y`` as indices into them.

        The classes are ``classes``, else the schema's, else read from ``y``
        with a :class:`~dpsklearn.PrivacyLeakWarning`
        (:func:`resolve_classes`).
        """
        from sklearn.utils.multiclass import check_classification_targets

        X, y = self._validate_input(X, y, accept_sparse=False)  # type: ignore[attr-defined]
        try:
            check_classification_targets(y)
        except ValueError as exc:
            raise ValueError(f"y must hold class labels: {exc}") from exc
        classes = self.classes
        if classes is None and self.schema is not None:
            classes = self.schema.classes
        classes, index = resolve_classes(y, classes)
        return X, classes, index
