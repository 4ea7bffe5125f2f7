"""Composing a list of events under one composition, and the rule for shared budgets.

:class:`Composer` holds the composed state of recorded events: counts per
distinct release for basic composition and for the tight compositions
(zCDP, and RDP or PLD through ``dp_accounting``, extended incrementally). It
is copied before a candidate spend is added, so a refused spend leaves the
accountant untouched. Every figure it reports is ``min(basic, chosen)``: a
tight method never reports more than the plain sum, and with ``delta = 0``
only basic composition certifies anything.

The same composer serves an estimator's own accountant and a budget shared
between fits (a user's :class:`~dpsklearn.PrivacyAccountant` or a
:class:`~dpsklearn.PrivacyLedger`). Across adaptively chosen fits only
privacy filters are valid (``docs/accountant.rst``, "Which events a shared
budget accepts"), so a *shared* composer applies one rule, for the
accountant and the ledger alike:

* only ``"basic"`` (Rogers, Roth, Ullman and Vadhan 2016), ``"zcdp"`` (the
  zCDP filter of Feldman and Zrnic 2021) and ``"gdp"`` (the Gaussian-DP
  filter of Smith and Thakurta 2022) are accepted; ``"advanced"``,
  ``"pld"`` and ``"rdp"`` (whose best order is chosen after the fact) are
  refused;
* ``"zcdp"`` and ``"gdp"`` refuse an approximate ``(epsilon, delta)`` event
  (one with no ``rho``, no ``mu``) with a ValueError, offered or recorded:
  carried beside the filter, or switching the whole total to basic
  composition once one arrives, either lets an analyst who chooses the
  next event from the released output take both analyses at once (an
  exact ``delta(1)`` of 1.2e-5 on a ``(1, 1e-5)`` budget). Approximate
  events need a ``"basic"`` shared budget;
* under ``"zcdp"``, ``min(basic, zcdp)`` is offered only while every
  recorded and offered event is pure (``delta_i = 0``, a pointwise loss
  bound): the coupling argument behind the minimum needs it. Once an event
  with ``delta_i > 0`` and a ``rho`` (a Gaussian release with a stated
  ``(epsilon, delta)``) is in the total, it is composed by ``rho`` alone;
* under ``"gdp"`` only events with a Gaussian-DP ``mu`` are accepted
  (Gaussian releases, ``mu = sensitivity / sigma``, and pure ones through
  :func:`~dpsklearn.accounting.pure_gdp_mu`), composed by ``sum mu_i^2``
  alone.

The ``rho`` total converts at the best Renyi order (Canonne, Kamath and
Steinke 2020, Proposition 12; :func:`cks_epsilon`), which the filter allows:
it holds the curve ``alpha * rho_B`` at every order at once. The ``mu``
total converts exactly (Dong, Roth and Su 2022, Corollary 2.13).

A ledger written by an earlier dpsklearn may already hold approximate events
under ``"zcdp"``; its total is then read by basic composition, and no new
approximate event is accepted.

Within one fit, where every event is known in advance, any composition
applies.
"""

from __future__ import annotations

import copy
import math

from ._composition import cks_epsilon
from ._discrete_gaussian import gdp_epsilon, pure_gdp_mu
from ._dp_accounting import dp_accounting
from ._events import ApproximateEvent, GaussianEvent, PrivacyEvent

__all__ = ["COMPOSITIONS", "FILTER_VALID", "Composer", "check_composition"]

#: The compositions an accountant understands.
COMPOSITIONS = ("basic", "advanced", "zcdp", "rdp", "pld", "gdp")
#: The ones that are privacy filters: all a shared budget accepts.
FILTER_VALID = ("basic", "zcdp", "gdp")
#: The filters that compose a per-event curve parameter (rho, mu), and so
#: refuse approximate events on a shared budget.
_CURVE_FILTERS = ("zcdp", "gdp")

# Slack for floating-point sums: a budget spent in several equal parts must
# not be refused because 0.1 + 0.2 > 0.3 in binary.
_TOLERANCE = 1e-12
# PLD discretisation (dp_accounting's default); pessimistic rounding keeps the
# figures upper bounds.
_PLD_DISCRETIZATION = 1e-4


