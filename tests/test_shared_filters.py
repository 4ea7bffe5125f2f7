"""Which events a shared budget accepts (docs/accountant.rst, "Which events a
shared budget accepts").

A budget shared between adaptively chosen fits (a user's PrivacyAccountant,
a PrivacyLedger on SQLite or PostgreSQL) may only apply a privacy filter.
These tests pin the rule that closes the mixed zCDP/basic filter (an analyst
who routes on the released output took both analyses at once: an exact
delta(1) of 1.21e-5 on a (1, 1e-5) budget), audit that game statistically on
the fixed and on the old rule, and pin the Gaussian-DP filter (Smith and
Thakurta 2022) against independent computations.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest
from _helpers import STUMP, two_blobs
from _ledger_backends import ledger_url_fixture  # noqa: F401 (ledger_url)
from scipy import integrate, stats

from dpsklearn import ConfidentGNMax, SparseVector, SubsampleAggregateClassifier
from dpsklearn.accounting import (
    ApproximateEvent,
    BoundedRangeEvent,
    GaussianEvent,
    PrivacyAccountant,
    PrivacyLedger,
    PureEvent,
    cks_rho,
    gdp_mu,
    pure_gdp_mu,
)
from dpsklearn.accounting._composer import Composer
from dpsklearn.audit import clopper_pearson

# -- the two-route game ------------------------------------------------------------
# A first Gaussian release that uses 65 % of the zCDP budget, with a stated
# (0.95, delta_1) guarantee (delta_1 its exact Gaussian-DP delta at 0.95).
# Route A: an approximate (0.05, delta - delta_1) release (basic: 0.95 + 0.05
# = 1). Route B: a Gaussian release with the rest of the rho budget.
FIRST_EPSILON, ROUTE_A_EPSILON, FIRST_SHARE = 0.95, 0.05, 0.65


def _gaussian_delta(epsilon, mu):
    """Exact delta(epsilon) of mu-GDP (Dong, Roth and Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(
        -epsilon / mu - mu / 2
    )


def _game(delta):
    rho_budget = cks_rho(1.0, delta)
    sigma_1 = math.sqrt(1.0 / (2.0 * FIRST_SHARE * rho_budget))
    # The stated delta is the exact one, rounded up in its last digits.
    delta_1 = float(_gaussian_delta(FIRST_EPSILON, 1.0 / sigma_1)) * (1 + 1e-6) + 1e-15
    first = GaussianEvent(sigma_1, 1.0, epsilon=FIRST_EPSILON, delta=delta_1)
    route_a = ApproximateEvent(ROUTE_A_EPSILON, delta - delta_1)
    # Route B takes what rho is left, less a hair for floating point.
    rho_left = (rho_budget - first.rho) * (1 - 1e-9)
    route_b = GaussianEvent(math.sqrt(1.0 / (2.0 * rho_left)))
    return first, route_a, route_b


def _accepted(budget, events):
    try:
        return budget.can_spend_events(events)
    except ValueError:  # refused as an event this budget never accepts
        return False


def _old_rule_check_usable(self, events):
    """The rule before the fix: no refusal; an approximate event switched the
    whole shared zCDP total to basic composition."""
    if self.in_use() in ("basic", "advanced"):
        for event in events:
            if math.isinf(event.epsilon) and event.count:
                raise ValueError("basic composition needs each release's epsilon")


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_two_routes_after_a_gaussian_are_never_both_accepted(ledger_url, delta):
    first, route_a, route_b = _game(delta)
    budgets = [
        PrivacyAccountant(1.0, delta, "zcdp"),
        PrivacyLedger(ledger_url("two_routes"), 1.0, delta, "zcdp"),
    ]
    for budget in budgets:
        budget.spend_events([first])
        accepted = [_accepted(budget, [route]) for route in (route_a, route_b)]
        # Before the fix both were accepted: [True, True].
        assert accepted == [False, True]
        with pytest.raises(ValueError, match="composition='basic'"):
            budget.spend_events([route_a])
        assert len(budget.events) == 1
        budget.spend_events([route_b])
        assert budget.spent[0] <= 1.0


def test_the_old_rule_accepted_both_routes(monkeypatch):
    # The audit's broken variant is the old rule itself, reinstated here.
    monkeypatch.setattr(Composer, "check_usable", _old_rule_check_usable)
    first, route_a, route_b = _game(1e-5)
    budget = PrivacyAccountant(1.0, 1e-5, "zcdp")
    budget.spend_events([first])
    assert budget.can_spend_events([route_a]) and budget.can_spend_events([route_b])


def _game_delta(delta, threshold, routes, epsilon=1.0):
    """Exact delta(epsilon) of the interaction with an analyst who takes route
    A when the first release's privacy loss is below ``threshold``, route B
    otherwise, each only if accepted (``routes`` = (A accepted, B accepted)).

    Route A is the worst (0.05, delta_A) release: an atom of mass delta_A that
    only one dataset produces (loss +inf), else randomized response at 0.05.
    Integrates E_D[(1 - e^(epsilon - L))_+] over the first release's loss.
    """
    first, route_a, route_b = _game(delta)
    mu_1, mu_b = 1.0 / first.sigma, 1.0 / route_b.sigma
    eps_a, delta_a = route_a.epsilon, route_a.delta
    keep = math.log1p(-delta_a)
    heads = math.exp(eps_a) / (1 + math.exp(eps_a))
    accept_a, accept_b = routes

    def after(loss):
        want_a = loss < threshold
        if accept_a and (want_a or not accept_b):
            on_heads = max(0.0, -math.expm1(epsilon - loss - eps_a - keep))
            on_tails = max(0.0, -math.expm1(epsilon - loss + eps_a - keep))
            return delta_a + (1 - delta_a) * (heads * on_heads + (1 - heads) * on_tails)
        if accept_b:
            return float(_gaussian_delta(epsilon - loss, mu_b))
        return max(0.0, -math.expm1(epsilon - loss))

    centre = mu_1**2 / 2
    value, _ = integrate.quad(
        lambda loss: stats.norm.pdf(loss, centre, mu_1) * after(loss),
        centre - 40 * mu_1,
        centre + 40 * mu_1,
        points=[threshold, epsilon - eps_a, epsilon, epsilon + eps_a],
        limit=400,
        epsabs=1e-15,
    )
    return value


def test_the_two_route_game_exactly():
    # The old rule, at its worst threshold: delta(1) = 1.21e-5 on a (1, 1e-5)
    # budget. Under the fixed rule route A is refused, and whatever the
    # analyst does (route B, or nothing) stays within the zCDP filter.
    old = _game_delta(1e-5, 0.5, (True, True))
    assert old == pytest.approx(1.213e-5, rel=2e-3)
    assert old > 1.2e-5
    for threshold in (-0.5, 0.0, 0.5, 1.0, 1.5):
        assert _game_delta(1e-5, threshold, (False, True)) <= 1e-5
        assert _game_delta(1e-5, threshold, (False, False)) <= 1e-5


def _play(delta, threshold, routes, n_runs, rng, on_first_dataset):
    """Privacy losses of ``n_runs`` transcripts of the game (vectorised)."""
    first, route_a, route_b = _game(delta)
    accept_a, accept_b = (np.bool_(r) for r in routes)
    mean = 1.0 if on_first_dataset else 0.0
    y_1 = rng.normal(mean, first.sigma, n_runs)
    loss = (2 * y_1 - 1) / (2 * first.sigma**2)
    want_a = loss < threshold
    on_a = accept_a & (want_a | ~accept_b)
    on_b = ~on_a & accept_b
    eps_a, delta_a = route_a.epsilon, route_a.delta
    u = rng.random(int(on_a.sum()))
    if on_first_dataset:
        atom = u < delta_a
        heads = u < delta_a + (1 - delta_a) * math.exp(eps_a) / (1 + math.exp(eps_a))
        heads &= ~atom
    else:
        atom = np.zeros(u.shape, dtype=bool)
        heads = u < 1 / (1 + math.exp(eps_a))
    loss_a = np.where(heads, eps_a, -eps_a) + math.log1p(-delta_a)
    loss[on_a] += np.where(atom, np.inf, loss_a)
    y_2 = rng.normal(mean, route_b.sigma, int(on_b.sum()))
    loss[on_b] += (2 * y_2 - 1) / (2 * route_b.sigma**2)
    return loss


def test_audit_of_the_two_route_game_holds_and_catches_the_old_rule():
    # Budget (1, 1e-2) (a delta large enough to measure), analyst threshold
    # 0.6 (the old rule's worst, by _game_delta). 4,000,000 runs per side;
    # the output event is {L > 1}, so P_D - e P_D' estimates delta(1).
    # Clopper-Pearson at 0.005 per side: each lower bound below is below the
    # true delta(1) with probability >= 0.99. Exact delta(1): old rule
    # 1.147e-2 (over the budget), fixed rule 3.0e-3.
    delta, threshold, n_runs = 1e-2, 0.6, 4_000_000
    budget = PrivacyAccountant(1.0, delta, "zcdp")
    first, route_a, route_b = _game(delta)
    budget.spend_events([first])
    fixed_routes = (_accepted(budget, [route_a]), _accepted(budget, [route_b]))
    assert fixed_routes == (False, True)
    results = {}
    for name, routes in {"fixed": fixed_routes, "old": (True, True)}.items():
        rng = np.random.default_rng(20261207)
        count_d = int((_play(delta, threshold, routes, n_runs, rng, True) > 1).sum())
        count_d2 = int((_play(delta, threshold, routes, n_runs, rng, False) > 1).sum())
        low, _ = clopper_pearson(count_d, n_runs, 0.005)
        _, high = clopper_pearson(count_d2, n_runs, 0.005)
        results[name] = float(low - math.e * high)
    assert results["fixed"] <= delta
    assert results["old"] > delta  # the old rule is caught: 0.01096 > 0.01
    exact_old = _game_delta(delta, threshold, (True, True))
    assert results["old"] <= exact_old <= 1.2 * delta


# -- approximate events and estimators ---------------------------------------------
def test_every_earlier_pure_prefix_still_refuses_an_approximate_event(ledger_url):
    # With only pure events before it, an approximate event mixed into the
    # zCDP filter certifies only 2 delta in general: refused too.
    for budget in (
        PrivacyAccountant(1.0, 1e-5, "zcdp"),
        PrivacyLedger(ledger_url("pure_prefix"), 1.0, 1e-5, "zcdp"),
        PrivacyAccountant(1.0, 1e-5, "gdp"),
    ):
        budget.spend_events([BoundedRangeEvent(0.05, count=10), PureEvent(0.1)])
        with pytest.raises(ValueError, match="composition='basic'"):
            budget.spend(0.1, 1e-6)
        assert len(budget.events) == 2
    basic = PrivacyLedger(ledger_url("basic"), 1.0, 1e-5, "basic")
    basic.spend_events([BoundedRangeEvent(0.05, count=10)])
    basic.spend(0.1, 1e-6)
    assert basic.spent == pytest.approx((0.6, 1e-6))


def test_estimator_on_a_shared_zcdp_budget_is_refused_before_training():
    X, y = two_blobs(400, seed=0)
    shared = PrivacyAccountant(1.0, 1e-5, "zcdp")
    model = SubsampleAggregateClassifier(
        STUMP, n_estimators=10, mechanism=SparseVector(max_unstable=5),
        classes=[0, 1], accountant=shared, random_state=0,
    )
    with pytest.raises(ValueError, match="accountant.*composition='basic'"):
        model.fit(X, y)
    assert shared.events == [] and not hasattr(model, "estimators_")
    # Confident-GNMax describes its spend as Gaussian events: accepted.
    gnmax = SubsampleAggregateClassifier(
        STUMP, n_estimators=10, epsilon=0.5,
        mechanism=ConfidentGNMax(max_answers=10), max_queries=20,
        classes=[0, 1], accountant=shared, random_state=0,
    ).fit(X, y)
    assert all(isinstance(e, GaussianEvent) for e in shared.events)
    assert gnmax.predict(X[:3]).shape == (3,)


# -- the Gaussian-DP filter --------------------------------------------------------
def _fill(budget, event):
    count = 0
    while budget.can_spend_events([event]):
        budget.spend_events([event])
        count += 1
    return count


def test_gdp_budget_admits_more_gaussian_rho_than_the_zcdp_filter(ledger_url):
    # Smith and Thakurta 2022: sum mu_i^2 <= mu_B^2 is a filter for GDP with
    # the non-adaptive parameters. At (1, 1e-5): mu_B = 0.2681, rho 0.0359
    # against the zCDP filter's 0.0306 (+17 %).
    mu_budget = gdp_mu(1.0, 1e-5)
    assert mu_budget**2 / 2 >= 0.035
    assert mu_budget**2 / 2 / cks_rho(1.0, 1e-5) == pytest.approx(1.176, abs=2e-3)
    step = GaussianEvent(math.sqrt(1.0 / (2.0 * 0.0005)))  # rho 0.0005 each
    for budget in (
        PrivacyAccountant(1.0, 1e-5, "gdp"),
        PrivacyLedger(ledger_url("gdp"), 1.0, 1e-5, "gdp"),
    ):
        count = _fill(budget, step)
        assert count * 0.0005 >= 0.035
        assert budget.composition_in_use.startswith("gdp")
        # Independent: dp_accounting's PLD composes the same Gaussians to
        # within its discretisation of the budget, and one more exceeds it.
        pld = dpa.pld.PLDAccountant(
            neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=1e-5,
        )
        pld.compose(dpa.GaussianDpEvent(step.sigma), count)
        assert pld.get_epsilon(1e-5) == pytest.approx(budget.spent[0], abs=2e-3)
        assert pld.get_epsilon(1e-5) <= 1.0 + 2e-3
        over = dpa.pld.PLDAccountant(
            neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=1e-5,
        )
        over.compose(dpa.GaussianDpEvent(step.sigma), count + 2)
        assert over.get_epsilon(1e-5) > 1.0
    zcdp = PrivacyAccountant(1.0, 1e-5, "zcdp")
    assert _fill(zcdp, step) * 0.0005 < 0.0306


def test_pure_events_enter_the_gdp_filter_through_their_gaussian_trade_off():
    # An eps-DP trade-off curve f(a) = max(0, 1 - e^eps a, e^-eps (1 - a))
    # lies above G_mu(a) = Phi(Phi^-1(1 - a) - mu) for mu = pure_gdp_mu(eps),
    # and touches it at the kink (randomized response is exactly mu-GDP).
    alphas = np.linspace(1e-9, 1 - 1e-9, 20001)
    for epsilon in (0.01, 0.1, 0.5, 1.0, 3.0):
        mu = pure_gdp_mu(epsilon)
        gaussian = stats.norm.cdf(stats.norm.isf(alphas) - mu)
        pure = np.maximum.reduce(
            [np.zeros_like(alphas), 1 - math.exp(epsilon) * alphas,
             math.exp(-epsilon) * (1 - alphas)]
        )
        assert np.all(gaussian <= pure + 1e-12)
        kink = 1 / (1 + math.exp(epsilon))
        assert stats.norm.cdf(stats.norm.isf(kink) - mu) == pytest.approx(kink)
        assert pure_gdp_mu(epsilon * 1.001) > mu  # no smaller mu would do
    # Fifteen exponential-mechanism releases of 0.05 fit a (1, 1e-5) gdp
    # budget (mu = 0.0627 each, sqrt(15) mu = 0.243 <= 0.268); twenty do not
    # (0.280), where basic composition would just fit: a gdp budget is for
    # Gaussian releases, and says so.
    budget = PrivacyAccountant(1.0, 1e-5, "gdp")
    budget.spend_events([BoundedRangeEvent(0.05, count=15)])
    assert budget.spent[0] < 1.0
    assert not budget.can_spend_events([BoundedRangeEvent(0.05, count=5)])


def test_gdp_budget_refuses_approximate_and_accepts_only_filter_rules(ledger_url):
    for budget in (
        PrivacyAccountant(1.0, 1e-5, "gdp"),
        PrivacyLedger(ledger_url("gdp_refuse"), 1.0, 1e-5, "gdp"),
    ):
        with pytest.raises(ValueError, match="Gaussian-DP mu"):
            budget.spend(0.2, 1e-7)
        assert budget.events == []
    # A model's own gdp accountant (events fixed in advance) carries an
    # approximate event beside, as the other tight compositions do.
    own = PrivacyAccountant._for_model(1.0, 1e-5, "gdp")
    own.spend(0.2, 1e-7)
    own.spend_events([GaussianEvent(10.0)])
    assert own.spent[0] <= 1.0
