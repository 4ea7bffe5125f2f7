"""Kernel ridge on random features, released by perturbed sufficient statistics.

A publishable private kernel ridge: rows are mapped through ``D`` paired
random Fourier features and a constant, scaled so that every feature vector
has norm exactly 1 (``B_x = 1``),

    phi(x) = [cos(W x), sin(W x), 1] / sqrt(D + 1),

with frequencies ``W`` from the kernel's spectral measure drawn from
``random_state`` (data independent; Rahimi and Recht 2007). Targets are
clipped to the public ``target_range = (lo, hi)`` and centred at its
midpoint, so ``|y - c| <= B_y = (hi - lo) / 2``. ``Phi^T Phi``, ``Phi^T y``
and ``lambda_min(Phi^T Phi)`` are accumulated in chunks of rows (memory
bounded, one matrix product per chunk) and released once by
:class:`~dpsklearn.mechanisms.SufficientStatisticsRelease` (AdaSSP, Wang
2018); the weights ``theta = (G~ + lam I)^-1 b~`` are post-processing, so
the fitted model may be published and its predictions are free
(``docs/regression.rst``, "Sufficient-statistics perturbation").

Unlike output perturbation (``docs/design.rst``, "Kernel ridge: sensitivity
and releases"), whose sensitivity grows as the regulariser shrinks, the
noise here does not depend on a regulariser chosen in advance: ``lam`` is set
after the release, from the released smallest eigenvalue and the noise
level.

:func:`fit_random_feature_ssp` is the fit (the estimator wiring is the
estimators' own); :func:`auto_n_components` the public rule for ``D``.

**Linear first** (the default of
:class:`~dpsklearn.mechanisms.SufficientStatistics`, ``linear_share > 0``):
a linear model on ``psi(x) = [x min(1, R / ||x||) / R, 1] / sqrt(2)``
(``||psi(x)|| <= 1``, ``R`` the public ``row_bound``) is released first by
AdaSSP with its share of the budget, and the random features are fitted to
its residuals ``clip(y - clip(psi(x) theta_1, -B_y, B_y), -B_y, B_y)``, so
both stages have one stage's sensitivities
(:class:`~dpsklearn.mechanisms.StagedStatisticsRelease`;
``docs/regression.rst``, "Linear first, then the kernel").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy import linalg
from scipy.linalg import blas
from sklearn.base import clone
from sklearn.utils import check_random_state, gen_batches

from .._base import FitPlan
from ..mechanisms import (
    StagedStatisticsRelease,
    SufficientStatistics,
    SufficientStatisticsRelease,
    accumulate_statistics,
)
from ..noise import NoiseSource, make_noise_generators
from ._kernels import _fourier_frequencies

__all__ = [
    "RandomFeatureModel",
    "auto_n_components",
    "fit_random_feature_ssp",
    "linear_feature_map",
    "plan_frequencies",
    "plan_statistics",
    "predict_random_features",
    "random_feature_map",
    "random_feature_statistics",
    "random_fourier_frequencies",
    "ssp_release",
    "ssp_training",
    "staged_release",
    "staged_ssp_release",
    "statistics_release",
    "statistics_training",
]

_MIB = 2**20


def random_feature_map(X: ArrayLike, frequencies: np.ndarray) -> NDArray[np.float64]:
    """``[cos(X W^T), sin(X W^T), 1] / sqrt(D + 1)``: every row has norm 1.

    The scale is shaded by ``2**-50`` so that floating-point rounding never
    leaves a row above norm 1.
    """
    projection = np.asarray(X, dtype=np.float64) @ frequencies.T
    scale = (1.0 - 2.0**-50) / math.sqrt(frequencies.shape[0] + 1)
    features = np.empty((projection.shape[0], 2 * projection.shape[1] + 1))
    D = projection.shape[1]
    np.cos(projection, out=features[:, :D])
    np.sin(projection, out=features[:, D : 2 * D])
    features[:, 2 * D] = 1.0
    features *= scale
    return features


def linear_feature_map(X: ArrayLike, row_bound: float) -> NDArray[np.float64]:
    """``[x min(1, R / ||x||) / R, 1] / sqrt(2)``: every row has norm at most 1.

    Each row is clipped to L2 norm ``R = row_bound`` (a public constant; a
    row-local map, so one record still moves one row), then scaled; the
    constant column carries the intercept. Shaded by ``2**-50`` like the
    random features.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.kernel_ridge import linear_feature_map
    >>> psi = linear_feature_map(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    >>> np.round(np.linalg.norm(psi, axis=1), 6).tolist()
    [1.0, 0.790569]
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    shrink = np.ones_like(norms)
    long = norms > row_bound
    shrink[long] = row_bound / norms[long]
    scale = (1.0 - 2.0**-50) / math.sqrt(2.0)
    features = np.empty((X.shape[0], X.shape[1] + 1))
    np.multiply(X, (shrink * scale / row_bound)[:, None], out=features[:, :-1])
    features[:, -1] = scale
    return features


def _linear_statistics(X, y, row_bound, working_memory=64.0):
    """``(Psi^T Psi, Psi^T y, lambda_min)`` of the linear stage (non-private)."""
    return accumulate_statistics(
        X,
        y,
        lambda rows: linear_feature_map(rows, row_bound),
        X.shape[1] + 1,
        working_memory=working_memory,
    )


def _linear_values(X, coef, row_bound, label_bound, working_memory=64.0):
    """The released linear stage's predictions, clipped to ``[-B_y, B_y]``."""
    values = np.empty(X.shape[0])
    for rows in gen_batches(X.shape[0], _chunk_rows(coef.shape[0], working_memory)):
        values[rows] = linear_feature_map(X[rows], row_bound) @ coef
    return np.clip(values, -label_bound, label_bound)


def staged_ssp_release(
    mechanism: StagedStatisticsRelease,
    X: np.ndarray,
    y: np.ndarray,
    frequencies: np.ndarray,
    row_bound: float,
    noise: NoiseSource,
) -> dict[str, object]:
    """The linear stage, then the random features on its residuals.

    ``y`` is clipped and centred (``|y| <= B_y``). Stage 1 releases AdaSSP
    on :func:`linear_feature_map`; its released model's predictions,
    clipped to ``[-B_y, B_y]``, are subtracted and the residuals clipped to
    ``[-B_y, B_y]`` again, so stage 2 (AdaSSP on the random features) has a
    single stage's sensitivities whatever stage 1 released. Only the two
    solved weight vectors leave (post-processing of the noisy statistics).
    """

    def feature_statistics(linear_coef, label_bound):
        residual = np.clip(
            y - _linear_values(X, linear_coef, row_bound, label_bound),
            -label_bound,
            label_bound,
        )
        gram, moment = random_feature_statistics(X, residual, frequencies)
        lambda_min = float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])
        return gram, moment, lambda_min

    return staged_release(
        mechanism, _linear_statistics(X, y, row_bound), feature_statistics, noise
    )


