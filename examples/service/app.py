"""A private prediction service: several worker processes, one ledger, one budget.

Run it with uvicorn's worker processes (the ``serve`` extra:
``pip install "dpsklearn[serve]"``, and ``dpsklearn[postgres]`` for a
PostgreSQL ledger)::

    DPSKLEARN_SERVICE_MODEL=model.joblib \\
        uvicorn app:app --app-dir examples/service --workers 4 --port 8000

Every worker loads the same joblib file, fitted by ``train.py`` with a
:class:`~dpsklearn.PrivacyLedger` as its accountant. The model unpickles
bound to its ledger record, so all workers (and all hosts that load the
file and reach the ledger) continue one serving state: each ``predict``
locks the record, answers, and commits the new counters before the
response is written. A worker killed at any moment has either committed a
batch's counters (its answers are then paid for, delivered or not) or
committed nothing (and released nothing); a restarted worker continues from
the ledger. No worker, copy or restart gets budget back.

Endpoints:

* ``POST /predict`` with ``{"rows": [[...], ...]}``: ``200`` with
  ``{"labels": [...], "worker": pid}``; ``429`` when the budget is spent,
  with the answers already paid for in that request
  (``{"error", "n_answered", "labels"}``); ``503`` when the ledger cannot be
  reached (nothing is answered then); ``422`` with ``{"error": reason}``
  for a request the model cannot read (no rows, rows of unequal length or
  the wrong number of columns, values that are not finite numbers), checked
  before anything is spent.
* ``GET /status``: the model's public counters (``budget_status()``).
* ``GET /healthz``: ``{"worker": pid}``.
"""

from __future__ import annotations

import contextlib
import os

import joblib
import numpy as np
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from dpsklearn import LedgerError, PrivacyLedger

MODEL_ENV = "DPSKLEARN_SERVICE_MODEL"


def load_model(path):
    """Load a fitted model and check that its workers will share one record.

    Refused: a model whose accountant is not a :class:`PrivacyLedger` (each
    worker would then hold its own copy of the budget, and ``n`` workers
    could release ``n`` times what was paid for), and a model with a fixed
    ``noise_random_state`` (every worker would draw the same noise, which
    is for tests only).
    """
    model = joblib.load(path)
    if not isinstance(getattr(model, "accountant_", None), PrivacyLedger):
        raise RuntimeError(
            f"{path}: the model was not fitted with a PrivacyLedger as its "
            "accountant; its workers would each carry their own budget."
        )
    if model.get_params().get("noise_random_state") is not None:
        raise RuntimeError(
            f"{path}: noise_random_state is set; every worker would draw the "
            "same noise. Refit without it."
        )
    return model


class Rows(BaseModel):
    rows: list[list[float]]


@contextlib.asynccontextmanager
async def lifespan(app):
    # Loaded in each worker process: each gets its own ledger connection and
    # its own fresh noise (a copy reseeds from OS entropy when unpickled).
    app.state.model = load_model(os.environ[MODEL_ENV])
    yield
    app.state.model.accountant_.close()


app = FastAPI(title="dpsklearn private prediction service", lifespan=lifespan)


def _labels(values):
    return np.asarray(values).tolist()


# Plain ``def`` endpoints: FastAPI runs them in a thread pool, so a request
# waiting for the ledger's lock never blocks the worker's event loop.
def _unreadable(rows, n_features):
    """Why the model cannot read ``rows``, or ``None``: public, before any spend."""
    if not rows:
        return "no rows: send at least one row"
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        return f"rows of unequal length ({sorted(widths)} values)"
    (width,) = widths
    if width != n_features:
        return f"each row needs {n_features} values, got {width}"
    if not np.all(np.isfinite(np.asarray(rows, dtype=float))):
        return "every value must be a finite number"
    return None


def _refused(reason):
    return JSONResponse(status_code=422, content={"error": reason})


@app.post("/predict")
def predict(body: Rows):
    model = app.state.model
    reason = _unreadable(body.rows, model.n_features_in_)
    if reason is not None:
        return _refused(reason)
    X = np.asarray(body.rows, dtype=float)
    try:
        labels, abstained = model.predict(X, return_abstained=True)
    except (ValueError, TypeError) as exc:
        # Refused by the model's own input check, before anything is spent.
        return _refused(str(exc))
    except LedgerError as exc:
        return JSONResponse(
            status_code=503,
            content={"error": f"ledger unavailable ({exc.strerror})"},
        )
    if abstained.any():
        # The model abstains only once max_queries is spent, on the rows after
        # the cap: the answers already paid for in this request (the rows
        # before it) travel with the refusal.
        answered = ~abstained
        return JSONResponse(
            status_code=429,
            content={
                "error": "privacy budget spent",
                "n_answered": int(answered.sum()),
                "labels": _labels(labels[answered]),
                "worker": os.getpid(),
            },
        )
    return {"labels": _labels(labels), "worker": os.getpid()}


@app.get("/status")
def status():
    return {**app.state.model.budget_status().as_dict(), "worker": os.getpid()}


@app.get("/healthz")
def healthz():
    return {"worker": os.getpid()}
