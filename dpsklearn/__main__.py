"""The command line: ``python -m dpsklearn [--version] <command>``.

Commands:

* ``demo`` -- private prediction on the bundled UCI Adult data, beside the
  base rate, the teachers' non-private vote and a non-private model
  (``python -m dpsklearn demo --help`` for its options).
"""

from __future__ import annotations

import argparse
import sys

from . import __version__

_COMMANDS = {
    "demo": (
        "private prediction on the bundled UCI Adult data (DataFrame teachers), "
        "every estimator beside the base rate, the teachers' non-private vote "
        "and a non-private model"
    ),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dpsklearn",
        description=(
            "dpsklearn: differentially private prediction for any scikit-learn "
            "estimator."
        ),
        epilog="Commands:\n"
        + "\n".join(f"  {name:<8} {text}" for name, text in _COMMANDS.items())
        + "\n\nRun 'python -m dpsklearn <command> --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"dpsklearn {__version__}"
    )
    parser.add_argument("command", choices=sorted(_COMMANDS), help="what to run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; return the process exit status.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after ``python -m dpsklearn`` (``sys.argv[1:]`` when
        None).

    Returns
    -------
    status : int

    Examples
    --------
    >>> import subprocess, sys
    >>> out = subprocess.run([sys.executable, "-m", "dpsklearn", "--version"],
    ...                      capture_output=True, text=True, check=True).stdout
    >>> out.startswith("dpsklearn ")
    True
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "demo":
        # The command parses its own options (and its own --help).
        from .demo import main as demo_main

        return demo_main(argv)
    _parser().parse_args(argv)  # --help, --version, or a clear error (exit 2)
    return 2


if __name__ == "__main__":
    sys.exit(main())