def staged_release(
    mechanism: StagedStatisticsRelease,
    linear_statistics: tuple,
    feature_statistics: Callable[[np.ndarray, float], tuple],
    noise: NoiseSource,
) -> dict[str, object]:
    """Release the linear stage, then the random features on its residuals.

    ``linear_statistics`` are the linear stage's exact statistics;
    ``feature_statistics(linear_coef, label_bound)`` computes the random
    features' on the residuals of the released linear model (in this
    process, or summed over a Dask collection's partitions).
    """
    linear_stage, feature_stage = mechanism.stages
    linear_coef, linear_regulariser = ssp_release(
        linear_stage, linear_statistics, noise
    )
    statistics = feature_statistics(linear_coef, feature_stage.label_bound)
    coef, regulariser = ssp_release(feature_stage, statistics, noise)
    return {
        "coef_": coef,
        "regulariser_": regulariser,
        "linear_coef_": linear_coef,
        "linear_regulariser_": linear_regulariser,
    }


def random_fourier_frequencies(
    n_features: int,
    n_components: int,
    *,
    gamma: float | None = None,
    kernel: str = "rbf",
    random_state: int | np.random.RandomState | None = None,
) -> NDArray[np.float64]:
    """The data-independent frequencies :func:`fit_random_feature_ssp` draws.

    ``gamma=None`` means ``1 / n_features``; ``random_state`` is public
    randomness, so a non-private baseline can use the very same features.

    Examples
    --------
    >>> from dpsklearn.kernel_ridge import random_fourier_frequencies
    >>> random_fourier_frequencies(3, 5, random_state=0).shape
    (5, 3)
    """
    gamma = 1.0 / n_features if gamma is None else float(gamma)
    return _fourier_frequencies(
        kernel,
        gamma,
        int(n_features),
        int(n_components),
        check_random_state(random_state),
    )


