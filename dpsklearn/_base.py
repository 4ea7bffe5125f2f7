"""What every private estimator shares: one fit template, serving, a safe refit.

Every estimator's ``fit`` is :meth:`PrivateEstimatorMixin._fit`, in the way
scikit-learn's ``BaseBagging.fit``/``_fit`` serves its subclasses:

1. **validate** the parameters, then :meth:`~PrivateEstimatorMixin._plan`
   (the subclass) validates the data and turns public numbers into a
   :class:`FitPlan`: the calibrated mechanism, what training needs, how
   serving starts;
2. **reserve**: :meth:`~PrivateEstimatorMixin._reserve` asks the accountant
   whether it can pay for the mechanism's events, refusing before any
   private computation;
3. **train**: :meth:`~PrivateEstimatorMixin._train` (the subclass) computes
   on the private data (teachers, shard solutions, error counts);
4. **spend** the reserved events, atomically;
5. **serve**: :meth:`~PrivateEstimatorMixin._start_serving` makes the noise
   generators and the serving state (bound to a ledger);
6. **release at fit**, for what is published once
   (:meth:`~PrivateEstimatorMixin._release`, the subclass; nothing by
   default);
7. **set fitted** attributes, replacing a previous fit's.

:func:`keeps_live_model` makes a refused or failed refit leave the previous
fitted model serving, with its remaining budget. The label set of the
classifiers is public (:class:`PublicLabelsMixin`).
"""

from __future__ import annotations

import copy
import functools
import math
import secrets
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._dask_input import dask_label_set, dask_training_data, is_dask_collection
from ._param_validation import ValidatesParameters
from ._validation import validate_input
from ._warn import warn_user, warning_scope
from .accounting import BaseAccountant, PrivacyAccountant
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .noise import NoiseSource, make_noise_generators
from .serving import ServingState

__all__ = [
    "FitPlan",
    "PrivateEstimatorMixin",
    "PublicLabelsMixin",
    "RefusesSeveredCopies",
    "keeps_live_model",
]

# Set by validate_data itself; every other attribute ending in "_" is fitted.
_DATA_ATTRIBUTES = ("n_features_in_", "feature_names_in_")


def keeps_live_model(fit):
    """Decorate ``fit`` so that a fit that raises leaves the estimator as it was.

    A refused refit (a shared accountant without budget, a bad parameter
    found late) must not lose the model already paid for: its attributes,
    serving state and remaining budget are restored exactly.
    """

    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        saved = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise

    return guarded


class _SeveredAccountant:
    """What a shared in-memory accountant becomes in a pickled, unfitted estimator.

    A :class:`~dpsklearn.PrivacyAccountant` lives in one process; a copy in
    another process (``GridSearchCV(n_jobs>1)``, joblib) would fork its
    budget. So an unfitted estimator is pickled with this stand-in, which
    spends nothing and refuses every question, and the copy refuses to be
    configured or fitted with an error whose first line names the fix.
    """

    def __init__(self, owner):
        self.owner = owner

    def message(self):
        return (
            f"PrivacyLedger needed: this {self.owner} was sent to another process "
            "(GridSearchCV(n_jobs>1), cross_validate(n_jobs>1), joblib) with a "
            "shared in-memory PrivacyAccountant, whose budget cannot follow it "
            "there.\nPass a PrivacyLedger(path, epsilon, delta) as the accountant "
            "(a SQLite file that every process draws from), or use n_jobs=1."
        )

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(self.message())

    spend = spend_events = can_spend = can_spend_events = _refuse

    def __repr__(self):
        return f"<shared PrivacyAccountant left in another process ({self.owner})>"


def refuse_severed_accountant(estimator):
    """Raise when ``estimator`` (or a nested one) holds a severed accountant."""
    for value in estimator.get_params(deep=True).values():
        if isinstance(value, _SeveredAccountant):
            value._refuse()


class RefusesSeveredCopies(ValidatesParameters):
    """``set_params`` refuses in a copy whose shared accountant stayed behind.

    ``GridSearchCV`` sets each candidate's parameters in the worker before
    fitting, outside its error handling, so the refusal reaches the caller
    with its first line naming ``PrivacyLedger``.
    """

    def set_params(self, **params):
        """Set parameters (scikit-learn's ``set_params``).

        A copy made in another process with a shared in-memory accountant
        (its own or a nested estimator's) refuses here, naming
        ``PrivacyLedger``.

        Parameters
        ----------
        **params : dict

        Returns
        -------
        self : object
        """
        super().set_params(**params)
        refuse_severed_accountant(self)
        return self


