"""Private mean, variance, histogram and quantiles from one release of sums.

Each function maps the rows through a public, row-local map of norm at most
1 and releases the column sums ``Phi^T 1`` once with
:class:`~dpsklearn.mechanisms.SufficientStatisticsRelease` (the moment
alone: the Gram matrix and eigenvalue have share 0), Gaussian noise at the
replace-one sensitivity ``2 B_x B_y = 2`` (``docs/no_public_rows.rst``, "The
release"), converted to ``(epsilon, delta)`` exactly through Gaussian DP.
Everything after the release is post-processing:

* :func:`mean` and :func:`var`: each column clipped to its public bounds and
  scaled to ``t`` in [0, 1]; the row ``[t, t^2]`` (``var``) or ``[t]``
  (``mean``) with a constant, divided by its public norm bound, gives the
  count, the sums and the sums of squares;
* :func:`histogram`: the one-hot of each value's bin among ``bins`` public,
  equal-width bins of ``range`` (values outside clipped into the end bins);
* :func:`quantile`: the histogram on a fine public grid of ``bins`` bins,
  its noisy counts floored at 0, cumulated and inverted (linear within a
  bin).

A function spends its ``(epsilon, delta)`` from ``accountant`` when one is
given (refusing before any computation when it cannot pay); the noise comes
from ``noise_random_state`` (``None``: OS entropy).

``x`` may be a Dask array, Series or DataFrame (``docs/cluster.rst``, "Data
larger than one machine"): each partition's sums are computed where it lives
(and its missing values refused there, before the spend), added in the
client, and released once, as for NumPy input.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._dask_input import dask_column_partitions, is_dask_collection
from ..exceptions import BudgetExhaustedError
from ..mechanisms import SufficientStatisticsRelease
from ..noise import NoiseSource, make_noise_generators

__all__ = ["histogram", "mean", "quantile", "var"]


class _DaskValues:
    """A Dask ``x``'s partitions (``docs/cluster.rst``): summed where they live."""

    def __init__(self, partitions: list, n_columns: int):
        self.partitions = partitions
        self.n_columns = n_columns


def _float_columns(x: Any) -> NDArray[np.float64]:
    """Values as a 2-D float array with missing values refused."""
    values = np.asarray(x, dtype=np.float64)
    values = values.reshape(values.shape[0], -1)
    if np.any(np.isnan(values)):
        raise ValueError("x has missing values; fill them with a public value first.")
    return values


def _columns(x: ArrayLike, bounds: Any) -> tuple[Any, np.ndarray, bool]:
    if is_dask_collection(x):
        partitions, n_columns, single = dask_column_partitions(x)
        values: Any = _DaskValues(partitions, n_columns)
    else:
        single = np.ndim(x) == 1
        values = _float_columns(x)
        if values.shape[0] == 0:
            raise ValueError("x must have at least one row.")
        n_columns = values.shape[1]
    limits = np.asarray(bounds, dtype=np.float64)
    if limits.shape == (2,):
        limits = np.tile(limits[:, None], (1, n_columns))
    if limits.shape != (2, n_columns) or np.any(limits[0] >= limits[1]):
        raise ValueError(
            "bounds must be (lower, upper) with lower < upper, one pair per column "
            f"(shape (2,) or (2, {n_columns})), got {bounds!r}."
        )
    if not np.all(np.isfinite(limits)):
        raise ValueError(f"bounds must be finite, got {bounds!r}.")
    return values, limits, single


def _partition_sums(partition: Any, features_of) -> NDArray[np.float64]:
    """One partition's ``features^T 1`` (runs where the partition lives)."""
    return features_of(_float_columns(partition)).sum(axis=0)


def _feature_sums(values: Any, features_of) -> NDArray[np.float64]:
    """``features_of(values)^T 1``; summed over a Dask ``x``'s partitions."""
    if isinstance(values, _DaskValues):
        import dask

        parts = [
            dask.delayed(_partition_sums)(part, features_of)
            for part in values.partitions
        ]
        return np.sum(dask.compute(*parts), axis=0)
    return features_of(values).sum(axis=0)


