"""SubsampleAggregateClassifier end to end.

See docs/design.rst, "Neighbouring datasets and what epsilon covers" and
"The sparse vector stability test".

Randomised checks say what fails them with which probability; everything
else is deterministic (fixed ``random_state``, and ``noise_random_state``
where the noise must be pinned).
"""

from __future__ import annotations

import copy
import io
import math
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
from _helpers import STUMP, two_blobs
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import (
    BudgetExhaustedError,
    GNMax,
    PrivacyAccountant,
    SparseVector,
    SubsampleAggregateClassifier,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")


# -- data and helpers -----------------------------------------------------------


# Two well-separated blobs: every teacher (a stump) gets every row right.
X_TRAIN, Y_TRAIN = two_blobs(400, seed=0)
X_QUERY, Y_QUERY = two_blobs(200, seed=1)


def _model(options, params):
    """A model on the stump whose sparse vector options are ``options``
    updated by the ``SparseVector`` keys of ``params`` (the rest go to the
    estimator)."""
    names = SparseVector().get_params()
    options = {**options, **{k: params.pop(k) for k in list(params) if k in names}}
    defaults = dict(
        estimator=STUMP,
        classes=[0, 1],
        random_state=0,
        mechanism=SparseVector(**options),
    )
    defaults.update(params)
    return SubsampleAggregateClassifier(**defaults)


def _easy(**params):
    """A model whose teachers agree and whose threshold is tiny (eps = 1000).

    With 10 unanimous teachers dist = 4 while w = 0.26 and the noise scale is
    0.01 (P(noise != 0) < 1e-40): every query on the blobs passes.
    """
    params = {"n_estimators": 10, "epsilon": 1000.0, **params}
    # Abstentions asked for: these tests read the mechanism's own answers.
    options = {"max_unstable": 5, "fallback": "abstain", "unanswered": "abstain"}
    return _model(options, params)


def _hopeless(**params):
    """A model where every test fails: 5 teachers (dist <= 2), w >= 100.

    Even unanimous votes pass with probability below 1e-5 (checked by
    :func:`test_hopeless_configuration_is_what_it_claims`); the tests below
    see at most a few dozen tests of this kind, so they fail by chance with
    p < 1e-3.
    """
    params = {"n_estimators": 5, "epsilon": 1.0, **params}
    options = {"max_unstable": 3, "fallback": "abstain", "unanswered": "abstain"}
    return _model(options, params)


def _majority(model, X):
    """The non-private majority vote of the fitted teachers (ties to the lowest)."""
    votes = np.stack(
        [np.asarray(t.predict(X), dtype=np.int64) for t in model.estimators_]
    )
    counts = np.zeros((X.shape[0], len(model.classes_)), dtype=np.int64)
    for q in range(X.shape[0]):
        for v in votes[:, q]:
            counts[q, v] += 1
    return model.classes_[np.argmax(counts, axis=1)], counts


# -- the budget -----------------------------------------------------------------


def test_hopeless_configuration_is_what_it_claims():
    model = _hopeless().fit(X_TRAIN, Y_TRAIN)
    assert math.ceil(model.n_estimators_ / 2) - 1 <= 2
    # Even unanimous votes (distance <= 2) pass with negligible probability.
    assert model.privacy_mechanism_.calibration.pass_probability(2) < 1e-5


def test_max_queries_spent_abstains_on_every_further_row():
    model = _easy(max_queries=10).fit(X_TRAIN, Y_TRAIN)
    model.predict(X_QUERY[:4])
    model.predict(X_QUERY[4:10])
    status = model.budget_status()
    assert status.n_served == 10 and status.halted  # the cap is spent
    labels, abstained = model.predict(X_QUERY[10:11], return_abstained=True)
    assert labels.tolist() == [model.abstain_label_] == [-1]
    assert abstained.tolist() == [True]
    assert model.budget_status().n_served == 10  # nothing more was served


def test_model_halts_when_abstentions_reach_max_unstable():
    model = _hopeless().fit(X_TRAIN, Y_TRAIN)
    labels, abstained = model.predict(X_QUERY[:10], return_abstained=True)
    np.testing.assert_array_equal(labels, np.full(10, -1))
    assert abstained.all()
    status = model.budget_status()
    assert status.n_failed_tests == 3 and status.halted
    assert status.n_served == 3  # the third failure is the last query tested
    engine = model._serving_state_.engine.test
    assert engine.n_threshold_draws == 3  # no (T+1)-th threshold draw
    # A halted model answers nothing more: every row abstained on, free.
    labels, abstained = model.predict(X_QUERY[:1], return_abstained=True)
    assert labels.tolist() == [-1] and abstained.all()
    status = model.budget_status()
    assert status.n_failed_tests == 3 and status.n_served == 3


def test_partial_batch_returns_the_paid_answers_and_abstains_on_the_rest():
    params = dict(max_queries=5, noise_random_state=0)
    model = _easy(**params).fit(X_TRAIN, Y_TRAIN)
    labels, abstained = model.predict(X_QUERY[:8], return_abstained=True)
    # The paid answers are exactly what the same model gives for those rows.
    same = _easy(**params).fit(X_TRAIN, Y_TRAIN).predict(X_QUERY[:5])
    np.testing.assert_array_equal(labels[:5], same)
    np.testing.assert_array_equal(labels[:5], Y_QUERY[:5])
    np.testing.assert_array_equal(labels[5:], [model.abstain_label_] * 3)
    np.testing.assert_array_equal(abstained, [False] * 5 + [True] * 3)
    status = model.budget_status()
    assert status.n_served == 5 and status.halted  # nothing beyond the cap


def test_fit_resets_the_budget():
    model = _easy(max_queries=6).fit(X_TRAIN, Y_TRAIN)
    model.predict(X_QUERY[:6])
    assert model.predict(X_QUERY[:1], return_abstained=True)[1].all()
    assert model.budget_status().halted
    first_accountant = model.accountant_
    model.fit(X_TRAIN, Y_TRAIN)
    np.testing.assert_array_equal(model.predict(X_QUERY[:6]), Y_QUERY[:6])
    assert model.budget_status().n_served == 6
    # A new release with its own budget, spent once.
    assert model.accountant_ is not first_accountant
    assert model.accountant_.spent == first_accountant.spent

    halted = _hopeless().fit(X_TRAIN, Y_TRAIN)
    halted.predict(X_QUERY[:10])
    assert halted.budget_status().halted
    halted.fit(X_TRAIN, Y_TRAIN)
    status = halted.budget_status()
    assert status.n_failed_tests == 0 and not status.halted
    labels = halted.predict(X_QUERY[:2])  # two failures, below T = 3
    np.testing.assert_array_equal(labels, [-1, -1])


def test_an_exhausted_model_answers_the_rest_with_abstain_label():
    model = _easy(max_queries=5).fit(X_TRAIN, Y_TRAIN)
    labels, abstained = model.predict(X_QUERY[:8], return_abstained=True)
    np.testing.assert_array_equal(labels[:5], Y_QUERY[:5])
    np.testing.assert_array_equal(labels[5:], [-1, -1, -1])
    np.testing.assert_array_equal(abstained, [False] * 5 + [True] * 3)
    labels, abstained = model.predict(X_QUERY[:3], return_abstained=True)
    np.testing.assert_array_equal(labels, [-1, -1, -1])
    assert abstained.all()
    assert model.budget_status().n_served == 5
    # Without return_abstained: the labels alone.
    assert model.predict(X_QUERY[:2]).tolist() == [-1, -1]

    # Halting at T: the failed tests and everything after are abstentions.
    model = _hopeless().fit(X_TRAIN, Y_TRAIN)
    labels, abstained = model.predict(X_QUERY[:10], return_abstained=True)
    assert (labels == -1).all() and abstained.all()
    assert model.budget_status().halted


def test_exhausted_with_noisy_max_fallback_and_string_labels():
    y = np.array(["ham", "spam"])[Y_TRAIN]
    model = _easy(
        fallback="noisy_max",
        classes=["ham", "spam"],
        max_queries=4,
    ).fit(X_TRAIN, y)
    assert model.abstain_label_ == "abstain"
    labels, abstained = model.predict(X_QUERY[:6], return_abstained=True)
    assert labels[4:].tolist() == ["abstain", "abstain"]
    assert abstained.tolist() == [False] * 4 + [True] * 2
    assert labels[:4].tolist() == np.array(["ham", "spam"])[Y_QUERY[:4]].tolist()


@pytest.mark.parametrize(
    "fallback, estimator", [("abstain", None), ("noisy_max", STUMP)]
)
def test_agreeing_teachers_and_large_budget_give_the_exact_majority(
    fallback, estimator
):
    y = np.array(["cat", "dog"])[Y_TRAIN]
    model = SubsampleAggregateClassifier(
        estimator,
        n_estimators=20,  # 20 rows each; unanimous: dist = 9 >> w
        epsilon=1000.0,
        mechanism=SparseVector(max_unstable=1, fallback=fallback),
        classes=["cat", "dog"],
        random_state=0,
    ).fit(X_TRAIN, y)
    assert model.threshold_ < 1
    majority, counts = _majority(model, X_QUERY)
    # The teachers agree (so a pass is certain), and the answers are their
    # majority, exactly.
    assert counts.max(axis=1).min() >= 19
    labels, abstained = model.predict(X_QUERY, return_abstained=True)
    assert not abstained.any()
    np.testing.assert_array_equal(labels, majority)
    np.testing.assert_array_equal(labels, np.array(["cat", "dog"])[Y_QUERY])
    assert model.budget_status().n_failed_tests == 0


# -- shared accountant ------------------------------------------------------------


def test_shared_accountant_sees_every_fit_of_a_grid_search():
    accountant = PrivacyAccountant(epsilon=1000.0, delta=0.01)
    base = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=5,
        mechanism=SparseVector(max_unstable=10),
        classes=[0, 1],
        accountant=accountant,
        random_state=0,
    )  # fallback="noisy_max", composed with the test: one event per fit
    assert clone(base).accountant is accountant
    grid = GridSearchCV(base, {"epsilon": [1, 2, 4, 8]}, cv=3, n_jobs=1)
    grid.fit(X_TRAIN, Y_TRAIN)
    events = accountant.events
    n_fits = 4 * 3 + 1  # every candidate on every split, and the refit
    assert len(events) == n_fits
    assert {e.kind for e in events} == {"approximate"}
    best = grid.best_params_["epsilon"]
    expected_epsilon = 3 * (1 + 2 + 4 + 8) + best
    assert math.isclose(accountant.spent[0], expected_epsilon, rel_tol=1e-9)
    assert math.isclose(accountant.spent[1], n_fits * 1e-5, rel_tol=1e-9)
    assert grid.best_estimator_.accountant_ is accountant


