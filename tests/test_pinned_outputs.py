"""Answers on fixed noise seeds, pinned before the mechanism refactor.

Each case fits one estimator configuration with ``noise_random_state`` set
and records what it releases (labels, values, probabilities, released
models) and the fitted figures its guarantee rests on. The file
``tests/data/pinned_outputs.json`` was written by this module
(``python tests/test_pinned_outputs.py --record``) at commit 93ff258, before
the estimators were rebuilt on mechanism objects; the test checks that the
code still releases exactly the same answers from the same noise.

A legitimate change of what a mechanism draws (a new calibration, another
noise order) must re-record the file in its own commit, saying why.
"""

from __future__ import annotations

import json
import pathlib
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression

from dpsklearn import (
    DecisionStumps,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    KnowledgeTransferClassifier,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelPrivateRegressor,
    SubsampleAggregateClassifier,
)
from dpsklearn.exceptions import BudgetExhaustedError

PINNED = pathlib.Path(__file__).parent / "data" / "pinned_outputs.json"
NOISE_SEED = 7


def _classification():
    X, y = make_classification(
        n_samples=3000, n_features=6, n_informative=4, random_state=0
    )
    return X[:2600], y[:2600], X[2600:]


def _easy():
    X, y = make_classification(
        n_samples=3000, n_features=6, n_informative=4, class_sep=3.0, random_state=3
    )
    return X[:2600], y[:2600], X[2600:]


def _multiclass():
    X, y = make_classification(
        n_samples=2400,
        n_features=6,
        n_informative=4,
        n_classes=3,
        n_clusters_per_class=1,
        random_state=1,
    )
    return X[:2000], y[:2000], X[2000:]


def _regression():
    X, y = make_regression(n_samples=2400, n_features=5, noise=5.0, random_state=2)
    return X[:2000], y[:2000], X[2000:]


def _predict_all(model, X_query, *, return_abstained=False):
    """Answers of one call; a halt mid-batch returns the paid-for prefix."""
    try:
        out = model.predict(X_query, return_abstained=return_abstained)
    except BudgetExhaustedError as err:
        return {"halted_at": err.n_answered, "answers": err.partial_predictions}
    if return_abstained:
        labels, abstained = out
        return {"answers": labels, "abstained": abstained}
    return {"answers": out}


def _sa(data=_classification, **params):
    X, y, Xq = data()
    model = SubsampleAggregateClassifier(
        classes=[0, 1], random_state=0, noise_random_state=NOISE_SEED, **params
    ).fit(X, y)
    first = _predict_all(model, Xq[:150], return_abstained=True)
    second = _predict_all(model, Xq[150:], return_abstained=True)
    figures = {
        name: getattr(model, name)
        for name in (
            "n_estimators_",
            "calibration_",
            "threshold_",
            "noise_scale_",
            "sparse_vector_epsilon_",
            "fallback_epsilon_",
            "sigma_threshold_",
            "sigma_argmax_",
            "max_answers_",
        )
        if hasattr(model, name)
    }
    return {"first": first, "second": second, "figures": figures}


def _pp_classifier(**params):
    X, y, Xq = _multiclass()
    model = PrivatePredictionClassifier(
        n_estimators=60,
        classes=[0, 1, 2],
        random_state=0,
        noise_random_state=NOISE_SEED,
        **params,
    ).fit(X, y)
    labels = model.predict(Xq[:120])
    proba = model.predict_proba(Xq[100:160])
    again = model.predict(Xq[:40])  # cached: the same answers, free
    return {
        "labels": labels,
        "proba": proba,
        "again": again,
        "figures": {
            "calibration_": model.calibration_,
            "epsilon_per_query_": model.epsilon_per_query_,
            "sigma_": model.sigma_,
            "proba_cost_": model.proba_cost_,
        },
    }


def _pp_regressor(**params):
    X, y, Xq = _regression()
    model = PrivatePredictionRegressor(
        n_estimators=50,
        target_range=(-400, 400),
        random_state=0,
        noise_random_state=NOISE_SEED,
        **params,
    ).fit(X, y)
    return {
        "values": model.predict(Xq[:100]),
        "figures": {
            "calibration_": model.calibration_,
            "epsilon_per_query_": model.epsilon_per_query_,
            "noise_scale_": model.noise_scale_,
        },
    }


