"""Tests for dpsklearn.accounting (docs/design.rst, "Composition").

Composition figures are checked against ``dp_accounting`` called directly and
against hand computation; the ``dp_accounting`` 0.6 pitfalls (docs/corrections.rst,
"Accounting pitfalls")
are pinned so an upgrade that changes them fails here first.
"""

from __future__ import annotations

import copy
import functools
import math
import pickle
import threading

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.dp_event import DiscreteLaplaceDpEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import GridSearchCV

from dpsklearn.accounting import (
    COMPOSITIONS,
    ApproximateEvent,
    BoundedRangeEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    PrivacyAccountant,
    PrivacyEvent,
    PrivacyLedger,
    PureEvent,
    cks_epsilon,
    cks_rho,
    compose_epsilon,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    gdp_delta,
    max_events,
    per_release_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)
from dpsklearn.accounting._composer import _new_dp_accountant
from dpsklearn.exceptions import BudgetExhaustedError

NR = dpa.NeighboringRelation
DELTA = 1e-6


# -- direct dp_accounting references -------------------------------------------
def _rr(eps):
    return dpa.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(eps)), 2)


def _rdp(pairs, delta):
    acc = dpa.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    for event, count in pairs:
        acc.compose(event, count)
    return acc.get_epsilon(delta)


def _pld(pairs, delta):
    acc = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    for event, count in pairs:
        acc.compose(event, count)
    return acc.get_epsilon(delta)


def _cks(rho, delta):
    """zCDP rho to epsilon at the best Renyi order (Canonne, Kamath and Steinke
    2020, Proposition 12), minimised independently: a dense scan of orders,
    then scipy's bounded scalar minimisation."""

    def bound(s):
        a = 1.0 + math.exp(s)
        return a * rho + (
            math.log(1 / delta) + (a - 1) * math.log1p(-1 / a) - math.log(a)
        ) / (a - 1)

    grid = np.linspace(-8, 16, 20001)
    s0 = grid[int(np.argmin([bound(x) for x in grid]))]
    return optimize.minimize_scalar(
        bound,
        bounds=(s0 - 0.01, s0 + 0.01),
        method="bounded",
        options={"xatol": 1e-12},
    ).fun


# The accountant's "zcdp" composition converts rho at the best order.
_zcdp = _cks


def _gdp(pairs, delta):
    """Hand Gaussian DP: pairs of (mu_i, count_i); the epsilon at ``delta`` of
    sqrt(sum count mu^2)-GDP (Dong, Roth and Su 2022, Cor. 2.13), by scipy's
    brentq on the normal CDF (not dpsklearn's log-space formula)."""
    from scipy.stats import norm

    mu = math.sqrt(sum(c * m * m for m, c in pairs))
    def excess(eps):
        return (
            norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
            - delta
        )
    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-14, rtol=1e-13)


def _pure_mu(eps):
    """The GDP mu of an eps-DP release: randomized response's trade-off curve
    touches G_mu at its kink, mu = Phi^-1(1 - a) - Phi^-1(a), a = 1/(1+e^eps)."""
    from scipy.stats import norm

    a = 1.0 / (1.0 + math.exp(eps))
    return float(norm.isf(a) - norm.ppf(a))


def _drv(pairs, slack):
    """Hand DRV: pairs of (eps_i, count_i)."""
    sq = sum(c * e * e for e, c in pairs)
    drift = sum(c * e * (math.exp(e) - 1) for e, c in pairs)
    return math.sqrt(2 * math.log(1 / slack) * sq) + drift


# -- five (and more) mixed event lists ----------------------------------------
@functools.cache
def _case_laplace_exponential():
    events = [
        PrivacyEvent.laplace(0.1, count=50),
        PrivacyEvent.exponential(0.2, count=30),
    ]
    expected = {
        "basic": 11.0,
        "advanced": _drv([(0.1, 50), (0.2, 30)], DELTA),
        "zcdp": _zcdp(50 * 0.01 / 2 + 30 * 0.04 / 8, DELTA),
        "rdp": _rdp([(_rr(0.1), 50), (dpa.ZCDpEvent(0.04 / 8), 30)], DELTA),
        "pld": _pld(
            [
                (DiscreteLaplaceDpEvent(0.1, 1), 50),
                (DiscreteLaplaceDpEvent(0.2, 1), 30),
            ],
            DELTA,
        ),
        "gdp": _gdp([(_pure_mu(0.1), 50), (_pure_mu(0.2), 30)], DELTA),
    }
    return events, expected


@functools.cache
def _case_gaussian_laplace():
    eps_g = dpa.get_epsilon_gaussian(10.0, 1e-8)
    events = [
        PrivacyEvent.gaussian(10.0, 1.0, epsilon=eps_g, delta=1e-8, count=10),
        PrivacyEvent.laplace(0.05, count=100),
    ]
    expected = {
        "basic": 10 * eps_g + 5.0,  # basic delta 1e-7 <= 1e-6
        "advanced": _drv([(eps_g, 10), (0.05, 100)], DELTA - 1e-7),
        "zcdp": _zcdp(10 / (2 * 100) + 100 * 0.0025 / 2, DELTA),
        "rdp": _rdp([(dpa.GaussianDpEvent(10.0), 10), (_rr(0.05), 100)], DELTA),
        "pld": _pld(
            [(dpa.GaussianDpEvent(10.0), 10), (DiscreteLaplaceDpEvent(0.05, 1), 100)],
            DELTA,
        ),
        "gdp": _gdp([(0.1, 10), (_pure_mu(0.05), 100)], DELTA),
    }
    return events, expected