def test_fit_beyond_a_shared_budget_raises_before_training():
    accountant = PrivacyAccountant(epsilon=1.5, delta=1e-3)
    first = _hopeless(accountant=accountant).fit(X_TRAIN, Y_TRAIN)
    spent = accountant.spent
    assert math.isclose(spent[0], 1.0)
    second = _hopeless(accountant=accountant)
    with pytest.raises(BudgetExhaustedError, match="accountant"):
        second.fit(X_TRAIN, Y_TRAIN)
    assert accountant.spent == spent
    assert not hasattr(second, "estimators_")  # nothing trained
    with pytest.raises(NotFittedError):
        second.predict(X_QUERY[:1])
    # The first model still serves.
    labels = first.predict(X_QUERY[:2])
    assert labels.tolist() == [-1, -1]


# -- scikit-learn integration -----------------------------------------------------


def test_pipeline_with_scaler():
    # The default estimator (LogisticRegression) behind a scaler.
    private = _easy(estimator=None, max_unstable=20)
    pipe = Pipeline([("scale", StandardScaler()), ("private", private)])
    pipe.fit(X_TRAIN, Y_TRAIN)
    np.testing.assert_array_equal(pipe.predict(X_QUERY[:50]), Y_QUERY[:50])
    assert pipe.score(X_QUERY[50:100], Y_QUERY[50:100]) == 1.0
    assert pipe.named_steps["private"].n_features_in_ == 2


