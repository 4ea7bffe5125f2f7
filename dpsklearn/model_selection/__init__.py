"""Private model selection: choose a configuration on private rows, publish it.

* :mod:`._search` -- :class:`PrivateGridSearch`, random repetition over a
  parameter grid (Papernot and Steinke 2022) within one ``(epsilon,
  delta)``, and :func:`is_publishable`, which estimators may be searched.
* :mod:`._candidate_budget` -- :class:`CandidateBudget`, the accountant each
  candidate fit spends from: a Renyi curve, probed before anything is
  trained.

The mathematics is in ``docs/design.rst``, "Private model selection".
"""

from ._candidate_budget import CandidateBudget
from ._search import PrivateGridSearch, is_publishable

__all__ = [
    "PrivateGridSearch",
    "is_publishable",
]
