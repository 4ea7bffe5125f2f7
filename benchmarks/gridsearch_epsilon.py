"""Does GridSearchCV over epsilon show the privacy-utility trade-off?

``GridSearchCV(PrivatePredictionClassifier(...), {"epsilon": [0.5, 1, 2, 4, 8]},
cv=3)`` on the whole Adult training file. Each fold's model answers every
validation row privately (``max_queries`` is the fold size), so the mean test
score per epsilon is the accuracy of private answers. The base rate and a
non-private model on the same folds stand beside it.

Tuning on private data is outside the guarantee: ``score`` compares private
answers with the true validation labels, so ``cv_results_`` are not private
unless the validation rows are public. This benchmark shows the trade-off; it
is not a private model-selection procedure.

Usage::

    python benchmarks/gridsearch_epsilon.py [--quick] [--out docs/benchmarks]
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    write_json,
    write_markdown,
)

from dpsklearn import PrivatePredictionClassifier  # noqa: E402
from dpsklearn.datasets import load_adult  # noqa: E402
from dpsklearn.demo import adult_encoder, teacher_estimator  # noqa: E402

EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0]


def run(n_rows=None, seed=0):
    train = load_adult(subset="train")
    X = adult_encoder(train).fit(train.data).transform(train.data)
    y = train.target
    if n_rows is not None:
        rows = np.random.RandomState(seed).choice(len(y), n_rows, replace=False)
        X, y = X[rows], y[rows]
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=seed)
    fold_size = int(np.ceil(len(y) / 3))
    model = PrivatePredictionClassifier(
        teacher_estimator(),
        max_queries=fold_size,
        delta=1e-5,
        classes=np.asarray(train.target_names),
        random_state=seed,
        n_jobs=-1,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(
            model, {"epsilon": EPSILONS}, cv=folds, refit=False, error_score="raise"
        ).fit(X, y)
    seconds = time.perf_counter() - start
    scores = search.cv_results_["mean_test_score"]
    nonprivate = cross_val_score(teacher_estimator(), X, y, cv=folds).mean()
    majority = max(np.mean(y == label) for label in np.unique(y))
    rho = spearmanr(EPSILONS, scores).statistic
    return {
        "n_rows": int(len(y)),
        "folds": 3,
        "max_queries": fold_size,
        "delta": 1e-5,
        "epsilons": EPSILONS,
        "mean_test_accuracy": [float(s) for s in scores],
        "std_test_accuracy": [float(s) for s in search.cv_results_["std_test_score"]],
        "accuracy_gain_8_vs_0.5": float(scores[-1] - scores[0]),
        "spearman_epsilon_accuracy": float(rho),
        "base_rate": float(majority),
        "nonprivate_model_cv_accuracy": float(nonprivate),
        "seconds": seconds,
    }


def write(result, out_dir, stem):
    out_dir = Path(out_dir)
    write_json(out_dir / f"{stem}.json", result, trailing_newline=False)
    lines = [
        "# GridSearchCV over epsilon: PrivatePredictionClassifier on Adult",
        "",
        f"{result['n_rows']} training rows, 3-fold CV, every validation row "
        f"answered privately (max_queries={result['max_queries']}), "
        f"delta={result['delta']:g}. Tuning on private data is outside the "
        "guarantee (the scores use true validation labels).",
        "",
        "| epsilon | mean accuracy | std |",
        "|---|---|---|",
    ]
    for eps, acc, std in zip(
        result["epsilons"],
        result["mean_test_accuracy"],
        result["std_test_accuracy"],
        strict=True,
    ):
        lines.append(f"| {eps:g} | {acc:.3f} | {std:.3f} |")
    lines += [
        "",
        f"accuracy(8) - accuracy(0.5) = {result['accuracy_gain_8_vs_0.5']:.3f}; "
        f"Spearman(epsilon, accuracy) = {result['spearman_epsilon_accuracy']:.2f}; "
        f"base rate {result['base_rate']:.3f}; non-private model (same folds) "
        f"{result['nonprivate_model_cv_accuracy']:.3f}; "
        f"{result['seconds']:.0f} s.",
        "",
    ]
    write_markdown(out_dir / f"{stem}.md", lines)


def main(argv=None):
    args = cli(
        __doc__, argv, quick_help="5,000-row sample; writes gridsearch_epsilon_quick.*"
    )
    env = environment()
    result = run(n_rows=5000 if args.quick else None)
    result["environment"] = env
    quick = "--quick" if args.quick else ""
    result["command"] = command("gridsearch_epsilon.py", quick)
    print(json.dumps(result, indent=2))
    write(
        result,
        args.out,
        "gridsearch_epsilon_quick" if args.quick else "gridsearch_epsilon",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
