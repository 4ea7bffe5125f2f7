"""AdaSSP in stages on one budget: a linear model, then a kernel on its residuals.

A ridge on random Fourier features spends its noise on ``p = 2 D + 1``
directions; on a target that is nearly linear in the columns most of them
carry no signal, and the regulariser the noise forces (about a quarter of
the Gram noise's spectral edge, ``sqrt(p)``) shrinks the linear trend away
with the rest. Fitting the linear trend first, on ``d + 1`` features, costs
little (its noise lives in ``d + 1`` dimensions), and the random features
then fit only what the linear model left (``docs/regression.rst``,
"Linear first, then the kernel").

Each stage is a :class:`~dpsklearn.mechanisms.SufficientStatisticsRelease`
calibrated to the *same* ``(epsilon, delta)`` but given only its share
``s_i`` of the certified ``rho`` (its three parts get ``s_i`` times the
usual shares), with ``sum_i s_i <= 1``. The stages run adaptively (the
second stage's labels are the residuals of the first stage's *released*
model, each clipped to ``[-B_y, B_y]``, so its sensitivities are those of a
single stage). Gaussian mechanisms compose adaptively by adding their
``mu^2`` (Dong, Roth and Su 2022, Corollary 3.3, which holds for adaptive
composition), or their ``rho`` in zCDP (Bun and Steinke 2016, Lemma 2.3):
the whole is ``sum_i s_i rho <= rho``, the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..accounting import ApproximateEvent, PrivacyEvent
from ._base import Engine, Mechanism
from ._sufficient_statistics import DEFAULT_SHARES, SufficientStatisticsRelease

__all__ = ["StagedStatisticsRelease"]


class StagedStatisticsRelease(Mechanism):
    """AdaSSP releases in stages that share one ``(epsilon, delta)``.

    Released once, at ``fit`` (no engine). Stage ``i`` is a
    :class:`SufficientStatisticsRelease` for ``n_features[i]`` features
    whose three Gaussian releases get ``stage_shares[i]`` of the certified
    ``rho``; the stages may be adaptive (module notes).

    Parameters
    ----------
    stages : sequence of SufficientStatisticsRelease
        Calibrated by :meth:`calibrate` (same ``epsilon``, ``delta``,
        ``rho`` and conversion; shares summing to at most 1 over all parts).

    Attributes
    ----------
    epsilon, delta : float
        The whole release's guarantee.
    stage_shares : tuple of float

    Examples
    --------
    >>> from dpsklearn.mechanisms import StagedStatisticsRelease
    >>> mech = StagedStatisticsRelease.calibrate(
    ...     1.0, 1e-5, n_features=(9, 201), feature_bound=1.0, label_bound=3.0,
    ...     stage_shares=(0.2, 0.8))
    >>> [stage.n_features for stage in mech.stages]
    [9, 201]
    >>> mech.stage_shares
    (0.2, 0.8)
    >>> mech.privacy_events()[0].epsilon
    1.0
    """

    n_streams = 1

    def __init__(
        self,
        stages: Sequence[SufficientStatisticsRelease],
        stage_shares: Sequence[float],
    ) -> None:
        self.stages = tuple(stages)
        self.stage_shares = tuple(float(s) for s in stage_shares)
        first = self.stages[0]
        if any(
            (s.epsilon, s.delta, s.rho, s.conversion)
            != (first.epsilon, first.delta, first.rho, first.conversion)
            for s in self.stages
        ):
            raise ValueError("every stage must be calibrated to the same budget.")
        if sum(sum(s.shares) for s in self.stages) > 1.0 + 1e-12:
            raise ValueError("the stages' shares of rho sum to more than 1.")
        self.epsilon = first.epsilon
        self.delta = first.delta

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        *,
        n_features: Sequence[int],
        feature_bound: float,
        label_bound: float | Sequence[float],
        stage_shares: Sequence[float],
        shares: Sequence[float] = DEFAULT_SHARES,
        n_targets: int = 1,
    ) -> StagedStatisticsRelease:
        """One stage per entry of ``n_features``, each with its share of ``rho``.

        ``stage_shares`` must be positive and sum to at most 1; ``shares``
        split each stage's part between its Gram matrix, moment and
        eigenvalue, as for a single stage; ``n_targets`` is every stage's
        number of label columns (its labels' rows bounded by
        ``label_bound`` in L2: one bound, or one per stage).
        """
        if isinstance(label_bound, Sequence):
            label_bounds = tuple(float(b) for b in label_bound)
        else:
            label_bounds = (float(label_bound),) * len(n_features)
        stage_shares = tuple(float(s) for s in stage_shares)
        if (
            len(stage_shares) != len(n_features)
            or min(stage_shares) <= 0
            or sum(stage_shares) > 1.0 + 1e-12
        ):
            raise ValueError(
                "stage_shares must be one positive number per stage, summing to "
                f"at most 1, got {stage_shares!r} for {len(n_features)} stages."
            )
        stages = [
            SufficientStatisticsRelease.calibrate(
                epsilon,
                delta,
                n_features=int(width),
                feature_bound=feature_bound,
                label_bound=bound,
                shares=tuple(share * s for s in shares),
                n_targets=n_targets,
            )
            for width, share, bound in zip(
                n_features, stage_shares, label_bounds, strict=True
            )
        ]
        return cls(stages, stage_shares)

    @property
    def composition(self) -> str:  # type: ignore[override]  # a class attribute
        return self.stages[0].composition

    @property
    def conversion(self) -> str:
        """What certified ``rho`` (``"gdp"``, ``"rdp"`` or ``"zcdp"``)."""
        return self.stages[0].conversion

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """Every stage's Gaussian events where they compose, else the whole."""
        whole = self.privacy_events(label)
        if composition in ("rdp", "zcdp"):
            gaussian = [e for s in self.stages for e in s._gaussian_events(label)]
            return [gaussian, whole]
        return [whole]

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        total = sum(
            e.rho for stage in self.stages for e in stage._gaussian_events(None)
        )
        return self.stages[0].epsilon_of_rho(total), self.delta

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "calibration_": self.conversion,
            "noise_std_": tuple(stage.noise_std for stage in self.stages),
        }

    @property
    def noise_std(self) -> tuple[tuple[float, ...], ...]:
        """Each stage's three noise deviations (own units)."""
        return tuple(stage.noise_std for stage in self.stages)

    @property
    def total_share(self) -> float:
        """The fraction of the certified ``rho`` all stages spend (at most 1)."""
        return math.fsum(sum(stage.shares) for stage in self.stages)
