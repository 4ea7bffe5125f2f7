"""The bad-input catalogue.

Every bad input, to every estimator, is refused with a ``ValueError`` or
``TypeError`` (``NotFittedError`` for a query before ``fit``) whose message
names the offending parameter, and nothing is spent: a shared accountant's
composed spend and its list of events are unchanged, and for a query refused
at ``predict`` time the model's serving counters (``budget_status()``, or
the oracle's remaining queries) are unchanged too.

One parametrised test runs the whole catalogue (``CASES``); each case says
which estimator, at which step (``fit`` or ``predict``), with which input,
and the exception and message pattern it expects. The shared accountant has
already been drawn on (an earlier release), so "unchanged" is not "empty".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import STUMP
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.tree import DecisionTreeRegressor

from dpsklearn import (
    ClippedMean,
    ConfidentGNMax,
    DecisionStumps,
    Exponential,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    GNMax,
    KnowledgeTransferClassifier,
    OutputPerturbation,
    PrivacyAccountant,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
    Thresholds,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning"),
    # delta >= 1/n on the small data sets: beside the point here
    pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning"),
]


# -- data ---------------------------------------------------------------------

_RNG = np.random.default_rng(0)
N = 120
X = _RNG.normal(size=(N, 2))
Y_CLASS = (X[:, 0] > 0).astype(int)
Y_REG = np.clip(X[:, 0] + 0.1 * _RNG.normal(size=N), -3, 3)
Y_UNIT = np.clip(0.5 + 0.2 * X[:, 0], 0, 1)  # targets in [0, 1]
X_QUERY = _RNG.normal(size=(6, 2))


def _with(array, row, col, value):
    out = np.array(array, dtype=np.float64, copy=True)
    if col is None:
        out[row] = value
    else:
        out[row, col] = value
    return out


X_NAN = _with(X, 5, 1, np.nan)
X_INF = _with(X, 5, 0, np.inf)
Q_NAN = _with(X_QUERY, 2, 0, np.nan)
Q_INF = _with(X_QUERY, 1, 1, -np.inf)
Q_WIDE = np.hstack([X_QUERY, X_QUERY[:, :1]])  # 3 features, fitted on 2
Q_NARROW = X_QUERY[:, :1]
Q_EMPTY = X_QUERY[:0]
Y_STRINGS = np.where(Y_CLASS == 1, "high", "low")
REG_STUMP = DecisionTreeRegressor(max_depth=1)


class _NoFit:
    """An object with ``predict`` but no ``fit``: not an estimator."""

    def predict(self, X):
        return np.zeros(len(X))


# -- estimators (valid configurations; the cases spoil one thing each) -----------


def _subsample(**params):
    defaults = dict(
        estimator=STUMP,
        n_estimators=4,
        epsilon=2.0,
        delta=1e-3,
        mechanism=SparseVector(max_unstable=5),
        classes=[0, 1],
        random_state=0,
    )
    return SubsampleAggregateClassifier(**{**defaults, **params})


def _pp_classifier(**params):
    defaults = dict(
        estimator=STUMP,
        n_estimators=4,
        epsilon=2.0,
        delta=1e-3,
        max_queries=50,
        classes=[0, 1],
        random_state=0,
    )
    return PrivatePredictionClassifier(**{**defaults, **params})


def _pp_regressor(**params):
    defaults = dict(
        estimator=REG_STUMP,
        n_estimators=4,
        epsilon=2.0,
        delta=1e-3,
        max_queries=50,
        target_range=(-3.0, 3.0),
        random_state=0,
    )
    return PrivatePredictionRegressor(**{**defaults, **params})


def _soft_label(**params):
    defaults = dict(
        estimator=REG_STUMP,
        n_estimators=4,
        epsilon=2.0,
        delta=1e-3,
        mechanism=SoftLabelHistogram(gamma=0.25, max_unstable=5),
        target_range=(-3.0, 3.0),
        random_state=0,
    )
    return SoftLabelPrivateRegressor(**{**defaults, **params})


def _kernel_ridge(**params):
    defaults = dict(kernel="rbf", alpha=0.1, y_bound=3.0, epsilon=2.0, max_queries=50)
    return PrivateKernelRidge(**{**defaults, **params})


def _erm(**params):
    defaults = dict(
        hypotheses=DecisionStumps(feature_bounds=(-4, 4), n_thresholds=8),
        epsilon=1.0,
        classes=[0, 1],
    )
    return ExponentialMechanismERM(**{**defaults, **params})


def _erm_regressor(**params):
    defaults = dict(
        hypotheses=DecisionStumps(feature_bounds=(-4, 4), n_thresholds=8),
        target_range=(-3.0, 3.0),
        epsilon=1.0,
    )
    return ExponentialMechanismERMRegressor(**{**defaults, **params})


def _statistical_queries(**params):
    defaults = dict(n_queries=5, epsilon=1.0, random_state=0)
    return PrivateStatisticalQueries(**{**defaults, **params})


def _knowledge_transfer(accountant, teacher_params=None, **params):
    teacher = _pp_classifier(accountant=accountant, **(teacher_params or {}))
    return KnowledgeTransferClassifier(**{"teacher": teacher, **params})


# -- the catalogue ----------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One bad input.

    ``make(accountant)`` builds the estimator (drawing on the shared
    ``accountant``); ``stage`` is ``"fit"`` (the bad input is given to
    ``fit``) or ``"predict"`` (the model is fitted on good data and served
    once first, then the bad query is made; ``"unfitted"``: no fit at all).
    """

    make: object
    stage: str
    error: type
    match: str
    X: object = None
    y: object = None
    fit_kwargs: dict = field(default_factory=dict)
    method: str = "predict"
    good: object = field(default_factory=lambda: X_QUERY[:2])