def _soft_label(**params):
    X, y, Xq = _regression()
    model = SoftLabelPrivateRegressor(
        n_estimators=400,
        gamma=0.25,
        target_range=(-400, 400),
        random_state=0,
        noise_random_state=NOISE_SEED,
        **params,
    ).fit(X, y)
    out = _predict_all(model, Xq, return_abstained=True)
    return {
        "out": out,
        "figures": {
            "calibration_": model.calibration_,
            "threshold_": model.threshold_,
            "noise_scale_": model.noise_scale_,
            "fallback_epsilon_": model.fallback_epsilon_,
        },
    }


def _soft_label_classifier():
    X, y, Xq = _classification()
    model = SoftLabelPrivateRegressor(
        LogisticRegression(),
        n_estimators=100,
        epsilon=50.0,
        gamma=0.5,
        max_unstable=20,
        calibration="pure",
        random_state=0,
        noise_random_state=NOISE_SEED,
    ).fit(X, y)
    return {"out": _predict_all(model, Xq, return_abstained=True)}


def _knowledge_transfer(**params):
    X, y, Xq = _classification()
    teacher = PrivatePredictionClassifier(
        n_estimators=80,
        epsilon=2.0,
        max_queries=200,
        classes=[0, 1],
        random_state=0,
        noise_random_state=NOISE_SEED,
    )
    model = KnowledgeTransferClassifier(teacher, random_state=0, **params).fit(
        X, y, X_public=Xq
    )
    return {
        "student_predictions": model.predict(X[:200]),
        "n_public_labelled_": model.n_public_labelled_,
        "coef": model.student_.coef_,
    }


def _kernel_ridge(**params):
    X, y, Xq = _regression()
    model = PrivateKernelRidge(
        y_bound=400.0,
        alpha=0.1,
        random_state=0,
        noise_random_state=NOISE_SEED,
        **params,
    ).fit(X[:600], y[:600])
    out = {"values": model.predict(Xq[:50]), "figures": {}}
    for name in ("sensitivity_", "grid_step_", "noise_scale_", "mechanism_"):
        out["figures"][name] = getattr(model, name)
    if hasattr(model, "coef_"):
        out["coef"] = model.coef_
    return out


def _erm():
    X, y, _ = _classification()
    model = ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(-5.0, 5.0)),
        epsilon=1.0,
        classes=[0, 1],
        noise_random_state=NOISE_SEED,
    ).fit(X, y)
    return {"predictions": model.predict(X[:200]), "h": repr(model.hypothesis_)}


def _erm_regressor():
    X, y, _ = _regression()
    model = ExponentialMechanismERMRegressor(
        DecisionStumps(feature_bounds=(-5.0, 5.0)),
        target_range=(-400, 400),
        epsilon=1.0,
        noise_random_state=NOISE_SEED,
    ).fit(X, y)
    return {"predictions": model.predict(X[:200]), "h": repr(model.hypothesis_)}


def _statistical_queries():
    X, y, _ = _classification()
    oracle = PrivateStatisticalQueries(
        n_queries=6, epsilon=1.0, random_state=0, noise_random_state=NOISE_SEED
    ).fit(X, y)
    means = [oracle.query_mean(lambda X, y, j=j: X[:, j] > 0) for j in range(3)]
    counts = [oracle.query_count(lambda X, y, j=j: y == j % 2) for j in range(3)]
    return {"means": means, "counts": counts}


