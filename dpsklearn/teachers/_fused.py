"""The fused fast path for linear teachers.

When every teacher is a linear classifier (``coef_``, ``intercept_``:
:class:`~sklearn.linear_model.LogisticRegression`,
:class:`~sklearn.svm.LinearSVC`, :class:`~sklearn.linear_model.RidgeClassifier`,
:class:`~sklearn.linear_model.SGDClassifier`, ...) or a
:class:`~sklearn.pipeline.Pipeline` of affine scalers
(:class:`~sklearn.preprocessing.StandardScaler`,
:class:`~sklearn.preprocessing.MinMaxScaler`,
:class:`~sklearn.preprocessing.MaxAbsScaler`, without clipping) followed by
one, each teacher's decision function is an affine map of the query. A
Pipeline may also start with a :class:`~sklearn.compose.ColumnTransformer`
of :class:`~sklearn.preprocessing.OneHotEncoder`, those scalers,
``"passthrough"`` and ``"drop"`` (a DataFrame of string and numeric
columns): then each teacher is an affine map of one common encoding of the
query (:mod:`dpsklearn.teachers._fused_columns`). The
scalers are folded into the coefficients (``w . (a x + b) + c = (a w) . x +
(w . b + c)``) and the ``k`` teachers' coefficient rows are stacked, so one
matrix multiply per chunk of queries gives every teacher's scores. Votes
follow scikit-learn's :meth:`~sklearn.linear_model.LogisticRegression.predict`:
binary, ``classes_[int(score > 0)]`` (a score of exactly 0 votes for
``classes_[0]``); multiclass, ``classes_[argmax(scores)]`` (ties to the first).
Teachers' ``classes_`` are indices into the model's global ``classes_``
and :class:`~dpsklearn.teachers.ConstantTeacher` adds its
constant vote.

Identical votes. Folding changes the order of floating-point operations, so
a fused score can differ from the teacher's own by rounding. Each score gets
a forward error bound (Higham's ``gamma_n`` bound on dot products, with the
Cauchy-Schwarz inequality so that it costs one norm per query row)::

    |fused - own| <= tol * (||x||_2 ||a w||_2 + sum_j |b_j w_j| + |c|),
    tol = 4 (d + 4 + 2 n_scalers) * eps

(``eps`` the machine epsilon of the query's dtype; ``a, b`` the folded
scalers' absolute factors). Wherever the sign of a binary score, or the
order of a multiclass teacher's two top scores, lies within that bound, the
vote is recomputed by the teacher's own ``predict`` on those rows only. The
votes are therefore exactly the per-teacher path's (tested, ties at 0
included); the recomputation touches essentially only exact ties.

Memory: query chunks bound the score block to about ``2**17`` entries
(1 MB), so ``k = 10,000`` teachers on ``100,000`` queries never hold the
``10^9``-entry vote matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    StandardScaler,
)
from sklearn.utils.extmath import row_norms, safe_sparse_dot
from threadpoolctl import ThreadpoolController

from .._validation import is_frame, n_rows, take_rows
from ._fused_columns import ColumnEncoding, column_blocks
from ._sharding import ConstantTeacher

__all__ = ["FusedLinearEnsemble", "fused_ensemble", "why_not_fusable"]

# Entries of one (chunk_rows, n_score_columns) block of fused scores: 1 MB
# blocks stay in cache through the few passes over them (measured faster
# than larger blocks for k = 100 and k = 10,000 teachers).
_BLOCK_ENTRIES = 1 << 17

_CONTROLLER = None


def _single_threaded_blas():
    """Limit BLAS to one thread while voting (measured faster for these shapes:
    the thin per-chunk products gain nothing from threads, and oversubscribed
    BLAS threads stall under load)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


# A linear classifier is recognised by public attributes: coef_, intercept_,
# classes_, and a predict that is scikit-learn's linear-classifier predict
# (classes_[score > 0] or classes_[argmax(scores)]). The two predict functions
# are read off public classes: every linear classifier in scikit-learn
# (LogisticRegression, LinearSVC, SGDClassifier, Perceptron, ...) inherits the
# first, RidgeClassifier(CV) the second; a subclass that overrides predict is
# not fused.
_LINEAR_PREDICTS = (LogisticRegression.predict, RidgeClassifier.predict)