@dataclass
class FitPlan:
    """What an estimator decided from public numbers before touching private data.

    Attributes
    ----------
    mechanism : Mechanism
        The calibrated mechanism whose events are reserved and spent.
    X, y : object
        The validated training data, for :meth:`PrivateEstimatorMixin._train`.
    delta : float
        The delta to reserve (``0`` for pure estimators).
    training : dict
        Whatever else training needs (the number of teachers, of classes).
    serving : dict
        Keyword arguments of :class:`~dpsklearn.serving.ServingState`
        (``max_queries``, ``costs``, ``caches``, ``fill``, ``released``).
    attributes : dict
        Public fitted attributes known before training (``classes_``,
        ``target_range_``, the resolved mechanism options ``mechanism_``).
    """

    mechanism: Any
    X: Any = None
    y: Any = None
    delta: float = 0.0
    training: dict = field(default_factory=dict)
    serving: dict = field(default_factory=dict)
    attributes: dict = field(default_factory=dict)


class PrivateEstimatorMixin(RefusesSeveredCopies):
    """The fit template, budget, serving and status steps of every private estimator.

    ``accountant=None`` gives the model its own accountant for ``(epsilon,
    delta)``; a shared one is used as it is (``docs/design.rst``, "Shared
    accountants and privacy filters"). Subclasses implement :meth:`_plan`
    and :meth:`_train` (and :meth:`_release` when they publish at ``fit``);
    their public ``fit`` calls :meth:`_fit`.
    """

    # Fitted means a completed fit.
    _fitted_marker = "_serving_state_"
    #: Show each kind of warning once among the estimator and its clones (a
    #: search over its parameters): the teacher ensembles set it.
    _warnings_once_per_kind = False

    if TYPE_CHECKING:
        # What the template reads: each estimator's parameters (set by its
        # __init__) and the serving state of a completed fit.
        epsilon: float
        accountant: BaseAccountant | _SeveredAccountant | None
        noise_random_state: int | None
        random_state: int | np.random.RandomState | None
        _serving_state_: ServingState

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Truthful: privacy noise costs accuracy.
        for estimator_tags in (tags.classifier_tags, tags.regressor_tags):
            if estimator_tags is not None:
                estimator_tags.poor_score = True
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = self._input_allows_nan()
        return tags

    def _input_allows_nan(self):
        """Whether every consumer of ``X`` takes NaN (their ``allow_nan`` tags)."""
        return False

    #: Whether ``fit`` takes Dask collections where their partitions live
    #: (the teacher ensembles: ``docs/cluster.rst``).
    _accepts_dask_collections = False

    def _validate_input(self, X, y="no_validation", *, reset=True, **kwargs):
        """``X`` (and ``y``) by the one input rule (:func:`validate_input`)."""
        if is_dask_collection(X) or is_dask_collection(y):
            # Validating would compute the whole collection into this process.
            where = "fit" if reset else "a query"
            raise ValueError(
                f"X: {type(self).__name__} does not take a Dask collection in "
                f"{where} (it would be read into this process). Compute it "
                "first if it fits in memory. The teacher ensembles "
                "(SubsampleAggregateClassifier, PrivatePredictionClassifier, "
                "PrivatePredictionRegressor, SoftLabelPrivateRegressor), "
                "knowledge transfer's teacher, PrivateKernelRidge (released "
                "models), the least-squares models, PrivateNaiveBayes, "
                "PrivatePCA and PrivateStandardScaler fit on Dask collections "
                "where their partitions live (docs/cluster.rst)."
            )
        return validate_input(
            self,
            X,
            y,
            reset=reset,
            allow_nan=self._input_allows_nan(),
            consumer=self._input_consumer(),
            **kwargs,
        )

    def _input_consumer(self):
        """Who reads ``X``, for messages."""
        return f"the estimator of {type(self).__name__}"

    def _validate_dask_regression_data(self, X, y, target_range, parameter):
        """Dask ``X, y`` with numeric targets: handles, and the public range.

        Only public numbers reach this process (the partitions' lengths, the
        columns and dtypes); the targets are checked on the workers (numbers,
        finite) before the spend. ``target_range`` (the estimator's
        ``parameter``) must be given: it is never read from a Dask ``y``.

        Returns
        -------
        rows : DaskRows
        targets : DaskLabels
            ``numeric=True``: the partitions' targets, checked where they live.
        """
        if target_range is None:
            raise ValueError(
                f"{parameter}: with Dask X and y the target range must be "
                f"public; pass `{parameter}` (it is never read from the rows "
                "on a cluster)."
            )
        rows, labels = dask_training_data(
            X,
            y,
            allow_nan=self._input_allows_nan(),
            consumer=self._input_consumer(),
        )
        # n_features_in_ and feature_names_in_ from the empty meta (no row).
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        return rows, labels.as_targets()

    def __sklearn_is_fitted__(self):
        return hasattr(self, self._fitted_marker)

    # -- copies in other processes ---------------------------------------------
    def __getstate__(self):
        state = super().__getstate__()
        accountant = state.get("accountant")
        if (
            isinstance(accountant, PrivacyAccountant)
            and accountant.shared
            and not self.__sklearn_is_fitted__()
        ):
            # An unfitted copy (GridSearchCV's workers get these) keeps no
            # budget: it refuses set_params and fit with an error naming the
            # fix. A fitted model with a shared accountant still refuses to be
            # pickled (the accountant's own error).
            state = {**state, "accountant": _SeveredAccountant(type(self).__name__)}
        return state

    def __deepcopy__(self, memo):
        # A deep copy stays in this process: the shared accountant stays shared.
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def _check_finite_epsilon(self):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon!r}.")

    # -- the seed an estimator shares with its clones ----------------------------
    def _clone_seed(self) -> int:
        """A seed drawn once per estimator (at its first fit or clone), kept by clone.

        It seeds the partition and the teachers when ``random_state`` is
        None, so the fits of a search over privacy parameters (clones of one
        estimator on the same rows) share their teachers through the teacher
        cache, as with an integer ``random_state``; and it names the
        estimator's :func:`~dpsklearn._warn.warning_scope`, so such a search
        shows each kind of warning once. The seed is randomness independent
        of the data: whatever its value, the shards are a data-independent
        partition (``docs/privacy_contract.rst``, "Randomness").
        """
        seed = self.__dict__.get("_shared_seed")
        if seed is None:
            seed = secrets.randbits(32)
            self._shared_seed = seed
        return seed

    def __sklearn_clone__(self):
        """``clone``: the parameters, and the seed shared with the clones."""
        seed = self._clone_seed()
        new = super().__sklearn_clone__()
        new._shared_seed = seed
        return new

    def _teacher_random_state(self):
        """``random_state``, or the shared seed when it is None."""
        if self.random_state is None:
            return self._clone_seed()
        return self.random_state

    # -- the fit template --------------------------------------------------------
    def _fit(self, X, y=None, **fit_params):
        """Validate, reserve, train, spend, serve, release, set fitted (in order).

        Warnings are shown once per kind among the estimator's clones (a
        search), by :func:`~dpsklearn._warn.warning_scope`.
        """
        with warning_scope(self._warning_scope("fit")):
            return self._fit_in_scope(X, y, **fit_params)

    def _warning_scope(self, method):
        """The :func:`~dpsklearn._warn.warning_scope` of ``method``, or None."""
        if not self._warnings_once_per_kind:
            return None
        return (method, self._clone_seed())

    def _fit_in_scope(self, X, y=None, **fit_params):
        self._validate_params()
        plan = self._plan(X, y, **fit_params)
        self._warn_from_plan(plan)
        accountant, events = self._reserve(plan.mechanism, self.epsilon, plan.delta)
        fitted = dict(self._train_silently(plan))
        accountant.spend_events(events)  # atomic: the whole release is reserved
        serving = dict(plan.serving)
        state, noise = self._start_serving(plan.mechanism, accountant, **serving)
        self._release(plan, fitted, noise)
        self._set_fitted(
            {
                **plan.attributes,
                **fitted,
                "accountant_": accountant,
                "privacy_mechanism_": plan.mechanism,
                **plan.mechanism.fitted_attributes(),
                "_query_rule_": self._query_rule(),
                "_serving_state_": state,
            }
        )
        return self

    def _query_rule(self):
        """The input rule of later queries, decided once at ``fit``, or None.

        None: the estimator validates each query by :meth:`_validate_input`.
        """
        return None

    def _plan(self, X: Any, y: Any) -> FitPlan:
        """Validate the data and calibrate the mechanism from public numbers.

        A subclass whose ``fit`` takes fit parameters adds ``**fit_params``.
        """
        raise NotImplementedError

    def _warn_from_plan(self, plan: FitPlan) -> None:
        """Warnings read from the calibrated plan (public numbers only)."""

    def _train(self, plan: FitPlan) -> dict:
        """The private computation; returns fitted attributes."""
        return {}

    def _train_silently(self, plan: FitPlan) -> dict:
        """:meth:`_train` with every warning it raises dropped.

        Training reads the private rows before the spend, and its warnings
        (a teacher's ``ConvergenceWarning`` on one shard, a solver's on an
        ill-conditioned system) would be an unpaid release of them: whether
        they are shown must not depend on the data
        (``docs/privacy_contract.rst``, "What fit reads before the spend").
        Every warning of ``fit`` that is shown is raised by :meth:`_plan`,
        from public inputs.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._train(plan)

    def _release(self, plan: FitPlan, fitted: dict, noise) -> None:
        """Release once at ``fit``, after the spend, by editing ``fitted`` in place.

        Estimators that publish a model replace the non-private result of
        :meth:`_train` by its noisy release here (and drop the former);
        the others release nothing at ``fit``.
        """

    def _reserve(self, mechanism, epsilon, delta=0.0):
        """The accountant and the events it can pay for; refuse before training.

        The mechanism may offer several descriptions of its spend (most
        precise first); the first one the accountant can pay for is taken.
        """
        label = type(self).__name__
        if isinstance(self.accountant, _SeveredAccountant):
            self.accountant._refuse()
        accountant: BaseAccountant
        if self.accountant is None:
            accountant = PrivacyAccountant._for_model(
                epsilon, delta, mechanism.composition
            )
        else:
            accountant = self.accountant
        composition = getattr(accountant, "composition", "basic")
        options = mechanism.event_options(label, composition)
        refusals = []
        for events in options:
            try:
                if accountant.can_spend_events(events):
                    return accountant, events
            except ValueError as exc:  # a description this composition cannot use
                refusals.append(exc)
        if len(refusals) == len(options):
            # No description of the spend is one this budget accepts (for
            # example approximate releases on a shared zCDP budget): a
            # ValueError about the accountant, before anything is spent.
            raise ValueError(f"accountant: {refusals[-1]}") from refusals[-1]
        needed_epsilon = math.fsum(e.epsilon * e.count for e in options[-1])
        needed_delta = math.fsum(e.delta * e.count for e in options[-1])
        remaining = accountant.remaining
        raise BudgetExhaustedError(
            f"the accountant cannot pay for this fit: it needs (epsilon="
            f"{needed_epsilon:.6g}, delta={needed_delta:.3g}) under basic "
            f"composition and has (epsilon={remaining[0]:.6g}, delta="
            f"{remaining[1]:.3g}) left under {composition}.",
            spends=accountant.events,
        )

    def _start_serving(self, mechanism, accountant, **serving):
        """A fresh serving state with the mechanism's engine, bound to a ledger."""
        generators, reseed = make_noise_generators(
            self.noise_random_state, mechanism.n_streams
        )
        noise = NoiseSource(generators, reseed)
        engine = None if serving.pop("released", False) else mechanism.engine(noise)
        label = type(self).__name__
        state = ServingState(
            mechanism,
            engine,
            budget=(self.epsilon, getattr(self, "delta", 0.0)),
            verbose=getattr(self, "verbose", 0),
            label=label,
            **serving,
        )
        # A PrivacyLedger accountant keeps the serving state durable.
        state.bind_store(accountant, label)
        # The serving loop's warnings: once per kind among the clones too.
        state.warning_scope = self._warning_scope("serve")
        return state, noise

    def _set_fitted(self, attributes):
        """Replace every fitted attribute of a previous fit by ``attributes``."""
        for name in [
            n
            for n in vars(self)
            if n.endswith("_") and not n.startswith("__") and n not in _DATA_ATTRIBUTES
        ]:
            delattr(self, name)
        for name, value in attributes.items():
            setattr(self, name, value)

    def budget_status(self):
        """Public serving counters and the budget spent and left.

        Returns
        -------
        status : BudgetStatus
            Rows served, answered and abstained on, failed stability tests,
            query units spent, ``(epsilon, delta)`` spent and remaining, and
            whether the model has halted.

        Raises
        ------
        NotFittedError
            When the model is not fitted.
        """
        check_is_fitted(self)
        return self._serving_state_.status()