@functools.cache
def _case_sparse_vector_exponential():
    # An approximate event is carried beside and added by basic composition.
    events = [
        PrivacyEvent.approximate(0.5, 1e-7),
        PrivacyEvent.exponential(0.1, count=100),
    ]
    conv = DELTA - 1e-7
    expected = {
        "basic": 10.5,
        "advanced": _drv([(0.5, 1), (0.1, 100)], DELTA - 1e-7),
        "zcdp": 0.5 + _zcdp(100 * 0.01 / 8, conv),
        "rdp": 0.5 + _rdp([(dpa.ZCDpEvent(0.01 / 8), 100)], conv),
        "pld": 0.5 + _pld([(DiscreteLaplaceDpEvent(0.1, 1), 100)], conv),
        "gdp": 0.5 + _gdp([(_pure_mu(0.1), 100)], conv),
    }
    return events, expected


@functools.cache
def _case_discrete_and_continuous_laplace():
    events = [
        PrivacyEvent.discrete_laplace(scale=20, sensitivity=2, count=40),
        PrivacyEvent.continuous_laplace(scale=10.0, count=40),
    ]
    expected = {
        "basic": 40 * 0.1 + 40 * 0.1,
        "advanced": _drv([(0.1, 80)], DELTA),
        "zcdp": _zcdp(80 * 0.01 / 2, DELTA),
        "rdp": _rdp([(_rr(0.1), 40), (dpa.LaplaceDpEvent(10.0), 40)], DELTA),
        "pld": _pld(
            [(DiscreteLaplaceDpEvent(1 / 20, 2), 40), (dpa.LaplaceDpEvent(10.0), 40)],
            DELTA,
        ),
        "gdp": _gdp([(_pure_mu(0.1), 80)], DELTA),
    }
    return events, expected


@functools.cache
def _case_thousand_laplace():
    events = [PrivacyEvent.laplace(0.01, count=1000)]
    expected = {
        "basic": 10.0,
        "advanced": _drv([(0.01, 1000)], DELTA),
        "zcdp": _zcdp(1000 * 0.0001 / 2, DELTA),
        "rdp": _rdp([(_rr(0.01), 1000)], DELTA),
        "pld": _pld([(DiscreteLaplaceDpEvent(0.01, 1), 1000)], DELTA),
        "gdp": _gdp([(_pure_mu(0.01), 1000)], DELTA),
    }
    return events, expected


@functools.cache
def _case_one_big_laplace():
    # One Laplace(1): the zCDP conversion (5.76) is worse than
    # basic (1.0), so the figure is basic.
    events = [PrivacyEvent.continuous_laplace(scale=1.0)]
    expected = {
        "basic": 1.0,
        "advanced": 1.0,
        "zcdp": 1.0,
        "rdp": min(1.0, _rdp([(dpa.LaplaceDpEvent(1.0), 1)], DELTA)),
        "pld": min(1.0, _pld([(dpa.LaplaceDpEvent(1.0), 1)], DELTA)),
        "gdp": _gdp([(_pure_mu(1.0), 1)], DELTA),
    }
    return events, expected


