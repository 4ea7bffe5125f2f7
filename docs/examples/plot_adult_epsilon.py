"""
Answered fraction and accuracy against epsilon on UCI Adult
===========================================================

A :class:`~dpsklearn.SubsampleAggregateClassifier` trains ``k`` teachers on
disjoint shards of the private Adult training file and answers a query only
when the teachers agree by a margin that the sparse vector stability test
can see through its noise. Everything else is an abstention, and after
``max_unstable`` abstentions the model halts and abstains on every further
query (free: the abstain label does not depend on the data).

This example fits one model per total budget ``epsilon`` and plots, for
1,000 public query points from the Adult test file:

* the fraction of queries answered,
* the accuracy on the answered queries and over all queries (abstentions
  counted wrong),

beside the base rate (always answering the majority class), the
non-private majority vote of the same teachers, and a non-private model
trained on all rows. The last two are **not** private: they are the ceiling
the private answers are measured against.
"""

# %%
# The data: private training rows, public queries
# -----------------------------------------------
# The 32,561 rows of ``adult.data`` are the private training set. Query points
# are public (they belong to the caller): 1,000 rows of ``adult.test``.
# Categorical columns are coded by their index in fixed, public category
# lists, which a tree can split on directly, so no encoder has to learn
# anything from the private rows.

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.tree import DecisionTreeClassifier

from dpsklearn import SubsampleAggregateClassifier
from dpsklearn.baselines import base_rate, teacher_majority_vote
from dpsklearn.datasets import load_adult
from dpsklearn.mechanisms import SparseVector

train = load_adult(subset="train")
test = load_adult(subset="test")
rng = np.random.RandomState(0)
queries = rng.choice(test.data.shape[0], size=1000, replace=False)
X_train, y_train = train.data, train.target
X_query, y_query = test.data[queries], test.target[queries]
classes = train.target_names  # the public label set

# %%
# What the budget allows, before fitting anything
# -----------------------------------------------
# ``k = 1000`` shallow trees, one per shard of about 32 rows. With
# ``SparseVector(max_unstable=10)`` the budget pays for 10 failed stability
# tests, and
# ``delta = 1e-6`` is well below ``1 / n``. A query passes only when its
# distance to instability clears the threshold ``w`` by a few noise scales;
# with 1,000 teachers the distance is at most 499 (unanimous teachers). The
# calibration depends on public numbers only, so it can be read off first:
# at ``epsilon = 1`` the threshold is above 499 and no query can pass.

n_estimators, max_unstable, delta = 1000, 10, 1e-6
stability = SparseVector(max_unstable=max_unstable, fallback="abstain")
max_distance = (n_estimators + 1) // 2 - 1
for epsilon in [1, 2, 4, 8, 16]:
    test = stability.calibrate(epsilon, delta, max_unstable=max_unstable)
    calibration = test.calibration
    print(
        f"epsilon={epsilon:<3g} {calibration.name} calibration: threshold "
        f"w={calibration.threshold:.0f}, noise scale {calibration.noise_scale:.1f}"
        f" (largest possible distance {max_distance})"
    )

# %%
# One private model per epsilon
# -----------------------------
# The same ``random_state`` gives the same shards and teachers at every
# epsilon, so only the privacy mechanism changes along the curve. With
# ``SparseVector(fallback="abstain")`` every failed test is an abstention, so
# the answered queries are exactly those that passed; once the model halts
# it abstains on every further query with ``abstain_label_`` (here
# ``"abstain"``, the label set being strings).

epsilons = [2, 4, 8, 16]
rows = []
start = time.perf_counter()
for epsilon in epsilons:
    model = SubsampleAggregateClassifier(
        DecisionTreeClassifier(max_depth=3),
        n_estimators=n_estimators,
        epsilon=epsilon,
        delta=delta,
        mechanism=stability,
        classes=classes,
        random_state=0,
    )
    model.fit(X_train, y_train)
    labels, abstained = model.predict(X_query, return_abstained=True)
    answered = ~abstained
    rows.append(
        {
            "epsilon": epsilon,
            "calibration": model.calibration_,
            "threshold": model.threshold_,
            "answered": answered.mean(),
            "acc_answered": np.mean(labels[answered] == y_query[answered])
            if answered.any()
            else np.nan,
            "acc_all": np.mean(answered & (labels == y_query)),
            "served_before_halt": model.budget_status().n_served,
        }
    )
