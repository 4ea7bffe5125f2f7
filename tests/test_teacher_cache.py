"""Teachers reused across fits that differ only in privacy parameters.

A fit with an integer ``random_state`` whose rows, base estimator, number of
teachers and classes were fitted before gets the same teachers instead of
fitting them again; the reused teachers must be exactly those of a fresh fit
(so nothing released changes), and anything else must miss
(``dpsklearn.teachers._cache``; docs/cluster.rst, "Teachers reused across a
search"; speed in benchmarks/teacher_inference.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier

import dpsklearn
import dpsklearn.teachers._ensemble as ensemble
from dpsklearn import (
    PrivatePredictionClassifier,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.teachers import clear_teacher_cache, ensemble_key

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpsklearn.PrivacyLeakWarning", "ignore::UserWarning"
)


@pytest.fixture(autouse=True)
def empty_cache():
    clear_teacher_cache()
    with dpsklearn.config_context(teacher_cache="memory"):
        yield
    clear_teacher_cache()


@pytest.fixture
def fits(monkeypatch):
    """Count the teacher ensembles actually fitted."""
    counter = {"n": 0}
    original = ensemble.fit_teachers

    def counting(*args, **kwargs):
        counter["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(ensemble, "fit_teachers", counting)
    return counter


def _data(n=900, seed=0):
    X, y = make_classification(
        n_samples=n + 300,
        n_features=8,
        n_informative=5,
        flip_y=0.05,
        random_state=seed,
    )
    return X[:n], y[:n], X[n:]


def _model(**params):
    defaults = dict(
        estimator=DecisionTreeClassifier(max_depth=4, max_features=3),
        n_estimators=30,
        classes=[0, 1],
        epsilon=2.0,
        max_queries=300,
        random_state=0,
        noise_random_state=1,
    )
    defaults.update(params)
    return PrivatePredictionClassifier(**defaults)


def _same_state(a, b):
    """Equal fitted state: same types, parameters, arrays (values and dtypes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(
            _same_state(s, t) for s, t in zip(a, b, strict=True)
        )
    if a is None or isinstance(a, (str, bytes, int, float, np.generic, np.dtype)):
        return a == b
    if isinstance(a, type) or callable(a) and not hasattr(a, "__dict__"):
        return a is b
    # Any other object by what pickle would store of it (its state).
    reduced_a, reduced_b = a.__reduce_ex__(4), b.__reduce_ex__(4)
    return reduced_a[0] is reduced_b[0] and _same_state(
        list(reduced_a[1:3]), list(reduced_b[1:3])
    )


def _same_teachers(a, b):
    # Pickles are not compared: an array loaded from disk is a view (another
    # pickle) of equal content.
    return len(a) == len(b) and all(
        _same_state(s, t) for s, t in zip(a, b, strict=True)
    )


def test_privacy_parameters_reuse_the_teachers_of_a_fresh_fit(fits):
    X, y, Xq = _data()
    first = _model(epsilon=1.0).fit(X, y)
    second = _model(epsilon=8.0, max_queries=100, delta=1e-6).fit(X, y)
    assert fits["n"] == 1  # the second fit reused the teachers
    assert all(
        s is t for s, t in zip(first.estimators_, second.estimators_, strict=True)
    )
    with dpsklearn.config_context(teacher_cache=None):
        fresh = _model(epsilon=8.0, max_queries=100, delta=1e-6).fit(X, y)
    assert fits["n"] == 2
    assert _same_teachers(second.estimators_, fresh.estimators_)
    # Same teachers and the same noise seed: the same answers.
    np.testing.assert_array_equal(second.predict(Xq[:100]), fresh.predict(Xq[:100]))
    # A mechanism's own options are privacy parameters too.
    _model(mechanism="gnmax", delta=1e-5).fit(X, y)
    assert fits["n"] == 2
    # The comparison has teeth: other seeds give other teachers.
    other = _model(random_state=1).fit(X, y)
    assert not _same_teachers(other.estimators_, fresh.estimators_)


def test_anything_the_teachers_depend_on_misses(fits):
    X, y, _ = _data()
    _model().fit(X, y)
    changed_row = X.copy()
    changed_row[17, 3] += 1e-9
    flipped = y.copy()
    flipped[5] = 1 - flipped[5]
    variants = [
        (_model(), changed_row, y),
        (_model(), X, flipped),
        (_model(n_estimators=31), X, y),
        (_model(random_state=1), X, y),
        (_model(estimator=DecisionTreeClassifier(max_depth=5, max_features=3)), X, y),
        (_model(classes=[0, 1, 2]), X, y),
        (_model(), X.astype(np.float32), y),  # equal values, other bytes: a miss
    ]
    for count, (model, X_fit, y_fit) in enumerate(variants, start=2):
        model.fit(X_fit, y_fit)
        assert fits["n"] == count, count


def test_no_reuse_without_an_integer_random_state(fits):
    X, y, _ = _data()
    for random_state in (None, np.random.RandomState(0)):
        _model(random_state=random_state).fit(X, y)
        _model(random_state=random_state).fit(X, y)
    assert fits["n"] == 4
    assert ensemble_key(DecisionTreeClassifier(), X, y, 3, None, 2) is None
    assert ensemble_key(DecisionTreeClassifier(), X, y, 3, True, 2) is None


def test_cache_off_and_clear(fits):
    X, y, _ = _data()
    with dpsklearn.config_context(teacher_cache=None):
        _model().fit(X, y)
        _model().fit(X, y)
    assert fits["n"] == 2
    _model().fit(X, y)
    _model().fit(X, y)
    assert fits["n"] == 3
    clear_teacher_cache()
    _model().fit(X, y)
    assert fits["n"] == 4


def test_memory_cache_is_bounded(fits):
    import dpsklearn.teachers._cache as cache

    X, y, _ = _data()
    capacity = cache._CAPACITY
    for seed in range(capacity + 1):
        _model(random_state=seed).fit(X, y)
    assert fits["n"] == capacity + 1
    _model(random_state=capacity).fit(X, y)  # the newest: kept
    assert fits["n"] == capacity + 1
    _model(random_state=0).fit(X, y)  # the oldest: dropped
    assert fits["n"] == capacity + 2


def test_disk_cache_survives_the_memory_cache(fits, tmp_path):
    X, y, Xq = _data()
    with dpsklearn.config_context(teacher_cache=tmp_path / "teachers"):
        first = _model().fit(X, y)
        clear_teacher_cache()  # as in another process
        second = _model(epsilon=5.0).fit(X, y)
    assert fits["n"] == 1
    assert any((tmp_path / "teachers").rglob("*.pkl"))
    assert _same_teachers(first.estimators_, second.estimators_)
    assert not any(
        s is t for s, t in zip(first.estimators_, second.estimators_, strict=True)
    )


def test_bad_setting_is_refused():
    with pytest.raises(ValueError, match="teacher_cache"):
        dpsklearn.set_config(teacher_cache=3)
    with pytest.raises(ValueError, match="teacher_cache"):
        with dpsklearn.config_context(teacher_cache=object()):
            pass
    assert dpsklearn.get_config()["teacher_cache"] == "memory"


def test_vote_counts_of_a_batch_are_reused_and_equal(monkeypatch):
    X, y, Xq = _data()
    model = _model().fit(X, y)
    calls = {"n": 0}
    for teacher in model.estimators_:
        original = teacher.predict

        def counting(X_query, original=original):
            calls["n"] += 1
            return original(X_query)

        monkeypatch.setattr(teacher, "predict", counting, raising=False)
    first = model._vote_counts(Xq)
    assert calls["n"] == 30
    again = _model(epsilon=9.0).fit(X, y)._vote_counts(Xq.copy())  # equal rows
    assert calls["n"] == 30
    np.testing.assert_array_equal(again, first)
    model._vote_counts(Xq[:-1])  # other rows: counted
    assert calls["n"] == 60
    # A list that is not the cached ensemble is always counted.
    model.estimators_ = list(model.estimators_[:-1]) + [model.estimators_[-1]]
    model.estimators_.reverse()
    model._vote_counts(Xq)
    assert calls["n"] == 90


def test_grid_search_over_epsilon_fits_each_fold_once(fits):
    X, y, _ = _data(n=600)
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    grid = {"epsilon": [0.5, 1.0, 2.0, 4.0, 8.0]}

    def search():
        model = SubsampleAggregateClassifier(
            DecisionTreeClassifier(max_depth=3),
            n_estimators=20,
            classes=[0, 1],
            mechanism=SparseVector(max_unstable=200, fallback="noisy_max"),
            random_state=0,
            noise_random_state=2,
        )
        return GridSearchCV(model, grid, cv=folds, error_score="raise").fit(X, y)

    cached = search()
    assert fits["n"] == 3 + 1  # one ensemble per fold, and the refit
    with dpsklearn.config_context(teacher_cache=None):
        fresh = search()
    assert fits["n"] == 4 + 5 * 3 + 1
    for key in ("mean_test_score", "split0_test_score", "split2_test_score"):
        np.testing.assert_array_equal(cached.cv_results_[key], fresh.cv_results_[key])


def test_fused_vote_path_is_built_once(fits):
    from sklearn.linear_model import LogisticRegression

    X, y, Xq = _data()
    first = _model(estimator=LogisticRegression()).fit(X, y)
    second = _model(estimator=LogisticRegression(), epsilon=7.0).fit(X, y)
    assert fits["n"] == 1
    assert first._fused_ensemble_ is not None
    assert second._fused_ensemble_ is first._fused_ensemble_
    with dpsklearn.config_context(teacher_cache=None):
        fresh = _model(estimator=LogisticRegression(), epsilon=7.0).fit(X, y)
    np.testing.assert_array_equal(second._vote_counts(Xq), fresh._vote_counts(Xq))


def test_memory_cache_is_bounded_in_bytes(fits, monkeypatch):
    import dpsklearn.teachers._cache as cache

    X, y, _ = _data()
    _model().fit(X, y)
    (entry,) = cache._MEMORY.values()
    assert entry.nbytes > 0  # the trees' arrays are counted
    monkeypatch.setattr(cache, "_MAX_BYTES", int(1.5 * entry.nbytes))
    _model(random_state=1).fit(X, y)  # two would exceed the bound
    assert len(cache._MEMORY) == 1
    _model(random_state=1).fit(X, y)  # the newest stays
    assert fits["n"] == 2
    monkeypatch.setattr(cache, "_MAX_BYTES", entry.nbytes // 2)
    _model(random_state=2).fit(X, y)  # larger than the bound: never kept
    _model(random_state=2).fit(X, y)
    assert fits["n"] == 4
