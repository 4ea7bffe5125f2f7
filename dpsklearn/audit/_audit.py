"""Statistical privacy audits: lower confidence bounds on a mechanism's epsilon.

A differential privacy guarantee is a statement about two output
distributions: for neighbouring inputs (replace-one, ``docs/design.rst``,
"Neighbouring datasets and what epsilon covers") and every
output event ``E``,

    P[M(D) in E] <= exp(epsilon) P[M(D') in E] + delta.

Running the mechanism many times on a chosen pair of neighbours and counting
how often ``E`` happens on each side turns that inequality into a test. With
Clopper-Pearson bounds on both probabilities, ``p0_lower <= P[M(D) in E]`` and
``P[M(D') in E] <= p1_upper`` hold together with high probability, and then

    epsilon >= ln((p0_lower - delta) / p1_upper)

is a *lower confidence bound* on the true privacy loss (Jagielski, Ullman and
Oprea 2020; Nasr et al. 2021 audit DP-SGD the same way). Both directions are
tried (``E`` may be likelier on either side) and the confidence is split
between them by Bonferroni, so the reported bound holds with the stated
confidence whichever direction wins. An audit can never prove a mechanism
private; it can prove it *not* private at the claimed epsilon, which is how
the test suite catches known-bad variants.

* :func:`audit` runs a vectorised mechanism on both neighbours and returns an
  :class:`AuditResult`. The event is given by the caller, or chosen by the
  audit on a first part of the runs (the *selection* runs) and evaluated on
  fresh runs, so that picking the best-looking event does not invalidate the
  bound.
* :func:`epsilon_lower_bound` is the bound itself, for counts gathered
  elsewhere; :func:`clopper_pearson` the one-sided binomial bounds it uses.
* :func:`exact_epsilon` is the exact (epsilon, delta) curve point of two
  known discrete output distributions: where the outputs can be enumerated
  (vote histograms, small sparse vector runs) it replaces sampling.

Auditing your own mechanism
---------------------------
Write a function ``mechanism(neighbour, n_runs, rng)`` that returns the
outputs of ``n_runs`` independent runs on neighbour 0 or neighbour 1, as an
array whose first axis is the run. Choose the neighbours from the proof of
the mechanism (the pair where the privacy loss is largest), and an event
where the likelihood ratio is largest; or let the audit pick the event.

>>> import numpy as np
>>> from dpsklearn.audit import audit
>>> from dpsklearn.noise import discrete_laplace
>>> def noisy_count(neighbour, n_runs, rng):
...     # a count of 0 or 1 released with DLap(1 / epsilon), epsilon = 1
...     return neighbour + discrete_laplace(1.0, size=n_runs, rng=rng)
>>> result = audit(noisy_count, lambda out: out >= 1, n_runs=100_000,
...                rng=np.random.default_rng(0))
>>> bool(0.8 < result.epsilon_lower <= 1.0)
True
>>> auto = audit(noisy_count, n_runs=100_000, rng=np.random.default_rng(1))
>>> bool(auto.epsilon_lower <= 1.0)
True

A mechanism that claims epsilon = 1 but adds DLap(0.5) is caught:

>>> def too_little_noise(neighbour, n_runs, rng):
...     return neighbour + discrete_laplace(0.5, size=n_runs, rng=rng)
>>> bad = audit(too_little_noise, lambda out: out >= 1, n_runs=100_000,
...             rng=np.random.default_rng(2))
>>> bool(bad.epsilon_lower > 1.0)
True

Notes
-----
The bound is valid for the pair of neighbours and the event audited; the
mechanism's epsilon is a supremum over all pairs and events, so a bound far
below the claim says the audit lacked power (a weak pair or event, or too few
runs), not that the mechanism is better than claimed. Randomness comes from
the ``rng`` given to :func:`audit`; a mechanism that draws from its own
generator must still make runs independent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from .._param_validation import Interval
from .._validation import DELTA, OPEN_UNIT, validate_params
from ._bounds import _directional_bounds, _point_estimate, epsilon_lower_bound

__all__ = ["AuditResult", "audit"]


# --------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    """A named output event: ``fn(outputs) -> bool array`` over runs."""

    description: str
    fn: Callable


def _rows_key(outputs):
    """Map each run's output to one hashable-by-numpy key (1-D array)."""
    out = np.asarray(outputs)
    if out.ndim == 0:
        raise ValueError("mechanism outputs must have a first axis of runs.")
    if out.ndim == 1:
        if out.dtype.kind == "f":
            out = out + 0.0  # -0.0 -> 0.0
        return out
    flat = np.ascontiguousarray(out.reshape(out.shape[0], -1))
    if flat.dtype.kind == "f":
        flat = flat + 0.0
    if flat.dtype.kind == "O":
        raise TypeError("automatic events need numeric (non-object) outputs.")
    return flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()


