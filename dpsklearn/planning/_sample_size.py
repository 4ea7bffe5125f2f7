"""Sample sizes and schedules: how many teachers, rows or what regularisation.

Each function evaluates a theorem of a source paper with explicit constants
(``docs/design.rst``, "The planner"):

* :func:`private_prediction_r` -- Dwork and Feldman (2018), Theorem 1.
* :func:`erm_sample_size` -- private PAC learning of a finite class by the
  exponential mechanism (Nikolov's CSC2412 notes; realizable case).
* :func:`statistical_query_sample_size` -- Chan's CSCI4230 notes,
  Theorem 1, with our parallel-composition noise or the notes' own.
* :func:`kernel_ridge_schedule` -- Nie and Wang (2017), Theorem 3, redone
  with ``R = M / sqrt(alpha)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._param_validation import StrOptions
from .._validation import COUNT, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ..mechanisms import Exponential

__all__ = [
    "KernelRidgeSchedule",
    "erm_sample_size",
    "kernel_ridge_schedule",
    "private_prediction_r",
    "statistical_query_sample_size",
]


@validate_params(
    {
        "target_error": [OPEN_UNIT],
        "epsilon": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def private_prediction_r(target_error: float, epsilon: float) -> int:
    """Dwork and Feldman's Theorem 1: ``r = ceil(6 ln(4/alpha) / epsilon)`` teachers.

    Theorem 1 (Dwork and Feldman 2018, "Privacy-preserving prediction"):
    training ``r`` learners on disjoint parts (each to error ``alpha/4`` with
    confidence ``beta/r``) and answering by the exponential mechanism on the
    votes gives an ``epsilon``-DP prediction algorithm with error at most
    ``alpha``, using ``n = r m(alpha/4, beta/r)`` examples. (Rana's 2019
    survey of the paper prints ``m(delta/4, ...)``; the proof uses
    ``alpha/4``.)

    Parameters
    ----------
    target_error : float
        ``alpha`` in (0, 1).
    epsilon : float
        Per-prediction epsilon (> 0).

    Returns
    -------
    r : int

    Examples
    --------
    >>> from dpsklearn.planning import private_prediction_r
    >>> private_prediction_r(0.1, 1.0)  # 6 ln 40 = 22.13
    23
    """
    # One formula: the exponential mechanism's options own it (they plan k).
    return Exponential(target_error=float(target_error)).teachers_for(float(epsilon))


@validate_params(
    {
        "n_hypotheses": [COUNT],
        "epsilon": [FINITE_POSITIVE],
        "alpha": [OPEN_UNIT],
        "beta": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def erm_sample_size(
    n_hypotheses: int, epsilon: float, alpha: float, beta: float = 0.05
) -> int:
    """Rows to learn a finite class privately (realizable; Nikolov's CSC2412 notes).

    A class ``C`` is learned to error ``alpha`` with probability ``1 - beta``
    by the ``epsilon``-DP exponential mechanism with ``u = -L_X`` when

        n >= max(4 ln(2|C|/beta) / (epsilon alpha), 2 ln(2|C|/beta) / alpha^2).

    Realizable case (some ``c`` in ``C`` has zero error, so ``OPT = 0``): the
    mechanism's accuracy bound gives empirical error ``<= alpha/2`` w.p.
    ``1 - beta/2`` (first term), and uniform convergence moves it by at most
    ``alpha/2`` w.p. ``1 - beta/2`` (second term). An agnostic guarantee
    needs more samples and is not what this evaluates.

    Parameters
    ----------
    n_hypotheses : int
        ``|C|``.
    epsilon : float
    alpha : float
        Target error in (0, 1).
    beta : float, default=0.05

    Returns
    -------
    n : int

    Examples
    --------
    >>> from dpsklearn.planning import erm_sample_size
    >>> erm_sample_size(51_200, 1.0, 0.1, 0.05)  # uniform convergence binds
    2907
    """
    c, epsilon, alpha, beta = int(n_hypotheses), float(epsilon), alpha, beta
    log_term = math.log(2.0 * c / beta)
    return int(
        math.ceil(max(4.0 * log_term / (epsilon * alpha), 2.0 * log_term / alpha**2))
    )


@validate_params(
    {
        "n_queries": [COUNT],
        "tolerance": [OPEN_UNIT],
        "epsilon": [FINITE_POSITIVE],
        "beta": [OPEN_UNIT],
        "noise": [StrOptions({"ours", "notes"})],
    },
    prefer_skip_nested_validation=True,
)
def statistical_query_sample_size(
    n_queries: int,
    tolerance: float,
    epsilon: float,
    beta: float = 0.05,
    noise: str = "ours",
) -> int:
    """Rows needed for M statistical queries (Chan's notes, Theorem 1, with constants).

    Theorem 1 answers ``M`` statistical queries of tolerance ``tau`` on ``M``
    disjoint chunks of size ``s`` and needs every answer within ``tau`` of
    the truth with probability ``1 - beta``. Per chunk (union bound over
    ``2M`` events of probability ``beta/(2M)``):

    * sampling (Hoeffding): ``2 exp(-s tau^2 / 2) <= beta/(2M)``, i.e.
      ``s >= 2 ln(4M/beta) / tau^2``;
    * noise ``Lap(b)``: ``exp(-tau/(2b)) <= beta/(2M)``, with ``b = 1/(s
      epsilon)`` for our parallel-composition oracle or the notes'
      ``b = M/(s epsilon)``: ``s >= 2 ln(2M/beta) / (epsilon tau)``, times
      ``M`` for the notes'.

    The total is ``n = M s``: ``O((M/(epsilon tau) + M/tau^2) ln(M/beta))``
    for ours, against the notes' ``O((M^2/(epsilon tau) + M/tau^2)
    ln(M/beta))`` with its noise (the theorem's ``M/(alpha tau)`` needs the
    parallel-composition noise). This evaluates continuous Laplace tails;
    the oracle's grid noise is wider by a factor ``1 + g |S_i|`` (about
    ``1 + 1/1024``).

    Parameters
    ----------
    n_queries : int
        ``M``.
    tolerance : float
        ``tau`` in (0, 1).
    epsilon : float
        Total epsilon (the notes call it ``alpha``).
    beta : float, default=0.05
    noise : {"ours", "notes"}, default="ours"
        ``"notes"``: the noise of Chan's notes, ``M`` times ours.

    Returns
    -------
    n : int
        ``M`` times the chunk size.

    Examples
    --------
    >>> from dpsklearn.planning import statistical_query_sample_size
    >>> statistical_query_sample_size(10, 0.1, 0.1)  # sampling binds
    13370
    >>> statistical_query_sample_size(10, 0.1, 0.1, noise="notes")  # noise binds
    119830
    """
    m, tau, epsilon = int(n_queries), float(tolerance), float(epsilon)
    sampling = 2.0 * math.log(4.0 * m / beta) / tau**2
    privacy = 2.0 * math.log(2.0 * m / beta) / (epsilon * tau)
    if noise == "notes":
        privacy *= m
    return m * int(math.ceil(max(sampling, privacy)))


@dataclass(frozen=True)
class KernelRidgeSchedule:
    """A choice of ``alpha`` and ``epsilon`` for ``n`` samples.

    Returned by :func:`kernel_ridge_schedule`.

    Attributes
    ----------
    alpha, epsilon : float
        ``alpha_scale * n^-alpha_exponent`` and
        ``epsilon_scale * n^-epsilon_exponent``.
    alpha_exponent, epsilon_exponent : float
    error_exponent : float
        The excess risk bound decays as ``n^-error_exponent``.
    paper_alpha_exponent, paper_epsilon_exponent : float
        The exponents printed in Nie and Wang's (2017) Theorem 3, for
        comparison.
    """

    alpha: float
    epsilon: float
    alpha_exponent: float
    epsilon_exponent: float
    error_exponent: float
    paper_alpha_exponent: float
    paper_epsilon_exponent: float


@validate_params(
    {
        "n": [COUNT],
        "r": [FINITE_POSITIVE],
        "alpha_scale": [FINITE_POSITIVE],
        "epsilon_scale": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def kernel_ridge_schedule(
    n: int, r: float = 0.5, *, alpha_scale: float = 1.0, epsilon_scale: float = 1.0
) -> KernelRidgeSchedule:
    """Regularisation and privacy schedule for :class:`~dpsklearn.PrivateKernelRidge`.

    Nie and Wang's (2017) Theorem 3 balances the terms of its error
    decomposition; this redoes the balance with our ``R = M / sqrt(alpha)``
    (the paper takes ``R = M``; ``docs/corrections.rst``, "Kernel ridge: the
    bound R on the function's norm").

    Derivation. With ``f_{z,A} = pi(f_z) + b``, ``b`` Laplace with scale
    ``Delta / epsilon``, the paper's decomposition (section 4, eq. (3)) is
    ``E[E(f_{z,A}) - E(f_rho)] <= R1 + R2 + S + D(alpha)``, where

    * ``R1 <= 2 epsilon G`` (Theorem 1, privacy as stability) with ``G``
      bounded by a constant times ``M^2 + E b^2``: order ``epsilon M^2 +
      Delta^2 / epsilon``;
    * ``R2 = E b^2 = 2 Delta^2 / epsilon^2`` (Proposition 3);
    * ``S`` of order ``M^2 / sqrt(n)`` (Hoeffding, Proposition 4);
    * ``D(alpha)`` of order ``alpha^s``, ``s = min(2 r, 1)``, when the
      regression function lies in the range of ``L_K^r`` (Proposition 4).

    Lemma 2 with ``R = M / sqrt(alpha)`` and ``alpha <= 1`` gives ``Delta = 2
    kappa^2 (kappa M / sqrt(alpha) + M) / (alpha n) <= 2 kappa^2 (kappa + 1)
    M / (alpha^(3/2) n)``, so ``R2 <= 8 kappa^4 (kappa + 1)^2 M^2 / (alpha^3
    n^2 epsilon^2)``: the noise term scales as ``1 / (alpha^3 n^2
    epsilon^2)``, not ``1 / (alpha^2 n^2 epsilon^2)`` as with ``R = M``. The
    ``Delta^2 / epsilon`` part of ``R1`` is smaller for ``epsilon <= 1``.
    Dropping constants, the bound is

        epsilon + alpha^-3 n^-2 epsilon^-2 + n^-1/2 + alpha^s.

    Equating the privacy term with the approximation term, ``epsilon =
    alpha^s``, and both with the noise term, ``alpha^s = alpha^(-3 - 2 s)
    n^-2``, gives ``alpha^(3 + 3 s) = n^-2``:

        alpha   = n^(-2 / (3 + 3 s)),
        epsilon = n^(-2 s / (3 + 3 s)),
        error   = O(n^(-2 s / (3 + 3 s))),

    and the sample term ``n^-1/2`` never dominates (``2 s / (3 + 3 s) <=
    1/3``). For ``r >= 1/2``: ``alpha = epsilon = n^-1/3``; for ``r < 1/2``:
    ``alpha = n^(-2 / (3 + 6 r))``, ``epsilon = n^(-4 r / (3 + 6 r))``.

    Comparison with the paper's printed exponents, ``alpha = n^(-2 / min(4, 3
    + 2 r))`` and ``epsilon = n^(-min(1/3, 4 r / (3 + 6 r)))``: the epsilon
    exponents agree; our alpha decays more slowly (``n^-1/3`` against
    ``n^-1/2`` for ``r >= 1/2``, ``2 / (3 + 6 r)`` against ``2 / (3 + 2 r)``
    below), because with ``R = M / sqrt(alpha)`` the noise grows as
    ``alpha^-3`` rather than ``alpha^-2`` when ``alpha`` shrinks.

    Parameters
    ----------
    n : int
        Number of training samples (>= 1).
    r : float, default=0.5
        Source-condition exponent (> 0) of the paper's Theorem 3; the
        approximation error saturates at ``r = 1/2``.
    alpha_scale, epsilon_scale : float, default=1.0
        The constants in front of the rates (> 0); the theorem fixes only the
        exponents.

    Returns
    -------
    schedule : KernelRidgeSchedule

    Examples
    --------
    >>> from dpsklearn.planning import kernel_ridge_schedule
    >>> s = kernel_ridge_schedule(10**6, r=0.5)
    >>> round(s.alpha, 6), round(s.epsilon, 6), s.paper_alpha_exponent
    (0.01, 0.01, 0.5)
    """
    s = min(2.0 * r, 1.0)
    alpha_exponent = 2.0 / (3.0 + 3.0 * s)
    epsilon_exponent = 2.0 * s / (3.0 + 3.0 * s)
    return KernelRidgeSchedule(
        alpha=float(alpha_scale) * float(n) ** -alpha_exponent,
        epsilon=float(epsilon_scale) * float(n) ** -epsilon_exponent,
        alpha_exponent=alpha_exponent,
        epsilon_exponent=epsilon_exponent,
        error_exponent=epsilon_exponent,
        paper_alpha_exponent=2.0 / min(4.0, 3.0 + 2.0 * r),
        paper_epsilon_exponent=min(1.0 / 3.0, 4.0 * r / (3.0 + 6.0 * r)),
    )