def _released_sums(
    values: Any,
    features_of,
    width: int,
    epsilon: float,
    delta: float,
    accountant,
    noise_random_state,
) -> np.ndarray:
    """``features_of(values)^T 1`` released once (rows of norm at most 1)."""
    mechanism = SufficientStatisticsRelease.calibrate(
        epsilon,
        delta,
        n_features=width,
        feature_bound=1.0,
        label_bound=1.0,
        shares=(0.0, 1.0, 0.0),
    )
    if accountant is not None:
        events = mechanism.privacy_events("statistics")
        if not accountant.can_spend_events(events):
            raise BudgetExhaustedError(
                "the accountant cannot pay for this release "
                f"(epsilon={epsilon}, delta={delta}); nothing was computed."
            )
    sums = _feature_sums(values, features_of)
    if accountant is not None:
        accountant.spend_events(events)
    noise = NoiseSource(*make_noise_generators(noise_random_state, 1))
    return mechanism.release(None, sums, None, noise).moment


def _power_features(values, limits, powers, scale):
    """``[t^k for k in powers] + [1]`` per row, scaled to norm at most 1."""
    t = (np.clip(values, limits[0], limits[1]) - limits[0]) / (limits[1] - limits[0])
    blocks = [t**k for k in powers] + [np.ones((t.shape[0], 1))]
    return np.hstack(blocks) * scale


def _moments(x, bounds, epsilon, delta, accountant, noise_random_state, powers):
    values, limits, single = _columns(x, bounds)
    d = limits.shape[1]
    scale = (1.0 - 2.0**-50) / math.sqrt(len(powers) * d + 1)
    features_of = partial(_power_features, limits=limits, powers=powers, scale=scale)
    sums = _released_sums(
        values,
        features_of,
        len(powers) * d + 1,
        epsilon,
        delta,
        accountant,
        noise_random_state,
    )
    sums = sums / scale
    count = max(sums[-1], 1.0)
    parts = [sums[i * d : (i + 1) * d] / count for i in range(len(powers))]
    return parts, limits, single


def mean(
    x: ArrayLike,
    bounds: Any,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: Any = None,
    noise_random_state: int | None = None,
) -> float | NDArray[np.float64]:
    """Private mean of each column, clipped to public ``bounds``.

    Parameters
    ----------
    x : array-like of shape (n_samples,) or (n_samples, n_columns)
    bounds : (lower, upper) or array of shape (2, n_columns)
        Public; values are clipped to them.
    epsilon, delta : float
    accountant : PrivacyAccountant, default=None
        Pays for the release when given.
    noise_random_state : int, default=None
        Seeds the noise (tests and experiments only; warns).

    Returns
    -------
    mean : float or ndarray of shape (n_columns,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.statistics import mean
    >>> x = np.random.default_rng(0).uniform(0, 10, 100_000)
    >>> round(float(mean(x, (0, 10), noise_random_state=0)), 1)
    5.0
    """
    (first,), limits, single = _moments(
        x, bounds, epsilon, delta, accountant, noise_random_state, (1,)
    )
    result = limits[0] + np.clip(first, 0.0, 1.0) * (limits[1] - limits[0])
    return float(result[0]) if single else result


def var(
    x: ArrayLike,
    bounds: Any,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: Any = None,
    noise_random_state: int | None = None,
) -> float | NDArray[np.float64]:
    """Private variance of each column, clipped to public ``bounds``.

    ``E[t^2] - E[t]^2`` of the released sums, floored at 0, in the units of
    ``x``.

    Parameters
    ----------
    x : array-like of shape (n_samples,) or (n_samples, n_columns)
    bounds : (lower, upper) or array of shape (2, n_columns)
        Public; values are clipped to them.
    epsilon, delta : float
    accountant : PrivacyAccountant, default=None
        Pays for the release when given.
    noise_random_state : int, default=None
        Seeds the noise (tests and experiments only; warns).

    Returns
    -------
    var : float or ndarray of shape (n_columns,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.statistics import var
    >>> x = np.random.default_rng(0).uniform(0, 10, 100_000)
    >>> round(float(var(x, (0, 10), noise_random_state=0)))
    8
    """
    (first, second), limits, single = _moments(
        x, bounds, epsilon, delta, accountant, noise_random_state, (1, 2)
    )
    first = np.clip(first, 0.0, 1.0)
    result = np.maximum(second - first**2, 0.0) * (limits[1] - limits[0]) ** 2
    return float(result[0]) if single else result


