"""Command-line entry point: ``python -m dpsklearn demo``."""

import sys

from .demo import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
