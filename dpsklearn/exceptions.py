"""Errors and warnings raised by dpsklearn."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from numpy.typing import ArrayLike

__all__ = [
    "AbstentionWarning",
    "BudgetCopyWarning",
    "BudgetExhaustedError",
    "PrivacyLeakWarning",
    "StudentFitError",
]


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

    def __init__(
        self,
        message: str,
        partial_predictions: ArrayLike | None = None,
        n_answered: int = 0,
        spends: Iterable[Any] | None = None,
    ) -> None:
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


class BudgetCopyWarning(PrivacyLeakWarning):
    """A fitted model was copied, and the copy carries a second budget.

    Raised once per fitted model when it is pickled or deep-copied while its
    serving state is held in memory (no :class:`~dpsklearn.PrivacyLedger`):
    the copy answers from its own remaining budget, independently of the
    original, so together they can release up to twice what the model's
    ``(epsilon, delta)`` pays for. A model fitted with a ``PrivacyLedger`` as
    its accountant keeps its state in the ledger, and its copies share it.
    """


class AbstentionWarning(UserWarning):
    """A score counted abstentions as answers.

    Raised by ``score`` when the model abstained on some rows (answered with
    ``abstain_label``, or with the fallback of a soft-label model): the score
    then mixes real answers with abstentions, and a model that has halted
    scores like a constant. The message gives the count; use
    :func:`dpsklearn.metrics.make_abstention_scorer` to see the answered
    fraction beside the score.
    """


class StudentFitError(ValueError):
    """The student could not be fitted on the labels the teacher released.

    Everything that can be checked on public data (the student fitted on
    ``X_public`` with stand-in labels) is checked before anything is spent;
    this error is left for what only the private labels decide, for example
    a teacher whose released labels all name one class. The labels were paid
    for, so they travel with the error.

    Parameters
    ----------
    message : str
    rows : ndarray
        Positions in ``X_public`` of the rows the teacher labelled.
    labels : ndarray
        The labels (values) it released for them (private releases: public).

    Examples
    --------
    >>> from dpsklearn.exceptions import StudentFitError
    >>> err = StudentFitError("one class", rows=[0, 3], labels=["a", "a"])
    >>> list(err.rows), list(err.labels)
    ([0, 3], ['a', 'a'])
    """

    def __init__(self, message: str, rows: ArrayLike, labels: ArrayLike) -> None:
        super().__init__(message)
        self.rows = rows
        self.labels = labels
