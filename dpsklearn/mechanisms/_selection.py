"""Releases made once: a chosen hypothesis, SQ answers on chunks, a histogram.

* :class:`ExponentialSelection` -- choose one of a finite, data-independent
  set of hypotheses with ``P(h) ~ exp(epsilon u(h) / (2 Delta_u))``
  (McSherry and Talwar 2007; Nikolov's CSC2412 notes): ``u`` is minus a
  training loss whose replace-one sensitivity is ``Delta_u``
  (``docs/design.rst``, "Exponential-mechanism ERM").
* :class:`ChunkedQueries` -- ``M`` statistical queries, the ``i``-th
  answered on the ``i``-th of ``M`` disjoint chunks fixed at ``fit``: by
  parallel composition every answer can use the whole ``epsilon``
  (``docs/design.rst``, "Statistical queries on disjoint chunks").
* :class:`HistogramRelease` -- a vector of known L1 sensitivity (a histogram
  of fractions in ``[0, 1]``), once, with grid Laplace noise per coordinate.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..accounting import BoundedRangeEvent, PrivacyEvent, PureEvent
from ..noise import (
    NoiseSource,
    default_grid_step,
    exponential_mechanism,
    grid_laplace,
    truncated_geometric,
)
from ._base import Engine, Mechanism, Release

__all__ = ["ChunkedQueries", "ExponentialSelection", "HistogramRelease"]


class ExponentialSelection(Mechanism):
    """Sample one index with probability ``~ exp(epsilon u / (2 Delta_u))``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import ExponentialSelection
    >>> from dpsklearn.noise import NoiseSource
    >>> pick = ExponentialSelection(epsilon=1.0, utility_sensitivity=1.0)
    >>> pick.select([0.0, -1000.0], NoiseSource([np.random.default_rng(0)]))
    0
    """

    n_streams = 1

    def __init__(self, epsilon: float, utility_sensitivity: float) -> None:
        self.epsilon = float(epsilon)
        self.utility_sensitivity = float(utility_sensitivity)

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [BoundedRangeEvent(self.epsilon, label=label)]

    def select(self, utilities: ArrayLike, noise: NoiseSource) -> int:
        """The chosen index."""
        return int(
            exponential_mechanism(
                np.asarray(utilities, dtype=np.float64),
                self.epsilon,
                self.utility_sensitivity,
                rng=noise[0],
            )
        )

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return self.epsilon, 0.0


class ChunkedQueriesEngine(Engine):
    """Answers one statistical query on one chunk; the chunk is the caller's."""

    def __init__(self, mechanism: ChunkedQueries, noise: NoiseSource) -> None:
        self.mechanism = mechanism
        self.noise = noise

    def answer(self, method: str, statistic: tuple[float, int]) -> Release:
        """``statistic``: the chunk's count or mean, and its number of rows."""
        epsilon = self.mechanism.epsilon
        value, n_rows = statistic
        if method == "query_count":
            # The geometric mechanism, truncated to the counts possible.
            noisy = truncated_geometric(value, epsilon, 0, n_rows, rng=self.noise[0])
            return Release({"answer": np.atleast_1d(noisy)}, 1)
        # A chunk mean of values in [0, 1] has sensitivity 1/|S_i|.
        sensitivity = 1.0 / n_rows
        noisy = grid_laplace(
            value,
            sensitivity,
            epsilon,
            rng=self.noise[0],
            grid_step=default_grid_step(sensitivity),
            bounds=(0.0, 1.0),
        )
        return Release({"answer": np.atleast_1d(noisy)}, 1)


class ChunkedQueries(Mechanism):
    """``n_queries`` statistical queries on disjoint chunks, each ``epsilon``-DP.

    Examples
    --------
    >>> from dpsklearn.mechanisms import ChunkedQueries
    >>> [type(e).__name__ for e in ChunkedQueries(1.0, 10).privacy_events()]
    ['PureEvent']
    """

    n_streams = 1

    def __init__(self, epsilon: float, n_queries: int) -> None:
        self.epsilon = float(epsilon)
        self.n_queries = int(n_queries)

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        # Disjoint chunks fixed before the first query: parallel composition,
        # so all n_queries answers together are epsilon-DP.
        return [PureEvent(self.epsilon, label=label)]

    def engine(self, noise: NoiseSource) -> ChunkedQueriesEngine:
        return ChunkedQueriesEngine(self, noise)

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return (self.epsilon, 0.0) if units else (0.0, 0.0)


class HistogramRelease(Mechanism):
    """A vector of L1 sensitivity ``sensitivity`` in ``[0, 1]^d``, released once.

    Grid Laplace per coordinate with ``floor(sensitivity/g) + d`` units at
    ``epsilon`` (``docs/design.rst``, "Noise primitives"), clipped to
    ``[0, 1]`` (post-processing).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import HistogramRelease
    >>> from dpsklearn.noise import NoiseSource
    >>> out = HistogramRelease(1.0, 0.1).release(
    ...     [0.2, 0.8], NoiseSource([np.random.default_rng(0)]))
    >>> out.shape
    (2,)
    """

    n_streams = 1

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [PureEvent(self.epsilon, label=label)]

    def release(self, values: ArrayLike, noise: NoiseSource) -> NDArray[np.float64]:
        values = np.asarray(values, dtype=np.float64)
        return grid_laplace(
            values,
            self.sensitivity,
            self.epsilon,
            rng=noise[0],
            n_coordinates=values.shape[-1],
            bounds=(0.0, 1.0),
        )

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return self.epsilon, 0.0
