"""Attack audits: an adversary plants a record and queries a fitted private model.

:func:`dpsklearn.audit.audit` checks a *mechanism* on neighbouring inputs that
the caller builds from its proof. This module checks a private *estimator* the
way it is attacked (Chadha, Jagielski, Papernot, Choquette-Choo and Nasr,
"Auditing private prediction", ICML 2024): the adversary

1. **plants a record**: the training sets ``D`` and ``D'`` differ in one row
   (replace-one, ``docs/design.rst``, "Neighbouring datasets and what epsilon
   covers"), a poisoned point and its label or target of the adversary's
   choosing (:func:`plant_record`; :func:`shard_rows` says which teacher's
   shard a row lands in, so the adversary can make that teacher's vote
   decisive);
2. **queries the fitted model** through its public methods only (``predict``,
   ``predict_proba``, ``score``, ``budget_status``, the oracle's queries, a
   published student's ``predict``), choosing each query after seeing the
   earlier answers if it wants, up to the model's whole budget;
3. **distinguishes**: it turns the answers into one number, the *score*, whose
   large (or small) values say "``D``".

The game is played many times on each side with fresh noise, and the score
counts become a lower confidence bound on epsilon with Clopper-Pearson bounds
(:func:`dpsklearn.audit.epsilon_lower_bound`): the result
(:class:`AttackAuditResult`) reports it beside the epsilon the model claims.
A bound above the claim proves, at the stated confidence, that the model is
not private as claimed; a bound below it proves nothing (an audit sees one
pair of datasets and one attack).

Fresh noise
-----------
``fresh_noise="refit"`` fits a new model for every run. Where the estimator
has ``noise_random_state`` parameters (at any depth, such as a knowledge
transfer student's ``teacher__noise_random_state``), each fit gets its own
seed drawn from ``rng``: distinct seeds give independent noise, so the runs
are independent and the audit is reproducible. Everything else a fit does is
a function of the data and ``random_state`` (the partition and the teachers,
``docs/design.rst``, "Shards and teachers"), the same in every run.

``fresh_noise="entropy"`` fits a new model for every run as well, with the
estimator's own noise source (OS entropy when ``noise_random_state`` is
``None``), as a deployed model draws it: the runs are independent, not
reproducible. An attack that copies the model it is given needs this or
``"copy"``: a model whose noise is seeded makes copies that replay it by
design (``docs/design.rst``, "Serving state, copies and the ledger").

``fresh_noise="copy"`` fits one model per side (``noise_random_state`` must
be ``None``) and plays each run on a :func:`copy.deepcopy` of it: a copy
keeps the teachers and the calibration and reseeds its noise generators from
OS entropy (``docs/design.rst``, "Serving state, copies and the ledger"), so
the runs are the fitted model's release with fresh noise, for the cost of a
copy instead of a fit. It is faithful only where every bit of noise is drawn
after the copy: not for a model released at ``fit`` (a knowledge transfer
student, ``ExponentialMechanismERM``, ``PrivateKernelRidge(release="model")``:
use ``"refit"``), and not for the sparse vector stability test of
:class:`~dpsklearn.SubsampleAggregateClassifier` and
:class:`~dpsklearn.SoftLabelPrivateRegressor`, whose first noisy threshold is
drawn at ``fit`` and travels with every copy (the copies share it until
their first failed test): use ``"refit"`` there, or an attack whose measured
queries start after a failed test. Runs then draw OS entropy, as copies do in
production, so the result varies within its confidence.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state

from .._param_validation import Interval, StrOptions
from .._validation import DELTA, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ..exceptions import BudgetCopyWarning, PrivacyLeakWarning
from ..teachers import partition_indices
from ._audit import AuditResult, audit

__all__ = [
    "AttackAuditResult",
    "audit_private_prediction",
    "plant_record",
    "shard_rows",
]


@dataclass(frozen=True)
class AttackAuditResult(AuditResult):
    """The outcome of :func:`audit_private_prediction`.

    The fields of :class:`AuditResult` (the bound, the counts, the event)
    and the claim they are read against.

    Attributes
    ----------
    epsilon_claimed : float
        The epsilon the audited model claims for everything it releases.
    fresh_noise : {"refit", "entropy", "copy"}
        How each run got fresh noise.

    Examples
    --------
    >>> from dpsklearn.audit import AttackAuditResult
    >>> result = AttackAuditResult(
    ...     epsilon_lower=1.3, epsilon_hat=1.9, counts=(160, 22), n_runs=400,
    ...     n_selection_runs=0, confidence=0.95, delta=0.0, direction=0,
    ...     event="score >= 1", epsilon_claimed=1.0, fresh_noise="refit")
    >>> result.exceeds_claim
    True
    """

    epsilon_claimed: float
    fresh_noise: str

    @property
    def exceeds_claim(self) -> bool:
        """Whether the bound proves a loss above the claim (at ``confidence``)."""
        return self.epsilon_lower > self.epsilon_claimed

    def __str__(self):
        verdict = "ABOVE the claim" if self.exceeds_claim else "within the claim"
        return (
            f"epsilon >= {self.epsilon_lower:.4f} with confidence "
            f"{self.confidence:g}, {verdict} of {self.epsilon_claimed:g} "
            f"(delta {self.delta:g}; point estimate {self.epsilon_hat:.4f}; "
            f"event '{self.event}' in {self.counts[0]} / {self.counts[1]} of "
            f"{self.n_runs} runs per side, fresh noise by {self.fresh_noise})"
        )


# --------------------------------------------------------------------------
# The adversary's datasets
# --------------------------------------------------------------------------


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like", None],
        "index": [Interval(Integral, 0, None, closed="left")],
        "record": [tuple],
        "replacement": [tuple],
    },
    prefer_skip_nested_validation=True,
)
def plant_record(
    X: ArrayLike, y: ArrayLike | None, index: int, record: tuple, replacement: tuple
) -> tuple:
    """Two training sets that differ in one record: the adversary's neighbours.

    Row ``index`` of ``(X, y)`` becomes ``record`` in the first set and
    ``replacement`` in the second (replace-one neighbours); every other row
    is the same in both. Put the row where it influences what the attack
    reads, for instance in a teacher's shard chosen with :func:`shard_rows`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None
        ``None`` for a model fitted on ``X`` alone (the records' labels are
        then ``None`` too).
    index : int
        The row replaced.
    record, replacement : tuple of (x, label)
        The planted record and the one in its place on the other side: a
        feature row of length ``n_features`` and a label, target or
        ``None``.

    Returns
    -------
    datasets : tuple of two (X, y) tuples
        Fresh arrays; the inputs are not modified.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.audit import plant_record
    >>> X, y = np.zeros((4, 1)), np.array([0, 1, 0, 1])
    >>> (X0, y0), (X1, y1) = plant_record(X, y, 2, ([5.0], 1), ([5.0], 0))
    >>> y0.tolist(), y1.tolist(), bool(X0[2, 0] == X1[2, 0] == 5.0)
    ([0, 1, 1, 1], [0, 1, 0, 1], True)
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}.")
    if index >= X.shape[0]:
        raise ValueError(f"index must be below n_samples={X.shape[0]}, got {index}.")
    y = None if y is None else np.asarray(y)
    datasets: list[tuple[np.ndarray, np.ndarray | None]] = []
    for name, row in (("record", record), ("replacement", replacement)):
        if len(row) != 2:
            raise ValueError(f"{name} must be a pair (x, label), got {row!r}.")
        x_row, label = row
        x_row = np.asarray(x_row).reshape(-1)
        if x_row.size != X.shape[1]:
            raise ValueError(
                f"{name}'s x must have n_features={X.shape[1]} values, got "
                f"{x_row.size}."
            )
        if (y is None) != (label is None):
            raise ValueError(
                f"{name}'s label must be None exactly when y is None, got {label!r}."
            )
        X_new = np.array(X, dtype=np.result_type(X, x_row), copy=True)
        X_new[index] = x_row
        if y is None:
            datasets.append((X_new, None))
            continue
        y_new = np.array(y, dtype=np.result_type(y, np.asarray(label)), copy=True)
        y_new[index] = label
        datasets.append((X_new, y_new))
    return tuple(datasets)


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def shard_rows(n_samples: int, n_estimators: int, random_state: int) -> list:
    """The rows of each teacher's shard, as the estimators draw them at ``fit``.

    The partition is data-independent: a random permutation from
    ``random_state`` cut into ``n_estimators`` near-equal blocks
    (``docs/design.rst``, "Shards and teachers"). An adversary who knows
    ``random_state`` knows which teacher a planted row trains, and can lay
    out the other rows so that this teacher's vote is decisive. The
    statistical query oracle's chunks and the sharded kernel ridge use the
    same partition.

    Parameters
    ----------
    n_samples : int
    n_estimators : int
        Teachers (chunks, shards).
    random_state : int
        The estimator's ``random_state`` (an int: the audit needs the same
        partition at every fit).

    Returns
    -------
    shards : list of int64 ndarray
        ``shards[j]`` holds the rows of teacher ``j``.

    Examples
    --------
    >>> from dpsklearn.audit import shard_rows
    >>> shards = shard_rows(6, 3, random_state=0)
    >>> sorted(len(s) for s in shards)
    [2, 2, 2]
    """
    return partition_indices(
        int(n_samples), int(n_estimators), check_random_state(int(random_state))
    )


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------