def _describe_values(values, row_dtype=None, n_max=6):
    shown = []
    for v in values[:n_max]:
        if row_dtype is not None:  # a row stored as raw bytes: decode it
            row = np.frombuffer(bytes(v), dtype=row_dtype)
            shown.append("(" + ", ".join(repr(x.item()) for x in row) + ")")
        else:
            shown.append(repr(v.item() if hasattr(v, "item") else v))
    more = "" if len(values) <= n_max else f", ... ({len(values)} values)"
    return "{" + ", ".join(shown) + more + "}"


def _set_event(values, n_selection, row_dtype=None):
    values = np.array(values)

    def fn(outputs, _values=values):
        return np.isin(_rows_key(outputs), _values)

    desc = f"output in {_describe_values(values, row_dtype)}"
    if n_selection:
        desc += f" (chosen on {n_selection} selection runs per neighbour)"
    return _Event(desc, fn)


def _threshold_event(threshold, upper, n_selection):
    t = threshold.item() if hasattr(threshold, "item") else threshold

    if upper:

        def fn(outputs, _t=t):
            return np.asarray(outputs).reshape(-1) >= _t

        desc = f"output >= {t!r}"
    else:

        def fn(outputs, _t=t):
            return np.asarray(outputs).reshape(-1) <= _t

        desc = f"output <= {t!r}"
    if n_selection:
        desc += f" (chosen on {n_selection} selection runs per neighbour)"
    return _Event(desc, fn)


def _auto_candidates(out_0, out_1, max_set_values, max_thresholds):
    """Candidate events with their counts on the selection runs.

    Returns a list of families ``(count_0, count_1, n, factory)``: counts of
    each candidate on ``n`` selection runs per neighbour, and ``factory(i)``
    builds candidate ``i``. Families: for scalar numeric outputs, thresholds
    ``x <= t`` and ``x >= t`` (counted on all selection runs); for outputs
    with at most ``max_set_values`` distinct values, the super-level sets of
    the likelihood ratio in both directions, which contain the
    Neyman-Pearson optimal events. The ratio is estimated on the first half
    of the selection runs and the sets are counted on the second half: a set
    ranked and counted on the same runs would favour values that are
    frequent on one side by chance, and its selection score would overstate
    its power.
    """
    k0, k1 = _rows_key(out_0), _rows_key(out_1)
    n_sel = k0.size
    out_0 = np.asarray(out_0)
    row_dtype = out_0.dtype if out_0.ndim > 1 else None
    values, inverse = np.unique(np.concatenate([k0, k1]), return_inverse=True)
    inverse = inverse.reshape(-1)
    inv0, inv1 = inverse[:n_sel], inverse[n_sel:]
    c0 = np.bincount(inv0, minlength=values.size)
    c1 = np.bincount(inv1, minlength=values.size)
    families = []
    scalar_numeric = np.asarray(out_0).ndim == 1 and values.dtype.kind in "iufb"
    if scalar_numeric and values.size > 1:
        # thresholds at (a subsample of) the distinct values, sorted ascending
        idx = np.arange(values.size)
        if values.size > max_thresholds:
            idx = np.unique(np.linspace(0, values.size - 1, max_thresholds).astype(int))
        cum0, cum1 = np.cumsum(c0), np.cumsum(c1)
        le0, le1 = cum0[idx], cum1[idx]  # x <= values[idx]
        ge0 = n_sel - np.r_[0, cum0][idx]  # x >= values[idx]
        ge1 = n_sel - np.r_[0, cum1][idx]
        thr = values[idx]
        families.append(
            (le0, le1, n_sel, lambda i, thr=thr: _threshold_event(thr[i], False, n_sel))
        )
        families.append(
            (ge0, ge1, n_sel, lambda i, thr=thr: _threshold_event(thr[i], True, n_sel))
        )
    half = n_sel // 2
    if values.size <= max_set_values and half >= 1:
        rank0 = np.bincount(inv0[:half], minlength=values.size)
        rank1 = np.bincount(inv1[:half], minlength=values.size)
        count0 = np.bincount(inv0[half:], minlength=values.size)
        count1 = np.bincount(inv1[half:], minlength=values.size)
        # smoothed ratio: values unseen in the ranking half sit at ratio 1
        ratio = (rank0 + 0.5) / (rank1 + 0.5)
        for order in (
            np.argsort(-ratio, kind="stable"),
            np.argsort(ratio, kind="stable"),
        ):
            s0, s1 = np.cumsum(count0[order]), np.cumsum(count1[order])
            if s0.size > 1:  # the full set is the sure event
                s0, s1 = s0[:-1], s1[:-1]
            families.append(
                (
                    s0,
                    s1,
                    n_sel - half,
                    lambda i, order=order: _set_event(
                        values[order[: i + 1]], n_sel, row_dtype
                    ),
                )
            )
    if not families:
        raise ValueError(
            "cannot build automatic events for these outputs (too many distinct "
            "non-scalar values); pass `event`."
        )
    return families


