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

Fresh noise per run (``docs/audit.rst``, "Attack audits"): a new fit with
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
the module's table.
"""

from __future__ import annotations

import contextlib
import copy
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
    BudgetExhaustedError,
    DecisionStumps,
    ExponentialMechanismERM,
    KnowledgeTransferClassifier,
    KnowledgeTransferRegressor,
    PrivateKernelRidge,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    PrivateStatisticalQueries,
    SoftLabelPrivateRegressor,
    SubsampleAggregateClassifier,
)
from dpsklearn.audit import (
    audit_private_prediction,
    clopper_pearson,
    exact_epsilon,
    plant_record,
    shard_rows,
)
from dpsklearn.noise import default_grid_step

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsklearn.PrivacyLeakWarning"),
    pytest.mark.filterwarnings("ignore:delta=.*1/n_samples:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*exceeds k:UserWarning"),
]

CONFIDENCE = 0.95
ABSTAIN = -1
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
        max_unstable=1,
        fallback="abstain",
        abstain_label=ABSTAIN,
        on_exhausted="abstain",
    ),
    "stability_noisy_max": lambda epsilon, seed: SubsampleAggregateClassifier(
        DecisionTreeClassifier(),
        n_estimators=K_STABILITY,
        epsilon=epsilon,
        delta=1e-3,
        classes=[0, 1],
        random_state=seed,
        max_unstable=1,
        fallback="noisy_max",
        abstain_label=ABSTAIN,
        on_exhausted="abstain",
    ),
    "confident_gnmax": lambda epsilon, seed: SubsampleAggregateClassifier(
        DummyClassifier(),
        n_estimators=K_CONFIDENT,
        epsilon=epsilon,
        delta=1e-5,
        max_queries=2000,
        classes=[0, 1],
        random_state=seed,
        mechanism="confident_gnmax",
        max_answers=1,
        abstain_label=ABSTAIN,
        on_exhausted="abstain",
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
        random_state=seed,
    ),
    "soft_label": lambda epsilon, seed: SoftLabelPrivateRegressor(
        DummyClassifier(),
        n_estimators=K_SOFT_LABEL,
        epsilon=epsilon,
        delta=1e-3,
        target_range=(0.0, 1.0),
        random_state=seed,
        gamma=0.25,
        max_unstable=1,
        fallback="noisy_mean",
        on_exhausted="abstain",
    ),
    "kernel_ridge": lambda epsilon, seed: PrivateKernelRidge(
        kernel="rbf",
        gamma=1.0,
        alpha=1e-6,
        y_bound=1.0,
        epsilon=epsilon,
        delta=0.0,
        max_queries=1,
        random_state=seed,
    ),
    "kernel_ridge_model": lambda epsilon, seed: PrivateKernelRidge(
        kernel="rbf",
        gamma=1.0,
        alpha=1.0,
        y_bound=1.0,
        epsilon=epsilon,
        delta=1e-5,
        n_components=2,
        random_state=seed,
        release="model",
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
            random_state=seed,
        ),
        DecisionTreeRegressor(),
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

_TABLE = AuditTable(
    "attack audits (public API, planted record)",
    f"confidence {CONFIDENCE} per bound; runs/side include event-selection runs; "
    "'exact' is the loss of the attack's output where it can be enumerated; "
    "BAD rows are known-bad variants that must exceed the claim.",
)
_audit_table = _TABLE.fixture()


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


def _record(family, neighbours, result, exact=None):
    _TABLE.add(
        family,
        neighbours,
        f"{result.n_runs + result.n_selection_runs:,}",
        f"{result.epsilon_claimed:.4g}",
        f"{result.epsilon_lower:.3f}",
        f"{result.epsilon_hat:.3f}",
        "" if exact is None else f"{exact:.3f}",
        "LEAK CAUGHT" if result.exceeds_claim else "ok",
    )


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


@pytest.fixture
def slow_audit(request):
    """Skip a long audit unless ``-m slow`` selected it (see pyproject's marker)."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a long audit: run it with `pytest -m slow`; its quick variant ran")


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
def test_stability_abstain_halved_noise_caught_slow(slow_audit):
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


# ---------------------------------------------------------------------------
# 3. Confident-GNMax (SubsampleAggregateClassifier, mechanism="confident_gnmax")
# ---------------------------------------------------------------------------
# Claim (1, 1e-5) for max_queries=2000 threshold checks and max_answers=1
# answer: the answer's noise sigma2 is small (half of rho goes to it), the
# threshold checks' sigma1 large. Votes [14, 7] against [13, 8] (21 one-row
# shards). The adversary asks 2000 rows at the planted point at once: the
# model answers the first that clears the threshold and halts. The score is
# the share of answers that are 1; the shipped model's one answer is 1 with
# P(Z1 - Z0 > 7) against P(Z1 - Z0 > 5). With answers uncharged (past
# max_answers) about 1000 rows are answered and their share of 1s separates
# the sides.

CONFIDENT_DATA = one_row_shards(zeros=13, ones=7)
CONFIDENT_QUERIES = _rows(1e-6 * np.arange(1, 2001))


def confident_attack(model, rng):
    """The share of answered rows labelled 1 (-1 when none is answered)."""
    labels = model.predict(CONFIDENT_QUERIES)
    answered = labels[labels != ABSTAIN]
    return float(np.mean(answered == 1)) if answered.size else -1.0


def _confident_label_probabilities():
    model = ESTIMATORS["confident_gnmax"](1.0, SEED).fit(*CONFIDENT_DATA[0])
    sigma = model.sigma_argmax_
    return model, [_gauss_difference_sf(gap, sigma) for gap in (7, 5)]


def _dgauss_sf(threshold, sigma):
    """P(N_Z(0, sigma^2) >= threshold)."""
    half = int(40 * sigma) + 40
    z = np.arange(-half, half + 1)
    log_pmf = -(z.astype(np.float64) ** 2) / (2 * sigma * sigma)
    return float(np.exp(log_pmf - logsumexp(log_pmf))[z >= threshold].sum())


def test_confident_gnmax_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-9 at the exact probabilities)."""
    _, (p0, p1) = _confident_label_probabilities()
    result = _attack_audit(
        "confident_gnmax",
        1.0,
        CONFIDENT_DATA,
        confident_attack,
        600,
        30,
        fresh_noise="copy",
        event=lambda share: share == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1], result.delta)
    _record(
        "SubsampleAggregate Confident-GNMax", "votes [14,7] vs [13,8]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


def test_confident_gnmax_uncharged_answers_caught():
    """Answers past max_answers: caught (miss probability below 1e-6 by the
    binomial tails of about 1000 answers per run)."""
    model, (p0, p1) = _confident_label_probabilities()
    cut = (p0 + p1) / 2
    with bad.confident_gnmax_answers_uncharged():
        result = _attack_audit(
            "confident_gnmax",
            1.0,
            CONFIDENT_DATA,
            confident_attack,
            150,
            31,
            fresh_noise="copy",
            event=lambda share: share >= cut,
        )
    _record("BAD Confident-GNMax, answers uncharged", "votes [14,7] vs [13,8]", result)
    _assert_caught(result)
    # Each row passes the threshold check with probability P(top + Z1 >=
    # threshold) (top count 14 or 13): the answers per run are at least a
    # number whose binomial tail is below 1e-9, and with that many answers the
    # share's tails at the cut (a smaller count only widens them) bound the
    # event's probability on each side.
    passed = min(
        _dgauss_sf(math.ceil(model.threshold_ - top), model.sigma_threshold_)
        for top in (14, 13)
    )
    answers = int(stats.binom.ppf(1e-9, CONFIDENT_QUERIES.shape[0], passed))
    below = stats.binom.cdf(math.ceil(cut * answers) - 1, answers, p1)
    above = stats.binom.sf(math.ceil(cut * answers) - 1, answers, p0)
    assert (
        _miss(1 - below - 1e-9, above + 1e-9, result.n_runs, result.delta, 1.0) < 1e-6
    )


# ---------------------------------------------------------------------------
# 4-5. PrivatePredictionClassifier: the exponential mechanism, predict and
#      predict_proba
# ---------------------------------------------------------------------------
# Ten one-row shards, one query for the whole budget (max_queries=1). predict:
# the adversary reads score() on the planted point with label 0, which is the
# private answer's correctness; votes [3, 7] against [2, 8], where one vote
# moves the rare label's probability by e^0.92. predict_proba: the released
# vote share of class 0, the mean of the teachers' rows plus grid Laplace
# noise per class, projected to the simplex; its event is chosen on half the
# runs.

VOTES_DATA = one_row_shards(zeros=2, ones=7)  # [3, 7] against [2, 8]
VOTES_DATA_BAD = one_row_shards(zeros=4, ones=5)  # [5, 5] against [4, 6]
PLANTED_POINT = _rows([0.0])


def score_attack(model, rng):
    """score() of the planted point with label 0: 1 when the answer is 0."""
    return float(model.score(PLANTED_POINT, [0]))


def proba_attack(model, rng):
    """The released probability of class 0 at the planted point."""
    return float(model.predict_proba(PLANTED_POINT)[0, 0])


def _exponential_probabilities(votes_0, votes_1, epsilon):
    return [1 / (1 + math.exp(epsilon * (c[1] - c[0]) / 2)) for c in (votes_0, votes_1)]


def test_exponential_predict_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-3 at the exact probabilities:
    this output's loss is 0.92 of the claim)."""
    p0, p1 = _exponential_probabilities([3, 7], [2, 8], 1.0)
    result = _attack_audit(
        "exponential",
        1.0,
        VOTES_DATA,
        score_attack,
        600,
        40,
        fresh_noise="copy",
        event=lambda correct: correct == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record(
        "PrivatePrediction predict (exp. mech.)", "votes [3,7] vs [2,8]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def test_exponential_predict_without_half_caught():
    """exp(eps count): caught (miss probability below 1e-3, exact)."""
    # the broken sampler's probabilities: twice the logit
    p0, p1 = _exponential_probabilities([5, 5], [4, 6], 2.0)
    with bad.soft_majority_without_half():
        result = _attack_audit(
            "exponential",
            1.0,
            VOTES_DATA_BAD,
            score_attack,
            1500,
            41,
            fresh_noise="copy",
            event=lambda correct: correct == 1,
        )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("BAD exp. mech. without 1/2", "votes [5,5] vs [4,6]", result, exact)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def _proba_case(n_runs, rng, factor=None):
    """The released share of class 0 is ``clip((1 + g T) / 2, 0, 1)`` with
    ``T = c0 - c1 + Z0 - Z1`` (grid units of the two classes' mean rows plus
    their DLap noises): the event ``T >= tau`` is a threshold on the release,
    chosen from these exact tails (``_likeliest_set`` on the tail sums)."""
    model = ESTIMATORS["exponential"](1.0, SEED).fit(*VOTES_DATA[0])
    mech = model.privacy_mechanism_
    g = mech.proba_grid_step
    units = math.floor((2.0 / mech.n_teachers) / g) + mech.n_classes
    scale = units / mech.proba_epsilon * (1.0 if factor is None else factor)
    centres = [round(-0.4 / g), round(-0.6 / g)]  # c0 - c1: shares .3/.7, .2/.8
    taus = np.arange(centres[1] - 3 * int(scale), centres[0] + 4 * int(scale), 8)
    tails = np.array([_dlap_difference_sf(taus - c, scale) for c in centres])
    expected = _bound_pairs(
        n_runs, 0.0, np.rint(tails[0] * n_runs), np.rint(tails[1] * n_runs)
    )
    best = int(np.argmax(expected))
    cut = (1 + g * (taus[best] - 0.5)) / 2  # the release at T = tau - 1/2
    broken = (
        contextlib.nullcontext() if factor is None else bad.proba_laplace_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            "exponential",
            1.0,
            VOTES_DATA,
            proba_attack,
            n_runs,
            rng,
            fresh_noise="copy",
            event=lambda share: share >= cut,
        )
    return result, tails[:, best]


def test_exponential_proba_within_claim():
    """Shipped predict_proba: bound <= 1 (false alarm below 1e-6, exact tails)."""
    result, (p0, p1) = _proba_case(600, 42)
    _record("PrivatePrediction predict_proba", "shares .3 vs .2", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-6


def test_exponential_proba_quartered_noise_caught():
    """Grid Laplace at a quarter of the scale: caught (miss probability below
    1e-9, exact tails). Halving needs 3,000 runs per side (the slow variant;
    at 600 its miss probability is 0.48)."""
    result, (p0, p1) = _proba_case(600, 43, factor=0.25)
    _record("BAD predict_proba, noise x 1/4", "shares .3 vs .2", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


@pytest.mark.slow
def test_exponential_proba_halved_noise_caught_slow(slow_audit):
    """Half the scale, 3,000 runs per side: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _proba_case(3000, 44, factor=0.5)
    _record("BAD predict_proba, noise x 1/2", "shares .3 vs .2", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 6. PrivatePredictionClassifier(mechanism="gnmax"): noisy vote counts
# ---------------------------------------------------------------------------
# Forty teachers: the planted tree shard and 39 single-class shards split
# 20 : 19. At x = 0.001 the votes are [21, 19] against [20, 20]; at x = 7 the
# planted teacher votes 1 on both sides: [20, 20]. One query for the whole
# budget, read through predict_proba (the vote shares of the noisy counts, the
# whole release). The Gaussian's loss sits in its far tail: the event is
# chosen on half the runs, and the bound stays far below the claim (halving
# sigma is caught at the mechanism level, tests/test_audit_gaussian.py).
#
# The attack that copies: the adversary copies the model it is given before
# asking anything (the claim then covers two budgets, 2 epsilon), asks the
# planted point of one copy and x = 7 of the other, and checks whether the
# two shares differ by exactly the one vote the planted teacher moves. Copies
# that reseed make the difference noisy on both sides; copies that replay the
# noise (tests/_bad_variants.py) cancel it: exactly one vote apart on the
# first side, exactly equal on the second.

GNMAX_DATA = planted_tree_shard(K_GNMAX, [0] * 20 + [1] * 19)
GNMAX_POINT, GNMAX_REFERENCE = _rows([0.001]), _rows([7.0])


def gnmax_share_attack(model, rng):
    """The released vote share of class 0 at the planted point."""
    return float(model.predict_proba(GNMAX_POINT)[0, 0])


def gnmax_cancel_attack(model, rng):
    """1 when two copies' shares are exactly equal (the noise cancelled)."""
    twin = copy.deepcopy(model)
    first = model.predict_proba(GNMAX_POINT)[0, 0]
    second = twin.predict_proba(GNMAX_REFERENCE)[0, 0]
    return float(first == second)


def test_gnmax_neighbours_differ_by_one_vote_at_the_planted_point():
    counts = []
    for X, y in GNMAX_DATA:
        model = ESTIMATORS["gnmax"](1.0, SEED).fit(X, y)
        counts.append(model._vote_counts(np.vstack([GNMAX_POINT, GNMAX_REFERENCE])))
    assert counts[0].tolist() == [[21, 19], [20, 20]]
    assert counts[1].tolist() == [[20, 20], [20, 20]]


def test_gnmax_within_claim():
    """Shipped: bound <= 1 (false alarm at most 0.05)."""
    result = _attack_audit(
        "gnmax", 1.0, GNMAX_DATA, gnmax_share_attack, 600, 50, fresh_noise="copy"
    )
    _record("PrivatePrediction GNMax predict_proba", "votes [21,19] vs [20,20]", result)
    _assert_within(result)


def _gnmax_equal_probabilities():
    """P(two reseeded copies' shares are equal) on each side: the two noisy
    differences n0 - n1 of the copies differ by the planted vote's 2 (first
    side) or 0 (second), so the event is D_B - D_A = 2 or 0 for four
    independent discrete Gaussians (clipping, below 1e-9 at k = 40, aside)."""
    model = ESTIMATORS["gnmax"](1.0, SEED).fit(*GNMAX_DATA[0])
    sigma = model.sigma_
    half = int(40 * sigma) + 40
    z = np.arange(-half, half + 1)
    log_pmf = -(z.astype(np.float64) ** 2) / (2 * sigma * sigma)
    pmf = np.exp(log_pmf - logsumexp(log_pmf))
    difference = np.convolve(pmf, pmf)  # one copy's Z0 - Z1
    of_two = np.convolve(difference, difference)  # D_B - D_A, centred at 4 half
    return [float(of_two[4 * half + gap]) for gap in (2, 0)]


def test_gnmax_copies_within_twice_the_claim():
    """Two reseeded copies: bound <= 2 (false alarm below 1e-9, exact: the
    event has probability about 0.035 on both sides)."""
    p0, p1 = _gnmax_equal_probabilities()
    result = _attack_audit(
        "gnmax",
        1.0,
        GNMAX_DATA,
        gnmax_cancel_attack,
        200,
        51,
        fresh_noise="entropy",
        claimed=2.0,
        event=lambda equal: equal == 1,
    )
    _record("GNMax, two copies", "planted vs reference point", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 2.0) < 1e-9


def test_gnmax_copies_replaying_noise_caught():
    """Copies that replay the noise: caught (the second side's shares are
    always equal and the first side's never, up to clipping below 1e-9: a
    certain event, bound above 2 with 200 runs whatever the seed)."""
    with bad.copies_replay_noise():
        result = _attack_audit(
            "gnmax",
            1.0,
            GNMAX_DATA,
            gnmax_cancel_attack,
            200,
            52,
            fresh_noise="entropy",
            claimed=2.0,
            event=lambda equal: equal == 1,
        )
    _record("BAD GNMax copies replay noise", "planted vs reference point", result)
    assert result.counts[1] == result.n_runs
    _assert_caught(result)


# ---------------------------------------------------------------------------
# 7. PrivatePredictionRegressor: the clipped mean with grid Laplace
# ---------------------------------------------------------------------------
# Ten one-row shards of DummyRegressor teachers; the planted target 0 against
# 1 among nine targets 0.5: the clipped mean 0.45 against 0.55, the whole
# sensitivity (hi - lo)/k. One query for the whole budget; the event "release
# <= 0.45" has probability 1/2 + against 1/2 e^(-1024/1025), from the grid
# Laplace's exact distribution.

REGRESSION_DATA = one_row_targets([0.5] * 9, 0.0, 1.0)


def value_attack(model, rng):
    """The released value at the planted point."""
    return float(model.predict(PLANTED_POINT)[0])


def _value_case(name, datasets, means, n_runs, rng, factor=None, **kwargs):
    model = ESTIMATORS[name](1.0, SEED).fit(*datasets[0])
    mech = model.privacy_mechanism_
    g, cut = mech.grid_step, min(means) + mech.grid_step / 2
    p = [
        _grid_laplace_below(
            m, cut, mech.sensitivity, mech.epsilon_per_query, g, factor or 1.0
        )
        for m in means
    ]
    broken = (
        contextlib.nullcontext() if factor is None else bad.value_laplace_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            name,
            1.0,
            datasets,
            value_attack,
            n_runs,
            rng,
            event=lambda value: value <= cut,
            **kwargs,
        )
    return result, p


def test_regressor_within_claim():
    """Shipped: bound <= 1 (false alarm below 5e-3, exact: this event's loss
    is the whole claim, 1024/1025 of it)."""
    result, (p0, p1) = _value_case(
        "regressor", REGRESSION_DATA, (0.45, 0.55), 600, 60, fresh_noise="copy"
    )
    _record("PrivatePredictionRegressor", "mean .45 vs .55, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_regressor_halved_noise_caught():
    """Grid Laplace at half the scale: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _value_case(
        "regressor", REGRESSION_DATA, (0.45, 0.55), 400, 61, 0.5, fresh_noise="copy"
    )
    _record("BAD regressor, noise x 1/2", "mean .45 vs .55, k=10", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 8. SoftLabelPrivateRegressor: two stability tests, the noisy-mean fallback
# ---------------------------------------------------------------------------
# Ten one-row shards of constant classifiers (soft labels 0 or 1): five 0s
# and four 1s besides the planted 0 against 1. The gamma-histogram [6,0,0,4]
# against [5,0,0,5] has distance 0 and the shifted histogram is empty, so the
# query fails both tests and is answered by the fallback, the noisy mean 0.4
# against 0.5 (grid Laplace at the fallback's epsilon), and the model halts
# (T = 1). Uncharged, the fallback answers every further row: the adversary
# asks REPEATS_SOFT rows and averages; a shipped model pads them with the
# midpoint 0.5, so its average moves by at most 1/REPEATS_SOFT.

SOFT_DATA = one_row_shards(zeros=5, ones=4)
REPEATS_SOFT = 200
SOFT_QUERIES = _rows(1e-6 * np.arange(1, REPEATS_SOFT + 1))


def soft_mean_attack(model, rng):
    """The average released value over REPEATS_SOFT rows at the planted point."""
    return float(np.mean(model.predict(SOFT_QUERIES)))


def test_soft_label_within_claim():
    """Shipped: bound <= 2 (false alarm below 1e-9, exact: one noisy mean)."""
    model = ESTIMATORS["soft_label"](2.0, SEED).fit(*SOFT_DATA[0])
    mech = model.privacy_mechanism_
    eps_fb, sensitivity = mech.fallback_epsilon, 1.0 / K_SOFT_LABEL
    g = default_grid_step(sensitivity)
    # the average is 0.5 + (v - 0.5) / REPEATS_SOFT: a threshold on v
    cut = 0.4 + g / 2
    average_cut = 0.5 + (cut - 0.5) / REPEATS_SOFT
    p0, p1 = (_grid_laplace_below(m, cut, sensitivity, eps_fb, g) for m in (0.4, 0.5))
    result = _attack_audit(
        "soft_label",
        2.0,
        SOFT_DATA,
        soft_mean_attack,
        400,
        70,
        event=lambda average: average <= average_cut,
    )
    _record("SoftLabelPrivateRegressor (noisy mean)", "mean .4 vs .5, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 2.0) < 1e-9


def _clipped_grid_laplace_moments(value, sensitivity, epsilon, grid_step):
    """Mean and variance of a grid Laplace release clipped to [0, 1] (exact)."""
    units = math.floor(sensitivity / grid_step) + 1
    scale = units / epsilon
    reach = int(40 * scale) + 10
    z = np.arange(-reach, reach + 1)
    a = math.exp(-1.0 / scale)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    released = np.clip((round(value / grid_step) + z) * grid_step, 0.0, 1.0)
    mean = float(pmf @ released)
    return mean, float(pmf @ (released - mean) ** 2)


def test_soft_label_uncharged_fallback_caught():
    """The cutoff not enforced: caught (miss below 1e-6, by the normal tails
    of an average of REPEATS_SOFT independent clipped noisy means, from their
    exact mean and variance: the two sides sit six standard deviations
    apart)."""
    model = ESTIMATORS["soft_label"](2.0, SEED).fit(*SOFT_DATA[0])
    eps_fb = model.privacy_mechanism_.fallback_epsilon
    sensitivity = 1.0 / K_SOFT_LABEL
    tails = []
    for mean in (0.4, 0.5):
        mu, var = _clipped_grid_laplace_moments(
            mean, sensitivity, eps_fb, default_grid_step(sensitivity)
        )
        tails.append(stats.norm.cdf((0.45 - mu) / math.sqrt(var / REPEATS_SOFT)))
    with bad.sparse_vector_never_halts():
        result = _attack_audit(
            "soft_label",
            2.0,
            SOFT_DATA,
            soft_mean_attack,
            150,
            71,
            event=lambda average: average <= 0.45,
        )
    _record("BAD soft label, never halts", "mean .4 vs .5, k=10", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 2.0) < 1e-6


# ---------------------------------------------------------------------------
# 9-10. PrivateKernelRidge: predictions, and the released model
# ---------------------------------------------------------------------------
# Twenty rows ten apart (K(x_i, x_j) ~ 0 for i != j at gamma = 1). With
# alpha = 1e-6 the fit interpolates: the planted label -1 against +1 at x = 0
# moves the clipped prediction there by 2 M, the whole clipped sensitivity.
# One query for the whole budget; "release <= -M" has probability 1/2 + on
# the first side and 1/2 e^(-1024/1025) on the second.
#
# The released model (release="model", alpha = 1, two random Fourier pairs):
# the planted label moves the ridge weights by at most 2/(n alpha), half the
# weight sensitivity the release is calibrated for (2 (R + M)/(n alpha), R =
# M/sqrt(alpha)), and the prediction at x = 0 by 0.08 against the noise's
# 0.75. Halving or quartering that noise is caught at the mechanism level
# (WeightRelease in tests/test_audit_gaussian.py); through the published model
# a cut of 1/32 is what a CI-affordable run count resolves.

KR_X = np.arange(20, dtype=np.float64).reshape(-1, 1) * 10.0
KR_Y = np.where(np.random.default_rng(3).random(20) < 0.5, -1.0, 1.0)
KR_DATA = plant_record(KR_X, KR_Y, 0, ([0.0], -1.0), ([0.0], 1.0))


def test_kernel_ridge_within_claim():
    """Shipped predictions: bound <= 1 (false alarm below 5e-3, exact)."""
    result, (p0, p1) = _value_case(
        "kernel_ridge", KR_DATA, (-1.0, 1.0), 600, 80, fresh_noise="copy"
    )
    _record("PrivateKernelRidge predict", "label -1 vs +1, interpolating", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_kernel_ridge_halved_noise_caught():
    """Grid Laplace at half the scale: caught (miss below 1e-3, exact)."""
    result, (p0, p1) = _value_case(
        "kernel_ridge", KR_DATA, (-1.0, 1.0), 400, 81, 0.5, fresh_noise="copy"
    )
    _record("BAD kernel ridge, noise x 1/2", "label -1 vs +1, interpolating", result)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3


def _model_prediction_shift():
    predictions = [
        ESTIMATORS["kernel_ridge_model"](1.0, SEED)
        .set_params(noise_random_state=0)
        .fit(X, y)
        for X, y in KR_DATA
    ]
    return predictions


def _model_case(n_runs, rng, factor=1.0):
    """The released prediction at x = 0 is the noiseless one plus noise of
    standard deviation noise_scale_ (one weight's, times ||phi(0)|| = 1;
    rounding adds g^2/12 to its variance): the event is the midpoint of the
    two noiseless predictions (from fits with the noise scaled to nothing),
    and its probabilities are normal tails."""
    with bad.weight_release_scaled(1e-12):
        noiseless = [
            ESTIMATORS["kernel_ridge_model"](1.0, SEED)
            .fit(X, y)
            .predict(PLANTED_POINT)[0]
            for X, y in KR_DATA
        ]
    model = ESTIMATORS["kernel_ridge_model"](1.0, SEED).fit(*KR_DATA[0])
    sigma = math.sqrt((factor * model.noise_scale_) ** 2 + model.grid_step_**2 / 12)
    cut = sum(noiseless) / 2
    tails = [stats.norm.sf((cut - mean) / sigma) for mean in noiseless]
    broken = (
        contextlib.nullcontext() if factor == 1.0 else bad.weight_release_scaled(factor)
    )
    with broken:
        result = _attack_audit(
            "kernel_ridge_model",
            1.0,
            KR_DATA,
            value_attack,
            n_runs,
            rng,
            event=lambda value: value >= cut,
        )
    return result, tails, noiseless


def test_kernel_ridge_model_within_claim():
    """Shipped model release: bound <= 1 (false alarm below 1e-9, normal tails)."""
    result, tails, noiseless = _model_case(200, 90)
    _record("PrivateKernelRidge release=model", "label -1 vs +1, alpha=1", result)
    assert 0 < noiseless[1] - noiseless[0] < 0.1  # 2/(n alpha) at most
    _assert_within(result)
    assert _false_alarm(*tails, result.n_runs, result.delta, 1.0) < 1e-9


def test_kernel_ridge_model_noise_cut_caught():
    """Weights with 1/32 of the noise: caught (miss below 1e-3, normal tails:
    the two sides' released predictions sit 3.3 noise deviations apart)."""
    result, tails, _ = _model_case(200, 91, factor=1 / 32)
    _record("BAD kernel ridge model, noise x 1/32", "label -1 vs +1, alpha=1", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 11. PrivateStatisticalQueries: one chunk per query
# ---------------------------------------------------------------------------
# Four rows in two chunks; the planted row (1 against 0 in its only column)
# sits in the second chunk, which the adversary knows from the partition: it
# spends the first query on a constant (no information) and asks the count of
# ones on the planted chunk, then keeps cycling while the oracle answers. The
# shipped oracle refuses the third query (BudgetExhaustedError): one noisy
# count, the truncated geometric of 1 against 0, whose 0 has probability
# ratio exactly e^epsilon. An oracle that reuses its chunks answers the planted
# chunk SQ_CYCLES times.

SQ_ROWS = 4
SQ_CHUNKS = shard_rows(SQ_ROWS, 2, SEED)
SQ_PLANTED = int(SQ_CHUNKS[1][0])
SQ_DATA = plant_record(
    np.zeros((SQ_ROWS, 1)), None, SQ_PLANTED, ([1.0], None), ([0.0], None)
)
SQ_CYCLES = 6


def _ones(X, y):
    return X[:, 0]


def _nothing(X, y):
    return np.zeros(X.shape[0])


def statistical_query_attack(model, rng):
    """The sum of the planted chunk's answers while the oracle answers."""
    total = 0.0
    for _ in range(SQ_CYCLES):
        try:
            model.query_count(_nothing)
            total += model.query_count(_ones)
        except BudgetExhaustedError:
            break
    return total


def test_statistical_queries_within_claim():
    """Shipped: bound <= 1 (false alarm below 5e-3, exact: the event's loss is
    the whole claim)."""
    scale = 1.0  # DLap(1/epsilon) at epsilon = 1
    p0, p1 = (float(_dlap_cdf(-count, scale)) for count in (1, 0))
    result = _attack_audit(
        "statistical_queries",
        1.0,
        SQ_DATA,
        statistical_query_attack,
        600,
        100,
        fresh_noise="copy",
        event=lambda total: total == 0,
    )
    _record("PrivateStatisticalQueries", "planted chunk 1 vs 0", result, 1.0)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def _truncated_count_pmf(count, size, epsilon):
    """Output pmf of the truncated geometric on [0, size] for a true count."""
    scale = 1.0 / epsilon
    below = [float(_dlap_cdf(j - count, scale)) for j in range(size + 1)]
    return np.diff(np.r_[0.0, below[:-1], 1.0])


def test_statistical_queries_reused_chunks_caught():
    """Chunks answered again for free: caught (miss below 1e-3, exact: six
    independent answers of 1 against 0, the event at most one in total)."""
    tails = []
    for count in (1, 0):
        pmf = _truncated_count_pmf(count, 2, 1.0)
        total = pmf
        for _ in range(SQ_CYCLES - 1):
            total = np.convolve(total, pmf)
        tails.append(float(total[:2].sum()))
    with bad.statistical_queries_reuse_chunks():
        result = _attack_audit(
            "statistical_queries",
            1.0,
            SQ_DATA,
            statistical_query_attack,
            150,
            101,
            fresh_noise="copy",
            event=lambda total: total <= 1,
        )
    _record("BAD SQ oracle reuses chunks", "planted chunk 1 vs 0", result)
    _assert_caught(result)
    assert _miss(*tails, result.n_runs, result.delta, 1.0) < 1e-3


# ---------------------------------------------------------------------------
# 12-13. Knowledge transfer: the published students
# ---------------------------------------------------------------------------
# The adversary's public rows are the planted point alone; the private
# teacher labels it once (max_queries=1) and the student, a tree on that one
# labelled row, answers it for free. Classifier: votes [5, 5] against [4, 6]
# (the exponential mechanism's 0 has probability 1/2 against 0.27).
# Regressor: the clipped mean 0.45 against 0.55 as above. Broken: teachers
# that label the public rows with their non-private vote (or mean): the
# student repeats the planted record's effect exactly.

KT_DATA = one_row_shards(zeros=4, ones=5)
PUBLIC_ROWS = {"X_public": PLANTED_POINT}


def student_label_attack(model, rng):
    """1 when the published student predicts 0 at the planted point."""
    return float(model.predict(PLANTED_POINT)[0] == 0)


def test_knowledge_transfer_within_claim():
    """Shipped student: bound <= 1 (false alarm below 1e-7, exact)."""
    p0, p1 = _exponential_probabilities([5, 5], [4, 6], 1.0)
    result = _attack_audit(
        "knowledge_transfer",
        1.0,
        KT_DATA,
        student_label_attack,
        200,
        110,
        fit_params=PUBLIC_ROWS,
        event=lambda zero: zero == 1,
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record(
        "KnowledgeTransferClassifier student", "votes [5,5] vs [4,6]", result, exact
    )
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-7


def test_knowledge_transfer_plain_vote_caught():
    """Public rows labelled by the plain vote: caught (the student's answer is
    certain on both sides: bound above 3 with 100 runs whatever the seed)."""
    with bad.teacher_plain_vote():
        result = _attack_audit(
            "knowledge_transfer",
            1.0,
            KT_DATA,
            student_label_attack,
            100,
            111,
            fit_params=PUBLIC_ROWS,
            event=lambda zero: zero == 1,
        )
    _record("BAD student of the plain vote", "votes [5,5] vs [4,6]", result)
    assert result.counts == (result.n_runs, 0)
    _assert_caught(result)


def test_knowledge_transfer_regressor_within_claim():
    """Shipped student: bound <= 1 (false alarm below 5e-3, exact)."""
    model = ESTIMATORS["regressor"](1.0, SEED).fit(*REGRESSION_DATA[0])
    mech = model.privacy_mechanism_
    cut = 0.45 + mech.grid_step / 2
    p0, p1 = (
        _grid_laplace_below(
            m, cut, mech.sensitivity, mech.epsilon_per_query, mech.grid_step
        )
        for m in (0.45, 0.55)
    )
    result = _attack_audit(
        "knowledge_transfer_regressor",
        1.0,
        REGRESSION_DATA,
        value_attack,
        200,
        120,
        fit_params=PUBLIC_ROWS,
        event=lambda value: value <= cut,
    )
    _record("KnowledgeTransferRegressor student", "mean .45 vs .55, k=10", result)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 5e-3


def test_knowledge_transfer_regressor_plain_mean_caught():
    """Public rows labelled by the plain mean: caught (certain on both sides)."""
    with bad.teacher_plain_vote():
        result = _attack_audit(
            "knowledge_transfer_regressor",
            1.0,
            REGRESSION_DATA,
            value_attack,
            100,
            121,
            fit_params=PUBLIC_ROWS,
            event=lambda value: value <= 0.5,
        )
    _record("BAD student of the plain mean", "mean .45 vs .55, k=10", result)
    assert result.counts == (result.n_runs, 0)
    _assert_caught(result)


# ---------------------------------------------------------------------------
# 14. ExponentialMechanismERM: the published hypothesis
# ---------------------------------------------------------------------------
# Two stumps at 0.5 (either orientation) on ten rows, five at 0.25 and five at
# 0.75; the planted record (0.25, 1) against (0.25, 0) moves their error
# counts from (5, 5) to (4, 6). The adversary reads the published stump's
# prediction at 0.25: the first stump (0 on the left) has probability 1/2
# against 1/(1 + e^-1) = 0.73.

ERM_X = _rows([0.25] * 5 + [0.75] * 5)
ERM_Y = np.array([0, 0, 0, 1, 1, 1, 1, 0, 0, 0])
ERM_DATA = plant_record(ERM_X, ERM_Y, 3, ([0.25], 1), ([0.25], 0))


def hypothesis_attack(model, rng):
    """1 when the published stump says 1 at 0.25 (the second orientation)."""
    return float(model.predict(_rows([0.25]))[0] == 1)


def test_erm_within_claim():
    """Shipped: bound <= 1 (false alarm below 1e-9, exact)."""
    p0, p1 = 0.5, 1 / (1 + math.exp(1.0))
    result = _attack_audit(
        "erm", 1.0, ERM_DATA, hypothesis_attack, 600, 130, event=lambda one: one == 1
    )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("ExponentialMechanismERM", "errors (5,5) vs (4,6)", result, exact)
    _assert_within(result)
    assert _false_alarm(p0, p1, result.n_runs, result.delta, 1.0) < 1e-9


def test_erm_halved_sensitivity_caught():
    """Half the utility sensitivity: caught (miss below 1e-3, exact)."""
    p0, p1 = 0.5, 1 / (1 + math.exp(2.0))
    with bad.erm_utility_sensitivity_halved():
        result = _attack_audit(
            "erm",
            1.0,
            ERM_DATA,
            hypothesis_attack,
            1500,
            131,
            event=lambda one: one == 1,
        )
    exact = exact_epsilon([p0, 1 - p0], [p1, 1 - p1])
    _record("BAD ERM, sensitivity / 2", "errors (5,5) vs (4,6)", result, exact)
    _assert_caught(result)
    assert _miss(p0, p1, result.n_runs, result.delta, 1.0) < 1e-3
