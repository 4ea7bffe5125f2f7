"""The 0.2 estimator API: mechanisms as parameter objects, abstentions, checks.

* The options objects (:mod:`dpsklearn.mechanisms`, re-exported from
  :mod:`dpsklearn`) are scikit-learn parameter objects: ``get_params``,
  ``set_params``, ``clone``; ``GridSearchCV`` searches a nested option
  (``mechanism__max_unstable``) or a list of objects, and each candidate fits
  the mechanism it was given (``mechanism_``).
* A string shorthand is the default object; anything else an estimator does
  not run is refused at ``fit`` with a message naming ``mechanism``, before
  anything is spent.
* Every public estimator has at most 12 constructor parameters.
* ``SubsampleAggregateClassifier(mechanism="auto")`` takes the mechanism
  predicted to answer the planned queries best (the student of its answers
  counted), never one whose own check says only noise can pass, with one
  warning.
* Abstentions: ``abstain_label_`` is chosen from the public label set; a
  model whose budget or ``max_queries`` is spent abstains on every further
  row (the mask, the abstention value) and reports ``halted``.
* The teacher checks refuse before anything is spent.
* ``PrivateGridSearch`` hands DataFrames to its candidates unchanged, and a
  ``KnowledgeTransferClassifier`` stops asking a teacher that has halted.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import STUMP, two_blobs
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import dpsklearn
from dpsklearn import (
    AdaptiveRange,
    ClippedMean,
    ConfidentGNMax,
    Exponential,
    GNMax,
    KnowledgeTransferClassifier,
    OutputPerturbation,
    PrivacyAccountant,
    PrivateGridSearch,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PublicPrior,
    RepeatAndSelect,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
    SufficientStatistics,
)
from dpsklearn.accounting import PureEvent
from dpsklearn.mechanisms import MechanismOptions, resolve_mechanism
from dpsklearn.planning import plan_vote_mechanisms

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

X, Y = two_blobs(600, seed=0)
X_Q, Y_Q = two_blobs(200, seed=1)
Y_REG = np.clip(X[:, 0] + X[:, 1], -10, 10)

OPTIONS = {
    SparseVector: {"max_unstable": 7, "fallback": "abstain", "noise": "laplace"},
    ConfidentGNMax: {"max_answers": 40},
    Exponential: {"target_error": 0.2},
    GNMax: {},
    ClippedMean: {"noise": "gaussian"},
    SoftLabelHistogram: {"gamma": 0.25, "max_unstable": 9, "fallback": "noisy_mean"},
    OutputPerturbation: {"release": "model", "n_components": 30, "n_shards": 2},
    AdaptiveRange: {"range_share": 0.2, "aggregate": "median", "target_std": 0.5},
    SufficientStatistics: {"n_components": 40, "shares": (0.3, 0.3, 0.4)},
    RepeatAndSelect: {"mean_runs": 3.0, "runs": "geometric", "tolerance": 1.0},
}


# -- the options objects ---------------------------------------------------------


def test_every_options_class_is_exported_and_covered():
    exported = {
        obj
        for obj in vars(dpsklearn).values()
        if isinstance(obj, type)
        and issubclass(obj, MechanismOptions)
        and obj is not MechanismOptions
    }
    # PublicPrior needs a fitted public model: tests/test_public_prior.py.
    assert exported == set(OPTIONS) | {PublicPrior}


@pytest.mark.parametrize("cls", sorted(OPTIONS, key=lambda c: c.__name__))
def test_options_are_parameter_objects(cls):
    default = cls()
    params = default.get_params()
    assert set(params) == set(inspect.signature(cls.__init__).parameters) - {
        "self",
        "args",
        "kwargs",
    }
    changed = cls(**OPTIONS[cls])
    assert changed.get_params() == {**params, **OPTIONS[cls]}
    copy = clone(changed)
    assert copy is not changed and copy.get_params() == changed.get_params()
    # set_params returns the object, changed; the original is untouched.
    assert copy.set_params(**cls().get_params()) is copy
    assert copy.get_params() == params
    assert changed.get_params() == {**params, **OPTIONS[cls]}
    # The shorthand names a class the estimators resolve to its defaults.
    resolved = resolve_mechanism(cls.shorthand, {cls.shorthand: cls}, owner="x")
    assert type(resolved) is cls and resolved.get_params() == params


@pytest.mark.parametrize(
    "options, name",
    [
        (SparseVector(noisy_max_share=2), "noisy_max_share"),
        (SparseVector(max_unstable=0), "max_unstable"),
        (SparseVector(fallback="vote"), "fallback"),
        (SparseVector(noise="pure"), "noise"),
        (SparseVector(unstable_fraction=1.5), "unstable_fraction"),
        (ConfidentGNMax(max_answers=0), "max_answers"),
        (Exponential(target_error=0.0), "target_error"),
        (ClippedMean(noise="rdp"), "noise"),
        (SoftLabelHistogram(gamma=0.6), "gamma"),
        (SoftLabelHistogram(noisy_mean_share=0.0), "noisy_mean_share"),
        (OutputPerturbation(n_components=0), "n_components"),
        (RepeatAndSelect(runs="sometimes"), "runs"),
    ],
)
def test_an_option_out_of_range_names_itself(options, name):
    with pytest.raises(ValueError, match=name):
        options.validated()


def test_an_option_out_of_range_is_refused_at_fit_before_any_spend():
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    model = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=10,
        mechanism=SparseVector(noisy_max_share=2),
        classes=[0, 1],
        accountant=shared,
    )
    with pytest.raises(ValueError, match="noisy_max_share"):
        model.fit(X, Y)
    assert shared.events == [] and not hasattr(model, "estimators_")


def _recording_scorer(seen):
    """A scorer that records the fitted mechanism options of each candidate."""

    def scorer(estimator, X_, y_):
        seen.append(estimator.mechanism_)
        return float(np.mean(estimator.predict(X_) == y_))

    return scorer


def test_grid_search_over_a_nested_option():
    seen = []
    base = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=10,
        epsilon=1000.0,
        mechanism=SparseVector(fallback="abstain"),
        classes=[0, 1],
        random_state=0,
    )
    search = GridSearchCV(
        base,
        {"mechanism__max_unstable": [3, 11]},
        cv=2,
        scoring=_recording_scorer(seen),
    ).fit(X, Y)
    assert sorted(options.max_unstable for options in seen) == [3, 3, 11, 11]
    assert all(options.fallback == "abstain" for options in seen)
    assert search.best_estimator_.mechanism_.max_unstable in (3, 11)
    # The searched object itself was never changed.
    assert base.mechanism.max_unstable == 100


def test_grid_search_over_mechanisms():
    seen = []
    base = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=20,
        epsilon=1000.0,
        max_queries=400,
        classes=[0, 1],
        random_state=0,
    )
    search = GridSearchCV(
        base,
        {"mechanism": [SparseVector(), ConfidentGNMax()]},
        cv=2,
        scoring=_recording_scorer(seen),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, Y)
    kinds = sorted(type(options).__name__ for options in seen)
    assert kinds == ["ConfidentGNMax"] * 2 + ["SparseVector"] * 2
    # Each fitted the mechanism it was given: its calibrated engine agrees.
    for params in search.cv_results_["params"]:
        model = clone(base).set_params(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.fit(X, Y)
        assert type(model.mechanism_) is type(params["mechanism"])
        released = type(model.privacy_mechanism_).__name__
        expected = (
            "StabilityTest"
            if isinstance(params["mechanism"], SparseVector)
            else "ConfidentGNMaxRelease"
        )
        assert released == expected


# -- shorthands and refusals --------------------------------------------------------


def _classifier_data():
    return X, Y


ESTIMATORS = {
    # name: (factory(mechanism), data, shorthands, a foreign object)
    "subsample": (
        lambda m: SubsampleAggregateClassifier(
            STUMP,
            n_estimators=20,
            epsilon=8.0,
            max_queries=200,
            mechanism=m,
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        ("sparse_vector", "confident_gnmax"),
        GNMax(),
    ),
    "private prediction": (
        lambda m: PrivatePredictionClassifier(
            STUMP,
            n_estimators=10,
            max_queries=100,
            mechanism=m,
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        ("exponential", "gnmax"),
        SparseVector(),
    ),
    "private regression": (
        lambda m: PrivatePredictionRegressor(
            DecisionTreeRegressor(max_depth=2),
            n_estimators=10,
            max_queries=100,
            mechanism=m,
            target_range=(-10, 10),
            random_state=0,
        ),
        (X, Y_REG),
        ("clipped_mean", "adaptive_range"),
        SoftLabelHistogram(),
    ),
    "soft label": (
        lambda m: SoftLabelPrivateRegressor(
            DecisionTreeRegressor(max_depth=2),
            n_estimators=10,
            mechanism=m,
            target_range=(-10, 10),
            random_state=0,
        ),
        (X, Y_REG),
        ("soft_label", "clipped_mean"),
        AdaptiveRange(),
    ),
    "kernel ridge": (
        lambda m: PrivateKernelRidge(
            y_bound=10.0, max_queries=100, mechanism=m, random_state=0
        ),
        (X, Y_REG),
        ("output_perturbation", "sufficient_statistics"),
        RepeatAndSelect(),
    ),
}

FIGURES = (
    "threshold_",
    "noise_scale_",
    "epsilon_per_query_",
    "sigma_",
    "sigma_argmax_",
    "sensitivity_",
    "calibration_",
)


@pytest.mark.parametrize(
    "name, shorthand",
    [(name, s) for name, case in ESTIMATORS.items() for s in case[2]],
)
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_shorthand_is_the_default_object(name, shorthand):
    factory, (X_, y_), _, _ = ESTIMATORS[name]
    cls = type(
        resolve_mechanism(shorthand, {shorthand: _class_of(shorthand)}, owner="")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        by_name = factory(shorthand).fit(X_, y_)
        by_object = factory(cls()).fit(X_, y_)
    assert type(by_name.mechanism_) is type(by_object.mechanism_) is cls
    assert by_name.mechanism_.get_params() == by_object.mechanism_.get_params()
    for figure in FIGURES:
        if hasattr(by_object, figure):
            assert getattr(by_name, figure) == getattr(by_object, figure), figure
    # The fitted mechanism_ is a copy: the estimator's parameter is unchanged.
    assert by_name.mechanism == shorthand


def _class_of(shorthand):
    return next(cls for cls in OPTIONS if cls.shorthand == shorthand)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_an_unknown_shorthand_or_a_foreign_object_is_refused(name):
    factory, (X_, y_), shorthands, foreign = ESTIMATORS[name]
    shared = PrivacyAccountant(epsilon=50.0, delta=1e-3)
    for mechanism, error in (
        ("laplace", ValueError),
        (foreign, TypeError),
        (42, (TypeError, ValueError)),
    ):
        model = factory(mechanism).set_params(accountant=shared)
        with pytest.raises(error, match="mechanism") as info:
            model.fit(X_, y_)
        if isinstance(mechanism, str):
            # The message lists what the estimator takes.
            assert all(repr(s) in str(info.value) for s in shorthands)
        assert shared.events == []


def test_private_grid_search_refuses_a_foreign_mechanism():
    shared = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    search = PrivateGridSearch(
        _DataFrameCandidate(),
        {"threshold": [0.0]},
        mechanism=SparseVector(),
        accountant=shared,
    )
    with pytest.raises(TypeError, match="mechanism"):
        search.fit(pd.DataFrame(X, columns=["a", "b"]), Y)
    assert shared.events == []


def test_no_public_estimator_has_more_than_twelve_parameters():
    estimators = [
        obj
        for name in dpsklearn.__all__
        if isinstance(obj := getattr(dpsklearn, name), type)
        and issubclass(obj, BaseEstimator)
        and not issubclass(obj, MechanismOptions)
    ]
    # Every estimator the package exports, the search and the hypotheses
    # classes included.
    assert {
        SubsampleAggregateClassifier,
        PrivatePredictionClassifier,
        PrivateKernelRidge,
        PrivateGridSearch,
    } <= set(estimators)
    assert len(estimators) >= 12
    counts = {
        cls.__name__: len(inspect.signature(cls.__init__).parameters) - 1
        for cls in estimators
    }
    assert max(counts.values()) <= 12, counts


# -- mechanism="auto" ---------------------------------------------------------------


AUTO_WARNING = "mechanism='auto' chose"


def test_auto_never_takes_what_only_noise_can_pass():
    # 6,400 rows at epsilon 1 (a fold of 8,000 Adult rows): Confident-GNMax
    # with max_answers=1000 has a vote threshold above the k = 320 teachers
    # and the stability test cannot pass; "auto" used to take the first.
    plans = plan_vote_mechanisms(6_400, 2, 1.0, 1e-5, 1000)
    hopeless = {(p.mechanism, p.max_answers) for p in plans if p.hopeless}
    assert ("confident_gnmax", 1000) in hopeless
    assert ("sparse_vector", None) in hopeless
    assert not plans[0].hopeless
    assert all(p.hopeless for p in plans[-len(hopeless) :])
    model = SubsampleAggregateClassifier(STUMP, epsilon=1.0, classes=[0, 1])
    rng = np.random.default_rng(0)
    X_fold = rng.normal(size=(6_400, 2))
    y_fold = (X_fold[:, 0] > 0).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_fold, y_fold)
    said = [w for w in caught if AUTO_WARNING in str(w.message)]
    assert len(said) == 1
    assert "only noise can pass" in str(said[0].message)
    assert isinstance(model.mechanism_, Exponential)
    assert model.mechanism == "auto"
    # The exponential mechanism as PrivatePredictionClassifier runs it.
    twin = PrivatePredictionClassifier(STUMP, epsilon=1.0, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.fit(X_fold, y_fold)
    assert model.n_estimators_ == twin.n_estimators_
    assert model.epsilon_per_query_ == twin.epsilon_per_query_


def test_auto_takes_a_free_test_only_where_it_is_clearly_better():
    # The prior predicts the exponential mechanism's Theorem 1 teachers at
    # about 0.93 agreement; with two million rows the many teachers of the
    # stability test or Confident-GNMax are predicted more than 5 points
    # better over all planned queries, so they are taken.
    big = plan_vote_mechanisms(2_000_000, 2, 1.0, 1e-5, 1000)
    assert big[0].mechanism in {"sparse_vector", "confident_gnmax"}
    exponential = next(p for p in big if p.mechanism == "exponential")
    assert big[0].accuracy_all >= exponential.accuracy_all + 0.05
    # A fixed k is every mechanism's k.
    fixed = plan_vote_mechanisms(300_000, 2, 2.0, 1e-6, 1000, n_estimators=10_000)
    assert {p.n_estimators for p in fixed} == {10_000}


def test_auto_with_a_small_table_answers_every_row_with_one_warning():
    model = SubsampleAggregateClassifier(
        STUMP, n_estimators=30, epsilon=1.0, classes=[0, 1], random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, Y)
    auto = [w for w in caught if AUTO_WARNING in str(w.message)]
    assert len(auto) == 1
    message = str(auto[0].message)
    for name in ("confident_gnmax", "sparse_vector", "plan_vote_mechanisms"):
        assert name in message
    assert model.mechanism == "auto"
    labels, abstained = model.predict(X_Q[:20], return_abstained=True)
    assert labels.shape == (20,) and not abstained.any()


# -- abstain_label_ -----------------------------------------------------------------


@pytest.mark.parametrize(
    "classes, expected",
    [
        ([0, 1], -1),
        ([1, 2, 3], -1),
        ([-1, 2], -2),
        ([-3, -1, 5], -4),
        ([0.0, 1.0], -1.0),
        ([-1.0, 2.0], -2.0),
        (["no", "yes"], "abstain"),
        (["abstain", "keep"], "_abstain"),
        (["<=50K", ">50K"], "abstain"),
    ],
)
def test_abstain_label_is_chosen_from_the_public_labels(classes, expected):
    y = np.asarray(classes)[Y % len(classes)]
    model = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=5,
        epsilon=1.0,
        mechanism=SparseVector(max_unstable=3, fallback="abstain"),
        classes=classes,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    label = model.abstain_label_
    assert label == expected and type(label) is type(expected)
    assert label not in classes
    # Every test fails (5 teachers at epsilon 1): all abstained, with the
    # label, whole (a string label is not truncated to the classes' width).
    labels, abstained = model.predict(X_Q[:6], return_abstained=True)
    assert abstained.all()
    assert labels.tolist() == [expected] * 6


def test_abstain_label_of_boolean_classes_is_a_number():
    model = PrivatePredictionClassifier(
        STUMP,
        n_estimators=5,
        max_queries=2,
        mechanism=Exponential(unanswered="abstain"),
        classes=[False, True],
        random_state=0,
    ).fit(X, Y.astype(bool))
    assert model.abstain_label_ == -1
    labels, abstained = model.predict(X_Q[:3], return_abstained=True)
    assert abstained.tolist() == [False, False, True]
    assert labels[2] == -1 and set(labels[:2].tolist()) <= {0, 1}


# -- an exhausted model abstains and says it has halted -----------------------------


EXHAUSTIBLE = {
    # name: (model with max_queries=5, data, abstention value)
    "subsample sparse vector": (
        SubsampleAggregateClassifier(
            STUMP,
            n_estimators=10,
            epsilon=1000.0,
            max_queries=5,
            mechanism=SparseVector(unanswered="abstain"),
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        -1,
    ),
    "subsample confident gnmax": (
        SubsampleAggregateClassifier(
            STUMP,
            n_estimators=10,
            epsilon=1000.0,
            max_queries=5,
            mechanism=ConfidentGNMax(unanswered="abstain"),
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        -1,
    ),
    "private prediction": (
        PrivatePredictionClassifier(
            STUMP,
            n_estimators=10,
            max_queries=5,
            mechanism=Exponential(unanswered="abstain"),
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        -1,
    ),
    "private prediction gnmax": (
        PrivatePredictionClassifier(
            STUMP,
            n_estimators=10,
            max_queries=5,
            mechanism=GNMax(unanswered="abstain"),
            classes=[0, 1],
            random_state=0,
        ),
        (X, Y),
        -1,
    ),
    "private regression": (
        PrivatePredictionRegressor(
            DecisionTreeRegressor(max_depth=2),
            n_estimators=10,
            max_queries=5,
            target_range=(-10, 20),
            random_state=0,
        ),
        (X, Y_REG),
        5.0,
    ),
    "soft label": (
        SoftLabelPrivateRegressor(
            DecisionTreeRegressor(max_depth=2),
            n_estimators=10,
            max_queries=5,
            mechanism="soft_label",
            target_range=(-10, 20),
            random_state=0,
        ),
        (X, Y_REG),
        5.0,
    ),
    "kernel ridge": (
        PrivateKernelRidge(
            y_bound=10.0,
            max_queries=5,
            mechanism=OutputPerturbation(),  # answers per query (the default publishes)
            random_state=0,
        ),
        (X, Y_REG),
        0.0,
    ),
}


@pytest.mark.parametrize("name", sorted(EXHAUSTIBLE))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_spent_max_queries_abstains_and_halts(name):
    model, (X_, y_), fill = EXHAUSTIBLE[name]
    model = clone(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X_, y_)
    assert not model.budget_status().halted
    spent = model.accountant_.spent
    values, abstained = model.predict(X_Q[:8], return_abstained=True)
    # Rows 5..7 are past the cap: abstained on with the model's free value.
    assert abstained[5:].all()
    np.testing.assert_array_equal(values[5:], [fill] * 3)
    if not name.endswith("confident gnmax") and not name.startswith("soft"):
        assert not abstained[:5].any()  # these answer every paid-for row
    status = model.budget_status()
    assert status.halted and status.n_served == 5
    assert status.query_units_remaining == 0
    # Nothing more is served, and the accountant is not charged again.
    values, abstained = model.predict(X_Q[8:10], return_abstained=True)
    assert abstained.all() and model.budget_status().n_served == 5
    assert model.accountant_.spent == spent


def test_a_halted_engine_reports_halted_before_max_queries():
    model = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=5,
        epsilon=1.0,
        max_queries=100,
        mechanism=SparseVector(max_unstable=2, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, Y)
    _, abstained = model.predict(X_Q[:10], return_abstained=True)
    status = model.budget_status()
    assert abstained.all() and status.halted
    assert status.n_served == 2 < status.max_queries


# -- teacher checks before anything is spent ------------------------------------------


class _CountingTree(DecisionTreeClassifier):
    """A decision tree whose fits are counted (class-wide)."""

    fits = 0

    def fit(self, X, y, sample_weight=None, check_input=True):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


@pytest.mark.parametrize(
    "make, y, error, match",
    [
        (
            lambda acc: SubsampleAggregateClassifier(
                LinearRegression(), n_estimators=5, classes=[0, 1], accountant=acc
            ),
            Y,
            TypeError,
            "regressor",
        ),
        (
            lambda acc: PrivatePredictionClassifier(
                DecisionTreeRegressor(), n_estimators=5, classes=[0, 1], accountant=acc
            ),
            Y,
            TypeError,
            "regressor",
        ),
        (
            lambda acc: PrivatePredictionRegressor(
                _CountingTree(), n_estimators=5, target_range=(0, 1), accountant=acc
            ),
            Y.astype(float),
            TypeError,
            "classifier",
        ),
        (
            # classes=None: the label set (one class) was read from y, and the
            # refusal says so (a public `classes` would fit this y).
            lambda acc: SubsampleAggregateClassifier(
                _CountingTree(), n_estimators=5, accountant=acc
            ),
            np.zeros_like(Y),
            ValueError,
            "classes is None.*one class only",
        ),
        (
            # A public label set of one class: refused from `classes` alone.
            lambda acc: PrivatePredictionClassifier(
                _CountingTree(), n_estimators=5, classes=[1], accountant=acc
            ),
            np.ones_like(Y),
            ValueError,
            r"classes=\[1\] holds one label",
        ),
        (
            # 600 rows at 20 per shard: a leaf of 50 rows cannot be met.
            lambda acc: SubsampleAggregateClassifier(
                _CountingTree(min_samples_leaf=50),
                n_estimators=30,
                classes=[0, 1],
                accountant=acc,
            ),
            Y,
            ValueError,
            "min_samples_leaf=50",
        ),
        (
            lambda acc: PrivatePredictionClassifier(
                _CountingTree(min_samples_leaf=50), classes=[0, 1], accountant=acc
            ),
            Y,
            ValueError,
            "min_samples_leaf=50",
        ),
    ],
    ids=[
        "regressor teaching a sparse vector classifier",
        "regressor teaching a per-query classifier",
        "classifier teaching a regressor",
        "one class read from y, subsample",
        "one public class, private prediction",
        "min_samples_leaf above the shard, fixed k",
        "min_samples_leaf above the shard, auto k",
    ],
)
def test_teacher_checks_refuse_before_anything_is_spent(make, y, error, match):
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    shared.spend(1.0, 1e-5)
    before = list(shared.events)
    _CountingTree.fits = 0
    model = make(shared)
    with pytest.raises(error, match=match):
        model.fit(X, y)
    assert shared.events == before
    assert _CountingTree.fits == 0 and not hasattr(model, "estimators_")


def test_two_rows_per_teacher_warn_before_anything_is_spent():
    shared = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    _CountingTree.fits = 0
    model = SubsampleAggregateClassifier(
        _CountingTree(),
        n_estimators=300,  # 600 rows: 2 per teacher
        mechanism="sparse_vector",
        classes=[0, 1],
        accountant=shared,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings(
            "error", message=".*rows per teacher", category=UserWarning
        )
        with pytest.raises(UserWarning, match="2 rows per teacher"):
            model.fit(X, Y)
    # Raised as an error here, the warning shows it came before any spend.
    assert shared.events == [] and _CountingTree.fits == 0
    with pytest.warns(UserWarning, match="2 rows per teacher"):
        model.fit(X, Y)  # as a warning, the fit goes on
    assert model.n_estimators_ == 300 and _CountingTree.fits > 0


def test_a_stability_test_that_cannot_pass_warns_before_any_teacher_is_trained():
    # 600 rows: at most 60 teachers, so even unanimous votes (distance 29)
    # sit far below the threshold at epsilon 1. Public numbers say so: the
    # warning comes before the first teacher is fitted and before any spend.
    shared = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    _CountingTree.fits = 0
    model = SubsampleAggregateClassifier(
        _CountingTree(), mechanism="sparse_vector", classes=[0, 1], accountant=shared
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings(
            "error", message=".*unanimous votes", category=UserWarning
        )
        with pytest.raises(UserWarning, match="even unanimous votes"):
            model.fit(X, Y)
    assert shared.events == [] and _CountingTree.fits == 0


# -- PrivateGridSearch and DataFrames -----------------------------------------------


class _DataFrameCandidate(ClassifierMixin, BaseEstimator):
    """Test-only publishable candidate that records what ``fit`` was given."""

    __dpsklearn_publishable__ = True
    seen: list = []

    def __init__(self, threshold=0.0, epsilon=1.0, accountant=None):
        self.threshold = threshold
        self.epsilon = epsilon
        self.accountant = accountant

    def fit(self, X, y):
        type(self).seen.append((type(X), list(getattr(X, "columns", []))))
        self.accountant.spend_events([PureEvent(self.epsilon)])
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (np.asarray(X["a"]) > self.threshold).astype(np.int64)


def test_private_grid_search_passes_a_dataframe_to_the_candidates_unchanged():
    frame = pd.DataFrame(X, columns=["a", "b"])
    _DataFrameCandidate.seen = []
    search = PrivateGridSearch(
        _DataFrameCandidate(),
        {"threshold": [-1.0, 0.0]},
        epsilon=2.0,
        mechanism=RepeatAndSelect(mean_runs=2.0),
        random_state=0,
        noise_random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(frame, Y)
    assert _DataFrameCandidate.seen
    assert all(kind is pd.DataFrame for kind, _ in _DataFrameCandidate.seen)
    assert all(columns == ["a", "b"] for _, columns in _DataFrameCandidate.seen)
    assert search.predict(frame.iloc[:5]).shape == (5,)


def test_private_grid_search_with_a_column_transformer_by_name():
    frame = pd.DataFrame(X, columns=["height", "weight"])
    by_name = ColumnTransformer([("scaled", StandardScaler(), ["height", "weight"])])
    teacher = PrivatePredictionClassifier(
        make_pipeline(by_name, LogisticRegression()),
        max_queries=100,
        classes=[0, 1],
        random_state=0,
    )
    student = make_pipeline(clone(by_name), LogisticRegression())
    search = PrivateGridSearch(
        KnowledgeTransferClassifier(teacher, student),
        {"teacher__n_estimators": [5, 10]},
        epsilon=4.0,
        random_state=0,
        noise_random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(frame.iloc[:400], Y[:400], X_public=frame.iloc[400:])
    assert search.best_params_["teacher__n_estimators"] in (5, 10)
    predictions = search.predict(pd.DataFrame(X_Q, columns=["height", "weight"]))
    assert np.mean(predictions == Y_Q) > 0.9


# -- KnowledgeTransferClassifier stops asking a halted teacher -----------------------


def test_knowledge_transfer_stops_asking_when_its_teacher_halts():
    # Confident-GNMax halts after max_answers answers, long before its 400
    # planned queries; the student must not ask it for anything more.
    teacher = SubsampleAggregateClassifier(
        STUMP,
        n_estimators=20,
        epsilon=1000.0,
        max_queries=400,
        mechanism=ConfidentGNMax(max_answers=30),
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
    )
    kt = KnowledgeTransferClassifier(teacher, LogisticRegression())
    with pytest.warns(UserWarning, match="ran out"):
        kt.fit(X[:300], Y[:300], X_public=X[300:])
    # The teacher is dropped after fit; its counters are read from a twin
    # fitted the same way and asked the same rows in the same order.
    twin = clone(teacher)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        twin.fit(X[:300], Y[:300])
    _, abstained = twin.predict(X[300:], return_abstained=True)
    served = twin.budget_status().n_served
    assert twin.budget_status().halted and served < 300
    assert kt.n_public_labelled_ == 30
    assert kt.n_public_labelled_ + kt.n_public_abstained_ == served
    assert kt.n_public_unanswered_ == 300 - served


def test_knowledge_transfer_in_rounds_stops_at_the_teachers_cap():
    teacher = PrivatePredictionClassifier(
        STUMP, n_estimators=10, max_queries=70, classes=[0, 1], random_state=0
    )
    kt = KnowledgeTransferClassifier(
        teacher,
        LogisticRegression(),
        query_strategy="uncertainty",
        n_queries=250,
        n_rounds=5,
        random_state=0,
    )
    with pytest.warns(UserWarning, match="ran out after labelling 70"):
        kt.fit(X[:300], Y[:300], X_public=X[300:])
    # 50 rows per round: the second round pays for 20 and the rest is
    # never asked (rounds 3 to 5 are not started).
    assert kt.n_public_labelled_ == 70 and kt.n_public_abstained_ == 0
    assert kt.n_public_unanswered_ == 250 - 70
