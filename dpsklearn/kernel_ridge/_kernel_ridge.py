"""Private kernel ridge regression by output perturbation (Nie and Wang 2017).

The non-private fit is the regularised least squares

    f_z = argmin_{f in H_K} (1/n) sum_i (f(x_i) - y_i)^2 + alpha ||f||_K^2,

which is scikit-learn's ``KernelRidge(alpha=alpha * n)`` (that one sums the
squared errors instead of averaging them). Two releases are offered, each a
mechanism of :mod:`dpsklearn.mechanisms` with the sensitivity of Lemma 2
(``docs/design.rst``, "Kernel ridge: sensitivity and releases"):

``OutputPerturbation(release="predictions")``
    Each prediction is ``f_z(x)`` clipped to ``[-M, M]`` plus grid Laplace
    noise, ``max_queries`` of them composed. The fitted object keeps the
    training rows and the dual coefficients, so it is as secret as the data.
``OutputPerturbation(release="model")``
    For shift-invariant kernels: the fit runs on ``D`` paired random Fourier
    features and only the perturbed weights are kept, so the fitted model
    may be published and its predictions are free and unlimited.

Both can be sharded (``OutputPerturbation(n_shards=k)``, divide and
conquer, Zhang, Duchi and Wainwright 2013): ``k`` exact fits on disjoint
shards, in parallel through joblib, averaged; each shard's arrays must fit
scikit-learn's ``working_memory`` (:mod:`._sharding`; ``docs/design.rst``,
"Sharded kernel ridge").
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import PrivateEstimatorMixin, keeps_live_model
from .._dask_input import DaskRows, is_dask_collection
from .._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
)
from .._validation import (
    ACCEPT_SPARSE,
    check_regression_targets,
    n_rows,
    take_rows,
    warn_if_delta_large,
)
from ..mechanisms import (
    MechanismOptions,
    OutputPerturbation,
    SufficientStatistics,
    resolve_mechanism,
    unvalidated_mechanism,
)
from ..serving import serve
from ..teachers import fit_teachers, partition_indices
from ._dask_fit import (
    dask_statistics_training,
    dask_training_rows,
    fit_shards_on_partitions,
    release_dask_stages,
)
from ._kernel_checks import (
    check_kernel,
    resolve_feature_bounds,
    resolve_target_range,
    scale_by_bounds,
)
from ._kernel_ridge_plan import plan_output_perturbation
from ._kernels import (
    _clip_rows,
    _fourier_features,
    _fourier_frequencies,
)
from ._random_feature_ssp import (
    plan_statistics,
    predict_random_features,
    statistics_release,
    statistics_training,
)
from ._sharding import (
    ShardKernelRidge,
    clipped_shard_mean,
    query_block_rows,
)

__all__ = ["PrivateKernelRidge"]

_FIELDS = {"value": (np.float64, ())}


class PrivateKernelRidge(PrivateEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private kernel ridge regression.

    Two published routes, each a ``mechanism``; targets are clipped to the
    public range ``y_bound`` and centred at its midpoint (public), and
    every answer lies in that range.

    Privacy: everything the fitted model ever releases is
    ``(epsilon, delta)``-DP with respect to replacing one training record
    (replace-one with ``n`` public; under add/remove-one no guarantee at the
    stated epsilon is claimed). The whole ``(epsilon, delta)`` is reserved
    from the accountant at ``fit``.

    * ``SufficientStatistics()`` (the default; AdaSSP, Wang 2018, on random
      Fourier features): rows are mapped through ``n_components`` random
      Fourier features of ``kernel`` (``"rbf"`` or ``"laplacian"``; dense
      ``X``); the Gram matrix, the moment and the Gram matrix's smallest
      eigenvalue are released once with Gaussian noise, the regulariser is
      set from the noisy eigenvalue (``alpha`` is not used), and the ridge
      solved from them is published: its predictions are free, unlimited and
      deterministic. By default a linear model on the rows is released
      first with a fifth of the budget and the random features fit its
      residuals (``SufficientStatistics(linear_share=0.2)``).
      ``docs/regression.rst``, "Sufficient-statistics perturbation", gives
      the sensitivities and the proof.

    The output perturbation of Nie and Wang (2017) fits ``f = argmin (1/n)
    sum_i (f(x_i) - y_i)^2 + alpha ||f||_K^2`` over the reproducing kernel
    Hilbert space of ``kernel`` with an exact direct solver, on the centred
    targets (``|y - c| <= M``, ``M`` the range's half-width):

    * ``OutputPerturbation(release="predictions")``: each
      prediction is ``c + clip(f(x), -M, M)``
      plus grid Laplace noise with sensitivity ``min(2 kappa^2 (kappa R + M)
      / (alpha n), 2 M)``, ``R = M / sqrt(alpha)`` (Lemma 2 and Proposition 1
      of Nie and Wang 2017), at a per-query epsilon that composes
      ``max_queries`` releases to ``(epsilon, delta)``
      (:func:`~dpsklearn.mechanisms.kernel_ridge_prediction_release`).
      ``max_queries`` is part of the guarantee: rows after it are abstained on
      (answered ``c``, the range's midpoint, free; marked by
      ``return_abstained``). Every ``predict`` and ``score`` row is charged.
      The fitted object keeps the (clipped) training rows ``X_fit_`` and the
      dual coefficients: it is as secret as the training data, and a pickled
      copy carries a second, independent budget.
    * ``OutputPerturbation(release="model")`` (``"rbf"``, ``"laplacian"``):
      the same objective is
      fitted on ``n_components`` paired random Fourier features
      ``[cos(w.x), sin(w.x)] / sqrt(D)`` (frequencies from ``random_state``,
      independent of the data; ``kappa = sup ||phi(x)|| = 1``) and the
      ``2 D`` weights are released once with noise calibrated to their L2
      sensitivity ``2 kappa (kappa R + M) / (alpha n)``: the analytic Gaussian
      mechanism (Balle and Wang 2018) when ``delta > 0``, the
      high-dimensional Laplace (pure ``epsilon``-DP) when ``delta = 0``, both
      on a grid of step ``g`` with integer noise and grid L2 sensitivity
      ``sensitivity + g sqrt(2 D)``. Only the noisy weights ``coef_`` and the
      frequencies are kept (no training rows, dual coefficients or unnoised
      weights), so the fitted model may be published; its predictions are
      post-processing, free, unlimited and deterministic.

    Sharding (``OutputPerturbation(n_shards=k)``; Zhang, Duchi and
    Wainwright 2013): the
    rows are cut into ``k`` disjoint shards (a data-independent permutation
    from ``random_state``), the same objective is solved exactly on each, in
    parallel through joblib (``n_jobs``; Dask with
    ``joblib.parallel_config(backend="dask")``), and the ``k`` fits are
    averaged: predictions as the mean of the ``k`` shard predictions, each
    clipped to ``[-M, M]``; weights as the mean of the ``k`` weight vectors.
    A replaced record changes one shard, by at most the bound above at
    ``s = n // k`` rows (clipped to ``2 M``, or ``2 R`` for weights), and the
    average by that over ``k``: the released noise is calibrated to
    ``min(Lemma 2 at s rows, 2 M) / k`` (``docs/design.rst``, "Sharded
    kernel ridge"). A shard's fit holds one ``s x s`` Gram matrix
    (``8 s^2`` bytes; ``O(s^3)`` time), so memory is ``O((n/k)^2)`` per
    worker and time ``O(n^3 / k^2)`` in all.

    Memory: every shard's Gram matrix (or, for ``release="model"``, its
    ``s x 2D`` features and solve) must fit scikit-learn's
    ``working_memory`` MiB (``sklearn.set_config(working_memory=...)``,
    1,024 by default); ``n_shards="auto"`` takes the fewest shards that
    fit, and an explicit ``n_shards`` over the limit is refused with a
    ``ValueError`` before anything is allocated. Predictions are computed in
    blocks of query rows whose kernel block against the ``n`` training rows
    fits ``working_memory`` too.

    Floating point: every release lies on a grid of step ``grid_step_`` with
    integer noise. The samplers are numpy's floating-point
    geometric, normal and gamma draws, exact only up to about ``2**-53``; the
    high-dimensional Laplace has no exact integer sampler.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "cosine", "linear", "poly"}, default="rbf"
        A positive-definite kernel with a known bound on ``K(x, x)``: 1 for
        rbf, laplacian and cosine; ``x_bound^2`` for linear and
        ``(gamma x_bound^2 + coef0)^degree`` for poly. Any other kernel is
        refused (no RKHS norm bound, so Lemma 2 does not apply).
    kernel_params : dict, default=None
        The kernel's parameters, as in
        :class:`sklearn.kernel_ridge.KernelRidge`: ``gamma`` (rbf, laplacian,
        poly; default ``1 / n_features``, public: it depends only on the
        number of columns), ``degree`` (poly, an integer >= 1, default 3),
        ``coef0`` (poly, >= 0, default 1), ``x_bound``, the public bound
        on the L2 norm of rows for ``"linear"`` and ``"poly"`` (training and
        query rows are clipped to it; unset, the largest training row norm is
        used with a :class:`~dpsklearn.PrivacyLeakWarning`), and
        ``feature_bounds``, the public range of every column (one pair
        ``(lo, hi)`` or an array of shape ``(2, n_features)``): training and
        query rows are clipped to it and each column mapped to unit variance.
        **The default ``gamma = 1 / n_features`` assumes unit-variance
        columns**: give their public bounds (a scaler fitted on the private
        rows is outside the guarantee). Friedman #1 (columns in [0, 1]):
        R^2 0.73 without, 0.87 with ``feature_bounds=(0, 1)``.
    alpha : float, default=1.0
        The per-sample regularisation ``alpha`` of the objective above. The
        non-private fit equals
        ``sklearn.kernel_ridge.KernelRidge(alpha=alpha * n_samples)``.
    y_bound : float or (float, float), default=None
        The public range of the target: a pair ``(lo, hi)``, or a bound
        ``M`` for ``(-M, M)``. Targets are clipped to it and centred at its
        midpoint; answers lie in it. ``None`` infers ``max |y|`` from the
        private data with a :class:`~dpsklearn.PrivacyLeakWarning`.
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in [0, 1). For ``release="model"``, ``delta = 0`` selects
        the pure-DP high-dimensional Laplace.
    max_queries : int, default=1000
        ``release="predictions"``: the number of prediction rows the budget
        pays for (part of the guarantee; ``None`` is refused): ``predict``
        (and ``score``) costs 1 unit per row. Ignored by ``release="model"``
        (its predictions are free).
    mechanism : {"sufficient_statistics", "output_perturbation"} or options, \
default="sufficient_statistics"
        The release and its options:
        :class:`~dpsklearn.mechanisms.SufficientStatistics`
        (``n_components``, ``shares``) or
        :class:`~dpsklearn.mechanisms.OutputPerturbation` (``release``,
        ``n_components``, ``n_shards``). The composition that splits the
        budget over ``max_queries`` predictions is the tightest admissible
        one (recorded in ``calibration_``).
    n_jobs : int, default=None
        Parallel jobs for the shard fits (joblib); each holds one shard's
        arrays at a time.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from (``clone`` keeps it shared); ``None``
        gives the model its own budget of ``(epsilon, delta)``.
    random_state : int, RandomState instance or None, default=None
        Data-independent randomness only: the Fourier frequencies and the
        partition into shards.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests and experiments only (warns with
        :class:`~dpsklearn.PrivacyLeakWarning`). ``None``: OS entropy at every
        fit.

    Attributes
    ----------
    y_bound_ : float
        ``M``, the half-width of ``target_range_``: the bound on the centred
        targets that the sensitivity uses.
    target_range_ : (float, float)
        The public range used; answers lie in it.
    x_bound_ : float or None
        The row-norm bound used (linear and poly only).
    feature_bounds_ : (ndarray, ndarray) or None
        The public column bounds rows are mapped by (``None``: unset).
    gamma_ : float or None
        The kernel coefficient used.
    kappa_ : float
        ``sqrt(sup K(x, x))`` (1 for ``release="model"``).
    mechanism_ : OutputPerturbation
        The mechanism options used (``n_shards`` resolved).
    n_estimators_ : int
        The number of shards ``k`` used.
    working_memory_ : float
        The memory limit used, in MiB.
    sensitivity_ : float
        Sensitivity of one prediction (``release="predictions"``, sup norm)
        or of the weights (``release="model"``, L2 norm), of the average of
        the ``k`` shards.
    grid_step_ : float
        The grid step ``g``.
    noise_scale_ : float
        ``"predictions"``: the scale of the discrete Laplace noise of one
        prediction, in units of ``y``; ``"model"``: the standard deviation of
        the Gaussian noise per weight, or the scale of the Gamma-distributed
        norm of the high-dimensional Laplace noise.
    center_ : float
        The midpoint of ``target_range_``, around which the targets were
        centred (public).
    release_ : str
        The release: ``"sufficient_statistics"``, ``"grid_laplace"``
        (predictions), ``"grid_gaussian"`` or
        ``"grid_high_dimensional_laplace"`` (model).
    regulariser_ : float
        ``SufficientStatistics`` only: AdaSSP's regulariser, set from the
        noisy smallest eigenvalue (on the scale of ``Phi^T Phi``).
    linear_coef_ : ndarray of shape (n_features + 1,) or None
        ``SufficientStatistics`` with ``linear_share > 0``: the released
        linear stage's weights on ``linear_feature_map(X, row_bound_)``
        (the random features fit its residuals); else None.
    linear_regulariser_ : float or None
        The linear stage's AdaSSP regulariser.
    row_bound_ : float or None
        The public row-norm bound of the linear stage.
    privacy_mechanism_ : GridLaplaceRelease or WeightRelease
        The calibrated mechanism (public figures only).
    per_query_epsilon_ : float
        ``release="predictions"`` only.
    calibration_ : str
        ``release="predictions"`` only: the per-query calibration used.
    X_fit_ : ndarray of shape (n_samples, n_features)
        ``release="predictions"`` only: the (clipped) private training rows,
        shard after shard.
    dual_coef_ : ndarray of shape (n_samples,)
        ``release="predictions"`` only (private): each shard's dual
        coefficients, in the order of ``X_fit_``.
    shard_offsets_ : ndarray of shape (n_shards,)
        ``release="predictions"`` only: where each shard's rows start in
        ``X_fit_`` (``n_shards = n_estimators_``).
    coef_ : ndarray of shape (2 * n_components,) or (2 * n_components + 1,)
        ``SufficientStatistics`` and ``release="model"``: the released
        weights (solved from the noisy statistics, or the noisy mean of the
        shards' weights).
    random_frequencies_ : ndarray of shape (n_components, n_features)
        ``SufficientStatistics`` and ``release="model"`` (data independent).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.kernel_ridge.KernelRidge : the non-private fit (``alpha * n``).
    dpsklearn.planning.kernel_ridge_schedule : a choice of ``alpha`` and
        ``epsilon`` (Nie and Wang 2017, Theorem 3, redone).

    Notes
    -----
    The fit costs ``O(n s^2)`` with ``s = n / k`` rows per shard (``O(n^3)``
    unsharded) and ``8 s^2`` bytes per worker for ``release="predictions"``,
    and ``O(n D^2 + k D^3)`` for ``release="model"``. A prediction costs
    ``O(n)`` kernel evaluations per query row.
    Tuning ``alpha`` or ``epsilon`` by cross-validation on the private data is
    not covered by the guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import PrivateKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 2))
    >>> y = np.sin(3 * X[:, 0])
    >>> from dpsklearn.mechanisms import OutputPerturbation
    >>> model = PrivateKernelRidge(y_bound=(-1, 1), random_state=0).fit(X, y)
    >>> model.release_, model.mechanism_.n_components  # AdaSSP; D from n, epsilon
    ('sufficient_statistics', 56)
    >>> pred = model.predict(X[:3])            # free, unlimited, deterministic
    >>> bool(np.array_equal(pred, model.predict(X[:3])))
    True
    >>> nie_wang = PrivateKernelRidge(
    ...     alpha=0.1, y_bound=1.0, epsilon=2.0, random_state=0,
    ...     mechanism=OutputPerturbation(release="model")).fit(X, y)
    >>> nie_wang.release_
    'grid_gaussian'
    >>> served = PrivateKernelRidge(
    ...     y_bound=1.0, max_queries=10, mechanism="output_perturbation").fit(X, y)
    >>> served.predict(X[:4]).shape
    (4,)
    >>> served.budget_status().query_units_spent
    4
    >>> sharded = PrivateKernelRidge(
    ...     y_bound=1.0, max_queries=10,
    ...     mechanism=OutputPerturbation(n_shards=5)).fit(X, y)
    >>> sharded.n_estimators_, sharded.shard_offsets_.tolist()
    (5, [0, 100, 200, 300, 400])
    """

    _parameter_constraints: dict = {
        "kernel": [str],
        "kernel_params": [dict, None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "y_bound": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "mechanism": [
            StrOptions({"sufficient_statistics", "output_perturbation"}),
            MechanismOptions,
        ],
        "n_jobs": [Integral, None],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "random_state": ["random_state"],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    #: Dask collections: fitted where the partitions live (model releases).
    _accepts_dask_collections = True

    #: The mechanisms this estimator runs, by shorthand.
    _mechanisms = {
        "sufficient_statistics": SufficientStatistics,
        "output_perturbation": OutputPerturbation,
    }

    def __init__(
        self,
        kernel: str = "rbf",
        *,
        kernel_params: Mapping[str, Any] | None = None,
        alpha: float = 1.0,
        y_bound: float | ArrayLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        max_queries: int | None = 1000,
        mechanism: str | MechanismOptions = "sufficient_statistics",
        n_jobs: int | None = None,
        accountant: Any = None,
        random_state: int | np.random.RandomState | None = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.y_bound = y_bound
        self.epsilon = epsilon
        self.delta = delta
        self.max_queries = max_queries
        self.mechanism = mechanism
        self.n_jobs = n_jobs
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Random Fourier features of sufficient statistics need dense rows.
        options = unvalidated_mechanism(
            self.mechanism, self._mechanisms, OutputPerturbation
        )
        tags.input_tags.sparse = not options.releases_statistics
        return tags

    def __dpsklearn_publishable__(self):
        """Whether the fitted model is publishable: only a released model is."""
        options = unvalidated_mechanism(
            self.mechanism, self._mechanisms, OutputPerturbation
        )
        return options.publishes_model

    # -- fit -----------------------------------------------------------------
    def _fit_shards(self, X, y, n_shards, spec, frequencies, attributes):
        """The ``k`` exact shard fits, in parallel (``k = 1``: all rows, in order)."""
        kernel, gamma, degree, coef0, _ = spec
        solver = ShardKernelRidge(
            kernel, gamma, degree, coef0, float(self.alpha), frequencies
        )
        if isinstance(X, DaskRows):  # each shard fitted where its rows are read
            return fit_shards_on_partitions(
                solver, X, y, n_shards, self.random_state, attributes
            )
        if n_shards == 1:
            shards = [np.arange(X.shape[0])]
        else:
            shards = partition_indices(
                X.shape[0], n_shards, check_random_state(self.random_state)
            )
        return fit_teachers(solver, X, y, shards, [0] * n_shards, n_jobs=self.n_jobs)

    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> PrivateKernelRidge:
        """Fit on private data and reserve the whole ``(epsilon, delta)``.

        Every input is validated, and the budget is checked, before anything
        is spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one; a refit
        that is refused leaves the previous model serving.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Private training rows; or a Dask DataFrame or 2-D array for the
            releases that publish a model (fitted where its partitions live,
            ``docs/cluster.rst``; ``y_bound`` then required).
        y : array-like of shape (n_samples,)
            Private targets, clipped to ``[-y_bound, y_bound]``; a Dask
            Series or 1-D array with ``X``'s partitions for a Dask ``X``.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            For an unsupported kernel, a poly kernel with ``coef0 < 0`` or a
            non-integer degree, ``release="model"`` with a kernel that is not
            shift invariant, ``max_queries=None`` with
            ``release="predictions"``, or bad data; before any budget is
            spent.
        BudgetExhaustedError
            When a shared accountant cannot pay for the fit (nothing is
            spent).
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        options = resolve_mechanism(
            self.mechanism, self._mechanisms, owner=type(self).__name__
        )
        if not np.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon!r}.")
        if is_dask_collection(X) or is_dask_collection(y):
            # docs/cluster.rst: rows prepared and checked on the workers.
            X, y = dask_training_rows(self, X, y, options)
        else:
            y = check_regression_targets(y)
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse=ACCEPT_SPARSE,
                y_numeric=True,
                dtype=np.float64,
            )
        n_samples, n_features = X.shape
        kernel, gamma, degree, coef0 = check_kernel(
            self.kernel, self.kernel_params, n_features, options
        )
        feature_bounds = resolve_feature_bounds(self.kernel_params, n_features)
        if feature_bounds is not None and not isinstance(X, DaskRows):
            X = scale_by_bounds(X, feature_bounds)
        warn_if_delta_large(float(self.delta), n_samples)
        lo, hi = resolve_target_range(self.y_bound, y)
        if options.releases_statistics:
            plan = plan_statistics(
                cast(SufficientStatistics, options),
                X,
                y,
                epsilon=self.epsilon,
                delta=self.delta,
                kernel=kernel,
                gamma=gamma,
                target_range=(lo, hi),
            )
            plan.attributes["feature_bounds_"] = feature_bounds
            return plan
        # The other of _mechanisms (resolve_mechanism takes no other class).
        return plan_output_perturbation(
            cast(OutputPerturbation, options),
            X,
            y,
            epsilon=self.epsilon,
            delta=self.delta,
            alpha=float(self.alpha),
            max_queries=self.max_queries,
            kernel_spec=(kernel, gamma, degree, coef0),
            x_bound_source=(self.kernel, self.kernel_params),
            target_range=(lo, hi),
            feature_bounds=feature_bounds,
        )

    def _train(self, plan):
        if "statistics" in plan.training and isinstance(plan.X, DaskRows):
            return dask_statistics_training(plan, self.random_state)
        if "statistics" in plan.training:
            # Non-private until _release replaces it by its noisy release.
            return statistics_training(plan, self.random_state)
        X, y, spec = plan.X, plan.y, plan.training["spec"]
        options = plan.attributes["mechanism_"]
        n_shards = plan.attributes["n_estimators_"]
        if options.release == "model":
            kernel, gamma = spec[0], spec[1]
            frequencies = _fourier_frequencies(
                kernel, gamma, X.shape[1], options.n_components, self.random_state
            )
            shards = self._fit_shards(
                X, y, n_shards, spec, frequencies, plan.attributes
            )
            # Non-private until _release replaces it by its noisy release.
            weights = np.mean([shard.coef_ for shard in shards], axis=0)
            return {"_weights": weights, "random_frequencies_": frequencies}
        x_bound = spec[4]
        if x_bound is not None:
            X = _clip_rows(X, x_bound)
        shards = self._fit_shards(X, y, n_shards, spec, None, plan.attributes)
        sizes = [shard.X_fit_.shape[0] for shard in shards]
        if n_shards == 1:
            X_fit = shards[0].X_fit_
        elif sp.issparse(X):
            X_fit = sp.vstack([shard.X_fit_ for shard in shards], format="csr")
        else:
            X_fit = np.concatenate([shard.X_fit_ for shard in shards])
        return {
            "X_fit_": X_fit,
            "dual_coef_": np.concatenate([shard.dual_coef_ for shard in shards]),
            "shard_offsets_": np.concatenate([[0], np.cumsum(sizes)[:-1]]),
            "per_query_epsilon_": plan.mechanism.epsilon_per_query,
            "calibration_": plan.mechanism.calibration_name,
            "release_": "grid_laplace",
        }

    def _release(self, plan, fitted, noise):
        if "_dask_stages" in fitted:  # the second stage's sums after the first
            release_dask_stages(plan, fitted, noise)
            return
        if "_statistics" in fitted or "_rows" in fitted:
            # Only the weights solved from the noisy statistics leave the fit.
            statistics_release(plan, fitted, noise)
            return
        if "_weights" not in fitted:
            return
        # Only the noisy weights leave the fit.
        fitted["coef_"] = plan.mechanism.release(fitted.pop("_weights"), noise)
        fitted["release_"] = plan.mechanism.name

    # -- predict -------------------------------------------------------------
    def _exact_predictions(self, X):
        """Mean of the shards' ``clip(f_j(x), -M, M)`` (never returned as is)."""
        kernel, gamma, degree, coef0, x_bound = self._kernel_spec_
        if x_bound is not None:
            X = _clip_rows(X, x_bound)
        # No kernel block larger than working_memory: rows x n_train float64.
        block = query_block_rows(self.X_fit_.shape[0], self.working_memory_)
        return clipped_shard_mean(
            X,
            self.X_fit_,
            self.dual_coef_,
            self.shard_offsets_,
            (kernel, gamma, degree, coef0),
            self.y_bound_,
            block,
        )

    def _model_predictions(self, X):
        values = np.empty(X.shape[0], dtype=np.float64)
        frequencies = self.random_frequencies_
        block = query_block_rows(2 * frequencies.shape[0], self.working_memory_)
        for rows in gen_batches(X.shape[0], block):
            values[rows] = _fourier_features(X[rows], frequencies) @ self.coef_
        return np.clip(values, -self.y_bound_, self.y_bound_) + self.center_

    def predict(
        self, X: ArrayLike, return_abstained: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Private predictions for ``X``.

        ``release="model"``: free, unlimited and deterministic (the released
        weights applied to ``X``, clipped to ``target_range_``).
        ``release="predictions"``: each row is a fresh grid Laplace release
        charged against ``max_queries``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_queries, n_features)
            Public query points (linear/poly: clipped to ``x_bound_``).
        return_abstained : bool, default=False
            Also return the mask of rows abstained on (answered ``0`` because
            ``max_queries`` was spent; never under ``release="model"``).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, reset=False, accept_sparse=ACCEPT_SPARSE, dtype=np.float64
        )
        if getattr(self, "feature_bounds_", None) is not None:
            X = scale_by_bounds(X, self.feature_bounds_)
        if self.release_ == "sufficient_statistics":
            values = predict_random_features(
                X,
                self.random_frequencies_,
                self.coef_,
                self.center_,
                self.target_range_,
                self.linear_coef_,
                self.row_bound_,
            )
            abstained = np.zeros(n_rows(X), dtype=bool)
        elif self.release_ != "grid_laplace":
            values = self._model_predictions(X)
            abstained = np.zeros(n_rows(X), dtype=bool)
        else:
            values, abstained = serve(
                self._serving_state_,
                "predict",
                n_rows(X),
                lambda rows: self._exact_predictions(take_rows(X, rows)),
                lambda v: v["value"],
                fields=_FIELDS,
            )
            values = values + self.center_  # post-processing
        if return_abstained:
            return values, abstained
        return values
