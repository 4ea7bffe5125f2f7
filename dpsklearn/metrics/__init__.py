"""Scores that show abstentions.

A private model that abstains (a classifier's ``abstain_label_``, a
soft-label fallback, every query after the budget is spent) scores its
abstentions as answers. The modules:

* ``_abstention.py`` -- :func:`make_abstention_scorer` (the score, the
  answered fraction and the score on answered rows, for ``GridSearchCV``),
  :func:`predict_with_abstentions`, :func:`warn_if_abstained`.
"""

from ._abstention import (
    AbstentionScorer,
    make_abstention_scorer,
    predict_with_abstentions,
    warn_if_abstained,
)

__all__ = [
    "make_abstention_scorer",
    "predict_with_abstentions",
]