def check_composition(composition, *, shared=False):
    """The composition name, or a ValueError naming ``composition``."""
    if composition not in COMPOSITIONS:
        raise ValueError(
            f"composition must be one of {list(COMPOSITIONS)}, got {composition!r}."
        )
    if shared and composition not in FILTER_VALID:
        raise ValueError(
            f"composition={composition!r} is not valid for a budget shared between "
            "fits: across fits the events are chosen adaptively, and only privacy "
            "filters hold then (docs/design.rst, 'Shared accountants and privacy "
            f"filters'). Use {' or '.join(repr(c) for c in FILTER_VALID)} for a "
            "shared accountant or ledger; a model's own accountant "
            "(accountant=None) may use any composition."
        )
    return composition


def epsilon_fits(value, budget):
    return value <= budget * (1 + _TOLERANCE) + _TOLERANCE


def delta_fits(value, budget):
    return value <= budget * (1 + _TOLERANCE) + 1e-300


def unit_mu(release: PrivacyEvent) -> float | None:
    """Gaussian-DP ``mu`` of one release, or None when it has none.

    A Gaussian release of L2 sensitivity ``s`` and noise ``sigma`` is exactly
    ``(s / sigma)``-GDP (Dong, Roth and Su 2022, Theorem 2.7); a pure
    ``epsilon``-DP release (Laplace, exponential mechanism) is
    :func:`~dpsklearn.accounting.pure_gdp_mu` ``(epsilon)``-GDP. An
    approximate ``(epsilon, delta)`` release has no ``mu``.
    """
    if isinstance(release, GaussianEvent):
        return release.sensitivity / release.sigma
    if release.delta == 0 and release.unit_rho() is not None:
        return pure_gdp_mu(release.epsilon)
    return None


def _new_dp_accountant(composition):
    dpa = dp_accounting()
    if composition == "rdp":
        # Replace-one sensitivities are fed to its formulas.
        return dpa.rdp.RdpAccountant(
            neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
        )
    # ADD_OR_REMOVE_ONE with replace-one sensitivities is the shift-by-
    # sensitivity pair: exactly two replace-one neighbours' outputs. Under
    # REPLACE_ONE, dp_accounting 0.6 refuses Laplace events and doubles
    # Gaussian sensitivities (docs/design.rst, "Composition").
    return dpa.pld.PLDAccountant(
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=_PLD_DISCRETIZATION,
    )


