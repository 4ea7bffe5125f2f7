"""Privacy accounting: typed events, composition, budgets kept in memory or on disk.

* :mod:`._events` -- what a release costs, as typed events
  (:class:`PureEvent`, :class:`BoundedRangeEvent`,
  :class:`DiscreteLaplaceEvent`, :class:`LaplaceEvent`, :class:`GaussianEvent`,
  :class:`ApproximateEvent`); :mod:`._frozen_records` checks their fields.
* :mod:`._dp_accounting` -- Google's ``dp_accounting``, loaded on first use,
  and the randomized response every pure event is modelled by.
* :mod:`._composition` -- closed forms: advanced (DRV), optimal (KOV) and
  zero-concentrated composition and their conversions.
* :mod:`._discrete_gaussian` -- the exact composition of discrete Gaussian
  releases through Gaussian DP.
* :mod:`._bounded_range` -- the exact adaptive composition of
  bounded-range (exponential-mechanism) releases, computed from above.
* :mod:`._composer` -- a list of events composed under basic, advanced,
  zCDP, RDP or PLD composition (the last two through Google's
  ``dp_accounting``), and the one rule for budgets shared between fits.
* :mod:`._split` -- one budget over ``m`` identical releases.
* :func:`smallest_integer`, :func:`largest_certified` -- re-exported from
  ``dpsklearn/_monotone.py``, the searches every calibration inverts with.
* :mod:`._base`, :mod:`._accountant`, :mod:`._ledger` -- the accountant
  interface and its two implementations, in memory and in a database;
  :class:`BudgetStore`, the protocol serving talks to (model records and
  their transactions), and :class:`ModelRecord`.
* :mod:`._ledger_store`, :mod:`._ledger_sqlite`, :mod:`._ledger_postgres`
  -- the ledger's storage interface and its two backends, a SQLite file and
  a PostgreSQL database.

The mathematics is in ``docs/design.rst``, "Composition" and "Shared
accountants and privacy filters", and ``docs/accounting_theory.rst``.
"""

from .._monotone import largest_certified, smallest_integer
from ._accountant import PrivacyAccountant
from ._alternating import alternating_delta, largest_alternating_scale
from ._base import BaseAccountant, BudgetStore, ModelRecord
from ._bounded_range import bounded_range_delta, bounded_range_max_epsilon0
from ._composer import COMPOSITIONS, FILTER_VALID
from ._composition import (
    cks_epsilon,
    cks_rho,
    drv_epsilon,
    drv_epsilon_unchecked,
    kov_delta,
    kov_epsilon,
    kov_epsilon_unchecked,
    kov_log_delta,
    kov_max_epsilon0,
    kov_max_epsilon0_unchecked,
    largest_rdp_rho,
    rdp_epsilon_of_rho,
    rho_to_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)
from ._discrete_gaussian import (
    MIN_DISCRETE_GAUSSIAN_SIGMA,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    pure_gdp_mu,
)
from ._dp_accounting import dp_accounting
from ._events import (
    ApproximateEvent,
    BoundedRangeEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
)
from ._ledger import LedgerError, PrivacyLedger
from ._optimal_composition import (
    largest_two_kind_scale,
    two_kind_epsilon,
    two_kind_log_delta,
)
from ._split import (
    PER_RELEASE_CALIBRATIONS,
    compose_epsilon,
    max_events,
    per_release_epsilon,
    per_release_spent,
)

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "DiscreteLaplaceEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerError",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PrivacyLedger",
    "PureEvent",
    "compose_epsilon",
    "max_events",
    "per_release_epsilon",
]
