"""Fit a private model bound to a ledger and save it for the service.

The model's accountant is a :class:`~dpsklearn.PrivacyLedger`: the fit
spends the model's whole ``(epsilon, delta)`` from the ledger and registers
the model's serving record there. Saved with :func:`joblib.dump`, the model
pickles its ledger *by location* and its record by id, so every process that
loads it (each worker of the service, on any host that reaches the ledger)
continues that one record: the ``max_queries`` answers the fit paid for are
shared by all of them, never multiplied by the number of workers.

Run ``python train.py --help``; the defaults fit on the bundled UCI Adult
data (numeric codes, 32,561 rows) with a local SQLite ledger::

    python train.py --ledger budget.sqlite --model model.joblib
    python train.py --ledger "postgresql://me@db-host/budgets?schema=adult" \\
        --model model.joblib
"""

from __future__ import annotations

import argparse

import joblib
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpsklearn import Exponential, PrivacyLedger, PrivatePredictionClassifier
from dpsklearn.datasets import load_adult


def train(
    ledger,
    model_path,
    *,
    X=None,
    y=None,
    epsilon=4.0,
    delta=1e-6,
    max_queries=20_000,
    n_estimators=25,
    ledger_epsilon=None,
    random_state=0,
):
    """Fit a :class:`~dpsklearn.PrivatePredictionClassifier` on ``ledger``; dump it.

    Parameters
    ----------
    ledger : str
        A ledger file path or PostgreSQL URL. Created with a budget of
        ``ledger_epsilon`` (default: ``epsilon``) and ``delta`` when it
        does not exist.
    model_path : str
        Where :func:`joblib.dump` writes the model (as secret as the data:
        it holds the teachers).
    X, y : array-like, optional
        The private training rows; the bundled Adult data by default.
    epsilon, delta : float
        The model's budget, spent from the ledger at ``fit``.
    max_queries : int
        Query units (rows) the budget pays for, shared by every worker.
    n_estimators : int
        Teachers, each a scaled logistic regression on its own shard.

    Returns
    -------
    model : PrivatePredictionClassifier
    """
    if X is None:
        adult = load_adult()
        X, y = adult.data, adult.target
    budget = PrivacyLedger(
        ledger, epsilon=ledger_epsilon or epsilon, delta=delta, timeout=60.0
    )
    model = PrivatePredictionClassifier(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)),
        n_estimators=n_estimators,
        epsilon=epsilon,
        delta=delta,
        max_queries=max_queries,
        # The service refuses (429, with the answers paid for) once the paid
        # queries are spent, rather than answering from a student.
        mechanism=Exponential(unanswered="abstain"),
        classes=sorted(set(y.tolist())),
        accountant=budget,
        random_state=random_state,
    ).fit(X, y)
    joblib.dump(model, model_path)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", required=True, help="file path or postgresql URL")
    parser.add_argument("--model", required=True, help="joblib file to write")
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--max-queries", type=int, default=20_000)
    parser.add_argument("--n-estimators", type=int, default=25)
    args = parser.parse_args(argv)
    model = train(
        args.ledger,
        args.model,
        epsilon=args.epsilon,
        delta=args.delta,
        max_queries=args.max_queries,
        n_estimators=args.n_estimators,
    )
    print(f"saved {args.model}; {model.budget_status()}")


if __name__ == "__main__":
    main()
