"""
Tune privately: a grid search inside one (epsilon, delta)
=========================================================

Choosing a configuration on private rows looks at those rows too: a
``GridSearchCV`` over a private estimator scores every candidate with the
true labels of private validation rows, so its choice, its
``cv_results_`` and the model it refits are **outside** any guarantee (and
every candidate's fit spends budget that nobody accounts for).

:class:`~dpsklearn.model_selection.PrivateGridSearch` tunes inside one
stated ``(epsilon, delta)`` instead (Papernot and Steinke 2022): a secret,
random number of runs, each fitting one configuration drawn from the grid
at a per-candidate budget and scoring it on held-out private rows with a
noisy count; only the best run is released, with its noisy score. The
search, the chosen model and its score together are ``(epsilon,
delta)``-DP. Candidates must be publishable once fitted; here a
:class:`~dpsklearn.KnowledgeTransferClassifier`, the model of
:ref:`sphx_glr_auto_examples_plot_publish_student.py`.

The chosen model's test accuracy stands beside the base rate, the chosen
teachers' **non-private** majority vote, a **non-private** model on all
private rows, and the pick of a ``GridSearchCV`` on the private rows.

Sizes, shrunk for the documentation build: a grid of two configurations
(the number of teachers ``k``), 500 public rows, and the pre-encoded Adult
array instead of the DataFrame of the student example (its teachers fit
several times faster). ``benchmarks/private_search.py`` runs a larger grid
over many seeds. The example prints its run time at the end.
"""

# %%
# Private rows, public rows, test rows
# ------------------------------------
# The Adult training file (32,561 rows) is private; the search holds out a
# fifth of it (``validation_fraction=0.2``) to score candidates, privately.
# The test file is split once at random: 500 public rows that the teacher
# labels for the student, and the rest, test rows looked at once at the
# end. Categorical columns are one-hot encoded with their public category
# lists (:func:`dpsklearn.demo.adult_encoder`: nothing learned from rows);
# each teacher scales its own shard.

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpsklearn import KnowledgeTransferClassifier, PrivatePredictionClassifier
from dpsklearn.baselines import base_rate, teacher_majority_vote
from dpsklearn.datasets import load_adult
from dpsklearn.demo import adult_encoder, teacher_estimator
from dpsklearn.model_selection import PrivateGridSearch

warnings.filterwarnings("ignore", message="noise_random_state is set")
start = time.perf_counter()

train, test = load_adult(), load_adult(subset="test")
encoder = adult_encoder(train).fit(train.data)  # public category lists only
X_private, y_private = encoder.transform(train.data), train.target
X_held_out, y_held_out = encoder.transform(test.data), test.target
order = np.random.RandomState(0).permutation(len(y_held_out))
X_public = X_held_out[order[:500]]  # labels never used
X_test, y_test = X_held_out[order[500:]], y_held_out[order[500:]]
classes = train.target_names  # the public label set

# %%
# The candidates
# --------------
# A knowledge-transfer student whose teacher, a
# :class:`~dpsklearn.PrivatePredictionClassifier`, labels the 500 public
# rows (``max_queries=500``). The grid is public: the number of teachers,
# few teachers on larger shards against many on smaller ones. The search
# sets each candidate's ``teacher__epsilon``, ``teacher__delta`` and
# accountant itself; leave them alone. The student is a liblinear logistic
# regression because the search fits it many times: once per run, and,
# while it plans the per-candidate budget, on stand-in labels of the public
# rows at every budget it tries (a check that the student can read
# ``X_public``; it spends nothing). With the default ``lbfgs`` solver the
# search took much longer.
#
# ``random_state`` fixes the shards and the search's split into training
# and validation rows (public randomness). ``noise_random_state`` fixes the
# search's secret number of runs and its score noise, and each teacher's
# noise, **only so that this page is reproducible** (it warns, silenced
# above; a deployed search leaves both unset).

candidate = KnowledgeTransferClassifier(
    PrivatePredictionClassifier(
        teacher_estimator(),
        max_queries=len(X_public),
        classes=classes,
        random_state=0,
        noise_random_state=0,
        n_jobs=-1,
    ),
    student=make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear")),
)
grid = {"teacher__n_estimators": [250, 1000]}

# %%
# The private search
# ------------------
# One stated budget for everything: ``(epsilon, delta) = (2, 1e-5)``.

