"""The linear-first AdaSSP release (``StagedStatisticsRelease``) and its wiring.

The guarantee (docs/regression.rst, "Linear first, then the kernel"): the
stages' six Gaussian releases share one certified ``rho``, so their
adaptive composition is ``mu``-GDP with ``mu^2 = 2 sum_i s_i rho <= 2
rho``. Checked here against the definition (``gdp_delta`` of the summed
``mu``), by a statistical audit on the worst-case neighbours of both stages
(which must also catch the variant that gives every stage the whole
budget), and through ``PrivateKernelRidge``: the residual labels of stage 2
stay within ``B_y`` whatever stage 1 released, rows are norm-clipped, bad
options are refused before any spend. Randomised checks use fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import AuditTable, gaussian_threshold, ssp_projection, ssp_runs
from _helpers import assert_private as _assert_private
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpsklearn import PrivacyAccountant, PrivateKernelRidge
from dpsklearn.accounting import gdp_delta
from dpsklearn.audit import audit
from dpsklearn.kernel_ridge import linear_feature_map
from dpsklearn.mechanisms import (
    StagedStatisticsRelease,
    SufficientStatistics,
    SufficientStatisticsRelease,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

CONFIDENCE = 0.95
RUNS = 60_000

_TABLE = AuditTable(
    "staged AdaSSP privacy audit (linear stage, then random features)",
    f"confidence {CONFIDENCE} per bound (Bonferroni over both directions); a "
    "BAD row is a known-bad variant that must show a leak.",
)
_audit_table = _TABLE.fixture()
_record = _TABLE.record


def _mu(mechanism):
    return math.sqrt(
        sum(
            (u / s) ** 2
            for stage in mechanism.stages
            for u, s in zip(stage.units, stage.sigma_units, strict=True)
        )
    )


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 8.0])
@pytest.mark.parametrize("linear_share", [0.05, 0.2, 0.5])
def test_stages_compose_to_the_budget(epsilon, linear_share):
    mech = SufficientStatistics(linear_share=linear_share).calibrate(
        epsilon, 1e-5, n_features=201, label_bound=3.0, n_linear_features=9
    )
    assert isinstance(mech, StagedStatisticsRelease)
    assert mech.total_share == pytest.approx(1.0)
    # All six Gaussian releases together: mu-GDP, delta(epsilon) within the
    # budget and not far below it (the calibration spends what it may).
    delta = gdp_delta(epsilon, _mu(mech))
    assert 0.99e-5 <= delta <= 1e-5 * (1 + 1e-6)
    assert mech.spent(0, None)[0] <= epsilon * (1 + 1e-9)
    # One stage alone is the single-stage mechanism at its share.
    single = SufficientStatisticsRelease.calibrate(
        epsilon, 1e-5, n_features=9, feature_bound=1.0, label_bound=3.0
    )
    first = mech.stages[0]
    for sigma_staged, sigma_single in zip(
        first.sigma_units, single.sigma_units, strict=True
    ):
        assert sigma_staged == pytest.approx(sigma_single / math.sqrt(linear_share))
    # An accountant that composes Gaussian events can pay for all six.
    accountant = PrivacyAccountant._for_model(epsilon, 1e-5, mech.composition)
    options = mech.event_options(composition=mech.composition)
    assert len(options[0]) in (1, 6)
    assert accountant.can_spend_events(options[0])


def test_staged_release_refuses_mismatched_stages():
    one = SufficientStatisticsRelease.calibrate(
        1.0,
        1e-5,
        n_features=3,
        feature_bound=1.0,
        label_bound=1.0,
        shares=(0.25, 0.24, 0.01),
    )
    other = SufficientStatisticsRelease.calibrate(
        2.0,
        1e-5,
        n_features=3,
        feature_bound=1.0,
        label_bound=1.0,
        shares=(0.25, 0.24, 0.01),
    )
    with pytest.raises(ValueError, match="same budget"):
        StagedStatisticsRelease([one, other], (0.5, 0.5))
    whole = SufficientStatisticsRelease.calibrate(
        1.0, 1e-5, n_features=3, feature_bound=1.0, label_bound=1.0
    )
    with pytest.raises(ValueError, match="more than 1"):
        StagedStatisticsRelease([whole, whole], (0.5, 0.5))
    with pytest.raises(ValueError, match="stage_shares"):
        StagedStatisticsRelease.calibrate(
            1.0,
            1e-5,
            n_features=(3, 5),
            feature_bound=1.0,
            label_bound=1.0,
            stage_shares=(0.6, 0.6),
        )


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, (5, 4), elements=st.floats(-1e12, 1e12)),
    st.floats(1e-6, 1e6),
)
def test_linear_features_have_norm_at_most_one(X, row_bound):
    norms = np.linalg.norm(linear_feature_map(X, row_bound), axis=1)
    assert np.all(norms <= 1.0)


# -- the audit: both stages on their worst-case neighbours -------------------------
EPSILON, DELTA = 2.0, 1e-3
# Both stages on the proof's worst-case neighbours (_helpers.SSP_NEIGHBOUR_ROWS):
# each Gram matrix moves by its sensitivity, labels 0, so the moments (and
# stage 2's residual labels, whatever stage 1 released) do not move.


def _staged(stage_shares=(0.2, 0.8)):
    return StagedStatisticsRelease.calibrate(
        EPSILON,
        DELTA,
        n_features=(2, 2),
        feature_bound=1.0,
        label_bound=1.0,
        stage_shares=stage_shares,
        shares=(0.97, 0.01, 0.02),
    )


def _audit(mech, seed, runs=RUNS):
    statistic, mu = ssp_projection(mech.stages)
    t = gaussian_threshold(mu, DELTA, runs, CONFIDENCE)
    return audit(
        ssp_runs(mech.stages, statistic),
        lambda z: np.asarray(z) >= t,
        n_runs=runs,
        delta=DELTA,
        rng=seed,
    )


def test_staged_audit_quick():
    # The quick sibling of the slow audit below: a twentieth of the runs, the
    # same claim (a lower bound from fewer runs is only looser).
    res = _audit(_staged(), 13, runs=RUNS // 20)
    _assert_private(res, EPSILON)


def test_staged_audit():
    res = _audit(_staged(), 11)
    _record("staged AdaSSP (2 stages x 3 releases)", "row e1 -> e2", res, EPSILON)
    _assert_private(res, EPSILON)


def test_staged_audit_catches_every_stage_at_the_whole_budget(monkeypatch):
    # The bug a staged release invites: each stage calibrated as if it were
    # alone (its shares not scaled by its stage share), so the stages
    # together spend about twice the budget's rho.
    mech = _staged()
    stages = [
        SufficientStatisticsRelease.calibrate(
            EPSILON,
            DELTA,
            n_features=2,
            feature_bound=1.0,
            label_bound=1.0,
            shares=(0.97, 0.01, 0.02),
        )
        for _ in mech.stages
    ]
    monkeypatch.setattr(mech, "stages", tuple(stages), raising=True)
    res = _audit(mech, 12)
    _record(
        "BAD staged AdaSSP: every stage at the whole budget",
        "row e1 -> e2",
        res,
        EPSILON,
    )
    assert res.epsilon_lower > EPSILON


# -- through the estimator ----------------------------------------------------------
def _linear_rows(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-math.sqrt(3), math.sqrt(3), size=(n, 4))
    y = 7.0 + 0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def test_kernel_ridge_fits_the_linear_stage_first_by_default():
    X, y = _linear_rows(20_000)
    model = PrivateKernelRidge(
        y_bound=(4, 10), epsilon=1.0, random_state=0, noise_random_state=1
    ).fit(X, y)
    assert model.linear_coef_.shape == (5,)
    assert model.row_bound_ == pytest.approx(math.sqrt(12))
    assert isinstance(model.privacy_mechanism_, StagedStatisticsRelease)
    assert model.mechanism_.linear_share == 0.2
    single = PrivateKernelRidge(
        y_bound=(4, 10),
        epsilon=1.0,
        random_state=0,
        noise_random_state=1,
        mechanism=SufficientStatistics(linear_share=0),
    ).fit(X, y)
    assert single.linear_coef_ is None and single.row_bound_ is None
    X_test, y_test = _linear_rows(2000, seed=1)
    staged_r2 = model.score(X_test, y_test)
    single_r2 = single.score(X_test, y_test)
    # A linear target: the linear stage recovers it, the random features
    # alone are shrunk towards the constant by their regulariser.
    assert staged_r2 > 0.9
    assert staged_r2 > single_r2 + 0.02  # measured 0.941 against 0.901
    predictions = model.predict(X_test * 1e6)  # far outside: clipped rows
    assert np.all((predictions >= 4) & (predictions <= 10))
    # Both spend exactly the budget, recorded once.
    assert model.accountant_.spent[0] <= 1.0 + 1e-9


def test_residual_labels_stay_within_the_label_bound(monkeypatch):
    # Whatever stage 1 releases (here a wildly wrong model), stage 2's labels
    # are clipped residuals within B_y: its sensitivities are a single stage's.
    from dpsklearn.kernel_ridge import _random_feature_ssp as ssp

    seen = []
    original = ssp.random_feature_statistics

    def spy(X, y, frequencies, **kwargs):
        seen.append(np.max(np.abs(y)))
        return original(X, y, frequencies, **kwargs)

    monkeypatch.setattr(ssp, "random_feature_statistics", spy)
    monkeypatch.setattr(
        ssp,
        "ssp_release",
        lambda mechanism, statistics, noise: (np.full(mechanism.n_features, 1e6), 0.0),
    )
    X, y = _linear_rows(500)
    PrivateKernelRidge(
        y_bound=(4, 10), epsilon=1.0, random_state=0, noise_random_state=1
    ).fit(X, y)
    assert seen and max(seen) <= 3.0


@pytest.mark.parametrize(
    "options, match",
    [
        ({"linear_share": 1.0}, "linear_share"),
        ({"linear_share": -0.1}, "linear_share"),
        ({"row_bound": 0.0}, "row_bound"),
        ({"row_bound": "large"}, "row_bound"),
    ],
)
def test_bad_staged_options_are_refused_before_any_spend(options, match):
    X, y = _linear_rows(200)
    accountant = PrivacyAccountant(1.0, 1e-5)
    model = PrivateKernelRidge(
        y_bound=(4, 10),
        accountant=accountant,
        mechanism=SufficientStatistics(**options),
    )
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)
    assert accountant.spent == (0.0, 0.0)
    assert not accountant.events


def test_linear_share_is_searchable_and_the_staged_model_pickles():
    # The option lives on the mechanism object: GridSearchCV reaches it as
    # mechanism__linear_share, and the published model survives a pickle.
    # (Searching on private rows is outside the guarantee; this checks the
    # wiring only.)
    import pickle

    from sklearn.model_selection import GridSearchCV

    X, y = _linear_rows(3000)
    search = GridSearchCV(
        PrivateKernelRidge(
            y_bound=(4, 10), epsilon=1.0, random_state=0, noise_random_state=1,
            mechanism=SufficientStatistics(),
        ),
        {"mechanism__linear_share": [0.0, 0.2]},
        cv=2,
    ).fit(X, y)
    shares = search.cv_results_["param_mechanism__linear_share"]
    assert list(shares) == [0.0, 0.2]
    model = search.best_estimator_
    copy = pickle.loads(pickle.dumps(model))
    X_test, _ = _linear_rows(50, seed=3)
    assert np.array_equal(copy.predict(X_test), model.predict(X_test))
