"""Sampling one answer from scores: the exponential mechanism; simplex projection;
the runs of a random repetition.

:func:`exponential_mechanism` samples ``r`` with probability proportional to
``exp(epsilon u(r) / (2 Delta_u))`` (McSherry and Talwar 2007) by the
Gumbel-max trick, so it never exponentiates a score and cannot overflow
(``docs/design.rst``, "Noise primitives"). :func:`project_to_simplex` is
post-processing for noisy probability vectors. :func:`repeated_candidates`
draws the secret number of runs of a private selection by random
repetition and the candidate of each run (Papernot and Steinke 2022).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import FINITE_POSITIVE, validate_params

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_unchecked",
    "project_to_simplex",
    "repeated_candidates",
]


@validate_params(
    {
        "utilities": ["array-like"],
        "epsilon": [FINITE_POSITIVE],
        "sensitivity": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def exponential_mechanism(
    utilities: ArrayLike,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    rng: np.random.Generator,
) -> NDArray[np.intp] | np.intp:
    """Sample ``r`` with ``P(r) ~ exp(epsilon u(r) / (2 sensitivity))``, per row.

    Uses the Gumbel-max trick on log-weights: ``argmax_r(epsilon u_r /
    (2 Delta) + G_r)`` with i.i.d. standard Gumbel ``G_r`` has exactly that
    distribution, and never exponentiates, so it neither overflows nor
    underflows at any epsilon or score. ``epsilon``-DP when every utility has
    sensitivity ``sensitivity`` (McSherry and Talwar 2007, Theorem 6).

    Parameters
    ----------
    utilities : array-like of shape (n_candidates,) or (n_rows, n_candidates)
    epsilon : float
    sensitivity : float, default=1.0
    rng : numpy.random.Generator

    Returns
    -------
    index : int or int64 ndarray of shape (n_rows,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import exponential_mechanism
    >>> int(exponential_mechanism([0, 1000], 1.0, rng=np.random.default_rng(0)))
    1
    """
    return exponential_mechanism_unchecked(utilities, epsilon, sensitivity, rng=rng)


def exponential_mechanism_unchecked(
    utilities: ArrayLike,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    rng: np.random.Generator,
) -> NDArray[np.intp] | np.intp:
    """:func:`exponential_mechanism` without its parameter checks.

    For engines whose ``epsilon`` and ``sensitivity`` were checked once,
    when their mechanism was calibrated at ``fit`` (finite and > 0): they
    draw on every ``predict`` call, and the checks would run on every call.
    Same draws as :func:`exponential_mechanism` from the same generator.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import exponential_mechanism_unchecked
    >>> rng = np.random.default_rng(0)
    >>> int(exponential_mechanism_unchecked([0, 1000], 1.0, rng=rng))
    1
    """
    epsilon = float(epsilon)
    sensitivity = float(sensitivity)
    utilities = np.asarray(utilities, dtype=np.float64)
    log_weights = utilities * (epsilon / (2.0 * sensitivity))
    perturbed = log_weights + rng.gumbel(size=utilities.shape)
    return np.argmax(perturbed, axis=-1)[()]


@validate_params(
    {
        "values": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def project_to_simplex(values: ArrayLike) -> NDArray[np.float64]:
    """Euclidean projection of each row onto the probability simplex.

    Post-processing for noisy probability vectors (``predict_proba``;
    ``docs/design.rst``, "Per-query releases"): the result of row ``v`` is
    ``max(v - tau, 0)`` with the ``tau`` that makes it sum to one (Held,
    Wolfe and Crowder 1974; Duchi et al. 2008), found by sorting each row,
    vectorised over rows. It uses no data, so it costs no privacy.

    Parameters
    ----------
    values : array-like of shape (n_coordinates,) or (n_rows, n_coordinates)

    Returns
    -------
    projected : float ndarray of the same shape
        Non-negative rows that sum to one.

    Examples
    --------
    >>> from dpsklearn.noise import project_to_simplex
    >>> project_to_simplex([[0.5, 0.7, -0.4], [2.0, 0.0, 0.0]]).tolist()
    [[0.4, 0.6, 0.0], [1.0, 0.0, 0.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    rows = np.atleast_2d(values)
    if rows.ndim != 2 or rows.shape[-1] == 0:
        raise ValueError("project_to_simplex needs rows of at least one coordinate.")
    n = rows.shape[1]
    descending = -np.sort(-rows, axis=1)
    cumulative = np.cumsum(descending, axis=1) - 1.0
    index = np.arange(1, n + 1, dtype=np.float64)
    # rho: the largest j with descending_j - (cumsum_j - 1) / j > 0 (j >= 1 always).
    support = descending - cumulative / index > 0
    rho = n - 1 - np.argmax(support[:, ::-1], axis=1)
    tau = cumulative[np.arange(rows.shape[0]), rho] / (rho + 1.0)
    projected = np.maximum(rows - tau[:, None], 0.0)
    return projected.reshape(values.shape)


def repeated_candidates(
    n_candidates: int, shape: float, parameter: float, *, rng: np.random.Generator
) -> NDArray[np.int64]:
    """The candidates of the runs of a random repetition, one per run.

    The number of runs ``K`` follows Papernot and Steinke's (2022)
    distributions: ``shape = inf`` Poisson with mean ``parameter`` (``K``
    may be 0); otherwise the truncated negative binomial of their
    Definition 1 with success probability ``gamma = parameter``,
    ``P(K = k) ~ C(k + shape - 1, k) (1 - gamma)^k`` for ``k >= 1``
    (``shape = 1`` geometric, ``shape = 0`` the logarithmic distribution
    ``P(K = k) ~ (1 - gamma)^k / k``). Each run's candidate is uniform over
    ``n_candidates``. Both are secret: the analysis averages over them.

    Parameters
    ----------
    n_candidates : int
    shape : float
        ``>= 0`` or ``inf``.
    parameter : float
        The Poisson mean, or ``gamma`` in ``(0, 1]``.
    rng : numpy.random.Generator

    Returns
    -------
    candidates : int64 ndarray of shape (K,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import repeated_candidates
    >>> runs = repeated_candidates(6, 1.0, 0.1, rng=np.random.default_rng(0))
    >>> bool(runs.size >= 1 and runs.max() < 6)
    True
    """
    if shape == np.inf:
        n_runs = int(rng.poisson(parameter))
    elif parameter >= 1.0:
        n_runs = 1  # gamma = 1: the distribution is a point mass at 1
    elif shape == 0:
        n_runs = int(rng.logseries(1.0 - parameter))
    else:
        n_runs = 0
        while n_runs < 1:  # the negative binomial conditioned on K >= 1
            n_runs = int(rng.negative_binomial(shape, parameter))
    return rng.integers(n_candidates, size=n_runs).astype(np.int64)
