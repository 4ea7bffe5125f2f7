"""Known-bad variants of dpsklearn's mechanisms for the audit to catch.

Each function here is a plausible implementation mistake that breaks the
claimed guarantee. They live in the tests, never in the package: the audits in
``tests/test_audit.py`` (and ``tests/test_audit_estimators.py`` for
:func:`gnmax_half_sigma`) must flag every one of them (``epsilon_lower >
claimed epsilon`` at the audit's stated confidence), which is the evidence
that the audit has teeth.

* :func:`soft_majority_double` -- the soft majority sampling as printed in
  Dwork and Feldman (2018)
  ``P(r) ~ exp(epsilon count_r)`` instead of ``exp(epsilon count_r / 2)``
  (the exponential mechanism divides by ``2 Delta_u``); leaks
  up to ``2 epsilon``.
* :func:`laplace_half_scale`, :func:`grid_laplace_half_scale` -- Laplace noise
  with half the scale the sensitivity needs; leak ``2 epsilon``.
* :func:`grid_laplace_no_rounding_unit` -- grid Laplace that forgets that
  rounding to the grid can add one unit of sensitivity
  (``floor(Delta/g) + 1``); leaks ``(floor(Delta/g) + 1) /
  floor(Delta/g)`` times epsilon at the worst rounding.
* :func:`paper_distance` -- the printed ``max(0, top - second - 1)`` of
  Bassily, Thakkar and Thakurta (2018), which has sensitivity 2 under
  replace-one; fed to a sparse vector engine
  calibrated for sensitivity 1 it leaks up to ``2 eps0``.
* :func:`sparse_vector_small_query_noise` -- AboveThreshold at ``T = 1`` with
  query noise ``DLap(lam)`` instead of ``DLap(2 lam)``.
* :func:`sparse_vector_releasing_noisy_score` -- a sparse vector that
  releases the noisy score ``q + DLap(2 lam)`` of a passing query instead of
  only the pass; each released score costs ``eps0 / 4`` more.
* :func:`gnmax_half_sigma` -- a fitted
  ``PrivatePredictionClassifier(mechanism="gnmax")`` that serves with half
  the calibrated ``sigma`` (a factor-two slip between the noise scale and
  what the calibration certified): each released row is then
  ``4/sigma^2``-zCDP, four times the claim. Audited in
  ``tests/test_audit_estimators.py``.
* :func:`grid_gaussian_half_sigma` -- a fitted
  ``PrivatePredictionRegressor(mechanism=ClippedMean(noise="gaussian"))``
  that serves with half the calibrated ``sigma_u``: each value is then four
  times the claimed zCDP cost. Audited in ``tests/test_audit_regression.py``.
* :func:`kernel_ridge_shards_divided_twice` -- a fitted sharded
  ``PrivateKernelRidge`` whose noise is calibrated to the shard average's
  sensitivity divided by ``k`` once more (``Delta / k^2``: the averaging
  applied twice); it leaks about ``k`` times the claim. Audited in
  ``tests/test_audit_regression.py``.
* :func:`selection_scoring_without_noise` -- a private search
  (:class:`~dpsklearn.mechanisms.RepeatedSelection`) that compares and
  releases the candidates' exact validation counts. Audited in
  ``tests/test_audit_selection.py``.

All are vectorised over runs, matching :func:`dpsklearn.audit.audit`.
"""

from __future__ import annotations

import math

import numpy as np

from dpsklearn.mechanisms import RepeatedSelection
from dpsklearn.noise import discrete_laplace, grid_laplace


def soft_majority_double(counts, epsilon, *, rng):
    """Soft majority with ``P(r) ~ exp(epsilon counts_r)`` (the factor 1/2 dropped).

    Parameters
    ----------
    counts : array-like of shape (n_runs, n_classes)
    epsilon : float
        The epsilon the variant *claims*.
    rng : numpy.random.Generator

    Returns
    -------
    labels : int64 ndarray of shape (n_runs,)
    """
    counts = np.asarray(counts, dtype=np.float64)
    # Gumbel-max on log-weights epsilon * count: exactly exp(epsilon count).
    return np.argmax(epsilon * counts + rng.gumbel(size=counts.shape), axis=-1)


def laplace_half_scale(values, sensitivity, epsilon, *, rng):
    """Textbook floating-point Laplace with scale ``sensitivity / (2 epsilon)``.

    Twice wrong: half the scale, and a float draw. The audit catches
    the first; the noise-hygiene scan keeps the second out of the package.
    """
    values = np.asarray(values, dtype=np.float64)
    return values + rng.laplace(0.0, sensitivity / (2.0 * epsilon), size=values.shape)


def grid_laplace_half_scale(values, sensitivity, epsilon, *, rng, grid_step=None):
    """Grid Laplace with half the needed scale (``2 epsilon`` for ``epsilon``)."""
    return grid_laplace(
        values, sensitivity, 2.0 * epsilon, rng=rng, grid_step=grid_step
    )


def grid_laplace_no_rounding_unit(values, sensitivity, epsilon, *, rng, grid_step):
    """Grid Laplace with ``floor(Delta/g)`` grid units, not ``floor(Delta/g) + 1``."""
    values = np.asarray(values, dtype=np.float64)
    units = math.floor(sensitivity / grid_step)
    on_grid = np.rint(values / grid_step).astype(np.int64)
    noise = discrete_laplace(units / epsilon, size=values.shape, rng=rng)
    return (on_grid + noise).astype(np.float64) * grid_step


