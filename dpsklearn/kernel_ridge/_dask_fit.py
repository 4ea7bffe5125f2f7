"""``PrivateKernelRidge`` on Dask collections: shards and sums where the rows live.

``docs/cluster.rst``, "Data larger than one machine". The two
releases that publish a model accept a Dask DataFrame or array for ``X`` and
a Dask Series or array for ``y``, and release what a NumPy fit with the
same seeds releases:

* ``OutputPerturbation(release="model", n_shards=k)``: each shard's exact
  random-feature solve is a teacher of the shared machinery
  (:func:`~dpsklearn.teachers.fit_teacher_ensemble`, hence
  :mod:`dpsklearn.teachers._partitions`): the NumPy path's partition from
  ``random_state``, each shard fitted on a worker on exactly its rows in the
  NumPy order, only the ``2 D`` weights back to the client, averaged and
  released there.
* ``SufficientStatistics()`` (AdaSSP on random features, by default after a
  linear stage): each partition's ``Phi^T Phi`` and ``Phi^T y`` are computed
  where it lives and added in the client before the one release (as
  :mod:`dpsklearn.linear_model` does); the second stage's sums, on the
  residuals of the released linear stage, are taken the same way after it.

What the NumPy path does to the rows at validation (float64, the public
``feature_bounds`` scaling, targets clipped to the public range and centred)
is done on the workers, row by row, so the solves see the same numbers.
``OutputPerturbation(release="predictions")`` keeps every training row in
the fitted model (``X_fit_``), so it refuses Dask input: a ``ValueError``
naming ``X`` before anything is read. ``y_bound`` must be given (it is never
read from a Dask ``y``), and the rows' checks (finite ``X``, numeric finite
``y``) run on the workers before the spend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, RegressorMixin, clone

from .._dask_input import DaskLabels, DaskRows, check_partition
from ..teachers import fit_teacher_ensemble
from ._kernel_checks import scale_by_bounds
from ._random_feature_ssp import (
    _linear_statistics,
    _linear_values,
    plan_frequencies,
    random_feature_statistics,
    staged_release,
)

__all__ = [
    "PreparedShard",
    "dask_statistics_training",
    "dask_training_rows",
    "fit_shards_on_partitions",
    "release_dask_stages",
]


def dask_training_rows(estimator: Any, X: Any, y: Any, options: Any) -> tuple:
    """Handles on Dask ``X`` and ``y``; refuse a release that keeps the rows.

    Raises
    ------
    ValueError
        Naming ``X`` for ``release="predictions"`` (its model holds every
        training row), ``y_bound`` when it is None, or ``X``/``y`` for
        collections that do not line up; before anything is spent.
    """
    if not options.publishes_model:
        raise ValueError(
            "X: PrivateKernelRidge with OutputPerturbation(release="
            "'predictions') keeps every training row in the fitted model "
            "(X_fit_, to evaluate the kernel at query time), so it cannot fit "
            "on a Dask collection without bringing the whole table into this "
            "process. Use mechanism=SufficientStatistics() or "
            "OutputPerturbation(release='model') (both publish a model and fit "
            "where the partitions live), or compute X and y first."
        )
    return estimator._validate_dask_regression_data(X, y, estimator.y_bound, "y_bound")


def _prepared(X: Any, y: Any, feature_bounds: Any, target_range: tuple) -> tuple:
    """The NumPy path's validated rows and centred targets, on a worker."""
    X = np.asarray(X, dtype=np.float64)
    if feature_bounds is not None:
        X = scale_by_bounds(X, feature_bounds)
    lo, hi = target_range
    return X, np.clip(y, lo, hi) - 0.5 * (lo + hi)


class PreparedShard(RegressorMixin, BaseEstimator):
    """One shard's solve on the rows as the NumPy path prepares them (a teacher).

    Fitted on a worker by the teachers' machinery: its rows are made float64
    and scaled by the public ``feature_bounds``, its targets clipped to the
    public ``target_range`` and centred, then ``solver`` (a
    :class:`~dpsklearn.kernel_ridge._sharding.ShardKernelRidge`) solves
    them. Only ``coef_`` returns to the client.
    """

    def __init__(self, solver=None, feature_bounds=None, target_range=(-1.0, 1.0)):
        self.solver = solver
        self.feature_bounds = feature_bounds
        self.target_range = target_range

    def fit(self, X, y):
        X, y = _prepared(X, y, self.feature_bounds, self.target_range)
        self.coef_ = clone(self.solver).fit(X, y).coef_
        return self

    def predict(self, X):  # pragma: no cover - the estimator averages weights
        raise NotImplementedError("shards are averaged by the estimator")


