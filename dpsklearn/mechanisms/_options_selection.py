"""Parameter object of the private selection over configurations,
``RepeatAndSelect`` (see ``_options.py``).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

from .._param_validation import Interval, StrOptions
from ._options import MechanismOptions
from ._repeat_select import RUN_DISTRIBUTIONS, RepeatedSelection

__all__ = [
    "RepeatAndSelect",
]


class RepeatAndSelect(MechanismOptions):
    """Private selection by random repetition (Papernot and Steinke 2022).

    A secret, random number of runs; each run fits one configuration drawn
    uniformly from the grid at the per-candidate budget and scores it on the
    validation rows with a discrete-Gaussian-noised count of correct rows;
    only the best run is released, with its noisy score.
    :class:`RepeatedSelection`, ``docs/design.rst``, "Private model
    selection".

    Parameters
    ----------
    mean_runs : float, default=None
        Mean number of runs (>= 1); ``None``: twice the number of
        configurations.
    runs : {"poisson", "geometric", "logarithmic"} or float, default="poisson"
        Distribution of the secret number of runs; a float ``>= 0`` is the
        shape of the truncated negative binomial (1: geometric, 0:
        logarithmic). With ``"poisson"`` no run is drawn with probability
        ``exp(-mean_runs)``; the search then raises.
    score_sigma : float, default=None
        Scale of the discrete Gaussian noise on each score count. ``None``:
        the larger of ``n_validation / 200`` (half a point of accuracy) and
        the scale that costs a tenth of a run's budget.
    tolerance : float, default=None
        Regressors: a validation row counts as correct when ``|prediction -
        y| <= tolerance`` (required for a regressor, unused for a
        classifier).

    Examples
    --------
    >>> from dpsklearn.mechanisms import RepeatAndSelect
    >>> RepeatAndSelect().resolved_mean_runs(n_configurations=4)
    8.0
    """

    shorthand = "repeat_and_select"

    _parameter_constraints: dict = {
        "mean_runs": [Interval(Real, 1, None, closed="left"), None],
        "runs": [
            StrOptions(set(RUN_DISTRIBUTIONS)),
            Interval(Real, 0, None, closed="left"),
        ],
        "score_sigma": [Interval(Real, 0, None, closed="neither"), None],
        "tolerance": [Interval(Real, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        mean_runs: float | None = None,
        runs: str | float = "poisson",
        score_sigma: float | None = None,
        tolerance: float | None = None,
    ) -> None:
        self.mean_runs = mean_runs
        self.runs = runs
        self.score_sigma = score_sigma
        self.tolerance = tolerance

    def resolved_mean_runs(self, n_configurations: int) -> float:
        """``mean_runs``, or twice the number of configurations.

        Parameters
        ----------
        n_configurations : int

        Returns
        -------
        mean_runs : float
        """
        if self.mean_runs is None:
            return 2.0 * n_configurations
        return float(self.mean_runs)

    def calibrate(
        self,
        epsilon: float,
        delta: float,
        *,
        events_at: Any,
        n_configurations: int,
        n_validation: int,
        **public: Any,
    ) -> RepeatedSelection:
        """The calibrated selection: the largest per-candidate epsilon that fits.

        Parameters
        ----------
        epsilon : float
            The whole release's epsilon.
        delta : float
            The whole release's delta.
        events_at : callable
            ``events_at(eps_c)``: one candidate's events at a per-candidate
            epsilon.
        n_configurations : int
            The candidates in the search.
        n_validation : int
            The private validation rows each run scores on.
        **public
            The estimator's other public numbers; those this mechanism does
            not use are ignored.

        Returns
        -------
        mechanism : RepeatedSelection
            Calibrated and frozen: its noise scales, thresholds and events.
        """
        mean_runs = self.resolved_mean_runs(n_configurations)
        sigma = self.score_sigma or RepeatedSelection.default_score_sigma(
            epsilon,
            delta,
            mean_runs=mean_runs,
            runs=self.runs,
            n_validation=n_validation,
        )
        return RepeatedSelection.calibrate(
            epsilon,
            delta,
            events_at,
            mean_runs=mean_runs,
            runs=self.runs,
            score_sigma=sigma,
        )
