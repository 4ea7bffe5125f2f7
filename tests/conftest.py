"""Test configuration.

SCIPY_ARRAY_API=1 must be set before scipy is imported, so that scikit-learn's
estimator checks that need the array API are run rather than skipped (SPEC 8).

BLAS runs single-threaded in tests: the suite fits many tiny models, some in
joblib worker processes, and on a 2-core CI machine multi-threaded BLAS only
oversubscribes the cores (several times slower, same results).
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(1)
