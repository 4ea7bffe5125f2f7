"""The one serving loop: every answer a fitted private model gives goes through it.

:func:`serve` does, for every estimator and mechanism, in this order:

1. **lock** the model's serving state (and, with a ledger, load its stored
   state inside a write transaction);
2. **budget**: how many rows the cap in query units still affords;
3. **answer**: the distinct new rows go to the mechanism's engine (rows
   already released come from the release cache, free); the engine may
   halt part-way;
4. **counters**: units spent, rows released, answered, abstained;
5. **verbose**: one line of public counters;
6. **pad or raise**: when fewer rows were answered than asked, pad with
   the model's free abstention (``on_exhausted="abstain"``) or raise
   :class:`~dpsklearn.BudgetExhaustedError` carrying the answers already
   paid for.

The path of one query from ``predict`` to the noise draw and the ledger is
drawn in ``docs/architecture.rst``.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import BudgetExhaustedError

__all__ = ["serve"]


def _empty(fields):
    return {
        name: np.empty((0, *shape), dtype=dtype)
        for name, (dtype, shape) in fields.items()
    }


def serve(state, method, n_rows, statistic, finish, *, fields, keys=None):
    """Answer ``n_rows`` query rows with the model's mechanism.

    Parameters
    ----------
    state : ServingState
    method : str
        The estimator method asking (``"predict"``, ``"predict_proba"``,
        ...): it selects the cost, the cache and what the engine releases.
    n_rows : int
        Rows in the batch.
    statistic : callable
        ``statistic(rows)`` computes the non-private statistic the mechanism
        needs (vote counts, soft labels, a mean) for the batch rows at the
        integer positions ``rows``; it is called only for rows the budget
        pays for and the cache does not hold.
    finish : callable
        ``finish(values)`` turns the released fields of the answered rows
        into the answers returned (post-processing: class indices to
        labels, noisy counts to their argmax, values to the target range).
    fields : dict of str to (dtype, tuple)
        The released fields of ``method`` and their trailing shapes.
    keys : ndarray, optional
        Exact keys of the rows (:func:`row_keys`) when the method has a
        release cache.

    Returns
    -------
    answers : ndarray of shape (n_rows, ...)
    abstained : bool ndarray of shape (n_rows,)

    Raises
    ------
    BudgetExhaustedError
        When the model cannot answer every row and does not pad; it carries
        the answers already paid for (``partial_predictions``).
    """
    cost = state.costs.get(method, 1)
    cache = state.caches.get(method)

    def compute(rows):
        engine = state.engine
        if engine.halted:  # it answers nothing more
            return _empty(fields), 0
        release = engine.answer(method, statistic(rows))
        abstained = release.values.get("abstained")
        n_abstained = (
            0
            if abstained is None
            else int(np.count_nonzero(abstained[: release.n_done]))
        )
        state.record(release.n_done, n_abstained)
        return release.values, release.n_done

    with state.serving():
        affordable = state.affordable(n_rows, cost)
        if cache is not None:
            values, n_answered, n_new = cache.serve(keys, affordable, compute)
        elif affordable:
            values, n_new = compute(np.arange(affordable))
            values = {name: np.asarray(v)[:n_new] for name, v in values.items()}
            n_answered = n_new
        else:
            values, n_answered, n_new = _empty(fields), 0, 0
        state.n_served += n_new * cost
        if state.verbose:
            _print_status(state, method, n_new, n_rows)

    answers = finish(values)
    abstained = np.zeros(n_rows, dtype=bool)
    if "abstained" in values:
        abstained[:n_answered] = values["abstained"][:n_answered]
    if n_answered < n_rows:
        if state.on_exhausted == "abstain":
            # The free answer of an abstention (one per method when a dict).
            fill = state.fill
            if isinstance(fill, dict):
                fill = fill.get(method)
            padding = np.empty(
                (n_rows - n_answered, *answers.shape[1:]), dtype=answers.dtype
            )
            padding[...] = fill
            answers = np.concatenate([answers, padding])
            abstained[n_answered:] = True
        else:
            spends = [] if state.accountant is None else state.accountant.events
            raise BudgetExhaustedError(
                f"{state.exhausted_reason(method)}; {n_answered} of {n_rows} "
                "queries in this call were answered (see partial_predictions).",
                partial_predictions=answers,
                n_answered=n_answered,
                spends=spends,
            )
    return answers, abstained


def _print_status(state, method, n_new, n_rows):
    # Public counters only: never votes, distances, noise or thresholds.
    cap = "no cap" if state.max_queries is None else state.max_queries
    failed = getattr(state.engine, "n_failed_tests", 0)
    print(
        f"[{state.label}] {method}: released {n_new} new row(s) of {n_rows}; "
        f"query units spent {state.n_served} of {cap}; failed stability tests "
        f"{failed}"
    )