def _chunk_rows(n_columns, working_memory):
    return max(1, int(working_memory * _MIB // (8 * max(1, n_columns))))


def random_feature_statistics(
    X: np.ndarray,
    y: np.ndarray,
    frequencies: np.ndarray,
    *,
    working_memory: float = 64.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(Phi^T Phi, Phi^T y)`` accumulated over chunks of rows (non-private).

    One feature block of at most ``working_memory`` MiB at a time; each
    chunk adds its ``Phi_c^T Phi_c`` (one BLAS product) and ``Phi_c^T y_c``.
    """
    p = 2 * frequencies.shape[0] + 1
    # The upper triangle by a symmetric rank-k update (BLAS syrk, half the
    # work of a general product), Fortran order so it is updated in place.
    gram = np.zeros((p, p), order="F")
    moment = np.zeros(p)
    for rows in gen_batches(X.shape[0], _chunk_rows(p, working_memory)):
        features = random_feature_map(X[rows], frequencies)
        gram = blas.dsyrk(
            1.0, features, beta=1.0, c=gram, trans=1, lower=0, overwrite_c=1
        )
        moment += features.T @ y[rows]
    upper = np.triu(gram)
    return upper + np.triu(upper, 1).T, moment


def auto_n_components(n_samples: int, epsilon: float) -> int:
    """``D``, the number of random frequencies, from public numbers only.

    The Gram noise's spectral edge, and with it the regulariser, grows as
    ``sqrt(p)`` with the width ``p = 2 D + 1``, while more frequencies
    approximate the kernel better; the best ``D`` on validation rows of
    Friedman #1 grew about as ``sqrt(n epsilon)``: ``D = clip(round(2.5
    sqrt(n epsilon)), 50, 800)`` (800 keeps the fit of 100,000 rows within
    seconds; ``docs/regression.rst``, "Sufficient-statistics perturbation").

    Examples
    --------
    >>> from dpsklearn.kernel_ridge import auto_n_components
    >>> auto_n_components(100_000, 1.0), auto_n_components(10_000, 0.5)
    (791, 177)
    """
    value = 2.5 * math.sqrt(float(n_samples) * float(epsilon))
    return int(min(800, max(50, round(value))))


@dataclass
class RandomFeatureModel:
    """A released random-feature ridge model (publishable).

    Attributes
    ----------
    coef_ : ndarray of shape (2 D + 1,)
        The weights (post-processing of the noisy statistics).
    frequencies_ : ndarray of shape (D, n_features)
        Data independent.
    center_, target_range_ : float, (float, float)
    regulariser_ : float
        AdaSSP's ``lam`` (on the scale of ``Phi^T Phi``).
    mechanism_ : SufficientStatisticsRelease
    """

    coef_: np.ndarray
    frequencies_: np.ndarray
    center_: float
    target_range_: tuple[float, float]
    regulariser_: float
    mechanism_: SufficientStatisticsRelease

    def predict(
        self, X: np.ndarray, *, working_memory: float = 64.0
    ) -> NDArray[np.float64]:
        """Free predictions, clipped to ``target_range_``."""
        values = np.empty(X.shape[0])
        p = self.coef_.shape[0]
        for rows in gen_batches(X.shape[0], _chunk_rows(p, working_memory)):
            values[rows] = random_feature_map(X[rows], self.frequencies_) @ self.coef_
        return np.clip(values + self.center_, *self.target_range_)


def fit_random_feature_ssp(
    X: ArrayLike,
    y: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    target_range: tuple[float, float],
    gamma: float | None = None,
    n_components: int | Literal["auto"] = "auto",
    kernel: str = "rbf",
    shares: Sequence[float] = (0.5, 0.48, 0.02),
    random_state: int | np.random.RandomState | None = None,
    noise: NoiseSource | None = None,
    working_memory: float = 64.0,
    mechanism: SufficientStatisticsRelease | None = None,
) -> RandomFeatureModel:
    """Fit and release a random-feature ridge model by AdaSSP, in one stage.

    The random features alone (``SufficientStatistics(linear_share=0)``):
    ``PrivateKernelRidge`` validates inputs, reserves the budget with an
    accountant and, by default, releases a linear stage first
    (:func:`staged_ssp_release`); this function is the single-stage fit on
    its own, for benchmarks and experiments.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    epsilon, delta : float
    target_range : (float, float)
        Public bounds of ``y`` (clipped to them; centred at their midpoint).
    gamma : float, optional
        Kernel coefficient; ``None``: ``1 / n_features``, which suits
        columns of unit variance (scale them with public constants first).
    n_components : int or "auto"
        ``D``; ``"auto"``: :func:`auto_n_components`.
    kernel : {"rbf", "laplacian"}
    shares : three floats
        Shares of the budget (Gram matrix, moment, eigenvalue).
    random_state : int or None
        The frequencies (public randomness).
    noise : NoiseSource, optional
        The mechanism's noise; ``None``: fresh OS entropy.
    working_memory : float
        MiB of one feature block.
    mechanism : SufficientStatisticsRelease, optional
        Already calibrated (and reserved by the caller's accountant) for
        ``2 n_components + 1`` features, ``B_x = 1`` and ``B_y = (hi -
        lo) / 2``; ``None`` calibrates one from ``epsilon``, ``delta`` and
        ``shares``.

    Returns
    -------
    model : RandomFeatureModel

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.kernel_ridge import fit_random_feature_ssp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 2))            # columns of unit variance
    >>> y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    >>> model = fit_random_feature_ssp(X, y, epsilon=1.0, delta=1e-5,
    ...                                target_range=(-3, 3), random_state=0)
    >>> model.coef_.shape              # D = 354 frequencies: cos, sin and a constant
    (709,)
    >>> bool(np.mean((model.predict(X) - y) ** 2) < 0.1 * np.var(y))
    True
    """
    X = np.asarray(X, dtype=np.float64)
    lo, hi = (float(v) for v in target_range)
    center, label_bound = (lo + hi) / 2.0, (hi - lo) / 2.0
    y = np.clip(np.asarray(y, dtype=np.float64), lo, hi) - center
    n_samples, n_features = X.shape
    if n_components == "auto":
        n_components = auto_n_components(n_samples, epsilon)
    frequencies = random_fourier_frequencies(
        n_features, n_components, gamma=gamma, kernel=kernel, random_state=random_state
    )
    n_weights = 2 * int(n_components) + 1
    if mechanism is None:
        mechanism = SufficientStatisticsRelease.calibrate(
            epsilon,
            delta,
            n_features=n_weights,
            feature_bound=1.0,
            label_bound=label_bound,
            shares=shares,
        )
    elif (
        mechanism.n_features != n_weights
        or mechanism.feature_bound < 1.0
        or mechanism.label_bound < label_bound
    ):
        raise ValueError(
            f"mechanism is calibrated for {mechanism.n_features} features, "
            f"B_x={mechanism.feature_bound}, B_y={mechanism.label_bound}; this "
            f"fit needs {n_weights}, 1 and {label_bound}."
        )
    gram, moment = random_feature_statistics(
        X, y, frequencies, working_memory=working_memory
    )
    lambda_min = float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])
    if noise is None:
        noise = NoiseSource(*make_noise_generators(None, 1))
    released = mechanism.release(gram, moment, lambda_min, noise)
    del gram, moment, lambda_min
    coef, lam = mechanism.solve(released)
    return RandomFeatureModel(coef, frequencies, center, (lo, hi), lam, mechanism)


def ssp_training(X, y, *, n_components, gamma, kernel, target_range, random_state):
    """The non-private part of an AdaSSP fit: frequencies and the statistics.

    Returns the frequencies, the target's centre, and the exact statistics
    ``(Phi^T Phi, Phi^T y, lambda_min(Phi^T Phi))`` of the centred, clipped
    targets, which only :func:`ssp_release` may turn into something public.
    """
    lo, hi = (float(v) for v in target_range)
    center = (lo + hi) / 2.0
    y = np.clip(np.asarray(y, dtype=np.float64), lo, hi) - center
    frequencies = random_fourier_frequencies(
        X.shape[1], n_components, gamma=gamma, kernel=kernel, random_state=random_state
    )
    gram, moment = random_feature_statistics(X, y, frequencies)
    lambda_min = float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])
    return frequencies, center, (gram, moment, lambda_min)


def ssp_release(mechanism, statistics, noise):
    """The released weights and regulariser (post-processing of noisy statistics)."""
    released = mechanism.release(*statistics, noise)
    return mechanism.solve(released)


def predict_random_features(
    X: ArrayLike,
    frequencies: np.ndarray,
    coef: np.ndarray,
    center: float,
    target_range: tuple[float, float],
    linear_coef: np.ndarray | None = None,
    row_bound: float | None = None,
) -> NDArray[np.float64]:
    """``phi(X) @ coef + center``, clipped to ``target_range``, in chunks.

    With a linear stage, its clipped predictions are added first (the model
    the residuals were fitted to). Sparse query rows are made dense (the
    model was fitted on dense rows).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X).toarray()
    X = np.asarray(X, dtype=np.float64)
    values = np.empty(X.shape[0])
    for rows in gen_batches(X.shape[0], _chunk_rows(coef.shape[0], 64.0)):
        values[rows] = random_feature_map(X[rows], frequencies) @ coef
    if linear_coef is not None:
        lo, hi = target_range
        bound = float(row_bound)  # type: ignore[arg-type]  # set with linear_coef
        values += _linear_values(X, linear_coef, bound, (hi - lo) / 2.0)
    return np.clip(values + center, *target_range)


