"""The one serving loop: every answer a fitted private model gives goes through it.

:func:`serve` does, for every estimator and mechanism, in this order:

1. **lock** the model's serving state (and, with a ledger, load its stored
   state inside a write transaction);
2. **budget**: how many rows the cap in query units still affords;
3. **answer**: the distinct new rows go to the mechanism's engine (rows
   already released come from the release cache, free); the engine may
   halt part-way. An engine whose answers do not depend on how a batch is
   cut (``chunk_invariant``: the sparse vector tests, whose noise is
   addressed by query index) gets the batch in growing chunks, and the
   statistic (the teachers' votes) is computed chunk by chunk, so rows
   after a halt cost nothing (:func:`_chunks`);
4. **counters**: units spent, rows released, answered, abstained;
5. **verbose**: one line of public counters;
6. **pad or raise**: when fewer rows were answered than asked, pad with
   the model's free abstention (``on_exhausted="abstain"``) or raise
   :class:`~dpsklearn.BudgetExhaustedError` carrying the answers already
   paid for;
7. **fallback**: the rows left unanswered get the answers of the student
   of the released answers (post-processing, free), and the rows returned
   from it and as abstentions are counted.

Steps 2 to 7 run in the one record transaction of step 1 (one ledger
transaction per call), so the state is saved, committed, before the
answers are returned or the error is raised.

The path of one query from ``predict`` to the noise draw and the ledger is
drawn in ``docs/architecture.rst``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import DTypeLike

from .._progress import Progress
from .._warn import warn_user, warning_scope
from ..exceptions import AbstentionWarning, BudgetExhaustedError

if TYPE_CHECKING:
    from ._cache import RowKeys
    from ._state import ServingState

__all__ = ["serve"]

# Rows of the first chunk given to a chunk-invariant engine. Chunks then at
# least double, and grow further until a chunk's fixed cost (calling every
# teacher once) is at most _FIXED_SHARE of its time, so a model that never
# halts calls its teachers O(log(rows)) times, and one that halts after h
# rows has computed the statistic of fewer than max(3 h, _FIRST_CHUNK) rows
# when chunks only double (a tail joins the last chunk; more rows when the
# fixed cost asks for larger chunks).
_FIRST_CHUNK = 256
_FIXED_SHARE = 0.05
# Seconds of answering before its progress is shown.
_PROGRESS_DELAY = 2.0


def _chunks(n_rows, timings):
    """Yield ``(start, stop)`` of consecutive chunks of ``n_rows`` rows.

    ``timings`` is a list the caller appends ``(rows, seconds)`` to after each
    chunk; the next chunk's size reads it. Chunks at least double; with two
    chunks timed, the time of a chunk is fitted as ``fixed + per_row * rows``
    and the next chunk is large enough that ``fixed`` is at most
    ``_FIXED_SHARE`` of it; a tail shorter than the chunk before it joins
    that chunk. Timing only sizes the chunks; for a chunk-invariant engine
    it never changes an answer.

    Examples
    --------
    >>> from dpsklearn.serving._loop import _chunks
    >>> timings = []
    >>> sizes = []
    >>> for start, stop in _chunks(3000, timings):
    ...     sizes.append(stop - start)
    ...     timings.append((stop - start, 1e-3 * (stop - start)))  # no fixed cost
    >>> sizes
    [256, 512, 1024, 1208]
    """
    start, size = 0, min(_FIRST_CHUNK, n_rows)
    while start < n_rows:
        stop = min(n_rows, start + size)
        if n_rows - stop < size:  # a short tail would cost a call of its own
            stop = n_rows
        yield start, stop
        start = stop
        size = 2 * size
        if len(timings) >= 2:
            (rows_a, seconds_a), (rows_b, seconds_b) = timings[-2:]
            if rows_b != rows_a:
                per_row = (seconds_b - seconds_a) / (rows_b - rows_a)
                fixed = seconds_b - per_row * rows_b
                if per_row > 0 and fixed > 0:
                    needed = fixed * (1 - _FIXED_SHARE) / (_FIXED_SHARE * per_row)
                    size = max(size, int(np.ceil(needed)))


def _empty(fields):
    return {
        name: np.empty((0, *shape), dtype=dtype)
        for name, (dtype, shape) in fields.items()
    }


def serve(
    state: ServingState,
    method: str,
    n_rows: int,
    statistic: Callable[[np.ndarray], Any],
    finish: Callable[[dict[str, np.ndarray]], np.ndarray],
    *,
    fields: Mapping[str, tuple[DTypeLike, tuple[int, ...]]],
    keys: RowKeys | None = None,
    fallback: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    | None = None,
) -> tuple[np.ndarray, np.ndarray]:
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
    fallback : callable, optional
        ``fallback(answers, abstained)`` answers rows the mechanism left
        unanswered (its abstentions, and the rows after a halt or a spent
        cap) from released answers only (post-processing, free; a
        classifier's student of its answers): it returns the answers and the
        mask of the rows it answered, which are then no longer abstained.

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

    def answer(rows):
        release = state.engine.answer(method, statistic(rows))
        n_done = int(release.n_done)
        values = {name: np.asarray(v)[:n_done] for name, v in release.values.items()}
        abstained = values.get("abstained")
        n_abstained = 0 if abstained is None else int(np.count_nonzero(abstained))
        state.record(n_done, n_abstained)
        return values, n_done

    def compute(rows):
        engine = state.engine
        if engine.halted:  # it answers nothing more
            return _empty(fields), 0
        if not getattr(engine, "chunk_invariant", False) or len(rows) <= _FIRST_CHUNK:
            return answer(rows)
        # Chunk by chunk: the statistic of rows after a halt is never computed.
        parts: list[dict[str, np.ndarray]] = []
        timings: list[tuple[int, float]] = []
        n_done = 0
        with Progress(
            len(rows),
            desc=f"{state.label or 'model'} {method}",
            unit="row",
            verbose=state.verbose,
            delay=_PROGRESS_DELAY,
        ) as progress:
            for start, stop in _chunks(len(rows), timings):
                began = time.perf_counter()
                values, n_chunk = answer(rows[start:stop])
                timings.append((stop - start, time.perf_counter() - began))
                parts.append(values)
                n_done += n_chunk
                progress.update(n_chunk)
                if n_chunk < stop - start or engine.halted:
                    break
        values = {
            name: np.concatenate([part[name] for part in parts]) for name in parts[0]
        }
        return values, n_done

    # One record transaction per call: the spend, the released answers'
    # post-processing (the fallback) and the counters of what is returned
    # are saved together, before the answers leave (docs/architecture.rst,
    # "The path of one query").
    exhausted = None
    with state.serving():
        affordable = state.affordable(n_rows, cost)
        if cache is not None:
            # A method with a release cache is always given its rows' keys.
            values, n_answered, n_new = cache.serve(
                cast("RowKeys", keys), affordable, compute
            )
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
        if n_answered < n_rows and state.on_exhausted != "abstain":
            # Raised once the state is saved (the spend only moves forward).
            exhausted = (
                f"{state.exhausted_reason(method)}; {n_answered} of {n_rows} "
                "queries in this call were answered (see partial_predictions)."
            )
        else:
            if n_answered < n_rows:
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
            n_student = 0
            if fallback is not None:  # it also learns from this call's answers
                answers, from_fallback = fallback(answers, abstained)
                n_student = int(np.count_nonzero(from_fallback & abstained))
                abstained = abstained & ~from_fallback
            state.count_returned(n_student, int(np.count_nonzero(abstained)))
    if exhausted is not None:
        spends = [] if state.accountant is None else state.accountant.events
        raise BudgetExhaustedError(
            exhausted,
            partial_predictions=answers,
            n_answered=n_answered,
            spends=spends,
        )
    if n_answered < n_rows:
        n_left = int(np.count_nonzero(abstained[n_answered:]))
        with warning_scope(getattr(state, "warning_scope", None)):
            _warn_once_halted(state, method, n_rows - n_answered, n_left, n_rows)
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


def _warn_once_halted(state, method, n_padded, n_left, n_rows):
    """Say once per model that it has stopped answering, and why (public words).

    After a halt or a spent ``max_queries`` every query is answered by the
    student of the released answers, or abstained on, for free; a user
    looping over batches would otherwise only see it in the mask. One
    warning per serving state, not per call.
    """
    if getattr(state, "halt_warned", False):
        return
    state.halt_warned = True
    if n_left == 0:
        warn_user(
            f"{state.exhausted_reason(method)}: {n_padded} of {n_rows} rows of "
            f"this {method} call, and every later query, are answered by a "
            "student fitted on the answers already released (post-processing, "
            "free; return_source=True marks them, budget_status() counts them). "
            "A new fit is a new release with a new budget.",
            UserWarning,
        )
        return
    warn_user(
        f"{state.exhausted_reason(method)}: {n_left} of {n_rows} rows of this "
        f"{method} call, and every later query, are abstained on (free; "
        "return_abstained=True marks them, budget_status() reports the counters). "
        "A new fit is a new release with a new budget.",
        AbstentionWarning,
    )