def _claimed(params, name, default):
    """The estimator's own figure ``name`` (at its top level or nested once)."""
    if name in params:
        return params[name]
    nested = {v for k, v in params.items() if k.endswith(f"__{name}")}
    if len(nested) == 1:
        return nested.pop()
    if not nested and default is not None:
        return default
    raise ValueError(
        f"cannot read the claimed {name} from the estimator's parameters "
        f"(found {sorted(nested) if nested else 'none'}); pass {name}=."
    )


def _noise_parameters(params):
    return sorted(
        k
        for k in params
        if k == "noise_random_state" or k.endswith("__noise_random_state")
    )


def _fit(model, dataset, fit_params):
    X, y = dataset
    if y is None:
        return model.fit(X, **fit_params)
    return model.fit(X, y, **fit_params)


def _check_datasets(datasets):
    if isinstance(datasets, (str, bytes)) or not isinstance(datasets, Sequence):
        raise TypeError("datasets must be a pair of (X, y) training sets.")
    if len(datasets) != 2:
        raise ValueError(
            f"datasets must hold two neighbouring training sets, got {len(datasets)}."
        )
    for side, dataset in enumerate(datasets):
        if not isinstance(dataset, Sequence) or len(dataset) != 2:
            raise ValueError(
                f"datasets[{side}] must be a pair (X, y) (y may be None), got "
                f"{type(dataset).__name__}."
            )