def test_grid_search_over_epsilon_with_exhausted_candidates_completes():
    base = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=5,
        mechanism=SparseVector(max_unstable=3, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
    )
    grid = GridSearchCV(base, {"epsilon": [1, 2, 4, 8]}, cv=3).fit(X_TRAIN, Y_TRAIN)
    scores = grid.cv_results_["mean_test_score"]
    assert scores.shape == (4,) and np.isfinite(scores).all()
    assert grid.best_params_["epsilon"] in (1, 2, 4, 8)
    # Abstentions score as errors; the refitted model answers (or abstains).
    assert grid.predict(X_QUERY[:5]).shape == (5,)


def test_cross_val_score():
    scores = cross_val_score(_easy(max_unstable=20), X_TRAIN, Y_TRAIN, cv=3)
    assert scores.shape == (3,)
    assert (scores == 1.0).all()


def test_pandas_input_sets_feature_names():
    frame = pd.DataFrame(X_TRAIN, columns=["height", "weight"])
    model = _easy().fit(frame, pd.Series(Y_TRAIN))
    np.testing.assert_array_equal(model.feature_names_in_, ["height", "weight"])
    assert model.n_features_in_ == 2
    query = pd.DataFrame(X_QUERY[:10], columns=["height", "weight"])
    np.testing.assert_array_equal(model.predict(query), Y_QUERY[:10])
    with pytest.raises(ValueError, match="feature names"):
        model.predict(pd.DataFrame(X_QUERY[:2], columns=["weight", "height"]))
    assert model.budget_status().n_served == 10


