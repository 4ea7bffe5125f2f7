"""Attack audits: every estimator that answers queries, attacked as deployed.

The other audit modules check each *mechanism* on the worst-case
neighbours of its proof. Here each estimator is attacked through its public
API (Chadha, Jagielski, Papernot, Choquette-Choo and Nasr, "Auditing private
prediction", ICML 2024) with :func:`dpsklearn.audit.audit_private_prediction`:

* **the planted record**: the two training sets differ in one row
  (replace-one), placed with :func:`~dpsklearn.audit.shard_rows` so that it
  trains one teacher of its own and that teacher's vote is decisive: every
  other shard is single-class (a constant teacher), so the vote histogram
  is the adversary's to choose, and the planted teacher is a decision tree
  on a two-row shard where it must vote differently at different query
  points (the sparse vector worst case) or a one-row shard elsewhere;
* **the queries**: chosen by the adversary, near the planted record, up to
  the model's whole budget, some after reading earlier answers or
  ``budget_status()`` (the sparse vector attack stops at the model's first
  failed test; the statistical query attack skips to the planted chunk);
* **the distinguisher**: a score per run and an event on it, fixed from the
  exact output distribution where it is known (then every run evaluates it)
  and otherwise chosen by the audit on half the runs.

Fresh noise per run (``docs/audit.rst``, "Attack audits: private prediction
as it is attacked"): a new fit with
its own noise seed (``"refit"``) where the release happens at ``fit`` or the
fit is cheap, and for the sparse vector tests, whose first noisy threshold
travels with every copy of a fitted model; a :func:`copy.deepcopy` of one
fitted model (``"copy"``) where every noise draw follows the copy; a new fit
on OS entropy (``"entropy"``) for the attack that copies the model it is
given. Copies and unseeded fits draw OS entropy; :func:`seeded_entropy`
replaces it with a seeded sequence so that the module is deterministic.

Each family asserts:

* ``epsilon_lower <= claimed`` for the estimator as shipped. For a private
  model this fails with probability at most ``1 - CONFIDENCE = 0.05`` under
  fresh seeds (the bound's guarantee); where the exact output distribution
  is known the test also computes the binomial probability that the bound
  exceeds the claim at its run count (``_false_alarm``), far smaller;
* ``epsilon_lower > claimed`` for a known-bad variant of the family
  (``tests/_bad_variants.py``), whose miss probability under fresh seeds is
  stated per test (``_miss`` from the exact distributions, or the margin of
  the seeded run).

Quick variants run in the default suite; ``@pytest.mark.slow`` variants run
more, with the noise only halved. Runs per side and figures are printed in
each module's table.

This module holds the table of estimators, the shared machinery and the
sparse vector attacks (``SubsampleAggregateClassifier``);
``tests/test_audit_attack_votes.py`` attacks the other vote mechanisms
(Confident-GNMax, the exponential mechanism, GNMax) and
``tests/test_audit_attack_releases.py`` the value releases and the
published models.
"""

from __future__ import annotations

import contextlib
import math

import _bad_variants as bad
import numpy as np
import pytest
from _helpers import AuditTable
from scipy import stats
from scipy.special import logsumexp
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from test_audit_stability_routes import _first_fail_exact

from dpsklearn import (
    ClippedMean,
    ConfidentGNMax,
    DecisionStumps,
    ExponentialMechanismERM,
    KnowledgeTransferClassifier,
    KnowledgeTransferRegressor,
    OutputPerturbation,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelHistogram,
    SoftLabelPrivateRegressor,
    SparseVector,
    SubsampleAggregateClassifier,
)
from dpsklearn.audit import (
    audit_private_prediction,
    clopper_pearson,
    exact_epsilon,
    plant_record,
    shard_rows,
)

# the audited configurations are small on purpose: warnings about delta
# against n, k against the rows, and seeded noise say nothing here
ATTACK_MARKS = [
    pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning"),
    pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*exceeds k:UserWarning"),
]
pytestmark = ATTACK_MARKS

CONFIDENCE = 0.95
ABSTAIN = -1  # the abstain_label_ of classes [0, 1]
SEED = 0  # random_state of every estimator: the partition the adversary knows

# ---------------------------------------------------------------------------
# The estimators, constructed in one place
# ---------------------------------------------------------------------------
# Every audited configuration is one entry: epsilon (the claim) and the seed of
# the partition come in; everything else is fixed here. The mechanism choices
# that are constructor strings today (mechanism=, fallback=, max_unstable=,
# max_answers=, on_exhausted=, release=, abstain_label=) appear only in this
# table.

