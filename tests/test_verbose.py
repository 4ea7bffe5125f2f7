"""Progress reporting through scikit-learn's ``verbose`` convention.

With ``verbose``, fitting the teachers reports how many are fitted, the time
elapsed and an estimate of the rest, on standard error (a tqdm bar when tqdm
is installed, plain lines otherwise), at least at every tenth of the
teachers; ``verbose=0`` prints nothing. Long batches of queries report the
rows answered. Per-call serving lines show counts of answers and abstentions
only, never votes, distances, noise or the threshold (docs/design.rst,
"Neighbouring datasets and what epsilon covers").
"""

from __future__ import annotations

import re
import warnings

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier

import dpsklearn
import dpsklearn._progress as progress
import dpsklearn.serving._loop as loop
from dpsklearn import PrivacyLeakWarning, SparseVector, SubsampleAggregateClassifier

LINE = re.compile(r"\[dpsklearn\] fitting teachers: (\d+) of (\d+) teachers")


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=400, n_features=5, random_state=0)


@pytest.fixture
def plain_lines(monkeypatch):
    """Plain progress lines, as without tqdm."""
    monkeypatch.setattr(progress, "_tqdm", None)


def _fit(verbose, n_jobs, X, y, n_estimators=8, estimator=None, **params):
    model = SubsampleAggregateClassifier(
        estimator,
        n_estimators=n_estimators,
        classes=[0, 1],
        random_state=0,
        noise_random_state=0,
        n_jobs=n_jobs,
        verbose=verbose,
        **params,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        with dpsklearn.config_context(teacher_cache=None):
            return model.fit(X, y)


def _reported(err):
    return [(int(done), int(total)) for done, total in LINE.findall(err)]


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_fit_verbose_reports_teachers_fitted(data, capsys, n_jobs, plain_lines):
    X, y = data
    # Threads instead of loky processes: the same progress without the cost
    # of starting worker processes (tests/test_dask.py covers Dask).
    with joblib.parallel_config(backend="threading"):
        _fit(1, n_jobs, X, y)
    err = capsys.readouterr().err
    assert _reported(err)[-1] == (8, 8), err
    assert re.search(r"\(100%\) in \d+\.\d s", err), err


def test_fit_of_5000_teachers_reports_every_tenth(capsys, plain_lines):
    X, y = make_classification(n_samples=10_000, n_features=4, random_state=0)
    _fit(1, 2, X, y, n_estimators=5000, estimator=DummyClassifier())
    reported = _reported(capsys.readouterr().err)
    assert reported and all(total == 5000 for _, total in reported)
    done = [0] + [d for d, _ in reported]
    assert done[-1] == 5000
    assert max(np.diff(done)) <= 500, done  # a report at least every tenth
    assert 10 <= len(reported) <= 25, done  # and not a line per teacher


def test_fit_progress_bar_with_tqdm(data, capsys):
    pytest.importorskip("tqdm")
    X, y = data
    _fit(1, None, X, y)
    err = capsys.readouterr().err
    assert "fitting teachers" in err and "8/8" in err, err


def test_fit_silent_by_default(data, capsys):
    X, y = data
    _fit(0, None, X, y).predict(X[:10])
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_predict_verbose_shows_counts_only(data, capsys):
    X, y = data
    model = _fit(1, None, X, y, mechanism=SparseVector())
    capsys.readouterr()
    model.predict(X[:10])
    out = capsys.readouterr().out
    assert "released 10 new row(s) of 10" in out
    for secret in ("threshold_", f"{model.threshold_:.0f}", "vote", "noise"):
        assert secret not in out, out


def test_long_predict_reports_rows_answered(capsys, monkeypatch, plain_lines):
    X, y = make_classification(n_samples=3000, n_features=5, random_state=0)
    # A budget where nearly every row passes: the model answers all 2,000.
    model = _fit(
        1,
        None,
        X[:1000],
        y[:1000],
        n_estimators=20,
        epsilon=1e6,
        mechanism=SparseVector(max_unstable=5000),
    )
    monkeypatch.setattr(loop, "_PROGRESS_DELAY", 0.0)
    capsys.readouterr()
    model.predict(X[1000:], return_abstained=True)
    err = capsys.readouterr().err
    rows = re.findall(r"SubsampleAggregateClassifier predict: (\d+) of 2000 rows", err)
    assert rows and rows[-1] == "2000", err
    for secret in ("threshold", "noise", "distance", "vote"):
        assert secret not in err, err
