"""Parameter constraints and input checks shared by the whole package.

Public functions declare their parameters with scikit-learn's
:func:`~sklearn.utils._param_validation.validate_params` and the constraints
below, so every bad value is refused with a message that names the
parameter and the allowed values, before anything is spent (see
``docs/privacy_contract.rst``, "Errors and warnings"). Estimators use the
same constraints in their ``_parameter_constraints``. The few checks that
are not about one parameter's value (``abstain_label`` against the classes,
``target_range`` from the data, numeric regression targets, empty input)
live here too, once.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from .exceptions import PrivacyLeakWarning

__all__ = [
    "COUNT",
    "DELTA",
    "DELTA_POSITIVE",
    "FINITE_POSITIVE",
    "NON_NEGATIVE",
    "OPEN_UNIT",
    "check_abstain_label",
    "check_regression_targets",
    "check_target_range",
    "naming_empty_input",
    "output_dtype",
    "validate_params",
    "warn_if_delta_large",
]

#: A finite real number > 0 (epsilon, noise scales, sensitivities).
FINITE_POSITIVE = Interval(Real, 0, math.inf, closed="neither")
#: A finite real number >= 0.
NON_NEGATIVE = Interval(Real, 0, math.inf, closed="left")
#: A delta that may be 0: [0, 1).
DELTA = Interval(Real, 0, 1, closed="left")
#: A delta that must be positive: (0, 1).
DELTA_POSITIVE = Interval(Real, 0, 1, closed="neither")
#: A probability strictly between 0 and 1 (a share, an error rate).
OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
#: A count of releases, queries, teachers: an integer >= 1.
COUNT = Interval(Integral, 1, None, closed="left")


@contextlib.contextmanager
def naming_empty_input():
    """Say that an empty array is ``X`` (scikit-learn's message names no input)."""
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        if "0 sample(s)" in message or "0 feature(s)" in message:
            raise ValueError(f"X must not be empty: {message}") from exc
        raise


def warn_if_delta_large(delta, n_samples, stacklevel=4):
    """Warn when ``delta >= 1/n``: a mechanism could then publish a whole record."""
    if delta > 0 and delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={delta:g} is not below 1/n_samples={1.0 / n_samples:g}: "
            "a mechanism could then publish a whole record with probability "
            "delta. Choose delta well below 1/n.",
            UserWarning,
            stacklevel=stacklevel,
        )


def check_abstain_label(abstain_label, classes, needed_by):
    """``abstain_label`` must be given, outside ``classes`` and of the same kind."""
    if abstain_label is None:
        raise ValueError(
            f"abstain_label must be set when {needed_by}: it is the answer "
            "returned for queries the model abstains on."
        )
    numeric_classes = classes.dtype.kind in "biuf"
    is_number = isinstance(abstain_label, (Real, np.number)) and not isinstance(
        abstain_label, (bool, np.bool_)
    )
    if numeric_classes != is_number:
        raise TypeError(
            f"abstain_label={abstain_label!r} must have the same type as the "
            f"class labels ({'numbers' if numeric_classes else 'strings'})."
        )
    if np.any(classes == abstain_label):
        raise ValueError(
            f"abstain_label={abstain_label!r} is one of the classes; it must be "
            "a value that no real answer can take."
        )


def output_dtype(classes, abstain_label):
    """The dtype that holds both the class labels and ``abstain_label``."""
    if abstain_label is None:
        return classes.dtype
    return np.result_type(classes, np.asarray([abstain_label]))


def check_regression_targets(y):
    """Regression targets as numbers, or a ValueError naming ``y``.

    scikit-learn's ``y_numeric`` converts object arrays only: an array of
    strings passes ``validate_data`` unchanged and fails later (in a
    teacher's fit, the loss, a clip) with a message that names no
    parameter. Strings and objects are converted to float here, before
    ``validate_data``; what does not convert is refused. The message never
    shows the values (they are private labels). ``None`` and arrays that
    are not rectangular are left to ``validate_data`` and its messages.
    """
    if y is None:
        return y
    try:
        values = np.asarray(y)
    except (TypeError, ValueError):
        return y
    if values.dtype.kind not in "USO":
        return y
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "y must hold numeric regression targets, got an array of dtype "
            f"{values.dtype} whose values are not numbers."
        ) from None


def check_target_range(target_range, y, estimator_name, stacklevel=3):
    """``(lo, hi)`` from ``target_range``, or from ``y`` with a PrivacyLeakWarning.

    A bound the user leaves unset may be read from the private data only
    with a warning that says so (``docs/design.rst``, "Neighbouring datasets
    and what epsilon covers": public inputs).
    """
    if target_range is None:
        warnings.warn(
            f"{estimator_name}: target_range is None, so the range of the "
            "answers is taken from the private training targets (min(y), "
            "max(y)); that leaks the extreme targets. Pass the public "
            "target_range=(lo, hi).",
            PrivacyLeakWarning,
            stacklevel=stacklevel,
        )
        lo, hi = float(np.min(y)), float(np.max(y))
        if lo == hi:  # a constant target: give the release a non-empty range
            lo, hi = lo - 0.5, hi + 0.5
        return lo, hi
    try:
        lo, hi = (float(v) for v in np.asarray(target_range, dtype=object).ravel())
    except (TypeError, ValueError):  # not two numbers
        lo = hi = math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(
            "target_range must be a pair (lo, hi) of finite numbers with "
            f"lo < hi, got {target_range!r}."
        )
    return lo, hi