def _affine_of(step):
    """``(a, b, reason)``: the scaler as ``z = a * x + b`` (a None: not affine)."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return 1.0, 0.0, None
    if type(step) is FunctionTransformer and step.func is None:
        return 1.0, 0.0, None  # the identity (a ColumnTransformer's passthrough)
    if type(step) is StandardScaler:
        a = 1.0 if step.scale_ is None else 1.0 / np.asarray(step.scale_, float)
        b = (
            0.0
            if step.mean_ is None or not step.with_mean
            else (-np.asarray(step.mean_, float) * a)
        )
        return a, b, None
    if type(step) is MinMaxScaler:
        if step.clip:
            return None, None, "MinMaxScaler(clip=True) is not affine"
        return np.asarray(step.scale_, float), np.asarray(step.min_, float), None
    if type(step) is MaxAbsScaler:
        if getattr(step, "clip", False):
            return None, None, "MaxAbsScaler(clip=True) is not affine"
        return 1.0 / np.asarray(step.scale_, float), 0.0, None
    return None, None, f"{type(step).__name__} is not a supported affine scaler"


def _linear_parts(teacher):
    """Decompose a fitted teacher, or say why it cannot be fused.

    Returns ``(parts, reason)`` with ``parts = (classes, W, C, P, Q,
    n_steps, blocks)``: global class indices, folded coefficients
    ``(n_rows, d)`` and intercepts, the error-bound terms ``P = ||a w||_2``
    and ``Q = sum |b w| + |c|`` per row, the number of affine steps, and the
    blocks of a leading ColumnTransformer (None without one; then ``W`` is
    on the input columns, else on the transformer's output columns with its
    scalers folded in).
    """
    steps = []
    final = teacher
    front = None
    if isinstance(teacher, Pipeline):
        steps = [step for _, step in teacher.steps[:-1]]
        final = teacher.steps[-1][1]
        if steps and isinstance(steps[0], ColumnTransformer):
            front, steps = steps[0], steps[1:]
    if type(final).predict not in _LINEAR_PREDICTS or not hasattr(final, "coef_"):
        return None, f"{type(final).__name__} is not a linear classifier"
    # Teachers are fitted on 1-D class indices, so they are never multilabel.
    coef = final.coef_
    coef = coef.toarray() if sparse.issparse(coef) else np.asarray(coef, float)
    if coef.ndim == 1:
        coef = coef[None, :]
    classes = np.asarray(final.classes_)
    if classes.dtype.kind not in "iu":
        return None, "teacher classes are not class indices"
    n_rows = coef.shape[0]
    if not (n_rows == 1 and classes.size == 2) and n_rows != classes.size:
        return None, f"coef_ of shape {coef.shape} does not fit {classes.size} classes"
    intercept = np.broadcast_to(np.asarray(final.intercept_, float), (n_rows,))
    # Fold the scalers, first to last: z_i = a_i * z_{i-1} + b_i.
    scale = np.ones(coef.shape[1])  # A: product of the a's
    shift = np.zeros(coef.shape[1])  # composed b
    blocks = None
    if front is not None:
        # The column transformer's own scalers come first in the chain.
        blocks, reason = column_blocks(front, _affine_of)
        if reason is not None:
            return None, reason
        for block in blocks:
            if block.kind == "numeric":
                scale[block.output] = block.scale
                shift[block.output] = block.shift
    abs_shift = np.abs(shift)  # bound on |b| through the chain
    for step in steps:
        a, b, reason = _affine_of(step)
        if reason is not None:
            return None, reason
        scale = scale * a
        shift = shift * a + b
        abs_shift = abs_shift * np.abs(a) + np.abs(b)
    W = coef * scale
    C = coef @ shift + intercept
    P = np.sqrt(np.einsum("rj,rj->r", W, W))
    Q = np.abs(coef) @ abs_shift + np.abs(intercept)
    n_steps = len(steps) + (front is not None)
    return (classes.astype(np.int64), W, C, P, Q, n_steps, blocks), None


def why_not_fusable(teacher: Any) -> str | None:
    """Why ``teacher`` cannot take the fused path (``None`` when it can).

    Given a fitted teacher ensemble (a model with ``estimators_``), why its
    teachers do not take the fused path together, or ``None`` when they do.
    A model that reads probabilities rather than votes (soft labels) never
    takes it, even when its teachers could be fused, and says so.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from dpsklearn.teachers import why_not_fusable
    >>> why_not_fusable(DecisionTreeClassifier())
    'DecisionTreeClassifier is not a linear classifier'
    """
    if hasattr(teacher, "estimators_") and hasattr(teacher, "_fused_ensemble_"):
        if teacher._fused_ensemble_ is not None:
            return None
        if getattr(teacher, "fused", "auto") is False:
            return "fused=False"
        n_classes = len(getattr(teacher, "classes_", [0, 1]))
        reason = _fuse(teacher.estimators_, n_classes)[1]
        # Fusable teachers in a model that never built the vote path (it
        # reads probabilities): None would claim the fused path is taken.
        return reason or f"{type(teacher).__name__} does not count votes"
    if isinstance(teacher, ConstantTeacher):
        return None
    return _linear_parts(teacher)[1]


def fused_ensemble(
    teachers: Sequence[Any], n_classes: int
) -> FusedLinearEnsemble | None:
    """The fused ensemble of ``teachers``, or ``None`` if any cannot be fused.

    Parameters
    ----------
    teachers : list of fitted estimators
        Fitted on class indices into the global classes.
    n_classes : int

    Returns
    -------
    fused : FusedLinearEnsemble or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from dpsklearn.teachers import fused_ensemble
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> teachers = [LogisticRegression().fit(X, y) for _ in range(3)]
    >>> fused_ensemble(teachers, 2).vote_counts(X, teachers).tolist()
    [[3, 0], [3, 0], [0, 3], [0, 3]]
    """
    return _fuse(teachers, n_classes)[0]


def _fuse(teachers, n_classes):
    """``(fused ensemble, None)`` or ``(None, the reason)``."""
    constant = np.zeros(n_classes, dtype=np.int64)
    linear = []  # (teacher index, parts)
    for index, teacher in enumerate(teachers):
        if isinstance(teacher, ConstantTeacher):
            constant[teacher.class_index] += 1
            continue
        parts, reason = _linear_parts(teacher)
        if reason is not None:
            return None, reason
        linear.append((index, parts))
    encoding = None
    fronts = {parts[6] is None for _, parts in linear}
    if len(fronts) > 1:
        return None, "some teachers start with a ColumnTransformer and some do not"
    if linear and linear[0][1][6] is not None:
        front = teachers[linear[0][0]].steps[0][1]
        encoding, maps, reason = ColumnEncoding.build(
            [parts[6] for _, parts in linear],
            [index for index, _ in linear],
            getattr(front, "feature_names_in_", None),
        )
        if reason is not None:
            return None, reason
        lifted = []
        for (index, parts), columns in zip(linear, maps, strict=True):
            W = np.zeros((parts[1].shape[0], encoding.n_columns))
            W[:, columns] = parts[1]
            lifted.append((index, (parts[0], W, *parts[2:])))
        linear = lifted
    n_features = {parts[1].shape[1] for _, parts in linear}
    if len(n_features) > 1:
        return None, "the teachers disagree on n_features"
    return FusedLinearEnsemble(linear, constant, n_classes, encoding), None


class _Group:
    """Teachers with the same vote rule and width, whose columns are contiguous."""

    def __init__(self, kind, start, teacher_ids, classes):
        self.kind = kind  # "binary" or "multiclass"
        self.start = start
        self.teacher_ids = np.asarray(teacher_ids, dtype=np.int64)
        self.classes = classes  # (n_teachers, 2) or (n_teachers, width)
        self.width = 1 if kind == "binary" else classes.shape[1]
        self.stop = start + len(teacher_ids) * self.width


class FusedLinearEnsemble:
    """Stacked, scaler-folded coefficients of linear teachers.

    Built by :func:`fused_ensemble` at ``fit``; :meth:`vote_counts` gives the
    vote histogram of the whole ensemble with one matrix multiply per query
    chunk. The object holds public numbers derived from the teachers (it is
    as secret as they are) and is never modified after construction.

    Parameters
    ----------
    linear : list of (int, tuple)
        Teacher index and its folded parts (from ``_linear_parts``).
    constant : int ndarray of shape (n_classes,)
        Votes of constant teachers per class.
    n_classes : int
    encoding : ColumnEncoding, default=None
        The common encoding of teachers that start with a ColumnTransformer
        (their coefficients are on its columns).

    Attributes
    ----------
    n_columns : int
        Score columns stacked (one per binary teacher, one per class of a
        multiclass teacher).
    """

    def __init__(
        self,
        linear: Sequence[tuple[int, tuple]],
        constant: ArrayLike,
        n_classes: int,
        encoding: ColumnEncoding | None = None,
    ) -> None:
        self.encoding = encoding
        self.n_classes = int(n_classes)
        self.constant = np.asarray(constant, dtype=np.int64)
        self.n_linear = len(linear)
        # Group teachers by vote rule: binary by (negative, positive) class
        # pair, multiclass by width; stack each group's rows contiguously.
        buckets: dict[tuple, list[tuple[int, tuple]]] = {}
        for index, parts in linear:
            classes = parts[0]
            key: tuple
            if parts[1].shape[0] == 1:
                key = ("binary", int(classes[0]), int(classes[1]))
            else:
                key = ("multiclass", classes.size)
            buckets.setdefault(key, []).append((index, parts))
        self.groups = []
        W_rows, C_rows, P_rows, Q_rows = [], [], [], []
        n_steps = 0
        start = 0
        for key in sorted(buckets, key=str):
            members = buckets[key]
            ids = [index for index, _ in members]
            classes = np.stack([parts[0] for _, parts in members])
            group = _Group(key[0], start, ids, classes)
            self.groups.append(group)
            start = group.stop
            for _, (_, W, C, P, Q, steps, _) in members:
                W_rows.append(W)
                C_rows.append(C)
                P_rows.append(P)
                Q_rows.append(Q)
                n_steps = max(n_steps, steps)
        self.n_columns = start
        # None when every teacher is constant (no score column).
        self.coef: np.ndarray | None
        self.intercept: np.ndarray | None
        self._P: np.ndarray | None
        self._Q: np.ndarray | None
        if linear:
            self.n_features = W_rows[0].shape[1]
            self.coef = np.ascontiguousarray(np.concatenate(W_rows).T)  # (d, cols)
            self.intercept = np.concatenate(C_rows)
            self._P = np.concatenate(P_rows)
            self._Q = np.concatenate(Q_rows)
        else:
            self.n_features = None
            self.coef = self.intercept = self._P = self._Q = None
        self._n_steps = n_steps

    def _tolerance(self, dtype):
        eps = np.finfo(np.float64).eps
        if np.dtype(dtype).kind == "f":
            eps = max(eps, float(np.finfo(dtype).eps))
        d = self.n_features or 0
        return 4.0 * (d + 4 + 2 * self._n_steps) * eps

    def vote_counts(self, X: ArrayLike, teachers: Sequence[Any]) -> NDArray[np.int64]:
        """Vote counts ``(n_queries, n_classes)``, identical to the per-teacher path.

        Parameters
        ----------
        X : ndarray, DataFrame or sparse matrix of shape (n_queries, ...)
            Validated query rows.
        teachers : list of estimators
            The teachers this ensemble was built from (used only to
            recompute votes whose fused score is within rounding of a tie).

        Returns
        -------
        counts : int64 ndarray of shape (n_queries, n_classes)
        """
        n_queries = n_rows(X)
        counts = np.empty((n_queries, self.n_classes), dtype=np.int64)
        counts[:] = self.constant
        if self.n_linear == 0 or n_queries == 0:
            return counts
        rows_per_chunk = max(1, _BLOCK_ENTRIES // max(1, self.n_columns))
        with _single_threaded_blas():
            for start in range(0, n_queries, rows_per_chunk):
                stop = min(n_queries, start + rows_per_chunk)
                X_chunk = take_rows(X, slice(start, stop))  # as given: near ties
                X_float, dtype = self._encode(X_chunk, teachers)  # are redone on it
                scores = safe_sparse_dot(X_float, self.coef, dense_output=True)
                scores += self.intercept
                norms = row_norms(X_float)
                self._count_chunk(
                    scores,
                    norms,
                    self._tolerance(dtype),
                    counts[start:stop],
                    X_chunk,
                    teachers,
                )
        return counts

    def _encode(self, X_chunk, teachers):
        """The numbers the coefficients apply to, and the float dtype for the bound."""
        if self.encoding is None:
            if sparse.issparse(X_chunk):
                return X_chunk, X_chunk.dtype
            if is_frame(X_chunk):
                dtypes = [d for d in X_chunk.dtypes if np.dtype(d).kind == "f"]
                dtype = max(dtypes, key=lambda d: np.finfo(d).eps, default=np.float64)
            else:
                dtype = X_chunk.dtype
            return np.asarray(X_chunk, np.float64), dtype
        encoded, dtype = self.encoding.transform(X_chunk)
        rows, teacher_ids = self.encoding.unknown_to(encoded)
        for teacher_id in np.unique(teacher_ids):
            # A category unknown to a teacher that refuses unknowns: it
            # raises here, as on the per-teacher path.
            teachers[int(teacher_id)].predict(
                take_rows(X_chunk, rows[teacher_ids == teacher_id])
            )
        return encoded, dtype

    def _count_chunk(self, scores, norms, tol, counts, X_chunk, teachers):
        # Candidates for a rounding-sensitive vote, per (row, column): the
        # bound tol (|x| P + Q) with the largest P, Q of the block, then the
        # exact per-column bound on the few candidates.
        n_rows = scores.shape[0]
        # Score columns exist (the groups are theirs), so the bounds do too.
        P_all, Q_all = cast(np.ndarray, self._P), cast(np.ndarray, self._Q)
        fixes = []  # (rows, teacher ids, fused vote)
        for group in self.groups:
            block = scores[:, group.start : group.stop]
            P = P_all[group.start : group.stop]
            Q = Q_all[group.start : group.stop]
            row_bound = tol * (norms * P.max() + Q.max())
            if group.kind == "binary":
                negative, positive = group.classes[0]
                votes_positive = block > 0
                n_positive = np.count_nonzero(votes_positive, axis=1)
                counts[:, positive] += n_positive
                counts[:, negative] += block.shape[1] - n_positive
                np.abs(block, out=block)  # the scores are not needed any more
                near = block <= row_bound[:, None]
                if near.any():
                    rows, cols = np.nonzero(near)
                    exact = tol * (norms[rows] * P[cols] + Q[cols])
                    keep = block[rows, cols] <= exact
                    rows, cols = rows[keep], cols[keep]
                    fused_vote = np.where(
                        votes_positive[rows, cols], positive, negative
                    )
                    fixes.append((rows, group.teacher_ids[cols], fused_vote))
            else:
                width = group.width
                block = block.reshape(n_rows, -1, width)
                local = np.argmax(block, axis=2)
                votes = np.take_along_axis(
                    group.classes[None, :, :], local[:, :, None], axis=2
                )[:, :, 0]
                for class_index in np.unique(group.classes):
                    counts[:, class_index] += np.count_nonzero(
                        votes == class_index, axis=1
                    )
                top_two = np.partition(block, width - 2, axis=2)[:, :, width - 2 :]
                margin = top_two[:, :, 1] - top_two[:, :, 0]
                near = margin <= 2.0 * row_bound[:, None]
                if near.any():
                    rows, members = np.nonzero(near)
                    cols = members * width + np.arange(width)[:, None]
                    exact = tol * (
                        norms[rows] * P[cols].max(axis=0) + Q[cols].max(axis=0)
                    )
                    keep = margin[rows, members] <= 2.0 * exact
                    rows, members = rows[keep], members[keep]
                    fixes.append(
                        (rows, group.teacher_ids[members], votes[rows, members])
                    )
        for rows, teacher_ids, fused_vote in fixes:
            self._recompute(rows, teacher_ids, fused_vote, counts, X_chunk, teachers)

    @staticmethod
    def _recompute(rows, teacher_ids, fused_vote, counts, X_chunk, teachers):
        """Replace near-tie votes by the teacher's own ``predict`` on those rows."""
        if rows.size == 0:
            return
        order = np.argsort(teacher_ids, kind="stable")
        rows, teacher_ids = rows[order], teacher_ids[order]
        fused_vote = fused_vote[order]
        bounds = np.flatnonzero(np.r_[True, teacher_ids[1:] != teacher_ids[:-1], True])
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            teacher = teachers[int(teacher_ids[lo])]
            own = np.asarray(
                teacher.predict(take_rows(X_chunk, rows[lo:hi])), dtype=np.int64
            )
            changed = own != fused_vote[lo:hi]
            if changed.any():
                r = rows[lo:hi][changed]
                np.add.at(counts, (r, fused_vote[lo:hi][changed]), -1)
                np.add.at(counts, (r, own[changed]), 1)