seconds = time.perf_counter() - start
print(f"fitted and queried {len(epsilons)} models in {seconds:.1f} s")

print(
    f"{'epsilon':>7} {'calibration':>11} {'threshold':>9} {'answered':>8} "
    f"{'acc (answered)':>14} {'acc (all)':>9} {'served':>6}"
)
for row in rows:
    print(
        f"{row['epsilon']:>7g} {row['calibration']:>11} {row['threshold']:>9.0f} "
        f"{row['answered']:>8.1%} {row['acc_answered']:>14.3f} "
        f"{row['acc_all']:>9.3f} {row['served_before_halt']:>6}"
    )

# %%
# The figures that keep it honest
# -------------------------------
# None of these three is private. The teachers' own majority vote (the same
# teachers at every epsilon) shows what the ensemble knows; the model on all
# rows what the data allow.

reference_model = DecisionTreeClassifier(max_depth=6, random_state=0)
reference_model.fit(X_train, y_train)
references = {
    "base rate": base_rate(y_train, y_query),
    "teachers' majority vote (not private)": np.mean(
        teacher_majority_vote(model, X_query) == y_query
    ),
    "one tree on all rows (not private)": reference_model.score(X_query, y_query),
}
for name, value in references.items():
    print(f"{name}: {value:.3f}")

# %%
# The picture
# -----------
# Left: the fraction of the 1,000 queries that got a label. Right: accuracy on
# those and over all queries, with the reference lines.

fig, (ax_answered, ax_accuracy) = plt.subplots(1, 2, figsize=(10, 4))
eps = [row["epsilon"] for row in rows]
ax_answered.plot(eps, [row["answered"] for row in rows], "o-", color="C0")
ax_answered.set_xscale("log", base=2)
ax_answered.set_xlabel("total epsilon of the model")
ax_answered.set_ylabel("fraction of queries answered")
ax_answered.set_ylim(0, 1)
ax_answered.set_title("Answered (k = 1000, T = 10, delta = 1e-6)")

ax_accuracy.plot(
    eps,
    [row["acc_answered"] for row in rows],
    "o-",
    color="C0",
    label="private, on answered queries",
)
ax_accuracy.plot(
    eps,
    [row["acc_all"] for row in rows],
    "s--",
    color="C1",
    label="private, over all queries (abstention = wrong)",
)
for (name, value), (color, linestyle) in zip(
    references.items(), [("black", ":"), ("C2", "-."), ("C3", "--")], strict=True
):
    ax_accuracy.axhline(value, color=color, linestyle=linestyle, label=name)
ax_accuracy.set_xscale("log", base=2)
ax_accuracy.set_xlabel("total epsilon of the model")
ax_accuracy.set_ylabel("accuracy")
ax_accuracy.set_ylim(0, 1.05)
ax_accuracy.set_title("Accuracy on 1,000 Adult test rows")
ax_accuracy.legend(loc="center right", fontsize="small")
fig.tight_layout()
plt.show()

# %%
# Reading the picture
# -------------------
# A query passes only when its distance to instability (how many teachers
# must change before the majority can change) clears the noisy threshold, so
# the answered queries are those on which nearly all 1,000 teachers agree.
# They are answered exactly and are mostly right; the rest abstain, and after
# 10 abstentions the model halts. A larger budget lowers the threshold and
# more queries pass. How many pass also depends on the order and number of
# queries: the count of failures, not of queries, is what the budget pays for.
#
# This is the mechanism's honest trade-off at practical budgets: with the
# ``noisy_max`` fallback (the default) failed queries get an
# exponential-mechanism answer instead of an abstention, still within the
# same total ``epsilon``.
