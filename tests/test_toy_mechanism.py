"""A mechanism written outside the package runs in an estimator unchanged.

The contract of ``MechanismOptions`` (its docstring; ``CONTRIBUTING.md``,
"Adding a mechanism") is small: options that ``plan`` themselves from a
``PlanContext``, a calibrated ``Mechanism`` that states its events and
makes an ``Engine``, and the engine's answers. The toy below, defined in
this file only, releases the plurality vote with Laplace noise at a fixed
epsilon per query (report noisy max, Dwork and Roth 2014, Claim 3.9, at
scale ``2 / epsilon`` for the two counts one replaced record moves). It
subclasses :class:`~dpsklearn.mechanisms.MechanismOptions` directly, says
it serves ``"vote_labels"`` (the interface ``SubsampleAggregateClassifier``
feeds), and brings its own plan, calibration and engine: the estimator must
use all three and charge what the toy states. A mechanism that serves
another interface is still refused.

Run alone: ``python -m pytest tests/test_toy_mechanism.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import STUMP, two_blobs

from dpsklearn import PrivacyAccountant, SubsampleAggregateClassifier
from dpsklearn.accounting import PureEvent
from dpsklearn.mechanisms import (
    Engine,
    Mechanism,
    MechanismOptions,
    MechanismPlan,
    PlanContext,
    Release,
)

#: The toy's public choices, independent of the estimator's parameters.
TOY_TEACHERS = 9
TOY_QUERIES = 40


class NoisyPluralityEngine(Engine):
    """Answers each row with ``argmax(votes + Laplace(2 / epsilon))``."""

    def __init__(self, epsilon_per_query: float, rng: np.random.Generator) -> None:
        self.epsilon_per_query = epsilon_per_query
        self.rng = rng
        self.batches: list[np.ndarray] = []

    def answer(self, method: str, statistic: np.ndarray) -> Release:
        votes = np.asarray(statistic, dtype=np.float64)
        self.batches.append(votes)
        noise = self.rng.laplace(scale=2.0 / self.epsilon_per_query, size=votes.shape)
        labels = np.argmax(votes + noise, axis=1).astype(np.int64)
        abstained = np.zeros(len(votes), dtype=bool)
        return Release({"label": labels, "abstained": abstained}, len(votes))


class NoisyPluralityRelease(Mechanism):
    """``max_queries`` pure releases of ``epsilon_per_query`` each."""

    def __init__(self, epsilon_per_query: float, max_queries: int) -> None:
        self.epsilon_per_query = float(epsilon_per_query)
        self.max_queries = int(max_queries)
        self.engines: list[NoisyPluralityEngine] = []

    def privacy_events(self, label: str | None = None) -> list[PureEvent]:
        return [PureEvent(self.epsilon_per_query, count=self.max_queries, label=label)]

    def engine(self, noise) -> NoisyPluralityEngine:
        engine = NoisyPluralityEngine(self.epsilon_per_query, noise[0])
        self.engines.append(engine)
        return engine

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return units * self.epsilon_per_query, 0.0

    def fitted_attributes(self) -> dict:
        return {"epsilon_per_query_": self.epsilon_per_query}


class NoisyPlurality(MechanismOptions):
    """Toy options: ``k`` and the query cap are the toy's, not the estimator's."""

    shorthand = "noisy_plurality"
    serves = frozenset({"vote_labels"})
    _parameter_constraints: dict = {}
    contexts: list[PlanContext] = []

    def calibrate(self, epsilon, delta, *, max_queries, **public):
        # Basic composition: max_queries pure releases share epsilon.
        return NoisyPluralityRelease(epsilon / max_queries, max_queries)

    def plan(self, context: PlanContext) -> MechanismPlan:
        type(self).contexts.append(context)
        mechanism = self.calibrate(
            context.epsilon, context.delta, max_queries=TOY_QUERIES
        )
        return MechanismPlan(mechanism, self, TOY_TEACHERS, TOY_QUERIES)


@pytest.fixture
def toy():
    NoisyPlurality.contexts = []
    return NoisyPlurality()


def test_the_estimator_runs_the_toys_plan_engine_and_charge(toy):
    X, y = two_blobs(600, seed=0)
    shared = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    model = SubsampleAggregateClassifier(
        STUMP,
        epsilon=2.0,
        classes=[0, 1],
        mechanism=toy,
        accountant=shared,
        random_state=0,
        noise_random_state=0,
    )
    with pytest.warns(Warning):  # noise_random_state is for tests only
        model.fit(X, y)

    # The plan: asked once, with public numbers only; its k and cap are used.
    (context,) = NoisyPlurality.contexts
    assert (context.n_samples, context.n_classes) == (600, 2)
    assert (context.epsilon, context.delta) == (2.0, 1e-5)
    assert model.n_estimators_ == len(model.estimators_) == TOY_TEACHERS
    assert model.mechanism_ is toy
    release = model.privacy_mechanism_
    assert isinstance(release, NoisyPluralityRelease)
    assert model.epsilon_per_query_ == pytest.approx(2.0 / TOY_QUERIES)

    # The charge: the toy's events, reserved whole at fit.
    assert shared.events == release.privacy_events(shared.events[0].label)
    assert shared.spent[0] == pytest.approx(2.0)

    # The engine: every answered row went through it, as vote counts, and
    # the serving counters charge what the toy's spent() says.
    eps_q = 2.0 / TOY_QUERIES
    model.predict(X[:10])
    assert model.budget_status().spent[0] == pytest.approx(10 * eps_q)
    labels, source = model.predict(X[10:60], return_source=True)
    (engine,) = release.engines
    votes = np.concatenate(engine.batches)
    assert votes.shape == (TOY_QUERIES, 2)
    assert np.all(votes.sum(axis=1) == TOY_TEACHERS)
    assert (source == "private").sum() == TOY_QUERIES - 10
    assert (source[TOY_QUERIES - 10 :] == "abstained").all()
    assert model.budget_status().spent[0] == pytest.approx(TOY_QUERIES * eps_q)
    assert set(labels[: TOY_QUERIES - 10]) <= {0, 1}


def test_a_toy_that_serves_another_interface_is_refused(toy):
    class NoisyMean(NoisyPlurality):
        serves = frozenset({"mean_values"})

    model = SubsampleAggregateClassifier(STUMP, classes=[0, 1], mechanism=NoisyMean())
    with pytest.raises(TypeError, match="mechanism"):
        model.fit(*two_blobs(200, seed=0))
    assert NoisyPlurality.contexts == []