def _fit_case(make, X_=X, y=Y_CLASS, error=ValueError, match="", **fit_kwargs):
    return Case(make, "fit", error, match, X_, y, fit_kwargs)


def _predict_case(
    make, X_, error=ValueError, match=r"\bX\b", y=Y_CLASS, method="predict", good=None
):
    good = X_QUERY[:2] if good is None else good
    return Case(make, "predict", error, match, X_, y, method=method, good=good)


def _positive_first_feature(X_chunk, y_chunk):
    return X_chunk[:, 0] > 0


CASES = {
    # --- SubsampleAggregateClassifier ---------------------------------------
    # NaN is refused when the teacher refuses it (LogisticRegression's tags
    # say allow_nan=False); a tree teacher takes it (tests/test_inputs.py).
    "subsample: NaN in X": _fit_case(
        lambda acc: _subsample(accountant=acc, estimator=LogisticRegression()),
        X_NAN,
        match=r"\bX\b.*NaN",
    ),
    "subsample: inf in X": _fit_case(
        lambda acc: _subsample(accountant=acc), X_INF, match=r"\bX\b.*infinity"
    ),
    "subsample: inf in y": _fit_case(
        lambda acc: _subsample(accountant=acc),
        y=_with(Y_CLASS, 3, None, np.inf),
        match=r"\by\b",
    ),
    "subsample: empty X": _fit_case(
        lambda acc: _subsample(accountant=acc), X[:0], Y_CLASS[:0], match=r"\bX\b"
    ),
    # One row (of one class, which the public classes allow): too few rows
    # for four teachers, a refusal from n alone.
    "subsample: one row, k = 4": _fit_case(
        lambda acc: _subsample(accountant=acc),
        X[:1],
        Y_CLASS[:1],
        match=r"n_estimators.*n_samples=1",
    ),
    "subsample: two rows, k = 4": _fit_case(
        lambda acc: _subsample(accountant=acc),
        X[:2],
        np.array([0, 1]),
        match=r"n_estimators.*n_samples=2",
    ),
    "subsample: epsilon 0": _fit_case(
        lambda acc: _subsample(accountant=acc, epsilon=0.0), match="epsilon"
    ),
    "subsample: epsilon -1": _fit_case(
        lambda acc: _subsample(accountant=acc, epsilon=-1.0), match="epsilon"
    ),
    "subsample: epsilon inf": _fit_case(
        lambda acc: _subsample(accountant=acc, epsilon=math.inf), match="epsilon"
    ),
    "subsample: epsilon nan": _fit_case(
        lambda acc: _subsample(accountant=acc, epsilon=math.nan), match="epsilon"
    ),
    "subsample: delta 1": _fit_case(
        lambda acc: _subsample(accountant=acc, delta=1.0), match="delta"
    ),
    "subsample: delta 0": _fit_case(
        lambda acc: _subsample(accountant=acc, delta=0.0), match="delta"
    ),
    "subsample: T = max_unstable 0": _fit_case(
        lambda acc: _subsample(accountant=acc, mechanism=SparseVector(max_unstable=0)),
        match="max_unstable",
    ),
    "subsample: k = 0": _fit_case(
        lambda acc: _subsample(accountant=acc, n_estimators=0), match="n_estimators"
    ),
    "subsample: k above n": _fit_case(
        lambda acc: _subsample(accountant=acc, n_estimators=N + 1),
        match="n_estimators",
    ),
    "subsample: unknown mechanism": _fit_case(
        lambda acc: _subsample(accountant=acc, mechanism="laplace"), match="mechanism"
    ),
    "subsample: Gaussian composition as the sparse vector's noise": _fit_case(
        lambda acc: _subsample(accountant=acc, mechanism=SparseVector(noise="rdp")),
        match="noise",
    ),
    "subsample: noisy_max_share 2": _fit_case(
        lambda acc: _subsample(
            accountant=acc, mechanism=SparseVector(noisy_max_share=2)
        ),
        match="noisy_max_share",
    ),
    "subsample: confident_gnmax max_answers above max_queries": _fit_case(
        lambda acc: _subsample(
            accountant=acc, mechanism=ConfidentGNMax(max_answers=60), max_queries=50
        ),
        match="max_answers",
    ),
    "subsample: another estimator's mechanism": _fit_case(
        lambda acc: _subsample(accountant=acc, mechanism=GNMax()),
        error=TypeError,
        match="mechanism",
    ),
    "subsample: labels outside classes": _fit_case(
        lambda acc: _subsample(accountant=acc, classes=[0, 2]), match="classes"
    ),
    "subsample: base estimator without fit": _fit_case(
        lambda acc: _subsample(accountant=acc, estimator=_NoFit()), match="estimator"
    ),
    "subsample: a regressor as teacher": _fit_case(
        lambda acc: _subsample(accountant=acc, estimator=REG_STUMP),
        error=TypeError,
        match="regressor",
    ),
    "subsample: noise_random_state -1": _fit_case(
        lambda acc: _subsample(accountant=acc, noise_random_state=-1),
        match="noise_random_state",
    ),
    "subsample: predict NaN": _predict_case(
        lambda acc: _subsample(accountant=acc, estimator=LogisticRegression()),
        Q_NAN,
        match=r"\bX\b.*NaN",
    ),
    "subsample: predict too wide": _predict_case(
        lambda acc: _subsample(accountant=acc), Q_WIDE, match=r"\bX\b.*3 features"
    ),
    "subsample: predict empty": _predict_case(
        lambda acc: _subsample(accountant=acc), Q_EMPTY
    ),
    "subsample: predict before fit": Case(
        lambda acc: _subsample(accountant=acc),
        "unfitted",
        NotFittedError,
        "fit",
        X_QUERY,
    ),
    # --- PrivatePredictionClassifier ----------------------------------------
    "pp classifier: X a string": _fit_case(
        lambda acc: _pp_classifier(accountant=acc),
        "not rows",
        error=TypeError,
        match=r"\bX\b must be array-like",
    ),
    "pp classifier: target_error 1": _fit_case(
        lambda acc: _pp_classifier(
            accountant=acc, mechanism=Exponential(target_error=1.0)
        ),
        match="target_error",
    ),
    "pp classifier: labels outside classes": _fit_case(
        lambda acc: _pp_classifier(accountant=acc, classes=["low", "mid"]),
        y=Y_STRINGS,
        match="classes",
    ),
    "pp classifier: another estimator's mechanism": _fit_case(
        lambda acc: _pp_classifier(accountant=acc, mechanism=SparseVector()),
        error=TypeError,
        match="mechanism",
    ),
    "pp classifier: gnmax with delta 0": _fit_case(
        lambda acc: _pp_classifier(accountant=acc, mechanism="gnmax", delta=0.0),
        match="delta",
    ),
    "pp classifier: unknown mechanism": _fit_case(
        lambda acc: _pp_classifier(accountant=acc, mechanism="laplace"),
        match="mechanism",
    ),
    "pp classifier: gnmax predict_proba NaN": _predict_case(
        lambda acc: _pp_classifier(
            accountant=acc, mechanism="gnmax", estimator=LogisticRegression()
        ),
        Q_NAN,
        match=r"\bX\b.*NaN",
        method="predict_proba",
    ),
    "pp classifier: predict sparse, too wide": _predict_case(
        lambda acc: _pp_classifier(accountant=acc),
        sp.csr_matrix(Q_WIDE),
        match=r"\bX\b.*3 features",
    ),
    "pp classifier: predict_proba too narrow": _predict_case(
        lambda acc: _pp_classifier(accountant=acc),
        Q_NARROW,
        match=r"\bX\b.*1 features",
        method="predict_proba",
    ),
    "pp classifier: predict before fit": Case(
        lambda acc: _pp_classifier(accountant=acc),
        "unfitted",
        NotFittedError,
        "fit",
        X_QUERY,
    ),
    # --- PrivatePredictionRegressor -----------------------------------------
    "pp regressor: string targets": _fit_case(
        lambda acc: _pp_regressor(accountant=acc), y=Y_STRINGS, match=r"\by\b"
    ),
    "pp regressor: NaN in y": _fit_case(
        lambda acc: _pp_regressor(accountant=acc),
        y=_with(Y_REG, 0, None, np.nan),
        match=r"\by\b.*NaN",
    ),
    "pp regressor: target_range reversed": _fit_case(
        lambda acc: _pp_regressor(accountant=acc, target_range=(3.0, -3.0)),
        y=Y_REG,
        match="target_range",
    ),
    "pp regressor: target_range infinite": _fit_case(
        lambda acc: _pp_regressor(accountant=acc, target_range=(0.0, math.inf)),
        y=Y_REG,
        match="target_range",
    ),
    "pp regressor: unknown noise": _fit_case(
        lambda acc: _pp_regressor(accountant=acc, mechanism=ClippedMean(noise="rdp")),
        y=Y_REG,
        match="noise",
    ),
    "pp regressor: a classifier as teacher": _fit_case(
        lambda acc: _pp_regressor(accountant=acc, estimator=STUMP),
        y=Y_REG,
        error=TypeError,
        match="classifier",
    ),
    "pp regressor: predict inf": _predict_case(
        lambda acc: _pp_regressor(accountant=acc),
        Q_INF,
        match=r"\bX\b.*infinity",
        y=Y_REG,
    ),
    # --- SoftLabelPrivateRegressor ------------------------------------------
    "soft label: gamma 0.3 (1/gamma not an integer)": _fit_case(
        lambda acc: _soft_label(
            accountant=acc, mechanism=SoftLabelHistogram(gamma=0.3)
        ),
        y=Y_REG,
        match="gamma",
    ),
    "soft label: gamma 0": _fit_case(
        lambda acc: _soft_label(
            accountant=acc, mechanism=SoftLabelHistogram(gamma=0.0)
        ),
        y=Y_REG,
        match="gamma",
    ),
    "soft label: gamma 1": _fit_case(
        lambda acc: _soft_label(
            accountant=acc, mechanism=SoftLabelHistogram(gamma=1.0)
        ),
        y=Y_REG,
        match="gamma",
    ),
    "soft label: string targets": _fit_case(
        lambda acc: _soft_label(accountant=acc), y=Y_STRINGS, match=r"\by\b"
    ),
    "soft label: classifier without predict_proba": _fit_case(
        lambda acc: _soft_label(accountant=acc, estimator=RidgeClassifier()),
        y=Y_CLASS,
        error=TypeError,
        match="estimator",
    ),
    "soft label: T = max_unstable 0": _fit_case(
        lambda acc: _soft_label(
            accountant=acc, mechanism=SoftLabelHistogram(max_unstable=0)
        ),
        y=Y_REG,
        match="max_unstable",
    ),
    "soft label: predict too wide": _predict_case(
        lambda acc: _soft_label(accountant=acc), Q_WIDE, match=r"\bX\b", y=Y_REG
    ),
    # --- PrivateKernelRidge -------------------------------------------------
    "kernel ridge: unknown kernel": _fit_case(
        lambda acc: _kernel_ridge(accountant=acc, kernel="sigmoid"),
        y=Y_REG,
        match="kernel",
    ),
    "kernel ridge: poly coef0 < 0": _fit_case(
        lambda acc: _kernel_ridge(
            accountant=acc, kernel="poly", kernel_params={"coef0": -1.0, "x_bound": 3}
        ),
        y=Y_REG,
        match="coef0",
    ),
    "kernel ridge: poly degree 2.5": _fit_case(
        lambda acc: _kernel_ridge(
            accountant=acc, kernel="poly", kernel_params={"degree": 2.5, "x_bound": 3}
        ),
        y=Y_REG,
        match="degree",
    ),
    "kernel ridge: gamma -1": _fit_case(
        lambda acc: _kernel_ridge(accountant=acc, kernel_params={"gamma": -1.0}),
        y=Y_REG,
        match="gamma",
    ),
    "kernel ridge: y_bound 0": _fit_case(
        lambda acc: _kernel_ridge(accountant=acc, y_bound=0.0), y=Y_REG, match="y_bound"
    ),
    "kernel ridge: x_bound -1": _fit_case(
        lambda acc: _kernel_ridge(
            accountant=acc, kernel="linear", kernel_params={"x_bound": -1.0}
        ),
        y=Y_REG,
        match="x_bound",
    ),
    "kernel ridge: unknown release": _fit_case(
        lambda acc: _kernel_ridge(
            accountant=acc, mechanism=OutputPerturbation(release="weights")
        ),
        y=Y_REG,
        match="release",
    ),
    "kernel ridge: model release of a linear kernel": _fit_case(
        lambda acc: _kernel_ridge(
            accountant=acc,
            kernel="linear",
            kernel_params={"x_bound": 3.0},
            mechanism=OutputPerturbation(release="model"),
        ),
        y=Y_REG,
        match="release",
    ),
    "kernel ridge: string targets": _fit_case(
        lambda acc: _kernel_ridge(accountant=acc), y=Y_STRINGS, match=r"\by\b"
    ),
    "kernel ridge: predict NaN": _predict_case(
        lambda acc: _kernel_ridge(accountant=acc), Q_NAN, match=r"\bX\b.*NaN", y=Y_REG
    ),
    "kernel ridge: predict too narrow": _predict_case(
        lambda acc: _kernel_ridge(accountant=acc),
        Q_NARROW,
        match=r"\bX\b.*1 features",
        y=Y_REG,
    ),
    # --- ExponentialMechanismERM(+Regressor) ---------------------------------
    "erm: unfitted hypothesis": _fit_case(
        lambda acc: _erm(accountant=acc, hypotheses=[LogisticRegression()]),
        match="hypotheses",
    ),
    "erm: hypothesis neither estimator nor callable": _fit_case(
        lambda acc: _erm(accountant=acc, hypotheses=[42]),
        error=TypeError,
        match="hypotheses",
    ),
    "erm: feature_bounds reversed": _fit_case(
        lambda acc: _erm(
            accountant=acc, hypotheses=DecisionStumps(feature_bounds=(4, -4))
        ),
        match="feature_bounds",
    ),
    "erm: Thresholds bounds infinite": _fit_case(
        lambda acc: _erm(accountant=acc, hypotheses=Thresholds(bounds=(0, math.inf))),
        X[:, :1],
        match="bounds",
    ),
    "erm: labels outside classes": _fit_case(
        lambda acc: _erm(accountant=acc, classes=[1, 2]), match="classes"
    ),
    "erm: epsilon nan": _fit_case(
        lambda acc: _erm(accountant=acc, epsilon=math.nan), match="epsilon"
    ),
    "erm regressor: string targets": _fit_case(
        lambda acc: _erm_regressor(accountant=acc), y=Y_STRINGS, match=r"\by\b"
    ),
    "erm regressor: target_range empty": _fit_case(
        lambda acc: _erm_regressor(accountant=acc, target_range=(1.0, 1.0)),
        y=Y_REG,
        match="target_range",
    ),
    "erm regressor: loss_bound 0": _fit_case(
        lambda acc: _erm_regressor(accountant=acc, loss_bound=0.0),
        y=Y_REG,
        match="loss_bound",
    ),
    "erm: predict before fit": Case(
        lambda acc: _erm(accountant=acc), "unfitted", NotFittedError, "fit", X_QUERY
    ),
    "erm: predict too wide": _predict_case(
        lambda acc: _erm(accountant=acc), Q_WIDE, match=r"\bX\b.*3 features"
    ),
    # --- PrivateStatisticalQueries ------------------------------------------
    "statistical queries: n_queries 0": _fit_case(
        lambda acc: _statistical_queries(accountant=acc, n_queries=0),
        match="n_queries",
    ),
    "statistical queries: n_queries above n": _fit_case(
        lambda acc: _statistical_queries(accountant=acc, n_queries=N + 1),
        match="n_queries",
    ),
    "statistical queries: one row, 5 queries": _fit_case(
        lambda acc: _statistical_queries(accountant=acc),
        X[:1],
        Y_CLASS[:1],
        match="n_queries",
    ),
    "statistical queries: epsilon inf": _fit_case(
        lambda acc: _statistical_queries(accountant=acc, epsilon=math.inf),
        match="epsilon",
    ),
    "statistical queries: NaN in X": _fit_case(
        lambda acc: _statistical_queries(accountant=acc), X_NAN, match=r"\bX\b.*NaN"
    ),
    "statistical queries: query_mean of a non-callable": _predict_case(
        lambda acc: _statistical_queries(accountant=acc),
        "mean of column 0",
        error=TypeError,
        match="phi",
        method="query_mean",
        good=_positive_first_feature,
    ),
    "statistical queries: query_count of a non-callable": _predict_case(
        lambda acc: _statistical_queries(accountant=acc),
        np.ones(N),
        error=TypeError,
        match="predicate",
        method="query_count",
        good=_positive_first_feature,
    ),
    # --- KnowledgeTransferClassifier ----------------------------------------
    "knowledge transfer: X_public missing": _fit_case(
        lambda acc: _knowledge_transfer(acc), match="X_public"
    ),
    "knowledge transfer: X_public too wide": _fit_case(
        lambda acc: _knowledge_transfer(acc), match="X_public", X_public=Q_WIDE
    ),
    "knowledge transfer: X_public empty": _fit_case(
        lambda acc: _knowledge_transfer(acc), match="X_public", X_public=Q_EMPTY
    ),
    "knowledge transfer: non-private teacher": _fit_case(
        lambda acc: KnowledgeTransferClassifier(teacher=LogisticRegression()),
        error=TypeError,
        match="teacher",
        X_public=X_QUERY,
    ),
    "knowledge transfer: student without fit": _fit_case(
        lambda acc: _knowledge_transfer(acc, student=_NoFit()),
        match="student",
        X_public=X_QUERY,
    ),
    "knowledge transfer: teacher with epsilon 0": _fit_case(
        lambda acc: _knowledge_transfer(acc, teacher_params={"epsilon": 0.0}),
        match="epsilon",
        X_public=X_QUERY,
    ),
    "knowledge transfer: predict before fit": Case(
        lambda acc: _knowledge_transfer(acc),
        "unfitted",
        NotFittedError,
        "fit",
        X_QUERY,
    ),
}


