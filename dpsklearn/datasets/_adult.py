"""Loader for the bundled UCI Adult (census income) dataset."""

from __future__ import annotations

import csv
import gzip
from importlib import resources
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from sklearn.utils import Bunch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_adult"]

_DATA_PACKAGE = "dpsklearn.datasets"
_FILES: dict[str, tuple[str, ...]] = {
    "train": ("adult.data.gz",),
    "test": ("adult.test.gz",),
}
_FILES["all"] = _FILES["train"] + _FILES["test"]

FEATURE_NAMES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]
TARGET_NAME = "income"
TARGET_NAMES = ["<=50K", ">50K"]

# Fixed, public category lists: the sorted union of the values declared in
# adult.names and the values occurring in adult.data and adult.test ("?" marks
# a missing value and is kept as a category of its own). They are hard-coded so
# that the ordinal encoding does not depend on the data loaded: the same string
# gets the same code in every subset.
CATEGORIES = {
    "workclass": [
        "?",
        "Federal-gov",
        "Local-gov",
        "Never-worked",
        "Private",
        "Self-emp-inc",
        "Self-emp-not-inc",
        "State-gov",
        "Without-pay",
    ],
    "education": [
        "10th",
        "11th",
        "12th",
        "1st-4th",
        "5th-6th",
        "7th-8th",
        "9th",
        "Assoc-acdm",
        "Assoc-voc",
        "Bachelors",
        "Doctorate",
        "HS-grad",
        "Masters",
        "Preschool",
        "Prof-school",
        "Some-college",
    ],
    "marital-status": [
        "Divorced",
        "Married-AF-spouse",
        "Married-civ-spouse",
        "Married-spouse-absent",
        "Never-married",
        "Separated",
        "Widowed",
    ],
    "occupation": [
        "?",
        "Adm-clerical",
        "Armed-Forces",
        "Craft-repair",
        "Exec-managerial",
        "Farming-fishing",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Other-service",
        "Priv-house-serv",
        "Prof-specialty",
        "Protective-serv",
        "Sales",
        "Tech-support",
        "Transport-moving",
    ],
    "relationship": [
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Own-child",
        "Unmarried",
        "Wife",
    ],
    "race": [
        "Amer-Indian-Eskimo",
        "Asian-Pac-Islander",
        "Black",
        "Other",
        "White",
    ],
    "sex": ["Female", "Male"],
    "native-country": [
        "?",
        "Cambodia",
        "Canada",
        "China",
        "Columbia",
        "Cuba",
        "Dominican-Republic",
        "Ecuador",
        "El-Salvador",
        "England",
        "France",
        "Germany",
        "Greece",
        "Guatemala",
        "Haiti",
        "Holand-Netherlands",
        "Honduras",
        "Hong",
        "Hungary",
        "India",
        "Iran",
        "Ireland",
        "Italy",
        "Jamaica",
        "Japan",
        "Laos",
        "Mexico",
        "Nicaragua",
        "Outlying-US(Guam-USVI-etc)",
        "Peru",
        "Philippines",
        "Poland",
        "Portugal",
        "Puerto-Rico",
        "Scotland",
        "South",
        "Taiwan",
        "Thailand",
        "Trinadad&Tobago",
        "United-States",
        "Vietnam",
        "Yugoslavia",
    ],
}
CATEGORICAL_FEATURES = [i for i, name in enumerate(FEATURE_NAMES) if name in CATEGORIES]

DESCR = """\
Adult (census income) dataset
-----------------------------

Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning
Repository. https://doi.org/10.24432/C5XW20

Licensed under a Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

**Data Set Characteristics:**

==================   ==============================================
Classes              2 ("<=50K", ">50K"; income above 50,000 USD)
Samples (train)      32,561 (adult.data; 24.08% ">50K")
Samples (test)       16,281 (adult.test)
Samples (all)        48,842 (train rows, then test rows)
Dimensionality       14 (6 numeric, 8 categorical)
==================   ==============================================

Records extracted by Barry Becker from the 1994 US Census database; the
task is to predict whether a person earns more than 50,000 USD a year.
The train/test split is the original one (2/3, 1/3 random). ``fnlwgt`` is
the census sampling weight, not a personal attribute.

Missing values are written "?" in the source files (in workclass, occupation
and native-country). They are kept as a category of their own, "?", so the
data contain no NaN. The test file's labels end in "."; it is stripped.

Categorical columns are ordinal-encoded by their index in a fixed, public
category list per column (``categories``: the sorted values declared in
adult.names and found in the files, plus "?"). The encoding does not depend
on the data loaded and is identical for the train and test subsets. With
``as_frame=True`` they are pandas Categoricals with the same categories.

The original description is shipped as ``data/adult.names`` beside the data.
"""