def paper_distance(counts):
    """Bassily et al. (2018)'s ``max(0, top - second - 1)``: sensitivity 2 under
    replace-one.

    Parameters
    ----------
    counts : array-like of shape (..., n_classes)

    Returns
    -------
    dist : int64 ndarray of shape (...)
    """
    counts = np.sort(np.asarray(counts, dtype=np.int64), axis=-1)
    top = counts[..., -1]
    second = counts[..., -2] if counts.shape[-1] > 1 else np.zeros_like(top)
    return np.maximum(0, top - second - 1)


def _first_fail(scores, threshold, lam, query_scale, n_runs, rng):
    """T = 1 sparse vector runs: noisy threshold and query noise per run."""
    scores = np.asarray(scores, dtype=np.int64)
    noisy_threshold = threshold + discrete_laplace(lam, size=(n_runs, 1), rng=rng)
    query_noise = discrete_laplace(query_scale, size=(n_runs, scores.size), rng=rng)
    noisy_scores = scores + query_noise
    fails = noisy_scores <= noisy_threshold
    # index of the first fail; scores.size when every query passes
    first = np.where(fails.any(axis=1), fails.argmax(axis=1), scores.size)
    return first, noisy_scores


def sparse_vector_small_query_noise(scores, threshold, lam, n_runs, *, rng):
    """AboveThreshold at ``T = 1`` with query noise ``DLap(lam)``, not ``DLap(2 lam)``.

    Returns
    -------
    first_fail : int64 ndarray of shape (n_runs,)
        Index of the query that halted the engine (``len(scores)`` if none).
    """
    first, _ = _first_fail(scores, threshold, lam, lam, n_runs, rng)
    return first


def sparse_vector_releasing_noisy_score(scores, threshold, lam, n_runs, *, rng):
    """AboveThreshold at ``T = 1`` that also releases each passing query's noisy score.

    Returns
    -------
    released : int64 ndarray of shape (n_runs, len(scores) + 1)
        Column 0 is the first-fail index (as in the correct engine); column
        ``1 + i`` is query ``i``'s noisy score ``q_i + DLap(2 lam)`` when it
        passed before the halt, and a sentinel (``iinfo.min``) otherwise.
    """
    scores = np.asarray(scores, dtype=np.int64)
    first, noisy_scores = _first_fail(scores, threshold, lam, 2.0 * lam, n_runs, rng)
    released_mask = np.arange(scores.size) < first[:, None]
    shown = np.where(released_mask, noisy_scores, np.iinfo(np.int64).min)
    return np.column_stack([first, shown])


def gnmax_half_sigma(model):
    """Make a fitted GNMax ``PrivatePredictionClassifier`` serve with ``sigma / 2``.

    The model still claims its ``(epsilon, delta)``; its rows are released
    with half the noise the calibration certified (the serving engine's
    sigma is what the release reads). Vectorised like the others: one
    ``predict`` on ``n`` distinct rows is ``n`` runs.

    Parameters
    ----------
    model : PrivatePredictionClassifier
        Fitted with ``mechanism="gnmax"``, not yet serving.

    Returns
    -------
    model : PrivatePredictionClassifier
        The same object, broken.
    """
    engine = model._serving_state_.engine
    engine.sigma = engine.sigma / 2.0
    model.sigma_ = engine.sigma
    return model


def grid_gaussian_half_sigma(model):
    """Make a fitted Gaussian ``PrivatePredictionRegressor`` serve with ``sigma / 2``.

    The model still claims its ``(epsilon, delta)``; its values are released
    with half the discrete Gaussian noise the calibration certified (the
    serving engine's ``sigma_units`` is what the release reads).

    Parameters
    ----------
    model : PrivatePredictionRegressor
        Fitted with ``ClippedMean(noise="gaussian")``, not yet serving.

    Returns
    -------
    model : PrivatePredictionRegressor
        The same object, broken.
    """
    engine = model._serving_state_.engine
    engine.sigma_units = engine.sigma_units / 2.0
    return model


def kernel_ridge_shards_divided_twice(model):
    """Make a fitted sharded ``PrivateKernelRidge`` serve at ``sensitivity / k``.

    The mechanism is rebuilt with the average's sensitivity divided by the
    number of shards once more (its grid and noise follow the smaller
    figure), and the serving engine releases through it.

    Parameters
    ----------
    model : PrivateKernelRidge
        Fitted with ``OutputPerturbation(release="predictions", n_shards=k)``,
        not yet serving.

    Returns
    -------
    model : PrivateKernelRidge
        The same object, broken.
    """
    from dpsklearn.mechanisms import GridLaplaceRelease
    from dpsklearn.mechanisms._per_query import GridLaplaceEngine

    mech = model.privacy_mechanism_
    broken = GridLaplaceRelease(
        mech.epsilon,
        mech.delta,
        mech.max_queries,
        mech.epsilon_per_query,
        mech.calibration_name,
        mech.sensitivity / model.n_estimators_,
        mech.bounds,
    )
    state = model._serving_state_
    state.engine = GridLaplaceEngine(broken, state.engine.noise)
    return model


class SelectionScoringWithoutNoise(RepeatedSelection):
    """A private search that compares the candidates' exact validation counts.

    It keeps :class:`~dpsklearn.mechanisms.RepeatedSelection`'s calibration
    and claim, but ``noisy_count`` forgets the discrete Gaussian: the
    released best score is the exact count of correct validation rows, and
    which candidate wins is a deterministic function of the counts, so one
    validation row can change the release with certainty. Audited in
    ``tests/test_audit_selection.py``.
    """

    def noisy_count(self, count, noise):
        count = np.asarray(count, dtype=np.int64)
        return int(count) if count.ndim == 0 else count


def selection_scoring_without_noise(mechanism):
    """The same calibrated selection, scoring without noise."""
    broken = SelectionScoringWithoutNoise.__new__(SelectionScoringWithoutNoise)
    broken.__dict__.update(vars(mechanism))
    return broken
