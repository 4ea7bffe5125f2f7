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

Bound to a :class:`~dpsklearn.ledger.PrivacyLedger` record
(:meth:`ServingState.bind_ledger` at ``fit``), the state is durable instead:
``with state.serving():`` loads the stored state, the model answers, and the
new state is committed in the same ledger transaction before the answers
are returned, so a copy, a reloaded pickle or a restarted process continues
from the stored state and never gets budget back (SPEC section 4).
"""

from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

__all__ = ["ReleaseCache", "ServingState", "row_keys"]

# Engine state that is as secret as the data: stored apart from the public
# counters (a ledger may be told not to keep it) and never shown.
_SECRET_ENGINE_KEYS = ("noisy_threshold",)


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

    Attributes
    ----------
    ledger_binding : tuple of (PrivacyLedger, str) or None
        The ledger and model record id this state is stored under (set by
        :meth:`bind_ledger`), or None for an in-memory state.
    """

    # Durable serving state (SPEC section 4); None: in memory only.
    ledger_binding = None
    _ledger_version = None

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

    # -- durable state (SPEC section 4) ----------------------------------------
    def bind_ledger(self, accountant, label=None):
        """Store this state under a new model record when ``accountant`` is a ledger.

        Called at the end of ``fit``. Any other accountant leaves the state in
        memory. The engine must offer ``get_state`` / ``set_state``.

        Returns
        -------
        model_id : str or None
            The record's random id, or None when nothing was bound.
        """
        register = getattr(accountant, "_register_model", None)
        if register is None:
            return None
        engine = self.engine
        if engine is not None and not (
            hasattr(engine, "get_state") and hasattr(engine, "set_state")
        ):
            raise TypeError(
                f"{type(engine).__name__} cannot store its state in a ledger "
                "(it has no get_state / set_state)."
            )
        with self.lock:
            state, secret = self._snapshot()
            model_id = register(label, state, secret)
            self.ledger_binding = (accountant, model_id)
            self._ledger_version = 1
        return model_id

    @contextlib.contextmanager
    def serving(self):
        """Hold the state for one batch of answers: ``with state.serving(): ...``.

        In memory this is ``with state.lock``. Bound to a ledger it also holds
        the ledger's write lock, loads the stored state first and stores the
        new state last, committed before the block's answers can be returned
        (also when the block raises: the state only moves forward).
        """
        with self.lock:
            if self.ledger_binding is None:
                yield self
                return
            ledger, model_id = self.ledger_binding
            with ledger._model_transaction(model_id) as record:
                try:
                    self.load(record)
                except (KeyError, TypeError, ValueError) as exc:
                    raise ValueError(
                        f"the ledger record {model_id} of this model is corrupt or "
                        f"belongs to another model ({type(exc).__name__}); "
                        "the model answers nothing."
                    ) from None
                try:
                    yield self
                finally:
                    self.store(record)

    def _snapshot(self):
        state = {"n_served": int(self.n_served)}
        secret = {}
        if self.engine is not None:
            engine_state = dict(self.engine.get_state())
            for key in _SECRET_ENGINE_KEYS:
                if key in engine_state:
                    secret[key] = engine_state.pop(key)
            state["engine"] = engine_state
        return state, (secret or None)

    def load(self, record):
        """Continue from a stored record (never from this object's own copy).

        A noisy threshold the record does not hold is taken from memory only
        when this object wrote the record's current version; otherwise the
        engine redraws it and charges one abstention (SPEC section 4).
        """
        state = record.state
        secret = record.secret or {}
        self.n_served = int(state["n_served"])
        engine = self.engine
        if engine is not None:
            engine_state = dict(state["engine"])
            noisy = secret.get("noisy_threshold")
            if noisy is None and record.version == self._ledger_version:
                noisy = engine.get_state().get("noisy_threshold")
            cutoff = getattr(engine, "cutoff", None)
            if (
                noisy is None
                and cutoff is not None
                and engine_state.get("abstention_count", 0) >= cutoff
            ):
                noisy = math.nan  # halted: no threshold is needed, none is drawn
            engine_state["noisy_threshold"] = noisy
            engine.set_state(engine_state)
        self._ledger_version = record.version

    def store(self, record):
        """Write the current state as the record's next version (same transaction)."""
        state, secret = self._snapshot()
        self._ledger_version = record.save(state, secret)

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


