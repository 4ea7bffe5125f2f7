"""The evidence for the regression defaults, on validation rows only.

Two sweeps over the tables of ``benchmarks/regression_tables.py`` (same
splits; the test rows are never read here):

* ``--kt`` -- ``KnowledgeTransferRegressor``'s defaults: the teachers'
  ridge penalty (diamonds' validation rows; the teachers' mean and the
  student on held-out rows of every table and of a synthetic table with
  more columns than rows per teacher), teacher shard size
  against the rule ``knowledge_transfer_shard_rows`` on diamonds (all and a
  quarter of the rows), one default reverted at a time, the student
  (columns clipped to the public rows' span against the previous scaled
  ridge and a cubic spline, on 8,000 held-out private rows, and on diamonds
  with the private rows that carry data-entry errors), and the defaults
  against the previous defaults on the four other tables; writes
  ``regression_tables_kt_sweep.md``;
* ``--ssp`` -- ``PrivateKernelRidge``'s linear first stage
  (``SufficientStatistics(linear_share=...)``): the share at ``epsilon = 1``
  on every table, and ``0`` against the default at every ``epsilon``;
  writes ``regression_tables_ssp_sweep.md``.

Tuning on private rows is outside the guarantee; these numbers choose
defaults, once, for every user.

Usage::

    python benchmarks/regression_sweeps.py [--quick | --kt | --ssp]
        [--out docs/benchmarks]

``--quick`` (CI) runs each sweep's code once on 4,000 Friedman #1 rows.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_regression
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import SplineTransformer, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    cli,
    command,
    environment,
    markdown_table,
    write_json,
    write_markdown,
)
from regression_tables import (  # noqa: E402
    DELTA,
    Table,
    ignore_expected_warnings,
    load_table,
    teachers_clipped_mean,
    teachers_only,
)

from dpsklearn import (  # noqa: E402
    KnowledgeTransferRegressor,
    PrivateKernelRidge,
    PrivatePredictionRegressor,
)
from dpsklearn.mechanisms import AdaptiveRange, SufficientStatistics  # noqa: E402
from dpsklearn.planning import knowledge_transfer_shard_rows  # noqa: E402

# -- the knowledge-transfer evidence (validation rows only) -----------------------
KT_SWEEP = {
    "epsilons": (0.5, 1.0, 2.0, 8.0),
    "rows_per_teacher": (20, 30, 40, 60, 90, 150),
    "quarter_rows_per_teacher": (10, 15, 20, 30, 45),
    "draws": 2,
    "teacher_penalties": (1.0, 0.3, 0.1, 0.03, 0.01),
}


def kt_validation(table, epsilon, teacher=None, **params):
    """Validation R^2 of a KnowledgeTransferRegressor, mean over the draws.

    ``teacher``: extra parameters of the PrivatePredictionRegressor teacher
    (its public range and budget are always given); the rest are the
    student's parameters. Defaults everywhere else.
    """
    scores = []
    for draw in range(KT_SWEEP["draws"]):
        model = _kt_model(table, epsilon, draw, teacher, **params).fit(
            table.X_train, table.y_train, X_public=table.X_public
        )
        scores.append(r2_score(table.y_val, model.predict(table.X_val)))
    return float(np.mean(scores))


def _kt_model(table, epsilon, draw, teacher=None, **params):
    """The sweep's KnowledgeTransferRegressor: defaults, the range, seeded draws."""
    return KnowledgeTransferRegressor(
        PrivatePredictionRegressor(
            target_range=table.target_range,
            epsilon=epsilon,
            random_state=0,
            noise_random_state=100 + draw,
            **(teacher or {}),
        ),
        random_state=draw,
        **params,
    )


def previous_defaults(table):
    """The defaults before this change: sequential queries, a Ridge student,
    the teacher as PrivatePredictionRegressor resolves itself."""
    return {
        "teacher": {
            "estimator": Ridge(),
            "n_estimators": table.X_train.shape[0] // 10,
            "mechanism": AdaptiveRange(),
        },
        "student": Ridge(),
        "query_strategy": "sequential",
    }


