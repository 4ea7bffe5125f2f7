"""Divide-and-conquer kernel ridge: shards, their memory, and chunked evaluation.

Zhang, Duchi and Wainwright (2013), "Divide and conquer kernel ridge
regression": the rows are cut into ``k`` disjoint shards, kernel ridge is
solved exactly on each (in parallel through joblib, hence Dask), and the
``k`` solutions are averaged. A shard of ``s`` rows needs its ``s x s``
Gram matrix, ``8 s^2`` bytes, instead of ``8 n^2``, and ``O(s^3)`` time
instead of ``O(n^3)``.

Everything here is public arithmetic on sizes or non-private linear algebra
on the private rows; nothing is released. The sensitivity of the average is
the mechanism's (:mod:`dpsklearn.mechanisms`, ``docs/design.rst``,
"Sharded kernel ridge").

* :func:`plan_shards` -- the number of shards ``k`` and the memory guard:
  every shard's Gram matrix (or random-feature system) must fit
  ``working_memory``; a configuration over it is refused, naming
  ``n_estimators``, before anything is allocated.
* :class:`ShardKernelRidge` -- the exact non-private solve of one shard,
  an estimator so that :func:`~dpsklearn.teachers.fit_teachers` fits the
  ``k`` clones in parallel batches.
* :func:`query_block_rows` -- rows per block when a query batch meets the
  training rows, so that no kernel block exceeds ``working_memory``.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, RegressorMixin

from ._kernels import _fit_dual_coef, _fit_weights, _fourier_features, _kernel_matrix

__all__ = ["ShardKernelRidge", "plan_shards", "query_block_rows"]

_MIB = 2**20
_FLOAT = 8  # bytes of one float64


def resolve_working_memory(working_memory):
    """The limit in MiB: the parameter, or scikit-learn's ``working_memory``."""
    if working_memory is None:
        return float(get_config()["working_memory"])
    return float(working_memory)


def shard_bytes(shard_rows, n_weights=None):
    """Bytes of the largest array one shard's exact solve holds.

    ``release="predictions"``: the ``s x s`` Gram matrix, solved in place.
    ``release="model"`` (``n_weights = 2 D`` features): the ``s x 2D``
    feature block plus the system of the smaller side, ``min(s, 2D)^2``.
    """
    if n_weights is None:
        return _FLOAT * shard_rows * shard_rows
    side = min(shard_rows, n_weights)
    return _FLOAT * (shard_rows * n_weights + side * side)


