"""Rows the mechanism does not answer: the student of the released answers.

A classifier whose budget is spent (``max_queries``, a halt) or whose
mechanism abstains on a row answers it from a student fitted on the query
rows and the labels it released (post-processing, free;
``docs/privacy_contract.rst``, "Rows the mechanism does not answer").
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpsklearn import (
    ClippedMean,
    Exponential,
    PrivatePredictionClassifier,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.ensemble._student import AnswerStudent


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 2)) + 3.0 * y[:, None]
    return X, y


X, Y = _blobs(2000, 0)
X_Q, Y_Q = _blobs(600, 1)


def _fit(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.fit(X, Y)


def _ask(model, X_rows, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.predict(X_rows, **kwargs)


def test_rows_after_max_queries_are_the_students():
    model = _fit(
        PrivatePredictionClassifier(
            LogisticRegression(),
            n_estimators=20,
            epsilon=50.0,
            max_queries=100,
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
        )
    )
    labels, abstained, source = _ask(
        model, X_Q, return_abstained=True, return_source=True
    )
    assert not abstained.any()
    np.testing.assert_array_equal(source[:100], ["private"] * 100)
    np.testing.assert_array_equal(source[100:], ["student"] * 500)
    # The student learned the blobs from 100 released labels.
    assert np.mean(labels[100:] == Y_Q[100:]) > 0.95
    status = model.budget_status()
    assert (status.n_served, status.n_answered) == (100, 100)
    assert (status.n_student, status.n_abstained) == (500, 0)
    # The paid answers are the mechanism's, as with abstentions asked for.
    abstaining = _fit(
        PrivatePredictionClassifier(
            LogisticRegression(),
            n_estimators=20,
            epsilon=50.0,
            max_queries=100,
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
            mechanism=Exponential(unanswered="abstain"),
        )
    )
    other, other_abstained = _ask(abstaining, X_Q, return_abstained=True)
    np.testing.assert_array_equal(labels[:100], other[:100])
    assert other_abstained[100:].all() and (other[100:] == -1).all()
    assert abstaining.budget_status().n_abstained == 500


def test_score_counts_every_row_with_the_student():
    model = _fit(
        PrivatePredictionClassifier(
            n_estimators=20, epsilon=50.0, max_queries=50, classes=[0, 1],
            random_state=0,
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no AbstentionWarning: nothing abstained
        warnings.simplefilter("ignore", UserWarning)
        score = model.score(X_Q, Y_Q)
    assert score > 0.95  # the old padding scored 50 of 600 rows at most


def test_a_halted_sparse_vector_and_its_failed_tests_are_answered():
    """Abstentions of the mechanism itself (failed tests) are filled too."""
    model = _fit(
        SubsampleAggregateClassifier(
            LogisticRegression(),
            n_estimators=40,
            epsilon=30.0,
            mechanism=SparseVector(max_unstable=5, fallback="abstain"),
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
        )
    )
    labels, abstained, source = _ask(
        model, X_Q, return_abstained=True, return_source=True
    )
    status = model.budget_status()
    n_private = int(np.sum(source == "private"))
    assert n_private == status.n_answered > 10
    assert int(np.sum(source == "student")) == status.n_student
    assert status.n_answered + status.n_student + status.n_abstained == len(X_Q)
    assert not abstained.any() and status.halted
    assert np.mean(labels == Y_Q) > 0.9


def test_no_answer_released_means_abstentions():
    """A model that released nothing has no student: it abstains."""
    model = _fit(
        SubsampleAggregateClassifier(
            LogisticRegression(),
            n_estimators=5,
            epsilon=1.0,
            mechanism=SparseVector(max_unstable=3, fallback="abstain"),
            classes=[0, 1],
            random_state=0,
            noise_random_state=0,
        )
    )  # w >= 100 with 5 teachers: every test fails (p < 1e-5 each)
    labels, abstained, source = _ask(
        model, X_Q[:50], return_abstained=True, return_source=True
    )
    assert abstained.all() and (labels == -1).all()
    assert set(source.tolist()) == {"abstained"}
    assert model.budget_status().n_abstained == 50


def test_the_student_pickles_with_the_model_and_never_sees_training_rows():
    model = _fit(
        PrivatePredictionClassifier(
            n_estimators=20, epsilon=50.0, max_queries=60, classes=[0, 1],
            random_state=0, noise_random_state=0,
        )
    )
    _ask(model, X_Q[:100])
    student = model._answer_student_
    # Only the 60 query rows it answered privately, with the released labels.
    (rows,) = student._rows
    (labels,) = student._labels
    np.testing.assert_array_equal(rows, X_Q[:60])
    assert student.n_answers == 60 and labels.shape == (60,)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(
        _ask(copy, X_Q[300:]), _ask(model, X_Q[300:])
    )


def test_the_student_refits_when_the_answers_double():
    student = AnswerStudent(LogisticRegression(), n_classes=2)
    rows, labels = _blobs(400, 3)
    fits = []
    for start in range(0, 400, 10):
        student.add(rows[start : start + 10], labels[start : start + 10])
        student.predict(rows[:1])
        fits.append(student._fitted_on)
    # Refitted at 10, 20, 40, 80, 160, 320 answers: not per row.
    assert sorted(set(fits)) == [10, 20, 40, 80, 160, 320]


@pytest.mark.parametrize(
    "labels, expected", [([1] * 30, [1, 1]), ([0, 1, 1], [1, 1])]
)
def test_one_class_or_few_answers_give_the_most_frequent_label(labels, expected):
    student = AnswerStudent(LogisticRegression(), n_classes=2)
    student.add(np.zeros((len(labels), 2)), np.array(labels))
    assert student.predict(np.ones((2, 2))).tolist() == expected
    assert student.kind == "most_frequent"


def test_soft_label_auto_answers_where_its_test_cannot():
    """100 teachers cannot pass the double test at epsilon 1: "auto" releases
    each query's mean soft label, and the student of the released values
    answers the rows after the planned queries."""
    model = SoftLabelPrivateRegressor(
        LogisticRegression(), n_estimators=100, max_queries=200, random_state=0,
        noise_random_state=0,
    )
    with pytest.warns(UserWarning, match="chose ClippedMean"):
        model.fit(X, Y)
    assert isinstance(model.mechanism_, ClippedMean)
    values, abstained, source = _ask(
        model, X_Q, return_abstained=True, return_source=True
    )
    assert not abstained.any()
    np.testing.assert_array_equal(source[:200], ["private"] * 200)
    np.testing.assert_array_equal(source[200:], ["student"] * 400)
    brier = np.mean((values - Y_Q) ** 2)
    constant = np.mean((Y.mean() - Y_Q) ** 2)
    assert brier < 0.5 * constant
    # Asked for, the double test is what runs (and it abstains).
    explicit = _fit(
        SoftLabelPrivateRegressor(
            LogisticRegression(), n_estimators=100, mechanism=SoftLabelHistogram(),
            random_state=0,
        )
    )
    assert isinstance(explicit.mechanism_, SoftLabelHistogram)
