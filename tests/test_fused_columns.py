"""The fused vote path for teachers that start with a ColumnTransformer.

Votes through the common encoding are exactly the per-teacher path's, for
categories learned per shard or given, dropped categories, scalers inside
and after the column transformer, binary and multiclass teachers, DataFrame
and object-array input; a teacher whose encoder refuses unknown categories
raises on such a query as it does on the per-teacher path; anything else
falls back to the per-teacher path with the reason in ``why_not_fusable``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    StandardScaler,
)

from dpsklearn import SoftLabelPrivateRegressor, SubsampleAggregateClassifier
from dpsklearn.datasets import load_adult
from dpsklearn.teachers import why_not_fusable

pytestmark = pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning")

_TRAIN = load_adult(subset="train", as_frame=True)
_ROWS = np.random.default_rng(1).choice(len(_TRAIN.target), 2400, replace=False)
FRAME = _TRAIN.data.iloc[_ROWS].reset_index(drop=True)
CATEGORICAL = ["workclass", "education", "marital-status", "native-country"]
NUMERIC = ["age", "hours-per-week", "capital-gain"]
for _name in CATEGORICAL:
    FRAME[_name] = FRAME[_name].astype(str).astype(object)
FRAME = FRAME[CATEGORICAL + NUMERIC + ["race"]]
Y_BINARY = np.asarray(_TRAIN.target)[_ROWS].astype(str)
Y_MULTI = FRAME.pop("race").astype(str).to_numpy()  # 5 classes
X_TRAIN, X_QUERY = FRAME[:2000], FRAME[2000:]
Y_BINARY_TRAIN, Y_MULTI_TRAIN = Y_BINARY[:2000], Y_MULTI[:2000]


def teacher(encoder=None, numeric=None, after=(), final=None, remainder="drop"):
    encoder = OneHotEncoder(handle_unknown="ignore") if encoder is None else encoder
    numeric = StandardScaler() if numeric is None else numeric
    columns = ColumnTransformer(
        [("categorical", encoder, CATEGORICAL), ("numeric", numeric, NUMERIC[:2])],
        remainder=remainder,
    )
    final = LogisticRegression(solver="liblinear") if final is None else final
    return make_pipeline(columns, *after, final)


def _pair(base, y, *, classes=None):
    """The same ensemble fused and per teacher (same teachers: same random_state).

    The fused path is automatic (0.2 dropped ``fused=``); the second model has
    it removed after fitting, so every one of its teachers predicts.
    """
    models = []
    for _ in range(2):
        model = SubsampleAggregateClassifier(
            base,
            n_estimators=20,
            mechanism="sparse_vector",
            classes=classes,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(model.fit(X_TRAIN, y))
    models[1]._fused_ensemble_ = None
    return models


CONFIGURATIONS = {
    "learned categories": dict(),
    "given categories": dict(
        encoder=OneHotEncoder(
            categories=[sorted(set(FRAME[c])) for c in CATEGORICAL],
            handle_unknown="ignore",
        )
    ),
    "drop if binary": dict(
        encoder=OneHotEncoder(drop="if_binary", handle_unknown="ignore")
    ),
    "min-max, then max-abs after": dict(
        numeric=MinMaxScaler(), after=(MaxAbsScaler(),), remainder="passthrough"
    ),
    "scaler pipeline in the transformer": dict(
        numeric=make_pipeline(StandardScaler(), MaxAbsScaler())
    ),
    "ridge classifier": dict(final=RidgeClassifier()),
    "dense encoder, float32": dict(
        encoder=OneHotEncoder(
            handle_unknown="ignore", sparse_output=False, dtype=np.float32
        )
    ),
}


@pytest.mark.parametrize("target", ["binary", "multiclass"])
@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_fused_votes_are_the_per_teacher_votes(name, target):
    y = Y_BINARY_TRAIN if target == "binary" else Y_MULTI_TRAIN
    configuration = dict(CONFIGURATIONS[name])
    if target == "multiclass" and "final" not in configuration:
        configuration["final"] = LogisticRegression(max_iter=200)  # multinomial
    fused, plain = _pair(teacher(**configuration), y)
    assert fused._fused_ensemble_ is not None, why_not_fusable(fused)
    assert why_not_fusable(fused) is None
    assert plain._fused_ensemble_ is None
    np.testing.assert_array_equal(
        fused._vote_counts(X_QUERY), plain._vote_counts(X_QUERY)
    )


def test_fused_votes_on_an_object_array_by_column_position():
    X = X_TRAIN.to_numpy(dtype=object)
    base = make_pipeline(
        ColumnTransformer(
            [
                ("categorical", OneHotEncoder(handle_unknown="ignore"), [0, 1, 2, 3]),
                ("numeric", StandardScaler(), [4, 5]),
            ]
        ),
        LogisticRegression(solver="liblinear"),
    )
    models = [
        SubsampleAggregateClassifier(
            base,
            n_estimators=20,
            mechanism="sparse_vector",
            classes=["<=50K", ">50K"],
            random_state=0,
        ).fit(X, Y_BINARY_TRAIN)
        for _ in range(2)
    ]
    assert models[0]._fused_ensemble_ is not None
    models[1]._fused_ensemble_ = None  # per teacher
    Q = X_QUERY.to_numpy(dtype=object)
    np.testing.assert_array_equal(models[0]._vote_counts(Q), models[1]._vote_counts(Q))


def test_a_category_unknown_to_a_refusing_teacher_raises_as_per_teacher():
    refusing = teacher(encoder=OneHotEncoder(handle_unknown="error"))
    fused, plain = _pair(refusing, Y_BINARY_TRAIN)
    assert fused._fused_ensemble_ is not None
    # Frequent categories, which every shard of 100 rows saw: identical
    # votes, no error.
    common = X_QUERY[
        (X_QUERY["native-country"] == "United-States")
        & (X_QUERY["workclass"] == "Private")
        & X_QUERY["education"].isin(["HS-grad", "Bachelors", "Some-college"])
        & X_QUERY["marital-status"].isin(["Married-civ-spouse", "Never-married"])
    ]
    assert len(common) >= 50
    np.testing.assert_array_equal(
        fused._vote_counts(common), plain._vote_counts(common)
    )
    unseen = X_QUERY[:5].copy()
    unseen.iloc[2, 0] = "Space-Agency"
    for model in (fused, plain):
        with pytest.raises(ValueError, match="unknown categor"):
            model._vote_counts(unseen)


def test_an_unsupported_step_falls_back_with_the_reason():
    base = make_pipeline(
        ColumnTransformer(
            [
                ("categorical", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
                ("numeric", SimpleImputer(), NUMERIC),
            ]
        ),
        LogisticRegression(solver="liblinear"),
    )
    fused, plain = _pair(base, Y_BINARY_TRAIN)
    assert fused._fused_ensemble_ is None
    reason = why_not_fusable(fused)
    assert "SimpleImputer is not a supported affine scaler" in reason
    assert why_not_fusable(fused.estimators_[0]) == reason
    np.testing.assert_array_equal(
        fused._vote_counts(X_QUERY), plain._vote_counts(X_QUERY)
    )


def test_infrequent_categories_are_not_fused():
    base = teacher(encoder=OneHotEncoder(handle_unknown="ignore", min_frequency=5))
    fused, _ = _pair(base, Y_BINARY_TRAIN)
    assert fused._fused_ensemble_ is None
    assert "infrequent" in why_not_fusable(fused)


def test_an_estimator_that_reads_no_votes_says_so():
    # Soft labels average the teachers' probabilities: fusable teachers, but
    # the model never builds the vote path, and why_not_fusable says why
    # rather than answering None ("fused").
    model = SoftLabelPrivateRegressor(
        teacher(), epsilon=1.0, delta=1e-5, n_estimators=20, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_TRAIN, (Y_BINARY_TRAIN == ">50K").astype(int))
    assert model.soft_label_method_ == "predict_proba"
    assert model._fused_ensemble_ is None
    assert why_not_fusable(model.estimators_[0]) is None
    assert why_not_fusable(model) == "SoftLabelPrivateRegressor does not count votes"