#: Students compared on held-out private rows (``kt_student_holdout``), each
#: a function of the table (public rows only). An explicit student is used as
#: given: only the default clips its answers to the teacher's public range.
STUDENTS = {
    "default (columns clipped to the public span, RidgeCV, answers clipped "
    "to the range)": None,
    "columns clipped to the public span, RidgeCV (answers not clipped)": (
        lambda table: make_pipeline(
            FrozenEstimator(_span(table)),
            StandardScaler(),
            RidgeCV(alphas=np.logspace(-2, 3, 11)),
        )
    ),
    "previous default (StandardScaler, RidgeCV)": lambda table: make_pipeline(
        StandardScaler(with_mean=False), RidgeCV(alphas=np.logspace(-2, 3, 11))
    ),
    "cubic spline, 5 knots, constant beyond (RidgeCV)": lambda table: make_pipeline(
        SplineTransformer(n_knots=5, extrapolation="constant"),
        RidgeCV(alphas=np.logspace(-2, 3, 11)),
    ),
}


def _span(table):
    """Every column clipped to the public rows' span (the default's first step)."""
    return SplineTransformer(
        degree=1, n_knots=2, extrapolation="constant", include_bias=False
    ).fit(table.X_public)


def _splines_on_numbers(table, degree):
    """B-splines (4 quantile knots, public rows) on the columns with more than
    two public values; the 0/1 columns as they are."""
    numbers = np.flatnonzero(
        [len(np.unique(column)) > 2 for column in table.X_public.T]
    )
    binary = np.setdiff1d(np.arange(table.X_public.shape[1]), numbers)
    splines = SplineTransformer(
        degree=degree,
        n_knots=4,
        knots="quantile",
        extrapolation="constant",
        include_bias=False,
    )
    columns = ColumnTransformer(
        [("numbers", splines, numbers), ("binary", "passthrough", binary)]
    )
    return FrozenEstimator(columns.fit(table.X_public))


#: Teachers' estimators compared on held-out private rows with the default
#: student, each a function of the table (public rows only).
TEACHERS = {
    "cubic-spline teachers (4 quantile knots, public rows)": lambda table: (
        make_pipeline(
            FrozenEstimator(
                SplineTransformer(
                    n_knots=4, knots="quantile", extrapolation="constant"
                ).fit(table.X_public)
            ),
            StandardScaler(),
            Ridge(),
        )
    ),
    "cubic splines on the non-binary columns only": lambda table: make_pipeline(
        _splines_on_numbers(table, 3), StandardScaler(with_mean=False), Ridge()
    ),
    "piecewise-linear splines on the non-binary columns only": lambda table: (
        make_pipeline(
            _splines_on_numbers(table, 1), StandardScaler(with_mean=False), Ridge()
        )
    ),
    "linear, penalty by leave-one-out on each shard (RidgeCV)": lambda table: (
        make_pipeline(
            StandardScaler(with_mean=False), RidgeCV(alphas=np.logspace(-2, 3, 11))
        )
    ),
}


def scaled_ridge(alpha):
    """The teachers' estimator the defaults resolve, with penalty ``alpha``
    (the default: 0.1)."""
    return make_pipeline(StandardScaler(with_mean=False), Ridge(alpha=alpha))


def synthetic_table():
    """A table where the teachers' shards are narrower than the columns:
    ``make_regression`` with 40 columns (20 informative), 20,000 private rows
    (23 rows per teacher at ``epsilon = 1`` once 5,000 are held out),
    targets clipped to their 0.1 % and 99.9 % quantiles, the public range."""
    X, y = make_regression(
        n_samples=29_000, n_features=40, n_informative=20, noise=30, random_state=0
    )
    lo, hi = np.quantile(y, [0.001, 0.999])
    y = np.clip(y, lo, hi)
    bounds = np.array([X.min(axis=0), X.max(axis=0)])
    return Table(
        "synthetic, 40 columns",
        X[:20_000],
        y[:20_000],
        X[20_000:22_000],
        X[22_000:24_000],
        y[22_000:24_000],
        X[24_000:],
        y[24_000:],
        (float(lo), float(hi)),
        bounds,
        "sklearn make_regression",
    )