def test_n_jobs_does_not_change_the_teachers():
    params = dict(
        estimator=DecisionTreeClassifier(max_features=1, max_depth=3),
        n_estimators=6,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
        epsilon=1000.0,
        mechanism=SparseVector(max_unstable=50),
    )
    X = X_TRAIN + np.random.default_rng(0).normal(scale=4.0, size=X_TRAIN.shape)
    serial = SubsampleAggregateClassifier(n_jobs=1, **params).fit(X, Y_TRAIN)
    parallel = SubsampleAggregateClassifier(n_jobs=2, **params).fit(X, Y_TRAIN)
    for a, b in zip(serial.estimators_, parallel.estimators_, strict=True):
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
    # The seeds matter (the trees differ from each other), and with the same
    # pinned noise the two models give the same answers.
    assert len({t.tree_.threshold[0] for t in serial.estimators_}) > 1
    np.testing.assert_array_equal(serial.predict(X[:30]), parallel.predict(X[:30]))


# -- copies and refits do not replay the noise ----------------------------------


class CutTeacher(ClassifierMixin, BaseEstimator):
    """Votes for the last class when feature 0 exceeds a cut drawn from its seed.

    With many teachers the share of votes for the last class at a query v is
    the share of cuts below v, so the vote gap (and dist) is a knob.
    """

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.cut_ = np.random.RandomState(self.random_state).uniform()
        return self

    def predict(self, X):
        X = np.asarray(X)
        return np.where(X[:, 0] > self.cut_, self.classes_[-1], self.classes_[0])


