"""How long is one ``predict``'s path through the package?

Fits a :class:`~dpsklearn.SubsampleAggregateClassifier` (its defaults, a
small LogisticRegression teacher, 400 synthetic rows, ``classes`` given)
whose accountant is a SQLite :class:`~dpsklearn.accounting.PrivacyLedger`,
predicts 5 rows once to warm up, then counts with :func:`sys.setprofile` the Python
function calls whose code lives under the ``dpsklearn`` package during ONE
``predict`` of 5 other rows, and the distinct package files they visit (in the
order of first visit). The drawing in ``docs/architecture.rst``, "One
predict", is this list. Exits 1 when the path is longer than the budget
(the budget: at most 100 calls in at most 10 files).

Usage::

    python benchmarks/predict_path.py [--verbose]
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

# Measure the package of this checkout, not an installed one.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpsklearn  # noqa: E402
from dpsklearn import SubsampleAggregateClassifier  # noqa: E402
from dpsklearn.accounting import PrivacyLedger  # noqa: E402

MAX_CALLS = 100
MAX_FILES = 10
PACKAGE_DIR = str(Path(dpsklearn.__file__).resolve().parent)


def fitted_model(ledger_path):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    ledger = PrivacyLedger(ledger_path, epsilon=10.0, delta=1e-5)
    model = SubsampleAggregateClassifier(
        LogisticRegression(max_iter=200),
        classes=[0, 1],
        accountant=ledger,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    # Two different query sets: the warm-up must not answer the measured rows
    # already (repeated rows are answered from the model's cache for free).
    return model, rng.normal(size=(5, 4)), rng.normal(size=(5, 4))


def package_calls(function):
    """Python calls into the package while ``function()`` runs, in order."""
    calls = []

    def profile(frame, event, arg):
        if event == "call":
            filename = frame.f_code.co_filename
            if filename.startswith(PACKAGE_DIR):
                calls.append((filename[len(PACKAGE_DIR) + 1 :], frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return calls


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory() as directory:
        model, X_warm_up, X_query = fitted_model(str(Path(directory) / "ledger.db"))
        model.predict(X_warm_up)  # lazy imports, the plan cached at first use
        calls = package_calls(lambda: model.predict(X_query))
    files = list(dict.fromkeys(filename for filename, _ in calls))
    print(f"calls into dpsklearn during one predict of 5 rows: {len(calls)}")
    print(f"distinct dpsklearn files visited: {len(files)} (package: {PACKAGE_DIR})")
    counts = Counter(filename for filename, _ in calls)
    for filename in files:
        print(f"  {filename}: {counts[filename]}")
    if "--verbose" in argv:
        for filename, name in calls:
            print(f"    {filename}:{name}")
    if len(calls) > MAX_CALLS or len(files) > MAX_FILES:
        print(
            f"too long: the budget is {MAX_CALLS} calls in {MAX_FILES} files",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
