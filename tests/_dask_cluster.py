"""What the tests on a real Dask cluster share: the import rule and the cluster.

``require(module)`` imports ``module`` or skips the test module, except under
``CI=true``, where a missing ``distributed`` or ``dask.dataframe`` must fail
(CI has to run these tests). ``local_cluster()`` is a two-worker
``distributed.LocalCluster`` (separate processes, one thread each, loopback
only) with its client, for a module-scoped fixture. ``ClientResults``
records the size of every task result a client asks for (what comes back
to it from the workers).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os

import pytest

WORKER_TIMEOUT = 120.0


def require(module):
    """Import ``module``, or skip (fail under ``CI=true``: CI must run these)."""
    if os.environ.get("CI", "").strip().lower() == "true":
        return importlib.import_module(module)
    return pytest.importorskip(module)


@contextlib.contextmanager
def local_cluster(timeout=WORKER_TIMEOUT):
    """``(cluster, client)`` of two worker processes, closed on exit."""
    distributed = require("distributed")
    # Workers that imported scikit-learn take a few seconds to stop; the
    # nanny then kills them and logs a warning that is not a failure.
    logging.getLogger("distributed.nanny").setLevel(logging.ERROR)
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2, timeout=timeout)
        yield cluster, client


class ClientResults:
    """``with ClientResults(cluster) as results``: ``results.results`` lists
    ``(key, nbytes)`` of every task result a client asked for meanwhile."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.results = []

    def __enter__(self):
        from distributed.diagnostics.plugin import SchedulerPlugin

        owner = self
        scheduler = self.cluster.scheduler

        class _Plugin(SchedulerPlugin):
            def transition(self, key, start, finish, *args, **kwargs):
                if finish != "memory":
                    return
                task = scheduler.tasks.get(key)
                if task is not None and task.who_wants:
                    owner.results.append((str(key), task.nbytes))

        scheduler.add_plugin(_Plugin(), name="dpsklearn-client-results")
        return self

    def __exit__(self, *exc_info):
        self.cluster.scheduler.remove_plugin(name="dpsklearn-client-results")
        return False