class Composer:
    """The composed state of recorded events under one composition.

    Parameters
    ----------
    composition : {"basic", "advanced", "zcdp", "rdp", "pld"}
    shared : bool, default=False
        A budget shared between adaptively chosen fits: the filter rule of
        the module docstring applies.
    """

    def __init__(self, composition, *, shared=False):
        self.composition = check_composition(composition, shared=shared)
        self.shared = bool(shared)
        self.basic_counts = {}  # (epsilon, delta) -> count
        self.release_counts = {}  # one release (an event with count 1) -> count
        self._dpa = None
        self._dpa_shared = False
        self._pending = []  # (release, count) not yet composed in _dpa
        self._memo = {}

    def copy(self):
        new = object.__new__(Composer)
        new.composition = self.composition
        new.shared = self.shared
        new.basic_counts = dict(self.basic_counts)
        new.release_counts = dict(self.release_counts)
        new._dpa = self._dpa
        new._pending = list(self._pending)
        new._memo = {}
        # Copy on write: the dp_accounting object is shared until one side
        # extends it.
        self._dpa_shared = new._dpa_shared = self._dpa is not None
        return new

    def add(self, events):
        for event in events:
            if event.count == 0:
                continue
            key = (event.epsilon, event.delta)
            self.basic_counts[key] = self.basic_counts.get(key, 0) + event.count
            release = event.unit()
            self.release_counts[release] = (
                self.release_counts.get(release, 0) + event.count
            )
            if self.composition in ("rdp", "pld") and not isinstance(
                release, ApproximateEvent
            ):
                self._pending.append((release, event.count))
        self._memo = {}
        return self

    def check_usable(self, events):
        """Refuse, with a ValueError, an event this composition cannot account.

        Basic and advanced composition need each release's own epsilon; a
        shared ``"zcdp"`` or ``"gdp"`` budget refuses approximate events
        (module docstring); ``"gdp"`` needs each event's ``mu``.
        """
        if self.shared and self.composition in _CURVE_FILTERS:
            curve = "rho" if self.composition == "zcdp" else "Gaussian-DP mu"
            for event in events:
                if not event.count:
                    continue
                if self.composition == "zcdp":
                    has_curve = event.unit_rho() is not None
                else:
                    has_curve = unit_mu(event) is not None
                if not has_curve:
                    raise ValueError(
                        f"a budget shared under composition={self.composition!r} "
                        f"accepts only releases with a {curve} (pure, "
                        "exponential-mechanism or Gaussian releases); got an "
                        f"approximate (epsilon={event.epsilon:.6g}, delta="
                        f"{event.delta:.3g}) release. Mixed into this filter, such "
                        "releases let a caller who chooses the next release from "
                        "the last output exceed delta. Use a shared budget with "
                        "composition='basic' for approximate releases "
                        "(docs/accountant.rst, 'Which events a shared budget "
                        "accepts')."
                    )
        if self.in_use() in ("basic", "advanced"):
            for event in events:
                if math.isinf(event.epsilon) and event.count:
                    raise ValueError(
                        f"{self.in_use()} composition needs each release's own "
                        "(epsilon, delta); give them for the Gaussian release "
                        "(GaussianEvent(sigma, epsilon=..., delta=...))."
                    )

    # -- the rule ------------------------------------------------------------
    def has_approximate(self):
        return any(isinstance(r, ApproximateEvent) for r in self.release_counts)

    def has_positive_delta(self):
        return any(r.delta > 0 for r in self.release_counts)

    def in_use(self):
        """The composition the figures are computed under (the filter rule).

        Basic for a shared zCDP ledger written by an earlier dpsklearn that
        already holds approximate events (no new one is accepted).
        """
        if self.shared and self.composition == "zcdp" and self.has_approximate():
            return "basic"
        return self.composition

    def basic_offered(self):
        """Whether ``min(basic, composition in use)`` may be taken.

        Within one fit (not shared) the events are fixed in advance, and two
        valid certificates of one mechanism give their minimum. Across fits
        the minimum rests on a coupling: runs that end within the basic
        budget have loss at most epsilon *pointwise*, which holds only when
        every event is pure (``docs/design.rst``, "Shared accountants and
        privacy filters"). With an event of ``delta > 0`` in the total, a
        shared zCDP budget composes by ``rho`` alone.
        """
        if not self.shared or self.in_use() == "basic":
            return True
        if self.composition == "gdp":
            # The Gaussian-DP filter is proved for sum mu_i^2 alone.
            return False
        return not self.has_positive_delta()

    def describe(self):
        """The composition in use, said for reports and errors."""
        if self.in_use() != self.composition:
            return "basic (zcdp with approximate events)"
        if self.shared and self.composition == "gdp":
            return "gdp (sum of mu^2 alone)"
        if not self.basic_offered():
            return "zcdp (rho alone: an event has delta > 0)"
        return self.composition

    # -- figures -------------------------------------------------------------
    def basic(self):
        """``(sum of epsilons, sum of deltas)``."""
        items = self.basic_counts.items()
        if any(math.isinf(eps) for (eps, _), _ in items):
            epsilon = math.inf
        else:
            epsilon = math.fsum(eps * c for (eps, _), c in items)
        return epsilon, math.fsum(d * c for (_, d), c in items)

    def basic_epsilon_at(self, delta):
        epsilon, spent_delta = self.basic()
        return epsilon if delta_fits(spent_delta, delta) else math.inf

    def _approximate(self):
        pairs = [
            (r.epsilon * c, r.delta * c)
            for r, c in self.release_counts.items()
            if isinstance(r, ApproximateEvent)
        ]
        return math.fsum(p[0] for p in pairs), math.fsum(p[1] for p in pairs)

    def _dp_accountant(self):
        if self._pending:
            if self._dpa is None:
                self._dpa = _new_dp_accountant(self.composition)
            elif self._dpa_shared:
                self._dpa = copy.deepcopy(self._dpa)
            self._dpa_shared = False
            for release, count in self._pending:
                event = (
                    release.rdp_event()
                    if self.composition == "rdp"
                    else release.pld_event()
                )
                self._dpa.compose(event, count)
            self._pending = []
        return self._dpa

    def tight_epsilon_at(self, delta, composition=None):
        """Epsilon at ``delta`` under ``composition`` alone (no min with basic).

        Tight compositions carry approximate events beside the rest: the
        others are converted at ``delta - sum(delta_approx)`` and
        ``sum(eps_approx)`` is added.
        """
        composition = composition or self.in_use()
        if composition == "basic":
            return self.basic_epsilon_at(delta)
        if composition == "advanced":
            return self._advanced_epsilon_at(delta)
        approx_eps, approx_delta = self._approximate()
        conversion_delta = delta - approx_delta
        tight = [r for r in self.release_counts if not isinstance(r, ApproximateEvent)]
        if not tight:
            return approx_eps if delta_fits(approx_delta, delta) else math.inf
        if not conversion_delta > 0:
            return math.inf
        if composition == "zcdp":
            rho = math.fsum(r.unit_rho() * self.release_counts[r] for r in tight)
            return cks_epsilon(rho, conversion_delta) + approx_eps
        if composition == "gdp":
            mus = [(unit_mu(r), self.release_counts[r]) for r in tight]
            if any(mu is None for mu, _ in mus):
                return math.inf
            mu = math.sqrt(math.fsum(c * m * m for m, c in mus))
            return gdp_epsilon(mu, conversion_delta) + approx_eps
        if composition != self.composition:
            raise ValueError("rdp / pld figures need a composer built for them.")
        epsilon = float(self._dp_accountant().get_epsilon(conversion_delta))
        return epsilon + approx_eps

    def _advanced_epsilon_at(self, delta):
        # Dwork, Rothblum and Vadhan 2010, Theorem III.3, heterogeneous form
        # (Azuma with ranges eps_i): delta' = delta - sum(delta_i) is the slack.
        items = [(eps, d, c) for (eps, d), c in self.basic_counts.items()]
        if any(math.isinf(eps) for eps, _, _ in items):
            return math.inf
        slack = delta - math.fsum(d * c for _, d, c in items)
        if not items:
            return 0.0
        if not slack > 0:
            return math.inf
        sum_sq = math.fsum(c * eps * eps for eps, _, c in items)
        drift = math.fsum(c * eps * math.expm1(eps) for eps, _, c in items)
        return math.sqrt(2.0 * math.log(1.0 / slack) * sum_sq) + drift

    def epsilon_at(self, delta):
        """``min(basic, composition in use)`` epsilon at ``delta`` (memoised).

        The composition in use alone when :meth:`basic_offered` is False.
        """
        if delta not in self._memo:
            if self.in_use() == "basic":
                value = self.basic_epsilon_at(delta)
            elif not self.basic_offered():
                value = self.tight_epsilon_at(delta)
            else:
                value = min(self.basic_epsilon_at(delta), self.tight_epsilon_at(delta))
            self._memo[delta] = value
        return self._memo[delta]

    def fits(self, epsilon, delta):
        basic_epsilon, basic_delta = self.basic()
        # Fast path: min(basic, chosen) <= basic, where the minimum is offered.
        if (
            self.basic_offered()
            and delta_fits(basic_delta, delta)
            and epsilon_fits(basic_epsilon, epsilon)
        ):
            return True
        if self.in_use() == "basic":
            return False
        return epsilon_fits(self.epsilon_at(delta), epsilon)

    def spent(self, delta_budget):
        """The ``(epsilon, delta)`` certificate reported as spent."""
        basic_epsilon, basic_delta = self.basic()
        if self.in_use() == "basic" or not self.release_counts:
            return basic_epsilon, basic_delta
        tight = self.epsilon_at(delta_budget)
        if not self.basic_offered():
            return tight, delta_budget
        if delta_fits(basic_delta, delta_budget) and basic_epsilon <= tight:
            return basic_epsilon, basic_delta
        # A tight conversion states its epsilon at the budget's delta.
        return tight, delta_budget
