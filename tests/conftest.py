import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# the package from this checkout, and `from helpers import ...` from tests in any subfolder
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TESTS))


@pytest.fixture
def data_dir() -> Path:
    return TESTS / "data"


# tests that take more than ~2.5 s on 2 cores (pytest --durations): marked slow, so that
# `pytest -m "not slow"` is a quick development loop (the default run keeps them)
SLOW = {
    "tests/commands/test_cli.py::test_flow_mix_run_writes_outputs",
    "tests/workload/test_collectives.py::test_tp_group_of_24_gpus_over_three_servers",
    "tests/net/test_packet_engine.py::test_same_answer_on_any_number_of_lps",
    "tests/e2e/test_faults.py::test_route_tables_do_not_grow_as_hosts_times_destinations",
    "tests/e2e/test_faults.py::test_thousand_small_flows_incast_across_nine_tors",
    "tests/accel/test_fluid.py::test_fluid_nvlink_gpt_iteration_and_lp_counts",
    "tests/e2e/test_jobs.py::test_mpirun_sh_two_ranks_identical_to_one",
    "tests/e2e/test_jobs.py::test_run_sbatch_outside_slurm_with_mpiexec",
    "tests/e2e/test_jobs.py::test_scale_packet_1_2_ranks",
    "tests/net/test_link_down.py::test_fat_tree_failure_identical_on_1_and_2_ranks",
    "tests/net/test_link_down.py::test_fat_tree_permutation_with_a_failed_link",
    "tests/accel/test_memo_hpcc.py::test_cut_short_hpcc_replay_leaves_the_flows_where_the_packet_run_has_them",
    "tests/e2e/test_mpi_signals.py::test_stuck_rank_does_not_hang_the_job",
    "tests/e2e/test_parallel.py::test_fct_identical_for_1_2_3_lps",
    "tests/e2e/test_parallel.py::test_mpiexec_2_ranks_byte_identical",
    "tests/e2e/test_parallel.py::test_mpiexec_identical_in_both_modes",
    "tests/e2e/test_parallel.py::test_rank_that_owns_nothing_works",
    "tests/e2e/test_real_inputs.py::test_fidelity_against_hpcc_ns3",
    "tests/e2e/test_real_inputs.py::test_hpcc_example_config_runs",
    "tests/report/test_report.py::test_report_of_a_flow_run_has_every_section_and_fetches_nothing",
    "tests/e2e/test_slurm.py::test_run_sbatch_two_tasks_matches_one_rank",
    "tests/e2e/test_slurm.py::test_scale_slurm_submits_and_collects",
    "tests/accel/test_successors.py::test_an_all_to_all_started_with_a_ring_step_takes_no_hand_over",
    "tests/accel/test_successors.py::test_ring_steps_take_their_predecessors_steady_state",
    "tests/workload/test_training.py::test_cli_default_is_one_gpt_iteration",
    "tests/workload/test_training.py::test_cli_training_errors",
    "tests/workload/test_training.py::test_distributed_optimizer_runs",
    "tests/workload/test_training.py::test_micro_allreduce_on_simai_rail_topology",
    "tests/workload/test_training.py::test_second_iteration_starts_after_the_first",
    "tests/workload/test_training.py::test_training_iterations_identical_on_any_lp_count",
    "tests/e2e/test_vs_peers.py::test_perm16_beside_a_stand_in_htsim",
    "tests/commands/test_compare.py::test_compare_writes_errors_and_speedups",
    "tests/e2e/test_wormhole_skips.py::test_high_priority_acks_do_not_wait_in_the_data_queue",
    "tests/e2e/test_wormhole_skips.py::test_hpcc_flows_far_from_their_fair_shares_are_not_steady",
    "tests/e2e/test_wormhole_memo.py::test_hpcc_memo_replay_refills_the_pipeline",
    "tests/accel/test_memo.py::test_memo_cache_file_round_trip_and_corrupt_file",
    "tests/accel/test_memo.py::test_memo_decisions_do_not_depend_on_the_process",
    "tests/e2e/test_wormhole_memo.py::test_memo_jump_is_not_taken_across_a_known_start",
    "tests/e2e/test_wormhole_skips.py::test_wormhole_identical_on_any_lp_count",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
