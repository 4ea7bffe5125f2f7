"""Peer rows: diffprivlib's LinearRegression on a split written by regression.py.

Run by ``benchmarks/regression.py`` in a separate environment whose
scikit-learn diffprivlib supports (diffprivlib 0.6.6 needs scikit-learn
below 1.6; dpsklearn's own environment has a newer one)::

    python3 -m venv /work/venv-dpl
    /work/venv-dpl/bin/pip install diffprivlib "scikit-learn==1.5.2"
    /work/venv-dpl/bin/python benchmarks/diffprivlib_peer.py split.npz \\
        --epsilons 0.5 1 2 8 --draws 5

The ``.npz`` holds ``X_train``, ``y_train``, ``X_test``, ``y_test``,
``bounds_X`` (2 x n_features) and ``bounds_y``. diffprivlib's
``LinearRegression`` (the functional mechanism, pure epsilon-DP) is fitted
at each epsilon with ``draws`` seeds; the script prints JSON (R^2 and MAE on
the test rows, mean and standard deviation over the draws). It imports only
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
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()

    import diffprivlib
    import sklearn
    from diffprivlib.models import LinearRegression
    from sklearn.metrics import mean_absolute_error, r2_score

    data = np.load(args.data)
    bounds_X = (data["bounds_X"][0], data["bounds_X"][1])
    bounds_y = (float(data["bounds_y"][0]), float(data["bounds_y"][1]))
    rows = []
    for epsilon in args.epsilons:
        r2, mae = [], []
        for seed in range(args.draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = LinearRegression(
                    epsilon=epsilon,
                    bounds_X=bounds_X,
                    bounds_y=bounds_y,
                    random_state=seed,
                ).fit(data["X_train"], data["y_train"])
            pred = model.predict(data["X_test"])
            r2.append(r2_score(data["y_test"], pred))
            mae.append(mean_absolute_error(data["y_test"], pred))
        rows.append(
            {
                "epsilon": epsilon,
                "r2": float(np.mean(r2)),
                "r2_sd": float(np.std(r2)),
                "mae": float(np.mean(mae)),
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
