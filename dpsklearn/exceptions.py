"""Errors and warnings raised by dpsklearn."""

from __future__ import annotations

__all__ = ["BudgetExhaustedError", "PrivacyLeakWarning"]


class BudgetExhaustedError(RuntimeError):
    """A fitted model, or an accountant, cannot pay for another release.

    Raised when a privacy budget, the operational ``max_queries`` cap or the
    sparse vector cutoff ``T`` is reached. Answers that were already paid for
    in the same call are never lost: they travel with the error.

    Parameters
    ----------
    message : str
        What ran out. Never contains vote counts, noise or thresholds.
    partial_predictions : ndarray or None, default=None
        The answers released (and paid for) before the budget ran out, in the
        order of the query rows.
    n_answered : int, default=0
        ``len(partial_predictions)``.
    spends : list, default=None
        The accountant's recorded spends (public: only epsilons and deltas).

    Examples
    --------
    >>> from dpsklearn.exceptions import BudgetExhaustedError
    >>> err = BudgetExhaustedError("budget spent", partial_predictions=[1, 0],
    ...                            n_answered=2)
    >>> err.n_answered
    2
    """

    def __init__(self, message, partial_predictions=None, n_answered=0, spends=None):
        super().__init__(message)
        self.partial_predictions = partial_predictions
        self.n_answered = int(n_answered)
        self.spends = list(spends) if spends is not None else []


class PrivacyLeakWarning(UserWarning):
    """Something public was derived from private data, or noise was made replayable.

    Raised, for example, when ``classes`` or a bound such as ``target_range``
    is left unset and inferred from the training data, or when
    ``noise_random_state`` fixes the mechanism noise.
    """
