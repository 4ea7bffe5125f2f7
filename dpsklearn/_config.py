"""dpsklearn's settings: :func:`set_config`, :func:`get_config`, :func:`config_context`.

One setting today, ``teacher_cache``: where fitted teachers are kept so that
two fits that differ only in privacy parameters (``epsilon``, ``delta``, the
mechanism and its options, ``max_queries``) fit their teachers once
(:mod:`dpsklearn.teachers`, "Teachers reused across fits"). Settings are
per thread, as :func:`sklearn.set_config`'s are: :func:`config_context`
changes them for the ``with`` block of the calling thread only.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from joblib import Memory

__all__ = ["config_context", "get_config", "set_config"]

_GLOBAL = {"teacher_cache": "memory"}
_THREAD = threading.local()


def _local():
    if not hasattr(_THREAD, "config"):
        _THREAD.config = dict(_GLOBAL)
    return _THREAD.config


def _check_teacher_cache(value):
    if value is None or value is False or value == "memory":
        return value
    if isinstance(value, (str, os.PathLike)):
        return value
    if hasattr(value, "cache") and hasattr(value, "location"):  # joblib.Memory
        return value
    raise ValueError(
        "teacher_cache must be 'memory', None, a directory (str or path) or a "
        f"joblib.Memory, got {value!r}."
    )


def get_config() -> dict:
    """The current values of dpsklearn's settings (a copy).

    Returns
    -------
    config : dict
        ``{"teacher_cache": ...}``.

    Examples
    --------
    >>> import dpsklearn
    >>> dpsklearn.get_config()["teacher_cache"]
    'memory'
    """
    return dict(_local())


def set_config(
    teacher_cache: str
    | os.PathLike[str]
    | Memory
    | Literal[False]
    | None = "unchanged",
) -> None:
    """Set dpsklearn's settings for the calling thread (and threads started later).

    Parameters
    ----------
    teacher_cache : {"memory"}, None, str, path or joblib.Memory, default="memory"
        Where fitted teachers are kept for reuse by a later fit on the same
        rows with the same base estimator, number of teachers and integer
        ``random_state`` (only privacy parameters differ, as in a search over
        ``epsilon``). ``"memory"``: the last four teacher ensembles, in this
        process (at most 512 MB of their arrays;
        :func:`dpsklearn.teachers.clear_teacher_cache` empties it).
        ``None`` (or ``False``): no reuse, every fit fits its teachers. A
        directory or a :class:`joblib.Memory`: also on disk there, as
        ``Pipeline(memory=...)`` keeps fitted transformers. Cached teachers
        are as secret as the training data (``docs/cluster.rst``, "Teachers
        reused across a search"): a disk location must be protected like the
        data itself. Reused teachers are the teachers a fresh fit gives, so
        what a model releases never depends on this setting.

    Examples
    --------
    >>> import dpsklearn
    >>> dpsklearn.set_config(teacher_cache=None)
    >>> dpsklearn.get_config()["teacher_cache"] is None
    True
    >>> dpsklearn.set_config(teacher_cache="memory")
    """
    if not (isinstance(teacher_cache, str) and teacher_cache == "unchanged"):
        value = _check_teacher_cache(teacher_cache)
        _local()["teacher_cache"] = value
        _GLOBAL["teacher_cache"] = value


@contextlib.contextmanager
def config_context(
    *,
    teacher_cache: str
    | os.PathLike[str]
    | Memory
    | Literal[False]
    | None = "unchanged",
) -> Iterator[None]:
    """Change dpsklearn's settings within a ``with`` block (this thread only).

    Parameters
    ----------
    teacher_cache : str, path, joblib.Memory, False or None, optional
        As for :func:`set_config`; left unchanged when not given.

    Yields
    ------
    None
        The settings hold inside the block and are restored after it.

    Examples
    --------
    >>> import dpsklearn
    >>> with dpsklearn.config_context(teacher_cache=None):
    ...     dpsklearn.get_config()["teacher_cache"] is None
    True
    >>> dpsklearn.get_config()["teacher_cache"]
    'memory'
    """
    config = _local()
    before = dict(config)
    if not (isinstance(teacher_cache, str) and teacher_cache == "unchanged"):
        config["teacher_cache"] = _check_teacher_cache(teacher_cache)
    try:
        yield
    finally:
        config.clear()
        config.update(before)
