"""Test configuration shared by every test module.

SCIPY_ARRAY_API=1 must be set before scipy is imported, so that scikit-learn's
estimator checks that need the array API are run rather than skipped.

BLAS (and OpenMP) run single-threaded in tests: the suite fits many tiny
models, and on a 2-core CI machine multi-threaded BLAS only oversubscribes
the cores (several times slower, same results). The limit is one
session-scoped autouse fixture, :func:`single_thread_blas`, for every test:

* not a call at import time: threadpoolctl can only limit libraries that are
  already loaded, and when this file is imported numpy and scipy are not
  (``threadpool_info()`` is empty there, so such a call limits nothing). By
  the time the first test runs, collection has imported every test module,
  and with them numpy's and scipy's OpenBLAS and scikit-learn's OpenMP.
* threads of this process (joblib's threading backend, Dask's in-process
  workers) share the limit; joblib's loky worker processes do not inherit
  it, but joblib caps their BLAS/OpenMP threads itself at
  ``cpu_count() // n_jobs`` (1 per worker on 2 cores), so no per-module
  fixture is needed for them either.

Quick and slow tests. ``pytest`` (the README's command) runs the quick
tests; ``pytest -m slow`` runs the rest, and ``.ci/run`` runs both, so CI
still runs every test. A test is slow when it carries ``@pytest.mark.slow``
or is listed in :data:`SLOW_TESTS` below, one place that says why each is
slow (they are correct and kept; they only cost seconds each).
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def single_thread_blas():
    """One BLAS/OpenMP thread in this process for the whole session."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def answers_below_constant_allowed(monkeypatch):
    """Let PrivatePredictionRegressor serve answers that lose to a constant.

    Tests of mechanics (noise hygiene, serving counters, ledgers, input
    forms) fit a few teachers on a few hundred rows, whose answers ``fit``
    refuses (docs/regression.rst, "When answers lose to a constant"); they
    check the machinery, not the answers' quality. Switched off the way a
    knowledge-transfer student switches it off on its own teacher.
    """
    from dpsklearn import PrivatePredictionRegressor

    monkeypatch.setattr(
        PrivatePredictionRegressor, "_refuses_answers_below_constant", False
    )