def _score(value):
    array = np.asarray(value)
    if array.ndim != 0 or array.dtype.kind not in "biuf":
        raise ValueError(
            f"attack must return one real number per run (its score), got {value!r}."
        )
    score = float(array)
    if math.isnan(score):
        raise ValueError("attack returned nan; a score must be a number.")
    return score


@validate_params(
    {
        "estimator": [object],
        "datasets": [tuple, list],
        "attack": [callable],
        "n_runs": [Interval(Integral, 2, None, closed="left")],
        "event": [callable, dict, list, tuple, None],
        "fresh_noise": [StrOptions({"refit", "entropy", "copy"})],
        "epsilon": [FINITE_POSITIVE, None],
        "delta": [DELTA, None],
        "confidence": [OPEN_UNIT],
        "selection_fraction": [OPEN_UNIT],
        "fit_params": [dict, None],
        "rng": [None, Integral, np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def audit_private_prediction(
    estimator: BaseEstimator,
    datasets: Sequence,
    attack: Callable[[BaseEstimator, np.random.Generator], float],
    *,
    n_runs: int,
    event: Callable | Sequence | Mapping | None = None,
    fresh_noise: str = "refit",
    epsilon: float | None = None,
    delta: float | None = None,
    confidence: float = 0.95,
    selection_fraction: float = 0.5,
    fit_params: dict | None = None,
    rng: int | np.random.Generator | None = None,
) -> AttackAuditResult:
    """Lower confidence bound on a private estimator's epsilon, by attacking it.

    Each run fits (or copies) the estimator on one of the two neighbouring
    training sets and hands the fitted model to ``attack``, which queries it
    through its public methods and returns a score. Scores are counted by an
    output event on each side and the counts bounded as in
    :func:`dpsklearn.audit.audit`: with probability at least ``confidence``
    the model's true epsilon is at least ``epsilon_lower`` (Chadha et al.
    2024 audit private prediction this way; Jagielski, Ullman and Oprea 2020
    for the bound).

    Parameters
    ----------
    estimator : estimator
        The unfitted private estimator, configured as audited (it is cloned
        for every fit and never modified).
    datasets : pair of (X, y)
        The two training sets, neighbours under replace-one
        (:func:`plant_record`). ``y`` may be ``None`` for an estimator
        fitted on ``X`` alone.
    attack : callable
        ``attack(model, rng) -> float``: queries the fitted ``model`` and
        returns the score of this run. It may choose each query after seeing
        the earlier answers and the public counters (``budget_status()``),
        may spend the model's whole budget, and draws any randomness of its
        own from ``rng`` (a :class:`numpy.random.Generator`). It must use the
        model's public methods only; anything else (its teachers, its noise)
        is outside the threat model and voids the bound.
    n_runs : int
        Runs per side, selection runs included.
    event : callable, sequence or mapping of callables, or None, default=None
        The distinguisher's decision on the scores, as ``event`` of
        :func:`~dpsklearn.audit.audit`: a callable ``event(scores) -> bool
        array`` is used as given; ``None`` chooses a threshold on the score
        (or a set of score values) on the first ``selection_fraction`` of
        the runs and evaluates it on fresh runs. Give it when the likelihood
        ratio is known (a threshold on a sufficient statistic): no run is
        spent choosing it.
    fresh_noise : {"refit", "entropy", "copy"}, default="refit"
        ``"refit"``: a new fit per run, each with its own noise seed drawn
        from ``rng`` (see the module notes); ``"entropy"``: a new fit per
        run on the estimator's own noise source (OS entropy); ``"copy"``: one
        fit per side, one :func:`copy.deepcopy` per run, faithful only where
        all noise is drawn after the copy.
    epsilon, delta : float, optional
        The claim. Default: the estimator's own ``epsilon`` and ``delta``
        (or those of the one nested private estimator that has them;
        ``delta`` 0 when there is none). The bound uses ``delta``.
    confidence : float, default=0.95
        Of the bound (Bonferroni over both directions, see
        :func:`~dpsklearn.audit.epsilon_lower_bound`).
    selection_fraction : float, default=0.5
        Share of the runs that choose the event (when it is chosen).
    fit_params : dict, optional
        Passed to ``fit`` on both sides (for example ``X_public`` of a
        knowledge transfer student: the adversary's public rows).
    rng : int, numpy.random.Generator or None
        Seeds the runs' noise (``"refit"``), the attack's randomness and the
        event selection.

    Returns
    -------
    result : AttackAuditResult
        ``epsilon_lower`` beside ``epsilon_claimed``.

    Raises
    ------
    ValueError
        ``fresh_noise="copy"`` or ``"entropy"`` on a model whose
        ``noise_random_state`` is set (every copy or fit would replay one
        noise draw), a claim that cannot be read, or an attack score that is
        not one real number.

    See Also
    --------
    audit : the same bound for a mechanism on caller-built neighbours.

    Notes
    -----
    The bound concerns the audited pair of datasets and attack; the claim
    is a supremum over all of them, so a bound far below the claim says the
    attack lacked power, not that the model is more private than claimed.
    A model's claim covers one fitted model: an attack that copies the model
    it is given holds two budgets (the README's privacy contract), and its
    audit must claim the sum.

    Examples
    --------
    Ten teachers on one-row shards: each votes its row's label. The
    adversary plants label 0 against label 1 in a set where three of the
    other nine rows say 0 (votes [4, 6] against [3, 7]), asks the one query
    the model allows and bets on label 0:

    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from dpsklearn import PrivatePredictionClassifier
    >>> from dpsklearn.audit import audit_private_prediction, plant_record
    >>> X, y = np.arange(10.0).reshape(-1, 1), np.array([0] * 4 + [1] * 6)
    >>> datasets = plant_record(X, y, 0, ([0.0], 0), ([0.0], 1))
    >>> model = PrivatePredictionClassifier(
    ...     DummyClassifier(), n_estimators=10, epsilon=1.0, max_queries=1,
    ...     classes=[0, 1], random_state=0)
    >>> def attack(fitted, rng):
    ...     return float(fitted.predict([[0.0]])[0] == 0)
    >>> result = audit_private_prediction(
    ...     model, datasets, attack, n_runs=300, event=lambda s: s == 1, rng=0)
    >>> result.epsilon_claimed, bool(0 < result.epsilon_lower <= 1.0)
    (1.0, True)
    """
    _check_datasets(datasets)
    fit_params = dict(fit_params or {})
    params = estimator.get_params(deep=True)
    epsilon = float(_claimed(params, "epsilon", None) if epsilon is None else epsilon)
    delta = float(_claimed(params, "delta", 0.0) if delta is None else delta)
    noise_keys = _noise_parameters(params)
    rng = np.random.default_rng(rng)

    with warnings.catch_warnings():
        # The audit copies and seeds on purpose: the copy warning and the
        # seeded-noise warning say nothing about the audited model.
        warnings.simplefilter("ignore", BudgetCopyWarning)
        warnings.filterwarnings(
            "ignore", message="noise_random_state is set", category=PrivacyLeakWarning
        )
        fixed = [k for k in noise_keys if params[k] is not None]
        if fresh_noise != "refit" and fixed:
            raise ValueError(
                f"fresh_noise={fresh_noise!r} needs {fixed[0]}=None: copies and "
                "refits of a model with fixed noise replay it, so the runs would "
                "not be independent. Use fresh_noise='refit'."
            )
        if fresh_noise == "copy":
            fitted = [_fit(clone(estimator), d, fit_params) for d in datasets]

            def play(side, run_rng):
                return _score(attack(copy.deepcopy(fitted[side]), run_rng))

        else:
            seeded = fresh_noise == "refit"

            def play(side, run_rng):
                model = clone(estimator)
                if seeded and noise_keys:
                    seeds = run_rng.integers(2**62, size=len(noise_keys))
                    model.set_params(
                        **{k: int(s) for k, s in zip(noise_keys, seeds, strict=True)}
                    )
                return _score(attack(_fit(model, datasets[side], fit_params), run_rng))

        def mechanism(side, n, run_rng):
            return np.array([play(side, run_rng) for _ in range(n)], dtype=np.float64)

        result = audit(
            mechanism,
            event,
            n_runs=n_runs,
            delta=delta,
            confidence=confidence,
            rng=rng,
            selection_fraction=selection_fraction,
        )
    values = {f.name: getattr(result, f.name) for f in fields(AuditResult)}
    return AttackAuditResult(**values, epsilon_claimed=epsilon, fresh_noise=fresh_noise)
