"""Warnings attributed to the user's line, not to dpsklearn's internals.

Within :func:`warning_scope` (an estimator's ``fit``, ``predict`` and
``score`` open one, keyed by the seed an estimator shares with its clones),
a warning of a kind already shown in that scope is not shown again: a
``GridSearchCV`` or ``cross_val_score`` over clones of one estimator shows
each kind of warning once, not once per fold and candidate. Its kind is its
category and the first clause of its message with the numbers taken out.
(Python's own once-per-location rule cannot do this: scikit-learn's
``Parallel`` resets the warning registries around every fold.)
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextvars import ContextVar
from types import FrameType

__all__ = ["warn_user", "warning_scope"]

_PACKAGE = __name__.split(".")[0]

#: Scopes remembered (the least recently used is forgotten first).
_MAX_SCOPES = 256
_SCOPES: OrderedDict[Hashable, set] = OrderedDict()
_SCOPES_LOCK = threading.Lock()
_CURRENT: ContextVar[set | None] = ContextVar("dpsklearn_warning_scope", default=None)
_NUMBER = re.compile(r"[-+]?\d[\d.,_]*(?:e[-+]?\d+)?")


def _kind(message: str, category: type[Warning]) -> tuple:
    """A warning's kind: its category and its first clause without the numbers.

    The first clause (up to the first ``": "`` or ``". "``) says what is
    warned about; what follows explains it with figures that change with
    the parameters a search varies.
    """
    text = _NUMBER.sub("#", message)
    cuts = [i for i in (text.find(": "), text.find(". ")) if i > 0]
    return category, text[: min(cuts)] if cuts else text


@contextlib.contextmanager
def warning_scope(scope: Hashable | None) -> Iterator[None]:
    """Show each kind of warning once within ``scope`` (all calls that share it).

    ``None`` is no scope (every warning shown). A scope opened inside
    another keeps the outer one.

    Examples
    --------
    >>> import warnings
    >>> from dpsklearn._warn import warn_user, warning_scope
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for fold in range(3):
    ...         with warning_scope("doctest-search"):
    ...             warn_user(f"fold {fold}: k=320 teachers is few")
    >>> len(caught)
    1
    """
    if scope is None or _CURRENT.get() is not None:
        yield
        return
    with _SCOPES_LOCK:
        shown = _SCOPES.get(scope)
        if shown is None:
            shown = _SCOPES[scope] = set()
        _SCOPES.move_to_end(scope)
        while len(_SCOPES) > _MAX_SCOPES:
            _SCOPES.popitem(last=False)
    token = _CURRENT.set(shown)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _inside_package(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == _PACKAGE or name.startswith(_PACKAGE + ".")


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` at the first calling frame outside dpsklearn.

    A warning about the user's call (a fit that will answer little, a bound
    read from the data) should point at that call: ``warnings.warn`` with a
    fixed ``stacklevel`` points wherever the depth of the internal calls
    happens to end (a decorator, a template method). This walks up past
    every dpsklearn frame instead, as scikit-learn's users expect from its
    own warnings. Under ``GridSearchCV`` the frame is scikit-learn's.
    Inside a :func:`warning_scope`, a kind already shown there is skipped.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning

    Examples
    --------
    >>> import warnings
    >>> from dpsklearn._warn import warn_user
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_user("checked")
    >>> caught[0].message.args[0], caught[0].filename.endswith("_warn.py")
    ('checked', False)
    """
    shown = _CURRENT.get()
    if shown is not None:
        kind = _kind(message, category)
        with _SCOPES_LOCK:
            if kind in shown:
                return
            shown.add(kind)
    frame: FrameType | None = sys._getframe(1)
    level = 2  # 1 is this function, 2 its caller
    while frame is not None and _inside_package(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
