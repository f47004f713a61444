"""The tests that start a process (a command line, a notebook kernel, a worker pool, make, git): `make test`
runs them, `make check` (pytest --in-process) leaves them out (tests/conftest.py). By module: ALL (every test
in it) or the tests' names (each with all its parametrisations); ``@pytest.mark.process`` on a test does the
same. A test that starts a process and is in neither fails `make check` saying so (tests/process_guard.py);
a name here that is no test fails tests/test_process_guard.py. Listed from a full ``--in-process`` run."""

ALL = "*"

PROCESS: dict[str, str | tuple[str, ...]] = {
    "tests/benchmarks/test_bench.py": (
        "test_second_run_reuses_cached_inputs",
        "test_smoke_json_describes_the_machine",
        "test_smoke_run_has_every_case_with_numbers",
    ),
    "tests/benchmarks/test_e2e.py": (
        "test_artifact_side_ran_where_the_snapshot_exists",
        "test_every_case_and_size_has_a_row_with_numbers",
    ),
    "tests/benchmarks/test_speed.py": (
        "test_speed_table_runs_beside_the_artifact",
        "test_the_dmat_row_prints_both_ratios_the_render_time_and_its_targets",
    ),
    "tests/benchmarks/test_stage_marks.py": ALL,
    "tests/benchmarks/test_tree_memory.py": ALL,
    "tests/bundle/test_bundle_trust.py": (
        "test_paper_archive_digest_in_the_header_and_a_changed_file_is_refused_next_run",
    ),
    "tests/bundle/test_local_zip.py": (
        "test_run_static_on_a_zip_from_anywhere",
    ),
    "tests/differential/test_block_sched_vs_artifact.py": ALL,
    "tests/frontend/test_jupyter_front_end.py": ALL,
    "tests/differential/test_dmat_vs_artifact.py": (
        "test_cli_on_all_ones_clocks_writes_the_artifacts_map_and_a_figure",
        "test_one_thread_blocks_without_probe_toml_read_as_thread_level",
        "test_same_page_reference_map_as_dmat_cc",
    ),
    "tests/differential/test_exposed_latency_vs_artifact.py": (
        "test_a_non_numeric_cell_the_artifact_raises_ours_one_line",
        "test_bad_rows_the_artifact_plots_ours_refuses_in_one_line",
    ),
    "tests/differential/test_max_mem_vs_artifact.py": ALL,
    "tests/differential/test_real_gpu_vs_artifact.py": (
        "test_on_mains_real_traces_dmat_cc_crashes_and_ours_counts_them",
        "test_on_the_artifacts_real_traces_our_map_is_dmat_cc_s",
    ),
    "tests/formats/test_eventlog_without_pandas.py": (
        "test_reading_an_event_log_and_its_probe_memory_imports_no_pandas",
    ),
    "tests/formats/test_formats_dmat_stream.py": (
        "test_scratch_left_by_a_killed_run_is_removed_and_nothing_else",
    ),
    "tests/formats/test_genuine_probe_engine.py": (
        "test_the_committed_fixtures_are_what_the_real_engine_writes_today",
    ),
    "tests/fuzz/test_fuzz_bundle_files.py": (
        "test_every_command_line_on_mutated_input",
        "test_every_folder_command_line_on_a_mutated_file",
    ),
    "tests/reliability/test_faults.py": ALL,
    "tests/reliability/test_round3_concurrency.py": (
        "test_a_run_reading_the_root_is_no_obstacle_to_another_run_of_the_same_bundle",
        "test_sample_force_waits_for_a_run_reading_the_root_and_gives_up_in_one_line",
    ),
    "tests/reliability/test_round3_manifest.py": ALL,
    "tests/reliability/test_round3_resources.py": ALL,
    "tests/reliability/test_round3_symlinks.py": ALL,
    "tests/reliability/test_round3_usage.py": ALL,
    "tests/reliability/test_round3_values.py": (
        "test_a_control_character_in_a_probe_name_is_refused_in_one_line",
        "test_a_run_refuses_a_nul_byte_before_a_probe_name_instead_of_judging_fewer_rows",
        "test_an_empty_ncu_cell_is_not_counted_as_a_comparison_that_holds",
        "test_the_per_figure_script_says_n_a_for_an_empty_ncu_cell",
    ),
    "tests/reliability/test_round4_caches.py": ALL,
    "tests/reliability/test_round4_collect.py": ALL,
    "tests/reliability/test_round4_escape.py": ALL,
    "tests/reliability/test_round4_publish.py": (
        "test_a_real_sigkill_at_the_commit_leaves_one_set_and_the_next_run_recovers",
        "test_a_sigkill_as_the_verdict_changes_leaves_the_verdict_of_the_notebook_beside_it",
        "test_what_a_kill_left_on_main_keeps_the_finished_set",
    ),
    "tests/reliability/test_round4_timeouts.py": ALL,
    "tests/reliability/test_round4_usage.py": (
        "test_a_huge_seed_is_refused_by_name_not_blamed_on_a_manifest",
        "test_a_per_figure_script_writes_into_a_non_ascii_folder_under_an_ascii_locale",
        "test_a_run_from_a_non_ascii_folder_under_an_ascii_locale",
        "test_an_output_dir_of_another_type_is_one_line",
        "test_compare_prints_non_ascii_keys_under_an_ascii_locale",
        "test_compare_says_the_runs_read_different_bundles",
        "test_prepare_env_does_not_count_a_crashing_ptxas_as_ok",
        "test_prepare_env_says_no_gpu_is_visible_with_an_empty_cuda_visible_devices",
    ),
    "tests/report/test_driver.py": (
        "test_a_required_input_a_positive_flag_and_the_files_load_wrote",
        "test_command_line_errors_are_one_line",
        "test_command_line_prints_the_lines_first_then_the_rest",
        "test_several_results_numbers_of_their_own_flags_and_closing_lines",
        "test_the_folders_script_runs_the_driver",
    ),
    "tests/report/test_exact_numbers.py": (
        "test_compare_of_a_summary_too_large_for_memory_is_one_line",
        "test_compare_of_two_runs_prints_integers",
        "test_counts_are_integers_in_section_results",
        "test_counts_are_integers_in_summary_json",
    ),
    "tests/report/test_figure_process.py": ALL,
    "tests/report/test_seventh_section.py": ALL,
    "tests/report/test_verdict_catches_corruption.py": (
        "test_a_corrupted_bundle_fails_the_run_end_to_end",
    ),
    "tests/run/test_cache_sees_added_inputs.py": (
        "test_a_variant_added_in_an_accepted_layout_is_not_hidden_by_the_cache",
    ),
    "tests/run/test_cli.py": (
        "test_failing_cell_exits_1_with_error_line",
        "test_python_dash_m_help",
        "test_run_injects_parameters_and_saves_executed_notebook",
        "test_run_points_at_summary_and_figures",
        "test_the_injected_parameters_name_no_folder_of_this_machine_inside_the_checkout",
    ),
    "tests/run/test_cli_os_errors.py": ALL,
    "tests/run/test_kernel_sockets.py": (
        "test_the_kernel_listens_on_private_unix_sockets_removed_after_the_run",
    ),
    "tests/run/test_cli_paths.py": (
        "test_per_figure_script_names_a_symlink_loop_as_its_input",
        "test_per_figure_script_refuses_its_own_code_folder",
        "test_symlink_loop_as_trace_root_of_the_real_notebook",
        "test_unsearchable_folder_is_one_line_and_exit_2",
    ),
    "tests/run/test_collect.py": (
        "test_a_failed_collection_script_names_its_stdout_when_stderr_is_empty",
        "test_announced_dir_missing",
        "test_block_sched_analysis_of_collected_tree",
        "test_collect_block_sched_with_fake",
        "test_collect_into_replaces_the_folder_and_keeps_stdout",
        "test_collect_into_says_a_failed_run_in_one_line_and_goes_on",
        "test_collect_runs_counts_and_says_each_run_and_the_total",
        "test_failure_has_stderr_tail",
        "test_missing_cli",
        "test_no_trace_line",
        "test_run_neutrino_dest_name_and_workdir",
        "test_run_neutrino_moves_trace",
    ),
    "tests/run/test_dynamic_notebook.py": (
        "test_a_bundle_it_did_not_collect_is_analysed_and_said_so",
        "test_collects_with_fake_neutrino",
        "test_notebook_is_generated_and_clean",
        "test_the_tour_lists_neutrinos_built_in_probes_from_its_source",
        "test_the_tour_shows_the_block_sched_probe_and_explains_event_log_line_by_line",
        "test_without_a_gpu_each_claim_that_can_apply_to_gpu_data_is_listed_once_and_no_ground_truth",
        "test_without_a_gpu_each_section_skips_in_one_line",
        "test_without_a_gpu_no_output_names_an_absolute_path",
        "test_without_a_gpu_the_environment_check_is_the_first_output",
        "test_without_a_gpu_the_headline_says_nothing_was_collected",
    ),
    "tests/run/test_dynamic_ptx_emulated.py": ALL,
    "tests/run/test_dynamic_real_neutrino.py": ALL,
    "tests/run/test_exit_codes.py": (
        "test_the_notebook_run_exits_4_when_the_paper_bundle_cannot_be_downloaded",
    ),
    "tests/run/test_failed_run_keeps_report.py": ALL,
    "tests/run/test_genuine_cli.py": ALL,
    "tests/run/test_kernel_check.py": ALL,
    "tests/run/test_layout.py": (
        "test_per_figure_scripts_write_under_results_cli_and_never_into_a_notebooks_folder",
    ),
    "tests/run/test_logging.py": (
        "test_default_shows_progress_and_info_but_no_debug",
        "test_quiet_and_verbose_exclude_each_other",
        "test_quiet_shows_no_progress_and_no_info",
        "test_run_writes_run_log_beside_the_results_with_the_section_timings",
        "test_verbose_shows_debug",
    ),
    "tests/run/test_neutrino_command_lines.py": (
        "test_every_collector_command_line_parses_with_the_real_cli",
    ),
    "tests/run/test_notebook_facade.py": (
        "test_a_notebook_showing_cached_results_imports_no_matplotlib",
        "test_a_second_run_on_the_same_output_folder_is_refused",
        "test_sections_computed_ahead_in_workers_give_the_same_results",
        "test_sections_with_current_caches_are_left_to_their_cells",
    ),
    "tests/run/test_notebook_report.py": ALL,
    "tests/run/test_papermill_parameters.py": (
        "test_dynamic_notebook_takes_a_papermill_list",
        "test_static_notebook_takes_a_papermill_list",
    ),
    "tests/run/test_perfetto_links.py": (
        "test_executed_notebook_links_the_timelines",
    ),
    "tests/run/test_readme.py": (
        "test_the_per_figure_commands_run_as_written",
        "test_what_it_writes_is_ignored_by_git",
    ),
    "tests/run/test_real_gpu_runs.py": (
        "test_a_collection_keeps_the_workloads_folder_not_the_probe_engines",
        "test_block_sched_prints_the_artifacts_own_line_for_the_real_paper_size_trace",
    ),
    "tests/run/test_real_neutrino.py": ALL,
    "tests/run/test_registry_and_runner.py": (
        "test_the_toy_section_is_collected_by_the_dynamic_notebook",
        "test_the_toy_section_is_in_both_notebooks_and_the_sample_bundle",
    ),
    "tests/run/test_static_notebook.py": (
        "test_a_section_with_missing_input_fails_alone",
        "test_paper_bundle_without_network_stops_with_one_clear_message",
        "test_run_all_on_the_sample_bundle",
        "test_single_section_from_a_fresh_trace_root",
    ),
    "tests/run/test_verdict_cli.py": (
        "test_a_claim_that_does_not_hold_fails_the_run",
        "test_a_dynamic_run_that_collected_nothing_exits_0_with_allow_skip",
        "test_a_failed_run_leaves_no_verdict_that_looks_current",
        "test_a_partial_run_merges_into_the_verdict_of_the_same_bundle",
    ),
    "tests/sched/test_sched_kernels.py": (
        "test_compiled_kernels_are_cached_outside_the_source_tree",
        "test_env_var_forces_pure_numpy",
        "test_numba_is_imported_only_for_inputs_worth_it",
    ),
    "tests/sections/block_sched/test_block_sched.py": (
        "test_cli_bad_inputs_one_line_errors",
        "test_wrong_probe_trace_refused",
    ),
    "tests/sections/block_sched/test_line_first.py": (
        "test_a_figure_drawn_in_the_forked_process_that_fails_is_one_error_line",
        "test_json_mode_prints_only_the_document",
        "test_line_is_printed_before_pandas_or_matplotlib_is_imported",
        "test_same_files_with_and_without_the_forked_figure",
        "test_with_a_figure_process_the_command_imports_neither_matplotlib_nor_pandas",
    ),
    "tests/sections/dmat/test_dmat_analysis.py": (
        "test_bad_dmat_one_line_error",
    ),
    "tests/sections/dmat/test_dmat_kernels.py": (
        "test_the_command_writes_the_same_files_with_and_without_numba",
    ),
    "tests/sections/dmat/test_dmat_memory.py": (
        "test_a_dense_timestamped_trace_streams_under_an_address_space_limit",
        "test_the_memory_available_is_read_from_rlimit_as",
    ),
    "tests/sections/exposed_latency/test_exposed_latency_line_first.py": (
        "test_table_is_printed_before_matplotlib_is_imported",
    ),
    "tests/sections/kernel_overhead/test_kernel_overhead_line_first.py": ALL,
    "tests/sections/max_mem/test_max_mem_line_first.py": ALL,
    "tests/sections/warp_sched/test_warp_sched.py": (
        "test_pickle_refused_without_loading",
    ),
    "tests/sections/warp_sched/test_warp_sched_line_first.py": ALL,
    "tests/test_makefile.py": ALL,
    "tests/test_packaging.py": ALL,
    "tests/tools/test_real_gpu_tools.py": (
        "test_sm_90a_only_ptx_keeps_its_target",
        "test_the_gpu_scripts_run_as_modules_and_say_so_when_run_as_files",
        "test_the_wrapper_puts_the_ptx_beside_the_cubin",
    ),
    "tests/tools/test_test_cpu.py": (
        "test_the_recorder_counts_a_tests_own_cpu_and_its_processes",
    ),
    "tests/workloads/test_gpu_preamble.py": (
        "test_cpu_only_torch_exits_3_with_one_line",
    ),
    "tests/workloads/test_prepare_env.py": ALL,
    "tests/workloads/test_ptx_build.py": (
        "test_a_compile_error_is_one_line_naming_the_file",
        "test_compiles_once_then_reuses_the_cache",
        "test_every_workload_kernel_assembles",
        "test_every_workload_kernel_has_its_documented_signature",
    ),
    "tests/workloads/test_ptx_driver.py": (
        "test_a_bad_kernel_name_is_one_line",
        "test_tensor_trace_goes_to_the_hooks_folder_of_this_process",
        "test_the_driver_moves_memory_launches_by_signature_and_counts_the_peak",
    ),
    "tests/workloads/test_ptx_probe_engine.py": (
        "test_the_real_engine_probes_and_assembles",
    ),
    "tests/workloads/test_triton_ptx.py": (
        "test_ptxas_assembles",
        "test_regenerating_gives_the_committed_files",  # triton compiles with ptxas (skipped where it is absent)
    ),
    "tests/workloads/test_workloads.py": (
        "test_help_without_torch",
        "test_no_torch_is_one_line_error",
    ),
}
