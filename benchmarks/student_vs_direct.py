"""Student or direct answers: which one answers 2,000 private queries better?

A batch of ``m = 2,000`` query rows must get private predictions, and public
unlabelled rows exist. Two ways to spend the same budget
(``epsilon = 1``, ``delta = 1e-5`` in total for each):

* **student** -- :class:`~dpsklearn.KnowledgeTransferClassifier`: a
  :class:`~dpsklearn.PrivatePredictionClassifier` teacher (exponential
  mechanism, the tightest per-query split) labels 3/4 of the public rows
  (``query_strategy="uncertainty"``, margin sampling in 5 rounds, the
  teacher's ``max_queries`` = the rows asked), a scaled LogisticRegression
  student is fitted on the labels and published; the 2,000 queries are then
  answered by the student for free (post-processing).
* **direct** -- :class:`~dpsklearn.PrivatePredictionClassifier` with
  ``max_queries = 2000`` (exponential mechanism, the tightest split)
  answers the 2,000 queries itself, each one charged.

Both use the teachers of ``benchmarks/privacy_utility.py``
(``Pipeline(StandardScaler, LogisticRegression)``, scaling inside each
teacher) and the loaders of ``benchmarks/_data.py`` for adult, shuttle and
diamonds; the public rows are the loaders' ``public`` split, disjoint from
the queries.

Model selection: each arm's number of teachers ``k`` is chosen on a
validation split of the PRIVATE training rows only: 20 % of them are held
out (stratified), the teachers are fitted on the other 80 %, and 2,000 of
the held-out rows play the queries; ``k`` ranges over {250, 500, 1000, 2000}
capped so that every shard keeps at least 15 rows, and each arm takes the
``k`` with the best validation accuracy averaged over the same noise seeds.
The chosen configuration is then refitted on all training rows and scored
ONCE on the 2,000 test queries, averaged over 3 noise seeds (the
mechanism's ``noise_random_state`` and, for the student, the public first
round's ``random_state``; the teachers' shards are the same for every
seed). Tuning ``k`` on the private rows is outside the privacy guarantee,
as tuning on private data always is.

Beside each arm: the base rate (training majority class), the NON-private
majority vote of the arm's own teachers on the test queries, and a
non-private scaled LogisticRegression fitted on all training rows; the
margin is student minus direct accuracy, in points (mean +- sd over the
seeds, paired by seed).

Usage::

    python benchmarks/student_vs_direct.py [--quick] [--out docs/benchmarks]

``--quick`` (CI): adult only, ``k = 500`` (no validation sweep), one seed,
500 public rows; writes ``student_vs_direct_quick.{json,md}``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import LOADERS, cached_pipeline  # noqa: E402
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
    PrivatePredictionClassifier,
)
from dpsklearn.baselines import base_rate, teacher_majority_vote  # noqa: E402

EPSILON = 1.0
DELTA = 1e-5
RANDOM_STATE = 0  # the teachers' shards and seeds (the same in every arm)
N_QUERIES = 2000
VALIDATION_FRACTION = 0.2
MIN_ROWS_PER_SHARD = 15
# As in benchmarks/privacy_utility.py: the teacher pays for 3/4 of the
# public rows, asked in 5 rounds of margin sampling.
KT_UNCERTAINTY_FRACTION = 0.75
KT_ROUNDS = 5
FULL = {
    "datasets": ["adult", "shuttle", "diamonds"],
    "k_grid": [250, 500, 1000, 2000],
    "seeds": [0, 1, 2],
    "n_public": 2000,
    "validate": True,
}
QUICK = {
    "datasets": ["adult"],
    "k_grid": [500],
    "seeds": [0],
    "n_public": 500,
    "validate": False,
}


def teacher():
    """Every teacher scales its own shard (as in privacy_utility.py)."""
    return cached_pipeline(StandardScaler(), LogisticRegression(max_iter=300))


def full_model():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def direct_model(k, classes, seed):
    return PrivatePredictionClassifier(
        teacher(),
        n_estimators=k,
        epsilon=EPSILON,
        delta=DELTA,
        max_queries=N_QUERIES,
        classes=classes,
        random_state=RANDOM_STATE,
        noise_random_state=seed,
    )


def student_model(k, classes, n_asked, seed):
    return KnowledgeTransferClassifier(
        PrivatePredictionClassifier(
            teacher(),
            n_estimators=k,
            epsilon=EPSILON,
            delta=DELTA,
            max_queries=n_asked,
            classes=classes,
            random_state=RANDOM_STATE,
            noise_random_state=seed,
        ),
        full_model(),
        query_strategy="uncertainty",
        n_queries=n_asked,
        n_rounds=KT_ROUNDS,
        random_state=seed,
    )


def run_arm(arm, k, classes, X, y, X_public, X_query, y_query, seed, n_asked):
    """Fit one arm on (X, y) and return its accuracy on the queries (+ info)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arm == "direct":
            model = direct_model(k, classes, seed).fit(X, y)
            labels = model.predict(X_query)
            info = {"calibration": model.calibration_}
        else:
            model = student_model(k, classes, n_asked, seed)
            model.fit(X, y, X_public=X_public)
            labels = model.predict(X_query)
            info = {"n_public_labelled": int(model.n_public_labelled_)}
    return float(np.mean(labels == y_query)), info


