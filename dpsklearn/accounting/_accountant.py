"""The in-memory privacy accountant."""

from __future__ import annotations

import contextlib
import threading

from .._param_validation import StrOptions
from .._validation import DELTA, FINITE_POSITIVE, validate_params
from ._base import BaseAccountant
from ._composer import COMPOSITIONS, Composer, check_composition

__all__ = ["PrivacyAccountant"]


class PrivacyAccountant(BaseAccountant):
    """A privacy budget with atomic, thread-safe check-and-spend and tight composition.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total epsilon budget.
    delta : float, default=0.0
        Total delta budget. With ``delta = 0`` only basic composition can
        certify anything (every tight figure is then min(basic, ...) = basic).
    composition : {"basic", "zcdp", "gdp"}, default="basic"
        How spends compose. An accountant you construct and pass to
        estimators is *shared* between fits, which choose their releases
        adaptively, so it accepts only the privacy filters ``"basic"``,
        ``"zcdp"`` and ``"gdp"`` (``docs/accountant.rst``, "Which events a
        shared budget accepts"). The accountant a model makes for itself
        (``accountant=None``) may also use ``"advanced"``, ``"rdp"`` and
        ``"pld"``.

    Attributes
    ----------
    spent : tuple of float
        The composed ``(epsilon, delta)`` spent: the basic sums, or, when the
        composition certifies a smaller epsilon, ``(epsilon at the budget's
        delta, budget delta)``.
    remaining : tuple of float
        ``budget - spent``.
    events : list of PrivacyEvent

    Notes
    -----
    Every spend is checked, at spend time and under a lock, against the
    composed total *including* the new events: ``min(basic, composition)``
    at the budget's delta must not exceed the epsilon budget. A refused
    spend raises :class:`~dpsklearn.BudgetExhaustedError` and records
    nothing.

    Sharing. ``clone`` and ``copy.deepcopy`` return the same object, so the
    clones that ``GridSearchCV(n_jobs=1)`` makes draw from one budget. A
    shared accountant refuses to be pickled (a pickled copy would fork the
    budget); across processes use a :class:`~dpsklearn.PrivacyLedger`. The
    accountant a model creates for itself pickles with the model; each copy
    then carries its own remaining budget.

    The filter rule. ``"basic"`` accepts every release with a stated
    ``(epsilon, delta)``. ``"zcdp"`` accepts releases with a ``rho`` (pure,
    exponential-mechanism, Gaussian) and keeps their total within the
    largest ``rho`` that converts to the budget (Feldman and Zrnic 2021,
    converted at the best Renyi order: Canonne, Kamath and Steinke 2020,
    Proposition 12); it reports ``min(basic, zcdp)`` only while every event
    is pure. ``"gdp"`` accepts releases with a Gaussian-DP ``mu`` (Gaussian
    noise, and pure releases) and keeps ``sum mu_i^2`` within the largest
    ``mu^2`` that converts to the budget (Smith and Thakurta 2022): for
    Gaussian releases a ``rho`` of 0.0359 at ``(1, 1e-5)`` against 0.0306.
    Both refuse approximate ``(epsilon, delta)`` releases (a sparse vector
    instance reserved as a whole) with a ValueError that says to use
    ``"basic"``: letting them in, beside the filter or by switching to basic
    composition, lets a caller who chooses the next release from the last
    output exceed delta.

    Examples
    --------
    >>> from dpsklearn.accounting import BoundedRangeEvent, PrivacyAccountant
    >>> acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    >>> acc.spend(0.4)
    >>> acc.remaining
    (0.6, 1e-05)
    >>> tight = PrivacyAccountant(epsilon=1.0, delta=1e-6, composition="zcdp")
    >>> tight.spend_events([BoundedRangeEvent(0.05, count=77)])
    >>> tight.can_spend_events([BoundedRangeEvent(0.05)])
    False
    """

    @validate_params(
        {
            "epsilon": [FINITE_POSITIVE],
            "delta": [DELTA],
            "composition": [StrOptions(set(COMPOSITIONS))],
        },
        prefer_skip_nested_validation=True,
    )
    def __init__(
        self, epsilon: float = 1.0, delta: float = 0.0, composition: str = "basic"
    ) -> None:
        self._init_state(epsilon, delta, composition, owned=False)

    def _init_state(self, epsilon, delta, composition, *, owned):
        self._owned_by_model = bool(owned)
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.composition = check_composition(composition, shared=self.shared)
        self._events = []
        self._composer = self._new_composer()
        self._lock = threading.RLock()

    @classmethod
    def _for_model(cls, epsilon, delta, composition="basic"):
        """The private accountant a model creates when ``accountant=None``."""
        accountant = cls.__new__(cls)
        accountant._init_state(float(epsilon), float(delta), composition, owned=True)
        return accountant

    @property
    def shared(self) -> bool:
        """False for the accountant a model made for itself, True otherwise."""
        return not self._owned_by_model

    # -- storage -------------------------------------------------------------
    @contextlib.contextmanager
    def _writing(self):
        with self._lock:
            yield None

    _reading = _writing

    def _record(self, handle, events):
        self._events.extend(events)

    def _recorded(self):
        return self._events

    def __repr__(self):
        epsilon, delta = self.spent
        role = "shared" if self.shared else "model-owned"
        return (
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, {role}, "
            f"spent=({epsilon:.4g}, {delta:.3g}))"
        )

    # -- sharing semantics ---------------------------------------------------
    def __sklearn_clone__(self):
        # One budget through clone(): GridSearchCV's clones draw from it.
        return self

    def __deepcopy__(self, memo):
        if self._owned_by_model:
            new = object.__new__(type(self))
            new.__setstate__(self.__getstate__())
            return new
        return self

    def __getstate__(self):
        if not self._owned_by_model:
            raise TypeError(
                "A shared PrivacyAccountant cannot be pickled: a copy in another "
                "process would fork the budget. To share one budget across "
                "processes (GridSearchCV(n_jobs>1), joblib, restarts), use a "
                "PrivacyLedger (a SQLite file) as the accountant."
            )
        with self._lock:
            state = self.__dict__.copy()
            state["_events"] = list(self._events)
            if "_serving_records" in state:  # a copy serves from its own records
                state["_serving_records"] = state["_serving_records"].copy()
        # The composer (with dp_accounting objects) is rebuilt from the events.
        del state["_lock"]
        del state["_composer"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._composer = Composer(self.composition, shared=self.shared)
        self._composer.add(self._events)