CASES = {
    "laplace+exponential": _case_laplace_exponential,
    "gaussian+laplace": _case_gaussian_laplace,
    "sparse_vector+exponential": _case_sparse_vector_exponential,
    "discrete+continuous laplace": _case_discrete_and_continuous_laplace,
    "1000 laplace": _case_thousand_laplace,
    "one laplace(1)": _case_one_big_laplace,
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("composition", COMPOSITIONS)
def test_composition_matches_dp_accounting_and_hand(case, composition):
    events, expected = CASES[case]()
    basic = expected["basic"]
    want = min(basic, expected[composition])
    got = compose_epsilon(events, DELTA, composition)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert got <= basic * (1 + 1e-12)


def test_reference_figures_one_laplace_event():
    lap = [PrivacyEvent.laplace(0.01, count=1000)]
    assert compose_epsilon(lap, DELTA, "basic") == pytest.approx(10.0)
    assert round(compose_epsilon(lap, DELTA, "rdp"), 2) == 1.47
    cont = [PrivacyEvent.continuous_laplace(scale=100.0, count=1000)]
    assert round(compose_epsilon(cont, DELTA, "rdp"), 2) == 1.47
    assert round(compose_epsilon(cont, DELTA, "pld"), 2) == 1.36
    # dpsklearn's discrete Laplace is the worst-case eps-DP pair: a little more.
    assert 1.36 < compose_epsilon(lap, DELTA, "pld") < 1.37
    # One Laplace(1): RDP gives 1.005, the zCDP conversion 5.76;
    # both are reported as min(basic, ...) = 1.0.
    assert round(_rdp([(dpa.LaplaceDpEvent(1.0), 1)], DELTA), 3) == 1.005
    assert round(zcdp_epsilon(0.5, DELTA), 2) == 5.76
    one = [PrivacyEvent.continuous_laplace(scale=1.0)]
    for composition in ("basic", "advanced", "zcdp", "rdp"):
        assert compose_epsilon(one, DELTA, composition) == 1.0
    # The PLD knows Laplace(1) is also (1 - 2e-6, 1e-6)-DP.
    assert compose_epsilon(one, DELTA, "pld") == pytest.approx(1.0, abs=1e-5)
    exp_q = PrivacyEvent.exponential(0.05)
    counts = {c: max_events(exp_q, 1.0, DELTA, c) for c in ("basic", "zcdp", "rdp")}
    # The zCDP budget converts at the best Renyi order (CKS 2020, Prop. 12):
    # as many as RDP here (Bun and Steinke's rho + 2 sqrt(rho L) allowed 55).
    assert counts == {"basic": 20, "zcdp": 77, "rdp": 77}


def test_zcdp_conversions_are_inverse():
    for eps in (0.1, 1.0, 5.0):
        assert zcdp_epsilon(zcdp_rho(eps, 1e-5), 1e-5) == pytest.approx(eps)
    assert zcdp_epsilon(0.0, 0.0) == 0.0
    assert zcdp_epsilon(0.1, 0.0) == math.inf


def test_advanced_never_worse_than_basic_and_matches_drv():
    few_big = [PrivacyEvent.laplace(0.5, count=3)]
    assert compose_epsilon(few_big, DELTA, "advanced") == pytest.approx(1.5)
    many_small = [PrivacyEvent.laplace(0.01, count=1000)]
    got = compose_epsilon(many_small, 1e-5, "advanced")
    assert got == pytest.approx(_drv([(0.01, 1000)], 1e-5))
    assert got < 10.0
    # The events' own deltas come out of the target first; no slack left
    # means no advanced certificate, and the figure is basic.
    approx = [PrivacyEvent.approximate(0.01, 1e-6, count=1000)]
    assert compose_epsilon(approx, 1e-3, "advanced") == pytest.approx(10.0)


# -- property: tight never reports more than basic ---------------------------
_event_strategy = st.one_of(
    st.builds(
        lambda e, c: PrivacyEvent.laplace(e, count=c),
        st.floats(0.001, 2.0),
        st.integers(1, 300),
    ),
    st.builds(
        lambda e, c: PrivacyEvent.exponential(e, count=c),
        st.floats(0.001, 2.0),
        st.integers(1, 300),
    ),
    st.builds(
        lambda e, d, c: PrivacyEvent.approximate(e, d, count=c),
        st.floats(0.001, 1.0),
        st.floats(1e-12, 1e-8),
        st.integers(1, 3),
    ),
    st.builds(
        lambda t, s, c: PrivacyEvent.discrete_laplace(t, s, count=c),
        st.floats(1.0, 100.0),
        st.integers(1, 3),
        st.integers(1, 100),
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_event_strategy, min_size=1, max_size=4),
    st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]),
)
def test_tight_compositions_never_exceed_basic(events, delta):
    basic = compose_epsilon(events, delta, "basic")
    for composition in ("advanced", "zcdp", "rdp"):
        assert compose_epsilon(events, delta, composition) <= basic * (1 + 1e-12)
    if delta == 0:
        # With delta = 0 only basic composition applies.
        for composition in ("advanced", "zcdp", "rdp"):
            assert compose_epsilon(events, delta, composition) == basic


PLD_LISTS = [
    [PrivacyEvent.laplace(0.2, count=30), PrivacyEvent.exponential(0.3, count=5)],
    [PrivacyEvent.approximate(0.4, 1e-9), PrivacyEvent.laplace(0.05, count=200)],
    [PrivacyEvent.discrete_laplace(5.0, 2, count=20), PrivacyEvent.laplace(1.5)],
    [PrivacyEvent.exponential(0.01, count=10), PrivacyEvent.approximate(0.2, 1e-7)],
]


@pytest.mark.parametrize("events", PLD_LISTS)
def test_pld_never_exceeds_basic(events):
    for delta in (0.0, 1e-9, 1e-6):
        basic = compose_epsilon(events, delta, "basic")
        assert compose_epsilon(events, delta, "pld") <= basic * (1 + 1e-12)


# -- the accountant: spending ---------------------------------------------------
def test_basic_interface_unchanged():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    acc.spend(0.4, label="A")
    assert acc.remaining == (pytest.approx(0.6), 1e-05)
    acc.spend(0.3, 1e-6, label="B", count=2)
    assert acc.spent == (pytest.approx(1.0), pytest.approx(2e-6))
    assert not acc.can_spend(0.01)
    with pytest.raises(BudgetExhaustedError) as err:
        acc.spend(0.01, label="C")
    assert len(err.value.spends) == 2
    assert [e.label for e in acc.events] == ["A", "B"]
    # spend() records a pure release without delta, an approximate one with.
    assert [type(e) for e in acc.events] == [PureEvent, ApproximateEvent]
    event = PureEvent(0.1, label="lbl", count=3)
    assert (event.kind, event.label, event.count) == ("pure", "lbl", 3)


def test_spend_events_is_atomic():
    acc = PrivacyAccountant(epsilon=1.0)
    with pytest.raises(BudgetExhaustedError):
        acc.spend_events([PrivacyEvent.laplace(0.6), PrivacyEvent.laplace(0.6)])
    assert acc.events == [] and acc.spent == (0.0, 0.0)
    acc.spend_events([PrivacyEvent.laplace(0.5), PrivacyEvent.exponential(0.5)])
    assert len(acc.events) == 2


