"""Test configuration.

SCIPY_ARRAY_API=1 must be set before scipy is imported, so that scikit-learn's
estimator checks that need the array API are run rather than skipped (SPEC 8).
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")
