"""Scores that show abstentions.

A private model that abstains (``abstain_label``, a soft-label fallback, a
halted model padding with ``on_exhausted="abstain"``) scores its
abstentions as answers. The modules:

* ``_abstention.py`` -- :func:`make_abstention_scorer` (the score, the
  answered fraction and the score on answered rows, for ``GridSearchCV``),
  :func:`predict_with_abstentions`.
"""

from ._abstention import (
    AbstentionScorer,
    make_abstention_scorer,
    predict_with_abstentions,
)

__all__ = ["AbstentionScorer", "make_abstention_scorer", "predict_with_abstentions"]
