"""
Which mechanism for my teachers? The regime guide on three regimes
==================================================================

Every dpsklearn teacher ensemble turns a query's vote histogram into an
answer or an abstention. How often it answers, and how often it is right,
depends only on how strongly the teachers agree, on the budget and on the
number of queries ``m``. :func:`dpsklearn.planning.predict_regime` takes a
sample of vote histograms and predicts, for every mechanism and calibration,
the fraction of the ``m`` queries answered and the accuracy, **without
fitting a private model or spending any budget**:

* ``sparse_vector``: :class:`~dpsklearn.SubsampleAggregateClassifier` (the
  stability test, ``mechanism=SparseVector(fallback="abstain")``);
* ``confident_gnmax``: ``SubsampleAggregateClassifier(mechanism=
  ConfidentGNMax(max_answers=...))``, one row per ``max_answers``;
* ``private_prediction``: :class:`~dpsklearn.PrivatePredictionClassifier`
  (the exponential mechanism; the guide rows the compositions ``basic``,
  ``zcdp``, ``rdp``, of which the estimator takes the tightest);
* ``gnmax``: ``PrivatePredictionClassifier(mechanism="gnmax")``.

This example runs it on three regimes of teacher agreement met in practice:
UCI Adult with 100 and with 1,000 teachers, and an easy task on which 1,000
teachers are nearly unanimous, at ``epsilon`` in {1, 2}, ``delta = 1e-5``
and ``m`` in {100, 1000}. Every private figure stands beside the base rate,
the **non-private** majority vote of the same teachers and a **non-private**
model trained on all rows.

**Where the votes come from.** Here the guide reads the teachers' votes
directly. That is allowed only because every dataset in this example is
public: it shows the guide on data a user may look at. On private data,
compute the votes of teachers trained on a public sample like the private
one (:func:`dpsklearn.planning.public_vote_counts`), or release the private
teachers' vote margins through
:func:`dpsklearn.planning.private_margin_histogram`, which charges a stated
epsilon (the last section shows it).
"""

# %%
# The teachers' votes on 1,000 public queries
# -------------------------------------------
# Adult: the 32,561 rows of ``adult.data`` train the teachers (a scaled
# liblinear logistic regression each, ``dpsklearn.demo.teacher_estimator()``,
# behind the data-independent encoder ``dpsklearn.demo.adult_encoder()``);
# 1,000 rows of ``adult.test`` are the queries. With ``k = 100`` each teacher
# sees about 325 rows, with ``k = 1000`` about 32.
#
# The easy task: two well-separated classes from
# :func:`~sklearn.datasets.make_classification` (30,000 training rows, 1,000
# queries) and Gaussian naive Bayes teachers on 30 rows each. Like Shuttle in
# the benchmarks, the teachers agree on nearly every query.
#
# An ensemble is fitted only to get its teachers (``max_queries=1``: nothing
# will be asked of it). :func:`dpsklearn.mechanisms.vote_counts` counts their
# votes; :func:`dpsklearn.teachers.fused_ensemble` evaluates linear teachers
# as one matrix product, which is how the estimators count votes themselves.

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB

from dpsklearn import PrivacyAccountant, SubsampleAggregateClassifier
from dpsklearn.baselines import base_rate
from dpsklearn.datasets import load_adult
from dpsklearn.demo import adult_encoder, teacher_estimator
from dpsklearn.mechanisms import vote_counts
from dpsklearn.planning import predict_regime, private_margin_histogram
from dpsklearn.teachers import fused_ensemble

start = time.perf_counter()


def fit_teachers(estimator, X, y, k, classes):
    """A fitted teacher ensemble; only its ``estimators_`` are used here."""
    model = SubsampleAggregateClassifier(
        estimator,
        n_estimators=k,
        mechanism="confident_gnmax",
        max_queries=1,
        classes=classes,
        random_state=0,
    )
    return model.fit(X, y)


def teacher_votes(model, X):
    """Vote counts (n_queries, n_classes) of the teachers. NOT private."""
    fused = fused_ensemble(model.estimators_, len(model.classes_))
    if fused is not None:
        return fused.vote_counts(X, model.estimators_)
    predictions = np.stack([teacher.predict(X) for teacher in model.estimators_])
    return vote_counts(predictions, len(model.classes_))


train, test = load_adult(subset="train"), load_adult(subset="test")
encoder = adult_encoder(train).fit(train.data)  # learns nothing from the rows
X_adult, y_adult = encoder.transform(train.data), train.target
queries = np.random.RandomState(0).choice(test.data.shape[0], 1000, replace=False)
X_adult_q, y_adult_q = encoder.transform(test.data[queries]), test.target[queries]
adult_classes = np.asarray(train.target_names)

