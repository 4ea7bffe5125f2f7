"""What every mechanism is: a calibration, its privacy events, an engine.

A :class:`Mechanism` is built once, at ``fit``, from the total ``(epsilon,
delta)`` and public sizes (``max_queries``, ``max_unstable``, the number of
teachers): its constructor-classmethod ``calibrate`` computes every noise
scale and threshold the guarantee depends on, and the object is frozen from
then on. It states what the whole release costs as typed events
(:meth:`Mechanism.privacy_events`), which the estimator's accountant
reserves before any private computation, and it makes the :class:`Engine`
that answers batches while the model serves. Estimators compose mechanisms;
they never compute a calibration or build an event themselves.

An engine holds the serving-time state of one mechanism (noise streams,
counters, a noisy threshold) and answers a batch of statistics (vote
counts, soft labels, means) with a :class:`Release`. It may halt (the
sparse vector cutoff, Confident-GNMax's answer limit); it never answers
after that. The one serving loop (:func:`dpsklearn.serving.serve`) does
everything else: the lock, the budget in query units, the release cache,
the counters, the verbose line, padding or raising.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..accounting import PrivacyEvent
    from ..noise import NoiseSource

__all__ = ["Engine", "Mechanism", "Release"]


@dataclass
class Release:
    """What an engine released for a batch: the first ``n_done`` rows' values.

    Attributes
    ----------
    values : dict of str to ndarray
        One array per released field, first axis over the processed rows.
        A field ``"abstained"`` (bool) marks rows answered by abstaining.
    n_done : int
        Rows processed, from the start of the batch (fewer than asked when
        the engine halted part-way).
    """

    values: dict = field(default_factory=dict)
    n_done: int = 0


class Engine(abc.ABC):
    """The serving state of one mechanism: answers batches, may halt.

    Subclasses implement :meth:`answer`. Engines with state that must
    survive copies and restarts (a noisy threshold, counters) implement
    :meth:`get_state` and :meth:`set_state`, which a ledger stores.
    """

    @property
    def n_failed_tests(self) -> int:
        """Failed stability tests so far (0 for mechanisms without a test)."""
        return 0

    @property
    def halted(self) -> bool:
        """Whether the engine will answer nothing more."""
        return False

    def halt_reason(self) -> str:
        """Why it halted, in public words (for ``BudgetExhaustedError``)."""
        return "the model halted"

    @abc.abstractmethod
    def answer(self, method: str, statistic: Any) -> Release:
        """Release answers for a batch of statistics, in order.

        ``statistic`` is what the estimator computes for the batch (vote
        counts, soft labels, predictions, ...), as the engine expects it.
        """

    def get_state(self) -> dict | None:
        """The state to persist, or None for an engine without any."""
        return None

    def set_state(self, state: dict) -> None:  # noqa: B027 - stateless: nothing kept
        """Continue from a persisted state."""


class Mechanism(abc.ABC):
    """A calibrated privacy mechanism: public figures, events, an engine.

    Attributes (every subclass)
    ---------------------------
    n_streams : int
        Noise generators its engine draws from.
    composition : str
        The composition a model's own accountant should use for its events
        (``"basic"`` unless the mechanism is calibrated in zCDP or RDP).
    """

    n_streams = 1
    composition = "basic"

    @abc.abstractmethod
    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        """The typed events the whole release spends, reserved at ``fit``."""

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """Alternative descriptions of the same spend, most precise first.

        The estimator's budget step records the first one its accountant
        (composing under ``composition``) can pay for: a Gaussian mechanism
        can be recorded as Gaussian events by an accountant that composes
        them, and as one ``(epsilon, delta)`` release by any other.
        """
        return [self.privacy_events(label)]

    def engine(self, noise: NoiseSource) -> Engine:
        """The engine that serves queries, drawing from ``noise`` (a NoiseSource)."""
        raise TypeError(f"{type(self).__name__} releases once; it has no engine.")

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        """``(epsilon, delta)`` that the releases so far cost, at this calibration.

        ``units`` is the number of query units served, ``engine`` the
        running engine (for its counters).
        """
        raise NotImplementedError

    def fitted_attributes(self) -> dict[str, Any]:
        """The public figures an estimator exposes as fitted attributes."""
        return {}

    def argmax_noise(self) -> tuple[str, float] | None:
        """How it blurs a released label: ``(kind, scale)``, or None.

        ``("exponential", eps_q)`` for the exponential mechanism on the
        votes, ``("gaussian", sigma)`` for a Gaussian noisy argmax; None
        when the released label is the teachers' majority itself (the
        stability tests). Estimators read it to say, from public numbers,
        how often a unanimous class is released.
        """
        return None

    def __repr__(self):
        figures = ", ".join(
            f"{name.rstrip('_')}={value!r}"
            for name, value in self.fitted_attributes().items()
            if not isinstance(value, np.ndarray)
        )
        return f"{type(self).__name__}({figures})"