def test_spend_check_uses_the_chosen_composition():
    shared = {c: PrivacyAccountant(1.0, DELTA, c) for c in ("basic", "zcdp")}
    accountants = {**shared, "rdp": PrivacyAccountant._for_model(1.0, DELTA, "rdp")}
    for composition, n in (("basic", 20), ("zcdp", 77), ("rdp", 77)):
        acc = accountants[composition]
        for _ in range(n):
            acc.spend_events([BoundedRangeEvent(0.05)])
        with pytest.raises(BudgetExhaustedError):
            acc.spend_events([BoundedRangeEvent(0.05)])
        assert len(acc.events) == n
        assert acc.spent[0] <= 1.0 + 1e-12
    own = PrivacyAccountant._for_model(1.0, DELTA, "pld")
    own.spend_events([BoundedRangeEvent(0.02, count=60)])
    assert own.spent[0] < 1.0 < own.spent_basic[0]


def test_zero_delta_budget_is_basic_only():
    acc = PrivacyAccountant._for_model(1.0, 0.0, "rdp")
    acc.spend(0.1, count=10)
    assert not acc.can_spend(0.01)
    assert acc.spent == (pytest.approx(1.0), 0.0)


def test_tight_spent_and_remaining():
    acc = PrivacyAccountant(1.0, DELTA, "zcdp")
    acc.spend_events([BoundedRangeEvent(0.05, count=40)])
    eps, delta = acc.spent
    assert eps == pytest.approx(_zcdp(40 * 0.05**2 / 8, DELTA))
    assert delta == DELTA  # the conversion uses the budget's delta
    assert acc.spent_basic == (pytest.approx(2.0), 0.0)
    assert acc.remaining[0] == pytest.approx(1.0 - eps)
    assert acc.epsilon_at(DELTA, "basic") == pytest.approx(2.0)
    assert acc.epsilon_at(DELTA, "rdp") == pytest.approx(
        _rdp([(dpa.ZCDpEvent(0.05**2 / 8), 40)], DELTA)
    )


def test_gaussian_events():
    acc = PrivacyAccountant._for_model(2.0, 1e-5, "rdp")
    acc.spend_events([GaussianEvent(8.0, 2.0, count=3)])
    assert acc.epsilon_at(1e-5) == pytest.approx(
        _rdp([(dpa.GaussianDpEvent(4.0), 3)], 1e-5)
    )
    assert acc.spent_basic[0] == math.inf  # no stated guarantee: basic cannot say
    basic = PrivacyAccountant(2.0, 1e-5)
    with pytest.raises(ValueError, match="epsilon, delta"):
        basic.spend_events([GaussianEvent(4.0)])
    eps = dpa.get_epsilon_gaussian(4.0, 1e-6)
    basic.spend_events([GaussianEvent(4.0, epsilon=eps, delta=1e-6)])
    # A stated guarantee the noise does not give is refused.
    with pytest.raises(ValueError, match="not"):
        PrivacyEvent.gaussian(4.0, epsilon=eps / 2, delta=1e-6)
    with pytest.raises(ValueError):
        PrivacyEvent.discrete_laplace(scale=2.0, sensitivity=1.5)
    with pytest.raises(ValueError, match="match"):
        PrivacyEvent.laplace(0.3, scale=10.0, sensitivity=1)


def test_mechanism_models():
    assert PureEvent(0.1).mechanism == "pure"
    assert BoundedRangeEvent(0.1).mechanism == "bounded_range"
    assert ApproximateEvent(0.1, 1e-6).mechanism == "approximate"
    assert DiscreteLaplaceEvent(10).mechanism == "discrete_laplace"
    # Events an earlier version stored in a ledger are read as the model
    # they were accounted as then.
    legacy = {
        ("laplace", 0.0): PureEvent,
        ("noisy_max", 0.0): PureEvent,
        ("exponential", 0.0): BoundedRangeEvent,
        ("sparse_vector", 1e-6): ApproximateEvent,
        ("exponential", 1e-6): ApproximateEvent,
    }
    for (kind, delta), expected in legacy.items():
        event = PrivacyEvent.from_record(kind, 0.1, delta, 1, None, 0.0)
        assert type(event) is expected
    assert PrivacyEvent.exponential(0.2).rho == pytest.approx(0.005)
    assert PrivacyEvent.laplace(0.2).rho == pytest.approx(0.02)
    assert PrivacyEvent.approximate(0.2, 1e-6).rho is None


def test_per_query_epsilon_is_tight_under_each_composition():
    assert per_release_epsilon(1.0, 0.0, 20) == (pytest.approx(0.05), "basic")
    for composition in ("zcdp", "rdp", "pld"):
        eps_q, name = per_release_epsilon(
            1.0, DELTA, 100, release="exponential", calibration=composition
        )
        assert name == composition and eps_q > 0.01
        event = BoundedRangeEvent(eps_q, count=100)
        assert compose_epsilon([event], DELTA, composition) <= 1.0 + 1e-9
        bigger = BoundedRangeEvent(eps_q * 1.001, count=100)
        if composition == "zcdp":
            # The named split keeps Bun and Steinke's conversion; the
            # accountant's zCDP composition converts at the best order, so it
            # certifies more.
            assert zcdp_epsilon(bigger.rho, DELTA) > 1.0
        else:
            assert compose_epsilon([bigger], DELTA, composition) > 1.0
    # zCDP closed form (docs/design.rst, "Per-query releases").
    rho = zcdp_rho(1.0, DELTA)
    eps_q, _ = per_release_epsilon(1.0, DELTA, 1000, calibration="zcdp")
    assert eps_q == pytest.approx(math.sqrt(8 * rho / 1000), rel=1e-5)
    # m = 1: zCDP gives 0.41, and auto takes basic's 1.0.
    assert per_release_epsilon(1.0, DELTA, 1, calibration="zcdp")[0] < 0.5
    assert per_release_epsilon(1.0, DELTA, 1) == (1.0, "basic")


