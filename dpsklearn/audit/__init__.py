"""Statistical privacy audits: lower confidence bounds on a mechanism's epsilon.

* :mod:`._bounds` -- Clopper-Pearson bounds, the epsilon lower bound and the
  exact loss of two enumerable distributions;
* :mod:`._audit` -- :func:`audit`, which runs a mechanism on two
  neighbouring inputs, picks or takes an output event, and bounds epsilon.

The test suite audits every mechanism on neighbouring datasets with it, and
shows that it catches deliberately broken variants (``docs/audit.rst``).
"""

from ._audit import AuditResult, audit
from ._bounds import clopper_pearson, epsilon_lower_bound, exact_epsilon

__all__ = [
    "AuditResult",
    "audit",
    "clopper_pearson",
    "epsilon_lower_bound",
    "exact_epsilon",
]