def plan_shards(n_samples, n_estimators, working_memory, n_weights=None):
    """The number of shards ``k``: ``n_estimators``, or the fewest that fit.

    Parameters
    ----------
    n_samples : int
    n_estimators : int or "auto"
    working_memory : float
        The limit in MiB for one shard's arrays (:func:`shard_bytes`).
    n_weights : int, optional
        ``2 D`` for random-feature weights; ``None`` for the Gram matrix.

    Returns
    -------
    k : int

    Raises
    ------
    ValueError
        Naming ``n_shards`` (the mechanism option that ``n_estimators``
        holds) when it leaves a shard empty or a shard's arrays above
        ``working_memory``; raised before any allocation.

    Examples
    --------
    >>> from dpsklearn.kernel_ridge._sharding import plan_shards
    >>> plan_shards(100_000, "auto", 1024)  # shards of at most 11,585 rows
    9
    """
    limit = working_memory * _MIB
    if n_estimators == "auto":
        # ceil(n / rows) shards hold at most ceil(n / k) <= rows rows each.
        rows = largest_shard_rows(limit, n_weights)
        return int(min(max(1, -(-n_samples // rows)), n_samples))
    k = int(n_estimators)
    if k > n_samples:
        raise ValueError(
            f"OutputPerturbation(n_shards={k}) needs at least one row per shard, "
            f"but n_samples={n_samples}."
        )
    largest = -(-n_samples // k)
    needed = shard_bytes(largest, n_weights)
    if needed > limit:
        fewest = plan_shards(n_samples, "auto", working_memory, n_weights)
        raise ValueError(
            f"OutputPerturbation(n_shards={k}) puts up to {largest} rows in a "
            f"shard, whose "
            f"{'Gram matrix' if n_weights is None else 'random-feature system'} "
            f"needs {needed / _MIB:.0f} MiB, over working_memory="
            f"{working_memory:g} MiB. Use n_shards >= {fewest} (or "
            "n_shards='auto'), or raise scikit-learn's working_memory "
            "(sklearn.set_config(working_memory=...))."
        )
    return k


def largest_shard_rows(limit, n_weights=None):
    """The most rows a shard may hold: :func:`shard_bytes` within ``limit`` bytes."""
    cells = int(limit // _FLOAT)
    if n_weights is None:  # s^2 <= cells
        return max(1, math.isqrt(cells))
    if cells >= 2 * n_weights * n_weights:  # s >= 2D: s 2D + (2D)^2 <= cells
        return max(1, (cells - n_weights * n_weights) // n_weights)
    # s < 2D: s 2D + s^2 <= cells
    return max(1, (math.isqrt(n_weights * n_weights + 4 * cells) - n_weights) // 2)


def query_block_rows(n_columns, working_memory):
    """Query rows per block: a ``rows x n_columns`` float64 block within the limit."""
    return max(1, int(working_memory * _MIB // (_FLOAT * max(1, n_columns))))


class ShardKernelRidge(RegressorMixin, BaseEstimator):
    """The exact, non-private kernel ridge solve of one shard (never released).

    ``release="predictions"``: the dual coefficients ``c = (K + alpha s
    I)^-1 y`` of the shard's ``s`` rows (its Gram matrix is built once and
    solved in place, by Cholesky). ``release="model"``: the weights on the
    shared, data-independent random Fourier ``frequencies``. A direct
    solver, so no optimisation error enters the sensitivity.

    Parameters
    ----------
    kernel, gamma, degree, coef0 : the kernel (resolved by the estimator).
    alpha : float
        The per-sample regularisation of every shard.
    frequencies : ndarray of shape (D, n_features) or None
        Random Fourier frequencies for the weights; ``None`` for the dual.
    """

    def __init__(
        self,
        kernel="rbf",
        gamma=None,
        degree=3,
        coef0=1.0,
        alpha=1.0,
        frequencies=None,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.frequencies = frequencies

    def fit(self, X, y):
        if self.frequencies is not None:
            features = _fourier_features(X, self.frequencies)
            self.coef_ = _fit_weights(features, y, float(self.alpha))
            return self

        def gram():
            return _kernel_matrix(
                X, X, self.kernel, self.gamma, self.degree, self.coef0
            )

        # The Gram matrix is solved in place: one s x s array per shard.
        self.dual_coef_ = _fit_dual_coef(gram(), y, float(self.alpha), gram)
        self.X_fit_ = X
        return self

    def predict(self, X):  # pragma: no cover - the estimator evaluates shards
        raise NotImplementedError("shards are evaluated together by the estimator")


def clipped_shard_mean(X, X_fit, dual_coef, shard_starts, spec, y_bound, block_rows):
    """``mean_j clip(f_j(x), -M, M)`` over the shards, in query blocks.

    One kernel block ``K(X_block, X_fit)`` (``block_rows x n``, within the
    limit) per block of queries; each shard's prediction is the sum of its
    columns times its dual coefficients (:func:`numpy.add.reduceat`, no loop
    over shards), clipped to ``[-M, M]`` before the average.
    """
    kernel, gamma, degree, coef0 = spec
    n_shards = len(shard_starts)
    values = np.empty(X.shape[0], dtype=np.float64)
    for start in range(0, X.shape[0], block_rows):
        rows = slice(start, min(X.shape[0], start + block_rows))
        K = _kernel_matrix(X[rows], X_fit, kernel, gamma, degree, coef0)
        K *= dual_coef[None, :]
        per_shard = np.add.reduceat(K, shard_starts, axis=1)
        del K
        values[rows] = np.clip(per_shard, -y_bound, y_bound).sum(axis=1) / n_shards
    return values
