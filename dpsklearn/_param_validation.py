"""Parameter constraints: the project's own small copy of scikit-learn's shape.

Estimators declare ``_parameter_constraints`` (a dict from parameter name to
a list of accepted constraints) and public functions declare theirs with
:func:`validate_params`, exactly as scikit-learn's own estimators do; a
value that meets none of the constraints raises :class:`InvalidParameterError`
(a ``ValueError`` and a ``TypeError``) whose message names the parameter, the
accepted values and the value given, before anything is computed or spent.

scikit-learn keeps its version of this machinery private (its
``_param_validation`` module under ``sklearn.utils``); importing it would
tie every release of dpsklearn to the scikit-learn releases it was tested
with. This module depends on nothing private, so a new scikit-learn cannot
break it.

A constraint is one of:

* ``None`` (the value ``None``), a type (``Integral``, ``Real``, ``str``,
  ``dict``, a class), ``callable``;
* :class:`Interval`, :class:`StrOptions`, :class:`Options`,
  :class:`HasMethods`;
* the strings ``"array-like"``, ``"sparse matrix"``, ``"random_state"``,
  ``"boolean"``, ``"verbose"``, ``"nan"`` and ``"no_validation"``.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

__all__ = [
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "ValidatesParameters",
    "validate_parameter_constraints",
    "validate_params",
]


class InvalidParameterError(ValueError, TypeError):
    """A parameter's value meets none of its constraints.

    Both a ``ValueError`` and a ``TypeError``, as scikit-learn's is, so
    code that catches either keeps working.
    """


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


class _Constraint:
    """One accepted kind of value."""

    def is_satisfied_by(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def __str__(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


class Interval(_Constraint):
    """A number of ``type`` in the interval ``[left, right]`` (ends per ``closed``).

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        ``Integral`` accepts integers only; ``Real`` accepts any real number
        (booleans are refused by both).
    left, right : float or None
        Ends of the interval; ``None`` is unbounded.
    closed : {"left", "right", "both", "neither"}
        Which ends belong to the interval.

    Examples
    --------
    >>> from numbers import Real
    >>> from dpsklearn._param_validation import Interval
    >>> str(Interval(Real, 0, 1, closed="neither"))
    'a float in the range (0, 1)'
    >>> Interval(Real, 0, 1, closed="neither").is_satisfied_by(0.5)
    True
    >>> Interval(Real, 0, None, closed="left").is_satisfied_by(float("inf"))
    False
    """

    def __init__(
        self,
        type: type,
        left: float | None,
        right: float | None,
        *,
        closed: str,
    ) -> None:
        if type not in (Integral, Real):
            raise TypeError("Interval's type must be numbers.Integral or numbers.Real.")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be left, right, both or neither: {closed}")
        self.type = type
        self.left = left
        self.right = right
        self.closed = closed

    def is_satisfied_by(self, value: Any) -> bool:
        if _is_bool(value) or not isinstance(value, self.type):
            return False
        if isinstance(value, Real) and math.isnan(value):
            return False
        lower = operator.ge if self.closed in ("left", "both") else operator.gt
        upper = operator.le if self.closed in ("right", "both") else operator.lt
        # An unbounded end is open, as ``__str__`` prints it and as in
        # scikit-learn: ``None`` accepts every finite number, never +-inf.
        left = -math.inf if self.left is None else self.left
        right = math.inf if self.right is None else self.right
        if self.left is None:
            lower = operator.gt
        if self.right is None:
            upper = operator.lt
        return lower(value, left) and upper(value, right)

    def __str__(self) -> str:
        kind = "an int" if self.type is Integral else "a float"
        left = "-inf" if self.left is None else f"{self.left:g}"
        right = "inf" if self.right is None else f"{self.right:g}"
        open_, close = (
            "[" if self.closed in ("left", "both") and self.left is not None else "(",
            "]" if self.closed in ("right", "both") and self.right is not None else ")",
        )
        return f"{kind} in the range {open_}{left}, {right}{close}"


class Options(_Constraint):
    """One value of ``type`` among ``options``."""

    def __init__(self, type: type, options: Iterable[Any]) -> None:
        self.type = type
        self.options = set(options)

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return isinstance(value, self.type) and value in self.options
        except TypeError:  # an unhashable value
            return False

    def __str__(self) -> str:
        shown = ", ".join(repr(option) for option in sorted(self.options, key=str))
        return f"a {self.type.__name__} among {{{shown}}}"


class StrOptions(Options):
    """One of the strings ``options``.

    Examples
    --------
    >>> from dpsklearn._param_validation import StrOptions
    >>> str(StrOptions({"auto", "abstain"}))
    "a str among {'abstain', 'auto'}"
    """

    def __init__(self, options: Iterable[str]) -> None:
        super().__init__(str, options)


class HasMethods(_Constraint):
    """An object with every one of ``methods`` (an estimator, an accountant)."""

    def __init__(self, methods: str | Iterable[str]) -> None:
        self.methods = [methods] if isinstance(methods, str) else list(methods)

    def is_satisfied_by(self, value: Any) -> bool:
        return all(callable(getattr(value, name, None)) for name in self.methods)

    def __str__(self) -> str:
        names = ", ".join(repr(name) for name in self.methods)
        return f"an object implementing {names}"


class _InstanceOf(_Constraint):
    def __init__(self, type: type) -> None:
        self.type = type

    def is_satisfied_by(self, value: Any) -> bool:
        if self.type in (Integral, Real) and _is_bool(value):
            return False
        return isinstance(value, self.type)

    def __str__(self) -> str:
        return f"an instance of {self.type.__name__!r}"


class _Predicate(_Constraint):
    def __init__(self, test: Callable[[Any], bool], description: str) -> None:
        self.test = test
        self.description = description

    def is_satisfied_by(self, value: Any) -> bool:
        return bool(self.test(value))

    def __str__(self) -> str:
        return self.description


def _is_array_like(value: Any) -> bool:
    return (
        hasattr(value, "__len__")
        or hasattr(value, "shape")
        or hasattr(value, "__array__")
    ) and not isinstance(value, str)


def _is_random_state(value: Any) -> bool:
    return (
        value is None
        or (
            isinstance(value, Integral)
            and not _is_bool(value)
            and 0 <= int(value) < 2**32
        )
        or isinstance(value, np.random.RandomState)
    )


def _is_nan(value: Any) -> bool:
    return isinstance(value, Real) and not _is_bool(value) and math.isnan(value)


_NAMED = {
    "array-like": _Predicate(_is_array_like, "an array-like"),
    "sparse matrix": _Predicate(sparse.issparse, "a sparse matrix"),
    "random_state": _Predicate(
        _is_random_state, "an int in the range [0, 2**32), a RandomState or None"
    ),
    "boolean": _Predicate(_is_bool, "a bool"),
    "verbose": _Predicate(
        lambda v: _is_bool(v) or (isinstance(v, Integral) and int(v) >= 0),
        "an int >= 0 or a bool",
    ),
    "nan": _Predicate(_is_nan, "nan"),
}


def _make_constraint(constraint: Any) -> _Constraint:
    if isinstance(constraint, _Constraint):
        return constraint
    if constraint is None:
        return _Predicate(lambda v: v is None, "None")
    if constraint is callable:
        return _Predicate(callable, "a callable")
    if isinstance(constraint, str):
        try:
            return _NAMED[constraint]
        except KeyError:
            raise ValueError(f"unknown constraint {constraint!r}") from None
    if isinstance(constraint, type):
        return _InstanceOf(constraint)
    raise TypeError(f"unknown constraint {constraint!r}")


def validate_parameter_constraints(
    parameter_constraints: dict[str, Any],
    params: dict[str, Any],
    caller_name: str,
) -> None:
    """Raise :class:`InvalidParameterError` for the first value no constraint takes.

    Parameters
    ----------
    parameter_constraints : dict
        Parameter name to a list of constraints, or ``"no_validation"``.
        Parameters without an entry are not checked.
    params : dict
        Parameter name to value.
    caller_name : str
        The estimator or function, for the message.
    """
    for name, value in params.items():
        constraints = parameter_constraints.get(name, "no_validation")
        if isinstance(constraints, str) and constraints == "no_validation":
            continue
        if "no_validation" in constraints:
            continue
        made = [_make_constraint(c) for c in constraints]
        if any(c.is_satisfied_by(value) for c in made):
            continue
        if len(made) == 1:
            accepted = str(made[0])
        else:
            accepted = ", ".join(str(c) for c in made[:-1]) + f" or {made[-1]}"
        raise InvalidParameterError(
            f"The {name!r} parameter of {caller_name} must be {accepted}. "
            f"Got {value!r} instead."
        )


def validate_params(
    parameter_constraints: dict[str, Any],
    *,
    prefer_skip_nested_validation: bool = True,
) -> Callable:
    """Decorate a function so its arguments are checked against the constraints.

    Parameters
    ----------
    parameter_constraints : dict
        Parameter name to a list of constraints (see the module docstring).
    prefer_skip_nested_validation : bool, default=True
        Accepted for scikit-learn's signature; nested calls are validated
        anyway (validation is cheap and the project never skips it).

    Returns
    -------
    decorator : callable

    Examples
    --------
    >>> from numbers import Real
    >>> from dpsklearn._param_validation import Interval, validate_params
    >>> @validate_params({"epsilon": [Interval(Real, 0, None, closed="neither")]})
    ... def cost(epsilon):
    ...     return 2 * epsilon
    >>> cost(0.5)
    1.0
    >>> cost(-1)
    Traceback (most recent call last):
    ...
    dpsklearn._param_validation.InvalidParameterError: The 'epsilon' parameter of \
cost must be a float in the range (0, inf). Got -1 instead.
    """

    def decorator(function: Callable) -> Callable:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            params = {
                name: value
                for name, value in bound.arguments.items()
                if signature.parameters[name].kind
                not in (
                    inspect.Parameter.VAR_POSITIONAL,
                    inspect.Parameter.VAR_KEYWORD,
                )
            }
            validate_parameter_constraints(
                parameter_constraints, params, caller_name=function.__qualname__
            )
            return function(*args, **kwargs)

        return wrapper

    return decorator


class ValidatesParameters:
    """Give an estimator ``_validate_params()`` over its ``_parameter_constraints``.

    The method scikit-learn's own estimators call at the start of ``fit``;
    scikit-learn's version is private, this one is the project's.
    """

    _parameter_constraints: dict = {}

    if TYPE_CHECKING:
        # Mixed into scikit-learn's BaseEstimator, which provides these.
        def get_params(self, deep: bool = True) -> dict[str, Any]: ...

        def set_params(self, **params: Any) -> Any: ...

        def __sklearn_tags__(self) -> Any: ...

        def __sklearn_clone__(self) -> Any: ...

        def __getstate__(self) -> dict[str, Any]: ...

    def _validate_params(self) -> None:
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )
