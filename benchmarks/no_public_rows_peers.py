"""Peer rows for ``no_public_rows.py``: DP-EBM or diffprivlib on a written split.

Run by ``benchmarks/no_public_rows.py`` in environments of their own
(InterpretML's DP-EBM and diffprivlib need other scikit-learn versions than
dpsklearn's)::

    python3 -m venv /work/venvs/dpebm
    /work/venvs/dpebm/bin/pip install "interpret-core==0.7.8" pandas
    python3 -m venv /work/venvs/dpl
    /work/venvs/dpl/bin/pip install diffprivlib "scikit-learn==1.5.2" pandas
    /work/venvs/dpebm/bin/python benchmarks/no_public_rows_peers.py split.npz \\
        --peer dpebm --epsilons 0.5 1 4 --seeds 3

The ``.npz`` (written by the caller) holds ``X_train``, ``X_test`` (one
number per column: a numeric value, or a category's index into its public
list; NaN where missing), ``y_train``, ``y_test``, ``kinds`` (``"numeric"``
or ``"categorical"`` per column), ``bounds`` (2 x columns: the public
bounds of the numeric columns), ``n_levels`` (categories per categorical
column), ``task`` and, for regression, ``target_range``. Every peer gets
the public bounds and category lists, so none reads them from the rows:

* ``dpebm``: ``DPExplainableBoostingClassifier`` (binary only) or
  ``...Regressor`` with its defaults and with ``max_rounds=1000``,
  ``privacy_bounds`` and the categories as ``feature_types``;
* ``diffprivlib``: categories one-hot, numeric columns clipped to their
  bounds and scaled to [-1, 1], missing values at 0;
  ``LogisticRegression(data_norm=sqrt(columns))``, ``GaussianNB(bounds)``,
  ``RandomForestClassifier(bounds, classes)``; ``LinearRegression`` for a
  regression target (its predictions clipped to the public range).

Prints JSON: accuracy (or R^2) on the test rows per model and epsilon, the
mean over ``--seeds`` seeds, and the mean fit time. Imports only numpy,
pandas, scikit-learn and the peer, never dpsklearn.
"""

import argparse
import json
import time
import warnings

import numpy as np


def _dpebm_frame(X, kinds, n_levels):
    import pandas as pd

    columns = {}
    for j, kind in enumerate(kinds):
        if kind == "categorical":
            codes = X[:, j]
            values = np.where(np.isnan(codes), "missing", codes.astype("U16"))
            values = np.char.replace(values, ".0", "")
            columns[f"c{j}"] = pd.Series(values, dtype=object)
        else:
            columns[f"c{j}"] = X[:, j]
    return pd.DataFrame(columns)


def dpebm_models(data, epsilon, seed):
    from interpret.privacy import (
        DPExplainableBoostingClassifier,
        DPExplainableBoostingRegressor,
    )

    kinds, n_levels = list(data["kinds"]), data["n_levels"]
    bounds = data["bounds"]
    types, privacy_bounds = [], {}
    for j, kind in enumerate(kinds):
        if kind == "categorical":
            types.append([str(i) for i in range(int(n_levels[j]))] + ["missing"])
        else:
            types.append("continuous")
            privacy_bounds[f"c{j}"] = (float(bounds[0, j]), float(bounds[1, j]))
    common = dict(
        feature_types=types,
        privacy_bounds=privacy_bounds,
        epsilon=epsilon,
        delta=float(data["delta"]),
        random_state=seed,
    )
    if str(data["task"]) == "regression":
        lo, hi = (float(v) for v in data["target_range"])
        common.update(privacy_target_min=lo, privacy_target_max=hi)
        cls = DPExplainableBoostingRegressor
    else:
        cls = DPExplainableBoostingClassifier
    return {
        "DP-EBM (defaults)": cls(**common),
        "DP-EBM (max_rounds=1000)": cls(max_rounds=1000, **common),
    }


