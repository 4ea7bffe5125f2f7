"""
Answer queries: answered fraction and accuracy against epsilon on UCI Adult
===========================================================================

The first user path: a model fitted on private rows answers prediction
queries, each answer paid from one fixed ``(epsilon, delta)`` budget. The
fitted model holds its teachers and is as secret as the data: publish its
answers, never the model (to publish a model, see
:ref:`sphx_glr_auto_examples_plot_publish_student.py`).

A :class:`~dpsklearn.SubsampleAggregateClassifier` trains ``k`` teachers on
disjoint shards of the private Adult training file and, with the sparse
vector stability test, answers a query only when the teachers agree by a
margin that the test can see through its noise. With
``SparseVector(fallback="abstain")`` everything else is an abstention, and
after ``max_unstable`` abstentions the model halts and abstains on every
further query (free: the abstention does not depend on the data).

This example fits one model per total budget ``epsilon`` and plots, for
1,000 public query points from the Adult test file, the fraction of queries
answered and the accuracy, beside two models left at their defaults:
``SubsampleAggregateClassifier`` with ``mechanism="auto"`` and
:class:`~dpsklearn.PrivatePredictionClassifier`, which answers every query.
Every private figure stands beside the base rate (always answering the
majority class), the non-private majority vote of the same teachers, and a
non-private model trained on all rows. The last two are **not** private:
they are the ceiling the private answers are measured against.

Sizes: the whole training file (32,561 private rows), 1,000 queries, four
budgets; the example runs in well under a minute on 2 cores (it prints its
run time at the end).
"""

# %%
# The data: private training rows, public queries
# -----------------------------------------------
# The 32,561 rows of ``adult.data`` are the private training set. Query points
# are public (they belong to the caller): 1,000 rows of ``adult.test``, drawn
# once at random and looked at once, at the end of each fit. Categorical
# columns are coded by their index in fixed, public category lists, which a
# tree can split on directly, so no encoder has to learn anything from the
# private rows.
#
# ``random_state`` fixes the shards and teachers (public randomness).
# ``noise_random_state`` fixes the mechanism noise **only so that this page
# is reproducible**; it warns (silenced below) because anyone who knows the
# seed can replay the noise: a deployed model leaves it unset and draws its
# noise from the operating system at every fit.

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import PrivatePredictionClassifier, SubsampleAggregateClassifier
from dpsklearn.baselines import base_rate, teacher_majority_vote
from dpsklearn.datasets import load_adult
from dpsklearn.mechanisms import SparseVector

warnings.filterwarnings("ignore", message="noise_random_state is set")
start = time.perf_counter()

train = load_adult(subset="train")
test = load_adult(subset="test")
rng = np.random.RandomState(0)
queries = rng.choice(test.data.shape[0], size=1000, replace=False)
X_train, y_train = train.data, train.target
X_query, y_query = test.data[queries], test.target[queries]
classes = train.target_names  # the public label set


def teacher():
    """Each teacher: one shallow tree on its own shard."""
    return DecisionTreeClassifier(max_depth=3)


# %%
# What the budget allows, before fitting anything
# -----------------------------------------------
# ``k = 1000`` shallow trees, one per shard of about 32 rows. With
# ``SparseVector(max_unstable=10)`` the budget pays for 10 failed stability
# tests; ``delta`` is left at its default, ``1e-5``, below ``1 / n``. A query
# passes only when its distance to instability (how many teachers must
# change before the majority can change) clears the threshold ``w`` by a few
# noise scales; with 1,000 teachers the distance is at most 499 (unanimous
# teachers). The calibration depends on public numbers only, so it can be
# read off first: where the threshold is above the largest possible
# distance, no query can pass.

n_estimators, max_unstable, delta = 1000, 10, 1e-5
stability = SparseVector(max_unstable=max_unstable, fallback="abstain")
max_distance = (n_estimators + 1) // 2 - 1
for epsilon in [1, 2, 4, 8, 16]:
    calibration = stability.calibrate(
        epsilon, delta, max_unstable=max_unstable
    ).calibration
    verdict = "no query can pass" if calibration.threshold > max_distance else ""
    print(
        f"epsilon={epsilon:<3g} {calibration.name} calibration: threshold "
        f"w={calibration.threshold:.0f}, noise scale {calibration.noise_scale:.1f}"
        f" (largest possible distance {max_distance}) {verdict}"
    )

