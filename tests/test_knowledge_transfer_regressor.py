"""KnowledgeTransferRegressor: a publishable student taught by a private regressor.

See docs/design.rst, "Knowledge transfer to a student".
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from dpsklearn import (
    KnowledgeTransferRegressor,
    PrivacyAccountant,
    PrivatePredictionRegressor,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def data():
    X, y = make_regression(n_samples=5000, n_features=4, noise=5.0, random_state=0)
    y = np.clip(y, -300, 300)
    return X[:3500], y[:3500], X[3500:4200], X[4200:], y[4200:]


def _teacher(**params):
    defaults = dict(
        n_estimators=100,
        epsilon=4.0,
        max_queries=400,
        target_range=(-300, 300),
        random_state=0,
        noise_random_state=0,
    )
    return PrivatePredictionRegressor(**{**defaults, **params})


def test_fit_labels_public_rows_and_keeps_only_the_student(data):
    X, y, X_public, X_test, y_test = data
    kt = KnowledgeTransferRegressor(_teacher(), Ridge()).fit(
        X, y, X_public=X_public[:400]
    )
    assert kt.n_public_labelled_ == 400
    assert (kt.n_public_abstained_, kt.n_public_unanswered_) == (0, 0)
    np.testing.assert_array_equal(kt.predict(X_test), kt.student_.predict(X_test))
    assert kt.score(X_test, y_test) > 0.9
    # Nothing private stays: no teacher, no training rows in the pickle.
    fitted = {name for name in vars(kt) if name.endswith("_")}
    assert fitted == {
        "student_",
        "n_public_labelled_",
        "n_public_abstained_",
        "n_public_unanswered_",
        "n_public_unqueried_",
        "n_features_in_",
    }
    assert X[0].tobytes() not in pickle.dumps(kt.set_params(teacher=None))


def test_student_learns_from_the_released_values(data):
    # The student's fit is on the teacher's noisy values: a student fitted on
    # exactly those (public rows, released labels) is the same model.
    X, y, X_public, _, _ = data
    teacher = _teacher().fit(X, y)
    released = teacher.predict(X_public[:400])
    kt = KnowledgeTransferRegressor(_teacher(), LinearRegression()).fit(
        X, y, X_public=X_public[:400]
    )
    direct = LinearRegression().fit(X_public[:400], released)
    np.testing.assert_allclose(kt.student_.coef_, direct.coef_)


def test_budget_running_out_keeps_what_was_released(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferRegressor(_teacher(max_queries=150))
    with pytest.warns(UserWarning, match="budget ran out after labelling 150"):
        kt.fit(X, y, X_public=X_public[:400])
    assert (kt.n_public_labelled_, kt.n_public_unanswered_) == (150, 250)


def test_uncertainty_asks_where_bootstrap_students_disagree():
    # A linear student's bootstrap spread grows with the distance from the
    # centre of the labelled rows (leverage), so after the random first round
    # the teacher is asked about the extreme rows.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 1))
    y = 3 * X[:, 0]
    X_public = rng.normal(size=(1000, 1))
    teacher = _teacher(n_estimators=200, epsilon=8.0, max_queries=300)
    kt = KnowledgeTransferRegressor(
        teacher,
        LinearRegression(),
        query_strategy="uncertainty",
        n_rounds=3,
        random_state=0,
    ).fit(X, y, X_public=X_public)
    assert (kt.n_public_labelled_, kt.n_public_unqueried_) == (300, 700)
    # Replay the strategy's choice: the rows asked, from a teacher that
    # records them.
    asked = []

    class Recording(PrivatePredictionRegressor):
        def predict(self, X):
            asked.append(np.asarray(X))
            return super().predict(X)

    KnowledgeTransferRegressor(
        Recording(**teacher.get_params()),
        LinearRegression(),
        query_strategy="uncertainty",
        n_rounds=3,
        random_state=0,
    ).fit(X, y, X_public=X_public)
    first, *later = asked
    later = np.concatenate(later)
    assert len(first) == 100 and len(later) == 200
    # the random first round looks like the pool; the later rounds are its tails
    assert np.abs(later).min() > np.quantile(np.abs(X_public), 0.6)
    assert np.abs(first).mean() < np.abs(later).mean()


def test_uncertainty_is_reproducible_from_random_state(data):
    X, y, X_public, _, _ = data
    fits = [
        KnowledgeTransferRegressor(
            _teacher(max_queries=200),
            query_strategy="uncertainty",
            random_state=3,
        ).fit(X, y, X_public=X_public)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(fits[0].student_.coef_, fits[1].student_.coef_)


class AbstainingTeacher(PrivatePredictionRegressor):
    """A private regressor whose ``predict`` marks rows abstained (here: the
    rows with a positive first column), as SoftLabelPrivateRegressor marks
    the rows its fallback answered."""

    def predict(self, X, return_abstained=False):
        values = super().predict(X)
        if return_abstained:
            return values, np.asarray(X)[:, 0] > 0
        return values


def test_abstained_rows_are_dropped(data):
    X, y, X_public, _, _ = data
    teacher = AbstainingTeacher(**_teacher().get_params())
    kt = KnowledgeTransferRegressor(teacher, LinearRegression()).fit(
        X, y, X_public=X_public[:400]
    )
    dropped = X_public[:400, 0] > 0
    assert kt.n_public_abstained_ == dropped.sum() > 0
    assert kt.n_public_labelled_ == 400 - dropped.sum()
    released = _teacher().fit(X, y).predict(X_public[:400])
    direct = LinearRegression().fit(X_public[:400][~dropped], released[~dropped])
    np.testing.assert_allclose(kt.student_.coef_, direct.coef_)


@pytest.mark.parametrize(
    "teacher, match",
    [
        (Ridge(), "not a dpsklearn private regressor"),
        (None, None),
    ],
)
def test_teacher_must_be_a_private_regressor(data, teacher, match):
    X, y, X_public, _, _ = data
    if match is None:  # a private classifier is refused too
        from dpsklearn import PrivatePredictionClassifier

        teacher, match = PrivatePredictionClassifier(), "private regressor"
    with pytest.raises(TypeError, match=match):
        KnowledgeTransferRegressor(teacher).fit(X, y, X_public=X_public)


def test_bad_inputs_are_refused_before_the_teacher_spends(data):
    X, y, X_public, _, _ = data
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    kt = KnowledgeTransferRegressor(_teacher(accountant=shared))
    with pytest.raises(ValueError, match="X_public is required"):
        kt.fit(X, y)
    with pytest.raises(ValueError, match="X_public is not valid"):
        kt.fit(X, y, X_public=X_public[:, :2])
    with pytest.raises(ValueError, match="n_queries=800 is more"):
        kt.set_params(n_queries=800).fit(X, y, X_public=X_public)
    with pytest.raises(ValueError, match="y must hold numeric"):
        kt.set_params(n_queries=None).fit(X, np.array(["a"] * len(X)), X_public)
    with pytest.raises(ValueError, match="n_bootstrap"):
        kt.set_params(n_bootstrap=1).fit(X, y, X_public=X_public)
    assert shared.events == []


def test_pipelines_and_grid_search(data):
    X, y, X_public, X_test, y_test = data
    # The teacher's teachers and the student are pipelines themselves.
    teacher = _teacher(estimator=make_pipeline(StandardScaler(), Ridge()))
    kt = KnowledgeTransferRegressor(
        teacher, make_pipeline(StandardScaler(), Ridge())
    ).fit(X, y, X_public=X_public[:400])
    assert kt.score(X_test, y_test) > 0.9
    # As the last step after a fixed (data-independent) feature map: X_public
    # is given in the representation the step sees.
    feature_map = FunctionTransformer(lambda Z: np.hstack([Z, Z**2]))
    pipe = Pipeline(
        [("features", feature_map), ("kt", KnowledgeTransferRegressor(_teacher()))]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pipe.fit(X, y, kt__X_public=feature_map.transform(X_public[:400]))
    assert pipe.predict(X_test).shape == (len(X_test),)
    # GridSearchCV over the student's parameter: X_public is passed to every
    # fit (its length differs from X's, so it is not split). The scores use
    # the private rows' labels in the clear: outside the guarantee.
    search = GridSearchCV(
        KnowledgeTransferRegressor(_teacher(max_queries=300), Ridge()),
        {"student__alpha": [0.1, 10.0]},
        cv=2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, y, X_public=X_public[:300])
    assert search.best_params_["student__alpha"] in (0.1, 10.0)
    assert search.best_estimator_.n_public_labelled_ == 300
