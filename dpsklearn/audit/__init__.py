"""Statistical privacy audits: lower confidence bounds on a mechanism's epsilon.

* :mod:`._bounds` -- Clopper-Pearson bounds, the epsilon lower bound and the
  exact loss of two enumerable distributions;
* :mod:`._audit` -- :func:`audit`, which runs a mechanism on two
  neighbouring inputs, picks or takes an output event, and bounds epsilon;
* :mod:`._attack` -- :func:`audit_private_prediction`, which attacks a
  private estimator as an adversary would (a planted record, queries
  through the public API, a distinguisher) and reports the bound beside the
  claim; :func:`plant_record` and :func:`shard_rows` build its neighbours.

The test suite audits every mechanism on neighbouring datasets with it, and
shows that it catches deliberately broken variants (``docs/audit.rst``).
"""

from ._attack import (
    AttackAuditResult,
    audit_private_prediction,
    plant_record,
    shard_rows,
)
from ._audit import AuditResult, audit
from ._bounds import clopper_pearson, epsilon_lower_bound, exact_epsilon

__all__ = [
    "AttackAuditResult",
    "AuditResult",
    "audit",
    "audit_private_prediction",
]
