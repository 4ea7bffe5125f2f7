"""Every entry of ``conftest.SLOW_TESTS`` names a test that exists.

A renamed test would otherwise slip back into the quick run unnoticed (and
the list would name nothing).
"""

from __future__ import annotations

import pathlib
import re

from conftest import SLOW_TESTS

TESTS = pathlib.Path(__file__).resolve().parent


def test_every_slow_entry_names_a_test_function():
    stale = []
    for module, names in SLOW_TESTS.items():
        source = (TESTS / module).read_text(encoding="utf-8")
        defined = set(re.findall(r"^def (test_\w+)\(", source, flags=re.M))
        stale += [f"{module}::{name}" for name in names if name not in defined]
    assert not stale, f"SLOW_TESTS names no test: {stale}"
