"""The command line: ``python -m dpsklearn --help``, ``--version``, ``demo --help``."""

from __future__ import annotations

import subprocess
import sys

import dpsklearn


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "dpsklearn", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_help_describes_every_command():
    result = _run("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "Adult" in result.stdout


def test_version():
    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"dpsklearn {dpsklearn.__version__}"


def test_demo_help_shows_its_options():
    result = _run("demo", "--help")
    assert result.returncode == 0
    assert "--queries" in result.stdout


def test_unknown_command_is_refused():
    result = _run("train")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