X_easy, y_easy = make_classification(
    n_samples=31_000, n_features=10, n_informative=5, class_sep=2.0, random_state=0
)
X_easy, X_easy_q = X_easy[:30_000], X_easy[30_000:]
y_easy, y_easy_q = y_easy[:30_000], y_easy[30_000:]

# name: (teacher, X, y, X_query, y_query, classes, k)
settings = {
    "Adult, k = 100": (
        teacher_estimator(), X_adult, y_adult, X_adult_q, y_adult_q,
        adult_classes, 100,
    ),
    "Adult, k = 1000": (
        teacher_estimator(), X_adult, y_adult, X_adult_q, y_adult_q,
        adult_classes, 1000,
    ),
    "easy task, k = 1000": (
        GaussianNB(), X_easy, y_easy, X_easy_q, y_easy_q,
        np.array([0, 1]), 1000,
    ),
}  # fmt: skip

regimes = {}
for name, (teacher, X, y, X_q, y_q, classes, k) in settings.items():
    model = fit_teachers(teacher, X, y, k, classes)
    counts = teacher_votes(model, X_q)
    y_index = np.searchsorted(model.classes_, y_q)  # true class, as a column
    ordered = np.sort(counts, axis=1)
    margin = (ordered[:, -1] - ordered[:, -2]) / k  # vote gap, share of k
    regimes[name] = {
        "model": model,
        "counts": counts,
        "y_index": y_index,
        "margin": margin,
        # The figures every private number stands beside (none is private):
        "references": {
            "base rate": base_rate(y, y_q),
            "teachers' vote (not private)": np.mean(counts.argmax(axis=1) == y_index),
            "one model on all rows (not private)": clone(teacher)
            .fit(X, y)
            .score(X_q, y_q),
        },
    }
print(f"teachers fitted and votes counted in {time.perf_counter() - start:.1f} s")

print(
    f"{'regime':<20} {'margin: 10%':>11} {'25%':>5} {'median':>6} "
    f"{'base rate':>9} {'teachers':>8} {'all rows':>8}"
)
for name, regime in regimes.items():
    q10, q25, q50 = np.quantile(regime["margin"], [0.1, 0.25, 0.5])
    base, vote, full = regime["references"].values()
    print(
        f"{name:<20} {q10:>11.2f} {q25:>5.2f} {q50:>6.2f} "
        f"{base:>9.3f} {vote:>8.3f} {full:>8.3f}"
    )

# %%
# The margin is the gap between the two largest vote counts as a share of
# ``k`` (1 = unanimous). On Adult the 100 teachers, with ten times more rows
# each, agree more than the 1,000; but a mechanism's noise is measured in
# votes, and 1,000 teachers give ten times more votes to spend it on.
#
# The guide: every mechanism, calibration and budget
# --------------------------------------------------
# ``predict_regime`` models the ``m`` queries as draws from these 1,000 and
# scores the answers against the true labels (``y_true``). Each row it
# returns has ``answered``, the expected fraction of the ``m`` queries that
# get a label, ``accuracy_answered``, the accuracy on those, and
# ``accuracy_all`` (their product: an abstention counted wrong), the figure
# to hold against the base rate. 3 regimes x 2 budgets x 2 query counts x 11
# mechanism rows take a few seconds, and no budget.

epsilons, query_budgets, delta = (1, 2), (100, 1000), 1e-5
guide = {}  # (regime, epsilon, m, mechanism, calibration, max_answers) -> row
for name, regime in regimes.items():
    for epsilon in epsilons:
        for m in query_budgets:
            for row in predict_regime(
                regime["counts"],
                epsilon=epsilon,
                delta=delta,
                max_queries=m,
                y_true=regime["y_index"],
            ):
                key = (row["mechanism"], row["calibration"], row.get("max_answers"))
                guide[(name, epsilon, m, *key)] = row
for epsilon in epsilons:
    thresholds = {
        key[4]: round(row["threshold"])
        for key, row in guide.items()
        if key[1:4] == (epsilon, 1000, "sparse_vector") and row["admissible"]
    }
    print(
        f"sparse vector at epsilon={epsilon}, T=100: threshold w {thresholds} "
        "(the largest distance 1,000 teachers can reach is 499)"
    )
print(
    f"teachers, votes and {len(guide)} guide rows in "
    f"{time.perf_counter() - start:.1f} s"
)

# %%
# The table below keeps the rows that decide. **Every query answered**: the
# accuracy of the exponential mechanism under each per-query calibration
# (``PrivatePredictionClassifier``; ``auto`` takes the largest ``eps_q``,
# which is ``rdp`` here) and of GNMax. **May abstain**: the fraction of the
# ``m`` queries the best sparse vector calibration answers, and Confident
# GNMax with ``max_answers = m`` and ``m / 8`` (answered, accuracy on the
# answered).


