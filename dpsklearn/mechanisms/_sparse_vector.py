"""The sparse vector engine (Bassily, Thakkar and Thakurta 2018, Algorithms 1, 3).

State: threshold ``w``, scale ``lam``, cutoff ``T``, abstention count ``c``
and the noisy threshold ``w_hat = w + DLap(lam)``. For each query with an
integer score ``q`` (its distance to instability):

    q_hat = q + DLap(2 lam)
    q_hat >  w_hat  ->  pass (the caller releases the exact answer)
    q_hat <= w_hat  ->  fail: c += 1, and w_hat = w + DLap(lam) is drawn afresh

The engine halts when ``c`` reaches ``T``: the paper's loop ``c <= T`` makes
``T + 1`` threshold draws while ``lam`` pays for ``T``, so stopping at ``T``
is required (``docs/corrections.rst``, "Halting at T"). With ``lam =
2/eps0`` each threshold draw is one AboveThreshold instance that is
``eps0``-DP for sensitivity-1 scores (Dwork and Roth 2014, Theorem 3.23, on
the integers); the ``T`` draws compose.

Noise comes from two index-addressed streams: query noise by the
model's query index and threshold noise by draw index. The vectorised
:meth:`SparseVectorEngine.run` finds the next failure with a galloping
(doubling) search from the current position, so a batch of ``m`` queries
costs ``O(m + failures * log m)`` array work, never ``O(m * T)``, and a halt
early in a large batch does not draw noise for the rows it never reaches.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["SparseVectorEngine"]

# The first window of the galloping search. Large enough that a batch with
# no failure is a handful of numpy calls, small enough that a failure right
# at the start wastes little noise.
_INITIAL_WINDOW = 256


class SparseVectorEngine:
    """Stateful sparse vector test over a stream of integer scores.

    Parameters
    ----------
    threshold : float
        The threshold ``w``.
    noise_scale : float
        ``lam``: threshold noise ``DLap(lam)``, query noise ``DLap(2 lam)``.
    cutoff : int
        ``T``: the engine halts when the abstention count reaches it.
    query_noise : callable
        ``query_noise(start, stop)`` returns the ``DLap(2 lam)`` draws for
        query indices ``start .. stop-1`` (for example a
        :class:`~dpsklearn.noise.DiscreteLaplaceStream`).
    threshold_noise : callable
        ``threshold_noise(start, stop)`` returns the ``DLap(lam)`` draws for
        threshold-draw indices ``start .. stop-1``.

    Attributes
    ----------
    abstention_count : int
        Failed tests so far (``c``).
    n_queries : int
        Queries tested so far.
    n_threshold_draws : int
        Threshold draws made so far (at most ``cutoff``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import DiscreteLaplaceStream
    >>> from dpsklearn.mechanisms import SparseVectorEngine
    >>> rng = np.random.default_rng(0)
    >>> engine = SparseVectorEngine(
    ...     threshold=5.0, noise_scale=1.0, cutoff=2,
    ...     query_noise=DiscreteLaplaceStream(2.0, rng),
    ...     threshold_noise=DiscreteLaplaceStream(1.0, rng))
    >>> passed, n_processed = engine.run(np.array([50, 50, 0, 0, 0]))
    >>> passed.tolist(), n_processed, engine.halted
    ([True, True, False, False], 4, True)
    """

    def __init__(
        self,
        threshold: float,
        noise_scale: float,
        cutoff: int,
        query_noise: Callable[[int, int], ArrayLike],
        threshold_noise: Callable[[int, int], ArrayLike],
    ) -> None:
        self.threshold = float(threshold)
        self.noise_scale = float(noise_scale)
        self.cutoff = int(cutoff)
        self.query_noise = query_noise
        self.threshold_noise = threshold_noise
        self.abstention_count = 0
        self.n_queries = 0
        self.n_threshold_draws = 0
        self._noisy_threshold = self._draw_threshold()

    def _draw_threshold(self):
        draw = self.n_threshold_draws
        noise = np.asarray(self.threshold_noise(draw, draw + 1))
        self.n_threshold_draws += 1
        return self.threshold + float(noise[0])

    @property
    def halted(self) -> bool:
        """Whether the cutoff has been reached; a halted engine tests nothing."""
        return self.abstention_count >= self.cutoff

    def _record_failure(self):
        self.abstention_count += 1
        if not self.halted:  # never draw the (T+1)-th threshold: lam pays for T
            self._noisy_threshold = self._draw_threshold()

    def run(self, scores: ArrayLike) -> tuple[NDArray[np.bool_], int]:
        """Test ``scores`` in order until they are used up or the engine halts.

        Parameters
        ----------
        scores : array-like of int, shape (m,)
            The queries' integer scores (distances to instability).

        Returns
        -------
        passed : bool ndarray of shape (n_processed,)
            Whether each processed query passed.
        n_processed : int
            How many leading queries were tested: ``m`` unless the engine
            halted, in which case the query that reached the cutoff is the
            last one processed (it failed).
        """
        scores = np.asarray(scores, dtype=np.int64).ravel()
        m = scores.shape[0]
        passed = np.ones(m, dtype=bool)
        base = self.n_queries  # global index of scores[0]
        position = 0
        while position < m and not self.halted:
            failure = self._next_failure(scores, position, base)
            if failure is None:
                position = m
                break
            passed[failure] = False
            position = failure + 1
            self._record_failure()
        self.n_queries += position
        return passed[:position], position

    def _next_failure(self, scores, start, base):
        """Index of the next query at or after ``start`` that fails, or None.

        The galloping (doubling) search of :meth:`run`, against the current
        noisy threshold; query noise is addressed by global query index.
        """
        m = scores.shape[0]
        window = _INITIAL_WINDOW
        while start < m:
            stop = min(m, start + window)
            noise = self.query_noise(base + start, base + stop)
            hits = np.flatnonzero(scores[start:stop] + noise <= self._noisy_threshold)
            if hits.size:
                return start + int(hits[0])
            start = stop
            window *= 2
        return None

    def run_two_stage(
        self,
        first_scores: ArrayLike,
        second_scores: ArrayLike,
        second_query_noise: Callable[[int, int], ArrayLike],
    ) -> tuple[NDArray[np.int8], int]:
        """Two stability tests per query, the second on a failure.

        Bassily, Thakkar and Thakurta (2018), Algorithms 6 and 8, as
        ``docs/design.rst``, "Soft-label queries: the double test" corrects
        them. Each query
        is tested on its first score (query noise ``DLap(2 lam)`` from
        ``query_noise``). On a pass the outcome is 0. On a fail, ``c += 1``
        and a fresh threshold is drawn (always: the second test needs it,
        even when ``c`` has just reached ``T``), and the second score is
        tested against it with its own query noise ``second_query_noise``
        (addressed by the same query index). A second pass gives outcome 1
        (``c`` has grown by 1 in all); a second fail gives outcome 2, ``c``
        grows by one more (2 in all) and the threshold is redrawn unless the
        engine has halted. The engine halts after the query at which ``c``
        reaches ``cutoff``; since the last query may add 2, ``c`` counts
        failed tests and at most ``cutoff + 1`` thresholds are drawn, so the
        engine must be calibrated for ``cutoff + 1`` draws.

        Parameters
        ----------
        first_scores, second_scores : array-like of int, shape (m,)
            Integer scores of sensitivity 1 (distances to instability of the
            first and of the shifted histogram).
        second_query_noise : callable
            ``second_query_noise(start, stop)`` returns ``DLap(2 lam)`` draws
            for query indices ``start .. stop-1``; only the indices of queries
            that fail their first test are requested.

        Returns
        -------
        outcome : int8 ndarray of shape (n_processed,)
            0: first test passed; 1: first failed, second passed; 2: both failed.
        n_processed : int
            How many leading queries were tested (``m`` unless the engine
            halted; then the query that reached the cutoff is the last one).

        Examples
        --------
        >>> import numpy as np
        >>> from dpsklearn.mechanisms import SparseVectorEngine
        >>> def zeros(start, stop):
        ...     return np.zeros(stop - start, dtype=np.int64)
        >>> engine = SparseVectorEngine(threshold=5.0, noise_scale=1.0, cutoff=3,
        ...                             query_noise=zeros, threshold_noise=zeros)
        >>> outcome, n = engine.run_two_stage([9, 0, 0, 9], [0, 9, 0, 9], zeros)
        >>> outcome.tolist(), n, engine.abstention_count, engine.halted
        ([0, 1, 2], 3, 3, True)
        """
        first = np.asarray(first_scores, dtype=np.int64).ravel()
        second = np.asarray(second_scores, dtype=np.int64).ravel()
        if first.shape != second.shape:
            raise ValueError(
                "first_scores and second_scores must have the same length."
            )
        m = first.shape[0]
        outcome = np.zeros(m, dtype=np.int8)
        base = self.n_queries  # global index of first[0]
        position = 0
        while position < m and not self.halted:
            failure = self._next_failure(first, position, base)
            if failure is None:
                position = m
                break
            # First test failed: c += 1 and a fresh threshold for the second
            # test (Algorithm 8, step 7), drawn even if c has reached T.
            self.abstention_count += 1
            self._noisy_threshold = self._draw_threshold()
            index = base + failure
            noise = np.asarray(second_query_noise(index, index + 1))
            if second[failure] + int(noise[0]) > self._noisy_threshold:
                outcome[failure] = 1
            else:
                outcome[failure] = 2
                self._record_failure()  # c += 1; redraw unless halted
            position = failure + 1
        self.n_queries += position
        return outcome[:position], position

    # -- copies ------------------------------------------------------------------
    def __setstate__(self, state):
        # A copy (pickle, deepcopy) whose noise streams reseed must not replay
        # the original's noisy threshold: the two models' answers would then
        # share one threshold draw. The copy draws a fresh one from its fresh
        # stream and, since its current instance may already have answered
        # queries with the old value, charges the new draw as a failed test
        # (c += 1), as a restart that cannot restore its threshold does
        # (docs/design.rst, "Serving state, copies and the ledger"). A copy
        # bound to a ledger loads the ledger's record afterwards instead.
        self.__dict__.update(state)
        if getattr(self.threshold_noise, "reseed_on_copy", False) and not self.halted:
            self._record_failure()

    # The noisy threshold is as secret as the data: never shown.
    def __repr__(self):
        return (
            f"SparseVectorEngine(cutoff={self.cutoff}, "
            f"abstention_count={self.abstention_count}, n_queries={self.n_queries})"
        )

    def get_state(self) -> dict:
        """The serving state to persist (includes the secret noisy threshold)."""
        return {
            "abstention_count": self.abstention_count,
            "n_queries": self.n_queries,
            "n_threshold_draws": self.n_threshold_draws,
            "noisy_threshold": self._noisy_threshold,
        }

    def set_state(self, state: dict) -> None:
        """Continue from a persisted state.

        A state without the noisy threshold (it could not be restored) redraws
        it and charges that as an abstention (``docs/design.rst``, "Serving
        state, copies and the ledger"), so a restart never hands
        back budget.
        """
        self.abstention_count = int(state["abstention_count"])
        self.n_queries = int(state["n_queries"])
        self.n_threshold_draws = int(state["n_threshold_draws"])
        noisy = state.get("noisy_threshold")
        if noisy is not None:
            self._noisy_threshold = float(noisy)
        elif self.halted:
            self._noisy_threshold = math.nan  # no threshold is needed, none drawn
        else:
            self._record_failure()