def histogram(
    x: ArrayLike,
    bins: int = 10,
    range: tuple[float, float] | None = None,  # noqa: A002  # numpy's name
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: Any = None,
    noise_random_state: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Private counts over ``bins`` public, equal-width bins of ``range``.

    Parameters
    ----------
    x : array-like of shape (n_samples,)
    bins : int, default=10
    range : (float, float)
        Public; required (values outside it are counted in the end bins).
    epsilon, delta, accountant, noise_random_state
        As for :func:`mean`.

    Returns
    -------
    counts : ndarray of shape (bins,)
        Noisy counts (real numbers; may be negative).
    edges : ndarray of shape (bins + 1,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.statistics import histogram
    >>> x = np.random.default_rng(0).uniform(0, 1, 50_000)
    >>> counts, edges = histogram(x, 4, (0, 1), noise_random_state=0)
    >>> bool(np.all(np.abs(counts - 12_500) < 500)), edges.tolist()
    (True, [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    if range is None:
        raise ValueError(
            "range is required: the public (lower, upper) of the values "
            "(reading it from the private rows would leak them)."
        )
    if int(bins) < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}.")
    if not is_dask_collection(x):
        x = np.asarray(x, dtype=np.float64).ravel()
    values, limits, _ = _columns(x, range)
    if limits.shape[1] != 1:
        raise ValueError("x must be one column of values for a histogram.")
    lo, hi = float(limits[0, 0]), float(limits[1, 0])
    features_of = partial(_bin_features, lo=lo, hi=hi, bins=int(bins))
    counts = _released_sums(
        values, features_of, int(bins), epsilon, delta, accountant, noise_random_state
    )
    return counts / (1.0 - 2.0**-50), np.linspace(lo, hi, int(bins) + 1)


def quantile(
    x: ArrayLike,
    q: float | ArrayLike,
    bounds: tuple[float, float],
    *,
    bins: int = 256,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: Any = None,
    noise_random_state: int | None = None,
) -> float | NDArray[np.float64]:
    """Private quantiles from one noisy histogram on a fine public grid.

    The counts of :func:`histogram` (``bins`` bins of ``bounds``), floored at
    0, cumulated and inverted linearly within a bin (post-processing: any
    number of quantiles for the one release).

    Parameters
    ----------
    x : array-like of shape (n_samples,)
    q : float or array-like of floats in [0, 1]
    bounds : (float, float)
        Public.
    bins : int, default=256
    epsilon, delta, accountant, noise_random_state
        As for :func:`mean`.

    Returns
    -------
    quantile : float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.statistics import quantile
    >>> x = np.random.default_rng(0).uniform(0, 100, 50_000)
    >>> np.round(quantile(x, [0.25, 0.5], (0, 100), noise_random_state=0)).tolist()
    [25.0, 50.0]
    """
    levels = np.asarray(q, dtype=np.float64)
    if np.any((levels < 0) | (levels > 1)) or np.any(np.isnan(levels)):
        raise ValueError(f"q must lie in [0, 1], got {q!r}.")
    counts, edges = histogram(
        x,
        bins,
        bounds,
        epsilon=epsilon,
        delta=delta,
        accountant=accountant,
        noise_random_state=noise_random_state,
    )
    cumulative = np.concatenate([[0.0], np.cumsum(np.maximum(counts, 0.0))])
    total = cumulative[-1]
    if total <= 0:
        result = np.full(levels.shape, (edges[0] + edges[-1]) / 2.0)
    else:
        result = np.interp(levels * total, cumulative, edges)
    return float(result) if levels.ndim == 0 else result


def _bin_features(values, lo, hi, bins):
    """The one-hot of each value's bin (norm ``1 - 2^-50``)."""
    t = (np.clip(values[:, 0], lo, hi) - lo) / (hi - lo)
    index = np.minimum((t * bins).astype(np.int64), bins - 1)
    features = np.zeros((t.shape[0], bins))
    features[np.arange(t.shape[0]), index] = 1.0 - 2.0**-50
    return features
