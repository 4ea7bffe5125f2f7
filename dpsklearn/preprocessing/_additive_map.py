"""An additive feature map fixed from the public schema, rows of norm at most 1.

``docs/no_public_rows.rst``, "The additive map": every column becomes a
block of features that depends on that column alone,

* a categorical column: one-hot over its public categories, plus one slot
  for a missing value or a value outside the list;
* a numeric column: its value clipped to the public bounds ``[lo, hi]`` and
  scaled to ``t in [0, 1]`` (on a log scale when ``lo >= 0`` and ``hi >=
  10^4 max(lo, 1)``: counts and money, whose mass sits near ``lo``), then
  one-hot over ``n_bins`` equal-width bins of ``t`` plus a missing slot,
  and the raw ``2 t - 1`` (0 when missing);

and a constant carries the intercept. A least-squares fit on these features
is an additive model (a step function of each column plus a linear trend),
the capacity of an explainable boosting machine's main effects (Lou, Caruana
and Gehrke 2012) without its rounds. Each block has norm at most 1 (or
``sqrt 2`` for a binned numeric column with its raw value), so the whole row,
divided by the public ``sqrt(1 + n_categorical + 2 n_numeric)``, has norm at
most 1: the bound ``B_x = 1`` that
:class:`~dpsklearn.mechanisms.SufficientStatisticsRelease` calibrates to,
with no clipping and nothing read from the rows.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ._schema import column_values, is_missing

__all__ = ["AdditiveFeatureMap", "auto_n_bins"]

#: Numeric columns share about this many bin features (``auto_n_bins``).
BIN_WIDTH_BUDGET = 200
#: The most bins of one column.
MAX_BINS = 20
#: A column whose public range spans this ratio above its lower end is binned
#: on a log scale.
LOG_RANGE_RATIO = 1e4


def auto_n_bins(n_numeric: int, n_samples: int, epsilon: float) -> int:
    """Bins per numeric column from public numbers: columns, rows and ``epsilon``.

    The numeric columns share ``W = min(200, n epsilon / 100)`` bin features,
    at most 20 per column; fewer than 2 per column become 0 (the scaled value
    alone). The Gram matrix's noise, and with it the regulariser, grows with
    the square root of the width while its signal grows with ``n``: on
    validation rows of Adult (26,000 rows, 6 numeric columns) 10 to 28 bins
    scored within 0.1 point of each other at ``epsilon`` 0.5 to 4 and above
    no bins by 0.4 to 1.4 points; on digits (1,010 rows, 64 columns) no bins
    beat 2 by 2.5 points at ``epsilon = 1`` and 20 bins lost 19 points
    (``docs/no_public_rows.rst``, "Defaults").

    Examples
    --------
    >>> from dpsklearn.preprocessing import auto_n_bins
    >>> auto_n_bins(6, 32_561, 1.0), auto_n_bins(64, 1_347, 1.0)
    (20, 0)
    """
    width = min(float(BIN_WIDTH_BUDGET), float(n_samples) * float(epsilon) / 100.0)
    bins = int(min(MAX_BINS, width // max(1, int(n_numeric))))
    return bins if bins >= 2 else 0


class AdditiveFeatureMap:
    """Rows to the additive features of the module notes (public, data free).

    Parameters
    ----------
    columns : list of (key, kind, description)
        From :func:`~dpsklearn.preprocessing.resolve_columns`: ``kind`` is
        ``"numeric"`` (description ``(lo, hi)``) or ``"categorical"``
        (description the category list).
    n_bins : int
        Equal-width bins per numeric column (0: the raw value and a missing
        indicator only).
    part : {"all", "bins"}, default="all"
        ``"bins"``: the numeric columns' bin and missing slots alone (no
        categories, raw values or constant; divided by ``sqrt(n_numeric)``),
        the second stage of a linear-first fit.

    Attributes
    ----------
    n_features_out : int
        The width ``p`` of a mapped row, the constant included.
    feature_names : list of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.preprocessing import AdditiveFeatureMap
    >>> fmap = AdditiveFeatureMap(
    ...     [(0, "numeric", (0.0, 10.0)), (1, "categorical", ["a", "b"])], 2)
    >>> codes = fmap.encode(np.array([[2.5, "b"], [np.nan, None]], dtype=object))
    >>> features = fmap.transform(codes)
    >>> features.shape, bool(np.all(np.linalg.norm(features, axis=1) <= 1))
    ((2, 8), True)
    """

    def __init__(
        self, columns: list[tuple[Hashable, str, Any]], n_bins: int, part: str = "all"
    ) -> None:
        self.columns = list(columns)
        self.n_bins = int(n_bins)
        self.part = part
        if part not in ("all", "bins") or (part == "bins" and self.n_bins < 1):
            raise ValueError(
                f"part must be 'all', or 'bins' with n_bins >= 1, got {part!r}."
            )
        self.log_scale = [
            kind == "numeric"
            and desc[0] >= 0
            and desc[1] >= LOG_RANGE_RATIO * max(desc[0], 1)
            for _, kind, desc in self.columns
        ]
        bins_only = part == "bins"
        widths, names = [], []
        for key, kind, desc in self.columns:
            if kind == "categorical":
                slots = [] if bins_only else [f"{key}={v}" for v in desc]
                slots += [] if bins_only else [f"{key}=missing"]
            elif self.n_bins:
                slots = [f"{key}:bin{b}" for b in range(self.n_bins)]
                slots += [f"{key}:missing"] + ([] if bins_only else [f"{key}"])
            else:
                slots = [f"{key}", f"{key}:missing"]
            widths.append(len(slots))
            names += slots
        self.feature_names = names + ([] if bins_only else ["1"])
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        self.n_features_out = len(self.feature_names)
        n_categorical = sum(kind == "categorical" for _, kind, _ in self.columns)
        n_numeric = len(self.columns) - n_categorical
        if bins_only:
            squared = max(1, n_numeric)
        else:
            squared = 1 + n_categorical + (2 if self.n_bins else 1) * n_numeric
        # Shaded by 2**-50 so rounding never leaves a row above norm 1.
        self.scale = (1.0 - 2.0**-50) / math.sqrt(squared)

    def encode(self, X: Any) -> NDArray[np.float64]:
        """Per column: ``t`` in [0, 1] or a category index; NaN if missing.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_columns)
            Rows in the schema's columns (strings, categoricals, numbers).

        Returns
        -------
        codes : ndarray of shape (n_samples, n_columns)
        """
        import pandas as pd  # for mixed-type columns; dpsklearn imports without it

        codes = np.empty((X.shape[0], len(self.columns)))
        for j, (key, kind, desc) in enumerate(self.columns):
            values = column_values(X, key)
            missing = is_missing(values)
            if kind == "categorical":
                strings = pd.Series(values, dtype=object).astype(str)
                levels = pd.Index([str(c) for c in desc])
                column = levels.get_indexer(strings).astype(np.float64)
                column[(column < 0) | missing] = np.nan
            else:
                lo, hi = desc
                column = np.full(values.shape[0], np.nan)
                numbers = values[~missing]
                if numbers.dtype.kind in "fiub":
                    numbers = numbers.astype(np.float64)
                else:  # a value that is not a number counts as missing
                    numbers = pd.to_numeric(
                        pd.Series(numbers, dtype=object), errors="coerce"
                    ).to_numpy(np.float64)
                if self.log_scale[j]:
                    column[~missing] = np.log1p(
                        np.clip(numbers, lo, hi) - lo
                    ) / math.log1p(hi - lo)
                else:
                    column[~missing] = (np.clip(numbers, lo, hi) - lo) / (hi - lo)
            codes[:, j] = column
        return codes

    def transform(self, codes: NDArray[np.float64]) -> NDArray[np.float64]:
        """The features of encoded rows (each row's norm at most 1), dense.

        Parameters
        ----------
        codes : ndarray of shape (n_samples, n_columns)
            What :meth:`encode` returned.

        Returns
        -------
        features : ndarray of shape (n_samples, n_features_out)
        """
        return self.sparse_transform(codes).toarray()

    def sparse_transform(self, codes: NDArray[np.float64]) -> sp.csr_matrix:
        """The features as a CSR matrix: the same few entries in every row.

        One entry per categorical column and per bin, two per scaled value
        (the value, and the bin or missing indicator), and the constant:
        each row has the same number of stored entries (some of them 0), so
        the CSR arrays are written column by column (vectorised; no loop
        over rows).

        Parameters
        ----------
        codes : ndarray of shape (n_samples, n_columns)
            What :meth:`encode` returned.

        Returns
        -------
        features : scipy.sparse.csr_matrix of shape (n_samples, n_features_out)
        """
        n = codes.shape[0]
        columns, values = [], []
        for j, (_, kind, desc) in enumerate(self.columns):
            start, code = self.offsets[j], codes[:, j]
            missing = np.isnan(code)
            filled = np.nan_to_num(code)
            if kind == "categorical":
                if self.part == "bins":
                    continue
                columns.append(start + np.where(missing, len(desc), filled))
                values.append(np.ones(n))
                continue
            raw = np.where(missing, 0.0, 2.0 * filled - 1.0)
            if self.n_bins:
                bins = np.minimum(filled * self.n_bins, self.n_bins - 1)
                columns.append(start + np.where(missing, self.n_bins, bins))
                values.append(np.ones(n))
                if self.part == "all":
                    columns.append(np.full(n, start + self.n_bins + 1))
                    values.append(raw)
            else:
                columns += [np.full(n, start), np.full(n, start + 1)]
                values += [raw, missing.astype(np.float64)]
        if self.part == "all":
            columns.append(np.full(n, self.n_features_out - 1))
            values.append(np.ones(n))
        width = len(columns)
        indices = np.column_stack(columns).astype(np.int32).ravel()
        data = np.column_stack(values).ravel() * self.scale
        indptr = np.arange(0, n * width + 1, width, dtype=np.int64)
        return sp.csr_matrix((data, indices, indptr), shape=(n, self.n_features_out))