# -- sharing, filters, pickling --------------------------------------------------
class _Dummy(BaseEstimator):
    def __init__(self, accountant=None, epsilon=1.0):
        self.accountant = accountant
        self.epsilon = epsilon


@pytest.mark.parametrize("composition", ["basic", "zcdp"])
def test_clone_keeps_one_shared_accountant(composition):
    acc = PrivacyAccountant(2.0, DELTA, composition)
    est = _Dummy(accountant=acc)
    clones = [clone(est) for _ in range(3)] + [clone(est).set_params(epsilon=0.5)]
    assert all(c.accountant is acc for c in clones)
    assert copy.deepcopy(est).accountant is acc
    for c in clones:
        c.accountant.spend(0.1, label="fit")
    assert len(acc.events) == 4


class _SpendingClassifier(ClassifierMixin, BaseEstimator):
    """Spends its epsilon from the accountant at every fit."""

    def __init__(self, accountant=None, epsilon=0.1):
        self.accountant = accountant
        self.epsilon = epsilon

    def fit(self, X, y):
        self.accountant.spend(self.epsilon, label="fit")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def _grid(accountant, n_jobs=None):
    return GridSearchCV(
        _SpendingClassifier(accountant),
        {"epsilon": [0.1, 0.2, 0.3, 0.4]},
        cv=4,
        refit=False,
        error_score="raise",
        n_jobs=n_jobs,
    )


def test_grid_search_records_every_fit_on_one_budget():
    X, y = np.arange(80.0).reshape(40, 2), np.arange(40) % 2
    acc = PrivacyAccountant(epsilon=10.0)
    _grid(acc).fit(X, y)
    assert len(acc.events) == 16
    assert acc.spent[0] == pytest.approx(4.0)
    # The fit that would exceed the budget raises; the ones before are kept.
    short = PrivacyAccountant(epsilon=3.5)
    with pytest.raises(BudgetExhaustedError):
        _grid(short).fit(X, y)
    assert len(short.events) == 14 and short.spent[0] == pytest.approx(3.2)


def test_grid_search_in_processes_cannot_fork_a_shared_budget():
    X, y = np.arange(80.0).reshape(40, 2), np.arange(40) % 2
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(Exception) as err:
        _grid(acc, n_jobs=2).fit(X, y)
    chain, exc = [], err.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    assert "PrivacyLedger" in " ".join(chain)
    assert acc.events == []


@pytest.mark.parametrize("composition", ["advanced", "pld", "rdp"])
def test_shared_accountant_refuses_non_filter_compositions(composition):
    with pytest.raises(ValueError, match="adaptive"):
        PrivacyAccountant(1.0, DELTA, composition)
    own = PrivacyAccountant._for_model(1.0, DELTA, composition)
    own.spend(0.01, count=10)
    assert own.composition == composition


def _filter_example(accountant):
    """One (0.3, 5e-6) release and 25 exponential-mechanism releases of 0.05."""
    accountant.spend(0.3, 5e-6)
    accountant.spend_events([BoundedRangeEvent(0.05, count=25)])
    return accountant.spent[0]


def test_shared_budgets_apply_the_filter_rule(tmp_path):
    # Across adaptively chosen fits an approximate event cannot be mixed into
    # the zCDP filter (docs/accountant.rst, "Which events a shared budget
    # accepts"): a shared zCDP accountant and a ledger refuse it with a
    # ValueError that names the basic budget, and record nothing; a shared
    # basic budget takes it, 1.55.
    for shared in (
        PrivacyAccountant(2.0, 1e-5, "zcdp"),
        PrivacyLedger(tmp_path / "filter.sqlite", 2.0, 1e-5, "zcdp"),
    ):
        with pytest.raises(ValueError, match="composition='basic'"):
            _filter_example(shared)
        assert shared.events == [] and shared.spent == (0.0, 0.0)
    for shared in (
        PrivacyAccountant(2.0, 1e-5, "basic"),
        PrivacyLedger(tmp_path / "basic.sqlite", 2.0, 1e-5, "basic"),
    ):
        assert _filter_example(shared) == pytest.approx(1.55)
    # RDP's best order is chosen after the fact: refused for a shared budget.
    with pytest.raises(ValueError, match="rdp"):
        PrivacyAccountant(2.0, 1e-5, "rdp")
    with pytest.raises(ValueError, match="rdp"):
        PrivacyLedger(tmp_path / "rdp.sqlite", 2.0, 1e-5, "rdp")
    # Within one fit every event is known in advance: any composition holds.
    own_zcdp = PrivacyAccountant._for_model(2.0, 1e-5, "zcdp")
    assert _filter_example(own_zcdp) == pytest.approx(
        0.3 + _cks(25 * 0.05**2 / 8, 5e-6), rel=1e-9
    )
    own_rdp = PrivacyAccountant._for_model(2.0, 1e-5, "rdp")
    assert _filter_example(own_rdp) == pytest.approx(0.799, abs=1e-3)
    # Pure events alone keep the zCDP filter's tighter total.
    pure_only = PrivacyAccountant(2.0, 1e-5, "zcdp")
    pure_only.spend_events([BoundedRangeEvent(0.05, count=25)])
    assert pure_only.spent[0] < 25 * 0.05


