"""Every Python block of the README runs verbatim and prints what the README says.

A ```` ```python ```` block is run as a script in a fresh interpreter, in an
empty working directory (so it can read no file the repository happens to
hold), and must finish within two minutes on two cores. When the block is
followed directly by a ```` ```text ```` block, that block is the output the
README promises: the script's standard output must match it, with ``...``
standing for any text (doctest's ``ELLIPSIS``) and runs of white space
compared as one space, and no warning may say the block went wrong (a
budget that ran out). The blocks import the checkout under test. Blocks
that need an extra (``pip install ".[data]"``) say so in a set-up command
of the README; the test runs in ``.ci/run`` after the extras are installed
(marked ``slow``: it is not part of the quick test command), and
``tests/test_readme_fresh_env.py`` runs the set-up commands and the blocks
in a new environment.
"""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

import dpsklearn

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
#: Seconds a block may take (the README promises under two minutes each).
TIME_LIMIT = 120
#: The dpsklearn these tests import (the checkout under test, not whatever
#: another installation put on the interpreter's path).
PACKAGE_ROOT = pathlib.Path(dpsklearn.__file__).resolve().parents[1]
#: Warnings that mean a block no longer shows what its prose says.
WRONG = ("budget ran out", "worse than a constant")

_BLOCK = re.compile(r"```python\n(.*?)```(?:\n+```text\n(.*?)```)?", re.DOTALL)


def _blocks():
    text = README.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_blocks())), ids=lambda i: f"block{i}")
def test_readme_block_runs_as_written(index, tmp_path):
    code, expected = _blocks()[index]
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * TIME_LIMIT,
    )
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    wrong = [line for line in lines if any(w in line for w in WRONG)]
    assert not wrong, wrong
    assert elapsed <= TIME_LIMIT, f"block {index} took {elapsed:.0f} s"
    if expected is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert checker.check_output(expected, result.stdout, flags), (
            f"block {index} printed:\n{result.stdout}\nthe README says:\n{expected}"
        )