# -- the test -----------------------------------------------------------------------


@pytest.fixture
def accountant():
    """A shared budget that an earlier release has already drawn on."""
    acc = PrivacyAccountant(epsilon=1e4, delta=0.5)
    acc.spend(3.0, 1e-4)
    return acc


def _serving_counters(model):
    """The model's public serving counters (None for free predictions)."""
    if hasattr(model, "budget_status"):
        return model.budget_status()
    if hasattr(model, "n_queries_remaining"):
        return model.n_queries_remaining
    return None


def _snapshot(accountant):
    return accountant.spent, accountant.spent_basic, len(accountant.events)


def _good_fit(model, case):
    if isinstance(model, KnowledgeTransferClassifier):
        return model.fit(X, Y_CLASS, X_public=X_QUERY)
    return model.fit(X, case.y)


def test_catalogue_has_at_least_30_cases():
    assert len(CASES) >= 30
    estimators = {type(case.make(None)).__name__ for case in CASES.values()}
    assert len(estimators) >= 8  # every estimator of the package


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_bad_input_is_refused_before_any_spend(name, accountant):
    case = CASES[name]
    model = case.make(accountant)
    if case.stage == "fit":
        before = _snapshot(accountant)
        with pytest.raises(case.error, match=case.match):
            model.fit(case.X, case.y, **case.fit_kwargs)
        assert _snapshot(accountant) == before
        return
    if case.stage == "unfitted":
        before = _snapshot(accountant)
        with pytest.raises(NotFittedError, match=case.match):
            getattr(model, case.method)(case.X)
        assert _snapshot(accountant) == before
        return
    # predict: a fitted, already serving model refuses the bad query
    _good_fit(model, case)
    getattr(model, case.method)(case.good)
    before, counters = _snapshot(accountant), _serving_counters(model)
    with pytest.raises(case.error, match=case.match):
        getattr(model, case.method)(case.X)
    assert _snapshot(accountant) == before
    assert _serving_counters(model) == counters
    # and the model still serves good queries afterwards
    getattr(model, case.method)(case.good)
