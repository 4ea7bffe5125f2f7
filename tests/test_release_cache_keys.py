"""The release cache keys any row exactly: no row ever gets another row's answer.

Checked against a plain reference (a dict from each row's exact content to
the first answer released for it) on DataFrame rows of mixed dtypes, pandas
categoricals and strings, canonical sparse rows, documents, and the edge
cases a hash or a float conversion would merge: ``1`` vs ``1.0`` vs ``True``
vs ``"1"`` in an object column, integers beyond ``2**53``, strings that
differ by a trailing NUL, sparse rows with explicit zeros or duplicates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsklearn.serving import ReleaseCache, row_keys


def _serve(cache, X, counter):
    """Answer ``X``; a new row's answer is a fresh number from ``counter``."""

    def compute(rows):
        start = counter[0]
        counter[0] += len(rows)
        return {"answer": np.arange(start, start + len(rows))}, len(rows)

    out, n_answered, n_new = cache.serve(row_keys(X), len(rows_of(X)), compute)
    assert n_answered == len(rows_of(X))
    return out["answer"], n_new


def rows_of(X):
    if sp.issparse(X):
        canonical = sp.csr_matrix(X, copy=True)
        canonical.sum_duplicates()
        canonical.eliminate_zeros()
        return [
            (tuple(canonical[i].indices.tolist()), tuple(canonical[i].data.tolist()))
            for i in range(canonical.shape[0])
        ]
    if isinstance(X, pd.DataFrame):
        return [
            tuple((type(v).__name__, v) for v in row)
            for row in X.astype(object).itertuples(index=False)
        ]
    return [(type(v).__name__, v) for v in list(X)]


def _check_against_reference(batches):
    """Every row's answer is the first released for an equal row; new rows paid."""
    cache = ReleaseCache({"answer": (np.int64, ())})
    reference = {}
    counter = [0]
    for X in batches:
        answers, n_new = _serve(cache, X, counter)
        keys = rows_of(X)
        expected_new = len({k for k in keys if k not in reference})
        assert n_new == expected_new
        for key, answer in zip(keys, answers, strict=True):
            assert reference.setdefault(key, answer) == answer


def test_object_values_of_different_kinds_never_share_a_key():
    X = np.array([1, 1.0, True, "1", b"1", None, "a", "a\x00"], dtype=object)
    cache = ReleaseCache({"answer": (np.int64, ())})
    answers, n_new = _serve(cache, X, [0])
    assert n_new == len(X)
    assert len(set(answers.tolist())) == len(X)
    again, n_new = _serve(cache, X[::-1].copy(), [100])
    assert n_new == 0
    np.testing.assert_array_equal(again, answers[::-1])


def test_integers_beyond_float_precision_keep_their_own_keys():
    big = 2**53
    X = np.array([[big], [big + 1], [big + 2]], dtype=np.int64)
    assert float(X[0, 0]) == float(X[1, 0])  # float64 would merge them
    answers, n_new = _serve(ReleaseCache({"answer": (np.int64, ())}), X, [0])
    assert n_new == 3


def test_numbers_compare_by_value():
    cache = ReleaseCache({"answer": (np.int64, ())})
    first, _ = _serve(cache, np.array([[1.0, -0.0], [np.nan, 2.0]]), [0])
    # int 1 is 1.0; -0.0 is 0.0; every NaN is NaN: all hits.
    again, n_new = _serve(cache, np.array([[np.nan, 2.0], [1.0, 0.0]]), [10])
    assert n_new == 0
    np.testing.assert_array_equal(again, first[::-1])
    ints, n_new = _serve(cache, np.array([[1, 0]]), [20])
    assert n_new == 0 and ints[0] == first[0]


