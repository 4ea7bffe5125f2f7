"""Private prediction: every answer is a fresh private release (SPEC 3.3).

Seed 000 (Dwork and Feldman 2018, "Privacy-preserving prediction"):

* :class:`PrivatePredictionClassifier` -- Theorem 1's soft majority: ``k``
  teachers on disjoint shards vote, and each query is answered by the
  exponential mechanism on the vote counts, ``P(b) ~ exp(eps_q count_b / 2)``
  (replacing one record changes one teacher, which moves one vote: the
  utility has sensitivity 1). ``predict_proba`` releases the teachers' mean
  probability row with grid Laplace noise.

  With ``mechanism="gnmax"`` (PATE's Gaussian noisy argmax, Papernot et al.
  2018) each query row releases instead its *noisy count vector*, the vote
  counts plus discrete Gaussian noise ``N_Z(0, sigma^2)`` per class
  (:func:`dpsklearn.gnmax.gnmax_noisy_counts`; Canonne, Kamath and Steinke
  2020). One record moves one vote, L2 sensitivity ``sqrt(2)``, so each
  released vector is ``1/sigma^2``-zCDP (RDP ``alpha / sigma^2`` at every
  order ``alpha``), and ``max_queries`` of them are certified within the
  total ``(epsilon, delta)`` by the calibration named in ``calibration_``
  (:func:`dpsklearn.calibration.gnmax_sigma`: dp_accounting RDP, or zCDP).
  ``predict`` is its argmax and ``predict_proba`` the vote shares
  ``project_to_simplex(noisy_counts / k)``: both are post-processing of the
  same release, so a row costs one unit once, whichever method asks first.
* :class:`PrivatePredictionRegressor` -- Theorem 4 with Lemma 2: the mean of
  the teachers' predictions, each clipped to ``target_range`` first, has
  sensitivity ``(hi - lo) / k``; it is released with grid Laplace noise.

``eps_q`` is derived at ``fit`` from the *total* ``(epsilon, delta)`` and
``max_queries`` (:func:`dpsklearn.calibration.per_query_epsilon`), so here
``max_queries`` is part of the guarantee: it is the number of released rows
the budget pays for (SPEC 1, 3.3). A query row asked again gets the answer
already released for it, free (:class:`dpsklearn._serving.ReleaseCache`).
Under ``mechanism="gnmax"`` there is no ``eps_q``: ``sigma`` is derived from
the same three numbers instead.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import (
    ENSEMBLE_CONSTRAINTS,
    TeacherEnsembleMixin,
    check_regression_targets,
)
from ._serving import ReleaseCache, ServingState, row_keys
from .accounting import PrivacyEvent
from .calibration import gnmax_sigma, per_query_epsilon
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .gnmax import gnmax_noisy_counts
from .noise import (
    default_grid_step,
    exponential_mechanism,
    grid_laplace,
    make_noise_generators,
    project_to_simplex,
)
from .planning import private_prediction_r
from .sharding import teacher_class_probabilities, teacher_outputs

__all__ = ["PrivatePredictionClassifier", "PrivatePredictionRegressor"]

# Under zCDP an exponential-mechanism row is eps_q^2/8 and a Laplace-type row
# eps_q^2/2 (SPEC 3.3): one predict_proba row costs four predict rows. "rdp"
# reads the same zCDP costs as RDP curves alpha * rho (only the conversion of
# the total differs), so the ratio is four there too. Under basic
# composition both cost eps_q. Costs are in units of one predict row.
_PROBA_COST = {"basic": 1, "zcdp": 4, "rdp": 4}
# zCDP rho of one query unit, per eps_q^2 (SPEC 3.3).
_ZCDP_RHO_PER_UNIT = {"exponential": 1.0 / 8.0, "laplace": 1.0 / 2.0}

_PRIVATE_PREDICTION_CONSTRAINTS = {
    **ENSEMBLE_CONSTRAINTS,
    "delta": [Interval(Real, 0, 1, closed="left")],
    "max_queries": [Interval(Integral, 1, None, closed="left"), None],
    "calibration": [StrOptions({"auto", "basic", "zcdp", "rdp"})],
}


def check_dense(estimator, X):
    """Refuse sparse input: the release cache keys query rows by their values."""
    if sparse.issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} does not accept sparse input (its "
            "release cache keys query rows by value); pass a dense array, "
            "e.g. X.toarray()."
        )


def check_target_range(target_range, y, estimator_name, stacklevel=3):
    """``(lo, hi)`` from ``target_range``, or from ``y`` with a PrivacyLeakWarning."""
    if target_range is None:
        warnings.warn(
            f"{estimator_name}: target_range is None, so the range of the "
            "answers is taken from the private training targets (min(y), "
            "max(y)); that leaks the extreme targets. Pass the public "
            "target_range=(lo, hi).",
            PrivacyLeakWarning,
            stacklevel=stacklevel,
        )
        lo, hi = float(np.min(y)), float(np.max(y))
        if lo == hi:  # a constant target: give the release a non-empty range
            lo, hi = lo - 0.5, hi + 0.5
        return lo, hi
    try:
        lo, hi = (float(v) for v in np.asarray(target_range, dtype=object).ravel())
    except (TypeError, ValueError):  # not two numbers
        lo = hi = math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(
            "target_range must be a pair (lo, hi) of finite numbers with "
            f"lo < hi, got {target_range!r}."
        )
    return lo, hi


class _PrivatePredictionBase(TeacherEnsembleMixin):
    """Shared fit and serving steps of the two private prediction estimators."""

    _release = "exponential"  # which per-query calibration the answers need

    def _check_max_queries(self):
        if self.max_queries is None:
            raise ValueError(
                f"max_queries=None is not allowed for {type(self).__name__}: "
                "the number of released rows is part of the privacy guarantee "
                "(eps_q = the per-query share of epsilon). Pass an integer >= 1."
            )

    def _per_query_epsilon(self):
        # SPEC 3.3: basic eps/m, or zCDP with rho from (epsilon, delta); "auto"
        # takes the larger eps_q.
        return per_query_epsilon(
            self.epsilon,
            self.delta,
            self.max_queries,
            release=self._release,
            calibration=self.calibration,
        )

    def _privacy_events(self, epsilon_per_query, calibration):
        label = type(self).__name__
        if calibration == "basic":
            # m pure releases of eps_q each (delta unused); "pure" dominates
            # both exponential-mechanism and Laplace-type rows.
            return [
                PrivacyEvent(
                    epsilon=epsilon_per_query,
                    delta=0.0,
                    kind="private_prediction",
                    label=label,
                    count=self.max_queries,
                )
            ]
        # zCDP: the m rows as a whole are (epsilon, delta)-DP (SPEC 4).
        return [
            PrivacyEvent(
                epsilon=float(self.epsilon),
                delta=float(self.delta),
                kind="private_prediction",
                label=label,
            )
        ]

    def _reserve_budget(self, epsilon_per_query, calibration):
        """Check a shared budget before training; the spend follows the fit."""
        accountant = self._get_accountant(self.epsilon, self.delta)
        events = self._privacy_events(epsilon_per_query, calibration)
        self._check_budget_available(accountant, events)
        return accountant, events

    def _new_state(self, config, methods, shared=None):
        """A fresh serving state: one generator and one release cache per method.

        ``shared`` maps a method name to another method whose release (and
        cache) it reads: a row released by either is free for both.
        """
        generators, reseed = make_noise_generators(
            self.noise_random_state, len(methods)
        )
        state = ServingState(
            {**config, "max_queries": self.max_queries, "verbose": self.verbose},
            dict(zip(methods, generators, strict=True)),
            reseed,
        )
        state.caches = {name: ReleaseCache(fields) for name, fields in methods.items()}
        for name, source in (shared or {}).items():
            state.caches[name] = state.caches[source]
        # With a ledger the served-units counter is durable (SPEC 4): copies
        # and restarts continue it instead of getting the budget back.
        state.bind_ledger(self.accountant_, type(self).__name__)
        return state

    def _validate_query(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False)

    def _serve(self, X, method, cost, compute):
        """Answer ``X`` through the cache, charging ``cost`` units per new row.

        Returns the answers of the answered prefix and its length; the caller
        raises :class:`BudgetExhaustedError` when the prefix is short.
        """
        state = self._serving_state_
        with state.serving():
            remaining = state.config["max_queries"] - state.n_served
            n_affordable = max(0, remaining) // cost
            out, n_answered, n_new = state.caches[method].serve(
                row_keys(X), n_affordable, lambda rows: compute(X, rows, state)
            )
            state.n_served += n_new * cost
            if state.config["verbose"]:
                print(
                    f"[{type(self).__name__}] {method}: released {n_new} new "
                    f"row(s) of {X.shape[0]}; query units spent "
                    f"{state.n_served} of {state.config['max_queries']}"
                )
        return out, n_answered

    def _exhausted(self, method, partial, n_answered, n_queries, cost):
        config = self._serving_state_.config
        per_row = "" if cost == 1 else f" ({cost} units per {method} row)"
        return BudgetExhaustedError(
            f"the budget of max_queries={config['max_queries']} query units is "
            f"spent{per_row}; {n_answered} of {n_queries} rows in this call "
            "were answered (see partial_predictions).",
            partial_predictions=partial,
            n_answered=n_answered,
            spends=self.accountant_.events,
        )

    def budget_status(self):
        """Public serving counters: query units spent and left.

        One query unit is one ``predict`` row: ``eps_q`` under basic
        composition, ``eps_q^2/8`` (classifier) or ``eps_q^2/2`` (regressor)
        of zCDP ``rho`` under ``"zcdp"`` and ``"rdp"``; under the
        classifier's ``mechanism="gnmax"``, one released noisy count vector,
        ``1/sigma^2`` of ``rho``.

        Returns
        -------
        status : dict
            ``max_queries``, ``query_units_spent``, ``query_units_remaining``,
            the ``rows_released`` per method (distinct rows; under
            ``mechanism="gnmax"`` both methods read one release, so their
            counts are equal) and ``privacy_spent``: ``{"epsilon": ...}``
            (basic) or ``{"rho": ...}`` (zCDP and RDP, whose curve is
            ``alpha * rho``) of the units spent, out of the total in
            ``privacy_budget``.
        """
        state = self._serving_state_
        sigma = state.config.get("sigma")
        eps_q = state.config["epsilon_per_query"]
        if sigma is not None:  # GNMax: each unit is one 1/sigma^2-zCDP vector
            name, per_unit = "rho", 1.0 / sigma**2
        elif self.calibration_ == "basic":
            name, per_unit = "epsilon", eps_q
        else:
            name, per_unit = "rho", eps_q**2 * _ZCDP_RHO_PER_UNIT[self._release]
        with state.serving():
            cap = state.config["max_queries"]
            return {
                "max_queries": cap,
                "query_units_spent": state.n_served,
                "query_units_remaining": max(0, cap - state.n_served),
                "rows_released": {
                    name: len(cache) for name, cache in state.caches.items()
                },
                "privacy_spent": {name: state.n_served * per_unit},
                "privacy_budget": {name: cap * per_unit},
            }


def _teachers_have(method):
    def check(self):
        if hasattr(self, "estimators_"):
            return all(hasattr(t, method) for t in self.estimators_)
        return hasattr(self._base_estimator(), method)

    return check


def _proba_available(self):
    """GNMax's ``predict_proba`` reads only votes; the other needs teacher rows."""
    state = getattr(self, "_serving_state_", None)
    mechanism = self.mechanism if state is None else state.config.get("mechanism")
    return mechanism == "gnmax" or _teachers_have("predict_proba")(self)


