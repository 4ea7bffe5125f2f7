"""Progress reporting through scikit-learn's ``verbose`` convention.

``verbose`` is handed to joblib, so a fit prints joblib's progress lines
(``[Parallel(n_jobs=...)]: Done ...``) on stderr; ``verbose=0`` prints
nothing. Per-call serving lines show counts of answers and abstentions only,
never votes, distances, noise or the threshold (docs/design.rst,
"Neighbouring datasets and what epsilon covers").
"""

from __future__ import annotations

import re
import warnings

import joblib
import pytest
from sklearn.datasets import make_classification

from dpsklearn import PrivacyLeakWarning, SubsampleAggregateClassifier


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=400, n_features=5, random_state=0)


def _fit(verbose, n_jobs, X, y):
    model = SubsampleAggregateClassifier(
        n_estimators=8,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
        n_jobs=n_jobs,
        verbose=verbose,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_fit_verbose_prints_joblib_progress(data, capsys, n_jobs):
    X, y = data
    # Threads instead of loky processes: the same progress lines without the
    # cost of starting worker processes (tests/test_dask.py covers Dask).
    with joblib.parallel_config(backend="threading"):
        _fit(1, n_jobs, X, y)
    captured = capsys.readouterr()
    assert re.search(r"\[Parallel\(n_jobs=\d+\)\]: Done +\d+ out of +\d+", captured.err)


def test_fit_silent_by_default(data, capsys):
    X, y = data
    _fit(0, None, X, y).predict(X[:10])
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_predict_verbose_shows_counts_only(data, capsys):
    X, y = data
    model = _fit(1, None, X, y)
    capsys.readouterr()
    model.predict(X[:10])
    out = capsys.readouterr().out
    assert "released 10 new row(s) of 10" in out
    for secret in ("threshold_", f"{model.threshold_:.0f}", "vote", "noise"):
        assert secret not in out, out