def vote_accuracy(k, classes, X, y, X_query, y_query):
    """The non-private majority vote of the k teachers fitted on (X, y)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = direct_model(k, classes, 0).fit(X, y)
        labels = teacher_majority_vote(model, X_query)
    return float(np.mean(labels == y_query))


def run_table(name, config):
    start = time.perf_counter()
    data = LOADERS[name](n_queries=N_QUERIES, n_public=config["n_public"])
    n_asked = max(1, int(data.X_public.shape[0] * KT_UNCERTAINTY_FRACTION))
    seeds = config["seeds"]
    arms = ("student", "direct")

    # -- validation on the private training rows only --------------------------
    X_fit, X_val, y_fit, y_val = train_test_split(
        data.X_train,
        data.y_train,
        test_size=VALIDATION_FRACTION,
        stratify=data.y_train,
        random_state=RANDOM_STATE,
    )
    X_val, y_val = X_val[:N_QUERIES], y_val[:N_QUERIES]
    grid = [k for k in config["k_grid"] if X_fit.shape[0] // k >= MIN_ROWS_PER_SHARD]
    validation = []
    chosen = {}
    if config["validate"] and len(grid) > 1:
        for k in grid:
            for arm in arms:
                accs = [
                    run_arm(
                        arm,
                        k,
                        data.classes,
                        X_fit,
                        y_fit,
                        data.X_public,
                        X_val,
                        y_val,
                        seed,
                        n_asked,
                    )[0]
                    for seed in seeds
                ]
                validation.append(
                    {
                        "dataset": name,
                        "arm": arm,
                        "k": k,
                        "val_acc": float(np.mean(accs)),
                        "val_sd": float(np.std(accs)),
                    }
                )
        for arm in arms:
            rows = [r for r in validation if r["arm"] == arm]
            chosen[arm] = max(rows, key=lambda r: r["val_acc"])["k"]
    else:
        chosen = {arm: grid[0] for arm in arms}

    # -- the test queries, once, with the chosen k -----------------------------
    model = full_model().fit(data.X_train, data.y_train)
    reference = {
        "base_rate": base_rate(data.y_train, data.y_query),
        "full_model": float(np.mean(model.predict(data.X_query) == data.y_query)),
    }
    results = {}
    for arm in arms:
        k = chosen[arm]
        runs = [
            run_arm(
                arm,
                k,
                data.classes,
                data.X_train,
                data.y_train,
                data.X_public,
                data.X_query,
                data.y_query,
                seed,
                n_asked,
            )
            for seed in seeds
        ]
        accs = np.array([acc for acc, _ in runs])
        results[arm] = {
            "dataset": name,
            "arm": arm,
            "k": k,
            "acc_seeds": accs.tolist(),
            "acc_mean": float(accs.mean()),
            "acc_sd": float(accs.std()),
            "teacher_vote": vote_accuracy(
                k,
                data.classes,
                data.X_train,
                data.y_train,
                data.X_query,
                data.y_query,
            ),
            **reference,
            **runs[0][1],
        }
    diff = 100 * (
        np.array(results["student"]["acc_seeds"])
        - np.array(results["direct"]["acc_seeds"])
    )
    results["student"]["margin_points"] = float(diff.mean())
    results["student"]["margin_sd"] = float(diff.std())
    seconds = time.perf_counter() - start
    described = {
        "name": name,
        "description": data.describe(),
        "source": data.source,
        "n_fit": int(X_fit.shape[0]),
        "n_val_queries": int(X_val.shape[0]),
        "k_grid": grid,
        "n_public_asked": n_asked,
        "seconds": seconds,
    }
    print(
        f"{name}: student k={chosen['student']} "
        f"{results['student']['acc_mean']:.4f}, direct k={chosen['direct']} "
        f"{results['direct']['acc_mean']:.4f} ({seconds:.0f} s)",
        file=sys.stderr,
    )
    return [results[a] for a in arms], validation, described


def _mean_sd(mean_key, sd_key, digits=4):
    def cell(row):
        if row.get(mean_key) is None:
            return None
        return f"{row[mean_key]:.{digits}f} ± {row[sd_key]:.{digits}f}"

    return cell


COLUMNS = [
    ("table", "dataset", "", "l"),
    ("arm", "arm", "", "l"),
    ("chosen k", "k", "d", "r"),
    ("accuracy (mean ± sd)", _mean_sd("acc_mean", "acc_sd"), "", "r"),
    ("base rate", "base_rate", ".4f", "r"),
    ("teachers' vote (non-private)", "teacher_vote", ".4f", "r"),
    ("non-private model", "full_model", ".4f", "r"),
    (
        "margin, student - direct (points)",
        _mean_sd("margin_points", "margin_sd", 2),
        "",
        "r",
    ),
]
VALIDATION_COLUMNS = [
    ("table", "dataset", "", "l"),
    ("arm", "arm", "", "l"),
    ("k", "k", "d", "r"),
    ("validation accuracy (mean ± sd)", _mean_sd("val_acc", "val_sd"), "", "r"),
]


def write(result, out_dir, stem):
    out_dir = Path(out_dir)
    write_json(out_dir / f"{stem}.json", result)
    config = result["config"]
    n_seeds = len(config["seeds"])
    lines = [
        "# Student or direct answers for 2,000 private queries",
        "",
        f"Command: `{result['command']}` ({result['seconds']:.0f} s; "
        f"{result['environment']['date']}, load "
        f"{result['environment']['load_average_1min']}).",
        "",
        f"Both arms spend epsilon = {EPSILON:g}, delta = {DELTA:g} in total. "
        "*student*: `KnowledgeTransferClassifier` whose "
        "`PrivatePredictionClassifier` teacher (exponential mechanism, the "
        "tightest per-query split) labels "
        f"{KT_UNCERTAINTY_FRACTION:.0%} of {config['n_public']:,} public rows "
        f"(`query_strategy='uncertainty'`, {KT_ROUNDS} rounds, `max_queries` = "
        "the rows asked); the published student (scaled LogisticRegression) "
        f"answers the {N_QUERIES:,} queries for free. *direct*: "
        f"`PrivatePredictionClassifier(max_queries={N_QUERIES})`, exponential "
        "mechanism, charged per query. "
        "Teachers: scaled LogisticRegression on disjoint shards, the same "
        "shards for both arms at a given k.",
        "",
        "k for each arm was chosen on a validation split of the private "
        f"training rows ({VALIDATION_FRACTION:.0%} held out, {N_QUERIES:,} of "
        "them as queries, teachers fitted on the rest; k in "
        f"{{{', '.join(str(k) for k in config['k_grid'])}}} with at least "
        f"{MIN_ROWS_PER_SHARD} rows per shard)"
        if config["validate"]
        else f"k fixed at {config['k_grid'][0]} (quick mode: no validation)",
    ]
    lines[-1] += (
        f"; then refitted on all training rows and scored once on the "
        f"{N_QUERIES:,} test queries, mean ± sd over {n_seeds} noise seed"
        f"{'s' if n_seeds > 1 else ''} (the teachers are the same for every "
        "seed). The teachers' vote is the NON-private majority vote of the "
        "arm's own k teachers; the non-private model is one scaled "
        "LogisticRegression on all training rows. Margin: student minus "
        "direct accuracy in points, paired by seed. Choosing k on the "
        "private rows is outside the privacy guarantee."
    )
    lines += ["", *markdown_table(result["rows"], COLUMNS), ""]
    for info in result["datasets"]:
        lines.append(
            f"- {info['description']} ({info['source']}); k grid "
            f"{info['k_grid']}; the student's teacher asks about "
            f"{info['n_public_asked']:,} public rows; {info['seconds']:.0f} s."
        )
    if result["validation"]:
        lines += [
            "",
            "Validation (private training rows only; every k of the grid):",
            "",
            *markdown_table(result["validation"], VALIDATION_COLUMNS),
        ]
    lines.append("")
    write_markdown(out_dir / f"{stem}.md", lines)


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="CI mode: adult only, k = 500, one seed, 500 public rows",
    )
    config = QUICK if args.quick else FULL
    env = environment()
    start = time.perf_counter()
    rows, validation, described = [], [], []
    for name in config["datasets"]:
        # One BLAS thread: the teachers' fits are tiny, and threaded BLAS
        # makes each one about 15 times slower on two shared cores.
        with threadpool_limits(limits=1):
            table_rows, table_validation, info = run_table(name, config)
        rows += table_rows
        validation += table_validation
        described.append(info)
    seconds = time.perf_counter() - start
    result = {
        "command": command("student_vs_direct.py", "--quick" if args.quick else ""),
        "seconds": seconds,
        "environment": env,
        "config": dict(config),
        "epsilon": EPSILON,
        "delta": DELTA,
        "n_queries": N_QUERIES,
        "datasets": described,
        "rows": rows,
        "validation": validation,
    }
    stem = "student_vs_direct_quick" if args.quick else "student_vs_direct"
    write(result, args.out, stem)
    print(f"student_vs_direct: {len(rows)} rows in {seconds:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
