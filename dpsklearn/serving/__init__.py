"""Serving: the one loop that answers queries, its state, its cache, its status.

* :func:`serve` -- lock, budget, answer (with the release cache), counters,
  verbose line, pad or raise: every estimator's ``predict`` goes through it.
* :class:`ServingState` -- the one mutable object of a fitted model, kept in
  memory or in a :class:`~dpsklearn.PrivacyLedger` record.
* :class:`ReleaseCache`, :func:`row_keys` and :class:`RowKeys` -- a row
  asked again gets the answer already released, free; rows are keyed
  exactly, whatever their form (numbers, strings, DataFrame rows of mixed
  dtypes, sparse rows).
* :class:`BudgetStatus` -- the one schema of ``budget_status()``.
"""

from ._cache import ReleaseCache, RowKeys, row_keys
from ._loop import serve
from ._state import ServingState
from ._status import BudgetStatus

__all__ = [
    "BudgetStatus",
]
