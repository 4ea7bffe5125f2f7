"""Peer rows: diffprivlib's LinearRegression on a split written by regression_tables.py.

Run by ``benchmarks/regression_tables.py`` in a separate environment whose
scikit-learn diffprivlib supports (diffprivlib 0.6.6 needs scikit-learn
below 1.6; dpsklearn's own environment has a newer one)::

    python3 -m venv /work/venvs/regression-dpl
    /work/venvs/regression-dpl/bin/pip install diffprivlib "scikit-learn==1.5.2"
    /work/venvs/regression-dpl/bin/python benchmarks/diffprivlib_peer.py \\
        split.npz --epsilons 0.5 1 2 8 --draws 3 --first 1000

The ``.npz`` holds ``X_train``, ``y_train``, ``X_test``, ``y_test``,
``bounds_X`` (2 x n_features) and ``bounds_y``; the caller has already
mapped every column to [-1, 1] by its public bounds and clipped it, and
dropped the first level of every one-hot block (full rank). diffprivlib's
``LinearRegression`` (the functional mechanism of Zhang et al. 2012, pure
epsilon-DP) is fitted at each epsilon with ``draws`` seeds, with those
``bounds_X`` and ``bounds_y``; its predictions are clipped to ``bounds_y``
(post-processing: a user who knows the public range would, and every
dpsklearn estimator does). The script prints JSON: R^2 on the first
``--first`` test rows and on all of them (mean and standard deviation over
the draws), and the R^2 of the unclipped predictions. It imports only
numpy, scikit-learn and diffprivlib, never dpsklearn.
"""

import argparse
import json
import warnings

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--epsilons", type=float, nargs="+", required=True)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--first", type=int, default=None)
    args = parser.parse_args()

    import diffprivlib
    import sklearn
    from diffprivlib.models import LinearRegression
    from sklearn.metrics import r2_score

    data = np.load(args.data)
    bounds_X = (data["bounds_X"][0], data["bounds_X"][1])
    lo, hi = (float(data["bounds_y"][0]), float(data["bounds_y"][1]))
    y_test = data["y_test"]
    first = len(y_test) if args.first is None else args.first
    rows = []
    for epsilon in args.epsilons:
        r2, r2_all, unclipped = [], [], []
        for seed in range(args.draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = LinearRegression(
                    epsilon=epsilon,
                    bounds_X=bounds_X,
                    bounds_y=(lo, hi),
                    random_state=seed,
                ).fit(data["X_train"], data["y_train"])
                raw = model.predict(data["X_test"])
            pred = np.clip(np.nan_to_num(raw, nan=(lo + hi) / 2), lo, hi)
            r2.append(r2_score(y_test[:first], pred[:first]))
            r2_all.append(r2_score(y_test, pred))
            unclipped.append(r2_score(y_test[:first], np.nan_to_num(raw[:first])))
        rows.append(
            {
                "epsilon": epsilon,
                "r2": float(np.mean(r2)),
                "r2_sd": float(np.std(r2)),
                "r2_all": float(np.mean(r2_all)),
                "r2_unclipped": float(np.median(unclipped)),
            }
        )
    print(
        json.dumps(
            {
                "diffprivlib": diffprivlib.__version__,
                "sklearn": sklearn.__version__,
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
