"""Private kernel ridge regression (Nie and Wang 2017) by output perturbation.

* :mod:`._kernels` -- the non-private fit: kernels with a known bound on
  ``K(x, x)``, exact solves, random Fourier features;
* :mod:`._sharding` -- divide-and-conquer shards: their number under a
  memory limit, one shard's exact solve, chunked evaluation;
* :mod:`._random_feature_ssp` -- a publishable random-feature ridge released
  by perturbed sufficient statistics with an adaptive regulariser (AdaSSP,
  Wang 2018), by default after a linear stage on
  :func:`linear_feature_map`: :func:`fit_random_feature_ssp`;
* :mod:`._dask_fit` -- the model releases on Dask collections: shards
  solved where their rows live, statistics summed over the partitions;
* :mod:`._kernel_ridge` -- :class:`PrivateKernelRidge`, which releases the
  fit through a mechanism of :mod:`dpsklearn.mechanisms`.

The schedule of ``alpha`` and ``epsilon`` against ``n`` is
:func:`dpsklearn.planning.kernel_ridge_schedule`.
"""

from ..planning import KernelRidgeSchedule, kernel_ridge_schedule
from ._kernel_ridge import PrivateKernelRidge
from ._random_feature_ssp import (
    RandomFeatureModel,
    auto_n_components,
    fit_random_feature_ssp,
    linear_feature_map,
    random_feature_map,
    random_feature_statistics,
    random_fourier_frequencies,
)

__all__ = [
    "KernelRidgeSchedule",
    "PrivateKernelRidge",
    "kernel_ridge_schedule",
]
