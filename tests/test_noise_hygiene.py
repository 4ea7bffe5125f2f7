"""Noise hygiene: where mechanism noise comes from, and what copies do with it.

See docs/design.rst, "Noise primitives" and "Serving state, copies and the
ledger".

Mechanism noise comes from OS entropy at every ``fit`` unless
``noise_random_state`` is set:

* two fits with the same ``random_state=0`` (same partition, same teachers)
  and ``noise_random_state=None`` release different noise on the same
  queries;
* a copy of a fitted model (``pickle`` or ``copy.deepcopy``) reseeds its
  noise: the original and the copy, asked the same fresh queries, give
  different noisy answers (a copy that replayed the original's noise would
  let anyone cancel it, ``out_A - out_B``);
* with ``noise_random_state`` set (documented as test-only, with a
  :class:`~dpsklearn.PrivacyLeakWarning`) both replay: refits and copies
  release exactly the same values.

Every estimator that draws noise is covered: per-query noise
(``SERVING``: the release is what the model answers to a batch of fresh
queries) and fit-time noise (``FIT_TIME``: the release is the fitted model).
The noise is large against the grid of every release, so two independent
draws of a whole batch coincide with negligible probability (bounded per
case below); "different" means "not all equal".
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from _helpers import STUMP
from sklearn.tree import DecisionTreeRegressor

from dpsklearn import (
    DecisionStumps,
    ExponentialMechanismERM,
    OutputPerturbation,
    PrivacyLeakWarning,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning"),
    pytest.mark.filterwarnings("ignore:n_estimators='auto'.*:UserWarning"),
]


_RNG = np.random.default_rng(0)
N = 200
X = _RNG.normal(size=(N, 3))
Y_CLASS = (X[:, 0] + 0.5 * _RNG.normal(size=N) > 0).astype(int)
Y_REG = np.clip(X[:, 0] + 0.3 * _RNG.normal(size=N), -3, 3)
# Fresh query rows, never asked before the call that uses them.
QUERIES = _RNG.normal(size=(80, 3))
FIRST, SECOND = QUERIES[:30], QUERIES[30:]

REG_STUMP = DecisionTreeRegressor(max_depth=2)


# -- estimators that draw noise per query ------------------------------------------
# Each entry: fit(noise_random_state) -> fitted model, and release(model, rows)
# -> the noisy values released for those fresh rows.


def _pp_regressor(noise_random_state):
    # eps_q = 0.5: noise of scale 1.2 on a grid of step 2^-10 in [-3, 3]
    return PrivatePredictionRegressor(
        REG_STUMP,
        n_estimators=10,
        epsilon=100.0,
        delta=0.0,  # pure: basic composition
        max_queries=200,
        target_range=(-3.0, 3.0),
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_REG)


def _pp_classifier(noise_random_state):
    return PrivatePredictionClassifier(
        STUMP,
        n_estimators=10,
        epsilon=100.0,
        delta=0.0,  # pure: basic composition
        max_queries=200,
        classes=[0, 1],
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_CLASS)


def _kernel_ridge(noise_random_state):
    # eps_q = 5, sensitivity ~2.1: noise of scale ~0.4 in [-3, 3]
    return PrivateKernelRidge(
        alpha=0.1,
        y_bound=3.0,
        epsilon=1000.0,
        delta=0.0,  # pure: basic composition
        max_queries=200,
        # the per-query prediction release (the default publishes a model)
        mechanism=OutputPerturbation(),
        noise_random_state=noise_random_state,
    ).fit(X, Y_REG)


def _subsample_noisy_max(noise_random_state):
    # 10 teachers never reach the threshold: every query goes to the
    # noisy-max fallback at epsilon 0.5/300, a near-fair coin per label.
    return SubsampleAggregateClassifier(
        STUMP,
        n_estimators=10,
        epsilon=1.0,
        mechanism=SparseVector(max_unstable=300, fallback="noisy_max"),
        classes=[0, 1],
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_CLASS)


def _soft_label_noisy_mean(noise_random_state):
    # Both tests fail for (almost) every query: the noisy-mean fallback at
    # epsilon 0.5/100 answers lo or hi of the range, near-fair coins.
    return SoftLabelPrivateRegressor(
        REG_STUMP,
        n_estimators=10,
        epsilon=1.0,
        mechanism=SoftLabelHistogram(
            gamma=0.25, max_unstable=200, fallback="noisy_mean"
        ),
        target_range=(-3.0, 3.0),
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_REG)


def _statistical_queries(noise_random_state):
    # 200 chunks of 1 row: sensitivity 1 at epsilon 1 per answer
    return PrivateStatisticalQueries(
        n_queries=200,
        epsilon=1.0,
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_CLASS)


def _ask_means(oracle, rows):
    # one statistical query per row: the mean of a column, on the next chunk
    return np.array(
        [
            oracle.query_mean(lambda X_, y_, j=j: (X_[:, j % 3] > 0).astype(float))
            for j in range(len(rows))
        ]
    )


SERVING = {
    "PrivatePredictionRegressor.predict": (_pp_regressor, lambda m, q: m.predict(q)),
    "PrivatePredictionClassifier.predict_proba": (
        _pp_classifier,
        lambda m, q: m.predict_proba(q),
    ),
    "PrivateKernelRidge.predict": (_kernel_ridge, lambda m, q: m.predict(q)),
    "SubsampleAggregateClassifier.predict (noisy_max)": (
        _subsample_noisy_max,
        lambda m, q: m.predict(q),
    ),
    "SoftLabelPrivateRegressor.predict (noisy_mean)": (
        _soft_label_noisy_mean,
        lambda m, q: m.predict(q),
    ),
    "PrivateStatisticalQueries.query_mean": (_statistical_queries, _ask_means),
}


# -- estimators whose noise is drawn at fit (the fitted model is the release) --------


def _erm(noise_random_state):
    # random labels: the 192 stumps have nearly equal error counts, and at
    # epsilon 0.01 the choice is close to uniform over them
    y = np.random.default_rng(1).integers(0, 2, N)
    model = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(-3, 3), n_thresholds=32),
        epsilon=0.01,
        classes=[0, 1],
        noise_random_state=noise_random_state,
    ).fit(X, y)
    h = model.hypothesis_
    return np.array([h.feature, h.threshold, h.left, h.right], dtype=float)


def _kernel_ridge_model(noise_random_state):
    model = PrivateKernelRidge(
        alpha=0.1,
        y_bound=3.0,
        epsilon=1.0,
        mechanism=OutputPerturbation(release="model", n_components=20),
        random_state=0,
        noise_random_state=noise_random_state,
    ).fit(X, Y_REG)
    return model.coef_


FIT_TIME = {
    "ExponentialMechanismERM (chosen stump)": _erm,
    "PrivateKernelRidge release='model' (noisy weights)": _kernel_ridge_model,
}

COPIERS = {
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "deepcopy": copy.deepcopy,
}


def _fit_unseeded(fit):
    with warnings.catch_warnings():
        # Leak warnings of inferred bounds are beside the point; but an
        # unseeded fit must never warn that its noise is replayable.
        warnings.simplefilter("error", PrivacyLeakWarning)
        return fit(None)


def _fit_seeded(fit, seed):
    with pytest.warns(PrivacyLeakWarning, match="noise_random_state"):
        return fit(seed)


def _differ(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    return not np.array_equal(a, b)


# -- noise_random_state=None: fresh noise everywhere -----------------------------------


@pytest.mark.parametrize("name", list(SERVING))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_refits_with_the_same_random_state_release_different_noise(name):
    fit, release = SERVING[name]
    first, second = _fit_unseeded(fit), _fit_unseeded(fit)
    assert _differ(release(first, QUERIES), release(second, QUERIES)), name


@pytest.mark.parametrize("name", list(FIT_TIME))
def test_refits_draw_fresh_fit_time_noise(name):
    fit = FIT_TIME[name]
    # ERM: P(two near-uniform draws over 192 stumps agree) ~ 1/192, so draw
    # four times; all four agree with probability ~ 192^-3.
    releases = [_fit_unseeded(fit) for _ in range(4)]
    assert any(_differ(releases[0], r) for r in releases[1:]), name


@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_refits_keep_the_partition_and_the_teachers():
    # What differs between the refits above is the noise only: random_state
    # fixes the partition and the teachers.
    first, second = _fit_unseeded(_pp_regressor), _fit_unseeded(_pp_regressor)
    for a, b in zip(first.estimators_, second.estimators_, strict=True):
        np.testing.assert_array_equal(a.predict(QUERIES), b.predict(QUERIES))


@pytest.mark.parametrize("copier", list(COPIERS))
@pytest.mark.parametrize("name", list(SERVING))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_copy_does_not_replay_the_originals_noise(name, copier):
    fit, release = SERVING[name]
    original = _fit_unseeded(fit)
    release(original, FIRST)  # a model that has already served
    duplicate = COPIERS[copier](original)
    assert _differ(release(original, SECOND), release(duplicate, SECOND)), name


# -- noise_random_state set: replayable (for tests only) ----------------------------


@pytest.mark.parametrize("name", list(SERVING))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_seeded_noise_replays_across_refits(name):
    fit, release = SERVING[name]
    first, second = _fit_seeded(fit, 7), _fit_seeded(fit, 7)
    np.testing.assert_array_equal(release(first, QUERIES), release(second, QUERIES))
    other = _fit_seeded(fit, 8)
    assert _differ(release(first, SECOND), release(other, SECOND))


@pytest.mark.parametrize("name", list(FIT_TIME))
def test_seeded_fit_time_noise_replays(name):
    fit = FIT_TIME[name]
    np.testing.assert_array_equal(_fit_seeded(fit, 7), _fit_seeded(fit, 7))


@pytest.mark.parametrize("copier", list(COPIERS))
@pytest.mark.parametrize("name", list(SERVING))
@pytest.mark.usefixtures("answers_below_constant_allowed")
def test_a_copy_of_a_seeded_model_replays_its_noise(name, copier):
    fit, release = SERVING[name]
    original = _fit_seeded(fit, 7)
    release(original, FIRST)
    duplicate = COPIERS[copier](original)
    np.testing.assert_array_equal(release(original, SECOND), release(duplicate, SECOND))