def row_keys(X):
    """Exact keys of the rows of a dense 2-D array, one ``numpy.void`` per row.

    Two rows get the same key exactly when their float64 values are equal
    (``-0.0`` and ``0.0`` are made equal). Keys sort and compare without a
    Python loop, so a batch of queries is looked up in ``O(m log m)``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Validated, finite query rows.

    Returns
    -------
    keys : ndarray of shape (n_rows,), dtype void

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn._serving import row_keys
    >>> k = row_keys(np.array([[1.0, -0.0], [1.0, 0.0], [2.0, 0.0]]))
    >>> bool(k[0] == k[1]), bool(k[0] == k[2])
    (True, False)
    """
    values = np.asarray(X, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("row_keys needs a 2-D array of query rows.")
    values = np.ascontiguousarray(values + 0.0)  # + 0.0 turns -0.0 into 0.0
    width = values.dtype.itemsize * values.shape[1]
    return values.view(np.dtype((np.void, width))).reshape(values.shape[0])


class ReleaseCache:
    """Answers already released by a fitted model, keyed by their query row.

    A query row asked again gets the answer already released for it: that
    answer is a copy of a release already paid for (post-processing), so it
    is free, and nobody can average the noise away by asking again. Only
    the *distinct* new rows of a batch are computed and charged, in the order
    of their first appearance; when the budget allows fewer than all of
    them, the rows answered are the longest prefix of the batch whose new
    rows were paid for (so ``partial_predictions`` is a prefix).

    The keys are the query rows (public, they belong to the caller) and the
    values are released answers, so the cache is no more secret than the
    model's outputs. Arrays are replaced, never written in place (SPEC 8).

    Parameters
    ----------
    fields : dict of str to (dtype, tuple)
        Name, dtype and trailing shape of each value stored per row.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn._serving import ReleaseCache, row_keys
    >>> cache = ReleaseCache({"answer": (np.int64, ())})
    >>> def compute(rows):  # the mechanism: here, the row index
    ...     return {"answer": np.asarray(rows)}, len(rows)
    >>> keys = row_keys(np.array([[5.0], [6.0], [5.0]]))
    >>> out, n_answered, n_new = cache.serve(keys, 10, compute)
    >>> out["answer"].tolist(), n_answered, n_new
    ([0, 1, 0], 3, 2)
    >>> out, n_answered, n_new = cache.serve(keys[::-1], 10, compute)
    >>> out["answer"].tolist(), n_new
    ([0, 1, 0], 0)
    """

    def __init__(self, fields):
        self.fields = {
            name: (np.dtype(dtype), tuple(shape))
            for name, (dtype, shape) in fields.items()
        }
        self._keys = None
        self._values = {
            name: np.empty((0, *shape), dtype=dtype)
            for name, (dtype, shape) in self.fields.items()
        }

    def __len__(self):
        return 0 if self._keys is None else int(self._keys.shape[0])

    def _lookup(self, keys):
        """Index of each key in the cache, or -1."""
        n_cached = len(self)
        if n_cached == 0:
            return np.full(keys.shape[0], -1, dtype=np.int64)
        position = np.minimum(np.searchsorted(self._keys, keys), n_cached - 1)
        return np.where(self._keys[position] == keys, position, -1)

    def _add(self, keys, values):
        if keys.shape[0] == 0:
            return
        if self._keys is None:
            all_keys = keys
            all_values = {name: values[name] for name in self.fields}
        else:
            all_keys = np.concatenate([self._keys, keys])
            all_values = {
                name: np.concatenate([self._values[name], values[name]])
                for name in self.fields
            }
        order = np.argsort(all_keys, kind="stable")
        self._keys = all_keys[order]
        self._values = {name: all_values[name][order] for name in self.fields}

    def serve(self, keys, n_affordable, compute):
        """Answer a batch: cached rows from the cache, new distinct rows by ``compute``.

        Parameters
        ----------
        keys : void ndarray of shape (m,)
            From :func:`row_keys`.
        n_affordable : int
            How many distinct new rows the budget can pay for now.
        compute : callable
            ``compute(positions)`` releases answers for the batch rows at
            ``positions`` (distinct new rows, ascending) and returns
            ``(values, n_done)``: a dict of arrays (one per field) whose first
            ``n_done`` entries were released, ``n_done <= len(positions)``
            (fewer when the mechanism halts part-way).

        Returns
        -------
        values : dict of str to ndarray
            Answers for the first ``n_answered`` rows of the batch.
        n_answered : int
            Length of the answered prefix (``m`` when nothing ran out).
        n_new : int
            Distinct new rows released (and to be charged) in this call.
        """
        m = keys.shape[0]
        where = self._lookup(keys)
        new_rows = np.flatnonzero(where < 0)
        if new_rows.size:
            _, first, inverse = np.unique(
                keys[new_rows], return_index=True, return_inverse=True
            )
            order = np.argsort(first, kind="stable")
            distinct = new_rows[first[order]]  # first appearances, ascending
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            new_rank = rank[inverse.ravel()]
        else:
            distinct = new_rows
            new_rank = new_rows
        n_request = int(min(max(int(n_affordable), 0), distinct.size))
        fresh, n_done = ({}, 0)
        if n_request:
            fresh, n_done = compute(distinct[:n_request])
            n_done = int(n_done)
        n_answered = m if n_done == distinct.size else int(distinct[n_done])

        out = {}
        hits = np.flatnonzero(where[:n_answered] >= 0)
        n_new_in_prefix = int(np.searchsorted(new_rows, n_answered))
        for name, (dtype, shape) in self.fields.items():
            column = np.empty((n_answered, *shape), dtype=dtype)
            column[hits] = self._values[name][where[hits]]
            if n_new_in_prefix:
                column[new_rows[:n_new_in_prefix]] = np.asarray(fresh[name])[
                    new_rank[:n_new_in_prefix]
                ]
            out[name] = column
        if n_done:
            self._add(
                keys[distinct[:n_done]],
                {name: np.asarray(fresh[name])[:n_done] for name in self.fields},
            )
        return out, n_answered, n_done