def _scaled_onehot(X, kinds, bounds, n_levels):
    parts = []
    for j, kind in enumerate(kinds):
        column = X[:, j]
        if kind == "categorical":
            levels = int(n_levels[j])
            onehot = np.zeros((X.shape[0], levels))
            present = ~np.isnan(column)
            onehot[np.flatnonzero(present), column[present].astype(int)] = 1.0
            parts.append(onehot)
        else:
            lo, hi = bounds[0, j], bounds[1, j]
            scaled = (np.clip(column, lo, hi) - lo) / (hi - lo) * 2 - 1
            parts.append(np.nan_to_num(scaled, nan=0.0)[:, None])
    return np.hstack(parts)


def diffprivlib_models(data, epsilon, seed):
    from diffprivlib.models import (
        GaussianNB,
        LinearRegression,
        LogisticRegression,
        RandomForestClassifier,
    )

    width = data["width"]
    lower = np.where(data["onehot_mask"], 0.0, -1.0)
    upper = np.ones(int(width))
    if str(data["task"]) == "regression":
        lo, hi = (float(v) for v in data["target_range"])
        return {
            "diffprivlib LinearRegression": LinearRegression(
                epsilon=epsilon,
                bounds_X=(lower, upper),
                bounds_y=(lo, hi),
                random_state=seed,
            )
        }
    classes = np.unique(np.concatenate([data["y_train"], data["y_test"]]))
    norm = float(np.sqrt(np.sum(np.maximum(lower**2, upper**2))))
    return {
        "diffprivlib LogisticRegression": LogisticRegression(
            epsilon=epsilon, data_norm=norm, random_state=seed
        ),
        "diffprivlib GaussianNB": GaussianNB(
            epsilon=epsilon, bounds=(lower, upper), random_state=seed
        ),
        "diffprivlib RandomForestClassifier": RandomForestClassifier(
            epsilon=epsilon,
            bounds=(lower, upper),
            classes=classes,
            random_state=seed,
        ),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--peer", choices=("dpebm", "diffprivlib"), required=True)
    parser.add_argument("--epsilons", type=float, nargs="+", required=True)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()

    loaded = dict(np.load(args.data, allow_pickle=False))
    kinds, bounds, n_levels = loaded["kinds"], loaded["bounds"], loaded["n_levels"]
    regression = str(loaded["task"]) == "regression"
    if args.peer == "dpebm":
        X_train = _dpebm_frame(loaded["X_train"], kinds, n_levels)
        X_test = _dpebm_frame(loaded["X_test"], kinds, n_levels)
        factory = dpebm_models
        import interpret

        version = {"interpret": interpret.__version__}
    else:
        X_train = _scaled_onehot(loaded["X_train"], kinds, bounds, n_levels)
        X_test = _scaled_onehot(loaded["X_test"], kinds, bounds, n_levels)
        mask = np.concatenate(
            [
                np.ones(int(n_levels[j]), bool) if k == "categorical" else [False]
                for j, k in enumerate(kinds)
            ]
        )
        loaded.update(width=X_train.shape[1], onehot_mask=mask)
        factory = diffprivlib_models
        import diffprivlib

        version = {"diffprivlib": diffprivlib.__version__}
    import sklearn

    version["scikit-learn"] = sklearn.__version__
    y_train, y_test = loaded["y_train"], loaded["y_test"]
    rows = []
    for epsilon in args.epsilons:
        scores, times = {}, {}
        for seed in range(args.seeds):
            for name, model in factory(loaded, epsilon, seed).items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    times.setdefault(name, []).append(time.perf_counter() - start)
                    pred = model.predict(X_test)
                if regression:
                    lo, hi = (float(v) for v in loaded["target_range"])
                    pred = np.clip(np.nan_to_num(pred, nan=(lo + hi) / 2), lo, hi)
                    resid = np.sum((y_test - pred) ** 2)
                    score = 1 - resid / np.sum((y_test - y_test.mean()) ** 2)
                else:
                    score = float(np.mean(pred == y_test))
                scores.setdefault(name, []).append(float(score))
        for name in scores:
            rows.append(
                {
                    "model": name,
                    "epsilon": epsilon,
                    "score": float(np.mean(scores[name])),
                    "score_sd": float(np.std(scores[name])),
                    "fit_seconds": float(np.mean(times[name])),
                }
            )
    print(json.dumps({"versions": version, "rows": rows}))


if __name__ == "__main__":
    main()