def _analytic_gaussian_sigma(epsilon, delta):
    """The smallest sigma (sensitivity 1) that is (epsilon, delta)-DP (Balle-Wang)."""
    from scipy.optimize import brentq

    return brentq(
        lambda s: dpa.get_epsilon_gaussian(s, delta) - epsilon, 1e-3, 1e4, xtol=1e-12
    ) * (1.0 + 1e-9)


def test_shared_zcdp_offers_basic_only_while_every_event_is_pure():
    # The coupling behind min(basic, zcdp) needs a pointwise loss bound in the
    # basic branch. After a Gaussian with a stated (0.097, 1e-5) on a shared
    # (1, 1e-5) budget, accepting either a pure 0.903 (basic: (1, 1e-5)) or a
    # Gaussian of rho 0.0203 (zcdp), at the caller's choice, certifies only
    # 2 delta. The rule: rho alone once an event has delta > 0.
    first = GaussianEvent(
        _analytic_gaussian_sigma(0.097, 1e-5), epsilon=0.097, delta=1e-5
    )
    pure = PureEvent(0.903)
    gaussian = GaussianEvent(math.sqrt(1.0 / (2.0 * 0.0203)))
    acc = PrivacyAccountant(1.0, 1e-5, "zcdp")
    acc.spend_events([first])
    assert acc.composition_in_use.startswith("zcdp (rho alone")
    can_pure, can_gaussian = (acc.can_spend_events([e]) for e in (pure, gaussian))
    assert not (can_pure and can_gaussian)
    assert can_gaussian and not can_pure
    # What is accepted is certified by rho alone at the budget's delta.
    acc.spend_events([gaussian])
    rho = first.rho + gaussian.rho
    assert acc.spent == (pytest.approx(cks_epsilon(rho, 1e-5)), 1e-5)
    assert acc.spent[0] <= 1.0
    # An *offered* event with delta > 0 switches the minimum off as well: after
    # a pure 0.5 (rho 0.125, beyond any zCDP budget), basic would take the
    # Gaussian's stated (0.097, 1e-5); rho alone cannot.
    fresh = PrivacyAccountant(1.0, 1e-5, "zcdp")
    fresh.spend(0.5)
    assert not fresh.can_spend_events([first])
    # Pure events alone keep min(basic, zcdp) ...
    pure_only = PrivacyAccountant(1.0, 1e-5, "zcdp")
    pure_only.spend(0.097)
    assert pure_only.can_spend_events([pure])
    # ... and so does a model's own accountant, whose events are fixed in
    # advance: there both certificates hold for the one mechanism.
    own = PrivacyAccountant._for_model(1.0, 1e-5, "zcdp")
    own.spend_events([first])
    assert own.can_spend_events([pure]) and own.can_spend_events([gaussian])


def test_shared_zcdp_budget_converts_at_the_best_renyi_order():
    # The Renyi filter holds alpha * rho_B at every order, so Canonne, Kamath
    # and Steinke's Proposition 12 converts it: rho_B = 0.0306 at (1, 1e-5)
    # and 0.108 at (2, 1e-5), against 0.0208 and 0.0800 by rho + 2 sqrt(rho L).
    assert cks_rho(1.0, 1e-5) >= 0.030
    assert cks_rho(1.0, 1e-5) == pytest.approx(0.03056, rel=1e-3)
    assert cks_rho(2.0, 1e-5) == pytest.approx(0.10826, rel=1e-3)
    assert zcdp_rho(1.0, 1e-5) == pytest.approx(0.0208, rel=1e-2)
    for epsilon in (0.1, 1.0, 2.0, 8.0):
        rho = cks_rho(epsilon, 1e-5)
        # Independent: the same bound at dp_accounting's own orders is never
        # below ours (we search every order), and within 0.1 %.
        assert _rdp([(dpa.ZCDpEvent(rho), 1)], 1e-5) >= epsilon * (1 - 1e-9)
        assert _rdp([(dpa.ZCDpEvent(rho * 1.001), 1)], 1e-5) > epsilon
        # Direct minimisation over the order (scipy), from a dense start.
        best = _cks(rho, 1e-5)
        assert best * (1 - 1e-10) <= cks_epsilon(rho, 1e-5) <= best * (1 + 1e-9)
    acc = PrivacyAccountant(1.0, 1e-5, "zcdp")
    acc.spend_events([GaussianEvent(math.sqrt(1.0 / (2.0 * 0.030)))])
    assert acc.spent[0] <= 1.0


def test_shared_accountant_refuses_pickle():
    acc = PrivacyAccountant(1.0)
    with pytest.raises(TypeError, match="PrivacyLedger"):
        pickle.dumps(acc)
    with pytest.raises(TypeError, match="PrivacyLedger"):
        pickle.dumps(_Dummy(accountant=acc))


@pytest.mark.parametrize("composition", COMPOSITIONS)
def test_model_owned_accountant_pickles_and_keeps_spends(composition):
    own = PrivacyAccountant._for_model(1.0, DELTA, composition)
    own.spend_events([BoundedRangeEvent(0.02, count=30, label="m")])
    own.spend(0.1, 1e-8)
    before = own.spent
    loaded = pickle.loads(pickle.dumps(own))
    assert loaded._owned_by_model and loaded.composition == composition
    assert loaded.events == own.events
    assert loaded.spent == pytest.approx(before)
    loaded.spend(0.01)
    assert len(own.events) == 2  # independent copies
    twin = copy.deepcopy(own)
    assert twin is not own and twin.events == own.events
    twin.spend(0.01)
    assert len(own.events) == 2 and len(twin.events) == 3


