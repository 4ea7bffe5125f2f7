"""The monotone inverses: one module, each search written once.

Every calibration inverts a monotone condition (the smallest threshold at
which a tail is small enough, the largest rho a budget admits). The searches
live in ``dpsklearn/_monotone.py``, with their rounding on the safe side;
the first test greps the package for a bisection or a galloping bracket
written by hand anywhere else, the others check the searches themselves.

Run alone: ``python -m pytest tests/test_monotone.py``.
"""

from __future__ import annotations

import math
import pathlib
import re

import pytest

import dpsklearn
from dpsklearn._monotone import (
    bisection,
    largest_certified,
    largest_within,
    smallest_integer,
    smallest_within,
)

ROOT = pathlib.Path(dpsklearn.__file__).parent
HOME = ROOT / "_monotone.py"

_END = r"(?:lo|low|below|hi|high|above)"
#: What a hand-written bisection or galloping bracket looks like.
HAND_WRITTEN = {
    "a midpoint": re.compile(
        r"\b(?:mid|middle)\w*\s*=\s*(?:0\.5\s*\*\s*)?\(\s*" + _END
    ),
    "a geometric midpoint": re.compile(r"sqrt\(\s*" + _END + r"\s*\*\s*" + _END),
    "a width loop": re.compile(r"while\s+\(?\s*" + _END + r"\s*[-/]\s*" + _END + r"\b"),
    "a galloping step": re.compile(r"\b" + _END + r"\s*[*/]=\s*\d"),
    "a galloping pair": re.compile(
        rf"\b{_END}\s*,\s*{_END}\s*=\s*{_END}\s*,\s*"
        rf"(?:{_END}\s*[*/]|\d[\d.]*\s*\*\s*{_END})"
    ),
}


def _hand_written(text):
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for what, pattern in HAND_WRITTEN.items():
            if pattern.search(code):
                yield number, what, line.strip()


def test_the_patterns_catch_the_searches_they_replaced():
    searches = """
    for _ in range(200):
        mid = 0.5 * (lo + hi)
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
    while high - low > 1e-12 * high:
        middle = 0.5 * (low + high)
    while high - low > 1:
        mid = (low + high) // 2
    while not ok(hi):
        hi *= 2.0
    while fits(hi):
        lo, hi = hi, hi * 4.0
    while fits(high):
        low, high = high, 2.0 * high
    """
    found = [what for _, what, _ in _hand_written(searches)]
    assert set(found) == set(HAND_WRITTEN)
    assert len(found) == 10  # every line above but the four loop headers
    # A secant step's fallback or a centre is not a bisection.
    assert not list(_hand_written("center = (lo + hi) / 2.0\nspan = hi - lo\n"))


def test_no_bisection_is_written_by_hand_outside_the_monotone_module():
    problems = [
        f"{path.relative_to(ROOT.parent)}:{number}: {what}: {line}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != HOME
        for number, what, line in _hand_written(path.read_text())
    ]
    assert not problems, "use dpsklearn/_monotone.py:\n" + "\n".join(problems)


def test_the_accounting_unit_still_exports_the_integer_search():
    from dpsklearn.accounting import largest_certified as from_accounting
    from dpsklearn.accounting import smallest_integer as integer_from_accounting

    assert from_accounting is largest_certified
    assert integer_from_accounting is smallest_integer


@pytest.mark.parametrize("answer", [0, 1, 2, 7, 64, 1000, 123_457])
@pytest.mark.parametrize("low", [0, 1])
@pytest.mark.parametrize("guess", [None, 1, 5, 100, 200_000])
def test_smallest_integer_is_exact(answer, low, guess):
    calls = []

    def predicate(n):
        calls.append(n)
        return n >= answer

    assert smallest_integer(predicate, low=low, guess=guess) == max(answer, low)
    assert len(calls) <= 2 * math.log2(max(answer, guess or 0, 2)) + 16


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("target", [1e-9, 0.3, 1.0, 7.5, 3e8])
def test_bisection_keeps_the_end_where_the_condition_holds(log, target):
    rtol = 1e-9

    def above(x):
        return x >= target

    def below(x):
        return x <= target

    up = bisection(above, 4.0 * target, target / 4.0, log=log, rtol=rtol)
    down = bisection(below, target / 4.0, 4.0 * target, log=log, rtol=rtol)
    assert target <= up <= target * (1.0 + 2.0 * rtol)
    assert target * (1.0 - 2.0 * rtol) <= down <= target


def test_bisection_stops_at_the_floating_point_resolution_and_step_limit():
    calls = []

    def ok(x):
        calls.append(x)
        return x >= 1.0

    assert bisection(ok, 2.0, 0.0, rtol=0.0) == 1.0
    assert len(calls) < 200
    calls.clear()
    assert bisection(ok, 2.0, 0.0, rtol=0.0, max_steps=3) == 1.0
    assert len(calls) == 3


def test_largest_within_gallops_shrinks_and_caps():
    def ok(x):
        return x * x <= 2.0

    x = largest_within(ok, 0.5)
    assert ok(x) and math.isclose(x, math.sqrt(2.0), rel_tol=1e-12)
    # From a start above the answer: shrink walks the lower end down.
    x = largest_within(
        lambda c: c <= 3e-15, 1e-12, math.inf, hi=1.0, factor=4.0, shrink=True,
        log=True, rtol=1e-10,
    )
    assert x <= 3e-15 and math.isclose(x, 3e-15, rel_tol=1e-9)
    # The cap is returned when the condition holds there.
    assert largest_within(lambda x: True, 1.0, 10.0) == 10.0
    assert largest_within(lambda x: x <= 9.0, 1.0, 10.0) <= 9.0


def test_smallest_within_from_zero_grow_and_log():
    assert smallest_within(lambda x: x >= 0.0, 1.0) == 0.0
    x = smallest_within(lambda x: x >= 1000.0, 1.0, grow=True)
    assert x >= 1000.0 and math.isclose(x, 1000.0, rel_tol=1e-12)
    x = smallest_within(lambda x: x >= 1e-100, 1.0, log=True, rtol=1e-12)
    assert x >= 1e-100 and math.isclose(x, 1e-100, rel_tol=1e-11)
    # On the log scale the lower end stops at the floor.
    assert smallest_within(lambda x: True, 1.0, log=True, floor=1e-3) <= 1e-3


def test_largest_certified_is_certified():
    def certify(rho):
        return rho + 2.0 * math.sqrt(rho * math.log(1e5))

    for epsilon in (1e-3, 1.0, 50.0):
        rho = largest_certified(certify, epsilon, 1e-9)
        assert certify(rho) <= epsilon < certify(rho * (1.0 + 1e-8))
