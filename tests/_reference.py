"""Test-only plain sequential reference of the sparse vector engine.

:class:`ReferenceSparseVector` is the textbook loop of Bassily, Thakkar and
Thakurta (2018), Algorithm 1, with the corrections of docs/corrections.rst
("Halting at T", "A threshold based on T, not on the number of queries m"),
one query at a time and with no look-ahead:

    w_hat = w + threshold_noise(draw 0)
    for each query, in order, while c < T:
        q_hat = q + query_noise(query index)
        q_hat >  w_hat  ->  pass
        q_hat <= w_hat  ->  fail: c += 1;
                            if c < T: w_hat = w + threshold_noise(next draw)

It shares nothing with :class:`dpsklearn.mechanisms.SparseVectorEngine`
except the two noise callables, so the tests can feed both the same noise and
demand identical decisions. :class:`ArrayNoise` is such a callable: it serves
slices of a pre-generated array and refuses any index outside it, so an
engine that asks for a threshold draw after the halt (index ``T``) fails
loudly instead of silently getting noise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ArrayNoise", "ReferenceSparseVector"]


class ArrayNoise:
    """A deterministic noise callable ``noise(start, stop)`` over a fixed array.

    Parameters
    ----------
    values : array-like of int
        The draw for index ``i`` is ``values[i]``.

    Attributes
    ----------
    max_stop : int
        The largest ``stop`` requested so far (how much noise was consumed).
    n_calls : int
    """

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)
        self.values.setflags(write=False)
        self.max_stop = 0
        self.n_calls = 0

    def __call__(self, start, stop):
        if not 0 <= start <= stop <= self.values.size:
            raise IndexError(
                f"noise requested for indices [{start}, {stop}) but only "
                f"{self.values.size} draws exist"
            )
        self.n_calls += 1
        if stop > self.max_stop:
            self.max_stop = int(stop)
        return self.values[start:stop].copy()


class ReferenceSparseVector:
    """Sequential sparse vector test: one query at a time, state across calls.

    Parameters
    ----------
    threshold : float
        ``w``.
    cutoff : int
        ``T``: halt when the abstention count reaches it.
    query_noise, threshold_noise : callable
        ``noise(start, stop)``: query noise by query index, threshold noise by
        draw index (the same callables the engine takes).
    """

    def __init__(self, threshold, cutoff, query_noise, threshold_noise):
        self.threshold = float(threshold)
        self.cutoff = int(cutoff)
        self.query_noise = query_noise
        self.threshold_noise = threshold_noise
        self.abstention_count = 0
        self.n_queries = 0
        self.n_threshold_draws = 0
        self.noisy_threshold = self._draw_threshold()

    def _draw_threshold(self):
        index = self.n_threshold_draws
        noise = int(self.threshold_noise(index, index + 1)[0])
        self.n_threshold_draws += 1
        return self.threshold + noise

    @property
    def halted(self):
        return self.abstention_count >= self.cutoff

    def run(self, scores):
        """Return ``(decisions, n_processed)`` for the leading queries tested."""
        decisions = []
        for score in np.asarray(scores, dtype=np.int64).ravel().tolist():
            if self.halted:
                break
            index = self.n_queries
            noisy_score = score + int(self.query_noise(index, index + 1)[0])
            self.n_queries += 1
            if noisy_score > self.noisy_threshold:
                decisions.append(True)
                continue
            decisions.append(False)
            self.abstention_count += 1
            if not self.halted:
                self.noisy_threshold = self._draw_threshold()
        return np.array(decisions, dtype=bool), len(decisions)
