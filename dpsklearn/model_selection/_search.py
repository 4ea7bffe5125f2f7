"""A private search over a parameter grid: the best model and its score, released.

:class:`PrivateGridSearch` chooses a configuration of a private estimator
on the private rows and publishes the chosen model, all within one
``(epsilon, delta)`` stated up front (``docs/design.rst``, "Private model
selection"):

1. the private rows are split once into training and validation rows by a
   public random permutation (``random_state``);
2. a run draws a configuration uniformly from the grid, fits it on the
   training rows at the per-candidate budget, and scores it by the count of
   validation rows it gets right plus discrete Gaussian noise (replacing one
   validation row moves the count by at most 1);
3. the number of runs is random and secret (Papernot and Steinke 2022:
   Poisson or truncated negative binomial); only the run with the highest
   noisy score is released, with its score.

The per-candidate budget is the largest epsilon whose candidates' Renyi
curves, composed with the score's, repeat and select within the total
(``dp_accounting``'s ``RepeatAndSelectDpEvent``); the mechanism is
:class:`~dpsklearn.mechanisms.RepeatedSelection`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from copy import deepcopy
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterGrid
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted

from .._base import FitPlan, PrivateEstimatorMixin, keeps_live_model
from .._param_validation import HasMethods, Interval, StrOptions
from .._released import ReleasedModelMixin
from .._validation import DELTA_POSITIVE, FINITE_POSITIVE, take_rows
from .._warn import warn_user
from ..ensemble import KnowledgeTransferClassifier, KnowledgeTransferRegressor
from ..erm import ExponentialMechanismERM, ExponentialMechanismERMRegressor
from ..exceptions import BudgetExhaustedError
from ..mechanisms import (
    MechanismOptions,
    RepeatAndSelect,
    curve_of_events,
    resolve_mechanism,
)
from ._candidate_budget import CandidateBudget, ProbedEvents

__all__ = ["PrivateGridSearch", "is_publishable"]


def is_publishable(estimator: Any) -> bool:
    """Whether a fitted ``estimator`` may be published after a private fit.

    True for :class:`~dpsklearn.KnowledgeTransferClassifier` and
    :class:`~dpsklearn.KnowledgeTransferRegressor` (their student is
    post-processing of private labels), :class:`~dpsklearn.ExponentialMechanismERM`
    and its regressor (the chosen hypothesis), and
    :class:`~dpsklearn.PrivateKernelRidge` whose mechanism releases a model
    (the noisy weights). Any other estimator declares it with an attribute
    ``__dpsklearn_publishable__`` (``True``, or a method returning a bool).
    Estimators that answer each query with fresh noise
    (``PrivatePredictionClassifier``, ``SubsampleAggregateClassifier``, ...)
    are not: their fitted object holds the private teachers.

    Parameters
    ----------
    estimator : estimator instance
        Fitted or not: only its type and parameters are read.

    Returns
    -------
    publishable : bool

    Examples
    --------
    >>> from dpsklearn import KnowledgeTransferClassifier, PrivateKernelRidge
    >>> from dpsklearn.model_selection import is_publishable
    >>> is_publishable(KnowledgeTransferClassifier())
    True
    >>> from dpsklearn.mechanisms import OutputPerturbation
    >>> is_publishable(PrivateKernelRidge())  # a sufficient-statistics model
    True
    >>> is_publishable(PrivateKernelRidge(mechanism=OutputPerturbation()))
    False
    """
    declared = getattr(estimator, "__dpsklearn_publishable__", None)
    if declared is not None:
        return bool(declared() if callable(declared) else declared)
    if isinstance(
        estimator,
        (
            KnowledgeTransferClassifier,
            KnowledgeTransferRegressor,
            ExponentialMechanismERM,
            ExponentialMechanismERMRegressor,
        ),
    ):
        return True
    return False


def _parameter_paths(params, name):
    """Nested parameter names that are ``name`` or end with ``__name``."""
    return sorted(k for k in params if k == name or k.endswith("__" + name))


class PrivateGridSearch(
    ReleasedModelMixin, PrivateEstimatorMixin, MetaEstimatorMixin, BaseEstimator
):
    """Choose a private estimator's configuration privately, and publish it.

    The whole search, the chosen model and its validation score together
    are ``(epsilon, delta)``-differentially private with respect to
    replacing one private row (``docs/design.rst``, "Private model
    selection"): Papernot and Steinke's (2022) random repetition over the
    grid, accounted by the Renyi curves of the candidates with
    ``dp_accounting``'s ``RepeatAndSelectDpEvent``.

    **Admissible candidates.** Every configuration must (1) be publishable
    once fitted (:func:`is_publishable`: ``KnowledgeTransferClassifier`` and
    ``KnowledgeTransferRegressor``, ``ExponentialMechanismERM`` and its regressor,
    ``PrivateKernelRidge(mechanism=OutputPerturbation(release="model"))``, or
    an estimator that declares
    ``__dpsklearn_publishable__``), (2) take its privacy budget from an
    ``epsilon`` parameter (nested names such as ``teacher__epsilon`` are
    found) and spend it through an ``accountant`` parameter, and (3) spend
    events with a Renyi curve: pure, exponential-mechanism, Laplace and
    Gaussian releases, and per-query releases (``PrivatePredictionClassifier``
    teachers, exponential or GNMax). A sparse vector stability test
    (``SubsampleAggregateClassifier``, the default mechanism) is a whole
    ``(epsilon, delta)`` event with no curve and is refused, before
    anything is trained. Per-query teachers are accounted by their Renyi
    curve.

    Parameters
    ----------
    estimator : estimator
        The private estimator to configure. Leave its ``epsilon``,
        ``delta`` and ``accountant`` parameters to the search.
    param_grid : dict or list of dict
        As for :class:`~sklearn.model_selection.GridSearchCV`; public.
    epsilon : float, default=1.0
        Total epsilon of the search, the released model and its score.
    delta : float, default=1e-5
        Total delta, in (0, 1).
    mechanism : "repeat_and_select" or RepeatAndSelect, \
default="repeat_and_select"
        The selection and its options
        (:class:`~dpsklearn.mechanisms.RepeatAndSelect`: ``mean_runs``,
        ``runs``, ``score_sigma``, ``tolerance``, the last required to score
        a regressor).
    validation_fraction : float, default=0.2
        Share of the private rows held out to score the candidates.
    epsilon_param, delta_param : str, default="auto"
        The candidates' budget parameters; ``"auto"`` finds the one named
        ``epsilon`` (``delta``) or ending with ``__epsilon`` (``__delta``).
        ``delta_param`` may be absent (pure estimators).
    accountant : PrivacyAccountant or PrivacyLedger, default=None
        A shared budget charged ``(epsilon, delta)`` before anything is
        fitted; ``None`` gives the search its own.
    random_state : int, RandomState instance or None, default=None
        Seeds the public split into training and validation rows.
    noise_random_state : int, default=None
        Seeds the secret number of runs, their candidates and the score
        noise, for tests only (warns with :class:`PrivacyLeakWarning`).
        The candidates' own noise follows their ``noise_random_state``.

    Attributes
    ----------
    best_estimator_ : estimator
        The released model, fitted on the training rows (publishable).
    best_params_ : dict
        Its configuration.
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    best_score_ : float
        Its noisy validation score (a fraction of the validation rows).
    cv_results_ : dict of arrays
        ``"params"``, ``"param_<name>"``, ``"candidate_epsilon"`` (public)
        and ``"mean_test_score"``: the released noisy score for the chosen
        configuration and NaN for every other (their scores, and how often
        each was run, are never released); ``"selected"`` marks it.
    candidate_epsilon_, candidate_delta_ : float
        The budget each candidate was fitted at.
    total_epsilon_ : float
        The Renyi certificate of the whole search at ``delta`` (at most
        ``epsilon``).
    mean_runs_ : float
    score_sigma_ : float
    n_candidates_ : int
    classes_ : ndarray
        The chosen classifier's classes.
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : RepeatedSelection
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    The fit takes time proportional to the secret number of runs; the
    duration is not part of the guarantee and should not be published.
    ``fit`` parameters (such as ``X_public`` of a knowledge-transfer
    candidate) are passed to every candidate unchanged and must be public.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import DecisionStumps, ExponentialMechanismERM
    >>> from dpsklearn.model_selection import PrivateGridSearch
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> X = X.clip(-4, 4)
    >>> stumps = [DecisionStumps([-4, 4], n_thresholds=t) for t in (4, 64)]
    >>> grid = {"hypotheses": stumps}
    >>> # noise_random_state fixes the search's noise for this example only (it
    >>> # warns): the number of runs is random, and may be zero otherwise.
    >>> search = PrivateGridSearch(
    ...     ExponentialMechanismERM(classes=[0, 1]), grid, epsilon=2.0,
    ...     random_state=0, noise_random_state=0).fit(X, y)
    >>> search.best_estimator_.predict(X[:3]).shape
    (3,)
    >>> round(search.candidate_epsilon_, 2), search.total_epsilon_ <= 2.0
    (0.62, True)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_grid": [dict, list],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "mechanism": [StrOptions({"repeat_and_select"}), MechanismOptions],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "epsilon_param": [str],
        "delta_param": [str, None],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "random_state": ["random_state"],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        estimator: Any,
        param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        mechanism: str | MechanismOptions = "repeat_and_select",
        validation_fraction: float = 0.2,
        epsilon_param: str = "auto",
        delta_param: str | None = "auto",
        accountant: Any = None,
        random_state: int | np.random.RandomState | None = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.validation_fraction = validation_fraction
        self.epsilon_param = epsilon_param
        self.delta_param = delta_param
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        for estimator_tags in (tags.classifier_tags, tags.regressor_tags):
            if estimator_tags is not None:
                estimator_tags.poor_score = True  # privacy noise costs accuracy
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        # The candidates' own noise, unless seeded, is fresh at every fit.
        tags.non_deterministic = (
            self.noise_random_state is None or inner.non_deterministic
        )
        return tags

    # -- the candidates --------------------------------------------------------
    def _resolve_paths(self, params):
        def one(name, given, required):
            if given != "auto":
                if given not in params:
                    raise ValueError(
                        f"{name}_param={given!r} is not a parameter of the estimator."
                    )
                return given
            paths = _parameter_paths(params, name)
            if len(paths) > 1:
                raise ValueError(
                    f"the estimator has several {name} parameters {paths}; name the "
                    f"candidates' budget with {name}_param."
                )
            if not paths and required:
                raise TypeError(
                    f"{type(self.estimator).__name__} has no {name} parameter: it is "
                    "not an admissible candidate (a private search sets each "
                    "candidate's budget through it)."
                )
            return paths[0] if paths else None

        epsilon_path = one("epsilon", self.epsilon_param, True)
        delta_path = (
            None if self.delta_param is None else one("delta", self.delta_param, False)
        )
        accountants = _parameter_paths(params, "accountant")
        if not accountants:
            raise TypeError(
                f"{type(self.estimator).__name__} has no accountant parameter: the "
                "search cannot see what its fit spends, so it is not an admissible "
                "candidate."
            )
        return epsilon_path, delta_path, accountants

    def _candidates(self):
        grid = list(ParameterGrid(self.param_grid))
        if not grid:
            raise ValueError("param_grid has no configuration.")
        params = clone(self.estimator).get_params(deep=True)
        epsilon_path, delta_path, accountant_paths = self._resolve_paths(params)
        owned = [p for p in (epsilon_path, delta_path, *accountant_paths) if p]
        for configuration in grid:
            clash = sorted(set(configuration) & set(owned))
            if clash:
                raise ValueError(
                    f"param_grid sets {clash}, which the search sets itself (the "
                    "candidates' budget and accountant)."
                )
        for name in accountant_paths:
            if params[name] is not None:
                raise ValueError(
                    f"the estimator's {name} is set; leave it None: the search "
                    "charges its own accountant and gives each candidate its budget."
                )
        for configuration in grid:
            candidate = clone(self.estimator).set_params(**configuration)
            if not is_publishable(candidate):
                raise TypeError(
                    f"{type(candidate).__name__} with {configuration} is not an "
                    "admissible candidate: its fitted object is not publishable "
                    "(see dpsklearn.model_selection.is_publishable)."
                )
        return grid, epsilon_path, delta_path, accountant_paths

    def _configured(self, configuration, paths, epsilon, budget):
        epsilon_path, delta_path, accountant_paths = paths
        settings = {**configuration, epsilon_path: epsilon}
        if delta_path is not None:
            settings[delta_path] = self.delta
        settings.update({name: budget for name in accountant_paths})
        return clone(self.estimator).set_params(**settings)

    def _probe(self, configuration, paths, epsilon, X, y, fit_params):
        """What the candidate's fit would spend at ``epsilon``; nothing is trained."""
        candidate = self._configured(
            configuration, paths, epsilon, CandidateBudget(epsilon, self.delta)
        )
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                candidate.fit(X, y, **fit_params)
        except ProbedEvents as probe:
            return probe.events, [(w.category, str(w.message)) for w in caught]
        except BudgetExhaustedError as exc:
            raise TypeError(
                f"{type(candidate).__name__} with {configuration} is not an "
                "admissible candidate: what its fit spends has no Renyi curve (for "
                "example a sparse vector stability test, a whole (epsilon, delta) "
                "release)."
            ) from exc
        raise TypeError(
            f"{type(candidate).__name__} with {configuration} is not an admissible "
            "candidate: its fit spent nothing through its accountant parameter."
        )

    # -- fit -----------------------------------------------------------------
    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> PrivateGridSearch:
        """Search privately; fit and keep the chosen configuration.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private rows.
        y : array-like of shape (n_samples,)
            Private targets.
        **fit_params : dict
            Public data passed to every candidate's ``fit`` unchanged (such
            as ``X_public``).

        Returns
        -------
        self : object
        """
        return self._fit(X, y, **fit_params)

    def _plan(self, X, y, **fit_params):
        options = cast(  # the one choice
            RepeatAndSelect,
            resolve_mechanism(
                self.mechanism,
                {"repeat_and_select": RepeatAndSelect},
                owner=type(self).__name__,
            ),
        )
        grid, *paths = self._candidates()
        classifier = is_classifier(self.estimator)
        if not classifier and options.tolerance is None:
            raise ValueError(
                "RepeatAndSelect(tolerance=...) is required to score a regressor: "
                "a validation row counts as correct when |prediction - y| <= "
                "tolerance."
            )
        # X as given (a DataFrame stays a DataFrame for the candidates).
        X, y = self._validate_input(X, y)
        n_samples = X.shape[0]
        n_validation = int(round(self.validation_fraction * n_samples))
        if n_validation < 1 or n_samples - n_validation < 1:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} of "
                f"n_samples={n_samples} rows leaves no training or no validation "
                "rows."
            )
        order = check_random_state(self.random_state).permutation(n_samples)
        train, validation = order[n_validation:], order[:n_validation]
        X_train, y_train = take_rows(X, train), y[train]
        probed = {}

        def probe(index, epsilon):
            if (index, epsilon) not in probed:
                probed[index, epsilon] = self._probe(
                    grid[index], paths, epsilon, X_train, y_train, fit_params
                )
            return probed[index, epsilon]

        def events_at(epsilon):
            return [probe(index, epsilon)[0] for index in range(len(grid))]

        mechanism = options.calibrate(
            self.epsilon,
            self.delta,
            events_at=events_at,
            n_configurations=len(grid),
            n_validation=n_validation,
        )
        eps_c = mechanism.candidate_epsilon
        # The candidates' warnings are shown once each, from the probes (which
        # read only parameters and public sizes): warnings from the runs
        # would tell how many runs were drawn, and of which candidates.
        shown = set()
        for index in range(len(grid)):
            for category, message in probe(index, eps_c)[1]:
                if (category, message) not in shown:
                    shown.add((category, message))
                    warn_user(message, category)
        return FitPlan(
            mechanism,
            X_train,
            y_train,
            delta=self.delta,
            training={
                "grid": grid,
                "paths": paths,
                "classifier": classifier,
                "tolerance": options.tolerance,
                "validation": (take_rows(X, validation), y[validation]),
                "allowed": [curve_of_events(e) for e in events_at(eps_c)],
                "fit_params": fit_params,
            },
            serving={"released": True},
            attributes={
                "mechanism_": options,
                "candidate_delta_": self.delta,
                "n_candidates_": len(grid),
            },
        )

    def _release(self, plan, fitted, noise):
        """The search itself: its noise is drawn after the whole budget is spent."""
        mechanism, info = plan.mechanism, plan.training
        grid, paths = info["grid"], info["paths"]
        X_validation, y_validation = info["validation"]
        eps_c = mechanism.candidate_epsilon

        def run(index):
            budget = CandidateBudget(eps_c, self.delta, info["allowed"][index])
            candidate = self._configured(grid[index], paths, eps_c, budget)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                candidate.fit(plan.X, plan.y, **info["fit_params"])
                predictions = candidate.predict(X_validation)
            if info["classifier"]:
                return int(np.sum(predictions == y_validation)), candidate
            errors = np.abs(np.asarray(predictions, dtype=float) - y_validation)
            return int(np.sum(errors <= info["tolerance"])), candidate

        best = mechanism.select(len(grid), run, noise)
        if best is None:
            raise RuntimeError(
                "the search drew no run (probability exp(-mean_runs) under "
                "runs='poisson'): nothing was fitted, and the budget is spent."
            )
        noisy, best_index, best_estimator = best
        best_score = noisy / len(y_validation)
        fitted.update(
            {
                "best_estimator_": best_estimator,
                "best_params_": grid[best_index],
                "best_index_": best_index,
                "best_score_": best_score,
                "cv_results_": self._results(grid, eps_c, best_index, best_score),
            }
        )
        if info["classifier"]:
            fitted["classes_"] = best_estimator.classes_

    @staticmethod
    def _results(grid, eps_c, best_index, best_score):
        n = len(grid)
        results = {"params": grid}
        for name in sorted({k for configuration in grid for k in configuration}):
            column = np.ma.MaskedArray(np.empty(n, dtype=object), mask=True)
            for i, configuration in enumerate(grid):
                if name in configuration:
                    column[i] = configuration[name]
            results[f"param_{name}"] = column
        results["candidate_epsilon"] = np.full(n, eps_c)
        scores = np.full(n, math.nan)
        scores[best_index] = best_score
        results["mean_test_score"] = scores
        results["selected"] = np.arange(n) == best_index
        return results

    # -- the released model ----------------------------------------------------
    _released_attribute = "best_estimator_"

    def _configured_model(self):
        return self.estimator

    def _validate_released_query(self, X):
        """Query rows by the input rule of ``fit`` (a DataFrame stays one)."""
        return self._validate_input(X, reset=False)

    def score(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> float:
        """The released model's ``score`` on ``(X, y)``.

        Computed in the clear: on private rows it is a release outside the
        search's guarantee.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        y : array-like of shape (n_queries,)
        sample_weight : array-like of shape (n_queries,), default=None

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        return self.best_estimator_.score(
            self._validate_released_query(X), y, sample_weight=sample_weight
        )