# %%
# One private model per epsilon
# -----------------------------
# The same ``random_state`` gives the same shards and teachers at every
# epsilon (the fit reuses them), so only the privacy mechanism changes along
# the curve. With ``SparseVector(fallback="abstain")`` every failed test is
# an abstention, so the privately answered queries are exactly those that
# passed; once the model halts, the mechanism answers nothing more. Those
# rows get the answer of a student fitted on the released answers (free,
# post-processing); ``return_source=True`` tells them apart, and the curve
# below counts only the mechanism's own answers.


def answer(model):
    """Fit ``model``, answer the 1,000 queries, and summarise what it released."""
    model.fit(X_train, y_train)
    labels, source = model.predict(X_query, return_source=True)
    answered = source == "private"
    status = model.budget_status()
    return {
        "mechanism": type(model.mechanism_).__name__,
        "k": model.n_estimators_,
        "answered": answered.mean(),
        "acc_answered": np.mean(labels[answered] == y_query[answered])
        if answered.any()
        else np.nan,
        "acc_all": np.mean(answered & (labels == y_query)),
        # A model that halts before the last query leaves the rest to the student.
        "halted_after": status.n_served
        if status.halted and status.n_served < len(y_query)
        else None,
        # NOT private: the same teachers voting in the clear.
        "teachers_vote": np.mean(teacher_majority_vote(model, X_query) == y_query),
    }


epsilons = [2, 4, 8, 16]
STABILITY = "stability test (k=1000, T=10, abstain)"
AUTO = "SubsampleAggregate, defaults"
DIRECT = "PrivatePrediction, defaults"
curves = {STABILITY: {}, AUTO: {}, DIRECT: {}}
for epsilon in epsilons:
    model = SubsampleAggregateClassifier(
        teacher(),
        n_estimators=n_estimators,
        epsilon=epsilon,
        mechanism=stability,
        classes=classes,
        random_state=0,
        noise_random_state=0,
    )
    curves[STABILITY][epsilon] = answer(model)

# %%
# The same queries, every other setting at its default
# ----------------------------------------------------
# ``SubsampleAggregateClassifier(mechanism="auto")`` chooses, from public
# numbers only (rows, budget, queries, and an assumed share of unstable
# queries), between the stability test and Confident-GNMax, and says which
# in a warning (shown once below); ``n_estimators="auto"`` is that choice's
# number of teachers. ``PrivatePredictionClassifier`` answers every one of
# its ``max_queries=1000`` queries with the exponential mechanism on the
# teachers' votes, ``k`` from Dwork and Feldman's Theorem 1. Only the
# teacher, the public label set and the seeds are given.

for epsilon in epsilons:
    with warnings.catch_warnings():
        if epsilon != epsilons[0]:
            warnings.filterwarnings("ignore", message="mechanism='auto' chose")
        auto = SubsampleAggregateClassifier(
            teacher(),
            epsilon=epsilon,
            classes=classes,
            random_state=0,
            noise_random_state=0,
        )
        curves[AUTO][epsilon] = answer(auto)
    direct = PrivatePredictionClassifier(
        teacher(),
        epsilon=epsilon,
        classes=classes,
        random_state=0,
        noise_random_state=0,
    )
    curves[DIRECT][epsilon] = answer(direct)

print(
    f"{'setting':<40} {'mechanism':<14} {'epsilon':>7} {'k':>5} {'answered':>8} "
    f"{'acc (answered)':>14} {'acc (all)':>9} {'halted after':>12} "
    f"{'teachers vote*':>14}"
)
for name, curve in curves.items():
    for epsilon, row in curve.items():
        halted = "-" if row["halted_after"] is None else row["halted_after"]
        print(
            f"{name:<40} {row['mechanism']:<14} {epsilon:>7g} {row['k']:>5} "
            f"{row['answered']:>8.1%} {row['acc_answered']:>14.3f} "
            f"{row['acc_all']:>9.3f} {halted!s:>12} {row['teachers_vote']:>14.3f}"
        )
