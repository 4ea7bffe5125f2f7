"""Warnings attributed to the user's line, not to dpsklearn's internals."""

from __future__ import annotations

import sys
import warnings
from types import FrameType

__all__ = ["warn_user"]

_PACKAGE = __name__.split(".")[0]


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
    frame: FrameType | None = sys._getframe(1)
    level = 2  # 1 is this function, 2 its caller
    while frame is not None and _inside_package(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
