"""Test-only factories that several test modules share.

* :data:`STUMP` -- the default cheap teacher: a depth-1 decision tree
  separates the test data sets and fits about 20 times faster than
  ``LogisticRegression`` (the default estimator is exercised by the tests
  that leave it unset).
* :func:`two_blobs` -- two well-separated Gaussian blobs, the data on which
  every teacher agrees.
* :func:`fit_quietly` -- ``fit`` with one warning category silenced.
* :class:`AuditTable` and :func:`assert_private` -- the privacy audits'
  summary table (printed after the module's tests) and their pass rule.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.tree import DecisionTreeClassifier

STUMP = DecisionTreeClassifier(max_depth=1)


def two_blobs(n=400, seed=0, centre=5.0):
    """Two blobs of ``n`` rows centred at ``(-centre, -centre)`` and
    ``(centre, centre)`` with unit spread; labels 0 and 1."""
    return make_blobs(
        n_samples=n,
        centers=[[-centre, -centre], [centre, centre]],
        cluster_std=1.0,
        random_state=seed,
    )


def fit_quietly(model, X, y, category=Warning):
    """``model.fit(X, y)`` with warnings of ``category`` ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        return model.fit(X, y)


# -- privacy audits -------------------------------------------------------------

AUDIT_HEADER = (
    "mechanism",
    "neighbours",
    "runs/side",
    "claimed",
    "eps_lower",
    "eps_hat",
    "exact",
    "verdict",
)


class AuditTable:
    """The rows an audit module records, printed as one table after its tests.

    Each row has the cells of :data:`AUDIT_HEADER`, already formatted.
    :meth:`fixture` makes the module-scoped autouse fixture that prints the
    table (with the module's wall time) in pytest's terminal summary.
    """

    def __init__(self, title, footnote):
        self.title = title
        self.footnote = footnote
        self.rows: list[tuple] = []

    def add(self, *cells):
        assert len(cells) == len(AUDIT_HEADER), cells
        self.rows.append(tuple(str(cell) for cell in cells))

    def record(self, mechanism, neighbours, result, claimed, exact=None):
        """Add the row of one :class:`~dpsklearn.audit.AuditResult`."""
        self.add(
            mechanism,
            neighbours,
            f"{result.n_runs + result.n_selection_runs:,}",
            f"{claimed:.4g}",
            f"{result.epsilon_lower:.3f}",
            f"{result.epsilon_hat:.3f}",
            "" if exact is None else f"{exact:.3f}",
            "LEAK CAUGHT" if result.epsilon_lower > claimed else "ok",
        )

    def lines(self):
        rows = [AUDIT_HEADER, *self.rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(AUDIT_HEADER))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True))
            for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.append(self.footnote)
        return lines

    def fixture(self):
        table = self

        @pytest.fixture(scope="module", autouse=True)
        def _audit_table(request):
            start = time.perf_counter()
            yield
            if not table.rows:
                return
            lines = table.lines()
            lines.append(f"audit module wall time {time.perf_counter() - start:.1f} s")
            plugins = request.config.pluginmanager
            reporter = plugins.get_plugin("terminalreporter")
            capture = plugins.get_plugin("capturemanager")
            if reporter is None or capture is None:  # pragma: no cover
                print("\n".join(lines))
                return
            with capture.global_and_fixture_disabled():
                reporter.write_line("")
                reporter.write_sep("-", table.title)
                for line in lines:
                    reporter.write_line(line)

        return _audit_table


def assert_private(result, claimed):
    """No evidence of a leak, and enough power that a 2x bug would show."""
    assert result.epsilon_lower <= claimed, (
        f"audit found a leak: {result} (claimed {claimed})"
    )
    assert result.epsilon_lower >= 0.5 * claimed, (
        f"audit lacks power: {result} (claimed {claimed})"
    )


#: AdaSSP's worst-case neighbours (``docs/regression.rst``): two unit rows
#: ``e1, e2`` against ``e2, e2`` (row 1 replaced by an orthogonal one), so
#: the Gram matrix moves by ``diag(-1, 1)`` (upper-triangle norm ``sqrt(2)``,
#: its sensitivity) and its smallest eigenvalue from 1 to 0 (sensitivity 1).
#: The labels are 0, so the moment vector does not move.
SSP_NEIGHBOUR_ROWS = (
    np.eye(2),
    np.array([[0.0, 1.0], [0.0, 1.0]]),
)


def ssp_neighbour_statistics(nb):
    """``(Phi^T Phi, Phi^T y, lambda_min)`` of neighbour ``nb`` (0 or 1)."""
    rows = SSP_NEIGHBOUR_ROWS[nb]
    gram = rows.T @ rows
    return gram, np.zeros(2), float(np.linalg.eigvalsh(gram)[0])


def gaussian_threshold(mu, delta, n_runs, confidence=0.95):
    """The threshold on N(0,1) vs N(mu,1) with the most expected audit power.

    The lower bound an audit at ``confidence`` (Bonferroni over both
    directions) can certify from ``n_runs`` runs per side, maximised over
    thresholds ``t`` on a grid of 0..8.
    """
    from scipy import stats

    z = stats.norm.isf((1 - confidence) / 4)
    best, best_t = -np.inf, 0.0
    for t in np.linspace(0, 8, 801):
        a, b = stats.norm.sf(t - mu), stats.norm.sf(t)
        lower = a - z * math.sqrt(a * (1 - a) / n_runs) - delta
        upper = b + z * math.sqrt(b * (1 - b) / n_runs)
        if lower > 0 and math.log(lower / upper) > best:
            best, best_t = math.log(lower / upper), t
    return best_t


def ssp_projection(stages):
    """The Neyman-Pearson statistic of AdaSSP stages on the neighbours above.

    ``stages``: the calibrated releases (each with ``noise_std``). The
    statistic whitens each stage's released Gram matrix and eigenvalue
    shift and projects it onto the neighbours' difference, summed over
    the stages; it is N(0, 1) on neighbour 0 and N(mu, 1) on neighbour 1.
    Returns ``(statistic, mu)``; ``statistic`` takes one release per stage.
    """
    (g0, _, l0), (g1, _, l1) = (ssp_neighbour_statistics(nb) for nb in (0, 1))
    upper = np.triu_indices(2)
    d_gram, d_eig = (g1 - g0)[upper], l1 - l0
    weights = [(stage.noise_std[0], stage.noise_std[2]) for stage in stages]
    mu = math.sqrt(
        sum(d_gram @ d_gram / sg**2 + d_eig**2 / se**2 for sg, se in weights)
    )

    def statistic(released):
        z = 0.0
        for stats, (sg, se) in zip(released, weights, strict=True):
            z += (stats.gram[upper] - g0[upper]) @ d_gram / sg**2
            z += (stats.lambda_min - l0) * d_eig / se**2
        return z / mu

    return statistic, mu


def ssp_runs(stages, statistic):
    """An audit's ``run(nb, n, rng)``: every stage released on neighbour ``nb``."""

    def run(nb, n, rng):
        gram, moment, low = ssp_neighbour_statistics(nb)
        return np.array(
            [
                statistic([stage.release(gram, moment, low, [rng]) for stage in stages])
                for _ in range(n)
            ]
        )

    return run
