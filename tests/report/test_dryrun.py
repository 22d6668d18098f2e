"""``run --dry-run`` and ``compare --dry-run``: the layout, flows, bytes and packet-event estimate,
printed without simulating (report/dryrun.py)."""

from helpers import DATA

from pwormhole.accel.config import AccelConfig
from pwormhole.commands.cli import main
from pwormhole.config import ModelConfig
from pwormhole.partition.plan import traffic_weights
from pwormhole.report.dryrun import packet_events_estimate
from pwormhole.scenario import EMBEDDED, Scenario, topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.topology.builders import star
from pwormhole.topology.routing import adjacency
from pwormhole.workload.flows import Flow
from pwormhole.workload.models import build_model

INCAST = DATA / "incast"
FLOW_RUN = ["--topology", INCAST / "star9_topology.txt", "--flows", INCAST / "incast8_flows.txt", "--config",
            INCAST / "pfc_config.txt"]


def cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_dry_run_of_a_flow_list_by_hand(tmp_path, capsys):
    """8 flows of 1 MB into host 0 of a star: 1000 packets of 1000 bytes each, over 2 hops: 4 x 8 x
    1000 x 2 = 64,000 events; no output folder is made."""
    rc, out, err = cli(capsys, "run", *FLOW_RUN, "--dry-run", "--out", tmp_path / "x")
    assert rc == 0 and err == ""
    assert out.splitlines() == [
        "dry run of incast8_flows: nothing simulated",
        f"topology   {INCAST / 'star9_topology.txt'}: 9 hosts, 1 switch, 9 links",
        "flows      8 flows, 8,000,000 bytes (0.008 GB)",
        "packet-level events ~64 thousand (64,000; estimate: 4 per packet and hop)"]
    assert not (tmp_path / "x").exists()


def test_dry_run_of_a_training_run_names_groups_servers_and_bytes(tmp_path, capsys):
    """gpt-350m on 32 GPUs, TP 16 (two 8-GPU servers per group), PP 2, 2 micro-batches: the TP warning,
    the groups with their servers; bytes: per micro-batch and layer line 2 TP all-reduces (fwd, ig) of
    S_act = 2048 x 1024 x 2 bytes on 16 members, 2 x 15 steps of S_act/16 per member, and 4 pipeline
    sends of S_act per pipeline."""
    rc, out, err = cli(capsys, "run", "--model", "gpt-350m", "--gpus", "32", "--tp", "16", "--pp", "2", "--ga", "2",
                       "--layers", "2", "--dry-run", "--out", tmp_path / "x")
    assert rc == 0
    assert err.splitlines() == ["pwormhole: warning: TP groups of 16 GPUs span servers of 8 GPUs (the first: GPUs "
                                "0-15 in 2 servers): their collectives cross the NIC fabric between servers, not only "
                                "NVLink"]
    lines = out.splitlines()
    assert lines[2:5] == [
        "layout     32 GPUs: TP 16 x DP 1 x PP 2; 4 layer lines per GPU, 2 micro-batches",
        "  TP groups    2 of 16 GPUs; the first: GPUs 0-15 on servers 0, 1; up to 2 servers per group",
        "  pipelines    16 of 2 stages; the first: GPUs 0, 16 on servers 0, 2; up to 2 servers per group"]
    act = 2048 * 1024 * 2
    tp_bytes = 32 * (4 * 2) * 2 * 15 * (act // 16)  # 32 GPUs x 8 all-reduces each
    pp_bytes = 16 * 4 * act
    assert lines[6].startswith(f"flows      7,744 flows, {tp_bytes + pp_bytes:,} bytes")
    assert not (tmp_path / "x").exists()


def test_estimate_is_within_a_percent_of_a_packet_run(tmp_path):
    """The fat-tree mix (ECMP over a k=4 fat tree): estimate against the packet run's events."""
    scn = EMBEDDED["fat-tree-mix"]()
    est = packet_events_estimate(scn)
    s = simulate(scn, str(tmp_path), quiet=True)
    assert abs(est / s["events"] - 1) < 0.01, (est, s["events"])


def test_estimate_counts_each_flows_packets_times_its_hops():
    """4 events per packet and hop: each flow's packets times its host pair's hop count, as walking
    the pair's ECMP shares hop by hop (the partition's ``traffic_weights``: 4 per packet and node
    crossed) counts it, on a k=4 fat tree and on servers with NVSwitches; 100 one-byte flows across
    one switch are 100 packets of 2 hops (the pair's bytes in one packet counted -388 before)."""
    gpt = training_scenario(build_model("gpt-350m", 16, tp=8, layers=1), topology_from_arg("rail-optimized:gpus=16"))
    tiny = Scenario("tiny", star(3), [Flow(i, 0, 1, 3, 100, 1, 0) for i in range(100)], ModelConfig())
    for scn in (EMBEDDED["fat-tree-mix"](), gpt, tiny):
        payload = scn.config.packet_payload_bytes
        ports = sum(map(len, adjacency(scn.topology)))
        hops = {}
        for f in scn.flows:
            if (f.src, f.dst) not in hops:
                node_w, _ = traffic_weights(scn.topology, [f._replace(size_bytes=payload)], payload)
                hops[(f.src, f.dst)] = round((sum(node_w) - ports) / 4) - 1  # one packet: its nodes crossed
        want = 4 * sum(-(-f.size_bytes // payload) * hops[(f.src, f.dst)] for f in scn.flows)
        assert packet_events_estimate(scn) == want > 0
    assert packet_events_estimate(tiny) == 800


def test_compare_dry_run_and_option_mistakes(tmp_path, capsys):
    rc, out, _ = cli(capsys, "compare", *FLOW_RUN, "--dry-run", "--out", tmp_path / "c")
    assert rc == 0 and out.splitlines()[-1].endswith("for each of compare's packet runs")
    assert not (tmp_path / "c").exists()
    rc, out, err = cli(capsys, "run", "--model", "gpt-350m", "--dry-run", "--out", tmp_path / "c")
    assert (rc, out) == (2, "") and err == "pwormhole: error: --model needs --gpus or a --topology\n"


def test_a_wormhole_run_gives_the_packet_runs_events_it_stands_for(tmp_path):
    """A Wormhole run's ``packet_events_est`` is the estimate above (per packet and hop), not its
    own events per simulated packet scaled up: on gpt-350m with NVLink by rates (2 hops against the
    NIC flows' 4) that gave 18% too many."""
    scn = training_scenario(build_model("gpt-350m", 16, tp=8, layers=1), topology_from_arg("rail-optimized:gpus=16"))
    est = packet_events_estimate(scn)
    fast = simulate(scn, str(tmp_path / "w"), accel=AccelConfig(), quiet=True)
    ref = simulate(scn, str(tmp_path / "p"), quiet=True)
    assert fast["packet_events_est"] == est
    assert abs(est / ref["events"] - 1) < 0.02, (est, ref["events"])
