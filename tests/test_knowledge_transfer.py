"""KnowledgeTransferClassifier (Bassily, Thakkar and Thakurta 2018, Algorithm 5).

See docs/design.rst, "Knowledge transfer to a student".
"""

from __future__ import annotations

import gc
import pickle
import warnings
import weakref

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from dpsklearn import (
    BudgetExhaustedError,
    KnowledgeTransferClassifier,
    PrivacyAccountant,
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.teachers import clear_teacher_cache

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=3000, n_features=6, n_informative=4, class_sep=1.5, random_state=0
    )
    return X[:2400], y[:2400], X[2400:2800], X[2800:], y[2800:]


def _teacher(**params):
    defaults = dict(
        n_estimators=60,
        epsilon=8.0,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    return PrivatePredictionClassifier(**{**defaults, **params})


def test_fit_labels_public_rows_and_delegates(data):
    X, y, X_public, X_test, y_test = data
    kt = KnowledgeTransferClassifier(_teacher(), LogisticRegression()).fit(
        X, y, X_public=X_public
    )
    assert kt.n_public_labelled_ == 400
    assert kt.n_public_abstained_ == 0 and kt.n_public_unanswered_ == 0
    np.testing.assert_array_equal(kt.classes_, [0, 1])
    for method in (
        "predict",
        "predict_proba",
        "predict_log_proba",
        "decision_function",
    ):
        np.testing.assert_array_equal(
            getattr(kt, method)(X_test), getattr(kt.student_, method)(X_test)
        )
    assert kt.score(X_test, y_test) > 0.75
    # Free and unlimited: far more queries than the teacher's max_queries.
    assert kt.predict(np.vstack([X_test] * 5)).shape == (1000,)


def test_methods_available_only_if_the_student_has_them(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferClassifier(_teacher(), KNeighborsClassifier())
    assert not hasattr(kt, "decision_function")
    assert hasattr(kt, "predict_proba")
    kt.fit(X, y, X_public=X_public)
    assert not hasattr(kt, "decision_function")


class _TrackedTeacher(PrivatePredictionClassifier):
    """Records weak references to every fitted copy and its teachers."""

    refs: list = []

    def fit(self, X, y):
        super().fit(X, y)
        type(self).refs.append(weakref.ref(self))
        type(self).refs.extend(weakref.ref(t) for t in self.estimators_)
        return self


def test_fitted_object_keeps_no_teacher(data):
    X, y, X_public, X_test, _ = data
    _TrackedTeacher.refs = []
    teacher = _TrackedTeacher(
        n_estimators=20, epsilon=8.0, max_queries=400, classes=[0, 1], random_state=0
    )
    kt = KnowledgeTransferClassifier(teacher, LogisticRegression()).fit(
        X, y, X_public=X_public
    )
    before = kt.predict_proba(X_test)
    del teacher
    kt.set_params(teacher=None)
    clear_teacher_cache()  # the teacher cache (not kt) may still hold them
    gc.collect()
    assert len(_TrackedTeacher.refs) == 21
    assert all(ref() is None for ref in _TrackedTeacher.refs)  # all collected
    np.testing.assert_array_equal(kt.predict_proba(X_test), before)
    # What a user would publish: no teacher inside the pickle either.
    restored = pickle.loads(pickle.dumps(kt))
    assert b"_TrackedTeacher" not in pickle.dumps(restored.student_)
    assert not any(hasattr(v, "estimators_") for v in vars(kt).values())
    np.testing.assert_array_equal(restored.predict(X_test), kt.predict(X_test))


def test_abstentions_are_dropped(data):
    X, y, X_public, _, _ = data
    teacher = SubsampleAggregateClassifier(
        n_estimators=80,
        epsilon=1000.0,  # threshold w = 22: unanimous votes (dist 39) pass
        mechanism=SparseVector(max_unstable=400, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    kt = KnowledgeTransferClassifier(teacher, LogisticRegression()).fit(
        X, y, X_public=X_public
    )
    # Unanimous rows pass the stability test; contested ones abstain.
    assert kt.n_public_labelled_ > 0 and kt.n_public_abstained_ > 0
    assert kt.n_public_labelled_ + kt.n_public_abstained_ == 400
    np.testing.assert_array_equal(kt.classes_, [0, 1])


def test_all_abstained_is_a_clear_error(data):
    X, y, X_public, _, _ = data
    teacher = SubsampleAggregateClassifier(
        n_estimators=5,
        mechanism=SparseVector(max_unstable=1000, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
    )
    with pytest.raises(ValueError, match="labelled none of the public rows"):
        KnowledgeTransferClassifier(teacher).fit(X, y, X_public=X_public)


def test_budget_exhaustion_uses_the_paid_labels(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferClassifier(_teacher(max_queries=150), LogisticRegression())
    with pytest.warns(UserWarning, match="ran out after labelling 150 of 400"):
        kt.fit(X, y, X_public=X_public)
    assert kt.n_public_labelled_ == 150
    assert kt.n_public_unanswered_ == 250
    assert kt.n_public_abstained_ == 0


def test_shared_accountant_pays_for_the_labels(data):
    X, y, X_public, _, _ = data
    shared = PrivacyAccountant(epsilon=8.0, delta=1e-5)
    KnowledgeTransferClassifier(_teacher(accountant=shared)).fit(
        X, y, X_public=X_public
    )
    assert len(shared.events) == 1
    with pytest.raises(BudgetExhaustedError):  # the budget is spent
        KnowledgeTransferClassifier(_teacher(accountant=shared)).fit(
            X, y, X_public=X_public
        )


# -- bad input: clear errors before any budget is spent ----------------------
@pytest.mark.parametrize(
    "case, error, match",
    [
        ("X_public_width", ValueError, "X_public"),
        ("X_public_missing", ValueError, "X_public is required"),
        ("X_public_nan", ValueError, "X_public"),
        ("student_not_estimator", ValueError, "student"),
        ("student_string", ValueError, "student"),
        ("teacher_not_private", TypeError, "return_abstained"),
        ("teacher_regressor", TypeError, "private classifier"),
        ("y_continuous", ValueError, "Unknown label type"),
        ("query_strategy", ValueError, "query_strategy"),
        ("n_rounds", ValueError, "n_rounds"),
        ("n_queries_zero", ValueError, "n_queries"),
        ("n_queries_too_many", ValueError, "n_queries=401"),
        ("student_cannot_rank", TypeError, "neither predict_proba"),
    ],
)
def test_bad_input_spends_nothing(data, case, error, match):
    X, y, X_public, _, _ = data
    shared = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    teacher = _teacher(accountant=shared)
    student = LogisticRegression()
    fit_params = {"X_public": X_public}
    if case == "X_public_width":
        fit_params["X_public"] = X_public[:, :4]
    elif case == "X_public_missing":
        fit_params = {}
    elif case == "X_public_nan":
        bad = X_public.copy()
        bad[3, 2] = np.nan
        fit_params["X_public"] = bad
    elif case == "student_not_estimator":
        student = object()
    elif case == "student_string":
        student = "LogisticRegression"
    elif case == "teacher_not_private":
        teacher = LogisticRegression()
    elif case == "teacher_regressor":
        from dpsklearn import PrivatePredictionRegressor

        teacher = PrivatePredictionRegressor(accountant=shared)
    elif case == "y_continuous":
        y = y + 0.5 * np.arange(len(y)) / len(y)
    params = {
        "query_strategy": {"query_strategy": "most_confused"},
        "n_rounds": {"query_strategy": "uncertainty", "n_rounds": 0},
        "n_queries_zero": {"n_queries": 0},
        "n_queries_too_many": {"n_queries": 401},
        "student_cannot_rank": {"query_strategy": "uncertainty"},
    }.get(case, {})
    if case == "student_cannot_rank":
        student = _PredictOnly()
    kt = KnowledgeTransferClassifier(teacher, student, **params)
    with pytest.raises(error, match=match):
        kt.fit(X, y, **fit_params)
    assert shared.events == []
    assert not hasattr(kt, "student_")


def test_refused_refit_keeps_the_published_student(data):
    X, y, X_public, X_test, _ = data
    kt = KnowledgeTransferClassifier(_teacher()).fit(X, y, X_public=X_public)
    student, before = kt.student_, kt.predict(X_test)
    with pytest.raises(ValueError, match="X_public"):
        kt.fit(X, y, X_public=X_public[:, :3])
    assert kt.student_ is student
    np.testing.assert_array_equal(kt.predict(X_test), before)


def test_fitted_teacher_parameter_warns(data):
    from dpsklearn import PrivacyLeakWarning

    X, y, X_public, _, _ = data
    fitted = _teacher().fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="already fitted"):
        KnowledgeTransferClassifier(fitted).fit(X, y, X_public=X_public)


# -- query_strategy="uncertainty" --------------------------------------------
class _PredictOnly(ClassifierMixin, BaseEstimator):
    """A classifier with no confidence scores (majority class)."""

    def fit(self, X, y):
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


# The batches _RecordingTeacher was asked (module level: the model clones its
# teacher, and clone deep-copies non-estimator parameters).
_ASKED_BATCHES = []


class _RecordingTeacher(ClassifierMixin, BaseEstimator):
    """A test double of a private teacher: answers with a fixed rule and
    records every batch of rows it is asked about, so that the choice of
    rows can be checked. (Not private: for the selection logic only.)"""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X, return_abstained=False):
        _ASKED_BATCHES.append(np.array(X, copy=True))
        labels = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
        return labels, np.zeros(len(X), dtype=bool)


def _row_index(X_public, rows):
    lookup = {row.tobytes(): i for i, row in enumerate(X_public)}
    return np.array([lookup[row.tobytes()] for row in rows])


def test_uncertainty_asks_the_rows_the_student_is_least_sure_of(data):
    X, y, X_public, _, _ = data
    _ASKED_BATCHES.clear()
    kt = KnowledgeTransferClassifier(
        _RecordingTeacher(),
        LogisticRegression(),
        query_strategy="uncertainty",
        n_queries=200,
        n_rounds=4,
        random_state=0,
    ).fit(X, y, X_public=X_public)
    rounds = [_row_index(X_public, batch) for batch in _ASKED_BATCHES]
    assert [len(r) for r in rounds] == [50, 50, 50, 50]
    asked = np.concatenate(rounds)
    assert len(np.unique(asked)) == 200  # no row is asked twice
    # Round 1 is the seeded random sample.
    expected_first = np.sort(
        np.random.RandomState(0).choice(len(X_public), 50, replace=False)
    )
    np.testing.assert_array_equal(rounds[0], expected_first)
    # Every later round: the 50 unasked rows with the smallest gap between
    # the two class probabilities of a student fitted on the labels so far.
    rule = (X_public[:, 0] + 0.5 * X_public[:, 1] > 0).astype(int)
    for r in range(1, 4):
        known = np.concatenate(rounds[:r])
        ranker = LogisticRegression().fit(X_public[known], rule[known])
        candidates = np.setdiff1d(np.arange(len(X_public)), known)
        proba = ranker.predict_proba(X_public[candidates])
        margin = np.abs(proba[:, 1] - proba[:, 0])
        expected = np.sort(candidates[np.argsort(margin, kind="stable")[:50]])
        np.testing.assert_array_equal(rounds[r], expected)
    assert kt.n_public_labelled_ == 200 and kt.n_public_unqueried_ == 200
    # The student is fitted on exactly the asked rows and their labels.
    final = LogisticRegression().fit(X_public[asked], rule[asked])
    np.testing.assert_allclose(kt.student_.coef_, final.coef_)


def test_uncertainty_uses_the_rows_the_teacher_pays_for(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferClassifier(
        _teacher(max_queries=150), query_strategy="uncertainty", random_state=0
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*ran out")  # no budget warning
        kt.fit(X, y, X_public=X_public)
    assert kt.n_public_labelled_ == 150
    assert kt.n_public_unqueried_ == 250 and kt.n_public_unanswered_ == 0


def test_uncertainty_budget_exhaustion_keeps_the_paid_labels(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferClassifier(
        _teacher(max_queries=120),
        query_strategy="uncertainty",
        n_queries=200,
        n_rounds=4,
        random_state=0,
    )
    with pytest.warns(UserWarning, match="ran out after labelling 120 of 200"):
        kt.fit(X, y, X_public=X_public)
    assert kt.n_public_labelled_ == 120
    assert kt.n_public_unanswered_ == 80 and kt.n_public_unqueried_ == 200


def test_uncertainty_with_decision_function_only_student(data):
    from sklearn.svm import LinearSVC

    X, y, X_public, X_test, y_test = data
    kt = KnowledgeTransferClassifier(
        _teacher(max_queries=200),
        LinearSVC(),
        query_strategy="uncertainty",
        random_state=0,
    ).fit(X, y, X_public=X_public)
    assert kt.n_public_labelled_ == 200
    assert kt.score(X_test, y_test) > 0.7  # base rate about 0.5


# -- checked before anything is spent ------------------------------------------------
def test_a_student_that_cannot_read_x_public_is_refused_before_the_spend():
    import pandas as pd

    from dpsklearn import PrivacyAccountant

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"job": rng.choice(["a", "b", "c"], 600), "age": rng.normal(size=600)}
    )
    y = (frame["age"] > 0).astype(int).to_numpy()
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    teacher_estimator = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), ["job"]), remainder="passthrough"
        ),
        LogisticRegression(),
    )
    accountant = PrivacyAccountant(10.0, 1e-5)
    model = KnowledgeTransferClassifier(
        PrivatePredictionClassifier(
            teacher_estimator,
            n_estimators=5,
            max_queries=100,
            classes=[0, 1],
            accountant=accountant,
        ),
        LogisticRegression(),  # cannot read the string column
        query_strategy="uncertainty",  # the ranker reads X_public too
    )
    with pytest.raises(ValueError, match="cannot be fitted on X_public"):
        model.fit(frame.iloc[:400], y[:400], X_public=frame.iloc[400:])
    assert accountant.spent == (0.0, 0.0)  # nothing was spent
    # The default student is the teachers' own pipeline: it reads the frame.
    model.set_params(student=None).fit(
        frame.iloc[:400], y[:400], X_public=frame.iloc[400:]
    )
    assert type(model.student_) is type(teacher_estimator)
    assert model.n_public_labelled_ > 0


def test_labels_the_student_cannot_fit_travel_with_the_error():
    from dpsklearn import StudentFitError

    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 2))
    y = np.zeros(800, dtype=int)
    y[:3] = 1  # two classes in the labels, one in every teacher's vote
    model = KnowledgeTransferClassifier(
        PrivatePredictionClassifier(
            DummyClassifier(strategy="most_frequent"),
            n_estimators=20,
            epsilon=50.0,
            max_queries=50,
            classes=[0, 1],
            noise_random_state=0,
        ),
        student=LogisticRegression(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(StudentFitError) as err:
            model.fit(X[:600], y[:600], X_public=X[600:650])
    assert len(err.value.rows) == len(err.value.labels) > 0
    assert set(np.unique(err.value.labels)) == {0}


@pytest.mark.parametrize(
    "teacher",
    [
        # GNMax: its calibration at 1,100 answers is quick (the exponential
        # mechanism's exact game at a new size takes seconds)
        PrivatePredictionClassifier(
            n_estimators=60, epsilon=8.0, mechanism="gnmax", classes=[0, 1]
        ),
        SubsampleAggregateClassifier(
            n_estimators=60, epsilon=8.0, mechanism="confident_gnmax", classes=[0, 1]
        ),
    ],
    ids=["private_prediction", "subsample_aggregate"],
)
def test_a_teacher_cap_left_at_its_default_pays_for_every_public_row(teacher):
    # 1,100 public rows, more than PrivatePredictionClassifier's default
    # max_queries (1,000): the teacher's cap, left at its default, is set to
    # the public rows (a public number), so every row is labelled and the
    # budget does not run out part-way.
    X, y = make_classification(
        n_samples=3500, n_features=6, class_sep=1.5, random_state=1
    )
    X_public = X[2400:]  # 1,100 rows
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*budget ran out")
        kt = KnowledgeTransferClassifier(teacher, LogisticRegression()).fit(
            X[:2400], y[:2400], X_public=X_public
        )
    assert kt.n_public_unanswered_ == 0 and kt.n_public_unqueried_ == 0
    assert kt.n_public_labelled_ + kt.n_public_abstained_ == 1100


def test_a_teacher_cap_the_user_set_is_kept(data):
    X, y, X_public, _, _ = data
    with pytest.warns(UserWarning, match="budget ran out after labelling 150"):
        kt = KnowledgeTransferClassifier(
            _teacher(max_queries=150), LogisticRegression()
        ).fit(X, y, X_public=X_public)
    assert kt.n_public_labelled_ + kt.n_public_abstained_ == 150
