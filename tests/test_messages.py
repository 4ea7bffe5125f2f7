"""Every warning and error speaks the user's words, and each fit warns once.

A message says what will happen and what to do, in the names of the
parameters the user passes: never the papers' notation (a threshold called
``w``, a cutoff ``T``, a per-query ``eps_q``, "Theorem 1 asks for r=...").
Two checks: the message strings of the source (every ``raise ...(...)``,
``warn_user(...)`` and ``warnings.warn(...)`` in dpsklearn, and the
``message`` helpers they call), and the messages a set of representative
fits and predicts actually shows, each of which must be shown at most once
per fit.
"""

from __future__ import annotations

import ast
import pathlib
import re
import warnings

import numpy as np
import pytest
from _helpers import STUMP, two_blobs
from sklearn.datasets import make_regression

import dpsklearn
from dpsklearn import (
    ConfidentGNMax,
    KnowledgeTransferClassifier,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)

#: Paper notation a user never typed: a threshold ``w``, a cutoff ``T``, a
#: teacher count ``k`` or ``r``, per-query ``eps_q``, noise ``sigma``,
#: ``rho``, a penalty ``lam``, numbered theorems.
BANNED = re.compile(
    r"Theorem \d|Lemma \d|\bw=|\bT=|\bk=|\br=|eps_q|\bsigma\d?=|\brho=|\blam\b|lam="
)

PACKAGE = pathlib.Path(dpsklearn.__file__).parent


def _message_strings(path):
    """The literal parts of every message raised or warned in ``path``."""
    source = path.read_text()
    tree = ast.parse(source)
    found = []

    def strings(node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.append((sub.lineno, sub.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args[:1]:
                strings(arg)
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("warn_user", "warn") and node.args:
                strings(node.args[0])
        elif isinstance(node, ast.FunctionDef) and "message" in node.name:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and sub.value is not None:
                    strings(sub.value)
    return found


def test_no_paper_notation_in_the_sources_messages():
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in _message_strings(path)
        if BANNED.search(text)
    ]
    assert offending == []


def test_the_source_check_sees_messages():
    # The walk above finds the messages (it is not vacuous): the estimator's
    # own, and those of the mechanism options that plan themselves.
    paths = [
        PACKAGE / "ensemble" / "_subsample_aggregate.py",
        PACKAGE / "mechanisms" / "_sparse_vector_options.py",
    ]
    texts = " ".join(text for path in paths for _, text in _message_strings(path))
    assert "will answer nothing" in texts and "mechanism='auto' chose" in texts


# -- representative fits and predicts ------------------------------------------
X_CLF, Y_CLF = two_blobs(400, seed=0)
X_REG, Y_REG = make_regression(n_samples=400, n_features=3, random_state=0)


def _fits():
    """(name, call): each call fits (and may predict) one model."""
    return {
        "auto k capped by rows": lambda: PrivatePredictionClassifier(
            STUMP, max_queries=1, classes=[0, 1]
        ).fit(X_CLF[:200], Y_CLF[:200]),
        "auto mechanism": lambda: SubsampleAggregateClassifier(
            STUMP, classes=[0, 1], random_state=0
        ).fit(X_CLF, Y_CLF),
        "nothing can pass": lambda: SubsampleAggregateClassifier(
            STUMP,
            n_estimators=4,
            mechanism=SparseVector(fallback="abstain", max_unstable=5),
            classes=[0, 1],
        ).fit(X_CLF, Y_CLF),
        "gnmax threshold above the teachers": lambda: SubsampleAggregateClassifier(
            STUMP,
            n_estimators=4,
            epsilon=0.5,
            mechanism=ConfidentGNMax(),
            max_queries=100,
            classes=[0, 1],
        ).fit(X_CLF, Y_CLF),
        "soft labels cannot pass": lambda: SoftLabelPrivateRegressor(
            epsilon=0.1, target_range=(-300, 300)
        ).fit(X_REG[:100], np.clip(Y_REG[:100], -300, 300)),
        "range read from y, answers refused": lambda: PrivatePredictionRegressor(
            n_estimators=5, max_queries=10
        ).fit(X_REG, Y_REG),
        "max_queries=None": lambda: PrivatePredictionClassifier(
            STUMP, max_queries=None, classes=[0, 1]
        ).fit(X_CLF, Y_CLF),
        "teacher budget runs out": lambda: KnowledgeTransferClassifier(
            PrivatePredictionClassifier(
                STUMP, n_estimators=10, max_queries=20, classes=[0, 1]
            )
        ).fit(X_CLF[:300], Y_CLF[:300], X_public=X_CLF[300:]),
        "one class answered": lambda: PrivatePredictionClassifier(
            STUMP, n_estimators=10, epsilon=50.0, max_queries=300, classes=[0, 1]
        )
        .fit(X_CLF, Y_CLF)
        .predict(X_CLF[Y_CLF == 0][:250]),
    }


@pytest.mark.parametrize("name", sorted(_fits()))
def test_shown_messages_are_in_the_users_words_and_shown_once(name):
    call = _fits()[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            raised = []
        except (ValueError, TypeError) as exc:
            raised = [str(exc)]
    shown = [str(w.message) for w in caught] + raised
    assert shown, f"{name}: the case shows nothing (it no longer exercises a message)"
    for message in shown:
        assert not BANNED.search(message), message
    warned = [str(w.message) for w in caught]
    repeated = {m for m in warned if warned.count(m) > 1}
    assert not repeated, repeated
    # One event, one warning: a student whose teacher ran out says so once
    # (not also the teacher's abstentions on the rows it could not pay for).
    ran_out = [m for m in warned if "budget ran out" in m or "are spent" in m]
    assert len(ran_out) <= 1, ran_out