K_STABILITY = 50  # 49 single-class shards and the planted two-row shard
K_GNMAX = 40
K_SOFT_LABEL = 10
K_VOTES = 10
K_CONFIDENT = 21

ESTIMATORS = {
    "stability_abstain": lambda epsilon, seed: SubsampleAggregateClassifier(
        DecisionTreeClassifier(),
        n_estimators=K_STABILITY,
        epsilon=epsilon,
        delta=1e-3,
        classes=[0, 1],
        random_state=seed,
        mechanism=SparseVector(max_unstable=1, fallback="abstain"),
    ),
    "stability_noisy_max": lambda epsilon, seed: SubsampleAggregateClassifier(
        DecisionTreeClassifier(),
        n_estimators=K_STABILITY,
        epsilon=epsilon,
        delta=1e-3,
        classes=[0, 1],
        random_state=seed,
        mechanism=SparseVector(max_unstable=1, fallback="noisy_max"),
    ),
    "confident_gnmax": lambda epsilon, seed: SubsampleAggregateClassifier(
        DummyClassifier(),
        n_estimators=K_CONFIDENT,
        epsilon=epsilon,
        delta=1e-5,
        max_queries=2000,
        classes=[0, 1],
        random_state=seed,
        mechanism=ConfidentGNMax(max_answers=1),
    ),
    "exponential": lambda epsilon, seed: PrivatePredictionClassifier(
        DummyClassifier(),
        n_estimators=K_VOTES,
        epsilon=epsilon,
        max_queries=1,
        classes=[0, 1],
        random_state=seed,
    ),
    "gnmax": lambda epsilon, seed: PrivatePredictionClassifier(
        DecisionTreeClassifier(),
        n_estimators=K_GNMAX,
        epsilon=epsilon,
        delta=1e-5,
        max_queries=1,
        classes=[0, 1],
        random_state=seed,
        mechanism="gnmax",
    ),
    "regressor": lambda epsilon, seed: PrivatePredictionRegressor(
        DummyRegressor(),
        n_estimators=K_VOTES,
        epsilon=epsilon,
        max_queries=1,
        target_range=(0.0, 1.0),
        # The clipped mean with grid Laplace; the stated spread (the most a
        # target in (0, 1) can have) only lets fit serve the audit's answers.
        mechanism=ClippedMean(noise="laplace", target_std=0.5),
        random_state=seed,
    ),
    "soft_label": lambda epsilon, seed: SoftLabelPrivateRegressor(
        DummyClassifier(),
        n_estimators=K_SOFT_LABEL,
        epsilon=epsilon,
        delta=1e-3,
        target_range=(0.0, 1.0),
        random_state=seed,
        mechanism=SoftLabelHistogram(
            gamma=0.25, max_unstable=1, fallback="noisy_mean"
        ),
    ),
    "kernel_ridge": lambda epsilon, seed: PrivateKernelRidge(
        kernel="rbf",
        kernel_params={"gamma": 1.0},
        alpha=1e-6,
        y_bound=1.0,
        epsilon=epsilon,
        delta=0.0,
        max_queries=1,
        mechanism=OutputPerturbation(),  # each prediction, Nie and Wang 2017
        random_state=seed,
    ),
    "kernel_ridge_model": lambda epsilon, seed: PrivateKernelRidge(
        kernel="rbf",
        kernel_params={"gamma": 1.0},
        alpha=1.0,
        y_bound=1.0,
        epsilon=epsilon,
        delta=1e-5,
        random_state=seed,
        mechanism=OutputPerturbation(release="model", n_components=2),
    ),
    "statistical_queries": lambda epsilon, seed: PrivateStatisticalQueries(
        n_queries=2, epsilon=epsilon, random_state=seed
    ),
    "knowledge_transfer": lambda epsilon, seed: KnowledgeTransferClassifier(
        PrivatePredictionClassifier(
            DummyClassifier(),
            n_estimators=K_VOTES,
            epsilon=epsilon,
            max_queries=1,
            classes=[0, 1],
            random_state=seed,
        ),
        DecisionTreeClassifier(),
        random_state=seed,
    ),
    "knowledge_transfer_regressor": lambda epsilon, seed: KnowledgeTransferRegressor(
        PrivatePredictionRegressor(
            DummyRegressor(),
            n_estimators=K_VOTES,
            epsilon=epsilon,
            max_queries=1,
            target_range=(0.0, 1.0),
            mechanism=ClippedMean(noise="laplace"),
            random_state=seed,
        ),
        DecisionTreeRegressor(),
        query_strategy="sequential",
        random_state=seed,
    ),
    "erm": lambda epsilon, seed: ExponentialMechanismERM(
        DecisionStumps(feature_bounds=(0.0, 1.0), n_thresholds=1),
        epsilon=epsilon,
        classes=[0, 1],
    ),
}

