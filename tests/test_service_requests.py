"""The example service answers malformed requests with 422 and the reason.

No rows, rows of unequal length, the wrong number of columns and values that
are not numbers are refused before anything is spent (the model's counters
do not move); a well-formed request is answered. In-process (FastAPI's test
client), with a SQLite ledger in a temporary folder.
"""

from __future__ import annotations

import pathlib
import sys

import joblib
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from dpsklearn import PrivacyLedger, PrivatePredictionClassifier  # noqa: E402

SERVICE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "service"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("service")
    X, y = make_classification(n_samples=2000, n_features=4, random_state=0)
    model = PrivatePredictionClassifier(
        LogisticRegression(),
        n_estimators=20,
        epsilon=4.0,
        max_queries=50,
        classes=[0, 1],
        accountant=PrivacyLedger(
            str(folder / "budget.sqlite"), epsilon=4.0, delta=1e-5
        ),
        random_state=0,
    ).fit(X, y)
    path = folder / "model.joblib"
    joblib.dump(model, path)
    model.accountant_.close()
    sys.path.insert(0, str(SERVICE))
    try:
        import app as service
    finally:
        sys.path.remove(str(SERVICE))
    mp = pytest.MonkeyPatch()
    mp.setenv(service.MODEL_ENV, str(path))
    with TestClient(service.app) as test_client:
        yield test_client
    mp.undo()


def _served(client):
    return client.get("/status").json()["n_served"]


@pytest.mark.parametrize(
    "rows, reason",
    [
        ([], "no rows"),
        ([[0.0, 1.0, 2.0]], "needs 4 values, got 3"),
        ([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0]], "unequal length"),
        ([[0.0, 1.0, 2.0, 3.0, 4.0]], "needs 4 values, got 5"),
    ],
)
def test_a_malformed_request_is_refused_with_its_reason(client, rows, reason):
    before = _served(client)
    response = client.post("/predict", json={"rows": rows})
    assert response.status_code == 422
    assert reason in response.json()["error"]
    assert _served(client) == before  # nothing spent


@pytest.mark.parametrize("rows", [[["a", 1, 2, 3]], "not rows", [[None, 1, 2, 3]]])
def test_values_that_are_not_numbers_are_refused(client, rows):
    before = _served(client)
    response = client.post("/predict", json={"rows": rows})
    assert 400 <= response.status_code < 500
    assert response.json()  # a reason, not a bare error page
    assert _served(client) == before


def test_a_well_formed_request_is_answered(client):
    before = _served(client)
    response = client.post("/predict", json={"rows": [[0.1, 0.2, 0.3, 0.4]] * 2})
    assert response.status_code == 200
    assert len(response.json()["labels"]) == 2
    assert _served(client) == before + 1  # the same row twice: one release
