"""The serving state of a fitted private model (SPEC 8).

Everything that changes while a fitted model answers queries lives in one
:class:`ServingState` created by ``fit``: the sparse vector engine (abstention
count, noisy threshold), the number of queries served, the noise generators
and a lock, plus the frozen configuration the guarantee depends on. No fitted
numpy array is mutated in place, so ``check_estimators_pickle`` can memory-map
the fitted arrays read-only, and ``set_params`` after ``fit`` cannot change a
running model.

A copy made by pickle or :func:`copy.deepcopy` reseeds its generators from OS
entropy unless ``noise_random_state`` fixed them: a copy that replayed the
original's noise would let anyone cancel it. Without a ledger, such a copy
carries a second, independent budget (the documentation says so).
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["ServingState"]


class ServingState:
    """Mutable serving state of one fitted model.

    Parameters
    ----------
    config : dict
        Frozen parameters (``max_queries``, ``fallback``, ...), public.
    generators : dict of str to numpy.random.Generator
        Named noise generators used directly by the model (not the engine's).
    reseed_on_copy : bool
        Whether copies draw fresh OS entropy.
    engine : SparseVectorEngine or None
    """

    def __init__(self, config, generators=None, reseed_on_copy=True, engine=None):
        self.config = dict(config)
        self.generators = dict(generators or {})
        self.reseed_on_copy = bool(reseed_on_copy)
        self.engine = engine
        self.n_served = 0
        self.lock = threading.RLock()

    def queries_allowed(self, n_requested: int) -> int:
        """How many of ``n_requested`` further queries ``max_queries`` still allows."""
        cap = self.config.get("max_queries")
        if cap is None:
            return n_requested
        return max(0, min(n_requested, cap - self.n_served))

    def __repr__(self):
        engine = self.engine
        abstentions = engine.abstention_count if engine is not None else None
        return f"ServingState(n_served={self.n_served}, abstention_count={abstentions})"

    def __getstate__(self):
        with self.lock:
            state = self.__dict__.copy()
        del state["lock"]
        if self.reseed_on_copy:
            state["generators"] = dict.fromkeys(self.generators)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.RLock()
        if self.reseed_on_copy:
            self.generators = {
                name: np.random.default_rng() for name in self.generators
            }