print(
    "halted after: queries served before the model halted ('-': it served all "
    "1,000)\n* NOT private: the same teachers' majority vote, in the clear"
)

# %%
# The figures that keep it honest
# -------------------------------
# None of these is private. The base rate is what answering the majority
# class gets; the teachers' own majority vote (the 1,000 teachers of the
# first curve; the table gives every setting's own) shows what the
# ensemble knows; the same tree fitted on all rows what one tree can learn
# from all the data.

reference_model = teacher().fit(X_train, y_train)
references = {
    "base rate": base_rate(y_train, y_query),
    "teachers' majority vote, k = 1000 (not private)": curves[STABILITY][epsilons[0]][
        "teachers_vote"
    ],
    "the same tree on all rows (not private)": reference_model.score(X_query, y_query),
}
for name, value in references.items():
    print(f"{name}: {value:.3f}")
print(f"run time of this example: {time.perf_counter() - start:.1f} s")

# %%
# The picture
# -----------
# Left: the fraction of the 1,000 queries that got a label. Right: accuracy
# over all queries (an abstention counts as wrong) for every setting, and on
# the answered queries for the stability test, with the reference lines.

fig, (ax_answered, ax_accuracy) = plt.subplots(1, 2, figsize=(11, 4.2))
styles = ["o-", "s--", "^-."]
for (name, curve), style, color in zip(
    curves.items(), styles, ["C0", "C1", "C4"], strict=True
):
    eps = list(curve)
    answered = [row["answered"] for row in curve.values()]
    accuracy = [row["acc_all"] for row in curve.values()]
    ax_answered.plot(eps, answered, style, color=color, label=name)
    ax_accuracy.plot(eps, accuracy, style, color=color, label=f"{name}, all queries")
stable = curves[STABILITY]
ax_accuracy.plot(
    list(stable),
    [row["acc_answered"] for row in stable.values()],
    "o:",
    color="C0",
    alpha=0.6,
    label="stability test, answered queries only",
)
for (name, value), (color, linestyle) in zip(
    references.items(), [("black", ":"), ("C2", "-."), ("C3", "--")], strict=True
):
    ax_accuracy.axhline(value, color=color, linestyle=linestyle, label=name)
for ax in (ax_answered, ax_accuracy):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("total epsilon of the model")
    ax.set_ylim(0, 1.05)
ax_answered.set_ylabel("fraction of queries answered")
ax_answered.set_title("Answered (1,000 queries)")
ax_answered.legend(loc="center left", fontsize="x-small")
ax_accuracy.set_ylabel("accuracy")
ax_accuracy.set_title("Accuracy on 1,000 Adult test rows")
ax_accuracy.legend(loc="center left", fontsize="x-small")
fig.tight_layout()
plt.show()

# %%
# Reading the picture
# -------------------
# The stability test answers a query only when nearly all 1,000 teachers
# agree; those answers are exact and mostly right, the rest abstain, and
# after 10 abstentions the model halts. A larger budget lowers the threshold
# and more queries pass. How many pass also depends on the order and number
# of queries: the count of failures, not of queries, is what the budget pays
# for.
#
# The defaults answer many more queries. ``PrivatePredictionClassifier``
# answers every one, each with noise; compare its accuracy with its own
# teachers' vote in the table's last column. ``mechanism="auto"`` picks from
# public numbers and an *assumed* share of queries the teachers disagree on
# (a public assumption, ``SparseVector(unstable_fraction=...)``); when the
# teachers disagree more often than assumed, a stability test it picked
# halts early, and the table's "halted after" column says when. On a table
# of tens of thousands of rows, a model that must answer every query is the
# direct answers' job; the stability test pays off on hundreds of thousands
# of rows, where thousands of teachers each still see enough rows to agree.