CASES = {
    # The calibration is named where these cases were recorded under "auto",
    # which now takes "laplace": the pins keep testing the same releases.
    "sa_sparse_vector_noisy_max": lambda: _sa(
        n_estimators=60, epsilon=1.0, calibration="exact"
    ),
    "sa_sparse_vector_abstain": lambda: _sa(
        n_estimators=1000,
        epsilon=40.0,
        max_unstable=30,
        calibration="pure",
        fallback="abstain",
        abstain_label=-1,
        min_samples_per_shard=1,
    ),
    "sa_sparse_vector_pure": lambda: _sa(
        n_estimators=1000,
        epsilon=40.0,
        max_unstable=10,
        calibration="pure",
        min_samples_per_shard=1,
    ),
    "sa_sparse_vector_paper_on_exhausted": lambda: _sa(
        _easy,
        n_estimators=200,
        epsilon=25.0,
        max_unstable=5,
        calibration="paper",
        fallback="abstain",
        abstain_label=-1,
        on_exhausted="abstain",
    ),
    "sa_confident_gnmax": lambda: _sa(
        n_estimators=200,
        epsilon=8.0,
        mechanism="confident_gnmax",
        max_queries=400,
        max_answers=120,
        abstain_label=-1,
    ),
    "pp_exponential_auto": lambda: _pp_classifier(epsilon=4.0, max_queries=400),
    "pp_exponential_basic": lambda: _pp_classifier(
        epsilon=4.0, max_queries=400, calibration="basic"
    ),
    "pp_exponential_zcdp": lambda: _pp_classifier(
        epsilon=4.0, max_queries=400, calibration="zcdp"
    ),
    "pp_gnmax": lambda: _pp_classifier(epsilon=4.0, max_queries=400, mechanism="gnmax"),
    # What "auto" chose before the Gaussian release existed (Laplace, rdp).
    "pp_regressor_rdp": lambda: _pp_regressor(
        epsilon=2.0, max_queries=200, calibration="rdp"
    ),
    # Recorded when the discrete Gaussian release was added: "auto" takes it
    # at 200 queries.
    "pp_regressor_auto_gaussian": lambda: _pp_regressor(epsilon=2.0, max_queries=200),
    "pp_regressor_basic": lambda: _pp_regressor(
        epsilon=2.0, max_queries=200, calibration="basic"
    ),
    "soft_label_midpoint": lambda: _soft_label(
        epsilon=30.0, max_unstable=40, calibration="exact"
    ),
    "soft_label_noisy_mean": lambda: _soft_label(
        epsilon=30.0, max_unstable=40, fallback="noisy_mean", calibration="exact"
    ),
    "soft_label_classifier": _soft_label_classifier,
    "kt_sequential": lambda: _knowledge_transfer(),
    "kt_uncertainty": lambda: _knowledge_transfer(
        query_strategy="uncertainty", n_queries=150, n_rounds=3
    ),
    "kernel_ridge_predictions": lambda: _kernel_ridge(epsilon=200.0, max_queries=100),
    "kernel_ridge_model_gaussian": lambda: _kernel_ridge(
        epsilon=4.0, release="model", n_components=20
    ),
    "kernel_ridge_model_laplace": lambda: _kernel_ridge(
        epsilon=4.0, delta=0.0, release="model", n_components=20
    ),
    "erm_stumps": _erm,
    "erm_regressor_stumps": _erm_regressor,
    "statistical_queries": _statistical_queries,
}


def _to_json(value):
    if isinstance(value, dict):
        return {key: _to_json(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _run(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _to_json(CASES[name]())


def _assert_same(recorded, current, where):
    if isinstance(recorded, dict) and "array" in recorded and "dtype" in recorded:
        assert isinstance(current, dict) and "array" in current, where
        expected = np.asarray(recorded["array"])
        got = np.asarray(current["array"])
        assert expected.shape == got.shape, where
        if expected.dtype.kind == "f" or got.dtype.kind == "f":
            # Grid releases are exact multiples of the grid step; a relative
            # 1e-12 only forgives a reordered floating-point sum.
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, err_msg=where)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=where)
        return
    if isinstance(recorded, dict):
        assert isinstance(current, dict), where
        assert set(recorded) == set(current), where
        for key in recorded:
            _assert_same(recorded[key], current[key], f"{where}.{key}")
        return
    if isinstance(recorded, list):
        assert isinstance(current, list) and len(current) == len(recorded), where
        for i, (a, b) in enumerate(zip(recorded, current, strict=True)):
            _assert_same(a, b, f"{where}[{i}]")
        return
    if isinstance(recorded, float) and isinstance(current, float):
        assert current == pytest.approx(recorded, rel=1e-12, abs=0), where
        return
    assert current == recorded, where


@pytest.mark.parametrize("name", sorted(CASES))
def test_answers_are_unchanged_on_fixed_noise(name):
    recorded = json.loads(PINNED.read_text())
    assert name in recorded, f"{name} was never recorded"
    _assert_same(recorded[name], _run(name), name)


def test_every_recorded_case_is_checked():
    recorded = json.loads(PINNED.read_text())
    assert set(recorded) == set(CASES)


if __name__ == "__main__" and "--record" in sys.argv:
    PINNED.parent.mkdir(exist_ok=True)
    PINNED.write_text(json.dumps({name: _run(name) for name in CASES}, indent=1))
    print(f"recorded {len(CASES)} cases in {PINNED}")
