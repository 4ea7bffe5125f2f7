"""The public budget-store protocol that serving talks to.

:class:`dpsklearn.accounting.BudgetStore` is implemented by the in-memory
:class:`PrivacyAccountant` (records in memory) and :class:`PrivacyLedger`
(records in its database, on both backends); ``dpsklearn.serving`` uses it
and nothing private of ``dpsklearn.accounting``.
"""

from __future__ import annotations

import ast
import copy
import pathlib
import pickle
import warnings

import pytest
from _helpers import STUMP, two_blobs
from _ledger_backends import ledger_url_fixture  # noqa: F401 (ledger_url)

import dpsklearn
from dpsklearn import BudgetCopyWarning, SparseVector, SubsampleAggregateClassifier
from dpsklearn.accounting import (
    BudgetStore,
    ModelRecord,
    PrivacyAccountant,
    PrivacyLedger,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

X, Y = two_blobs(300, 0, centre=3.0)


def _model(accountant):
    return SubsampleAggregateClassifier(
        STUMP,
        n_estimators=50,
        epsilon=200.0,
        delta=1e-5,
        mechanism=SparseVector(max_unstable=60, fallback="abstain"),
        classes=[0, 1],
        accountant=accountant,
        random_state=0,
    )


def test_serving_imports_nothing_private_of_accounting():
    serving = pathlib.Path(dpsklearn.__file__).parent / "serving"
    for source in sorted(serving.glob("*.py")):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and "accounting" in (node.module or ""):
                assert not any(part.startswith("_") for part in node.module.split("."))
                assert not any(alias.name.startswith("_") for alias in node.names)
            if isinstance(node, ast.Attribute):
                # No private hook of a ledger or an accountant.
                assert node.attr not in {
                    "_model_transaction",
                    "_register_model",
                    "_file",
                    "_writing",
                    "_record",
                }, f"{source.name}: .{node.attr}"


def test_both_accountants_are_budget_stores(ledger_url):
    memory = PrivacyAccountant(1.0)
    ledger = PrivacyLedger(ledger_url("store"), 1.0)
    for store in (memory, ledger):
        assert isinstance(store, BudgetStore)
    assert (memory.durable, ledger.durable) == (False, True)
    assert memory.shared and ledger.shared
    # Something with a spend method only is not a store: its model serves
    # from memory.
    assert not isinstance(object(), BudgetStore)


def test_a_record_transaction_loads_and_saves(ledger_url):
    for store in (
        PrivacyAccountant(1.0),
        PrivacyLedger(ledger_url("records"), 1.0),
    ):
        model_id = store.register_model("m", {"n_served": 0}, {"noisy_threshold": 3.5})
        assert len(model_id) == 32
        with store.model_transaction(model_id) as record:
            assert isinstance(record, ModelRecord)
            assert (record.version, record.state) == (1, {"n_served": 0})
            assert record.secret == {"noisy_threshold": 3.5}
            assert record.save({"n_served": 0}, {"noisy_threshold": 3.5}) == 1
            assert record.save({"n_served": 4}, {"noisy_threshold": 3.5}) == 2
            assert "3.5" not in repr(record)
        # Saved even when the block raises: a state only moves forward.
        with pytest.raises(RuntimeError):
            with store.model_transaction(model_id) as record:
                record.save({"n_served": 9}, None)
                raise RuntimeError("after the save")
        with store.model_transaction(model_id) as record:
            assert (record.version, record.state, record.secret) == (
                3,
                {"n_served": 9},
                None,
            )
        with pytest.raises((KeyError, LookupError, ValueError), match="no record"):
            with store.model_transaction("0" * 32):
                pass


def test_a_ledger_that_keeps_no_threshold_drops_the_secret(ledger_url):
    location = ledger_url("public")
    ledger = PrivacyLedger(location, 1.0, store_noisy_threshold=False)
    model_id = ledger.register_model(None, {"n_served": 0}, {"noisy_threshold": 1.0})
    with ledger.model_transaction(model_id) as record:
        assert record.secret is None
        record.save({"n_served": 1}, {"noisy_threshold": 2.0})
    assert ledger_url.sql(location, "SELECT secret FROM models") == [(None,)]


def test_in_memory_records_copy_with_a_model_owned_accountant():
    model = _model(None).fit(X, Y)
    with pytest.warns(BudgetCopyWarning, match="second, independent budget"):
        twin = pickle.loads(pickle.dumps(model))
    model.predict(X[:10])
    # The copy continues its own record, from the state at the copy.
    assert model.budget_status().n_served == 10
    assert twin.budget_status().n_served == 0
    twin.predict(X[:5])
    assert model.budget_status().n_served == 10


def test_a_deepcopy_with_a_shared_accountant_continues_the_one_record():
    shared = PrivacyAccountant(500.0, 1e-4)
    model = _model(shared).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetCopyWarning)
        twin = copy.deepcopy(model)  # no second budget: no warning
    assert twin.accountant_ is shared
    model.predict(X[:10])
    assert twin.budget_status().n_served == 10
    twin.predict(X[10:15])
    assert model.budget_status().n_served == 15