# ---------------------------------------------------------------------------
# Shared machinery: the table, reproducible entropy, failure probabilities
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def seeded_entropy(seed):
    """OS entropy replaced by a seeded sequence, for reproducible runs.

    Fresh fits without ``noise_random_state`` (``np.random.SeedSequence()``)
    and copies of a fitted model (``np.random.default_rng()``) seed their
    noise from OS entropy, as in production; here they draw successive
    seeds of one ``SeedSequence(seed)`` instead: the same distribution,
    reproducible.
    """
    source = np.random.SeedSequence(seed)
    original_sequence = np.random.SeedSequence
    original_rng = np.random.default_rng

    def next_entropy():
        return int(source.spawn(1)[0].generate_state(1, np.uint64)[0])

    class SeededSequence(original_sequence):
        def __init__(self, entropy=None, **kwargs):
            super().__init__(next_entropy() if entropy is None else entropy, **kwargs)

    def default_rng(seed=None):
        return original_rng(next_entropy() if seed is None else seed)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np.random, "SeedSequence", SeededSequence)
        patch.setattr(np.random, "default_rng", default_rng)
        yield


def _binomial_grid(p, n):
    """Counts with their probabilities, the tails below 1e-12 cut."""
    lo, hi = stats.binom.ppf([1e-12, 1 - 1e-12], n, p)
    counts = np.arange(int(lo), int(hi) + 1)
    return counts, stats.binom.pmf(counts, n, p)


