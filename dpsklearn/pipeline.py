"""A Pipeline in front of a private estimator, refusing steps that learn from its rows.

``make_pipeline(StandardScaler(), PrivatePredictionRegressor(...))`` fits the
scaler on the private rows by ``Pipeline.fit``, outside the private
estimator, which never sees it: the scaler's means and variances are then
published with every answer, unpaid. The private estimator cannot tell
(it receives the scaled rows), so the check sits where the steps are
assembled: :func:`make_private_pipeline` builds the ``Pipeline`` and refuses
any earlier step that would learn from the rows it is fitted on, unless it
is marked public. Learnt preprocessing belongs inside the teacher (each
teacher fits it on its own shard, inside the guarantee); a step fitted on
public data is marked public by wrapping it in
:class:`~sklearn.frozen.FrozenEstimator`.
"""

from __future__ import annotations

from typing import Any

from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import get_tags

from ._base import PrivateEstimatorMixin

__all__ = ["make_private_pipeline"]


def _learns_from_rows(step: Any) -> bool:
    """Whether ``Pipeline.fit`` would fit ``step`` on the rows it is given."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return False
    if isinstance(step, FrozenEstimator):
        return False  # fitted beforehand (on public rows); fit does nothing
    try:
        return bool(get_tags(step).requires_fit)
    except Exception:  # not a scikit-learn estimator: assume it learns
        return True


def make_private_pipeline(*steps: Any, memory: Any = None) -> Pipeline:
    """A ``Pipeline`` whose last step is private and whose other steps learn nothing.

    Every step before the last must be data-independent: a transformer that
    needs no fit (``FunctionTransformer``, ``Normalizer``: scikit-learn's
    ``requires_fit`` tag is false), ``"passthrough"``, or a transformer
    fitted on public data and frozen
    (``FrozenEstimator(StandardScaler().fit(X_public))``). A step that would
    be fitted on the private rows (a ``StandardScaler``, a
    ``OneHotEncoder``, a ``PCA``) is refused: put it inside the teacher
    instead, where each teacher fits it on its own shard
    (``docs/privacy_contract.rst``, "Public and private inputs"). The last
    step must be a dpsklearn private estimator.

    Parameters
    ----------
    *steps : estimators
        As :func:`sklearn.pipeline.make_pipeline` takes them.
    memory : str or object, default=None
        Passed to the ``Pipeline``.

    Returns
    -------
    pipeline : Pipeline

    Raises
    ------
    ValueError
        If a step before the last would learn from the private rows.
    TypeError
        If the last step is not a dpsklearn private estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.preprocessing import FunctionTransformer, StandardScaler
    >>> from dpsklearn import PrivatePredictionClassifier
    >>> from dpsklearn.pipeline import make_private_pipeline
    >>> model = PrivatePredictionClassifier(classes=[0, 1])
    >>> make_private_pipeline(StandardScaler(), model)
    Traceback (most recent call last):
    ...
    ValueError: make_private_pipeline: step 0 (StandardScaler) would be fitted ...
    >>> X_public = np.random.default_rng(0).normal(size=(100, 3))
    >>> scaler = FrozenEstimator(StandardScaler().fit(X_public))  # public rows
    >>> pipe = make_private_pipeline(FunctionTransformer(np.log1p), scaler, model)
    >>> [name for name, _ in pipe.steps]
    ['functiontransformer', 'frozenestimator', 'privatepredictionclassifier']
    """
    if not steps:
        raise ValueError("make_private_pipeline needs at least the private estimator.")
    *front, last = steps
    if not isinstance(last, PrivateEstimatorMixin):
        raise TypeError(
            f"make_private_pipeline: the last step must be a dpsklearn private "
            f"estimator, got {type(last).__name__}."
        )
    for position, step in enumerate(front):
        if _learns_from_rows(step):
            raise ValueError(
                f"make_private_pipeline: step {position} ({type(step).__name__}) "
                "would be fitted on the private training rows by Pipeline.fit, "
                f"outside {type(last).__name__}, and what it learns (means, "
                "categories, components) would be published with every answer, "
                "unpaid. Put it inside the teacher (the private estimator's "
                "estimator, e.g. make_pipeline(StandardScaler(), Ridge())), where "
                "each teacher fits it on its own shard; or fit it on public rows "
                "and mark it public with sklearn.frozen.FrozenEstimator(...)."
            )
    return make_pipeline(*steps, memory=memory)
