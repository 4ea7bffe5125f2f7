"""scikit-learn's estimator checks for the ERM estimators and the SQ oracle (SPEC 8).

Configured as SPEC 8 says: ``noise_random_state=0``, no shared accountant,
``PrivacyLeakWarning`` ignored for this test only (the default hypothesis
space infers its bounds from the data), ``SCIPY_ARRAY_API=1`` from
``conftest.py`` so that no check is skipped.

No expected failures are declared: the exponential mechanism runs once, at
``fit``, and the fitted model is a fixed hypothesis, so its predictions are
deterministic, order- and subset-invariant and free (unlike the sparse vector
ensembles, whose answers depend on the query order). The oracle has no
prediction method, so the checks exercise its fit, parameters and pickling.
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpsklearn.erm import ExponentialMechanismERM, ExponentialMechanismERMRegressor
from dpsklearn.statistical_queries import PrivateStatisticalQueries

EXPECTED_FAILURES = {}  # none: see the module docstring


def _check_instances():
    return [
        ExponentialMechanismERM(noise_random_state=0),
        ExponentialMechanismERMRegressor(noise_random_state=0),
        PrivateStatisticalQueries(noise_random_state=0),
    ]


def _expected_failed_checks(estimator):
    return dict(EXPECTED_FAILURES)


@pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")
@parametrize_with_checks(
    _check_instances(), expected_failed_checks=_expected_failed_checks
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