def plan_statistics(
    options: SufficientStatistics,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    kernel: str,
    gamma: float | None,
    target_range: tuple[float, float],
) -> FitPlan:
    """The fit plan of ``PrivateKernelRidge``'s AdaSSP release.

    ``docs/regression.rst``, "Sufficient-statistics perturbation": the
    mechanism calibrated for ``2 D + 1`` features (``D`` from
    :func:`auto_n_components` when ``"auto"``) and labels centred on the
    public range, bounded by its half-width; the model is released at fit.
    """
    if sp.issparse(X):
        raise TypeError(
            "SufficientStatistics maps rows through random Fourier features "
            "and needs dense X; use OutputPerturbation for sparse input."
        )
    n_components = options.n_components
    if n_components == "auto":
        n_components = auto_n_components(X.shape[0], epsilon)
    lo, hi = target_range
    staged = options.linear_share > 0
    row_bound = None
    if staged:
        row_bound = options.row_bound
        if row_bound == "auto":
            # Columns mapped by public bounds to unit variance lie in
            # [-sqrt(3), sqrt(3)]: no such row is longer than sqrt(3 d).
            row_bound = math.sqrt(3.0 * X.shape[1])
        row_bound = float(row_bound)
    mechanism = options.calibrate(
        epsilon,
        delta,
        n_features=2 * int(n_components) + 1,
        label_bound=(hi - lo) / 2.0,
        n_linear_features=X.shape[1] + 1 if staged else None,
    )
    return FitPlan(
        mechanism,
        X,
        y,
        delta=delta,
        training={
            "statistics": (int(n_components), gamma, kernel, (lo, hi)),
            "row_bound": row_bound,
        },
        serving={"released": True},
        attributes={
            "row_bound_": row_bound,
            "mechanism_": clone(options).set_params(
                n_components=n_components, row_bound=row_bound or options.row_bound
            ),
            "target_range_": (lo, hi),
            "y_bound_": (hi - lo) / 2.0,  # the centred labels' bound
            "gamma_": gamma,
            "kappa_": 1.0,  # ||phi(x)|| <= 1
            "n_estimators_": 1,
            "x_bound_": None,
        },
    )