#: Tests moved to ``pytest -m slow``, by test function (every parameter), with
#: the reason each costs seconds. Statistical audits keep their quick siblings
#: (a smaller audit of the same mechanism stays in the quick run).
SLOW_TESTS = {
    # statistical audits: 10^4-10^5 runs of a mechanism on neighbouring data
    "test_audit.py": (
        "test_bad_engine_releasing_noisy_score_is_caught",
        "test_bad_engine_small_query_noise_is_caught",
        "test_engine_worst_case",
    ),
    "test_audit_attack.py": (
        "test_stability_abstain_quartered_noise_caught",
        "test_stability_abstain_within_claim",
    ),
    "test_audit_regression.py": (
        "test_bad_gaussian_half_sigma_is_caught",
        "test_gaussian_release_audit",
    ),
    "test_audit_regression_new.py": (
        "test_range_audit",
        "test_range_audit_catches_unweighted_counts",
        "test_ssp_audit",
        "test_ssp_audit_catches_halved_noise",
    ),
    "test_audit_selection.py": ("test_selection_matches_its_claim",),
    # (a staged AdaSSP release, 60,000 runs each; a twentieth stays quick)
    "test_staged_statistics.py": (
        "test_staged_audit",
        "test_staged_audit_catches_every_stage_at_the_whole_budget",
    ),
    "test_private_prediction.py": (
        "test_exponential_mechanism_frequencies_chi_square",
        "test_predict_proba_rows_are_probability_vectors",
        "test_epsilon_per_query_hand_computed",
        # GridSearchCV over epsilon on the Adult table: 15 fits
        "test_grid_search_over_epsilon_on_adult",
    ),
    "test_public_prior.py": ("test_engine_matches_the_enumeration",),
    "test_sparse_vector.py": ("test_engine_matches_sequential_reference",),
    "test_stability_routes.py": (
        "test_expected_answered_matches_a_simulation",
        "test_max_unstable_auto_takes_the_planners_choice",
        "test_optimal_composition_deltas_are_rounded_up",
    ),
    # processes and threads racing for one budget
    "test_ledger.py": (
        "test_four_processes_never_exceed_the_budget",
        "test_sigkill_mid_stream_loses_no_spend",
        "test_sixteen_threads_never_exceed_the_budget",
    ),
    "test_abstentions_and_copies.py": (
        "test_grid_search_in_processes_with_a_ledger_charges_every_fit",
        "test_grid_search_in_processes_with_a_shared_accountant_names_the_ledger",
    ),
    "test_sharding.py": ("test_fit_teachers_identical_across_n_jobs_and_backends",),
    "test_kernel_ridge_sharded.py": (
        "test_parallel_fit_matches_sequential_and_sparse_input",
    ),
    # exact accounting at scale and randomised sweeps (hypothesis)
    "test_calibration.py": (
        "test_calibration_invariants_random",
        "test_per_query_auto_is_best_and_zcdp_composes",
    ),
    "test_gaussian_release.py": ("test_m_gaussian_events_compose_to_the_budget",),
    "test_planning.py": ("test_n_estimators_for_agreement_matches_brute_force",),
    # grid searches and real tables: many fits each
    "test_model_selection.py": (
        "test_knowledge_transfer_search_publishes_only_the_student",
        # a private search over knowledge-transfer regressors: a dozen students
        "test_knowledge_transfer_regressor_choices_are_searched_privately",
        "test_shared_accountant_is_charged_before_anything_is_trained",
    ),
    "test_teacher_cache.py": ("test_grid_search_over_epsilon_fits_each_fold_once",),
    "test_inputs.py": ("test_pandas_categorical_columns",),
    "test_degenerate_teachers.py": (
        "test_text_teachers_on_tiny_shards_are_named",
        "test_blurred_answers_of_one_class_teachers_are_named",
        "test_a_student_of_one_class_teachers_is_told",
    ),
    "test_fused.py": ("test_memory_is_bounded_by_query_chunks",),
    # audits whose "caught" siblings (the broken variants) stay quick
    "test_audit_attack_releases.py": (
        "test_erm_halved_sensitivity_caught",
        "test_knowledge_transfer_within_claim",
        "test_knowledge_transfer_regressor_within_claim",
        "test_soft_label_within_claim",
    ),
    "test_audit_attack_votes.py": (
        "test_exponential_predict_without_half_caught",
        "test_exponential_predict_within_claim",
        "test_gnmax_within_claim",
        "test_gnmax_copies_within_twice_the_claim",
        "test_confident_gnmax_within_claim",
    ),
    # the k-column moment's audit against its broken variant, 10^5 releases
    # (the audit within the claim keeps one quick parameter set)
    "test_no_public_rows.py": (
        "test_k_column_moment_audit_catches_add_remove_sensitivity",
    ),
    # the numerical game at 1,000 rounds, against the lattice and on finer grids
    "test_bounded_range.py": (
        "test_auto_takes_the_certified_game_at_any_size",
        "test_blocks_against_the_direct_game_and_lower_bounds",
        "test_exponential_mechanism_target_against_the_lattice_game",
        "test_finer_default_grid_tightens_the_split_within_the_optimum",
    ),
    # "auto" planned over every mechanism on a dozen settings
    "test_mechanism_options.py": (
        "test_grid_search_over_mechanisms",
        "test_private_grid_search_with_a_column_transformer_by_name",
        "test_auto_takes_a_free_test_only_where_it_is_clearly_better",
        "test_auto_never_takes_what_only_noise_can_pass",
    ),
    # students of a regression teacher on real spans: hundreds of answers
    "test_knowledge_transfer_regressor.py": (
        "test_default_student_answers_rows_outside_the_public_span_at_its_edge",
        "test_default_student_answers_within_the_teachers_public_range",
    ),
    "test_search_defaults.py": ("test_a_search_shows_each_kind_of_warning_once",),
    # a two-process Dask cluster for each module (bad input stays quick)
    "test_dask_collections.py": (
        "test_votes_identical_to_a_numpy_fit",
        "test_each_teacher_fitted_on_exactly_its_numpy_shard",
        "test_rows_never_come_back_to_the_client",
        "test_fit_from_parquet",
        "test_predict_on_the_workers_after_a_dask_fit",
        "test_dask_fit_bypasses_the_teacher_cache",
    ),
    "test_dask_regression.py": (
        "test_regression_ensembles_identical_to_a_numpy_fit",
        "test_soft_label_classifier_teachers_from_partitions",
        "test_kernel_ridge_same_release_from_partitions",
        "test_kernel_ridge_shards_identical_to_numpy_shards",
        "test_knowledge_transfer_regressor_teacher_from_partitions",
        "test_kernel_ridge_shards_send_back_weights_only",
        "test_kernel_ridge_statistics_added_on_the_workers",
    ),
    "test_dask.py": (
        "test_dask_fit_votes_identical_to_local_fit",
        "test_dask_fit_reports_progress",
        "test_dask_predict_counts_votes_on_the_workers",
    ),
}

#: Single parameter sets moved to ``pytest -m slow``: ``file: (parts, ...)``,
#: a test is slow when its id contains every string of one ``parts``.
SLOW_PARAMETERS = {
    # the k-column moment's audit with the most rows (a second stays quick)
    "test_no_public_rows.py": (("test_k_column_moment_audit[", "shares0"),),
    # the sparse-format checks refit a knowledge-transfer student for each of
    # seven sparse formats, twice (its dense checks stay quick)
    "test_estimator_checks.py": (
        ("KnowledgeTransfer", "check_estimator_sparse_array"),
        ("KnowledgeTransfer", "check_estimator_sparse_matrix"),
    ),
    # GridSearchCV in two worker processes sharing a ledger (one process
    # stays quick)
    "test_ledger.py": (("test_grid_search_records_every_fit[", "-2]"),),
    # the attack audit's and the regression student's examples fit hundreds
    # of models (every other module's examples stay quick)
    "test_docstring_examples.py": (
        ("[dpsklearn.audit._attack]",),
        ("[dpsklearn.ensemble._knowledge_transfer_regressor]",),
    ),
    # the certified split of 1,000 releases searched twice, with the copying
    # rounds and the viewed ones (the 200-release search stays quick)
    "test_game_identity.py": (("test_certified_splits_unchanged[8.0-1000]",),),
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_TESTS` slow (before ``-m`` selects)."""
    listed = {(f, name) for f, names in SLOW_TESTS.items() for name in names}
    found = set()
    for item in items:
        key = (item.path.name, getattr(item, "originalname", item.name))
        if key in listed:
            item.add_marker(pytest.mark.slow)
            found.add(key)
        for parts in SLOW_PARAMETERS.get(item.path.name, ()):
            if all(part in item.nodeid for part in parts):
                item.add_marker(pytest.mark.slow)
