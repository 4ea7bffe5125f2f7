"""make_private_pipeline refuses steps fitted on the private rows.

A scaler in front of a private estimator in a plain ``Pipeline`` is fitted
on the private rows by ``Pipeline.fit``, and its means and variances are
published with every answer, unpaid; the private estimator never sees it.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import STUMP, two_blobs
from sklearn.decomposition import PCA
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

from dpsklearn import PrivateKernelRidge, PrivatePredictionClassifier
from dpsklearn.pipeline import make_private_pipeline

RNG = np.random.default_rng(0)
X, Y = two_blobs(400, seed=0)


def _private(estimator=STUMP):
    return PrivatePredictionClassifier(
        estimator, n_estimators=10, max_queries=50, classes=[0, 1], random_state=0
    )


@pytest.mark.parametrize("step", [StandardScaler(), PCA(n_components=2)])
def test_a_step_fitted_on_the_private_rows_is_refused(step):
    with pytest.raises(ValueError, match="fitted on the private training rows"):
        make_private_pipeline(step, _private())


def test_the_message_says_where_it_belongs():
    with pytest.raises(ValueError) as caught:
        make_private_pipeline(FunctionTransformer(), StandardScaler(), _private())
    message = str(caught.value)
    assert "step 1 (StandardScaler)" in message
    assert "inside the teacher" in message and "FrozenEstimator" in message


def test_stateless_and_frozen_public_steps_are_accepted_and_fit():
    public = RNG.normal(size=(500, 2))
    pipe = make_private_pipeline(
        FunctionTransformer(np.tanh),
        Normalizer(),
        FrozenEstimator(StandardScaler().fit(public)),
        "passthrough",
        _private(),
    )
    pipe.fit(X, Y)
    assert pipe.predict(X[:5]).shape == (5,)


def test_learnt_preprocessing_inside_the_teacher_is_the_way():
    teacher = make_pipeline(StandardScaler(), LogisticRegression())
    pipe = make_private_pipeline(_private(teacher))
    assert pipe.fit(X, Y).predict(X[:3]).shape == (3,)


def test_the_last_step_must_be_private():
    with pytest.raises(TypeError, match="private estimator"):
        make_private_pipeline(FunctionTransformer(), Ridge())
    with pytest.raises(ValueError, match="at least"):
        make_private_pipeline()


def test_any_private_estimator_can_be_last():
    pipe = make_private_pipeline(
        FunctionTransformer(), PrivateKernelRidge(y_bound=(-4, 4), random_state=0)
    )
    assert type(pipe.steps[-1][1]) is PrivateKernelRidge
