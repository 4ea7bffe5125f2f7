"""Mechanism parameter objects: what a user chooses, before anything is calibrated.

An estimator's ``mechanism`` parameter takes one of these objects (or its
string shorthand for the defaults): it carries the options that belong to
that mechanism and to no other, for example
``SparseVector(max_unstable=100, fallback="abstain")`` or
``ConfidentGNMax(max_answers=2000)``. They are scikit-learn parameter
objects (``get_params``/``set_params``, ``clone``), so ``GridSearchCV`` can
search ``mechanism__max_unstable`` or ``mechanism=[SparseVector(),
ConfidentGNMax()]``.

At ``fit`` the estimator turns its parameter object, the total ``(epsilon,
delta)`` and public sizes (teachers, classes, queries) into a calibrated
:class:`~dpsklearn.mechanisms.Mechanism` with :meth:`MechanismOptions.calibrate`;
the object itself is never changed. The composition that splits the budget
is always the tightest admissible one for the mechanism and the accountant
(``docs/design.rst``, "Composition"); the route taken is the fitted
attribute ``calibration_`` of the estimator. The noise family, where there
is a choice, is the option ``noise``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sklearn.base import BaseEstimator

from .._param_validation import StrOptions, ValidatesParameters
from ._base import Mechanism

__all__ = ["MechanismOptions", "resolve_mechanism"]

_NOISE = StrOptions({"auto", "laplace", "gaussian"})
#: What a classifier returns for rows its mechanism does not answer.
_UNANSWERED = StrOptions({"student", "abstain"})


class MechanismOptions(ValidatesParameters, BaseEstimator):
    """Base of the mechanism parameter objects.

    Subclasses store their options in ``__init__`` (scikit-learn's rule:
    parameters only), declare ``_parameter_constraints`` and a
    ``shorthand`` (the string an estimator's ``mechanism`` also accepts),
    and implement ``calibrate(epsilon, delta, **public)``, which returns the
    calibrated :class:`~dpsklearn.mechanisms.Mechanism`.
    """

    #: The string that stands for this mechanism with its defaults.
    shorthand: ClassVar[str] = ""
    #: ``calibrate(epsilon, delta, **public sizes)``: the calibrated
    #: :class:`Mechanism` (each subclass takes the public sizes it needs).
    calibrate: Callable[..., Mechanism]

    @property
    def publishes_model(self) -> bool:
        """Whether the estimator's fitted model is a release (publishable)."""
        return False

    def validated(self) -> MechanismOptions:
        """``self`` after checking every option (``ValueError`` naming it).

        Returns
        -------
        self : MechanismOptions
        """
        self._validate_params()
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags


def resolve_mechanism(
    mechanism: str | MechanismOptions,
    choices: dict[str, type[MechanismOptions]],
    *,
    owner: str,
) -> MechanismOptions:
    """The parameter object an estimator's ``mechanism`` stands for, validated.

    Parameters
    ----------
    mechanism : str or MechanismOptions
        A shorthand among ``choices`` (the defaults of that mechanism) or an
        instance of one of their classes.
    choices : dict of str to MechanismOptions subclass
        What the estimator accepts.
    owner : str
        The estimator's name, for the message.

    Returns
    -------
    options : MechanismOptions
        A new object for a shorthand, ``mechanism`` itself otherwise.

    Raises
    ------
    ValueError, TypeError
        For a shorthand or object the estimator does not take, or an option
        out of range.

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax, Exponential, resolve_mechanism
    >>> choices = {"exponential": Exponential, "gnmax": GNMax}
    >>> resolve_mechanism("gnmax", choices, owner="PrivatePredictionClassifier")
    GNMax()
    """
    if isinstance(mechanism, str):
        try:
            return choices[mechanism]().validated()
        except KeyError:
            names = ", ".join(repr(name) for name in sorted(choices))
            raise ValueError(
                f"mechanism={mechanism!r} is not one of {owner}'s mechanisms: "
                f"use {names}, or an instance of their classes."
            ) from None
    if isinstance(mechanism, tuple(choices.values())):
        return mechanism.validated()
    names = ", ".join(cls.__name__ for cls in choices.values())
    raise TypeError(
        f"mechanism={mechanism!r} is not a mechanism {owner} can run: use one of "
        f"{names} (or their shorthands "
        f"{', '.join(repr(name) for name in sorted(choices))})."
    )
