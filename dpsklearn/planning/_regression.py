"""What private regression answers will cost, predicted from public numbers.

Before anything is spent, :func:`plan_regression_answers` computes the noise
standard deviation of each answer of a teacher ensemble's regression release
(the clipped mean over the public ``target_range``, or over a privately
estimated range of a stated width) from ``(target_range, k, m, epsilon,
delta)`` and the mechanism's calibration, and, given a user-stated spread
(standard deviation) of the target, the share of R^2 the noise costs:
additive noise of variance ``s^2``, independent of the target, lowers the
R^2 of any prediction by ``s^2 / sd(y)^2`` in expectation (``docs/
regression.rst``, "Planning regression answers"). An estimator uses it to
warn at ``fit`` when the noise exceeds the stated spread, and to say that a
published :class:`~dpsklearn.KnowledgeTransferRegressor` pays once for a
whole model instead. :func:`knowledge_transfer_shard_rows` sizes the
teachers' shards of such a student from public numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._param_validation import StrOptions
from .._validation import COUNT, DELTA, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ..accounting import zcdp_rho
from ..mechanisms import AdaptiveRangeRelease, clipped_mean_release, rank_error

__all__ = [
    "ASSUMED_SPREAD_SHARE",
    "ASSUMED_TEACHER_R2",
    "RegressionAnswerPlan",
    "knowledge_transfer_shard_rows",
    "plan_regression_answers",
]

#: The constant of :func:`knowledge_transfer_shard_rows`, fitted on the
#: validation rows of diamonds (docs/regression.rst, "Knowledge-transfer
#: defaults"): 40 rows per teacher at n = 44,940 and epsilon 1.
SHARD_ROWS_SCALE = 0.5
#: The fewest rows per teacher the rule returns (as the estimators' "auto").
MIN_SHARD_ROWS = 10
#: The smallest spread of the target assumed when none is stated, as a share
#: of a quarter of the public range's width: the measured spreads of the
#: benchmark tables (docs/regression.rst, "When answers lose to a constant")
#: were 0.47 to 0.81 of it, so half of it is below each of them.
ASSUMED_SPREAD_SHARE = 0.5
#: The share of the target's variance the teachers are assumed to explain
#: (their R^2) when deciding whether noisy answers would lose to a constant.
ASSUMED_TEACHER_R2 = 0.5


@dataclass(frozen=True)
class RegressionAnswerPlan:
    """The predicted noise of private regression answers (public figures).

    Attributes
    ----------
    aggregate : str
        ``"mean"`` or ``"median"`` (the adaptive range's choice when asked).
    noise_std : float or None
        Standard deviation of one clipped-mean answer's noise, in target
        units, at the stated width (the whole ``target_range`` when no width
        is stated); ``None`` for the median, whose error is in ranks.
    noise_std_full_range : float
        The same for a mean clipped to the whole ``target_range``.
    rank_error : float or None
        The median's rank error in teachers (``None`` for the mean).
    target_std : float or None
        The user-stated spread of the target.
    r2_cost : float or None
        ``noise_std^2 / target_std^2``: how much R^2 the noise costs.
    noise_exceeds_spread : bool
        Whether ``noise_std > target_std``: the answers would score below a
        constant at the target's mean.
    teacher_r2 : float
        The share of the target's variance the teachers are assumed to
        explain.
    loses_to_constant : bool
        Whether ``r2_cost > teacher_r2``: the noise costs more R^2 than the
        teachers are assumed to earn, so the answers are expected to score
        below the best constant.
    """

    aggregate: str
    noise_std: float | None
    noise_std_full_range: float
    rank_error: float | None
    target_std: float | None
    r2_cost: float | None
    noise_exceeds_spread: bool
    teacher_r2: float = ASSUMED_TEACHER_R2
    loses_to_constant: bool = False

    def message(self) -> str:
        """What to know when the answers would lose to a constant, else ''."""
        if not (self.loses_to_constant or self.noise_exceeds_spread):
            return ""
        return (
            f"each private answer would carry noise of standard deviation "
            f"{self.noise_std:.3g} (in target units) against a target spread of "
            f"about {self.target_std:.3g}: the noise alone costs "
            f"{self.r2_cost:.2g} of R^2, more than the "
            f"{self.teacher_r2:.2g} the teachers are assumed to explain, so the "
            "answers would score worse than a constant. Publish a "
            "KnowledgeTransferRegressor instead (a student fitted on public rows "
            "this model labels once, then free to query), or, without public "
            "rows, a PrivateKernelRidge; or plan fewer answers (max_queries), "
            "raise epsilon, or give a narrower target_range."
        )


@validate_params(
    {
        "target_range": ["array-like"],
        "n_teachers": [COUNT],
        "max_queries": [COUNT],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
        "aggregate": [StrOptions({"mean", "adaptive"})],
        "range_share": [OPEN_UNIT],
        "width": [FINITE_POSITIVE, None],
        "target_std": [FINITE_POSITIVE, None],
        "teacher_r2": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def plan_regression_answers(
    *,
    target_range: tuple[float, float],
    n_teachers: int,
    max_queries: int,
    epsilon: float,
    delta: float,
    aggregate: str = "mean",
    range_share: float = 0.1,
    width: float | None = None,
    target_std: float | None = None,
    teacher_r2: float = ASSUMED_TEACHER_R2,
) -> RegressionAnswerPlan:
    """Predict the noise of ``max_queries`` private regression answers.

    ``aggregate="mean"``: the clipped mean over ``target_range`` as
    :func:`~dpsklearn.mechanisms.clipped_mean_release` calibrates it
    (sensitivity ``(hi - lo) / k``, grid Laplace or discrete Gaussian,
    whichever is less noisy). ``aggregate="adaptive"``:
    :class:`~dpsklearn.mechanisms.AdaptiveRangeRelease` with ``range_share``
    of the budget for the range; its noise is proportional to the released
    width, so ``width`` (the expected width of the teachers' band, a stated
    assumption) gives the figure, and without it the whole range (the worst
    case). Every figure is a function of public numbers.

    Parameters
    ----------
    target_range : (float, float)
    n_teachers : int
    max_queries : int
    epsilon : float
    delta : float
    aggregate : {"mean", "adaptive"}, default="mean"
    range_share : float, default=0.1
    width : float, optional
        Expected width of the teachers' band (adaptive only).
    target_std : float, optional
        The stated standard deviation of the target, for ``r2_cost``.
    teacher_r2 : float, default=0.5
        The share of the target's variance the teachers are assumed to
        explain: the answers lose to a constant (``loses_to_constant``) when
        the noise costs more R^2 than that.

    Returns
    -------
    plan : RegressionAnswerPlan

    Examples
    --------
    Diamonds' log price (standard deviation about 1) with 2,000 teachers and
    2,000 answers at epsilon 1: the noise alone costs about a fifth of the
    R^2 over the public range ``(5, 10)``, a twentieth over a band of width 2:

    >>> from dpsklearn.planning import plan_regression_answers
    >>> plan = plan_regression_answers(
    ...     target_range=(5, 10), n_teachers=2000, max_queries=2000,
    ...     epsilon=1.0, delta=1e-5, target_std=1.0)
    >>> round(plan.noise_std, 3), round(plan.r2_cost, 3)
    (0.417, 0.174)
    >>> narrow = plan_regression_answers(
    ...     target_range=(5, 10), n_teachers=2000, max_queries=2000,
    ...     epsilon=1.0, delta=1e-5, aggregate="adaptive", width=2.0,
    ...     target_std=1.0)
    >>> round(narrow.noise_std, 3), narrow.noise_exceeds_spread
    (0.184, False)
    """
    lo, hi = (float(v) for v in target_range)
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
        raise ValueError(
            f"target_range must be finite with lo < hi, got {target_range!r}."
        )
    full = clipped_mean_release(
        epsilon,
        delta,
        max_queries,
        target_range=(lo, hi),
        n_teachers=n_teachers,
    ).noise_std
    noise: float | None
    ranks: float | None
    chosen, noise, ranks = "mean", full, None
    if aggregate == "adaptive":
        mech = AdaptiveRangeRelease.calibrate(
            epsilon,
            delta,
            max_queries,
            target_range=(lo, hi),
            n_teachers=n_teachers,
            range_share=range_share,
        )
        chosen = mech.aggregate
        if chosen == "median":
            noise = None
            ranks = rank_error(mech.epsilon_per_query, mech.grid_size)
        else:
            noise = mech.noise_std(hi - lo if width is None else min(width, hi - lo))
    cost = None
    if target_std is not None and noise is not None:
        cost = (noise / float(target_std)) ** 2
    return RegressionAnswerPlan(
        aggregate=chosen,
        noise_std=noise,
        noise_std_full_range=full,
        rank_error=ranks,
        target_std=None if target_std is None else float(target_std),
        r2_cost=cost,
        noise_exceeds_spread=bool(cost is not None and cost > 1.0),
        teacher_r2=float(teacher_r2),
        loses_to_constant=bool(cost is not None and cost > teacher_r2),
    )


@validate_params(
    {
        "n_samples": [COUNT],
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
    },
    prefer_skip_nested_validation=True,
)
def knowledge_transfer_shard_rows(
    *, n_samples: int, epsilon: float, delta: float
) -> int:
    """Rows per teacher for a regression teacher that labels a student's rows.

    A student fitted on ``m`` labels, each the clipped mean of ``k = n / s``
    teachers plus Gaussian noise of a total zCDP budget ``rho``, carries
    noise of variance about ``(W / k)^2 d / (2 rho) = (s W / n)^2 d / (2
    rho)`` in its predictions (``W`` the public range's width, ``d`` the
    student's parameters; independent of ``m``), while the teachers' mean,
    the student's ceiling, loses accuracy as its shards shrink, about as
    ``1 / s^2``. The two balance at ``s`` proportional to ``sqrt(n)
    rho^(1/4)``, and the rule is

    .. math::

       s = \\max\\left(10,\\ \\mathrm{round}(0.5 \\sqrt{n}\\,\\rho^{1/4})\\right),

    with ``rho`` the zCDP budget that ``(epsilon, delta)`` certifies
    (:func:`~dpsklearn.accounting.zcdp_rho`; ``epsilon^2 / 2`` when
    ``delta = 0``). The constant 0.5 was fitted on the validation rows of
    diamonds, where the best shard size was 30, 40, 60 and 90 to 150 rows at
    ``epsilon`` 0.5, 1, 2 and 8 (``n = 44,940``; the rule gives 29, 40, 56,
    107) and 20 rows at ``epsilon = 1`` on a quarter of the rows (the rule:
    20); ``docs/regression.rst``, "Knowledge-transfer defaults". Public
    numbers only.

    Parameters
    ----------
    n_samples : int
        Private rows.
    epsilon : float
    delta : float

    Returns
    -------
    rows : int
        Rows per teacher; the teachers are ``max(1, n_samples // rows)``.

    Examples
    --------
    >>> from dpsklearn.planning import knowledge_transfer_shard_rows
    >>> knowledge_transfer_shard_rows(n_samples=44_940, epsilon=1.0, delta=1e-5)
    40
    >>> knowledge_transfer_shard_rows(n_samples=44_940, epsilon=8.0, delta=1e-5)
    107
    """
    rho = zcdp_rho(epsilon, delta) if delta > 0 else float(epsilon) ** 2 / 2.0
    rows = round(SHARD_ROWS_SCALE * math.sqrt(n_samples) * rho**0.25)
    return int(max(MIN_SHARD_ROWS, rows))
