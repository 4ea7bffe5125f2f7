"""Abstentions are visible in scores; copies and other processes are named.

* ``score`` on a model that abstained warns (``AbstentionWarning``) with the
  count, also through a Pipeline; a model that did not abstain is silent.
* ``make_abstention_scorer`` gives ``GridSearchCV`` over epsilon the answered
  fraction beside the score, from one ``predict`` per fold.
* The first copy (pickle, deepcopy) of a fitted model served in memory warns
  once with ``BudgetCopyWarning`` (a ``PrivacyLeakWarning``); a model kept in
  a ledger, or released at fit, does not warn.
* ``GridSearchCV(n_jobs=2)`` with a shared in-memory accountant fails with an
  error whose first line names ``PrivacyLedger``; with a ``PrivacyLedger``
  it runs and every fit is charged to it.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest
from _helpers import STUMP, two_blobs
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpsklearn import (
    AbstentionWarning,
    BudgetCopyWarning,
    ExponentialMechanismERM,
    KnowledgeTransferClassifier,
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivacyLedger,
    PrivatePredictionClassifier,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.metrics import make_abstention_scorer, predict_with_abstentions

pytestmark = pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning")

X, Y = two_blobs(600, seed=0)
X_Q, Y_Q = two_blobs(200, seed=1)


def halting_model(max_unstable=3, **params):
    """Abstains once its T = 3 failed tests are spent (epsilon too small to pass)."""
    defaults = dict(
        estimator=STUMP,
        n_estimators=20,
        epsilon=0.5,
        mechanism=SparseVector(max_unstable=max_unstable, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    return SubsampleAggregateClassifier(**{**defaults, **params})


def test_score_warns_with_the_count_of_abstentions():
    model = halting_model().fit(X, Y)
    with pytest.warns(AbstentionWarning, match=r"abstained on 200 of 200 rows"):
        score = model.score(X_Q, Y_Q)
    assert score == 0.0  # every row answered with abstain_label
    status = model.budget_status()
    # T = 3 failed tests were released; the rest is the halted model's free
    # padding with abstain_label, which the score counted as answers. No
    # answer was released, so no student could answer: all 200 abstained.
    assert status.halted and status.n_served == 3
    assert status.n_abstained == 200 and status.n_student == 0


def test_score_through_a_pipeline_warns():
    pipe = make_pipeline(StandardScaler(), halting_model()).fit(X, Y)
    with pytest.warns(AbstentionWarning, match=r"of 50 rows"):
        pipe.score(X_Q[:50], Y_Q[:50])
    labels, abstained = predict_with_abstentions(pipe, X_Q[50:60])
    assert abstained.all() and (labels == -1).all()


def test_a_model_that_answers_scores_without_a_warning():
    model = halting_model(epsilon=1000.0).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AbstentionWarning)
        assert model.score(X_Q, Y_Q) > 0.95


def test_soft_label_score_warns_about_fallback_answers():
    model = SoftLabelPrivateRegressor(
        STUMP,
        n_estimators=20,
        epsilon=0.5,
        mechanism=SoftLabelHistogram(max_unstable=2, gamma=0.25),
        random_state=0,
        noise_random_state=0,
    ).fit(X, Y)
    with pytest.warns(AbstentionWarning, match="fallback value"):
        model.score(X_Q[:30], Y_Q[:30])


def test_grid_search_shows_the_answered_fraction_beside_the_score():
    search = GridSearchCV(
        halting_model(max_unstable=20),
        {"epsilon": [0.5, 1000.0]},
        cv=3,
        scoring=make_abstention_scorer(),
        refit="score",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, Y)
    answered = search.cv_results_["mean_test_answered"]
    score = search.cv_results_["mean_test_score"]
    score_answered = search.cv_results_["mean_test_score_answered"]
    # epsilon 0.5: the model halts after 20 failed tests and abstains on the
    # rest; epsilon 1000: every row passes. The score alone hid why.
    assert answered[0] < 0.2 and answered[1] == 1.0
    assert score[0] < 0.2 and score[1] > 0.95
    assert score_answered[1] == score[1]
    assert search.best_params_ == {"epsilon": 1000.0}


def test_the_scorer_reads_one_predict_per_call():
    model = halting_model(epsilon=1000.0, max_queries=60).fit(X, Y)
    result = make_abstention_scorer()(model, X_Q[:60], Y_Q[:60])
    assert model.budget_status().query_units_spent == 60
    assert result["answered"] == 1.0 and result["score"] == result["score_answered"]


def test_the_scorer_on_a_model_that_never_abstains():
    model = PrivatePredictionClassifier(
        STUMP, n_estimators=10, max_queries=100, classes=[0, 1], random_state=0
    ).fit(X, Y)
    result = make_abstention_scorer("accuracy")(model, X_Q[:40], Y_Q[:40])
    assert result["answered"] == 1.0


# -- copies ---------------------------------------------------------------------


def _fitted_pp(**params):
    return PrivatePredictionClassifier(
        STUMP,
        n_estimators=10,
        max_queries=100,
        classes=[0, 1],
        random_state=0,
        **params,
    ).fit(X, Y)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_the_first_copy_of_a_fitted_model_warns_once(how):
    model = _fitted_pp()
    assert issubclass(BudgetCopyWarning, PrivacyLeakWarning)
    make_copy = copy.deepcopy if how == "deepcopy" else (
        lambda m: pickle.loads(pickle.dumps(m))
    )
    with pytest.warns(BudgetCopyWarning, match="second, independent budget"):
        twin = make_copy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetCopyWarning)
        make_copy(model)  # once per model
    # The warning is true: the copy answers from its own budget.
    model.predict(X_Q[:100])
    assert twin.budget_status().query_units_spent == 0
    assert twin.predict(X_Q[100:200]).shape == (100,)


def test_a_model_in_a_ledger_or_released_at_fit_copies_silently(tmp_path):
    ledger = PrivacyLedger(tmp_path / "budget.sqlite", 5.0, 1e-3)
    in_ledger = _fitted_pp(accountant=ledger)
    released = ExponentialMechanismERM(classes=[0, 1], noise_random_state=0).fit(X, Y)
    unfitted = halting_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetCopyWarning)
        for model in (in_ledger, released, unfitted):
            copy.deepcopy(model)
            pickle.loads(pickle.dumps(model))


# -- other processes -------------------------------------------------------------


def test_grid_search_in_processes_with_a_shared_accountant_names_the_ledger():
    shared = PrivacyAccountant(10.0, 1e-3)
    model = halting_model(accountant=shared)
    search = GridSearchCV(model, {"epsilon": [0.5, 1.0]}, cv=2, n_jobs=2)
    with pytest.raises(TypeError) as info:
        search.fit(X, Y)
    assert str(info.value).splitlines()[0].startswith("PrivacyLedger needed")
    assert shared.events == []  # nothing was spent anywhere


def test_an_unfitted_copy_with_a_shared_accountant_refuses_to_serve():
    shared = PrivacyAccountant(10.0, 1e-3)
    model = halting_model(accountant=shared)
    assert copy.deepcopy(model).accountant is shared  # same process: shared
    twin = pickle.loads(pickle.dumps(model))
    with pytest.raises(TypeError, match="^PrivacyLedger needed"):
        twin.fit(X, Y)
    with pytest.raises(TypeError, match="^PrivacyLedger needed"):
        twin.set_params(epsilon=2.0)
    twin.set_params(accountant=None)  # a budget of its own is fine
    kt = pickle.loads(pickle.dumps(KnowledgeTransferClassifier(model)))
    with pytest.raises(TypeError, match="^PrivacyLedger needed"):
        kt.set_params(n_rounds=2)
    # A fitted model with a shared accountant still refuses to be pickled.
    fitted = halting_model(accountant=shared).fit(X, Y)
    with pytest.raises(TypeError, match="PrivacyLedger"):
        pickle.dumps(fitted)


def test_grid_search_in_processes_with_a_ledger_charges_every_fit(tmp_path):
    ledger = PrivacyLedger(tmp_path / "budget.sqlite", 20.0, 1e-2)
    search = GridSearchCV(
        halting_model(accountant=ledger), {"epsilon": [0.5, 1.0]}, cv=2, n_jobs=2
    )
    search.fit(X, Y)
    # 2 candidates x 2 folds in the workers, and the refit here.
    refit = search.best_params_["epsilon"]
    assert ledger.spent_basic[0] == pytest.approx(2 * (0.5 + 1.0) + refit)
