"""How the frozen public records of accounting (the typed events) are declared.

Their fields are checked once, at construction, with scikit-learn's
parameter constraints (so a bad field is refused with a message that names
it, as a bad estimator parameter is) and stored as floats; an override
without a docstring shows its base method's in ``help()``.
"""

from __future__ import annotations

from .._param_validation import validate_parameter_constraints

__all__ = ["inherit_method_docs", "validated_fields"]


def validated_fields(record, constraints):
    """Check a record's fields with scikit-learn's constraints; store them as floats.

    The message names the field and the allowed values (a TypeError or
    ValueError, scikit-learn's ``InvalidParameterError``).
    """
    values = {name: getattr(record, name) for name in constraints}
    validate_parameter_constraints(
        constraints, values, caller_name=type(record).__name__
    )
    for name, value in values.items():
        if value is not None:
            object.__setattr__(record, name, float(value))


def inherit_method_docs(*classes: type) -> None:
    """Give an override without a docstring its base method's (as help() shows)."""
    for cls in classes:
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            target = member.fget if isinstance(member, property) else member
            if not callable(target) or getattr(target, "__doc__", None):
                continue
            for base in cls.__mro__[1:]:
                inherited = getattr(base, name, None)
                if inherited is not None and inherited.__doc__:
                    target.__doc__ = inherited.__doc__
                    break