class PrivatePredictionClassifier(
    _PrivatePredictionBase, ClassifierMixin, BaseEstimator
):
    """Private classifier: the exponential mechanism (or GNMax) on the teachers' votes.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards of the
    private data. Each query row is answered by sampling a label with
    probability proportional to ``exp(eps_q * votes / 2)`` (seed 000,
    Theorem 1; for two classes ``P(1) = e^(eps_q nu/2) / (1 + e^(eps_q nu/2))``
    with ``nu = 2 count_1 - k``). Every row costs a share of the budget, so
    unlike :class:`SubsampleAggregateClassifier` no row is free, and none is
    refused until the budget is spent.

    Privacy (SPEC 1, 3.3): everything all calls to ``predict``,
    ``predict_proba`` and ``score`` ever release is ``(epsilon, delta)``-DP
    with respect to replacing one training record. ``epsilon_per_query_`` is
    derived at ``fit`` from ``(epsilon, delta, max_queries)``: by basic
    composition ``epsilon / m``, or through zCDP (the exponential mechanism is
    bounded-range, ``eps_q^2/8``-zCDP, Cesar and Rogers 2021; total
    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2``), or the
    same ``rho`` read as the RDP curve ``alpha * rho`` and converted by
    dp_accounting (``"rdp"``, about 1.5 times the ``rho`` at ``epsilon=1,
    delta=1e-5``). The budget holds ``max_queries`` query units: a
    ``predict`` row costs one, a ``predict_proba`` row (a Laplace-type
    release, ``eps_q^2/2``-zCDP) costs four under zCDP and RDP and one under
    basic composition. A row asked again gets
    the answer already released for it, free. The whole ``(epsilon, delta)``
    is reserved from the accountant at ``fit``. The fitted object holds the
    teachers and is as secret as the training data; pickling it copies them.

    ``mechanism="gnmax"`` (PATE's GNMax, Papernot et al. 2018) answers a row
    by releasing its noisy count vector ``counts + N_Z(0, sigma^2)`` (one
    discrete Gaussian draw per class, Canonne, Kamath and Steinke 2020).
    Replacing one record moves one vote (L2 sensitivity ``sqrt(2)``), so each
    released vector is ``1/sigma^2``-zCDP, RDP ``alpha / sigma^2``;
    ``sigma_`` is calibrated at ``fit`` so that ``max_queries`` of them are
    within ``(epsilon, delta)``, certified by the calibration named in
    ``calibration_`` (:func:`~dpsklearn.calibration.gnmax_sigma`). ``predict``
    is the argmax of the vector (ties to the lowest class index) and
    ``predict_proba`` its vote shares ``project_to_simplex(noisy_counts /
    k)``: both read the same release, so a row costs one unit once, whichever
    method asks first, and ``argmax(predict_proba(X)) == predict(X)``.

    Parameters
    ----------
    estimator : estimator, default=None
        Base classifier cloned for each shard; ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`.
    n_estimators : int or "auto", default="auto"
        Number of teachers ``k``. ``"auto"``: Theorem 1's
        ``r = ceil(6 ln(4 / target_error) / eps_q)``, capped by the data (each
        shard keeps ``min_samples_per_shard`` rows; a warning says when the
        cap binds).
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in [0, 1). ``delta=0`` allows only basic composition
        (and is refused under ``mechanism="gnmax"``).
    max_queries : int, default=1000
        ``m``: query units the budget pays for (part of the guarantee;
        ``None`` is refused). The unit after the last raises
        :class:`BudgetExhaustedError`.
    calibration : {"auto", "basic", "zcdp", "rdp"}, default="auto"
        Composition that turns the total into ``eps_q``
        (:func:`~dpsklearn.calibration.per_query_epsilon`); ``"auto"`` takes
        the one with the largest ``eps_q`` (the one that answers best) and
        records it in ``calibration_``. Under ``mechanism="gnmax"`` it
        certifies ``sigma`` instead (``"rdp"`` or ``"zcdp"``; ``"auto"``
        takes the smaller ``sigma``); ``"basic"`` is refused there (a
        Gaussian release has no pure epsilon).
    target_error : float, default=0.1
        ``alpha`` of Theorem 1, used by ``n_estimators="auto"`` (not under
        ``mechanism="gnmax"``).
    classes : array-like, default=None
        The public label set. ``None`` takes ``unique(y)`` with a
        :class:`PrivacyLeakWarning`.
    min_samples_per_shard : int, default=20
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from; ``None`` gives the model its own.
    random_state : int, RandomState instance or None, default=None
        Seeds the partition and the teachers only, never the mechanism noise.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests only (warns with
        :class:`PrivacyLeakWarning`). ``None``: OS entropy at every fit.
    n_jobs : int, default=None
        Parallel jobs for fitting teachers (joblib).
    verbose : int, default=0
        Progress of the fit and per-call spends (never votes or noise).
    mechanism : {"exponential", "gnmax"}, default="exponential"
        ``"exponential"``: seed 000's soft majority at ``eps_q`` per row.
        ``"gnmax"``: the Gaussian noisy argmax (see above); there
        ``n_estimators="auto"`` is the largest ``k`` the data supports,
        ``max(1, n_samples // min_samples_per_shard)``, since ``sigma``
        does not depend on ``k`` while the vote gaps grow with it (more
        teachers, fewer answers flipped by the noise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    estimators_ : list of estimators
        The teachers (not private), fitted on class indices into ``classes_``.
    n_estimators_ : int
    epsilon_per_query_ : float or None
        ``eps_q`` of one ``predict`` row; ``None`` under
        ``mechanism="gnmax"`` (a Gaussian release has no per-query epsilon:
        see ``sigma_``).
    sigma_ : float or None
        ``mechanism="gnmax"``: scale of the discrete Gaussian noise on each
        vote count; ``None`` under the exponential mechanism.
    calibration_ : str
        ``"basic"``, ``"zcdp"`` or ``"rdp"``: the one used.
    proba_cost_ : int
        Query units charged per ``predict_proba`` row (1 under
        ``mechanism="gnmax"``, and nothing for a row ``predict`` released).
    proba_grid_step_ : float or None
        Grid step ``g`` of ``predict_proba`` releases; ``None`` under
        ``mechanism="gnmax"`` (its vote shares need no grid: the noisy counts
        are integers).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    SubsampleAggregateClassifier : stable queries for free, the rest abstain.
    PrivatePredictionRegressor : the same for real-valued targets.

    Notes
    -----
    The mechanism noise comes from numpy's floating-point Gumbel and
    geometric samplers (and, for GNMax, the discrete Gaussian's acceptance
    test on a floating-point uniform), exact only up to about ``2**-53`` in
    probability.
    The neighbouring relation is replace-one; under add/remove-one the
    data-independent partition shifts every later row, and no guarantee at
    the stated epsilon is claimed.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn.private_prediction import PrivatePredictionClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = PrivatePredictionClassifier(
    ...     n_estimators=50, epsilon=1.0, max_queries=100, classes=[0, 1],
    ...     random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape, clf.predict_proba(X[:3]).shape
    ((3,), (3, 2))
    >>> clf.budget_status()["query_units_spent"]  # 3 + 4 * 3 (zCDP)
    15
    >>> gn = PrivatePredictionClassifier(
    ...     mechanism="gnmax", epsilon=1.0, max_queries=100, classes=[0, 1],
    ...     random_state=0).fit(X, y)
    >>> labels, proba = gn.predict(X[:3]), gn.predict_proba(X[:3])
    >>> gn.budget_status()["query_units_spent"]  # one release serves both
    3
    >>> bool((gn.classes_[proba.argmax(axis=1)] == labels).all())
    True
    """

    _release = "exponential"

    _parameter_constraints: dict = {
        **_PRIVATE_PREDICTION_CONSTRAINTS,
        "target_error": [Interval(Real, 0, 1, closed="neither")],
        "classes": ["array-like", None],
        "mechanism": [StrOptions({"exponential", "gnmax"})],
    }

    def __init__(
        self,
        estimator=None,
        n_estimators="auto",
        *,
        epsilon=1.0,
        delta=1e-5,
        max_queries=1000,
        calibration="auto",
        target_error=0.1,
        classes=None,
        min_samples_per_shard=20,
        accountant=None,
        random_state=None,
        noise_random_state=None,
        n_jobs=None,
        verbose=0,
        mechanism="exponential",
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.delta = delta
        self.max_queries = max_queries
        self.calibration = calibration
        self.target_error = target_error
        self.classes = classes
        self.min_samples_per_shard = min_samples_per_shard
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.mechanism = mechanism

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # truthful: noise costs accuracy
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = False
        return tags

    # -- fit -----------------------------------------------------------------
    def _resolve_k(self, n_samples, epsilon_per_query):
        if self.n_estimators != "auto":
            return self._resolve_n_estimators(n_samples)
        needed = private_prediction_r(self.target_error, epsilon_per_query)  # Thm 1
        supported = max(1, n_samples // self.min_samples_per_shard)
        if needed > supported:
            warnings.warn(
                f"n_estimators='auto': Theorem 1 asks for r={needed} teachers "
                f"(eps_q={epsilon_per_query:.4g}, target_error="
                f"{self.target_error}), but n_samples={n_samples} supports only "
                f"k={supported} at min_samples_per_shard="
                f"{self.min_samples_per_shard}; using k={supported}.",
                UserWarning,
                stacklevel=3,
            )
        return min(needed, supported)

    def fit(self, X, y):
        """Train the teachers on disjoint shards and reserve the whole budget.

        Every input is validated, and the budget checked, before anything is
        spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._start_fit()
        self._check_max_queries()
        gnmax = self.mechanism == "gnmax"
        if gnmax:
            self._check_gnmax_parameters()
        check_dense(self, X)
        X, y_encoded = self._validate_classification_data(X, y)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=gnmax)
        if gnmax:
            # m noisy count vectors of 1/sigma^2-zCDP each within (epsilon,
            # delta); sigma does not depend on k, so "auto" takes every
            # teacher the data supports.
            sigma, calibration = gnmax_sigma(
                self.epsilon,
                self.delta,
                self.max_queries,
                calibration=self.calibration,
            )
            epsilon_per_query = None
            n_estimators = self._resolve_n_estimators(n_samples)
        else:
            sigma = None
            epsilon_per_query, calibration = self._per_query_epsilon()
            n_estimators = self._resolve_k(n_samples, epsilon_per_query)
        accountant, events = self._reserve_budget(epsilon_per_query, calibration)

        self._fit_teacher_ensemble(X, y_encoded, n_estimators)

        accountant.spend_events(events)  # atomic: the whole release is reserved
        n_classes = len(self.classes_)
        self.accountant_ = accountant
        self.epsilon_per_query_ = epsilon_per_query
        self.sigma_ = sigma
        self.calibration_ = calibration
        if gnmax:
            self.proba_cost_ = 1  # the same release as predict's
            self.proba_grid_step_ = None
            # predict and predict_proba read one release per row: one cache.
            self._serving_state_ = self._new_state(
                {
                    "mechanism": "gnmax",
                    "sigma": sigma,
                    "epsilon_per_query": None,
                    "proba_cost": 1,
                    "n_estimators": n_estimators,
                },
                {"predict": {"noisy_counts": (np.int64, (n_classes,))}},
                shared={"predict_proba": "predict"},
            )
            return self
        self.proba_cost_ = _PROBA_COST[calibration]
        self.proba_grid_step_ = default_grid_step(2.0 / n_estimators)
        self._serving_state_ = self._new_state(
            {
                "mechanism": "exponential",
                "epsilon_per_query": epsilon_per_query,
                "proba_cost": self.proba_cost_,
                "proba_grid_step": self.proba_grid_step_,
                "n_estimators": n_estimators,
            },
            {
                "predict": {"label": (np.int64, ())},
                "predict_proba": {"proba": (np.float64, (n_classes,))},
            },
        )
        return self

    def _check_gnmax_parameters(self):
        """Refuse what GNMax cannot certify, before any data is read or spent."""
        if self.calibration == "basic":
            raise ValueError(
                "calibration='basic' is not available with mechanism='gnmax': "
                "a Gaussian release has no pure epsilon to add up. Use "
                "calibration='auto', 'rdp' or 'zcdp'."
            )
        if self.delta == 0:
            raise ValueError(
                "delta=0 is not allowed with mechanism='gnmax': the Gaussian "
                "mechanism's guarantee needs delta > 0. Pass a delta in (0, 1), "
                "or use mechanism='exponential' for a pure guarantee."
            )

    # -- releases ------------------------------------------------------------
    def _release_noisy_counts(self, X, rows, state):
        # GNMax (mechanism="gnmax"): the released object of a row is its whole
        # noisy count vector, 1/sigma^2-zCDP (one vote moved: L2 sensitivity
        # sqrt(2)); labels and vote shares are read from it.
        counts = self._vote_counts(X[rows])
        noisy = gnmax_noisy_counts(
            counts, state.config["sigma"], rng=state.generators["predict"]
        )
        return {"noisy_counts": noisy}, rows.size

    def _release_labels(self, X, rows, state):
        # Seed 000 Theorem 1 / SPEC 3.3: P(b) ~ exp(eps_q count_b / 2), Delta_u
        # = 1 because one replaced record moves one vote.
        counts = self._vote_counts(X[rows])
        labels = exponential_mechanism(
            counts,
            state.config["epsilon_per_query"],
            1.0,
            rng=state.generators["predict"],
        )
        return {"label": np.atleast_1d(labels)}, rows.size

    def _mean_teacher_proba(self, X):
        """Mean over teachers of each teacher's clipped, renormalised row."""
        n_classes = len(self.classes_)
        mean = np.empty((X.shape[0], n_classes))
        for rows, proba in teacher_class_probabilities(self.estimators_, X, n_classes):
            proba = np.clip(proba, 0.0, 1.0)
            total = proba.sum(axis=2, keepdims=True)
            # A row that clips to all zeros carries no vote: uniform.
            proba = np.where(
                total > 0, proba / np.where(total > 0, total, 1.0), 1.0 / n_classes
            )
            mean[rows] = proba.mean(axis=0)
        return mean

    def _release_proba(self, X, rows, state):
        # SPEC 3.3: replacing one record changes one teacher's row (L1 norm 1)
        # into another, so the mean moves by at most 2/k in L1. Grid Laplace
        # per coordinate with floor((2/k)/g) + n_classes units at eps_q, then
        # the simplex projection (post-processing).
        config = state.config
        n_classes = len(self.classes_)
        noisy = grid_laplace(
            self._mean_teacher_proba(X[rows]),
            2.0 / config["n_estimators"],
            config["epsilon_per_query"],
            rng=state.generators["predict_proba"],
            grid_step=config["proba_grid_step"],
            n_coordinates=n_classes,
        )
        return {"proba": project_to_simplex(noisy)}, rows.size

    # -- predict -------------------------------------------------------------
    def predict(self, X, return_abstained=False):
        """Private labels for ``X``, one query unit per new distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public query points.
        return_abstained : bool, default=False
            Also return the abstention mask (all False: this mechanism
            answers every row it can pay for). For a uniform interface with
            :class:`SubsampleAggregateClassifier` and
            :class:`KnowledgeTransferClassifier`.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.

        Raises
        ------
        BudgetExhaustedError
            When ``max_queries`` units are spent part-way; the error carries
            the answers already paid for in ``partial_predictions``.
        """
        X = self._validate_query(X)
        if self._serving_state_.config.get("mechanism") == "gnmax":
            out, n_answered = self._serve(X, "predict", 1, self._release_noisy_counts)
            # argmax, ties to the lowest class index (as dpsklearn.gnmax.gnmax)
            labels = self.classes_[np.argmax(out["noisy_counts"], axis=1)]
        else:
            out, n_answered = self._serve(X, "predict", 1, self._release_labels)
            labels = self.classes_[out["label"]]
        if n_answered < X.shape[0]:
            raise self._exhausted("predict", labels, n_answered, X.shape[0], 1)
        if return_abstained:
            return labels, np.zeros(X.shape[0], dtype=bool)
        return labels

    @available_if(_proba_available)
    def predict_proba(self, X):
        """Private class probabilities (SPEC 3.3), charged per new distinct row.

        Exponential mechanism: each teacher's probability row is clipped to
        [0, 1] and renormalised, the rows are averaged, and the mean is
        released on a grid with discrete Laplace noise per class, then
        projected onto the simplex. A row costs ``proba_cost_`` query units.
        ``argmax(predict_proba(X))`` and ``predict(X)`` are two independent
        noisy releases and may differ. Needs teachers with ``predict_proba``.

        ``mechanism="gnmax"``: the *vote shares*, not mean teacher
        probabilities: ``project_to_simplex(noisy_counts / k)`` of the noisy
        count vector that ``predict`` takes the argmax of (post-processing of
        the same release). A row costs one unit, and nothing if ``predict``
        already released it (and vice versa); ``argmax(predict_proba(X))``
        equals ``predict(X)`` row by row. Any teachers will do (only their
        votes are used).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
            Rows are probability vectors.

        Raises
        ------
        BudgetExhaustedError
            When the budget is spent part-way (``partial_predictions`` holds
            the rows already paid for).
        """
        X = self._validate_query(X)
        config = self._serving_state_.config
        cost = config["proba_cost"]
        if config.get("mechanism") == "gnmax":
            out, n_answered = self._serve(
                X, "predict_proba", cost, self._release_noisy_counts
            )
            proba = project_to_simplex(out["noisy_counts"] / config["n_estimators"])
        else:
            out, n_answered = self._serve(X, "predict_proba", cost, self._release_proba)
            proba = out["proba"]
        if n_answered < X.shape[0]:
            raise self._exhausted("predict_proba", proba, n_answered, X.shape[0], cost)
        return proba


class PrivatePredictionRegressor(_PrivatePredictionBase, RegressorMixin, BaseEstimator):
    """Private regressor: the clipped mean of the teachers, with grid Laplace noise.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards. Each
    query's answer is the mean of the teachers' predictions, each clipped to
    ``target_range = (lo, hi)`` *before* averaging, so that replacing one
    record moves the mean by at most ``(hi - lo) / k`` (seed 000, Theorem 4
    and Lemma 2: averaging ``k`` disjoint teachers divides the stability rate
    by ``k``). It is released as ``g * (round(mean/g) + DLap(units/eps_q))``
    with ``units = floor(((hi - lo)/k)/g) + 1``, clipped to the range.

    Privacy (SPEC 1, 3.3): everything all calls to ``predict`` and ``score``
    ever release is ``(epsilon, delta)``-DP with respect to replacing one
    training record; ``max_queries`` rows are paid for (``eps_q`` each by
    basic composition, or ``eps_q^2/2``-zCDP each, composed by zCDP or RDP),
    a row asked again is
    answered from the release cache for free, and the whole budget is
    reserved at ``fit``. The fitted object holds the teachers and is as
    secret as the training data.

    Parameters
    ----------
    estimator : estimator, default=None
        Base regressor; ``None`` means :class:`~sklearn.linear_model.Ridge`.
    n_estimators : int or "auto", default="auto"
        ``k``; ``"auto"``: the largest ``k`` keeping ``min_samples_per_shard``
        rows per shard (more teachers, less noise).
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In [0, 1); ``0`` allows only basic composition.
    max_queries : int, default=1000
        Rows the budget pays for (part of the guarantee; ``None`` refused).
    calibration : {"auto", "basic", "zcdp", "rdp"}, default="auto"
        As in :class:`PrivatePredictionClassifier`.
    target_range : (float, float), default=None
        Public bounds ``(lo, hi)``, ``lo < hi``. ``None`` infers them from
        ``y`` with a :class:`PrivacyLeakWarning`.
    min_samples_per_shard : int, default=20
    accountant : PrivacyAccountant, default=None
    random_state : int, RandomState instance or None, default=None
    noise_random_state : int, default=None
        For tests only (warns with :class:`PrivacyLeakWarning`).
    n_jobs : int, default=None
    verbose : int, default=0

    Attributes
    ----------
    estimators_ : list of estimators
    n_estimators_ : int
    epsilon_per_query_ : float
    calibration_ : str
    target_range_ : tuple of float
    sensitivity_ : float
        ``(hi - lo) / k``.
    grid_step_ : float
    noise_scale_ : float
        Scale of the released noise in target units,
        ``grid_step_ * units / epsilon_per_query_``.
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from dpsklearn.private_prediction import PrivatePredictionRegressor
    >>> X, y = make_regression(n_samples=2000, n_features=5, random_state=0)
    >>> reg = PrivatePredictionRegressor(
    ...     n_estimators=100, epsilon=1.0, max_queries=10,
    ...     target_range=(-300, 300), random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    _release = "laplace"

    _parameter_constraints: dict = {
        **_PRIVATE_PREDICTION_CONSTRAINTS,
        "target_range": ["array-like", None],
    }

    def __init__(
        self,
        estimator=None,
        n_estimators="auto",
        *,
        epsilon=1.0,
        delta=1e-5,
        max_queries=1000,
        calibration="auto",
        target_range=None,
        min_samples_per_shard=20,
        accountant=None,
        random_state=None,
        noise_random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.delta = delta
        self.max_queries = max_queries
        self.calibration = calibration
        self.target_range = target_range
        self.min_samples_per_shard = min_samples_per_shard
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _base_estimator(self):
        return Ridge() if self.estimator is None else self.estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = False
        return tags

    def fit(self, X, y):
        """Train the teachers on disjoint shards and reserve the whole budget.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._start_fit()
        self._check_max_queries()
        check_dense(self, X)
        y = check_regression_targets(y)
        X, y = validate_data(self, X, y, y_numeric=True)
        lo, hi = check_target_range(self.target_range, y, type(self).__name__)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=False)
        epsilon_per_query, calibration = self._per_query_epsilon()
        n_estimators = self._resolve_n_estimators(n_samples)
        accountant, events = self._reserve_budget(epsilon_per_query, calibration)

        self._fit_teacher_ensemble(X, y, n_estimators, classifier=False)

        accountant.spend_events(events)
        sensitivity = (hi - lo) / n_estimators  # Lemma 2: clip, then average
        grid_step = default_grid_step(sensitivity)
        units = math.floor(sensitivity / grid_step) + 1
        self.accountant_ = accountant
        self.epsilon_per_query_ = epsilon_per_query
        self.calibration_ = calibration
        self.target_range_ = (lo, hi)
        self.sensitivity_ = sensitivity
        self.grid_step_ = grid_step
        self.noise_scale_ = grid_step * units / epsilon_per_query
        self._serving_state_ = self._new_state(
            {
                "epsilon_per_query": epsilon_per_query,
                "target_range": (lo, hi),
                "sensitivity": sensitivity,
                "grid_step": grid_step,
            },
            {"predict": {"value": (np.float64, ())}},
        )
        return self

    def _release_values(self, X, rows, state):
        config = state.config
        lo, hi = config["target_range"]
        X_rows = X[rows]
        total = np.zeros(X_rows.shape[0])
        for chunk, predictions in teacher_outputs(self.estimators_, X_rows, "predict"):
            predictions = predictions.reshape(predictions.shape[0], -1)
            total[chunk] = np.clip(predictions, lo, hi).sum(axis=0)
        mean = total / len(self.estimators_)
        values = grid_laplace(
            mean,
            config["sensitivity"],
            config["epsilon_per_query"],
            rng=state.generators["predict"],
            grid_step=config["grid_step"],
            bounds=(lo, hi),
        )
        return {"value": values}, rows.size

    def predict(self, X):
        """Private predictions for ``X``, one query unit per new distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)

        Raises
        ------
        BudgetExhaustedError
            When ``max_queries`` rows are spent part-way; the error carries
            the answers already paid for in ``partial_predictions``.
        """
        X = self._validate_query(X)
        out, n_answered = self._serve(X, "predict", 1, self._release_values)
        if n_answered < X.shape[0]:
            raise self._exhausted("predict", out["value"], n_answered, X.shape[0], 1)
        return out["value"]