class PublicLabelsMixin:
    """Classifier input validation with a public label set.

    ``classes`` is a public parameter; left unset, ``classes_ = unique(y)``
    with a :class:`PrivacyLeakWarning`, since a label held by one record
    would otherwise show in the output range. Labels become indices into
    ``classes_``, so every teacher or hypothesis votes on the global classes.
    """

    if TYPE_CHECKING:
        # The classifier's parameter, and the input rule of the estimator
        # this is mixed into (:class:`PrivateEstimatorMixin`).
        classes: ArrayLike | None

        def _validate_input(
            self, X: Any, y: Any = "no_validation", *, reset: bool = True, **kwargs: Any
        ) -> Any: ...

        def _input_allows_nan(self) -> bool: ...

        def _input_consumer(self) -> str: ...

        _accepts_dask_collections: bool

    def _validate_classification_data(self, X, y):
        """Validate ``X, y``; return ``X``, ``y`` as class indices and ``classes``."""
        if self._accepts_dask_collections and (
            is_dask_collection(X) or is_dask_collection(y)
        ):
            return self._validate_dask_classification_data(X, y)
        X, y = self._validate_input(X, y)
        try:
            check_classification_targets(y)
        except ValueError as exc:  # sklearn's message does not say which input
            raise ValueError(f"y must hold class labels: {exc}") from exc
        if self.classes is None:
            warn_user(
                "classes is None: the label set is taken from the private "
                "training labels (classes_ = unique(y)), so a label held by one "
                "record can appear in the output range. Pass the public label "
                "set as `classes`.",
                PrivacyLeakWarning,
            )
            classes = np.unique(y)
        else:
            classes = np.unique(np.asarray(self.classes))
            if classes.ndim != 1 or classes.size == 0:
                raise ValueError("classes must be a non-empty 1-D array of labels.")
            unseen = np.setdiff1d(np.unique(y), classes)
            if unseen.size:
                raise ValueError(
                    f"y contains {unseen.size} label(s) that are not in the given "
                    "`classes`; every training label must be one of `classes`."
                )
        return X, np.searchsorted(classes, y).astype(np.int64), classes

    def _validate_dask_classification_data(self, X, y):
        """Dask ``X, y``: handles on their partitions, checked without reading rows.

        Only public numbers reach this process: the partitions' lengths
        (counted on the workers), the columns and dtypes, and ``classes``.
        The rows' checks (finite values, labels in ``classes``) run on the
        workers while the teachers are fitted, before the spend
        (:func:`~dpsklearn._dask_input.check_partition`). With
        ``classes=None`` the label set is read from ``y`` on the workers, with
        the same :class:`PrivacyLeakWarning` as for a NumPy ``y``.
        """
        rows, labels = dask_training_data(
            X,
            y,
            allow_nan=self._input_allows_nan(),
            consumer=self._input_consumer(),
        )
        # n_features_in_ and feature_names_in_ from the empty meta (no row).
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        if self.classes is None:
            warn_user(
                "classes is None: the label set is taken from the private "
                "training labels (classes_ = unique(y)), so a label held by one "
                "record can appear in the output range. Pass the public label "
                "set as `classes`.",
                PrivacyLeakWarning,
            )
            classes = dask_label_set(labels)
            try:
                check_classification_targets(classes)
            except ValueError as exc:
                raise ValueError(f"y must hold class labels: {exc}") from exc
        else:
            classes = np.unique(np.asarray(self.classes))
            if classes.ndim != 1 or classes.size == 0:
                raise ValueError("classes must be a non-empty 1-D array of labels.")
        return rows, labels.encoded(classes), classes
