"""KnowledgeTransferRegressor: a publishable student taught by a private regressor.

See docs/design.rst, "Knowledge transfer to a student".
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import make_regression
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, Ridge, RidgeCV
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, SplineTransformer, StandardScaler

from dpsklearn import (
    KnowledgeTransferRegressor,
    PrivacyAccountant,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.exceptions import PrivacyLeakWarning
from dpsklearn.mechanisms import AdaptiveRange
from dpsklearn.planning import knowledge_transfer_shard_rows

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def data():
    X, y = make_regression(n_samples=5000, n_features=4, noise=5.0, random_state=0)
    y = np.clip(y, -300, 300)
    return X[:3500], y[:3500], X[3500:4200], X[4200:], y[4200:]


def _teacher(**params):
    # Every parameter the student would resolve is set, so these tests see
    # the teacher as given (the resolution is tested on its own below).
    defaults = dict(
        estimator=Ridge(),
        n_estimators=100,
        mechanism="clipped_mean",
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
        "teacher_params_",
    }
    assert kt.teacher_params_ == {}  # every teacher parameter was set
    assert X[0].tobytes() not in pickle.dumps(kt.set_params(teacher=None))


def test_student_learns_from_the_released_values(data):
    # The student's fit is on the teacher's noisy values: a student fitted on
    # exactly those (public rows, released labels) is the same model.
    X, y, X_public, _, _ = data
    teacher = _teacher()
    # as the student marks its own teacher
    teacher._refuses_answers_below_constant = False
    released = teacher.fit(X, y).predict(X_public[:400])
    kt = KnowledgeTransferRegressor(
        _teacher(), LinearRegression(), query_strategy="sequential"
    ).fit(X, y, X_public=X_public[:400])
    direct = LinearRegression().fit(X_public[:400], released)
    np.testing.assert_allclose(kt.student_.coef_, direct.coef_)


def test_budget_running_out_keeps_what_was_released(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferRegressor(
        _teacher(max_queries=150), query_strategy="sequential"
    )
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
        Recording(**teacher.get_params(deep=False)),
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
    np.testing.assert_array_equal(fits[0].predict(X_public), fits[1].predict(X_public))


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
    teacher = AbstainingTeacher(**_teacher().get_params(deep=False))
    kt = KnowledgeTransferRegressor(
        teacher, LinearRegression(), query_strategy="sequential"
    ).fit(X, y, X_public=X_public[:400])
    dropped = X_public[:400, 0] > 0
    assert kt.n_public_abstained_ == dropped.sum() > 0
    assert kt.n_public_labelled_ == 400 - dropped.sum()
    alone = _teacher()
    # as the student marks its own teacher
    alone._refuses_answers_below_constant = False
    released = alone.fit(X, y).predict(X_public[:400])
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


class RecordingTeacher(PrivatePredictionRegressor):
    """Records the parameters the teacher was fitted with (it is dropped)."""

    fitted_with: list = []

    def fit(self, X, y):
        RecordingTeacher.fitted_with.append(self.get_params(deep=False))
        return super().fit(X, y)


def test_defaults_resolve_the_teachers_defaults_for_a_student(data):
    # docs/regression.rst, "Knowledge-transfer defaults": a teacher left at
    # its defaults gets larger shards (from public n, epsilon, delta),
    # standardised ridge teachers and the clipped mean over the public range.
    X, y, X_public, X_test, y_test = data
    RecordingTeacher.fitted_with.clear()
    teacher = RecordingTeacher(
        target_range=(-300, 300), epsilon=2.0, random_state=0, noise_random_state=0
    )
    kt = KnowledgeTransferRegressor(teacher, random_state=0)
    assert kt.query_strategy == "uncertainty"
    kt.fit(X, y, X_public=X_public)
    rows = knowledge_transfer_shard_rows(n_samples=len(X), epsilon=2.0, delta=1e-5)
    assert kt.teacher_params_["n_estimators"] == len(X) // rows
    assert kt.teacher_params_["mechanism"] == "clipped_mean"
    steps = [type(step) for step in kt.teacher_params_["estimator"]]
    assert steps == [StandardScaler, Ridge]
    assert kt.teacher_params_["estimator"][-1].alpha == 0.1  # a light penalty
    (used,) = RecordingTeacher.fitted_with
    assert used["n_estimators"] == len(X) // rows
    assert used["mechanism"] == "clipped_mean"
    # The user's teacher object is untouched (it was cloned).
    assert teacher.n_estimators == "auto" and teacher.estimator is None
    # The default student on dense rows: columns clipped to the public rows'
    # span (a two-knot linear spline), scaled, a ridge whose penalty
    # leave-one-out picks, its predictions clipped to the teacher's public
    # target_range.
    steps = [type(step) for step in kt.student_]
    assert steps == [FrozenEstimator, StandardScaler, TransformedTargetRegressor]
    assert isinstance(kt.student_[-1].regressor_, RidgeCV)
    spline = kt.student_[0].estimator
    assert isinstance(spline, SplineTransformer)
    # The span is every public row's, not only the labelled rows'.
    assert np.allclose(
        spline.bsplines_[0].t[1:-1], [X_public[:, 0].min(), X_public[:, 0].max()]
    )
    # Uncertainty sampling asks the teacher's max_queries (1,000) rows.
    assert kt.n_public_labelled_ == min(1000, len(X_public))
    assert kt.score(X_test, y_test) > 0.9


def test_default_student_answers_rows_outside_the_public_span_at_its_edge(data):
    # A query row far outside every public row (a data-entry error) is
    # answered as the row clipped to the public rows' span, where a linear
    # student would extrapolate.
    X, y, X_public, X_test, _ = data
    teacher = PrivatePredictionRegressor(
        target_range=(-300, 300), epsilon=2.0, random_state=0, noise_random_state=0
    )
    kt = KnowledgeTransferRegressor(teacher, random_state=0).fit(
        X, y, X_public=X_public
    )
    far = X_test[:5].copy()
    far[:, 0] = X_public[:, 0].max() + 1e3
    edge = X_test[:5].copy()
    edge[:, 0] = X_public[:, 0].max()
    assert np.allclose(kt.predict(far), kt.predict(edge))
    # Sparse public rows keep the sparse-friendly default; an explicit
    # student is used as given.
    sparse_kt = KnowledgeTransferRegressor(clone(teacher), random_state=0).fit(
        sp.csr_matrix(X), y, X_public=sp.csr_matrix(X_public)
    )
    steps = [type(step) for step in sparse_kt.student_]
    assert steps == [StandardScaler, TransformedTargetRegressor]
    explicit = KnowledgeTransferRegressor(clone(teacher), Ridge(), random_state=0)
    assert isinstance(explicit.fit(X, y, X_public=X_public).student_, Ridge)


def test_default_student_answers_within_the_teachers_public_range(data):
    # The teacher's answers lie in its public target_range; so do the default
    # student's, also where the linear map alone would leave it (docs/
    # regression.rst, "Knowledge-transfer defaults"). Without a public range
    # nothing is clipped.
    X, y, X_public, X_test, _ = data
    narrow = (-50.0, 60.0)  # y spreads over about (-300, 300)
    teacher = PrivatePredictionRegressor(
        target_range=narrow, epsilon=2.0, random_state=0, noise_random_state=0
    )
    kt = KnowledgeTransferRegressor(teacher, random_state=0).fit(
        X, y, X_public=X_public
    )
    answers = kt.predict(X_test)
    assert answers.min() == narrow[0] and answers.max() == narrow[1]
    # The same student given explicitly is not clipped; with the same seeds
    # the teacher is asked about the same rows (uncertainty sampling ranks
    # by the unclipped bootstrap students), so the default's answers are
    # exactly the explicit student's, clipped.
    explicit = kt.student_[:-1].steps + [("ridgecv", RidgeCV(np.logspace(-2, 3, 11)))]
    unclipped = (
        KnowledgeTransferRegressor(clone(teacher), Pipeline(explicit), random_state=0)
        .fit(X, y, X_public=X_public)
        .predict(X_test)
    )
    assert ((unclipped < narrow[0]) | (unclipped > narrow[1])).any()
    assert np.allclose(answers, np.clip(unclipped, *narrow), rtol=0, atol=1e-9)
    published = pickle.loads(pickle.dumps(kt.student_))
    assert np.array_equal(published.predict(X_test), answers)
    with pytest.warns(PrivacyLeakWarning, match="target_range is None"):
        leaky = KnowledgeTransferRegressor(
            clone(teacher).set_params(target_range=None), random_state=0
        ).fit(X, y, X_public=X_public)
    assert isinstance(leaky.student_[-1], RidgeCV)


def test_explicit_teacher_parameters_are_kept(data):
    X, y, X_public, _, _ = data
    RecordingTeacher.fitted_with.clear()
    teacher = RecordingTeacher(
        Ridge(alpha=3.0),
        n_estimators=50,
        mechanism=AdaptiveRange(),
        target_range=(-300, 300),
        max_queries=200,
        random_state=0,
        noise_random_state=0,
    )
    kt = KnowledgeTransferRegressor(teacher, Ridge(), random_state=0).fit(
        X, y, X_public=X_public
    )
    assert kt.teacher_params_ == {}
    (used,) = RecordingTeacher.fitted_with
    assert used["n_estimators"] == 50
    assert isinstance(used["mechanism"], AdaptiveRange)
    assert used["estimator"].alpha == 3.0


def test_other_private_regressors_are_not_resolved(data):
    X, y, X_public, _, _ = data
    teacher = PrivateKernelRidge(y_bound=(-300, 300), random_state=0)
    kt = KnowledgeTransferRegressor(teacher, Ridge(), n_queries=300, random_state=0)
    kt.fit(X, y, X_public=X_public)
    assert kt.teacher_params_ == {} and kt.n_public_labelled_ == 300


def test_bad_teacher_budget_is_named_before_anything_is_spent(data):
    X, y, X_public, _, _ = data
    kt = KnowledgeTransferRegressor(PrivatePredictionRegressor(epsilon=-1.0))
    with pytest.raises(ValueError, match="epsilon"):
        kt.fit(X, y, X_public=X_public)


def test_direct_answer_refusal_does_not_apply_to_a_student(data):
    # Each answer's noise would cost more R^2 than the teachers explain (k =
    # 20 teachers over a range of 600): the teacher alone refuses before
    # spending; as a student's teacher it answers (the student averages the
    # labels), and the student fits.
    X, y, X_public, _, _ = data
    teacher = _teacher(n_estimators=20, epsilon=0.5)
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="worse than a constant"):
        clone(teacher).set_params(accountant=shared).fit(X, y)
    assert shared.events == []
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*worse than a constant")
        kt = KnowledgeTransferRegressor(teacher, Ridge(), random_state=0)
        kt.fit(X, y, X_public=X_public[:400])
    assert kt.n_public_labelled_ == 400


def test_shard_rows_rule_is_the_closed_form():
    # 0.5 sqrt(n) rho^(1/4), rho the zCDP budget of (epsilon, delta),
    # rho = (sqrt(L + eps) - sqrt(L))^2 with L = ln(1/delta), at least 10 rows.
    for n, epsilon, delta in [
        (44_940, 1.0, 1e-5),
        (150_000, 0.5, 1e-6),
        (2_000, 8.0, 1e-5),
    ]:
        log_inv = np.log(1 / delta)
        rho = (np.sqrt(log_inv + epsilon) - np.sqrt(log_inv)) ** 2
        expected = max(10, round(0.5 * np.sqrt(n) * rho**0.25))
        assert (
            knowledge_transfer_shard_rows(n_samples=n, epsilon=epsilon, delta=delta)
            == expected
        )
    # More budget or more rows: larger shards; delta = 0 reads epsilon^2 / 2.
    rows = [
        knowledge_transfer_shard_rows(n_samples=44_940, epsilon=e, delta=1e-5)
        for e in (0.5, 1.0, 2.0, 8.0)
    ]
    assert rows == sorted(rows) and rows[0] < rows[-1]
    assert knowledge_transfer_shard_rows(
        n_samples=40_000, epsilon=1.0, delta=0.0
    ) == round(0.5 * 200 * 0.5**0.25)
    assert knowledge_transfer_shard_rows(n_samples=50, epsilon=1.0, delta=1e-5) == 10
    with pytest.raises(ValueError, match="n_samples"):
        knowledge_transfer_shard_rows(n_samples=0, epsilon=1.0, delta=1e-5)