# -- threads -------------------------------------------------------------------
@pytest.mark.parametrize("composition", ["basic", "zcdp", "rdp"])
def test_concurrent_spends_never_exceed_budget(composition):
    # 16 threads hammer one accountant; repeated 20 times. (RDP only for a
    # model's own accountant: it is not a filter for a shared one.)
    for _ in range(20):
        if composition == "rdp":
            acc = PrivacyAccountant._for_model(1.0, DELTA, composition)
        else:
            acc = PrivacyAccountant(1.0, DELTA, composition)
        start = threading.Barrier(16)
        accepted = []

        def worker(acc=acc, start=start, accepted=accepted):
            start.wait()
            for _ in range(10):
                try:
                    acc.spend_events([BoundedRangeEvent(0.05)])
                    accepted.append(1)
                except BudgetExhaustedError:
                    pass

        threads = [threading.Thread(target=worker) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert acc.spent[0] <= 1.0 + 1e-12
        assert len(accepted) == len(acc.events)
        assert len(accepted) == {"basic": 20, "zcdp": 77, "rdp": 77}[composition]


# -- report ---------------------------------------------------------------------
def test_report_lists_events_and_both_totals():
    acc = PrivacyAccountant._for_model(1.0, DELTA, "rdp")
    acc.spend_events([BoundedRangeEvent(0.05, count=30, label="PrivatePredictionClf")])
    acc.spend(0.1, 1e-7, label="SubsampleAggregate")
    text = acc.report()
    assert "PrivatePredictionClf" in text and "SubsampleAggregate" in text
    assert "bounded_range" in text and "approximate" in text
    assert "1e-07" in text and "0.05" in text
    assert "spent under rdp (min with basic)" in text
    assert "spent under basic: epsilon=1.6" in text
    assert "T" in text.splitlines()[2]  # ISO timestamp column
    summary = acc.summary()
    assert summary["spent_basic"]["epsilon"] == pytest.approx(1.6)
    assert summary["spent"]["epsilon"] < 1.0
    assert summary["n_releases"] == 31


# -- dp_accounting 0.6 pitfalls -------------------------------------------------
def test_dp_accounting_is_the_pinned_minor():
    import importlib.metadata

    assert importlib.metadata.version("dp-accounting").startswith("0.6.")


def test_pitfall_pld_ignores_count_for_randomized_response():
    event = dpa.RandomizedResponseDpEvent(0.5, 2)
    once = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    once.compose(event, 1)
    ten = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    ten.compose(event, 10)
    assert ten.get_epsilon(DELTA) == once.get_epsilon(DELTA)  # the bug
    looped = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    for _ in range(10):
        looped.compose(event)
    assert looped.get_epsilon(DELTA) > 5 * once.get_epsilon(DELTA)
    # Our accountant never feeds RandomizedResponseDpEvent to the PLD
    # accountant: pure events there are discrete Laplace, which honours count.
    ours = compose_epsilon([PrivacyEvent.laplace(math.log(3), count=10)], DELTA, "pld")
    assert ours == pytest.approx(looped.get_epsilon(DELTA), rel=1e-3)


def test_pitfall_neighbouring_relations():
    lap, dlap = dpa.LaplaceDpEvent(1.0), DiscreteLaplaceDpEvent(1.0, 1)
    rr = dpa.RandomizedResponseDpEvent(0.5, 2)
    pld_replace = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    pld_add = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    rdp_replace = dpa.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    rdp_add = dpa.rdp.RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    # Laplace (and discrete Laplace) refused by PLD under replace-one.
    assert not pld_replace.supports(lap) and not pld_replace.supports(dlap)
    with pytest.raises(dpa.UnsupportedEventError):
        pld_replace.compose(lap)
    # Randomized response refused under add/remove, by PLD and RDP.
    assert not pld_add.supports(rr) and not rdp_add.supports(rr)
    with pytest.raises(dpa.UnsupportedEventError):
        rdp_add.compose(rr)
    # RDP accepts Laplace under replace-one and ignores the relation for it
    # and for Gaussian: the stated sensitivity is taken as the shift.
    assert rdp_replace.supports(lap) and rdp_add.supports(lap)
    for event in (lap, dpa.GaussianDpEvent(2.0)):
        a = dpa.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE).compose(event, 5)
        b = dpa.rdp.RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE).compose(
            event, 5
        )
        assert a.get_epsilon(DELTA) == b.get_epsilon(DELTA)
    # PLD Gaussian under replace-one doubles the sensitivity: that is why we
    # feed replace-one sensitivities under ADD_OR_REMOVE_ONE.
    coarse = {"value_discretization_interval": 1e-2}  # speed; same behaviour
    g_replace = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE, **coarse)
    g_replace.compose(dpa.GaussianDpEvent(4.0), 3)
    g_half = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE, **coarse)
    g_half.compose(dpa.GaussianDpEvent(2.0), 3)
    assert g_replace.get_epsilon(DELTA) == pytest.approx(g_half.get_epsilon(DELTA))
    # dp_accounting's RDP has no discrete Laplace event (we use randomized
    # response, the exact worst case at sensitivity 1).
    assert not rdp_replace.supports(dlap)
    # The defaults are add/remove: never rely on them.
    assert dpa.pld.PLDAccountant().neighboring_relation is NR.ADD_OR_REMOVE_ONE
    assert dpa.rdp.RdpAccountant().neighboring_relation is NR.ADD_OR_REMOVE_ONE