def fit_shards_on_partitions(
    solver: Any,
    rows: DaskRows,
    targets: DaskLabels,
    n_shards: int,
    random_state: Any,
    attributes: dict,
) -> list:
    """The ``k`` shard solves of a NumPy fit, each where its rows are read."""
    prepared = PreparedShard(
        solver, attributes["feature_bounds_"], attributes["target_range_"]
    )
    return fit_teacher_ensemble(
        prepared, rows, targets, n_shards, random_state=random_state
    )


def _partition_statistics(X, y, prepare, frequencies, row_bound, residual_of):
    """One partition's ``(Phi^T Phi, Phi^T y)`` (runs where it lives).

    ``frequencies=None``: the linear stage's map. ``residual_of``: the
    released linear stage ``(coef, label_bound)`` whose clipped residuals
    the random features fit.
    """
    feature_bounds, target_range, consumer = prepare
    targets = check_partition(
        X, y, None, allow_nan=False, consumer=consumer, numeric=True
    )
    X, targets = _prepared(X, targets, feature_bounds, target_range)
    if frequencies is None:
        gram, moment, _ = _linear_statistics(X, targets, row_bound)
        return gram, moment
    if residual_of is not None:
        coef, label_bound = residual_of
        fitted = _linear_values(X, coef, row_bound, label_bound)
        targets = np.clip(targets - fitted, -label_bound, label_bound)
    return random_feature_statistics(X, targets, frequencies)


def _add_statistics(first, second):
    """Two partial ``(Phi^T Phi, Phi^T y)`` added (on a worker)."""
    return first[0] + second[0], first[1] + second[1]


def _summed_statistics(rows, targets, prepare, frequencies, row_bound, residual_of):
    """``(Phi^T Phi, Phi^T y, lambda_min)`` summed over the partitions.

    Added pairwise on the workers (a tree), so one ``p x p`` matrix reaches
    the client whatever the number of partitions (``p = 2 D + 1`` is up to
    1,601: 20 MB each).
    """
    import dask

    parts = [
        dask.delayed(_partition_statistics)(
            X_part, y_part, prepare, frequencies, row_bound, residual_of
        )
        for X_part, y_part in zip(rows.partitions, targets.partitions, strict=True)
    ]
    while len(parts) > 1:
        pairs = [
            dask.delayed(_add_statistics)(parts[i], parts[i + 1])
            for i in range(0, len(parts) - 1, 2)
        ]
        parts = pairs + parts[len(parts) - len(parts) % 2 :]
    ((gram, moment),) = dask.compute(parts[0])
    return gram, moment, float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])


def dask_statistics_training(plan: Any, random_state: Any) -> dict:
    """``statistics_training`` for Dask rows: the first sums, before the spend.

    The NumPy path's frequencies (from ``random_state``). One stage: the
    random features' sums. Two stages: the linear stage's sums now (so a
    partition's refusal spends nothing), the random features' after its
    release (:func:`release_dask_stages`).
    """
    target_range = plan.training["statistics"][3]
    frequencies = plan_frequencies(plan, random_state)
    row_bound = plan.training["row_bound"]
    prepare = (plan.attributes["feature_bounds_"], target_range, plan.X.consumer)
    lo, hi = target_range
    fitted: dict = {"random_frequencies_": frequencies, "center_": 0.5 * (lo + hi)}
    if row_bound is None:
        fitted["_statistics"] = _summed_statistics(
            plan.X, plan.y, prepare, frequencies, None, None
        )
    else:
        fitted["_dask_stages"] = (
            _summed_statistics(plan.X, plan.y, prepare, None, row_bound, None),
            prepare,
        )
    return fitted


def release_dask_stages(plan: Any, fitted: dict, noise: Any) -> None:
    """The two stages' releases, the second one's sums taken on the workers."""
    linear_statistics, prepare = fitted.pop("_dask_stages")
    row_bound = plan.training["row_bound"]
    frequencies = fitted["random_frequencies_"]

    def feature_statistics(linear_coef, label_bound):
        return _summed_statistics(
            plan.X,
            plan.y,
            prepare,
            frequencies,
            row_bound,
            (linear_coef, label_bound),
        )

    fitted.update(
        staged_release(plan.mechanism, linear_statistics, feature_statistics, noise)
    )
    fitted["release_"] = "sufficient_statistics"