def _as_event(event, default_name="event"):
    if isinstance(event, _Event):
        return event
    if callable(event):
        name = getattr(event, "__name__", default_name)
        if name == "<lambda>":
            name = "caller's event"
        doc = getattr(event, "__doc__", None)
        if doc and name != "caller's event":
            name = f"{name}: {doc.strip().splitlines()[0]}"
        return _Event(name, event)
    raise TypeError(f"an event must be callable, got {type(event).__name__}.")


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit`.

    Attributes
    ----------
    epsilon_lower : float
        Lower confidence bound on the privacy loss, ``>= 0``; holds with
        probability at least ``confidence``.
    epsilon_hat : float
        The point estimate ``ln((p0 - delta) / p1)`` in the winning direction
        (no confidence attached; for reading, not for claims).
    counts : tuple of int
        Evaluation runs in which the event happened, on neighbours 0 and 1.
    n_runs : int
        Evaluation runs per neighbour (selection runs excluded).
    n_selection_runs : int
        Runs per neighbour spent choosing the event (0 when it was given).
    confidence : float
    delta : float
    direction : int
        The neighbour on which the event is likelier.
    event : str
        Description of the event.
    """

    epsilon_lower: float
    epsilon_hat: float
    counts: tuple[int, int]
    n_runs: int
    n_selection_runs: int
    confidence: float
    delta: float
    direction: int
    event: str

    def __str__(self):
        return (
            f"epsilon >= {self.epsilon_lower:.4f} with confidence {self.confidence:g} "
            f"(point estimate {self.epsilon_hat:.4f}; event '{self.event}' in "
            f"{self.counts[0]} / {self.counts[1]} of {self.n_runs} runs per neighbour)"
        )


def _run(mechanism, neighbour, n, rng, batch_size):
    """Yield output batches of n runs on one neighbour."""
    done = 0
    while done < n:
        m = n - done if batch_size is None else min(batch_size, n - done)
        out = mechanism(neighbour, m, rng)
        if np.shape(out)[0] != m:
            raise ValueError(
                f"mechanism({neighbour}, {m}, rng) returned {np.shape(out)[0]} runs, "
                f"expected {m}."
            )
        yield out
        done += m


def _count(mechanism, neighbour, n, rng, batch_size, event):
    total = 0
    for out in _run(mechanism, neighbour, n, rng, batch_size):
        hits = np.asarray(event.fn(out), dtype=bool).reshape(-1)
        if hits.size != np.shape(out)[0]:
            raise ValueError(
                f"event returned {hits.size} values for {np.shape(out)[0]} runs."
            )
        total += int(hits.sum())
    return total


@validate_params(
    {
        "mechanism": [callable],
        "event": [callable, dict, list, tuple, None],
        "n_runs": [Interval(Integral, 2, None, closed="left")],
        "delta": [DELTA],
        "confidence": [OPEN_UNIT],
        "selection_fraction": [OPEN_UNIT],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_set_values": [Interval(Integral, 1, None, closed="left")],
        "max_thresholds": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def audit(
    mechanism: Callable[[int, int, np.random.Generator], Any],
    event: Callable[[Any], Any]
    | Sequence[Callable[[Any], Any]]
    | Mapping[str, Callable[[Any], Any]]
    | None = None,
    *,
    n_runs: int,
    delta: float = 0.0,
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = None,
    selection_fraction: float = 0.5,
    batch_size: int | None = None,
    max_set_values: int = 10_000,
    max_thresholds: int = 2_000,
) -> AuditResult:
    """Lower confidence bound on a mechanism's privacy loss on one pair of neighbours.

    Runs ``mechanism`` ``n_runs`` times on each of two neighbouring inputs,
    counts an output event on each side and returns
    ``max(ln((p0_lower - delta) / p1_upper), ln((p1_lower - delta) /
    p0_upper), 0)`` with Clopper-Pearson bounds (see
    :func:`epsilon_lower_bound`), valid with probability ``confidence``.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(neighbour, n_runs, rng) -> outputs``: the outputs of
        ``n_runs`` independent runs of the mechanism on neighbour
        ``neighbour`` (0 or 1), drawing randomness from ``rng`` (a
        :class:`numpy.random.Generator`). ``outputs`` is an array (or
        anything the event accepts) whose first axis is the run.
    event : callable, sequence or mapping of callables, or None, default=None
        The output event. A callable ``event(outputs) -> bool array`` of
        length ``n_runs`` is used as given, and all runs evaluate it. A
        sequence (or a name -> callable mapping) of such callables, or
        ``None``, makes the audit *choose* the event: the first
        ``selection_fraction`` of the runs pick the candidate with the
        largest bound, and only the remaining runs, drawn afresh, evaluate
        it, so the choice does not bias the bound. ``None`` builds the
        candidates from the outputs: thresholds ``output <= t`` and ``output
        >= t`` for scalar numeric outputs, and sets of output values ranked
        by their estimated likelihood ratio (outputs with at most
        ``max_set_values`` distinct values; rows of multi-dimensional
        outputs count as one value).
    n_runs : int
        Runs per neighbour, selection runs included.
    delta : float, default=0.0
        The delta of the claimed (epsilon, delta) guarantee.
    confidence : float, default=0.95
        Overall confidence; split by Bonferroni over the two directions and
        the two bounds of each.
    rng : numpy.random.Generator, int or None, default=None
        Source of the runs' randomness (passed to ``mechanism``).
    selection_fraction : float, default=0.5
        Fraction of the runs used to choose the event (when it is chosen).
    batch_size : int, optional
        Call ``mechanism`` on at most this many runs at a time (memory).
    max_set_values : int, default=10_000
        Automatic events: largest number of distinct outputs for which
        value-set events are built.
    max_thresholds : int, default=2_000
        Automatic events: largest number of thresholds tried per direction.

    Returns
    -------
    result : AuditResult

    See Also
    --------
    exact_epsilon : the exact loss where the outputs can be enumerated.

    Notes
    -----
    The neighbours are the caller's choice and the bound concerns them only:
    choose the worst case of the mechanism's proof (neighbours are
    replace-one). With a given event, the bound's error
    probability is at most ``1 - confidence``; with a chosen event the same
    holds conditionally on the choice, since the evaluation runs are
    independent of the selection runs.

    Examples
    --------
    Audit the exponential-mechanism soft majority on a vote histogram and
    the same histogram with one vote moved, at epsilon = 1:

    >>> import numpy as np
    >>> from dpsklearn.audit import audit
    >>> from dpsklearn.noise import exponential_mechanism
    >>> votes = np.array([[3, 7], [2, 8]])       # neighbour 0, neighbour 1
    >>> def soft_majority(neighbour, n_runs, rng):
    ...     utilities = np.broadcast_to(votes[neighbour], (n_runs, 2))
    ...     return exponential_mechanism(utilities, 1.0, rng=rng)
    >>> result = audit(soft_majority, lambda label: label == 0,
    ...                n_runs=200_000, rng=np.random.default_rng(0))
    >>> bool(0.5 < result.epsilon_lower <= 1.0), result.direction
    (True, 0)
    """
    rng = np.random.default_rng(rng)

    if event is not None and callable(event) and not isinstance(event, Mapping):
        chosen = _as_event(event)
        n_sel = 0
    else:
        n_sel = int(round(n_runs * selection_fraction))
        if not 1 <= n_sel < n_runs:
            raise ValueError(
                f"n_runs={n_runs} is too small to split with "
                f"selection_fraction={selection_fraction}."
            )
        chosen = _select_event(
            mechanism,
            event,
            n_sel,
            rng,
            batch_size,
            confidence,
            delta,
            max_set_values,
            max_thresholds,
        )
    n_eval = n_runs - n_sel
    count_0 = _count(mechanism, 0, n_eval, rng, batch_size, chosen)
    count_1 = _count(mechanism, 1, n_eval, rng, batch_size, chosen)
    eps, direction = epsilon_lower_bound(
        count_0, n_eval, count_1, n_eval, delta=delta, confidence=confidence
    )
    return AuditResult(
        epsilon_lower=eps,
        epsilon_hat=_point_estimate(count_0, n_eval, count_1, n_eval, delta, direction),
        counts=(count_0, count_1),
        n_runs=n_eval,
        n_selection_runs=n_sel,
        confidence=float(confidence),
        delta=float(delta),
        direction=direction,
        event=chosen.description,
    )


def _select_event(
    mechanism,
    event,
    n_sel,
    rng,
    batch_size,
    confidence,
    delta,
    max_set_values,
    max_thresholds,
):
    alpha_each = (1.0 - confidence) / 4.0
    if event is None:
        out_0 = _concat(list(_run(mechanism, 0, n_sel, rng, batch_size)))
        out_1 = _concat(list(_run(mechanism, 1, n_sel, rng, batch_size)))
        best = (-np.inf, -np.inf, None)
        for c0, c1, n, factory in _auto_candidates(
            out_0, out_1, max_set_values, max_thresholds
        ):
            b0, b1 = _directional_bounds(c0, n, c1, n, delta, alpha_each)
            score = np.maximum(b0, b1)
            # tie-break on the point estimate (smoothed), so a selection that
            # finds no evidence still prefers the most promising event
            with np.errstate(divide="ignore", invalid="ignore"):
                hat = np.abs(np.log((c0 + 0.5) / (c1 + 0.5)))
            i = int(np.lexsort((-hat, -score))[0])
            if (score[i], hat[i]) > best[:2]:
                best = (score[i], hat[i], factory(i))
        return best[2]
    if isinstance(event, Mapping):
        candidates = [_Event(str(k), v) for k, v in event.items()]
    elif isinstance(event, Sequence) and not isinstance(event, str):
        candidates = [_as_event(e, f"event {i}") for i, e in enumerate(event)]
    else:
        raise TypeError(
            "event must be a callable, a sequence or mapping of callables, or None."
        )
    if not candidates:
        raise ValueError("event: the sequence of candidate events is empty.")
    for e in candidates:
        if not callable(e.fn):
            raise TypeError(f"candidate event {e.description!r} is not callable.")
    c0 = np.zeros(len(candidates), dtype=np.int64)
    c1 = np.zeros(len(candidates), dtype=np.int64)
    for side, counts in ((0, c0), (1, c1)):
        for out in _run(mechanism, side, n_sel, rng, batch_size):
            for j, e in enumerate(candidates):
                counts[j] += int(np.asarray(e.fn(out), dtype=bool).sum())
    b0, b1 = _directional_bounds(c0, n_sel, c1, n_sel, delta, alpha_each)
    score = np.maximum(b0, b1)
    with np.errstate(divide="ignore", invalid="ignore"):
        hat = np.abs(np.log((c0 + 0.5) / (c1 + 0.5)))
    i = int(np.lexsort((-hat, -score))[0])
    e = candidates[i]
    return _Event(
        f"{e.description} (chosen on {n_sel} selection runs per neighbour)", e.fn
    )


def _concat(batches):
    if len(batches) == 1:
        return np.asarray(batches[0])
    return np.concatenate([np.asarray(b) for b in batches])
