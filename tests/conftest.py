"""Test configuration shared by every test module.

SCIPY_ARRAY_API=1 must be set before scipy is imported, so that scikit-learn's
estimator checks that need the array API are run rather than skipped.

BLAS (and OpenMP) run single-threaded in tests: the suite fits many tiny
models, and on a 2-core CI machine multi-threaded BLAS only oversubscribes
the cores (several times slower, same results). The limit is one
session-scoped autouse fixture, :func:`single_thread_blas`, for every test:

* not a call at import time: threadpoolctl can only limit libraries that are
  already loaded, and when this file is imported numpy and scipy are not
  (``threadpool_info()`` is empty there, so such a call limits nothing). By
  the time the first test runs, collection has imported every test module,
  and with them numpy's and scipy's OpenBLAS and scikit-learn's OpenMP.
* threads of this process (joblib's threading backend, Dask's in-process
  workers) share the limit; joblib's loky worker processes do not inherit
  it, but joblib caps their BLAS/OpenMP threads itself at
  ``cpu_count() // n_jobs`` (1 per worker on 2 cores), so no per-module
  fixture is needed for them either.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def single_thread_blas():
    """One BLAS/OpenMP thread in this process for the whole session."""
    with threadpool_limits(limits=1):
        yield
