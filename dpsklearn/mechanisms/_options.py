"""Mechanism parameter objects: what a user chooses, before anything is calibrated.

An estimator's ``mechanism`` parameter takes one of these objects (or its
string shorthand for the defaults): it carries the options that belong to
that mechanism and to no other, for example
``SparseVector(max_unstable=100, fallback="abstain")`` or
``ConfidentGNMax(max_answers=2000)``. They are scikit-learn parameter
objects (``get_params``/``set_params``, ``clone``), so ``GridSearchCV`` can
search ``mechanism__max_unstable`` or ``mechanism=[SparseVector(),
ConfidentGNMax()]``.

At ``fit`` the estimator turns its parameter object, the total ``(epsilon,
delta)`` and public sizes (teachers, classes, queries) into a calibrated
:class:`~dpsklearn.mechanisms.Mechanism` with :meth:`MechanismOptions.calibrate`;
the object itself is never changed. The composition that splits the budget
is always the tightest admissible one for the mechanism and the accountant
(``docs/design.rst``, "Composition"); the route taken is the fitted
attribute ``calibration_`` of the estimator. The noise family, where there
is a choice, is the option ``noise``.

An estimator that answers votes asks its options to plan themselves:
:meth:`MechanismOptions.plan` takes a :class:`PlanContext` (the public
numbers, frozen) and returns a :class:`MechanismPlan` (the calibrated
mechanism, the number of teachers, the query cap, the resolved options);
:meth:`MechanismOptions.statistic` says what the engine reads for a batch.
The estimator never tests which mechanism it holds
(``docs/architecture.rst``, "How a mechanism plans itself").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from sklearn.base import BaseEstimator

from .._param_validation import StrOptions, ValidatesParameters
from ._base import Mechanism

__all__ = [
    "MechanismOptions",
    "MechanismPlan",
    "PlanContext",
    "TeacherPlanner",
    "resolve_mechanism",
    "unvalidated_mechanism",
]

_NOISE = StrOptions({"auto", "laplace", "gaussian"})
#: A test whose unanimous queries pass less often than this answers nothing.
NOTHING_PASSES = 1e-6
#: What a classifier returns for rows its mechanism does not answer.
_UNANSWERED = StrOptions({"student", "abstain"})


class TeacherPlanner(Protocol):
    """The planning function a mechanism may use to choose ``k`` and ``T``.

    :mod:`dpsklearn.planning` sits above the mechanisms in the layers (it
    reads their calibrations), so a mechanism never imports it: the
    estimator hands the module in as :attr:`PlanContext.planner`.
    """

    def plan_stability_test(
        self,
        n_samples: int,
        n_queries: int,
        epsilon: float,
        delta: float,
        *,
        unstable_fraction: float,
        n_estimators: Any = None,
        max_unstable: Any = None,
        min_samples_per_shard: int = 20,
        calibration: str = "auto",
        fallback: str = "abstain",
        noisy_max_share: float = 0.5,
    ) -> Sequence[Any]:
        """Rows ``(k, T, expected answered, ...)``, best first."""


@dataclass(frozen=True)
class PlanContext:
    """The public numbers a mechanism plans from, frozen.

    Attributes
    ----------
    owner : str
        The estimator's class name, for messages.
    epsilon, delta : float
        The whole release's budget.
    n_samples : int
        Training rows (public: ``k`` and the shard size reveal it).
    n_classes : int
        The size of the public label set.
    n_estimators : int
        The teachers the estimator would train: the user's ``k``, or for
        ``n_estimators="auto"`` the most the rows support at
        ``min_samples_per_shard`` rows each.
    n_estimators_fixed : bool
        Whether the user fixed ``k`` (a plan may choose it otherwise).
    max_queries : int or None
        The user's cap on answered query rows (None: none stated).
    planned_queries : int
        The queries a guarantee that needs a cap pays for: ``max_queries``,
        or the estimator's public default when it is None.
    min_samples_per_shard : int, default=20
        The fewest rows a planned shard may have.
    value_range : tuple of float, default=(0.0, 1.0)
        The public range of the values a regressor's teachers answer
        (soft labels: ``[0, 1]``).
    planner : TeacherPlanner or None, default=None
        :mod:`dpsklearn.planning`, for mechanisms whose ``k`` and ``T`` are
        planned (the sparse vector stability test).
    """

    owner: str
    epsilon: float
    delta: float
    n_samples: int
    n_classes: int
    n_estimators: int
    n_estimators_fixed: bool
    max_queries: int | None
    planned_queries: int
    min_samples_per_shard: int = 20
    value_range: tuple[float, float] = (0.0, 1.0)
    planner: TeacherPlanner | None = None


@dataclass(frozen=True)
class MechanismPlan:
    """What a mechanism's plan decided, before any private row is read.

    Attributes
    ----------
    mechanism : Mechanism
        Calibrated and frozen; its events are reserved at ``fit``.
    options : MechanismOptions
        The options used, ``"auto"`` values resolved (``mechanism_``).
    n_estimators : int
        The number of teachers to train.
    max_queries : int or None
        The query rows the mechanism answers (None: no cap).
    cached_fields : dict or None, default=None
        The released fields by which a row asked again is answered from a
        release cache, free (None: every row is a new query).
    """

    mechanism: Mechanism
    options: MechanismOptions
    n_estimators: int
    max_queries: int | None
    cached_fields: Mapping[str, tuple[Any, tuple[int, ...]]] | None = None


class MechanismOptions(ValidatesParameters, BaseEstimator):
    """Base of the mechanism parameter objects.

    What a mechanism must implement is small. A subclass stores its options
    in ``__init__`` (scikit-learn's rule: parameters only), declares
    ``_parameter_constraints`` and a ``shorthand`` (the string an
    estimator's ``mechanism`` also accepts), and implements
    ``calibrate(epsilon, delta, **public)``, which returns the calibrated
    :class:`~dpsklearn.mechanisms.Mechanism` (its ``privacy_events``,
    ``engine`` and ``spent``). The rest has defaults to override:

    * :meth:`plan` -- the calibrated mechanism, the number of teachers and
      the query cap, from a :class:`PlanContext`; by default ``calibrate``
      with the context's ``k`` and its planned queries.
    * :meth:`statistic` -- what the engine reads for a batch: the vote
      counts by default.
    * class attributes that say how the estimator feeds and serves it:
      ``serves``, ``reads_each_teacher``, ``proba_from_votes``,
      ``needs_positive_delta``, ``releases_statistics``,
      ``regression_aggregate`` and the property ``publishes_model``.

    An estimator runs the options classes it lists (its ``_mechanisms``),
    their subclasses, and any options whose ``serves`` names the interface
    it feeds (``SubsampleAggregateClassifier``: ``"vote_labels"``). Adding
    a mechanism is ``CONTRIBUTING.md``, "Adding a mechanism"; how an
    estimator uses the plan is ``docs/architecture.rst``, "How a mechanism
    plans itself".

    Examples
    --------
    A mechanism that releases the plurality vote with Laplace noise at a
    fixed epsilon per query (report noisy max; Dwork and Roth 2014, 3.3):

    >>> import numpy as np
    >>> from dpsklearn.accounting import PureEvent
    >>> from dpsklearn.mechanisms import (
    ...     Engine, Mechanism, MechanismOptions, PlanContext, Release)
    >>> class NoisyMaxEngine(Engine):
    ...     def __init__(self, epsilon, rng):
    ...         self.epsilon, self.rng = epsilon, rng
    ...     def answer(self, method, votes):
    ...         noisy = votes + self.rng.laplace(scale=2 / self.epsilon,
    ...                                          size=votes.shape)
    ...         return Release({"label": noisy.argmax(axis=1),
    ...                         "abstained": np.zeros(len(votes), bool)}, len(votes))
    >>> class NoisyMaxRelease(Mechanism):
    ...     def __init__(self, epsilon, max_queries):
    ...         self.epsilon, self.max_queries = epsilon, max_queries
    ...     def privacy_events(self, label=None):
    ...         return [PureEvent(self.epsilon, count=self.max_queries, label=label)]
    ...     def engine(self, noise):
    ...         return NoisyMaxEngine(self.epsilon, noise[0])
    ...     def spent(self, units, engine):
    ...         return units * self.epsilon, 0.0
    >>> class NoisyMax(MechanismOptions):
    ...     shorthand = "noisy_max"
    ...     serves = frozenset({"vote_labels"})
    ...     _parameter_constraints: dict = {}
    ...     def calibrate(self, epsilon, delta, *, max_queries, **public):
    ...         return NoisyMaxRelease(epsilon / max_queries, max_queries)

    The default plan calibrates for the estimator's ``k`` and planned
    queries:

    >>> context = PlanContext(
    ...     owner="SubsampleAggregateClassifier", epsilon=1.0, delta=1e-5,
    ...     n_samples=2000, n_classes=2, n_estimators=100,
    ...     n_estimators_fixed=False, max_queries=None, planned_queries=1000)
    >>> plan = NoisyMax().plan(context)
    >>> plan.n_estimators, plan.max_queries, plan.mechanism.epsilon
    (100, 1000, 0.001)

    and an estimator runs it as it runs its own:

    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> model = SubsampleAggregateClassifier(
    ...     n_estimators=50, epsilon=1.0, classes=[0, 1], max_queries=100,
    ...     mechanism=NoisyMax(), random_state=0).fit(X, y)
    >>> model.predict(X[:3]).shape, model.accountant_.spent[0]
    ((3,), 1.0)
    """

    #: The string that stands for this mechanism with its defaults.
    shorthand: ClassVar[str] = ""
    #: ``calibrate(epsilon, delta, **public sizes)``: the calibrated
    #: :class:`Mechanism` (each subclass takes the public sizes it needs).
    calibrate: Callable[..., Mechanism]
    #: The estimator interfaces its engine speaks, so that an estimator runs
    #: options it does not list. ``"vote_labels"``: ``answer("predict",
    #: statistic)`` on a batch's :meth:`statistic` returns a :class:`Release`
    #: of ``label`` (class indices, int64) and ``abstained`` (bool), what
    #: ``SubsampleAggregateClassifier`` serves.
    serves: ClassVar[frozenset[str]] = frozenset()
    #: Whether the engine reads every teacher's answer (an ``(n_rows, k)``
    #: array) rather than their aggregate (vote counts, a mean).
    reads_each_teacher: ClassVar[bool] = False
    #: Whether ``predict_proba`` is post-processing of the votes it released.
    proba_from_votes: ClassVar[bool] = False
    #: Whether the guarantee needs ``delta > 0`` (a Gaussian mechanism).
    needs_positive_delta: ClassVar[bool] = False
    #: Whether it releases noisy sufficient statistics once, at ``fit``, and
    #: the estimator solves its model from them (dense rows only).
    releases_statistics: ClassVar[bool] = False
    #: How a regressor's answers aggregate the teachers, for the planner
    #: (:func:`~dpsklearn.planning.plan_regression_answers`).
    regression_aggregate: ClassVar[str] = "mean"

    @property
    def publishes_model(self) -> bool:
        """Whether the estimator's fitted model is a release (publishable)."""
        return False

    def plan(self, context: PlanContext) -> MechanismPlan:
        """The calibrated mechanism, the number of teachers and the query cap.

        The default calibrates for the context's ``k`` and its planned
        queries (a guarantee that pays per query needs a cap). Mechanisms
        that choose ``k`` or resolve ``"auto"`` options override it.

        Parameters
        ----------
        context : PlanContext
            Public numbers only.

        Returns
        -------
        plan : MechanismPlan
        """
        mechanism = self.calibrate(
            context.epsilon,
            context.delta,
            max_queries=context.planned_queries,
            n_teachers=context.n_estimators,
            n_classes=context.n_classes,
        )
        return MechanismPlan(
            mechanism, self, context.n_estimators, context.planned_queries
        )

    def statistic(self, votes: np.ndarray, X: Any, classes: np.ndarray) -> Any:
        """What the engine reads for a batch of query rows.

        Parameters
        ----------
        votes : ndarray of shape (n_rows, n_classes)
            The teachers' vote counts on the rows.
        X : {array-like, DataFrame, sparse matrix}
            The query rows themselves (public).
        classes : ndarray
            The public label set.

        Returns
        -------
        statistic : object
            ``votes`` by default.
        """
        return votes

    def validated(self) -> MechanismOptions:
        """``self`` after checking every option (``ValueError`` naming it).

        Returns
        -------
        self : MechanismOptions
        """
        self._validate_params()
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags


def unvalidated_mechanism(
    mechanism: str | MechanismOptions,
    choices: Mapping[str, type[MechanismOptions]],
    default: type[MechanismOptions],
) -> MechanismOptions:
    """The options an estimator's ``mechanism`` stands for, not validated.

    For questions asked before ``fit`` (tags, method availability), which
    must not raise: a shorthand gives its class's defaults (``default``'s
    for an unknown string), an options object is returned as it is.

    Parameters
    ----------
    mechanism : str or MechanismOptions
    choices : dict of str to MechanismOptions subclass
    default : MechanismOptions subclass

    Returns
    -------
    options : MechanismOptions

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax, Exponential, unvalidated_mechanism
    >>> unvalidated_mechanism("gnmax", {"gnmax": GNMax}, Exponential)
    GNMax()
    """
    if isinstance(mechanism, MechanismOptions):
        return mechanism
    return choices.get(mechanism, default)()


def resolve_mechanism(
    mechanism: str | MechanismOptions,
    choices: dict[str, type[MechanismOptions]],
    *,
    owner: str,
    interface: str | None = None,
) -> MechanismOptions:
    """The parameter object an estimator's ``mechanism`` stands for, validated.

    Parameters
    ----------
    mechanism : str or MechanismOptions
        A shorthand among ``choices`` (the defaults of that mechanism) or an
        instance of one of their classes.
    choices : dict of str to MechanismOptions subclass
        What the estimator accepts.
    owner : str
        The estimator's name, for the message.
    interface : str, default=None
        The interface the estimator feeds: options of another class whose
        ``serves`` names it are accepted too (a mechanism written outside
        the package).

    Returns
    -------
    options : MechanismOptions
        A new object for a shorthand, ``mechanism`` itself otherwise.

    Raises
    ------
    ValueError, TypeError
        For a shorthand or object the estimator does not take, or an option
        out of range.

    Examples
    --------
    >>> from dpsklearn.mechanisms import GNMax, Exponential, resolve_mechanism
    >>> choices = {"exponential": Exponential, "gnmax": GNMax}
    >>> resolve_mechanism("gnmax", choices, owner="PrivatePredictionClassifier")
    GNMax()
    """
    if isinstance(mechanism, str):
        try:
            return choices[mechanism]().validated()
        except KeyError:
            names = ", ".join(repr(name) for name in sorted(choices))
            raise ValueError(
                f"mechanism={mechanism!r} is not one of {owner}'s mechanisms: "
                f"use {names}, or an instance of their classes."
            ) from None
    if isinstance(mechanism, tuple(choices.values())):
        return mechanism.validated()
    if isinstance(mechanism, MechanismOptions) and interface in mechanism.serves:
        return mechanism.validated()
    names = ", ".join(cls.__name__ for cls in choices.values())
    raise TypeError(
        f"mechanism={mechanism!r} is not a mechanism {owner} can run: use one of "
        f"{names} (or their shorthands "
        f"{', '.join(repr(name) for name in sorted(choices))})."
    )