epsilon, delta = 2.0, 1e-5
search = PrivateGridSearch(
    candidate,
    grid,
    epsilon=epsilon,
    delta=delta,
    random_state=0,
    noise_random_state=0,
)
search.fit(X_private, y_private, X_public=X_public)
chosen_k = search.best_params_["teacher__n_estimators"]
print(
    f"stated (epsilon, delta) = ({epsilon:g}, {delta:g}); certified total "
    f"epsilon {search.total_epsilon_:.4f}; each run's candidate at epsilon "
    f"{search.candidate_epsilon_:.3f}"
)
print(
    f"chosen: k = {chosen_k}; its released (noisy) validation score "
    f"{search.best_score_:.3f}"
)
private_accuracy = float(np.mean(search.predict(X_test) == y_test))  # free

# %%
# What is published, and what is not: ``search.best_estimator_`` (a
# student), ``best_params_``, ``best_score_`` and ``cv_results_``, whose
# ``mean_test_score`` is NaN for every configuration that was not chosen:
# their scores, and how often each ran, stay secret. So does the time the
# search took, which grows with the secret number of runs (this page prints
# it only because the Adult rows are public).

for params, score, selected in zip(
    search.cv_results_["params"],
    search.cv_results_["mean_test_score"],
    search.cv_results_["selected"],
    strict=True,
):
    print(f"  {params}: released score {score:.3f}, selected {selected}")

# %%
# The contrast: GridSearchCV on the private rows
# ----------------------------------------------
# The same grid and the same per-candidate budget, scored by 2-fold
# cross-validation with the true labels of the private rows, then refitted
# on all of them. Its choice is **not** private, and the budget of its
# five fits is accounted nowhere: what it releases is outside any
# guarantee. It stands here to show what non-private selection would pick.

gridsearch = GridSearchCV(
    clone(candidate).set_params(
        teacher__epsilon=search.candidate_epsilon_, teacher__delta=delta
    ),
    grid,
    cv=2,
)
gridsearch.fit(X_private, y_private, X_public=X_public)
gridsearch_accuracy = float(np.mean(gridsearch.predict(X_test) == y_test))

# %%
# The figures that keep it honest
# -------------------------------
# None of these is private: the base rate, the majority vote of the chosen
# configuration's teachers (fitted on all private rows) and one teacher's
# pipeline fitted on all private rows.

teachers = PrivatePredictionClassifier(
    teacher_estimator(),
    n_estimators=chosen_k,
    max_queries=1,
    classes=classes,
    random_state=0,
    n_jobs=-1,
).fit(X_private, y_private)
vote = teacher_majority_vote(teachers, X_test)
full_model = teacher_estimator().fit(X_private, y_private)
figures = {
    "PrivateGridSearch's student (private)": private_accuracy,
    "GridSearchCV's pick (NOT private)": gridsearch_accuracy,
    "base rate": base_rate(y_private, y_test),
    f"teachers' vote, k = {chosen_k} (NOT private)": float(np.mean(vote == y_test)),
    "model on all private rows (NOT private)": full_model.score(X_test, y_test),
}
print(f"GridSearchCV chose k = {gridsearch.best_params_['teacher__n_estimators']}")
print(f"test accuracy on {len(y_test):,} rows:")
for name, value in figures.items():
    print(f"  {name:<46} {value:.3f}")
print(f"run time of this example: {time.perf_counter() - start:.1f} s")

fig, ax = plt.subplots(figsize=(7, 3.2))
ax.barh(
    list(figures)[::-1],
    list(figures.values())[::-1],
    color=["C3", "C2", "0.6", "C1", "C0"],
)
ax.set_xlim(0.5, 1)
ax.set_xlabel(f"accuracy on {len(y_test):,} Adult test rows")
ax.set_title(f"Private search at (epsilon, delta) = ({epsilon:g}, {delta:g})")
fig.tight_layout()
plt.show()

# %%
# Reading the figures
# -------------------
# The private search pays for its selection: each run's candidate gets only
# part of the budget (the ``candidate_epsilon_`` printed above), so its
# labels are noisier than a single model's at the whole budget. In return
# the configuration, its score and the published student are private
# together; the ``GridSearchCV`` pick beside it is what selection without
# privacy would choose at the same per-candidate budget, and it guarantees
# nothing.