def _bound_pairs(n, delta, counts_0, counts_1):
    """The audit's bound for pairs of counts, element by element."""
    alpha = (1 - CONFIDENCE) / 4
    lo0, hi0 = clopper_pearson(counts_0, n, alpha)
    lo1, hi1 = clopper_pearson(counts_1, n, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        b0 = np.log(np.maximum(lo0 - delta, 0.0) / hi1)
        b1 = np.log(np.maximum(lo1 - delta, 0.0) / hi0)
    return np.fmax(np.nan_to_num(b0, nan=-np.inf), np.nan_to_num(b1, nan=-np.inf))


def _bound_matrix(n, delta, counts_0, counts_1):
    """The audit's bound for every pair of counts (rows: side 0, columns: 1)."""
    alpha = (1 - CONFIDENCE) / 4
    lo0, hi0 = (np.atleast_1d(b) for b in clopper_pearson(counts_0, n, alpha))
    lo1, hi1 = (np.atleast_1d(b) for b in clopper_pearson(counts_1, n, alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        b0 = np.log(np.maximum(lo0[:, None] - delta, 0.0) / hi1[None, :])
        b1 = np.log(np.maximum(lo1[None, :] - delta, 0.0) / hi0[:, None])
    return np.fmax(np.nan_to_num(b0, nan=-np.inf), np.nan_to_num(b1, nan=-np.inf))


def _exceed_probability(p0, p1, n, delta, claimed):
    """P(the audit's bound > claimed) for an event of probabilities p0, p1."""
    c0, w0 = _binomial_grid(p0, n)
    c1, w1 = _binomial_grid(p1, n)
    exceeds = _bound_matrix(n, delta, c0, c1) > claimed
    return float(w0 @ exceeds @ w1)


def _false_alarm(p0, p1, n, delta, claimed):
    """Probability that a correct model's bound exceeds its claim (fresh seeds)."""
    return _exceed_probability(p0, p1, n, delta, claimed)


def _miss(p0, p1, n, delta, claimed):
    """Probability that a broken model's bound stays at or below the claim."""
    return 1.0 - _exceed_probability(p0, p1, n, delta, claimed)


def recorder(table):
    """``record(family, neighbours, result, exact=None)``: one row of ``table``."""

    def record(family, neighbours, result, exact=None):
        table.add(
            family,
            neighbours,
            f"{result.n_runs + result.n_selection_runs:,}",
            f"{result.epsilon_claimed:.4g}",
            f"{result.epsilon_lower:.3f}",
            f"{result.epsilon_hat:.3f}",
            "" if exact is None else f"{exact:.3f}",
            "LEAK CAUGHT" if result.exceeds_claim else "ok",
        )

    return record


def attack_table(title):
    """A module's table of attack audits: ``(table fixture, record)``."""
    table = AuditTable(
        title,
        f"confidence {CONFIDENCE} per bound; runs/side include event-selection "
        "runs; 'exact' is the loss of the attack's output where it can be "
        "enumerated; BAD rows are known-bad variants that must exceed the claim.",
    )
    return table.fixture(), recorder(table)


_audit_table, _record = attack_table("attack audits (public API, planted record)")


def _attack_audit(name, epsilon, datasets, attack, n_runs, rng, claimed=None, **kw):
    """The attack audit of ``ESTIMATORS[name](epsilon)``; ``claimed`` overrides
    the claim read from the estimator; OS entropy seeded by ``rng``."""
    with seeded_entropy(rng):
        return audit_private_prediction(
            ESTIMATORS[name](epsilon, SEED),
            datasets,
            attack,
            n_runs=n_runs,
            epsilon=claimed,
            confidence=CONFIDENCE,
            rng=rng,
            **kw,
        )


def _assert_within(result):
    assert result.epsilon_lower <= result.epsilon_claimed, (
        f"the attack found a leak in the shipped estimator: {result}"
    )


def _assert_caught(result):
    assert result.exceeds_claim, f"the attack missed a known-bad variant: {result}"


def _rows(values):
    return np.asarray(values, dtype=np.float64).reshape(-1, 1)




# ---------------------------------------------------------------------------
# Planted records
# ---------------------------------------------------------------------------


def one_row_shards(zeros, ones, planted=0, alternative=1):
    """``zeros + ones + 1`` one-row shards; row 0 holds the planted label.

    Every shard is a teacher of its own that votes (or predicts) its row's
    label, whatever the partition: the vote histogram at every query point
    is ``zeros`` and ``ones`` plus the planted vote.
    """
    labels = np.array([planted] + [0] * zeros + [1] * ones)
    X = _rows(np.arange(labels.size))
    return plant_record(X, labels, 0, ([0.0], planted), ([0.0], alternative))


def one_row_targets(others, planted, alternative):
    """One-row shards of a regressor: row 0 holds the planted target."""
    y = np.array([planted, *others], dtype=np.float64)
    X = _rows(np.arange(y.size))
    return plant_record(X, y, 0, ([0.0], planted), ([0.0], alternative))


def planted_tree_shard(k, other_labels, seed=SEED):
    """The planted record in a two-row shard whose teacher is a decision tree.

    Shard 0 holds a row ``(9, 1)`` and the planted row: ``(0, 0)`` on the
    first side, ``(10.5, 0)`` on the second. Its tree then votes 0 left of
    4.5 and 1 right of it on the first side, and 1 left of 9.75 and 0 right
    of it on the second: near ``x = 0`` the planted teacher votes 0 against
    1, at ``x = 10`` 1 against 0, and at ``x = 7`` 1 on both sides. Every
    other shard holds two rows of one label (``other_labels[j]``), far away:
    a constant teacher.
    """
    n = 2 * k
    shards = shard_rows(n, k, seed)
    X, y = np.zeros((n, 1)), np.zeros(n, dtype=np.int64)
    for j, rows in enumerate(shards[1:]):
        X[rows, 0] = [100.0 + j, 100.5 + j]
        y[rows] = other_labels[j]
    planted, companion = (int(r) for r in shards[0])
    X[companion, 0], y[companion] = 9.0, 1
    return plant_record(X, y, planted, ([0.0], 0), ([10.5], 0))


# ---------------------------------------------------------------------------
# 1-2. The sparse vector stability test (SubsampleAggregateClassifier)
# ---------------------------------------------------------------------------
# All 49 other teachers vote 0. The planted teacher votes 0 near x = 0 on the
# first side and 1 on the second; at x = 10 the other way round. Six queries
# near 0 then one at 10: distances [24]*6 + [23] against [23]*6 + [24], the
# AboveThreshold worst case (the six early ones up, the halting one down)
# around the threshold w = 23 of the laplace calibration at (1, 1e-3), T = 1
# (and of the noisy-max calibration at (2, 1e-3)). The attack asks them one at
# a time and stops at the first failed test (read from budget_status); its
# score is the index of that query (7: none failed).

STABILITY_DATA = planted_tree_shard(K_STABILITY, [0] * (K_STABILITY - 1))
STABILITY_QUERIES = _rows([0.001 * i for i in range(1, 7)] + [10.0])
STABILITY_DISTANCES = ([24] * 6 + [23], [23] * 6 + [24])


def stability_attack(model, rng):
    """Adaptive: query by query until the model reports a failed test."""
    for i in range(STABILITY_QUERIES.shape[0]):
        model.predict(STABILITY_QUERIES[i : i + 1])
        if model.budget_status().n_failed_tests:
            return float(i)
    return float(STABILITY_QUERIES.shape[0])


def _stability_exact(mechanism, factor=1.0):
    """Exact distributions of the attack's score on both sides."""
    cal = mechanism.calibration
    return [
        _first_fail_exact(
            np.array(distances),
            cal.threshold,
            cal.query_scale * factor,
            cal.threshold_scale * factor,
            cal.noise,
        )
        for distances in STABILITY_DISTANCES
    ]


def _likeliest_set(p, q, delta, n_runs, max_candidates=4000):
    """The super-level set of the exact likelihood ratio whose bound is largest
    at its expected counts with ``n_runs`` runs (from the exact distributions
    only, never from the runs). Returns the outcomes and their probabilities
    on the likelier and the other side. Long supports are searched on
    ``max_candidates`` evenly spaced set sizes."""
    best = (-np.inf, None, None)
    for likely, unlikely in ((p, q), (q, p)):
        order = np.argsort(-likely / np.maximum(unlikely, 1e-300), kind="stable")
        sizes = np.unique(
            np.linspace(1, order.size - 1, min(max_candidates, order.size - 1))
            .round()
            .astype(np.int64)
        )
        a = np.cumsum(likely[order])[sizes - 1]
        b = np.cumsum(unlikely[order])[sizes - 1]
        expected = _bound_pairs(n_runs, delta, np.rint(a * n_runs), np.rint(b * n_runs))
        i = int(np.argmax(expected))
        if expected[i] > best[0]:
            chosen = order[: sizes[i]]
            best = (expected[i], chosen, (likely[chosen].sum(), unlikely[chosen].sum()))
    _, chosen, probabilities = best
    return chosen, probabilities


def _fitted_mechanism(name, epsilon, datasets):
    return ESTIMATORS[name](epsilon, SEED).fit(*datasets[0]).privacy_mechanism_


def _stability_case(name, epsilon, n_runs, rng, factor=None):
    """Audit the shipped estimator (or one with its noise times ``factor``)."""
    mechanism = _fitted_mechanism(name, epsilon, STABILITY_DATA)
    exact = _stability_exact(mechanism, 1.0 if factor is None else factor)
    delta = mechanism.calibration.delta
    chosen, (p_likely, p_unlikely) = _likeliest_set(*exact, delta, n_runs)
    first_likelier = exact[0][chosen].sum() >= exact[1][chosen].sum()
    broken = (
        contextlib.nullcontext()
        if factor is None
        else bad.sparse_vector_noise_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            name,
            epsilon,
            STABILITY_DATA,
            stability_attack,
            n_runs,
            rng,
            event=lambda scores: np.isin(scores, chosen),
        )
    assert result.direction == (0 if first_likelier else 1)
    loss = exact_epsilon(*exact, delta)
    return result, loss, (p_likely, p_unlikely, delta)


def test_stability_neighbours_move_one_vote_each_way():
    votes = []
    for X, y in STABILITY_DATA:
        model = ESTIMATORS["stability_abstain"](1.0, SEED).fit(X, y)
        votes.append(model._vote_counts(STABILITY_QUERIES).tolist())
        assert sum(
            type(t).__name__ == "ConstantTeacher" for t in model.estimators_
        ) == (K_STABILITY - 1)
    assert votes[0] == [[50, 0]] * 6 + [[49, 1]]
    assert votes[1] == [[49, 1]] * 6 + [[50, 0]]


def test_stability_abstain_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-9 at the exact probabilities)."""
    result, loss, (p0, p1, delta) = _stability_case("stability_abstain", 1.0, 200, 10)
    _record("SubsampleAggregate SV+abstain", "planted tree, 7 queries", result, loss)
    assert 0.9 <= loss <= 1.0  # the attack's output carries nearly all of the claim
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, delta, 1.0) < 1e-9


def test_stability_abstain_quartered_noise_caught():
    """Noise scales x 1/4: caught (miss probability below 1e-3, exact).

    Halving is caught with 8,000 runs per side (the slow variant); at CI's
    500 runs per side the halved variant's miss probability is 0.95.
    """
    result, loss, (p0, p1, delta) = _stability_case(
        "stability_abstain", 1.0, 500, 11, factor=0.25
    )
    _record("BAD SV+abstain, noise x 1/4", "planted tree, 7 queries", result, loss)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, delta, 1.0) < 1e-3


@pytest.mark.slow
def test_stability_abstain_halved_noise_caught_slow():
    """8,000 runs per side: the shipped bound near half the claim, halved noise
    caught (miss probability below 1e-3, exact)."""
    result, loss, (p0, p1, delta) = _stability_case("stability_abstain", 1.0, 8000, 12)
    _record("SubsampleAggregate SV+abstain", "planted tree, 7 queries", result, loss)
    _assert_within(result)
    assert result.epsilon_lower >= 0.3
    result, loss, (p0, p1, delta) = _stability_case(
        "stability_abstain", 1.0, 8000, 13, factor=0.5
    )
    _record("BAD SV+abstain, noise x 1/2", "planted tree, 7 queries", result, loss)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, delta, 1.0) < 1e-3


def test_stability_noisy_max_within_claim():
    """Shipped at (2, 1e-3): the sparse vector half of the budget shows
    (false alarm below 1e-9 at the exact probabilities)."""
    result, loss, (p0, p1, delta) = _stability_case("stability_noisy_max", 2.0, 200, 14)
    _record("SubsampleAggregate SV+noisy max", "planted tree, 7 queries", result, loss)
    assert 0.9 <= loss <= 2.0
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, delta, 2.0) < 1e-9


# The fallback that is not charged: the engine counts failed tests but never
# halts, so every failure after the cutoff gets a free noisy-max answer. The
# adversary plants its record where the other 49 teachers split 25 : 24, so
# every query fails its test (distance 0, far below w) and is answered by the
# fallback, on votes [26, 24] against [25, 25]; it asks REPEATS rows there in
# one batch and counts the answers 0. A shipped model answers the first row
# and halts (the rest are padded with the abstain label): the count is 0 or
# 1 on both sides. The event, a count above the midpoint of the two sides'
# expected counts, comes from the fallback's calibrated epsilon.

REPEATS = 100
SPLIT_DATA = one_row_shards(zeros=25, ones=24, planted=0, alternative=1)
SPLIT_QUERIES = _rows(1e-6 * np.arange(1, REPEATS + 1))


def fallback_count_attack(model, rng):
    """The number of rows answered 0 among REPEATS rows at the split point."""
    return float(np.count_nonzero(model.predict(SPLIT_QUERIES) == 0))


def test_stability_noisy_max_uncharged_fallback_caught():
    """The cutoff not enforced: caught (miss probability below 1e-6, exact)."""
    mechanism = _fitted_mechanism("stability_noisy_max", 2.0, SPLIT_DATA)
    eps_fb = mechanism.fallback_epsilon
    p_zero = [1 / (1 + math.exp(-eps_fb * gap / 2)) for gap in (2, 0)]
    cut = REPEATS * sum(p_zero) / 2
    with bad.sparse_vector_never_halts():
        result = _attack_audit(
            "stability_noisy_max",
            2.0,
            SPLIT_DATA,
            fallback_count_attack,
            150,
            15,
            event=lambda counts: counts >= cut,
        )
    _record(
        "BAD SV+noisy max, never halts",
        f"votes [26,24] vs [25,25], {REPEATS} rows",
        result,
    )
    _assert_caught(result)
    tails = [stats.binom.sf(math.ceil(cut) - 1, REPEATS, p) for p in p_zero]
    assert _miss(*tails, result.n_runs, result.delta, 2.0) < 1e-6


# ---------------------------------------------------------------------------
# Exact distributions of the noises the attacks read
# ---------------------------------------------------------------------------


def _dlap_cdf(z, scale):
    """P(DLap(scale) <= z) for integer z."""
    a = math.exp(-1.0 / scale)
    z = np.floor(np.asarray(z, dtype=np.float64))
    return np.where(z >= 0, 1 - a ** (z + 1) / (1 + a), a ** (-z) / (1 + a))


def _dlap_difference_sf(thresholds, scale):
    """P(Z0 - Z1 >= t) for each t, independent DLap(scale) draws (to 1e-15)."""
    from scipy.signal import fftconvolve

    reach = int(40 * scale) + 10
    z = np.arange(-reach, reach + 1)
    a = math.exp(-1.0 / scale)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    difference = np.clip(fftconvolve(pmf, pmf), 0.0, None)
    survival = np.r_[np.cumsum(difference[::-1])[::-1], 0.0]
    index = np.clip(np.asarray(thresholds) + 2 * reach, 0, difference.size)
    return survival[index]


def _gauss_difference_sf(gap, sigma):
    """P(Z1 - Z0 > gap) for independent discrete Gaussians N_Z(0, sigma^2)."""
    half = int(40 * sigma) + 40
    z = np.arange(-half, half + 1)
    log_pmf = -(z.astype(np.float64) ** 2) / (2 * sigma * sigma)
    pmf = np.exp(log_pmf - logsumexp(log_pmf))
    difference = np.convolve(pmf, pmf)
    return float(difference[np.arange(-2 * half, 2 * half + 1) > gap].sum())


def _grid_laplace_below(value, threshold, sensitivity, epsilon, grid_step, factor=1.0):
    """P(grid Laplace release of ``value`` <= ``threshold``) (unclipped side).

    ``g (round(v/g) + DLap(units/epsilon))`` with ``units = floor(Delta/g) + 1``
    (:func:`dpsklearn.noise.grid_laplace`); ``factor`` scales the noise.
    """
    units = math.floor(sensitivity / grid_step) + 1
    centre = round(value / grid_step)
    return float(
        _dlap_cdf(math.floor(threshold / grid_step) - centre, factor * units / epsilon)
    )


PLANTED_POINT = _rows([0.0])
VOTES_PAIR = one_row_shards(zeros=4, ones=5)  # votes [5, 5] against [4, 6]


def _exponential_probabilities(votes_0, votes_1, epsilon):
    return [1 / (1 + math.exp(epsilon * (c[1] - c[0]) / 2)) for c in (votes_0, votes_1)]


# ---------------------------------------------------------------------------
# The audit's own inputs
# ---------------------------------------------------------------------------


def test_attack_audit_refuses_bad_input_before_fitting():
    estimator = ESTIMATORS["exponential"](1.0, SEED)

    def attack(model, rng):
        return 0.0

    with pytest.raises(ValueError, match="two neighbouring training sets"):
        audit_private_prediction(estimator, VOTES_PAIR[:1], attack, n_runs=4)
    with pytest.raises(ValueError, match="fresh_noise"):
        audit_private_prediction(
            estimator, VOTES_PAIR, attack, n_runs=4, fresh_noise="fork"
        )
    seeded = ESTIMATORS["exponential"](1.0, SEED).set_params(noise_random_state=0)
    for mode in ("copy", "entropy"):
        with pytest.raises(ValueError, match="noise_random_state=None"):
            audit_private_prediction(
                seeded, VOTES_PAIR, attack, n_runs=4, fresh_noise=mode
            )
    with pytest.raises(ValueError, match="one real number"):
        audit_private_prediction(
            estimator, VOTES_PAIR, lambda model, rng: [0.0, 1.0], n_runs=4
        )
    with pytest.raises(ValueError, match="record's x"):
        plant_record(np.zeros((3, 2)), [0, 1, 0], 0, ([0.0], 0), ([0.0, 1.0], 1))


def test_attack_audit_reads_the_claim_and_plays_fresh_runs():
    # the claim of a nested private teacher; every run a fresh fit whose
    # noise seed differs (scores vary), the audit's result beside the claim
    seen = []

    def attack(model, rng):
        seen.append(model.predict(PLANTED_POINT)[0])
        return float(seen[-1])

    result = audit_private_prediction(
        ESTIMATORS["knowledge_transfer"](2.0, SEED),
        VOTES_PAIR,
        attack,
        n_runs=30,
        fit_params={"X_public": PLANTED_POINT},
        event=lambda label: label == 0,
        rng=0,
    )
    assert (result.epsilon_claimed, result.delta) == (2.0, 1e-5)
    assert result.n_runs == 30 and len(seen) == 60
    assert 0 < np.mean(seen) < 1
    assert not result.exceeds_claim
