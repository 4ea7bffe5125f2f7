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
* :func:`moment_add_remove_sensitivity` -- AdaSSP's moment ``Phi^T Y``
  (one column per class) calibrated at the add/remove sensitivity ``B_x
  B_y`` instead of the replace-one ``2 B_x B_y``. Audited in
  ``tests/test_no_public_rows.py``.

All of the above are vectorised over runs, matching
:func:`dpsklearn.audit.audit`. The context managers below break a whole
estimator while they are active (a class attribute patched, restored on
exit), for the attack audits of ``tests/test_audit_attack*.py``, which fit
and query the estimators through their public API, and for the Gaussian
audits of ``tests/test_audit_gaussian.py``:

* :func:`sparse_vector_noise_scaled` -- the stability tests
  (``SubsampleAggregateClassifier``, ``SoftLabelPrivateRegressor``) serve
  with their threshold and query noise scaled by a factor below one.
* :func:`sparse_vector_never_halts` -- a failed test is counted but the
  engine never halts at ``max_unstable``: the fallbacks (noisy max, abstain)
  after the cutoff are answered without charge.
* :func:`confident_gnmax_answers_uncharged` -- Confident-GNMax answers every
  query that clears its threshold, past ``max_answers``.
* :func:`soft_majority_without_half` -- ``PrivatePredictionClassifier``'s
  exponential mechanism samples ``exp(eps_q count)``, the factor 1/2
  dropped (as :func:`soft_majority_double`).
* :func:`proba_laplace_scaled`, :func:`value_laplace_scaled`,
  :func:`gnmax_sigma_scaled`, :func:`weight_release_scaled` -- the per-query
  probability rows, the per-query values (``PrivatePredictionRegressor``,
  ``PrivateKernelRidge`` predictions), GNMax's noisy counts and the released
  kernel ridge weights with their noise scaled by a factor below one.
* :func:`copies_replay_noise` -- a copy of a fitted model (pickle,
  deepcopy) keeps its generators instead of reseeding: two copies draw the
  same noise, and one answer minus the other cancels it.
* :func:`statistical_queries_reuse_chunks` -- the statistical query oracle
  answers past ``n_queries`` on chunk ``i mod n_queries``, without charge.
* :func:`teacher_plain_vote` -- the knowledge transfer teachers label the
  public rows with their non-private majority vote (or clipped mean).
* :func:`erm_utility_sensitivity_halved` -- ``ExponentialMechanismERM``
  samples with half the utility sensitivity its loss needs.
