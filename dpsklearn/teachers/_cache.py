"""Teachers reused across fits that differ only in privacy parameters.

The teachers of an ensemble depend on the training rows, the base
estimator, the number of teachers, the class indices and ``random_state``
(the partition and every teacher's seed come from it), never on
``epsilon``, ``delta``, the mechanism or ``max_queries``. A search over
those (``GridSearchCV(model, {"epsilon": [...]})``) would otherwise refit
identical teachers for every value. Here a fit first looks its teachers up:

* **Exact keys.** An ensemble's key is the SHA-256 digest of everything its
  teachers depend on: the bytes of ``X`` and ``y`` (numpy buffers hashed as
  they are, everything else through its pickle, so that equal digests mean
  equal bytes), the pickled base estimator (all its parameters), the number
  of teachers, the number of classes, the integer ``random_state``, the
  scikit-learn settings and the library versions. Two fits share teachers
  only when all of these are equal (up to a SHA-256 collision). Equal data in
  another layout (another dtype, a DataFrame with other blocks) only misses.
* **Only reproducible fits.** A ``RandomState`` instance asks for fresh
  teachers: nothing is looked up. An estimator's ``random_state=None`` is
  the integer seed it draws once and shares with its clones (so the fits of
  a search reuse their teachers; a new estimator draws a new seed).
* **Bounded, in memory by default.** The last :data:`_CAPACITY` ensembles of
  this process, at most :data:`_MAX_BYTES` (512 MB) of their arrays in all
  (:func:`clear_teacher_cache` empties them); with
  ``dpsklearn.set_config(teacher_cache=directory)`` (or a
  :class:`joblib.Memory`) they are also stored on disk there; with
  ``teacher_cache=None`` nothing is kept.
* **Vote counts too.** For an ensemble held here, the vote counts of a
  query batch are kept beside its teachers (keyed by the batch's digest,
  bounded in bytes): the folds of a search ask every epsilon the same
  validation rows. So is its fused vote path (built from the teachers
  alone, never modified).

Whatever is cached is as secret as the training data (the teachers were
fitted on it; vote counts are computed from them): it is never shown, and a
disk location must be protected like the data. Reuse never changes what a
model releases: its teachers are the teachers a fresh fit gives (tested),
and the noise is drawn afresh by each model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import operator
import os
import pickle
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import sklearn
from numpy.typing import ArrayLike
from sklearn.base import clone

from .._config import get_config

__all__ = ["clear_teacher_cache", "ensemble_key"]

#: Teacher ensembles kept in memory (a search over one hyper-parameter with
#: scikit-learn's default 5 folds and the final refit on all rows needs 6) ...
_CAPACITY = 8
#: ... and the bytes of their arrays (an ensemble larger than this is not kept).
_MAX_BYTES = 1 << 29
#: Bytes of cached vote counts per ensemble.
_STATISTICS_BYTES = 1 << 24

_LOCK = threading.Lock()
_MEMORY: OrderedDict = OrderedDict()  # key -> _Entry


def _nbytes(value, seen, depth=0):
    """Bytes of the arrays (and strings) reachable from ``value``, roughly."""
    if depth > 12 or id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple, set)):
        return sum(_nbytes(v, seen, depth + 1) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v, seen, depth + 1) for v in value.values())
    state = getattr(value, "__dict__", None)
    if state is None and hasattr(value, "__getstate__"):  # a Cython tree
        try:
            state = value.__getstate__()
        except Exception:
            state = None
    if isinstance(state, dict):
        return sum(_nbytes(v, seen, depth + 1) for v in state.values())
    return 0


class _Entry:
    def __init__(self, key, teachers):
        self.key = key
        self.teachers = list(teachers)
        self.nbytes = _nbytes(self.teachers, set())
        self.statistics = OrderedDict()  # (kind, query digest) -> ndarray
        self.statistics_bytes = 0
        self.derived = {}  # kind -> an immutable object built from the teachers

    def holds(self, teachers):
        """Whether ``teachers`` are exactly these teachers (same objects, order)."""
        # operator.is_ over the pairs: asked on every predict chunk, so no
        # Python frame per teacher.
        return len(teachers) == len(self.teachers) and all(
            map(operator.is_, teachers, self.teachers)
        )


def digest(value) -> str:
    """SHA-256 of ``value``'s pickle, numpy buffers hashed in place.

    Pickle protocol 5 hands contiguous numpy buffers out of band; they are
    hashed without a copy, each with its length, after the pickle stream
    (which records where they go). Equal digests therefore mean equal pickle
    streams and buffers: equal content.
    """
    hasher = hashlib.sha256()
    buffers: list[pickle.PickleBuffer] = []
    stream = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    hasher.update(len(stream).to_bytes(8, "little"))
    hasher.update(stream)
    for buffer in buffers:
        raw = buffer.raw()
        hasher.update(raw.nbytes.to_bytes(8, "little"))
        hasher.update(raw)
    return hasher.hexdigest()


def _dpsklearn_version():
    try:
        return importlib.metadata.version("dpsklearn")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _cache_setting():
    return get_config()["teacher_cache"]


def ensemble_key(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    n_estimators: int,
    random_state: int | np.random.RandomState | None,
    n_classes: int | None,
) -> str | None:
    """The exact key of a teacher ensemble, or ``None`` when it is not reused.

    ``None`` when the cache is off, ``random_state`` is not an integer
    (fresh teachers were asked for) or something cannot be pickled.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from dpsklearn.teachers import ensemble_key
    >>> X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    >>> a = ensemble_key(DecisionTreeClassifier(), X, y, 2, 0, 2)
    >>> a == ensemble_key(DecisionTreeClassifier(), X.copy(), y, 2, 0, 2)
    True
    >>> a == ensemble_key(DecisionTreeClassifier(max_depth=3), X, y, 2, 0, 2)
    False
    >>> ensemble_key(DecisionTreeClassifier(), X, y, 2, None, 2) is None
    True
    """
    setting = _cache_setting()
    if setting is None or setting is False:
        return None
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(
        random_state, (int, np.integer)
    ):
        return None
    try:
        parts = (
            "dpsklearn teacher ensemble",
            _dpsklearn_version(),
            sklearn.__version__,
            np.__version__,
            sorted(sklearn.get_config().items()),
            digest(clone(estimator)),
            digest(X),
            digest(np.asarray(y)),
            int(n_estimators),
            int(random_state),
            None if n_classes is None else int(n_classes),
        )
        return digest(parts)
    except Exception:  # unpicklable estimator or data: no reuse, a fresh fit
        return None


def _memory_location(setting):
    if isinstance(setting, (str, os.PathLike)) and setting != "memory":
        from joblib import Memory

        return Memory(os.fspath(setting), verbose=0)
    if hasattr(setting, "cache") and hasattr(setting, "location"):
        return setting
    return None


def _stored(key, fit):
    """What the disk cache stores: the key beside the teachers (checked on load)."""
    return key, fit()


def cached_fit(key, fit):
    """The teachers of ``key``: from memory, from disk, or ``fit()`` and kept.

    Parameters
    ----------
    key : str or None
        From :func:`ensemble_key`; ``None`` fits without caching.
    fit : callable
        ``fit()`` returns the fitted teachers (a list).

    Returns
    -------
    teachers : list
        A new list; teachers from memory are the same (never modified)
        objects another model of the same key holds.
    """
    if key is None:
        return fit()
    with _LOCK:
        entry = _MEMORY.get(key)
        if entry is not None:
            _MEMORY.move_to_end(key)
            return list(entry.teachers)
    memory = _memory_location(_cache_setting())
    if memory is not None:
        stored_key, teachers = memory.cache(_stored, ignore=["fit"])(key, fit)
        if stored_key != key:  # never another ensemble's teachers
            teachers = fit()
    else:
        teachers = fit()
    entry = _Entry(key, teachers)
    if entry.nbytes <= _MAX_BYTES:
        with _LOCK:
            _MEMORY[key] = entry
            _MEMORY.move_to_end(key)
            while len(_MEMORY) > _CAPACITY or (
                sum(e.nbytes for e in _MEMORY.values()) > _MAX_BYTES
            ):
                _MEMORY.popitem(last=False)
    return list(teachers)


def _entry_of(teachers):
    for entry in _MEMORY.values():
        if entry.holds(teachers):
            return entry
    return None


def cached_statistic(teachers, X, kind, compute):
    """``compute()``, or the same statistic of these teachers on these rows.

    Only for teachers held in the memory cache (same objects): their key
    determines them, so equal rows give equal statistics.

    Parameters
    ----------
    teachers : list
    X : validated query rows
    kind : tuple
        What is computed (``("votes", n_classes)``).
    compute : callable
    """
    with _LOCK:
        entry = _entry_of(teachers) if _MEMORY else None
    if entry is None:
        return compute()
    try:
        query = (kind, digest(X))
    except Exception:
        return compute()
    with _LOCK:
        value = entry.statistics.get(query)
        if value is not None:
            entry.statistics.move_to_end(query)
            return value.copy()
    value = compute()
    with _LOCK:
        if query not in entry.statistics and value.nbytes <= _STATISTICS_BYTES:
            entry.statistics[query] = value.copy()
            entry.statistics_bytes += value.nbytes
            while entry.statistics_bytes > _STATISTICS_BYTES:
                _, dropped = entry.statistics.popitem(last=False)
                entry.statistics_bytes -= dropped.nbytes
    return value


def cached_derived(teachers, kind, compute):
    """``compute()``, or what it gave for these very teachers before.

    For objects built from the teachers alone and never modified (the fused
    vote path), kept beside teachers held in the memory cache.
    """
    with _LOCK:
        entry = _entry_of(teachers) if _MEMORY else None
        if entry is not None and kind in entry.derived:
            return entry.derived[kind]
    value = compute()
    if entry is not None:
        with _LOCK:
            entry.derived.setdefault(kind, value)
    return value


def clear_teacher_cache() -> None:
    """Forget every teacher ensemble (and vote counts) kept in memory.

    A disk location named by ``dpsklearn.set_config(teacher_cache=...)`` is
    left as it is: delete the directory (or call ``Memory.clear()``).

    Examples
    --------
    >>> from dpsklearn.teachers import clear_teacher_cache
    >>> clear_teacher_cache()
    """
    with _LOCK:
        _MEMORY.clear()