def statistics_training(
    plan: FitPlan, random_state: int | np.random.RandomState | None
) -> dict[str, object]:
    """``PrivateKernelRidge``'s train step for :class:`SufficientStatistics`.

    Public frequencies and centre, and what :func:`statistics_release`
    needs: the exact statistics (one stage), or the clipped, centred rows
    (two stages: the second stage's labels wait for the first release).
    Nothing here leaves the fit.
    """
    n_components, gamma, kernel, target_range = plan.training["statistics"]
    if plan.training["row_bound"] is None:
        frequencies, center, statistics = ssp_training(
            plan.X,
            plan.y,
            n_components=n_components,
            gamma=gamma,
            kernel=kernel,
            target_range=target_range,
            random_state=random_state,
        )
        return {
            "_statistics": statistics,
            "random_frequencies_": frequencies,
            "center_": center,
        }
    lo, hi = target_range
    center = (lo + hi) / 2.0
    frequencies = plan_frequencies(plan, random_state)
    rows = (plan.X, np.clip(np.asarray(plan.y, dtype=np.float64), lo, hi) - center)
    return {"_rows": rows, "random_frequencies_": frequencies, "center_": center}


def plan_frequencies(
    plan: FitPlan, random_state: int | np.random.RandomState | None
) -> NDArray[np.float64]:
    """The plan's random Fourier frequencies (public: from ``random_state``)."""
    n_components, gamma, kernel, _ = plan.training["statistics"]
    return random_fourier_frequencies(
        plan.X.shape[1],
        n_components,
        gamma=gamma,
        kernel=kernel,
        random_state=random_state,
    )


def statistics_release(plan: FitPlan, fitted: dict, noise: NoiseSource) -> None:
    """Replace the private parts of ``fitted`` by the released weights."""
    if "_rows" in fitted:
        X, y = fitted.pop("_rows")
        fitted.update(
            staged_ssp_release(
                plan.mechanism,
                X,
                y,
                fitted["random_frequencies_"],
                plan.training["row_bound"],
                noise,
            )
        )
    else:
        coef, regulariser = ssp_release(
            plan.mechanism, fitted.pop("_statistics"), noise
        )
        fitted.update(
            {
                "coef_": coef,
                "regulariser_": regulariser,
                "linear_coef_": None,
                "linear_regulariser_": None,
            }
        )
    fitted["release_"] = "sufficient_statistics"