def _read_columns(filename):
    """Return the 15 columns of one gzipped Adult file as lists of strings."""
    source = resources.files(_DATA_PACKAGE).joinpath("data").joinpath(filename)
    with source.open("rb") as raw:
        text = gzip.decompress(raw.read()).decode("ascii")
    # Skip blank lines and comments (adult.test starts with "|1x3 Cross ...").
    lines = [line for line in text.splitlines() if line and line[0] != "|"]
    n_fields = len(FEATURE_NAMES) + 1
    for line in lines:  # the files use no quoting, so fields = commas + 1
        if line.count(",") != n_fields - 1:
            raise ValueError(f"Malformed record in bundled file {filename!r}: {line!r}")
    # Parsing all records as one CSV row and slicing it by column is several
    # times faster than building (and transposing) one list per record.
    fields = next(csv.reader([",".join(lines)], skipinitialspace=True))
    return [fields[j::n_fields] for j in range(n_fields)]


def _encode(column, categories, name):
    """Codes of the (whitespace-stripped) strings of a column in categories."""
    index = {category: i for i, category in enumerate(categories)}
    try:  # fast path: the csv reader already removed the leading spaces
        return np.fromiter(map(index.__getitem__, column), np.int64, len(column))
    except KeyError:
        pass
    lookup = {}
    for value in set(column):  # strip once per distinct value, not per row
        key = value.strip()
        if key not in index:
            raise ValueError(f"Unknown value {key!r} in column {name!r}.")
        lookup[value] = index[key]
    return np.fromiter(map(lookup.__getitem__, column), np.int64, len(column))


def _parse(filenames):
    """Parse the files into int64 numeric columns, int codes and labels."""
    columns: list[list[str]] = [[] for _ in range(len(FEATURE_NAMES) + 1)]
    for filename in filenames:
        for column, values in zip(columns, _read_columns(filename), strict=True):
            column.extend(values)
    numeric = {}
    codes = {}
    for name, column in zip(FEATURE_NAMES, columns, strict=False):
        if name in CATEGORIES:
            codes[name] = _encode(column, CATEGORIES[name], name)
        else:  # numpy's string-to-integer conversion ignores whitespace
            numeric[name] = np.array(column, dtype=np.int64)
    # adult.test writes its labels with a trailing "." ("<=50K."): strip it.
    target_codes = _encode(
        columns[-1], [*TARGET_NAMES, *(f"{label}." for label in TARGET_NAMES)], "income"
    ) % len(TARGET_NAMES)
    target = np.asarray(TARGET_NAMES)[target_codes]
    return numeric, codes, target


@overload
def load_adult(
    *, subset: str = ..., return_X_y: Literal[False] = ..., as_frame: bool = ...
) -> Bunch: ...


@overload
def load_adult(
    *, subset: str = ..., return_X_y: Literal[True], as_frame: bool = ...
) -> tuple[np.ndarray | pd.DataFrame, np.ndarray | pd.Series]: ...


@overload
def load_adult(
    *, subset: str = ..., return_X_y: bool, as_frame: bool = ...
) -> Bunch | tuple[np.ndarray | pd.DataFrame, np.ndarray | pd.Series]: ...