"""

from __future__ import annotations

import contextlib
import dataclasses
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


# ---------------------------------------------------------------------------
# Broken estimators for the attack audits (tests/test_audit_attack*.py)
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _patched(owner, name, value):
    """Set ``owner.name = value`` for the duration of the block."""
    original = owner.__dict__[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _wrap_calibrate(cls, change):
    """``cls.calibrate`` whose result is passed through ``change(mechanism)``."""
    original = cls.__dict__["calibrate"].__func__

    def calibrate(klass, *args, **kwargs):
        return change(original(klass, *args, **kwargs))

    return _patched(cls, "calibrate", classmethod(calibrate))


@contextlib.contextmanager
def sparse_vector_noise_scaled(factor):
    """Stability tests that serve with their noise scales times ``factor``.

    The threshold ``w``, the claim and the accounting are unchanged; the
    engine's threshold noise and query noise are ``factor`` times what the
    calibration certified (``factor = 1/2``: the loss of each AboveThreshold
    instance doubles).
    """
    from dpsklearn.mechanisms import SoftLabelTest, StabilityTest

    def scaled(mechanism):
        cal = mechanism.calibration
        mechanism.calibration = dataclasses.replace(
            cal,
            threshold_scale=cal.threshold_scale * factor,
            query_scale=cal.query_scale * factor,
        )
        return mechanism

    with _wrap_calibrate(StabilityTest, scaled), _wrap_calibrate(SoftLabelTest, scaled):
        yield


@contextlib.contextmanager
def sparse_vector_never_halts():
    """Sparse vector engines that count failed tests but never halt.

    Every failed test still redraws the threshold and is counted in
    ``budget_status().n_failed_tests``, but the model keeps answering after
    ``max_unstable`` failures: the fallback answers (noisy max, abstain, the
    soft-label midpoint) and the tests after the cutoff are never paid for.
    """
    from dpsklearn.mechanisms import SparseVectorEngine

    with _patched(SparseVectorEngine, "halted", property(lambda self: False)):
        yield


@contextlib.contextmanager
def confident_gnmax_answers_uncharged():
    """Confident-GNMax that answers past ``max_answers`` (never halts)."""
    from dpsklearn.mechanisms import ConfidentGNMaxEngine, confident_gnmax

    def answer(self, method, statistic):
        from dpsklearn.mechanisms import Release

        answers, answered, n_processed = confident_gnmax(
            statistic,
            self.threshold,
            self.sigma_threshold,
            self.sigma_argmax,
            rng=self.noise[0],
        )
        self.n_queries += n_processed
        self.abstention_count += int(n_processed - answered.sum())
        return Release({"label": answers, "abstained": ~answered}, n_processed)

    with _patched(ConfidentGNMaxEngine, "answer", answer):
        yield


@contextlib.contextmanager
def soft_majority_without_half():
    """The per-query exponential mechanism at ``exp(eps_q count)``.

    ``PrivatePredictionClassifier.predict`` samples a label with twice the
    logit the exponential mechanism allows (the factor ``1 / (2 Delta_u)``
    dropped): one vote moved shifts the log-odds by ``2 eps_q``.
    """
    from dpsklearn.mechanisms import Release
    from dpsklearn.mechanisms._per_query import SoftMajorityEngine

    original = SoftMajorityEngine.__dict__["answer"]

    def answer(self, method, statistic):
        if method == "predict_proba":
            return original(self, method, statistic)
        labels = soft_majority_double(
            np.atleast_2d(statistic),
            self.mechanism.epsilon_per_query,
            rng=self.noise[0],
        )
        return Release({"label": np.atleast_1d(labels)}, np.shape(labels)[0])

    with _patched(SoftMajorityEngine, "answer", answer):
        yield


@contextlib.contextmanager
def proba_laplace_scaled(factor):
    """``predict_proba`` rows of the exponential mechanism at ``factor`` x the noise."""
    from dpsklearn.mechanisms import Release
    from dpsklearn.mechanisms._per_query import SoftMajorityEngine
    from dpsklearn.noise import project_to_simplex

    original = SoftMajorityEngine.__dict__["answer"]

    def answer(self, method, statistic):
        if method != "predict_proba":
            return original(self, method, statistic)
        mech = self.mechanism
        noisy = grid_laplace(
            statistic,
            2.0 / mech.n_teachers,
            mech.proba_epsilon / factor,
            rng=self.noise[1],
            grid_step=mech.proba_grid_step,
            n_coordinates=mech.n_classes,
        )
        proba = project_to_simplex(noisy)
        return Release({"proba": proba}, proba.shape[0])

    with _patched(SoftMajorityEngine, "answer", answer):
        yield


@contextlib.contextmanager
def value_laplace_scaled(factor):
    """Grid Laplace per-query values (``PrivatePredictionRegressor``,
    ``PrivateKernelRidge`` predictions) at ``factor`` x the certified scale."""
    from dpsklearn.mechanisms import Release
    from dpsklearn.mechanisms._per_query import GridLaplaceEngine

    def answer(self, method, statistic):
        mech = self.mechanism
        lo, hi = mech.bounds
        values = grid_laplace(
            np.clip(np.asarray(statistic, dtype=np.float64), lo, hi),
            mech.sensitivity,
            mech.epsilon_per_query / factor,
            rng=self.noise[0],
            grid_step=mech.grid_step,
            bounds=(lo, hi),
        )
        return Release({"value": values}, values.shape[0])

    with _patched(GridLaplaceEngine, "answer", answer):
        yield


@contextlib.contextmanager
def gnmax_sigma_scaled(factor):
    """GNMax engines that add ``factor`` x the calibrated ``sigma``."""
    from dpsklearn.mechanisms import GNMaxEngine

    original = GNMaxEngine.__dict__["__init__"]

    def init(self, sigma, noise):
        original(self, sigma * factor, noise)

    with _patched(GNMaxEngine, "__init__", init):
        yield


@contextlib.contextmanager
def weight_release_scaled(factor):
    """``PrivateKernelRidge(release="model")`` weights with ``factor`` x the noise.

    The released weights are the rounded analytic Gaussian at ``sigma_u``
    times ``factor`` (the mechanism still claims its ``(epsilon, delta)``).
    """
    from dpsklearn.mechanisms import WeightRelease
    from dpsklearn.noise import rounded_gaussian

    def release(self, weights, noise):
        on_grid = np.rint(np.asarray(weights, dtype=np.float64) / self.grid_step)
        draws = rounded_gaussian(
            self.sigma_units * factor, size=on_grid.shape, rng=noise[0]
        )
        return (on_grid + draws) * self.grid_step

    with _patched(WeightRelease, "release", release):
        yield


@contextlib.contextmanager
def copies_replay_noise():
    """Copies of a fitted model that keep the original's noise generators.

    :class:`~dpsklearn.noise.NoiseSource` and the index-addressed noise
    streams forget to reseed on pickle and deepcopy, so a copy draws exactly
    the noise its original would draw next: the difference of two copies'
    answers cancels the noise.
    """
    from dpsklearn.noise import DiscreteNoiseStream, NoiseSource

    def keep_state(self):
        return self.__dict__.copy()

    def restore(self, state):
        self.__dict__.update(state)

    with (
        _patched(NoiseSource, "__getstate__", keep_state),
        _patched(NoiseSource, "__setstate__", restore),
        _patched(DiscreteNoiseStream, "__getstate__", keep_state),
        _patched(DiscreteNoiseStream, "__setstate__", restore),
    ):
        yield


@contextlib.contextmanager
def statistical_queries_reuse_chunks():
    """A statistical query oracle that cycles through its chunks for free.

    Query ``i`` is answered on chunk ``i mod n_queries`` and the oracle
    never refuses: after ``n_queries`` answers every chunk answers again,
    outside the parallel composition that pays for one answer per chunk.
    """
    from dpsklearn import PrivateStatisticalQueries

    original = PrivateStatisticalQueries.__dict__["_answer"]

    def answer(self, method, query, reduce):
        state = self._serving_state_
        state.max_queries = None  # no cap: answers past n_queries are free
        chunks = self._chunks_
        saved = chunks
        self._chunks_ = {state.n_served: chunks[state.n_served % len(chunks)]}
        try:
            return original(self, method, query, reduce)
        finally:
            self._chunks_ = saved

    with _patched(PrivateStatisticalQueries, "_answer", answer):
        yield


@contextlib.contextmanager
def teacher_plain_vote():
    """Teachers of a knowledge transfer that label with their exact statistic.

    ``PrivatePredictionClassifier.predict`` returns the teachers' majority
    vote and ``PrivatePredictionRegressor.predict`` their clipped mean, with
    no mechanism: the published student learns non-private labels.
    """
    from dpsklearn import PrivatePredictionClassifier, PrivatePredictionRegressor

    def majority(self, X, return_abstained=False):
        labels = self.classes_[np.argmax(self._vote_counts(np.asarray(X)), axis=1)]
        if return_abstained:
            return labels, np.zeros(labels.shape[0], dtype=bool)
        return labels

    def mean(self, X):
        return self._clipped_mean(np.asarray(X))

    with (
        _patched(PrivatePredictionClassifier, "predict", majority),
        _patched(PrivatePredictionRegressor, "predict", mean),
    ):
        yield


@contextlib.contextmanager
def erm_utility_sensitivity_halved():
    """``ExponentialMechanismERM`` sampling with half its utility sensitivity."""
    from dpsklearn.mechanisms import ExponentialSelection

    original = ExponentialSelection.__dict__["__init__"]

    def init(self, epsilon, utility_sensitivity):
        original(self, epsilon, utility_sensitivity / 2.0)

    with _patched(ExponentialSelection, "__init__", init):
        yield


def moment_add_remove_sensitivity(mechanism):
    """An AdaSSP release whose moment noise is calibrated at ``B_x B_y``.

    Wang (2018) states the sensitivities for add/remove-one; taking the
    moment's ``B_x B_y`` under replace-one (whose sensitivity is ``2 B_x
    B_y``, with ``k`` label columns as with one) halves its noise, and the
    moment alone then costs four times its share of ``rho``. Audited in
    ``tests/test_no_public_rows.py``.
    """
    import copy

    broken = copy.copy(mechanism)
    sigma = list(mechanism.sigma_units)
    sigma[1] = sigma[1] / 2.0
    broken.sigma_units = tuple(sigma)
    return broken