def test_dataframe_rows_of_mixed_dtypes():
    frame = pd.DataFrame(
        {
            "city": ["Oslo", "Lima", "Oslo", "Lima", "Oslo"],
            "age": [31, 47, 31, 47, 31],
            "score": [0.5, 0.5, 0.5, 0.25, 0.5],
            "kind": pd.Categorical(["a", "b", "a", "b", "b"]),
        }
    )
    cache = ReleaseCache({"answer": (np.int64, ())})
    answers, n_new = _serve(cache, frame, [0])
    # Rows 0 and 2 are equal; the others differ in one cell each.
    assert n_new == 4
    assert answers[0] == answers[2]
    assert len({answers[i] for i in (0, 1, 3, 4)}) == 4
    # The same rows with the category column as plain strings: same keys.
    plain = frame.assign(kind=frame["kind"].astype(str).astype(object))
    again, n_new = _serve(cache, plain, [100])
    assert n_new == 0
    np.testing.assert_array_equal(again, answers)


def test_canonical_sparse_rows():
    dense = np.array(
        [[0.0, 2.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0], [1.0, 2.0, 0.0]]
    )
    cache = ReleaseCache({"answer": (np.int64, ())})
    answers, n_new = _serve(cache, sp.csr_matrix(dense), [0])
    assert n_new == 4  # same value at another column is another row
    # CSC; an explicit zero; a duplicated entry summing to the value.
    odd = sp.csr_matrix(
        (np.array([1.0, 1.0, 0.0, 1.0, 2.0]), np.array([1, 1, 0, 0, 1]), [0, 3, 3, 5]),
        shape=(3, 3),
    )
    again, n_new = _serve(cache, odd, [100])
    assert n_new == 0
    np.testing.assert_array_equal(again, answers[[0, 2, 3]])
    csc, n_new = _serve(cache, sp.csc_matrix(dense), [200])
    assert n_new == 0
    np.testing.assert_array_equal(csc, answers)


def test_documents():
    docs = ["good tea", "good tea ", "Good tea", "good tea"]
    answers, n_new = _serve(ReleaseCache({"answer": (np.int64, ())}), docs, [0])
    assert n_new == 3 and answers[0] == answers[3]


_cell = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan]),
    st.sampled_from(["", "a", "b", "a\x00", "1"]),
    st.booleans(),
    st.none(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_cell, min_size=1, max_size=12), min_size=1, max_size=4))
def test_object_rows_match_the_reference(batches):
    def canonical(v):  # the reference's notion of one value
        if isinstance(v, float) and v != v:
            return ("nan",)
        if isinstance(v, float) and v == 0:
            return ("float", 0.0)
        return (type(v).__name__, v)

    cache = ReleaseCache({"answer": (np.int64, ())})
    reference, counter = {}, [0]
    for batch in batches:
        X = np.array(batch + [None], dtype=object)[:-1]  # keep object dtype
        answers, n_new = _serve(cache, X, counter)
        keys = [canonical(v) for v in batch]
        assert n_new == len({k for k in keys if k not in reference})
        for key, answer in zip(keys, answers, strict=True):
            assert reference.setdefault(key, answer) == answer


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 4), st.sampled_from([-1.0, 0.0, 0.5, 2.0])),
            max_size=4,
        ),
        min_size=1,
        max_size=10,
    ),
    st.booleans(),
)
def test_sparse_rows_match_the_reference(rows, as_csc):
    data, indices, indptr = [], [], [0]
    for row in rows:
        for column, value in row:
            indices.append(column)
            data.append(value)
        indptr.append(len(indices))
    X = sp.csr_matrix((data, indices, indptr), shape=(len(rows), 5))
    if as_csc:
        X = X.tocsc()
    _check_against_reference([X, X[::-1]])


@pytest.mark.parametrize("n_affordable", [0, 2, 5])
def test_a_partial_batch_is_a_prefix(n_affordable):
    cache = ReleaseCache({"answer": (np.int64, ())})
    docs = np.array(["a", "b", "a", "c", "d", "b", "e"], dtype=object)

    def compute(rows):
        return {"answer": np.asarray(rows)}, len(rows)

    out, n_answered, n_new = cache.serve(row_keys(docs), n_affordable, compute)
    assert n_new == min(n_affordable, 5)
    # The longest prefix whose new rows were paid for.
    expected = {0: 0, 2: 3, 5: 7}[n_affordable]
    assert n_answered == expected
    assert out["answer"].tolist() == [0, 1, 0, 3, 4, 1, 6][:expected]