def load_adult(
    *, subset: str = "train", return_X_y: bool = False, as_frame: bool = False
) -> Bunch | tuple[np.ndarray | pd.DataFrame, np.ndarray | pd.Series]:
    """Load and return the UCI Adult (census income) dataset (classification).

    The dataset ships with dpsklearn and loads with no network access. The
    task is to predict whether a person's income exceeds 50,000 USD a year.

    =================   ===========================================
    Classes             2 ("<=50K", ">50K")
    Samples             32,561 (train), 16,281 (test), 48,842 (all)
    Dimensionality      14
    Features            6 numeric, 8 categorical (ordinal-encoded)
    =================   ===========================================

    Missing values ("?" in the source files) are kept as a category of their
    own, so the data contain no NaN. Categorical columns are encoded by their
    index in a fixed, public category list (``categories``), identical for
    every subset, so that the encoding reveals nothing about the data loaded.

    Source: Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine
    Learning Repository. https://doi.org/10.24432/C5XW20. Licensed under a
    Creative Commons Attribution 4.0 International (CC BY 4.0) licence.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which split to load: ``"train"`` is ``adult.data`` (32,561 rows),
        ``"test"`` is ``adult.test`` (16,281 rows), ``"all"`` is the train rows
        followed by the test rows (48,842 rows).

    return_X_y : bool, default=False
        If True, returns ``(data, target)`` instead of a Bunch object.

    as_frame : bool, default=False
        If True, the data is a pandas DataFrame whose categorical columns are
        pandas Categoricals (with the categories of ``categories``) and whose
        numeric columns are int64, and the target is a pandas Series named
        ``"income"``. Requires pandas; pandas is not needed otherwise.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object, with the following attributes.

        data : {ndarray, DataFrame} of shape (n_samples, 14)
            The data matrix. As an ndarray it is float64: numeric columns hold
            their values, categorical columns the index of the value in
            ``categories[feature_name]``. If ``as_frame=True``, a DataFrame.
        target : {ndarray, Series} of shape (n_samples,)
            The labels, the strings ``"<=50K"`` or ``">50K"``. If
            ``as_frame=True``, a categorical Series named ``"income"``.
        feature_names : list of str
            The 14 column names, as in ``adult.names``.
        target_names : list of str
            ``["<=50K", ">50K"]``.
        categorical_features : list of int
            Indices of the categorical columns.
        categories : dict of str to list of str
            For each categorical column, its categories in code order.
        frame : DataFrame of shape (n_samples, 15) or None
            ``data`` and ``target`` joined if ``as_frame=True``, else None.
        DESCR : str
            Description of the dataset, with its citation and licence.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    Examples
    --------
    >>> from dpsklearn.datasets import load_adult
    >>> adult = load_adult()
    >>> adult.data.shape
    (32561, 14)
    >>> adult.target_names
    ['<=50K', '>50K']
    >>> workclass = adult.feature_names.index("workclass")
    >>> adult.categories["workclass"][int(adult.data[0, workclass])]
    'State-gov'
    >>> X_test, y_test = load_adult(subset="test", return_X_y=True)
    >>> X_test.shape, y_test[:2]
    ((16281, 14), array(['<=50K', '<=50K'], dtype='<U5'))
    """
    if not isinstance(subset, str) or subset not in _FILES:
        raise ValueError(f"subset must be one of {sorted(_FILES)!r}; got {subset!r}.")
    if as_frame:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on environment
            raise ImportError(
                "load_adult(as_frame=True) requires pandas; install pandas or "
                "use as_frame=False."
            ) from exc

    numeric, codes, target = _parse(_FILES[subset])

    frame = None
    if as_frame:
        columns = {}
        for name in FEATURE_NAMES:
            if name in CATEGORIES:
                columns[name] = pd.Categorical.from_codes(
                    codes[name], categories=CATEGORIES[name]
                )
            else:
                columns[name] = numeric[name]
        data = pd.DataFrame(columns, columns=FEATURE_NAMES)
        target = pd.Series(
            pd.Categorical(target, categories=TARGET_NAMES), name=TARGET_NAME
        )
        frame = pd.concat([data, target], axis=1)
    else:
        data = np.empty((len(FEATURE_NAMES), len(target)), dtype=np.float64)
        for j, name in enumerate(FEATURE_NAMES):
            data[j] = codes[name] if name in CATEGORIES else numeric[name]
        data = np.ascontiguousarray(data.T)

    if return_X_y:
        return data, target

    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=list(FEATURE_NAMES),
        target_names=list(TARGET_NAMES),
        categorical_features=list(CATEGORICAL_FEATURES),
        categories={name: list(cats) for name, cats in CATEGORIES.items()},
        DESCR=DESCR,
    )
