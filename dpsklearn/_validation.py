"""Parameter constraints and input checks shared by the whole package.

Public functions declare their parameters with scikit-learn's
:func:`~dpsklearn._param_validation.validate_params` and the constraints
below, so every bad value is refused with a message that names the
parameter and the allowed values, before anything is spent (see
``docs/privacy_contract.rst``, "Errors and warnings"). Estimators use the
same constraints in their ``_parameter_constraints``. The few checks that
are not about one parameter's value (``abstain_label`` against the classes,
``target_range`` from the data, numeric regression targets, empty input)
live here too, once.

Input data. :func:`validate_input` is the one rule for ``X`` (and ``y``) of
every estimator whose private computation is done by scikit-learn
estimators (teachers, fitted hypotheses, a student): ``X`` reaches them as
the user gave it -- a DataFrame of any dtypes, a sparse matrix, a list or
array of strings for a text pipeline -- and only what a meta-estimator must
know is checked, as :class:`~sklearn.ensemble.BaggingClassifier` and
:class:`~sklearn.ensemble.StackingClassifier` do: the number of rows, the
consistency of ``n_features_in_`` and ``feature_names_in_``, and values the
consumers cannot take (``docs/privacy_contract.rst``, "Errors and
warnings"). :func:`take_rows` indexes rows of any of these forms.
"""

from __future__ import annotations

import contextlib
import math
import re
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
from scipy import sparse
from sklearn.utils import get_tags
from sklearn.utils.validation import check_array, validate_data

from ._param_validation import Interval, validate_params
from ._warn import warn_user
from .exceptions import PrivacyLeakWarning

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COUNT",
    "DELTA",
    "DELTA_POSITIVE",
    "FINITE_POSITIVE",
    "NON_NEGATIVE",
    "OPEN_UNIT",
    "QueryRule",
    "abstain_label_for",
    "check_regression_targets",
    "check_target_range",
    "accepts_nan",
    "is_frame",
    "n_rows",
    "naming_empty_input",
    "output_dtype",
    "take_rows",
    "validate_input",
    "validate_params",
    "warn_if_delta_large",
]

#: Sparse formats the estimators keep (others are converted to CSR): both
#: index rows, which sharding and serving need.
ACCEPT_SPARSE = ("csr", "csc")

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


def warn_if_delta_large(delta, n_samples):
    """Warn when ``delta >= 1/n``: a mechanism could then publish a whole record."""
    if delta > 0 and delta >= 1.0 / n_samples:
        warn_user(
            f"delta={delta:g} is not below 1/n_samples={1.0 / n_samples:g}: "
            "a mechanism could then publish a whole record with probability "
            "delta. Choose delta well below 1/n.",
            UserWarning,
        )


def abstain_label_for(classes):
    """The label a classifier returns for the queries it does not answer.

    Chosen from the public label set alone, outside it and of its kind:
    ``-1`` for numbers (or one below the smallest class when ``-1`` is a
    class), ``"abstain"`` for strings (with ``"_"`` prepended until it is
    not a class). Abstentions are also marked by ``predict(X,
    return_abstained=True)``, which is the way to read them.

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)

    Returns
    -------
    label : int, float or str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn._validation import abstain_label_for
    >>> abstain_label_for(np.array([0, 1])), abstain_label_for(np.array([-1, 2]))
    (-1, -2)
    >>> abstain_label_for(np.array(["<=50K", ">50K"]))
    'abstain'
    """
    if classes.dtype.kind in "biuf":
        smallest = classes.min()
        label = -1 if (-1 not in classes) else smallest - 1
        return float(label) if classes.dtype.kind == "f" else int(label)
    label = "abstain"
    while np.any(classes == label):
        label = "_" + label
    return label


def output_dtype(classes, abstain_label):
    """The dtype that holds both the class labels and ``abstain_label``."""
    if abstain_label is None:
        return classes.dtype
    if classes.dtype.kind == "b":
        return np.dtype(np.int64)
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
    if y is None or hasattr(y, "__dask_graph__"):
        # A Dask collection is left to the estimator's rule (checked where
        # its partitions live, or refused): np.asarray would compute it here.
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


