"""Estimators for data with no public rows: the release, the map, the contract.

The release (docs/no_public_rows.rst, "The release"): AdaSSP's three Gaussian
releases with a ``k``-column moment ``Phi^T Y`` whose replace-one
sensitivity is ``2 B_x B_y`` (``B_y`` bounds a record's label row in L2).
Checked on random pairs and the attaining pair, by the exact Gaussian-DP
composition, and by a statistical audit at the claim on the neighbours
that move the moment by its sensitivity, which must catch the moment
calibrated at the add/remove sensitivity (``B_x B_y``, Wang 2018 as
printed). Through the estimators: rows of the additive map have norm at
most 1 whatever the input (missing values, unknown categories, values out
of bounds), label rows stay within ``B_y``, the fitted model holds only
released values (the pickle), nothing is read without a
``PrivacyLeakWarning``, bad input is refused before any spend, and the
search tunes the estimators within one budget. Randomised checks use fixed
seeds; the audit's failure probability is 5 % per bound.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _bad_variants import moment_add_remove_sensitivity
from _helpers import AuditTable, assert_private, gaussian_threshold

from dpsklearn import (
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivateLeastSquaresClassifier,
    PrivateLinearRegression,
    PrivateNaiveBayes,
    PublicSchema,
)
from dpsklearn.accounting import gdp_delta
from dpsklearn.audit import audit
from dpsklearn.mechanisms import SufficientStatisticsRelease
from dpsklearn.model_selection import PrivateGridSearch, is_publishable
from dpsklearn.preprocessing import AdditiveFeatureMap

CONFIDENCE, RUNS = 0.95, 60_000
_TABLE = AuditTable(
    "AdaSSP with a k-column moment (one-vs-rest classes): privacy audit",
    f"confidence {CONFIDENCE} per bound; a BAD row is a known-bad variant that "
    "must show a leak.",
)
_audit_table = _TABLE.fixture()


def _frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, n)
    job = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    X = pd.DataFrame({"age": age, "job": job, "hours": rng.uniform(1, 99, n)})
    score = (age - 45) / 15 + (job == "a") - (job == "c")
    y = np.where(score > 0.5, "high", np.where(score < -0.5, "low", "mid"))
    return X, y


SCHEMA = PublicSchema(
    bounds={"age": (18, 80), "hours": (1, 99)},
    categories={"job": ["a", "b", "c"]},
    classes=["high", "low", "mid"],
)


# -- the release -----------------------------------------------------------------
def test_k_column_moment_sensitivity_is_two_bx_by():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(2000):
        phi, phi2 = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 5)))
        y, y2 = (v / np.linalg.norm(v) * 0.8 for v in rng.normal(size=(2, 3)))
        worst = max(worst, np.linalg.norm(np.outer(phi2, y2) - np.outer(phi, y)))
    assert worst <= 2 * 0.8 + 1e-12
    # Attained at phi' = -phi, y' = y.
    phi = np.eye(5)[0]
    y = np.array([0.8, 0.0, 0.0])
    assert np.isclose(np.linalg.norm(np.outer(-phi, y) - np.outer(phi, y)), 1.6)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_three_releases_compose_exactly_to_the_budget(epsilon):
    mech = SufficientStatisticsRelease.calibrate(
        epsilon, 1e-5, n_features=30, feature_bound=1.0, label_bound=0.9, n_targets=4
    )
    assert mech.dimensions[1] == 120
    pairs = zip(mech.units, mech.sigma_units, strict=True)
    mu = math.sqrt(sum((u / s) ** 2 for u, s in pairs))
    spent = gdp_delta(epsilon, mu)
    assert spent <= 1e-5 and spent >= 0.99e-5


EPSILON, DELTA = 2.0, 1e-3
#: Neighbours that move the moment by its sensitivity and nothing else:
#: row 1 is e1 with label row u (||u|| = B_y), replaced by -e1 with the same
#: labels; the Gram matrix and its smallest eigenvalue do not move.
_LABELS = np.array([[0.6, -0.2, 0.0], [0.0, 0.0, 0.0]])


def _moment_neighbours(nb):
    rows = np.array([[1.0, 0.0], [0.0, 1.0]])
    if nb:
        rows[0] = -rows[0]
    return rows.T @ rows, rows.T @ _LABELS, 1.0


def _moment_audit(mech, seed):
    (_, m0, _), (_, m1, _) = (_moment_neighbours(nb) for nb in (0, 1))
    difference = (m1 - m0).ravel()
    sigma = mech.noise_std[1]
    mu = np.linalg.norm(difference) / sigma
    t = gaussian_threshold(mu, DELTA, RUNS, CONFIDENCE)

    def run(nb, n, rng):
        gram, moment, low = _moment_neighbours(nb)
        return np.array(
            [
                (mech.release(gram, moment, low, [rng]).moment.ravel() - m0.ravel())
                @ difference
                / (sigma**2 * mu)
                for _ in range(n)
            ]
        )

    return audit(run, lambda z: np.asarray(z) >= t, n_runs=RUNS, delta=DELTA, rng=seed)


def _moment_release(shares=(0.01, 0.97, 0.02)):
    # Nearly all of rho on the moment, so its audit can reach the claim.
    return SufficientStatisticsRelease.calibrate(
        EPSILON,
        DELTA,
        n_features=2,
        feature_bound=1.0,
        label_bound=float(np.linalg.norm(_LABELS[0])),
        shares=shares,
        n_targets=3,
    )


@pytest.mark.parametrize(
    "shares, label",
    [
        ((0.01, 0.97, 0.02), "AdaSSP, 3-column moment"),
        ((0.0, 1.0, 0.0), "moment alone (naive Bayes)"),
    ],
)
def test_k_column_moment_audit(shares, label):
    res = _moment_audit(_moment_release(shares), 21)
    _TABLE.record(label, "row (e1, u) -> (-e1, u)", res, EPSILON)
    assert_private(res, EPSILON)


def test_moment_alone_spends_one_gaussian_event_within_the_budget():
    mech = _moment_release((0.0, 1.0, 0.0))
    events = mech.event_options("x", "zcdp")[0]
    assert len(events) == 1
    mu = mech.units[1] / mech.sigma_units[1]
    assert 0.99 * DELTA <= gdp_delta(EPSILON, mu) <= DELTA
    released = mech.release(None, np.ones((2, 3)), None, [np.random.default_rng(0)])
    assert released.gram is None and np.isnan(released.lambda_min)


def test_k_column_moment_audit_catches_add_remove_sensitivity():
    mech = moment_add_remove_sensitivity(_moment_release())
    res = _moment_audit(mech, 22)
    _TABLE.record(
        "BAD moment at add/remove sensitivity B_x B_y",
        "row (e1, u) -> (-e1, u)",
        res,
        EPSILON,
    )
    assert res.epsilon_lower > EPSILON


# -- the map and the labels ------------------------------------------------------
def test_feature_rows_have_norm_at_most_one_whatever_the_input():
    rng = np.random.default_rng(1)
    n = 5000
    X = pd.DataFrame(
        {
            "age": np.where(rng.random(n) < 0.1, np.nan, rng.normal(40, 100, n)),
            "job": rng.choice(np.array(["a", "b", "zzz", None], dtype=object), n),
            "money": rng.exponential(1e5, n),
        }
    )
    columns = [
        ("age", "numeric", (18.0, 80.0)),
        ("job", "categorical", ["a", "b"]),
        ("money", "numeric", (0.0, 1e6)),
    ]
    for n_bins in (0, 1, 7, 20):
        fmap = AdditiveFeatureMap(columns, n_bins)
        features = fmap.transform(fmap.encode(X))
        assert features.shape == (n, fmap.n_features_out)
        assert np.all(np.linalg.norm(features, axis=1) <= 1.0)
        assert np.all(np.isfinite(features))


def test_label_rows_stay_within_the_bound():
    X, y = _frame()
    model = PrivateLeastSquaresClassifier(schema=SCHEMA, noise_random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plan = model._plan(X, y)
    for stage in plan.mechanism.stages:  # linear first, then the bins
        assert np.max(np.linalg.norm(plan.y, axis=1)) <= stage.label_bound + 1e-12
        assert stage.feature_bound == 1.0
        assert stage.n_targets == 3


def test_bins_stage_labels_stay_within_the_bound_whatever_stage_one_released(
    monkeypatch,
):
    from dpsklearn.mechanisms import SufficientStatisticsRelease as Release

    X, y = _frame()
    seen = []
    original = Release.release

    def spy(self, gram, moment, lambda_min, noise):
        seen.append(np.asarray(moment))
        return original(self, gram, moment, lambda_min, noise)

    def wild(self, statistics):  # a wildly wrong first-stage model
        return np.full(statistics.moment.shape, 1e6), 0.0

    monkeypatch.setattr(Release, "release", spy)
    monkeypatch.setattr(Release, "solve", wild)
    model = PrivateLeastSquaresClassifier(schema=SCHEMA, noise_random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plan = model._plan(X, y)
        fitted = model._train(plan)
        residual_rows = []
        from dpsklearn.mechanisms import accumulate_statistics as real

        def capture(codes, labels, feature_map, n):
            residual_rows.append(np.asarray(labels))
            return real(codes, labels, feature_map, n)

        monkeypatch.setattr(
            "dpsklearn.linear_model._additive_least_squares.accumulate_statistics",
            capture,
        )
        model._release(plan, fitted, [np.random.default_rng(0)])
    bound = plan.attributes["label_bound_"]
    assert len(residual_rows) == 2
    assert np.max(np.linalg.norm(residual_rows[1], axis=1)) <= bound + 1e-12


# -- the estimators ----------------------------------------------------------------
def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "noise_random_state", PrivacyLeakWarning)
        return model.fit(X, y)


def test_multiclass_frame_with_missing_values_fits_and_predicts():
    X, y = _frame()
    X.loc[::7, "age"] = np.nan
    X.loc[::5, "job"] = None
    model = _quiet_fit(
        PrivateLeastSquaresClassifier(schema=SCHEMA, epsilon=4.0, noise_random_state=0),
        X,
        y,
    )
    queries = X.head(20).copy()
    queries.loc[0, "job"] = "unseen"
    proba = model.predict_proba(queries)
    assert proba.shape == (20, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(queries)) <= {"high", "low", "mid"}
    assert model.score(X, y) > 0.7


def test_binary_numeric_array_and_regression():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(8000, 3))
    schema = PublicSchema(bounds={j: (0, 1) for j in range(3)})
    y = (X[:, 0] + 0.3 * rng.normal(size=8000) > 0.5).astype(int)
    clf = _quiet_fit(
        PrivateLeastSquaresClassifier(
            schema=schema, classes=[0, 1], epsilon=2.0, noise_random_state=0
        ),
        X,
        y,
    )
    assert clf.score(X, y) > 0.75
    target = 3 * X[:, 1] + rng.normal(0, 0.1, 8000)
    reg = _quiet_fit(
        PrivateLinearRegression(
            schema=schema, y_bound=(-1, 4), epsilon=2.0, noise_random_state=0
        ),
        X,
        target,
    )
    assert reg.score(X, target) > 0.9
    assert np.all((reg.predict(X) >= -1) & (reg.predict(X) <= 4))


def test_full_schema_reads_nothing_and_unset_parts_warn():
    X, y = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.filterwarnings("ignore", "noise_random_state", PrivacyLeakWarning)
        PrivateLeastSquaresClassifier(schema=SCHEMA, noise_random_state=0).fit(X, y)
    partial = PublicSchema(bounds={"age": (18, 80)})
    with pytest.warns(PrivacyLeakWarning) as record:
        PrivateLeastSquaresClassifier(schema=partial).fit(X, y)
    messages = " ".join(str(w.message) for w in record)
    assert "'job'" in messages and "'hours'" in messages
    assert "classes is None" in messages
    with pytest.warns(PrivacyLeakWarning, match="y_bound is None"):
        PrivateLinearRegression(schema=SCHEMA).fit(X, X["age"].to_numpy())


def test_bad_schema_is_refused_before_any_spend():
    X, y = _frame()
    accountant = PrivacyAccountant(10.0, 1e-3)
    for schema, match in [
        (PublicSchema(bounds={"nope": (0, 1)}, classes=SCHEMA.classes), "nope"),
        (PublicSchema(bounds={"age": (5, 5)}, classes=SCHEMA.classes), "age"),
    ]:
        with pytest.raises(ValueError, match=match):
            PrivateLeastSquaresClassifier(schema=schema, accountant=accountant).fit(
                X, y
            )
    with pytest.raises(ValueError, match="label"):
        PrivateLeastSquaresClassifier(
            schema=PublicSchema(classes=["high", "low"]), accountant=accountant
        ).fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_pickle_holds_only_released_values():
    X, y = _frame()
    secret = 77.123456789
    X.loc[0, "age"] = secret
    model = _quiet_fit(
        PrivateLeastSquaresClassifier(schema=SCHEMA, noise_random_state=0), X, y
    )
    assert is_publishable(model)
    public = {
        "classes_",
        "feature_map_",
        "bin_map_",
        "bin_coef_",
        "bin_regulariser_",
        "n_bins_",
        "label_bound_",
        "coef_",
        "regulariser_",
        "accountant_",
        "privacy_mechanism_",
        "calibration_",
        "noise_std_",
        "n_features_in_",
        "feature_names_in_",
        "_serving_state_",
        "_query_rule_",  # the query's width, column names and NaN rule: public
    }
    fitted = {name for name in vars(model) if name.endswith("_")}
    assert fitted == public
    blob = pickle.dumps(model)
    assert np.float64(secret).tobytes() not in blob
    assert not any("statistics" in name for name in vars(model))
    # The exact statistics are nowhere: every array is the map's or released.
    codes = model.feature_map_.encode(X)
    features = model.feature_map_.transform(codes)
    exact_moment = features.T @ (np.eye(3)[np.searchsorted(model.classes_, y)] - 1 / 3)
    assert not np.allclose(
        model.coef_, np.linalg.lstsq(features.T @ features, exact_moment, rcond=None)[0]
    )
    copy = pickle.loads(blob)
    assert np.array_equal(copy.predict(X), model.predict(X))


def test_naive_bayes_takes_missing_values_and_publishes_released_values():
    X, y = _frame()
    X.loc[::7, "age"] = np.nan
    X.loc[::5, "job"] = None
    model = _quiet_fit(
        PrivateNaiveBayes(schema=SCHEMA, epsilon=4.0, noise_random_state=0), X, y
    )
    assert model.score(X, y) > 0.6
    assert np.allclose(model.predict_proba(X.head(5)).sum(axis=1), 1.0)
    assert is_publishable(model)
    assert not any(name.startswith("_moment") for name in vars(model))
    with pytest.warns(PrivacyLeakWarning, match="'hours'"):
        PrivateNaiveBayes(schema=PublicSchema(bounds={"age": (18, 80)})).fit(X, y)


def test_private_grid_search_tunes_within_one_budget():
    X, y = _frame(4000)
    search = PrivateGridSearch(
        PrivateLeastSquaresClassifier(schema=SCHEMA),
        {"n_bins": [0, 8]},
        epsilon=2.0,
        random_state=0,
        noise_random_state=0,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "noise_random_state", PrivacyLeakWarning)
        search.fit(X, y)
    assert search.total_epsilon_ <= 2.0
    assert search.best_estimator_.predict(X[:3]).shape == (3,)


def test_statistics_functions_estimate_and_spend_from_the_accountant():
    from dpsklearn.statistics import histogram, mean, quantile, var

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, size=(40_000, 2))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "noise_random_state", PrivacyLeakWarning)
        assert np.allclose(mean(x, (0, 10), noise_random_state=0), 5.0, atol=0.1)
        assert np.allclose(
            var(x[:, 0], (0, 10), noise_random_state=0), 100 / 12, atol=0.3
        )
        counts, edges = histogram(x[:, 0], 5, (0, 10), noise_random_state=0)
        assert np.allclose(counts, 8000, atol=300) and edges[-1] == 10
        assert np.allclose(quantile(x[:, 0], [0.1, 0.9], (0, 10)), [1, 9], atol=0.2)
    accountant = PrivacyAccountant(1.5, 1e-5)
    mean(x, (0, 10), epsilon=1.0, accountant=accountant)
    with pytest.raises(Exception, match="cannot pay"):
        var(x, (0, 10), epsilon=1.0, accountant=accountant)
    with pytest.raises(ValueError, match="range is required"):
        histogram(x[:, 0], 5)
    with pytest.raises(ValueError, match="bounds"):
        mean(x, (3, 3))


def test_pca_and_scaler_release_once_and_publish_released_values():
    from dpsklearn.decomposition import PrivatePCA, PrivateStandardScaler

    rng = np.random.default_rng(4)
    t = rng.uniform(-1, 1, 30_000)
    X = np.column_stack([t, t, rng.uniform(-0.2, 0.2, 30_000)])
    X[::11, 2] = np.nan  # a missing value is scaled to the centre
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "noise_random_state", PrivacyLeakWarning)
        pca = PrivatePCA(1, bounds=(-1, 1), noise_random_state=0).fit(X)
        scaler = PrivateStandardScaler(bounds=(-1, 1), noise_random_state=0).fit(X)
    assert np.allclose(np.abs(pca.components_[0]), [0.707, 0.707, 0], atol=0.05)
    assert pca.transform(X).shape == (30_000, 1)
    assert np.allclose(scaler.transform(X)[:, :2].std(axis=0), 1.0, atol=0.05)
    for model in (pca, scaler):
        assert is_publishable(model)
        assert not any(
            name.startswith("_gram") or name.startswith("_sums") for name in vars(model)
        )
    assert len(pca.privacy_mechanism_.event_options("x", "zcdp")[0]) == 1
    with pytest.warns(PrivacyLeakWarning, match="bounds is None"):
        PrivatePCA().fit(X)
    with pytest.raises(ValueError, match="bounds"):
        PrivateStandardScaler(bounds=(1, 1)).fit(X)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_two_stages_with_k_columns_compose_to_the_budget(epsilon):
    from dpsklearn.mechanisms import StagedStatisticsRelease

    mech = StagedStatisticsRelease.calibrate(
        epsilon,
        1e-5,
        n_features=(40, 120),
        feature_bound=1.0,
        label_bound=(0.9, 0.225),
        stage_shares=(0.3, 0.7),
        n_targets=4,
    )
    assert [s.label_bound for s in mech.stages] == [0.9, 0.225]
    mu = math.sqrt(
        sum(
            (u / s) ** 2
            for stage in mech.stages
            for u, s in zip(stage.units, stage.sigma_units, strict=True)
        )
    )
    assert 0.99e-5 <= gdp_delta(epsilon, mu) <= 1e-5