def _near_threshold_setup(noise_random_state):
    """101 teachers, w = 26, noise scales about 1.5: queries whose dist is w.

    eps = 200, T = 100 (Laplace noise, the optimal composition: w = 26,
    threshold and query scales 1.42 and 1.53); the noisy comparison has a
    standard deviation of about 3, so at dist = w each test is close to a
    coin flip, and T = 100 failures allow about 200 random decisions per 300
    queries.
    """
    rng = np.random.default_rng(0)
    n = 2020  # 20 rows per shard
    X = np.column_stack([rng.uniform(size=n), rng.normal(size=n)])
    y = rng.integers(0, 2, size=n)
    model = SubsampleAggregateClassifier(
        CutTeacher(),
        n_estimators=101,
        epsilon=200.0,
        mechanism=SparseVector(max_unstable=100, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
        noise_random_state=noise_random_state,
    )
    model.fit(X, y)
    w = model.threshold_
    assert model.calibration_ == "laplace" and w == 26
    assert 1 < model.noise_scale_ < 2 and 1 < model.query_noise_scale_ < 2
    grid = np.column_stack([np.linspace(0, 1, 2001), np.zeros(2001)])
    counts = _majority(model, grid)[1]
    gap = np.abs(counts[:, 1] - counts[:, 0])
    dist = np.maximum(0, (gap + 1) // 2 - 1)
    v = grid[np.argmin(np.abs(dist - w))]
    assert abs(dist[np.argmin(np.abs(dist - w))] - w) <= 1
    return model, np.tile(v, (300, 1)), (X, y)


def _decisions(model, queries):
    # The mechanism's own decisions (answered or not), whoever fills the rest.
    return model.predict(queries, return_source=True)[1] != "private"


def test_copies_do_not_replay_the_noise():
    """Pickled/deepcopied copies answer near-threshold queries with fresh noise.

    Two independent runs agree on all of ~200 near-coin-flip decisions with
    probability far below 1e-12; a replay agrees always (the control below).
    """
    model, queries, _ = _near_threshold_setup(noise_random_state=None)
    copies = [
        pickle.loads(pickle.dumps(model)),
        copy.deepcopy(model),
        pickle.loads(pickle.dumps(model)),
    ]
    decisions = [_decisions(c, queries) for c in copies]
    original = _decisions(model, queries)
    # The queries really are near the threshold: the runs both answer and
    # abstain. One run's abstentions vary widely with its noise (300 unseeded
    # runs of a copy: 5 to 221 of 300, 1st percentile 8), so the check reads
    # all four runs: they are all 0 or all 300 together with probability
    # below 1e-8 (each below 1e-2 on that sample).
    everything = np.concatenate([original, *decisions])
    assert 0 < everything.sum() < everything.size
    assert not np.array_equal(decisions[0], decisions[2])
    assert not np.array_equal(decisions[0], decisions[1])
    assert not np.array_equal(decisions[0], original)

    # Control: with a pinned noise seed the copies do replay (so the check
    # above can fail), which is why noise_random_state is for tests only.
    pinned, queries, _ = _near_threshold_setup(noise_random_state=0)
    copies = [pickle.loads(pickle.dumps(pinned)), copy.deepcopy(pinned)]
    replayed = [_decisions(c, queries) for c in copies]
    original = _decisions(pinned, queries)
    np.testing.assert_array_equal(replayed[0], original)
    np.testing.assert_array_equal(replayed[1], original)


def test_refits_release_different_noise():
    """Two fits with random_state=0: same teachers, different noise (p < 1e-12)."""
    model, queries, (X, y) = _near_threshold_setup(noise_random_state=None)
    first = _decisions(model, queries)
    refit = clone(model).fit(X, y)
    cuts = [t.cut_ for t in model.estimators_]
    assert [t.cut_ for t in refit.estimators_] == cuts  # the same teachers
    assert not np.array_equal(_decisions(refit, queries), first)

    pinned, queries, (X, y) = _near_threshold_setup(noise_random_state=0)
    again = clone(pinned).fit(X, y)
    np.testing.assert_array_equal(
        _decisions(pinned, queries), _decisions(again, queries)
    )


def test_joblib_dump_load_with_own_accountant():
    model = _easy(max_queries=20).fit(X_TRAIN, Y_TRAIN)
    model.predict(X_QUERY[:5])
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    loaded = joblib.load(buffer)
    assert loaded.accountant_ is not model.accountant_
    assert loaded.accountant_.spent == model.accountant_.spent
    # The copy never replays the original's noisy threshold: it draws a
    # fresh one and charges it as a failed test (its own budget).
    before, after = model.budget_status(), loaded.budget_status()
    assert after.n_served == before.n_served
    assert after.n_failed_tests == before.n_failed_tests + 1
    np.testing.assert_array_equal(loaded.predict(X_QUERY[5:15]), Y_QUERY[5:15])
    assert loaded.budget_status().n_served == 15
    assert model.budget_status().n_served == 5  # the copy is separate
    np.testing.assert_array_equal(loaded.classes_, model.classes_)


# -- bad input ----------------------------------------------------------------------


@pytest.fixture
def accountant():
    """A shared budget that has already been drawn on."""
    acc = PrivacyAccountant(epsilon=1e4, delta=0.5)
    acc.spend(3.0, 1e-4)
    return acc


def _x_with(value):
    X = X_TRAIN.copy()
    X[7, 1] = value
    return X


BAD_FITS = {
    # A teacher that refuses NaN (the stump takes it: tests/test_inputs.py).
    "nan in X": (
        {"estimator": LogisticRegression()},
        _x_with(np.nan),
        Y_TRAIN,
        ValueError,
        r"\bX\b.*NaN",
    ),
    "inf in X": ({}, _x_with(np.inf), Y_TRAIN, ValueError, r"\bX\b.*infinity"),
    "-inf in X": ({}, _x_with(-np.inf), Y_TRAIN, ValueError, r"\bX\b.*infinity"),
    "nan in y": (
        {},
        X_TRAIN,
        np.where(np.arange(400) == 3, np.nan, Y_TRAIN),
        ValueError,
        r"\by\b.*NaN",
    ),
    "epsilon 0": ({"epsilon": 0.0}, X_TRAIN, Y_TRAIN, ValueError, "epsilon"),
    "epsilon < 0": ({"epsilon": -1.0}, X_TRAIN, Y_TRAIN, ValueError, "epsilon"),
    "epsilon inf": ({"epsilon": math.inf}, X_TRAIN, Y_TRAIN, ValueError, "epsilon"),
    "epsilon nan": ({"epsilon": math.nan}, X_TRAIN, Y_TRAIN, ValueError, "epsilon"),
    "delta 0": ({"delta": 0.0}, X_TRAIN, Y_TRAIN, ValueError, "delta"),
    "delta 1": ({"delta": 1.0}, X_TRAIN, Y_TRAIN, ValueError, "delta"),
    "delta < 0": ({"delta": -1e-5}, X_TRAIN, Y_TRAIN, ValueError, "delta"),
    "max_unstable 0": (
        {"max_unstable": 0},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "max_unstable",
    ),
    "n_estimators > rows": (
        {"n_estimators": 401},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "n_estimators",
    ),
    "n_estimators 0": (
        {"n_estimators": 0},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "n_estimators",
    ),
    "unknown fallback": (
        {"fallback": "vote"},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "fallback",
    ),
    "unknown noise": (
        {"noise": "magic"},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "noise",
    ),
    "unknown mechanism": (
        {"mechanism": "gnmax"},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "mechanism",
    ),
    "another estimator's mechanism": (
        {"mechanism": GNMax()},
        X_TRAIN,
        Y_TRAIN,
        TypeError,
        "mechanism",
    ),
    "noisy_max_share 1": (
        {"fallback": "noisy_max", "noisy_max_share": 1.0},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "noisy_max_share",
    ),
    "labels outside classes": (
        {"classes": [0, 2]},
        X_TRAIN,
        Y_TRAIN,
        ValueError,
        "classes",
    ),
    "regression target": (
        {},
        X_TRAIN,
        Y_TRAIN + np.linspace(0, 0.5, 400),
        ValueError,
        r"\by\b",
    ),
    "empty X": ({}, X_TRAIN[:0], Y_TRAIN[:0], ValueError, r"\bX\b"),
}


@pytest.mark.parametrize("case", sorted(BAD_FITS))
def test_bad_input_is_rejected_before_any_spend(case, accountant):
    params, X, y, error, match = BAD_FITS[case]
    spent, n_events = accountant.spent, len(accountant.events)
    model = _easy(accountant=accountant, **params)
    with pytest.raises(error, match=match):
        model.fit(X, y)
    assert accountant.spent == spent
    assert len(accountant.events) == n_events
    assert not hasattr(model, "estimators_")


def test_wrong_feature_count_at_predict(accountant):
    model = _easy(accountant=accountant).fit(X_TRAIN, Y_TRAIN)
    model.predict(X_QUERY[:3])
    status, spent = model.budget_status(), accountant.spent
    with pytest.raises(ValueError, match=r"\bX\b.*3 features"):
        model.predict(np.hstack([X_QUERY[:4], X_QUERY[:4, :1]]))
    with pytest.raises(ValueError, match=r"\bX\b.*1 features"):
        model.predict(X_QUERY[:4, :1])
    assert model.budget_status() == status
    assert accountant.spent == spent


@pytest.mark.parametrize(
    "X, match",
    [
        (np.where(np.arange(8)[:, None] == 2, np.nan, X_QUERY[:8]), r"\bX\b.*NaN"),
        (np.where(np.arange(8)[:, None] == 2, np.inf, X_QUERY[:8]), r"\bX\b.*infinity"),
        (X_QUERY[:0], r"\bX\b"),
    ],
    ids=["nan", "inf", "empty"],
)
def test_bad_queries_leave_the_counters_unchanged(X, match):
    # Teachers that refuse NaN: a NaN query is refused before anything moves.
    model = _easy(estimator=LogisticRegression()).fit(X_TRAIN, Y_TRAIN)
    model.predict(X_QUERY[:3])
    status = model.budget_status()
    with pytest.raises(ValueError, match=match):
        model.predict(X)
    assert model.budget_status() == status


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        _easy().predict(X_QUERY[:2])