def teachers_mean_holdout(table, alpha, n_holdout=8_000):
    """Held-out R^2 of the teachers' mean (non-private; the student's ceiling)
    and of the published student (mean of the draws), teachers' penalty
    ``alpha``, every other parameter its default."""
    X, y = table.X_train, table.y_train
    rest = np.random.RandomState(5).permutation(len(y))
    n_holdout = min(n_holdout, len(y) // 4)
    held, fit_rows = rest[:n_holdout], rest[n_holdout:]
    teacher = {"estimator": scaled_ridge(alpha)}
    students = []
    for draw in range(KT_SWEEP["draws"]):
        model = _kt_model(table, 1.0, draw, teacher).fit(
            X[fit_rows], y[fit_rows], X_public=table.X_public
        )
        students.append(r2_score(y[held], model.predict(X[held])))
    teachers = teachers_only(
        PrivatePredictionRegressor(
            scaled_ridge(alpha),
            n_estimators=model.teacher_params_["n_estimators"],  # as resolved
            mechanism="clipped_mean",
            target_range=table.target_range,
            random_state=0,
        )
    ).fit(X[fit_rows], y[fit_rows])
    return {
        "held-out rows, the teachers' mean (non-private)": r2_score(
            y[held], teachers_clipped_mean(teachers, X[held])
        ),
        "held-out rows, the student": float(np.mean(students)),
    }


def kt_student_holdout(table, student, epsilon=1.0, n_holdout=8_000, teacher=None):
    """A student's R^2 on private rows held out of the fit (validation only).

    8,000 random private rows are held out; on diamonds also every private
    row with a dimension of 0 mm or over 15 mm (data-entry errors the
    diamonds data is known for), which the student meets as query rows
    outside the public rows' span. Mean of the draws.
    """
    X, y = table.X_train, table.y_train
    odd = np.array([], dtype=int)
    if table.name == "diamonds":
        dims = X[:, 3:6]  # x, y, z in mm
        odd = np.flatnonzero((dims == 0).any(axis=1) | (dims > 15).any(axis=1))
    rest = np.setdiff1d(np.arange(len(y)), odd)
    np.random.RandomState(5).shuffle(rest)
    held, fit_rows = rest[:n_holdout], rest[n_holdout:]
    scores = {"held-out rows": [], "held-out rows and the data-entry errors": []}
    for draw in range(KT_SWEEP["draws"]):
        model = _kt_model(table, epsilon, draw, teacher, student=student).fit(
            X[fit_rows], y[fit_rows], X_public=table.X_public
        )
        scores["held-out rows"].append(r2_score(y[held], model.predict(X[held])))
        both = np.concatenate([held, odd])
        scores["held-out rows and the data-entry errors"].append(
            r2_score(y[both], model.predict(X[both]))
        )
    if not len(odd):
        del scores["held-out rows and the data-entry errors"]
    return {key: float(np.mean(value)) for key, value in scores.items()}


def kt_sweep():
    """The evidence for KnowledgeTransferRegressor's defaults (docs/regression.rst)."""
    rows = []

    def record(part, table, epsilon, what, value):
        rows.append(
            {
                "part": part,
                "table": table,
                "epsilon": epsilon,
                "what": what,
                "val_r2": value,
            }
        )
        print(f"  kt sweep {rows[-1]}", file=sys.stderr)

    def add(part, table, epsilon, what, **kwargs):
        record(part, table.name, epsilon, what, kt_validation(table, epsilon, **kwargs))

    diamonds = load_table("diamonds")
    n = diamonds.X_train.shape[0]
    resolved = {"estimator": scaled_ridge(0.1), "mechanism": "clipped_mean"}
    for epsilon in KT_SWEEP["epsilons"]:
        rule = knowledge_transfer_shard_rows(n_samples=n, epsilon=epsilon, delta=DELTA)
        for per in KT_SWEEP["rows_per_teacher"]:
            add(
                "shard rows, diamonds",
                diamonds,
                epsilon,
                f"{per} rows per teacher (rule: {rule})",
                teacher={**resolved, "n_estimators": n // per},
            )
    quarter = load_table("diamonds")
    quarter.name = "diamonds, first quarter of the rows"
    quarter.X_train, quarter.y_train = (
        diamonds.X_train[: n // 4],
        diamonds.y_train[: n // 4],
    )
    for epsilon in (1.0, 8.0):
        rule = knowledge_transfer_shard_rows(
            n_samples=n // 4, epsilon=epsilon, delta=DELTA
        )
        for per in KT_SWEEP["quarter_rows_per_teacher"]:
            add(
                "shard rows, diamonds",
                quarter,
                epsilon,
                f"{per} rows per teacher (rule: {rule})",
                teacher={**resolved, "n_estimators": (n // 4) // per},
            )
    old = previous_defaults(diamonds)
    add("ablation, diamonds", diamonds, 1.0, "defaults")
    add(
        "ablation, diamonds",
        diamonds,
        1.0,
        "teacher estimator Ridge()",
        teacher={"estimator": Ridge()},
    )
    add(
        "ablation, diamonds",
        diamonds,
        1.0,
        "teacher mechanism AdaptiveRange()",
        teacher={"mechanism": AdaptiveRange()},
    )
    add(
        "ablation, diamonds",
        diamonds,
        1.0,
        "teacher k = rows / 10",
        teacher={"n_estimators": n // 10},
    )
    add(
        "ablation, diamonds",
        diamonds,
        1.0,
        "query_strategy='sequential'",
        query_strategy="sequential",
    )
    add("ablation, diamonds", diamonds, 1.0, "student Ridge()", student=Ridge())
    add("ablation, diamonds", diamonds, 1.0, "previous defaults", **old)
    for epsilon in (1.0, 8.0):
        for alpha in KT_SWEEP["teacher_penalties"]:
            add(
                "teachers' penalty, diamonds",
                diamonds,
                epsilon,
                f"scaled ridge, alpha = {alpha:g}",
                teacher={"estimator": scaled_ridge(alpha)},
            )
    for name in ("diamonds", "flights", "wages", "food", "friedman1", "synthetic"):
        table = load_table(name) if name != "synthetic" else synthetic_table()
        for alpha in (1.0, 0.1, 0.01):
            what = f"scaled ridge, alpha = {alpha:g}"
            for key, value in teachers_mean_holdout(table, alpha).items():
                record(f"teachers' penalty, {key}", table.name, 1.0, what, value)
    for name in ("diamonds", "flights", "wages", "food"):
        table = load_table(name)
        for what, student in STUDENTS.items():
            student = None if student is None else student(table)
            for key, value in kt_student_holdout(table, student).items():
                record(f"student, {key}", name, 1.0, what, value)
    for name in ("diamonds", "wages", "food"):
        table = load_table(name)
        for what, estimator in {
            "default (scaled ridge, alpha 0.1)": None,
            **TEACHERS,
        }.items():
            teacher = None if estimator is None else {"estimator": estimator(table)}
            for key, value in kt_student_holdout(table, None, teacher=teacher).items():
                record(f"teachers, {key}", name, 1.0, what, value)
    for name in ("flights", "wages", "food", "friedman1"):
        table = load_table(name)
        for epsilon in KT_SWEEP["epsilons"]:
            add("other tables", table, epsilon, "defaults")
            add(
                "other tables",
                table,
                epsilon,
                "previous defaults",
                **previous_defaults(table),
            )
    return rows


KT_SWEEP_COLUMNS = [
    ("part", "part", "", "l"),
    ("table", "table", "", "l"),
    ("epsilon", "epsilon", "g", "r"),
    ("configuration", "what", "", "l"),
    ("validation R^2", "val_r2", ".4f", "r"),
]


# -- PrivateKernelRidge's linear first stage (validation rows only) --------------
SSP_SWEEP = {
    "tables": ("diamonds", "flights", "wages", "food", "friedman1"),
    "shares": (0.0, 0.1, 0.2, 0.35, 0.5),
    "epsilons": (0.5, 2.0, 8.0),
    "draws": 2,
}


def ssp_validation(table, epsilon, linear_share):
    """Validation R^2 of PrivateKernelRidge's defaults but ``linear_share``."""
    scores = []
    for draw in range(SSP_SWEEP["draws"]):
        model = PrivateKernelRidge(
            y_bound=table.target_range,
            epsilon=epsilon,
            delta=DELTA,
            mechanism=SufficientStatistics(linear_share=linear_share),
            random_state=0,
            noise_random_state=200 + draw,
        ).fit(table.scaled("X_train"), table.y_train)
        scores.append(r2_score(table.y_val, model.predict(table.scaled("X_val"))))
    return float(np.mean(scores))


def ssp_sweep():
    """The evidence for ``SufficientStatistics(linear_share=0.2)``."""
    rows = []
    for name in SSP_SWEEP["tables"]:
        table = load_table(name)
        settings = [(1.0, share) for share in SSP_SWEEP["shares"]]
        settings += [
            (epsilon, share)
            for epsilon in SSP_SWEEP["epsilons"]
            for share in (0.0, 0.2)
        ]
        for epsilon, share in settings:
            rows.append(
                {
                    "table": name,
                    "epsilon": epsilon,
                    "linear_share": share,
                    "val_r2": ssp_validation(table, epsilon, share),
                }
            )
            print(f"  ssp sweep {rows[-1]}", file=sys.stderr)
    return rows


SSP_SWEEP_COLUMNS = [
    ("table", "table", "", "l"),
    ("epsilon", "epsilon", "g", "r"),
    ("linear_share", "linear_share", "g", "r"),
    ("validation R^2", "val_r2", ".4f", "r"),
]


def quick_sweep():
    """CI's smoke run: every sweep's code path on Friedman #1's 4,000 rows."""
    KT_SWEEP["draws"] = SSP_SWEEP["draws"] = 1
    table = load_table("friedman1_quick")
    rows = [
        {
            "part": "kt",
            "configuration": "defaults",
            "val_r2": kt_validation(table, 1.0),
        },
        {
            "part": "kt",
            "configuration": "previous defaults",
            "val_r2": kt_validation(table, 1.0, **previous_defaults(table)),
        },
    ]
    for what, student in STUDENTS.items():
        student = None if student is None else student(table)
        for key, value in kt_student_holdout(table, student, n_holdout=1000).items():
            rows.append(
                {"part": f"student, {key}", "configuration": what, "val_r2": value}
            )
    for what, estimator in TEACHERS.items():
        teacher = {"estimator": estimator(table)}
        for key, value in kt_student_holdout(
            table, None, n_holdout=1000, teacher=teacher
        ).items():
            rows.append(
                {"part": f"teachers, {key}", "configuration": what, "val_r2": value}
            )
    for key, value in teachers_mean_holdout(table, 0.1, n_holdout=1000).items():
        rows.append(
            {
                "part": f"teachers' penalty, {key}",
                "configuration": "0.1",
                "val_r2": value,
            }
        )
    for share in (0.0, 0.2):
        rows.append(
            {
                "part": "ssp",
                "configuration": f"linear_share={share}",
                "val_r2": ssp_validation(table, 1.0, share),
            }
        )
    return rows


def _arguments(parser):
    parser.add_argument(
        "--kt", action="store_true", help="the knowledge-transfer sweep"
    )
    parser.add_argument("--ssp", action="store_true", help="the linear-stage sweep")


def main(argv=None):
    args = cli(
        __doc__,
        argv,
        quick_help="a smoke run of every sweep on 4,000 Friedman #1 rows (CI)",
        add_arguments=_arguments,
    )
    ignore_expected_warnings()
    if args.quick:
        start = time.perf_counter()
        rows = quick_sweep()
        write_markdown(
            args.out / "regression_sweeps_quick.md",
            [
                "# Regression sweeps, quick (CI smoke run)",
                "",
                f"`{command('regression_sweeps.py', '--quick')}`; "
                f"{time.perf_counter() - start:.0f} s. Friedman #1, 4,000 private "
                "rows, epsilon 1, one noise draw; validation or held-out rows.",
                "",
                *markdown_table(
                    rows,
                    [
                        ("part", "part", "", "l"),
                        ("configuration", "configuration", "", "l"),
                        ("R^2", "val_r2", ".4f", "r"),
                    ],
                ),
                "",
            ],
        )
        return
    both = not (args.kt or args.ssp)
    if args.kt or both:
        start = time.perf_counter()
        _write_sweep(
            args.out / "regression_tables_kt_sweep",
            "# Knowledge-transfer defaults: the evidence (validation rows)",
            "--kt",
            start,
            kt_sweep(),
            KT_SWEEP_COLUMNS,
            "`KnowledgeTransferRegressor(PrivatePredictionRegressor("
            "target_range=..., epsilon=...))` with its defaults except what "
            "the row says; R^2 on the 2,000 **validation** rows (never the "
            f"test rows), mean of {KT_SWEEP['draws']} noise draws (tuning on "
            "private rows is outside the guarantee). 'shard rows': teachers "
            "as the defaults resolve them (StandardScaler + Ridge, the clipped "
            "mean) with the shard size the row gives, against the rule "
            "`knowledge_transfer_shard_rows`; 'ablation': one default "
            "reverted at a time; 'student': the student given, fitted "
            "without 8,000 held-out private rows and scored on them (on "
            "diamonds also on them and the private rows with a dimension of "
            "0 mm or over 15 mm, data-entry errors); 'teachers': the same "
            "held-out rows, the defaults but the teachers' estimator; "
            "\"teachers' penalty\": the teachers' ridge penalty, on diamonds' "
            "validation rows and, on held-out rows of every table and a "
            "synthetic one whose shards have fewer rows than columns, the "
            "teachers' mean (non-private) beside the published student; "
            "'previous defaults': "
            "sequential queries, a Ridge student, the teacher as "
            "PrivatePredictionRegressor resolves itself (Ridge, rows / 10, "
            "the adaptive range); 'other tables': tables the defaults were "
            "not chosen on.",
        )
    if args.ssp or both:
        start = time.perf_counter()
        _write_sweep(
            args.out / "regression_tables_ssp_sweep",
            "# PrivateKernelRidge's linear first stage: the evidence (validation rows)",
            "--ssp",
            start,
            ssp_sweep(),
            SSP_SWEEP_COLUMNS,
            "`PrivateKernelRidge(y_bound=target_range, epsilon=..., "
            "mechanism=SufficientStatistics(linear_share=...))`, every other "
            "option at its default, inputs scaled by their public bounds as "
            "in `regression_tables.py`; R^2 on the 2,000 **validation** rows, "
            f"mean of {SSP_SWEEP['draws']} noise draws. `linear_share = 0` is "
            "the single-stage AdaSSP on random features (the previous "
            "default). The default, 0.2, was chosen at epsilon 1 on diamonds, "
            "wages, food and Friedman #1; flights and the other epsilons are "
            "the check.",
        )


def _write_sweep(stem, title, flag, start, rows, columns, text):
    """One sweep's page (``.md``) and its rows (``.json``)."""
    write_json(
        stem.with_suffix(".json"), {"results": rows, "environment": environment()}
    )
    write_markdown(
        stem.with_suffix(".md"),
        [
            title,
            "",
            f"`{command('regression_sweeps.py', flag)}`; "
            f"{(time.perf_counter() - start) / 60:.1f} min. {text}",
            "",
            *markdown_table(rows, columns),
            "",
        ],
    )


if __name__ == "__main__":
    main()