def check_target_range(target_range, y, estimator_name):
    """``(lo, hi)`` from ``target_range``, or from ``y`` with a PrivacyLeakWarning.

    A bound the user leaves unset may be read from the private data only
    with a warning that says so (``docs/design.rst``, "Neighbouring datasets
    and what epsilon covers": public inputs).
    """
    if target_range is None:
        warn_user(
            f"{estimator_name}: target_range is None, so the range of the "
            "answers is taken from the private training targets (min(y), "
            "max(y)); that leaks the extreme targets. Pass the public "
            "target_range=(lo, hi).",
            PrivacyLeakWarning,
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


# -- input data ---------------------------------------------------------------


def is_frame(X: Any) -> TypeGuard[pd.DataFrame | pd.Series]:
    """Whether ``X`` is a pandas DataFrame or Series (indexed by ``iloc``)."""
    return hasattr(X, "iloc") and hasattr(X, "shape")


def take_rows(X, rows):
    """The rows ``rows`` (integer array or slice) of a validated ``X``.

    DataFrames and Series by position (``iloc``); arrays and sparse matrices
    (CSR, CSC) by ``X[rows]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn._validation import take_rows
    >>> take_rows(np.array(["a", "b", "c"], dtype=object), np.array([2, 0])).tolist()
    ['c', 'a']
    """
    # One attribute look-up, no call: asked for every chunk of every query.
    iloc = getattr(X, "iloc", None)
    return X[rows] if iloc is None else iloc[rows]


def n_rows(X):
    """Number of rows of a validated ``X``."""
    return int(X.shape[0])


def accepts_nan(estimator):
    """Whether ``estimator``'s tags say it takes NaN in ``X`` (``allow_nan``).

    scikit-learn's ``allow_nan`` tag covers NaN only: infinity is never
    taken. An object without tags (a plain callable) does not take NaN.
    """
    try:
        return bool(get_tags(estimator).input_tags.allow_nan)
    except Exception:  # not an estimator: it says nothing, so assume not
        return False


def _is_text(values):
    """A 1-D array of strings or objects: documents for a text pipeline."""
    return values.ndim == 1 and values.dtype.kind in "OUS"


def _refuse_non_finite(X, allow_nan, consumer):
    """Refuse infinity always, and NaN (or None) when the consumers refuse it."""
    if isinstance(X, np.ndarray):  # the common form first
        kind = X.dtype.kind
        if kind in "fc":
            nan, inf = bool(np.isnan(X).any()), bool(np.isinf(X).any())
        elif kind == "O":
            nan, inf = bool(np.any(X != X)), False  # NaN is the value != itself
        else:
            nan = inf = False
    elif sparse.issparse(X):
        values = X.data
        nan = inf = False
        if values.dtype.kind in "fc":
            nan, inf = bool(np.isnan(values).any()), bool(np.isinf(values).any())
    else:  # a DataFrame or Series
        frame = X.to_frame() if X.ndim == 1 else X
        nan = bool(np.asarray(frame.isna()).any())
        numeric = frame.select_dtypes(include="number")
        inf = bool(
            numeric.shape[1]
            and np.isinf(numeric.to_numpy(dtype=np.float64, na_value=np.nan)).any()
        )
    if inf:
        raise ValueError(
            "X contains infinity; it is refused before anything is spent (no "
            "scikit-learn estimator takes it: the allow_nan tag covers NaN only)."
        )
    if nan and not allow_nan:
        raise ValueError(
            f"X contains NaN or missing values, and {consumer} does not accept "
            "them (its tags say allow_nan=False); refused before anything is "
            "spent. Impute inside the teacher (a Pipeline whose tags allow NaN), "
            "or use an estimator that handles NaN, such as "
            "HistGradientBoostingClassifier."
        )


def _validated_x(estimator, X, *, accept_sparse):
    """``X`` in a form the consumers take and rows can be indexed in."""
    if is_frame(X):
        if X.shape[0] == 0 or (X.ndim == 2 and X.shape[1] == 0):
            raise ValueError(
                f"X must not be empty: got a {type(X).__name__} of shape "
                f"{X.shape}; a minimum of 1 sample and 1 feature is required."
            )
        return X
    if sparse.issparse(X):
        with naming_empty_input():
            return check_array(
                X,
                accept_sparse=accept_sparse,
                dtype=None,
                ensure_all_finite=False,
                estimator=estimator,
                input_name="X",
            )
    if isinstance(X, (str, bytes)) or not (
        hasattr(X, "__len__") or hasattr(X, "__array__")
    ):
        raise TypeError(
            "X must be array-like (an array, a list, a DataFrame, a list of "
            f"strings for a text pipeline) or a sparse matrix, got {type(X).__name__}."
        )
    values = np.asarray(X) if hasattr(X, "dtype") else None
    if values is None:  # a sequence: strings stay Python objects (no fixed width)
        try:
            values = np.asarray(X)
        except ValueError:
            values = np.asarray(X, dtype=object)
        if values.dtype.kind in "US":
            values = np.asarray(X, dtype=object)
    with naming_empty_input():
        return check_array(
            values,
            accept_sparse=accept_sparse,
            dtype=None,
            ensure_all_finite=False,
            ensure_2d=not _is_text(values),
            estimator=estimator,
            input_name="X",
        )


def validate_input(
    estimator,
    X,
    y="no_validation",
    *,
    reset=True,
    allow_nan=False,
    consumer="the teacher",
    accept_sparse=ACCEPT_SPARSE,
    y_numeric=False,
    multi_output=False,
):
    """Validate ``X`` (and ``y``) for consumers that are scikit-learn estimators.

    ``X`` is returned as given when it is a DataFrame or Series; a list
    becomes an array (strings as Python objects), a sparse matrix CSR or CSC
    (others are converted), so that rows can be indexed. Nothing else is
    converted: strings, categoricals and mixed dtypes reach the consumers.
    Checked, before anything is spent: at least one row (and one column),
    ``n_features_in_`` and ``feature_names_in_`` (set when ``reset``, else
    compared, with scikit-learn's messages), no complex values, no infinity,
    and no NaN or missing value unless ``allow_nan`` (the consumers' tags say
    they take it: :func:`accepts_nan`). ``y`` is validated as scikit-learn
    validates it: one column unless ``multi_output``, as many rows as ``X``,
    and never NaN or infinity.

    Parameters
    ----------
    estimator : estimator
        The meta-estimator (named in messages; its ``n_features_in_`` and
        ``feature_names_in_`` are set or checked).
    X : array-like, DataFrame, list of str or sparse matrix
    y : array-like, optional
    reset : bool, default=True
        ``True`` in ``fit``, ``False`` for queries.
    allow_nan : bool, default=False
        Whether every consumer of ``X`` takes NaN.
    consumer : str, default="the teacher"
        Who reads ``X``, for the NaN message.
    accept_sparse : tuple of str, default=("csr", "csc")
    y_numeric, multi_output : bool, default=False
        As in :func:`~sklearn.utils.validation.validate_data`.

    Returns
    -------
    X : validated ``X``, or ``(X, y)`` when ``y`` is given.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn._validation import validate_input
    >>> frame = pd.DataFrame({"city": ["Oslo", "Lima"], "age": [31, 47]})
    >>> model = LogisticRegression()
    >>> X, y = validate_input(model, frame, [0, 1])
    >>> X is frame, model.feature_names_in_.tolist()
    (True, ['city', 'age'])
    """
    has_y = not (isinstance(y, str) and y == "no_validation")
    if has_y:
        if y is None:
            raise ValueError(
                f"{type(estimator).__name__} requires y to be passed, but the "
                "target y is None."
            )
        # y first: validate_data resets the feature names from what it is given.
        try:
            y = validate_data(
                estimator,
                y=y,
                reset=reset,
                y_numeric=y_numeric,
                multi_output=multi_output,
            )
        except ValueError as exc:  # "Input contains NaN" (object y) names no input
            if re.search(r"\by\b", str(exc)):
                raise
            raise ValueError(f"y is not valid: {exc}") from exc
    # The form first (scikit-learn's messages for 1-D or empty input), then
    # the number of columns and their names against fit.
    X = _validated_x(estimator, X, accept_sparse=accept_sparse)
    validate_data(estimator, X, reset=reset, skip_check_array=True)
    if has_y and n_rows(X) != len(y):
        raise ValueError(
            f"X and y must have as many rows: X has {n_rows(X)}, y has {len(y)}."
        )
    _refuse_non_finite(X, allow_nan, consumer)
    return (X, y) if has_y else X


class QueryRule:
    """The input rule of a fitted model's queries, decided once at ``fit``.

    ``fit`` validates the training rows by :func:`validate_input` and then
    fixes what every later query must match: the number of columns, their
    names, whether the consumers take NaN (their tags, read once) and who
    they are, for messages. :meth:`validate` then checks a query as
    ``validate_input(estimator, X, reset=False)`` does, with the same
    answers and messages, but reads the two common forms directly: a
    numeric 2-D array of as many columns as ``fit`` saw (fitted without
    column names), and a DataFrame with the very columns of ``fit``. Any
    other form (lists, text, sparse matrices, another width, other names,
    a missing ``fit`` name) goes through :func:`validate_input` itself, so
    its conversions, warnings and errors are scikit-learn's. Either way a
    bad ``X`` is refused with a ValueError before anything is spent.

    Parameters
    ----------
    estimator : estimator
        The fitted meta-estimator (its ``n_features_in_`` and
        ``feature_names_in_`` are read).
    allow_nan : bool
        Whether every consumer of ``X`` takes NaN.
    consumer : str
        Who reads ``X``, for the NaN message.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn._validation import QueryRule, validate_input
    >>> model = LogisticRegression()
    >>> _ = validate_input(model, np.zeros((3, 2)))  # fit sets n_features_in_
    >>> rule = QueryRule(model, allow_nan=False, consumer="the teacher")
    >>> rule.validate(model, np.ones((2, 2))).shape
    (2, 2)
    >>> rule.validate(model, np.ones((2, 3)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X has 3 features, but LogisticRegression is expecting 2 ...
    """

    def __init__(self, estimator: Any, *, allow_nan: bool, consumer: str) -> None:
        self.n_features: int | None = getattr(estimator, "n_features_in_", None)
        names = getattr(estimator, "feature_names_in_", None)
        self.feature_names: list[str] | None = (
            None if names is None else [str(name) for name in names]
        )
        self.allow_nan = bool(allow_nan)
        self.consumer = consumer

    def validate(self, estimator: Any, X: Any) -> Any:
        """``X`` validated for the fitted ``estimator``; refused before any spend.

        Parameters
        ----------
        estimator : estimator
            The fitted meta-estimator this rule was made for (named in
            messages).
        X : array-like, DataFrame, list of str or sparse matrix

        Returns
        -------
        X : validated ``X``, as :func:`validate_input` returns it.
        """
        names = self.feature_names
        if type(X) is np.ndarray:  # not a subclass (np.matrix)
            plain = (
                names is None
                and X.ndim == 2
                and X.dtype.kind in "biuf"
                and X.shape[0] > 0
                and X.shape[1] == self.n_features
            )
        else:
            plain = (
                names is not None
                and is_frame(X)
                and X.ndim == 2
                and X.shape[0] > 0
                and X.columns.tolist() == names
            )
        if not plain:
            return validate_input(
                estimator,
                X,
                reset=False,
                allow_nan=self.allow_nan,
                consumer=self.consumer,
            )
        _refuse_non_finite(X, self.allow_nan, self.consumer)
        return X