def test_our_dp_accounting_objects_pass_the_relation_explicitly():
    assert _new_dp_accountant("rdp").neighboring_relation is NR.REPLACE_ONE
    assert _new_dp_accountant("pld").neighboring_relation is NR.ADD_OR_REMOVE_ONE


def test_pitfall_pld_is_infinite_at_delta_zero():
    acc = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    acc.compose(DiscreteLaplaceDpEvent(0.1, 1), 10)
    assert acc.get_epsilon(0.0) == math.inf
    # ...so pure epsilon keeps a plain sum.
    events = [PrivacyEvent.laplace(0.1, count=10)]
    assert compose_epsilon(events, 0.0, "pld") == pytest.approx(1.0)


def test_discrete_laplace_at_unit_sensitivity_is_randomized_response():
    # Why a PureEvent is accounted as randomized response (RDP) and as
    # DiscreteLaplaceDpEvent(eps, 1) (PLD): the same worst-case eps-DP pair.
    eps = 0.3
    a = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    a.compose(DiscreteLaplaceDpEvent(eps, 1), 1)
    b = dpa.pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    b.compose(_rr(eps), 1)
    assert a.get_epsilon(1e-3) == pytest.approx(b.get_epsilon(1e-3), abs=1e-3)
    # Continuous Laplace is tighter, so reading a discrete release as
    # continuous would under-count.
    c = dpa.pld.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    c.compose(dpa.LaplaceDpEvent(1 / eps), 1)
    assert c.get_epsilon(1e-3) < a.get_epsilon(1e-3)


# -- discrete Gaussian releases through Gaussian DP -----------------------------
def _exact_discrete_gaussian_delta(epsilon, sigma, shift, count):
    """delta of ``count`` shift-``shift`` discrete Gaussian pairs, enumerated.

    The product pair's privacy loss is a function of the sum S of the noises:
    its pmf is the explicit convolution of the pmf (support +-60 sigma, the
    rest below 1e-700).
    """
    bound = int(60 * sigma) + 5
    x = np.arange(-bound, bound + 1)
    pmf = np.exp(-(x**2) / (2 * sigma**2))
    pmf /= pmf.sum()
    total = pmf
    for _ in range(count - 1):
        total = np.convolve(total, pmf)
    s = np.arange(total.size) - count * bound
    loss = (count * shift**2 - 2 * shift * s) / (2 * sigma**2)
    keep = loss > epsilon
    return float(np.sum(total[keep] * -np.expm1(epsilon - loss[keep])))


@pytest.mark.parametrize(
    "sigma, shift, count, epsilon",
    [
        (4.0, 1, 1, 0.05),
        (4.5, 1, 1, 0.3),
        (4.5, 1, 3, 0.2),
        (5.0, 2, 10, 0.5),
        (8.0, 1, 20, 0.5),
        (12.0, 3, 40, 1.0),
    ],
)
def test_discrete_gaussian_delta_is_above_the_enumerated_composition(
    sigma, shift, count, epsilon
):
    exact = _exact_discrete_gaussian_delta(epsilon, sigma, shift, count)
    certified = discrete_gaussian_delta(epsilon, [(sigma, shift, count)])
    assert exact <= certified
    # Tight up to one lattice step of loss, shift / sigma^2, read on the
    # continuous curve: within the curve at epsilon - 2 kappa.
    mu = shift * math.sqrt(count) / sigma
    assert certified <= gdp_delta(epsilon - 2 * shift / sigma**2, mu) + 1e-15


def test_discrete_gaussian_is_not_below_the_continuous_curve():
    # Why the lattice correction: one discrete Gaussian at sigma = 4 leaks a
    # little more than the continuous one near its centre (about
    # (1/sigma)(1 + 1/(24 sigma^2))-GDP), so "same curve" would undercount.
    gaps = [
        _exact_discrete_gaussian_delta(e, 4.0, 1, 1) - gdp_delta(e, 0.25)
        for e in np.linspace(0.0, 0.2, 21)
    ]
    assert max(gaps) > 1e-4
    # Below the minimum sigma nothing is certified; an empty list costs 0.
    assert discrete_gaussian_delta(1.0, [(3.9, 1, 10)]) == 1.0
    assert discrete_gaussian_delta(1.0, []) == 0.0
    assert discrete_gaussian_epsilon(1e-5, [(3.9, 1, 10)]) == math.inf


def test_discrete_gaussian_epsilon_inverts_from_above():
    groups = [(167.0, 1, 2000), (120.0, 1, 300)]
    eps = discrete_gaussian_epsilon(1e-5, groups)
    assert discrete_gaussian_delta(eps, groups) <= 1e-5
    assert discrete_gaussian_delta(eps * (1 - 1e-9), groups) > 1e-5 * (1 - 1e-6)
    # Two groups compose as one mu-GDP curve (Dong, Roth and Su 2022).
    mu = math.sqrt(2000 / 167.0**2 + 300 / 120.0**2)
    kappa = 1 / 167.0**2 + 1 / 120.0**2
    assert gdp_delta(eps - kappa, mu) == pytest.approx(1e-5, rel=1e-6)