def sparse_vector_answered(name, epsilon, m):
    return max(
        row["answered"]
        for key, row in guide.items()
        if key[:4] == (name, epsilon, m, "sparse_vector") and row["admissible"]
    )


header = (
    f"{'':<20} {'':>3} {'':>5} | {'every query answered: accuracy':^32} | "
    f"{'may abstain: answered / accuracy on answered':^44}\n"
    f"{'regime':<20} {'eps':>3} {'m':>5} | {'basic':>7} {'zcdp':>7} {'rdp':>7} "
    f"{'GNMax':>7} | {'sparse vec':>10} {'Conf-GNMax m':>15} {'Conf-GNMax m/8':>15}"
)
for name, regime in regimes.items():
    print(
        f"\n{name}: "
        + ", ".join(f"{key} {value:.3f}" for key, value in regime["references"].items())
    )
    print(header)
    for epsilon in epsilons:
        for m in query_budgets:
            at = (name, epsilon, m)
            exponential = [
                guide[(*at, "private_prediction", cal, None)]["accuracy_answered"]
                for cal in ("basic", "zcdp", "rdp")
            ]
            gnmax = guide[(*at, "gnmax", "gdp", None)]["accuracy_answered"]
            confident = [
                guide[(*at, "confident_gnmax", "gdp", limit)] for limit in (m, m // 8)
            ]
            print(
                f"{name:<20} {epsilon:>3g} {m:>5} | "
                + " ".join(f"{value:>7.3f}" for value in exponential)
                + f" {gnmax:>7.3f} | {sparse_vector_answered(*at):>10.3f} "
                + " ".join(
                    f"{row['answered']:>7.3f} / {row['accuracy_answered']:<5.3f}"
                    for row in confident
                )
            )

# %%
# The picture
# -----------
# One panel per regime; each marker is a mechanism and calibration, each
# colour a budget and number of queries. Right is more queries answered, up
# is more of them right; the horizontal lines are the base rate and the two
# non-private references. Points below the base rate line are worse than
# answering the majority class to everyone. The sparse vector's crosses sit
# at 0 answered: their height is the accuracy a passing query would have.

markers = {
    ("sparse_vector", "laplace"): ("X", "sparse vector (laplace)"),
    ("private_prediction", "basic"): ("v", "exponential (basic)"),
    ("private_prediction", "zcdp"): ("^", "exponential (zcdp)"),
    ("private_prediction", "rdp"): ("o", "exponential (rdp)"),
    ("gnmax", "gdp"): ("D", "GNMax (gdp)"),
    ("confident_gnmax", "gdp"): ("s", "Confident GNMax, each max_answers"),
}
colours = {
    (epsilon, m): f"C{i}"
    for i, (epsilon, m) in enumerate((e, m) for e in epsilons for m in query_budgets)
}
reference_styles = [("black", ":"), ("C5", "-."), ("C6", "--")]

fig, axes = plt.subplots(1, len(regimes), figsize=(13, 4.8), sharey=True)
for ax, (name, regime) in zip(axes, regimes.items(), strict=True):
    for key, row in guide.items():
        marker = markers.get((key[3], key[4]))
        if key[0] != name or marker is None:
            continue
        ax.scatter(
            row["answered"],
            row["accuracy_answered"],
            marker=marker[0],
            s=45,
            color=colours[(key[1], key[2])],
            alpha=0.8,
        )
    for value, (colour, style) in zip(
        regime["references"].values(), reference_styles, strict=True
    ):
        ax.axhline(value, color=colour, linestyle=style, linewidth=1.2)
    ax.set_title(name)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(0.45, 1.0)
    ax.set_xlabel("fraction of the m queries answered")
axes[0].set_ylabel("accuracy on the answered queries")
handles = [
    plt.Line2D([], [], color="grey", marker=m, linestyle="", label=text)
    for m, text in markers.values()
]
handles += [
    plt.Line2D([], [], color=c, marker="o", linestyle="", label=f"eps={e}, m={m}")
    for (e, m), c in colours.items()
]
handles += [
    plt.Line2D([], [], color=colour, linestyle=style, label=ref)
    for ref, (colour, style) in zip(
        next(iter(regimes.values()))["references"], reference_styles, strict=True
    )
]
fig.legend(handles=handles, loc="lower center", ncol=5, fontsize="small")
fig.tight_layout(rect=(0, 0.17, 1, 1))
plt.show()

# %%
# Reading the guide
# -----------------
# * **The sparse vector answers nothing here.** Its stability threshold at
#   ``epsilon <= 2`` and ``T = 100`` is above the largest distance 1,000
#   teachers can reach, so even the unanimous queries abstain. It needs
#   thousands of nearly unanimous teachers or a larger budget; then it
#   answers an unlimited stream, paying only for its failures.
# * **Few teachers, many queries: no mechanism does well.** With ``k = 100``
#   on Adult every mechanism's noise is large beside 100 votes: at ``m =
#   1000`` the exponential mechanism answers below the base rate, and
#   Confident GNMax answers few queries, not well. More teachers on smaller
#   shards help more than better teachers: the 1,000 teachers, each on a
#   tenth of the rows, have the same majority-vote accuracy as the 100 and
#   keep it under privacy. Fewer queries help too (``m = 100``).
# * **Many teachers, every query answered: the exponential mechanism**
#   (the tightest composition, here ``rdp``) stays within about a point and a
#   half of the teachers' own vote on Adult and matches it on the easy task;
#   GNMax is as good or slightly behind, and its ``predict_proba`` comes with
#   ``predict`` at no extra cost.
# * **Many teachers, abstentions allowed: Confident GNMax** answers only the
#   queries whose largest vote count clears a noisy threshold, so its
#   accuracy on the answered ones is *above* the teachers' overall vote;
#   with 1,000 teachers on Adult it answers most queries. Use it when an
#   abstention is acceptable, for example to label public rows for a
#   student (:class:`~dpsklearn.KnowledgeTransferClassifier`).
# * **The composition matters as much as the mechanism.** ``basic``
#   composition splits ``epsilon`` into ``epsilon / m`` and falls towards a
#   coin flip at ``m = 1000``; ``zcdp`` and ``rdp`` make a thousand answers
#   affordable, and ``rdp`` is the better of the two where the noise
#   matters (``k = 100``). The estimators take the tightest admissible one
#   by themselves (``calibration_`` says which).
#
# The private route: the guide without looking at the votes
# ---------------------------------------------------------
# On private data the votes above must not be read. A fitted private
# ensemble can instead release a differentially private histogram of its
# vote margins on public query rows,
# :func:`~dpsklearn.planning.private_margin_histogram`, charged to an
# accountant (here a separate one holding 0.5; in practice the one the
# model shares, with room left). With 1,000 teachers and 6 bins the noise
# per bin is ``4 (6 - 1) / (1000 * 0.5) = 0.04`` of the queries. Without
# the true labels, accuracy is then agreement with the teachers' majority
# vote; the table compares it with the same figure computed from the votes
# themselves.

model = regimes["Adult, k = 1000"]["model"]
budget = PrivacyAccountant(epsilon=0.5)
with warnings.catch_warnings():
    # Seeded so that this page is reproducible; never seed a real release.
    warnings.simplefilter("ignore")
    histogram = private_margin_histogram(
        model,
        X_adult_q,
        epsilon=0.5,
        accountant=budget,
        n_bins=6,
        noise_random_state=0,
    )
print(
    f"released: gaps {histogram.gaps.round(0)}, weights "
    f"{histogram.weights.round(2)}; spent {budget.spent_basic}"
)

print(
    f"{'Adult, k = 1000, eps = 1, m = 1000':<40} {'from the votes':>18} "
    f"{'private histogram':>18}"
)
shown = [
    ("private_prediction", "rdp", None),
    ("gnmax", "gdp", None),
    ("confident_gnmax", "gdp", 1000),
]
direct, private = (
    {
        (row["mechanism"], row["calibration"], row.get("max_answers")): row
        for row in predict_regime(source, epsilon=1, delta=delta, max_queries=1000)
    }
    for source in (regimes["Adult, k = 1000"]["counts"], histogram)
)
names = {
    "private_prediction": "exponential",
    "gnmax": "GNMaxRelease",
    "confident_gnmax": "Confident GNMax",
}
for key in shown:
    label = f"{names[key[0]]} ({key[1]})" + (
        f", max_answers={key[2]}" if key[2] else ""
    )
    cells = [
        f"{rows[key]['answered']:.3f} / {rows[key]['accuracy_answered']:.3f}"
        for rows in (direct, private)
    ]
    print(f"{label:<40} {cells[0]:>18} {cells[1]:>18}")
print(f"total run time {time.perf_counter() - start:.1f} s")

# %%
# The histogram keeps only the gap, coarsely binned, so the private route
# is a rougher guide: with 6 bins it puts many queries at a smaller gap than
# they have, and under-predicts agreement a little. Its ranking of the
# mechanisms is the same. :doc:`/choosing` turns these readings into a
# decision table.
