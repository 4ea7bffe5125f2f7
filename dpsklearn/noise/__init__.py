"""Noise primitives: the one place where dpsklearn draws mechanism noise.

Every released value in the package is computed from these primitives; no
other module draws mechanism noise, and none uses a floating-point Laplace
sampler. Integer scores get integer noise (:mod:`._discrete`), real values
are released on a grid (:mod:`._grid`), vector releases round continuous
noise onto the grid (:mod:`._continuous`), and one answer is sampled from
scores by the exponential mechanism (:mod:`._selection`). Every function
takes the :class:`numpy.random.Generator` it draws from, so tests can pin
noise; estimators get theirs from :func:`make_noise_generators`. The
mathematics is in ``docs/design.rst``, "Noise primitives".
"""

from ._continuous import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    high_dimensional_laplace,
    rounded_gaussian,
)
from ._discrete import (
    DiscreteLaplaceStream,
    DiscreteNoiseStream,
    discrete_gaussian,
    discrete_laplace,
    truncated_geometric,
)
from ._generators import NoiseSource, make_noise_generators
from ._grid import (
    default_grid_step,
    grid_discrete_gaussian,
    grid_gaussian,
    grid_high_dimensional_laplace,
    grid_laplace,
    grid_units,
    l2_grid_units,
)
from ._selection import (
    exponential_mechanism,
    exponential_mechanism_unchecked,
    project_to_simplex,
    repeated_candidates,
)

__all__: list[str] = []
