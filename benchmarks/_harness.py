"""What every benchmark script shares: command line, metadata, writers, timer.

* :func:`cli` -- the common command line: ``--quick`` (the short CI mode) and
  ``--out DIR`` (where the tables go; ``--out-dir`` is accepted as an alias),
  plus whatever options a script adds.
* :func:`environment` -- what a reader needs to judge a figure: Python,
  numpy, scikit-learn and dpsklearn versions, platform, cores, date and load.
  Every script records it under ``"environment"`` in its JSON.
* :func:`write_json`, :func:`write_markdown`, :func:`markdown_table`,
  :func:`fmt` -- the writers (``docs/_ext/benchmark_results.py`` reads the
  Markdown files into the documentation).
* :func:`best_of` -- the least disturbed wall time of repeated calls.
* :class:`Progress` -- a plain-text progress bar on stderr.

Scripts import it as ``from _harness import ...`` (each script puts its own
folder first on ``sys.path``, so it runs from any working directory).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "benchmarks"


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def cli(doc, argv=None, *, quick_help, add_arguments=None):
    """Parse the common command line of a benchmark script.

    Parameters
    ----------
    doc : str
        The script's docstring; its first line is the description.
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).
    quick_help : str
        What ``--quick`` does for this script.
    add_arguments : callable, optional
        ``add_arguments(parser)`` adds the script's own options.

    Returns
    -------
    argparse.Namespace
        With ``quick`` (bool) and ``out`` (a :class:`~pathlib.Path`, default
        ``docs/benchmarks/`` of this repository), plus the script's own.
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument(
        "--out",
        "--out-dir",
        dest="out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="output folder (default: docs/benchmarks)",
    )
    if add_arguments is not None:
        add_arguments(parser)
    return parser.parse_args(argv)


def command(script, *options):
    """The command line to quote in a table: ``python benchmarks/<script>...``."""
    return " ".join(["python", f"benchmarks/{script}", *[o for o in options if o]])


# --------------------------------------------------------------------------
# Environment metadata
# --------------------------------------------------------------------------


def load_average():
    """The 1-minute load average (NaN where the platform has none)."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else float("nan")


def environment(**extra):
    """Versions, platform, cores, date and load, for every result file.

    ``extra`` adds script-specific entries (other packages' versions).
    """
    import sklearn

    import dpsklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit_learn": sklearn.__version__,
        "dpsklearn": dpsklearn.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"
        ),
        "load_average_1min": load_average(),
        **extra,
    }


# --------------------------------------------------------------------------
# Timer
# --------------------------------------------------------------------------


def best_of(fn, repeat):
    """The smallest wall time of ``repeat`` calls of ``fn()`` (in seconds).

    The minimum is the least disturbed run: on a shared machine every other
    run is slower for reasons that are not the code's.
    """
    best = float("inf")
    for _ in range(max(1, int(repeat))):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# --------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------


def _json_default(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def write_json(path, payload, trailing_newline=True):
    """Write ``payload`` as indented JSON (numpy scalars and arrays converted)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=2, default=_json_default)
    path.write_text(text + ("\n" if trailing_newline else ""))
    return path


def write_markdown(path, lines):
    """Write Markdown ``lines`` (or one string) to ``path``; returns the text."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = lines if isinstance(lines, str) else "\n".join(lines)
    path.write_text(text)
    return text


def fmt(value, spec=""):
    """Format a table cell: ``-`` for None/NaN, else ``format(value, spec)``."""
    if value is None:
        return "-"
    if isinstance(value, float) and not np.isfinite(value):
        return "-"
    return format(value, spec)


def markdown_table(rows, columns):
    """``columns``: (header, key or callable, format spec, align) tuples."""
    header = "| " + " | ".join(c[0] for c in columns) + " |"
    rule = "|" + "|".join("---:" if c[3] == "r" else "---" for c in columns) + "|"
    lines = [header, rule]
    for row in rows:
        cells = []
        for _, key, spec, _ in columns:
            value = key(row) if callable(key) else row.get(key)
            cells.append(fmt(value, spec))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# --------------------------------------------------------------------------
# Progress bar (stderr, no dependency)
# --------------------------------------------------------------------------


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


class Progress:
    """A plain-text progress bar on stderr.

    On a terminal it redraws one line; elsewhere (CI logs) it prints a line
    at every tenth of the work and at the end, so logs stay short.
    """

    def __init__(self, total, label="", width=30, stream=None):
        self.total = max(1, int(total))
        self.label = label
        self.width = width
        self.stream = sys.stderr if stream is None else stream
        self.done = 0
        self.start = time.perf_counter()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1

    def update(self, step=1, note=""):
        self.done = min(self.total, self.done + step)
        elapsed = time.perf_counter() - self.start
        fraction = self.done / self.total
        eta = elapsed / fraction * (1 - fraction) if fraction > 0 else 0.0
        filled = int(round(self.width * fraction))
        bar = "#" * filled + "-" * (self.width - filled)
        line = (
            f"{self.label} [{bar}] {self.done}/{self.total} "
            f"{_clock(elapsed)} elapsed, ~{_clock(eta)} left {note}"
        )
        if self._tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            decile = int(10 * fraction)
            if decile != self._last_decile or self.done == self.total:
                self._last_decile = decile
                self.stream.write(line + "\n")
        self.stream.flush()
