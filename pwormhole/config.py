"""Model configuration: the knobs of the HPCC ns-3 simulator's ``config.txt``.

Field defaults are the values of HPCC's example ``mix/config.txt``
(alibaba-edu/High-Precision-Congestion-Control, ``simulation/mix/config.txt``).
Units are converted at read time: DCQCN timers (microseconds in the file) to
ps, rates (ns-3 strings) to bps, ``BUFFER_SIZE`` (MB, 2**20 bytes as
``third.cc`` multiplies) to bytes, K maps (KB, 1000 bytes as ``third.cc``
multiplies) to bytes, ``SIMULATOR_STOP_TIME`` (seconds) to ps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

CC_DCQCN = 1
CC_HPCC = 3
CC_TIMELY = 7
CC_DCTCP = 8
CC_NAMES = {CC_DCQCN: "dcqcn", CC_HPCC: "hpcc", CC_TIMELY: "timely", CC_DCTCP: "dctcp"}
CC_BY_NAME = {name: mode for mode, name in CC_NAMES.items()}  # --cc choices
NVLINK_CC_NONE = "none"  # NVLink runs no end-to-end CC: line rate, link-level backpressure only
NVLINK_CC_NIC = "nic"  # the NIC's CC also on NVLink queue pairs (SimAI's ns-3)
NVLINK_CC_CHOICES = (NVLINK_CC_NONE, NVLINK_CC_NIC)
# the names some options take (pwormhole.options checks them for the API, argparse for the command line)
INPUT_FORMATS = ("hpcc", "simai", "htsim", "chakra")  # --format
RUN_MODES = ("wormhole", "packet")  # --mode
EMBEDDED_SCENARIOS = ("gpt-7b-64gpu", "gpt-350m-16gpu", "fat-tree-mix")  # --scenario (the first: the default)
MAX_PAYLOAD_BYTES = 1_000_000  # PACKET_PAYLOAD_SIZE: wire bytes x 8e12 (ps x bits) stay below 2^63


class LinkDown(NamedTuple):
    """A link failure: every link joining ``node_a`` and ``node_b`` goes down ``after_ps`` after the
    traffic starts (the first flow's start in a flow list, 0 in a workload; HPCC's ``LINK_DOWN a b c``
    is ``after_ps`` = a us: its files start their flows at 2 s, where ``third.cc`` fails the link at
    2 s + a us). ``given``: how the input gave it, ``path``: its file (for messages)."""
    after_ps: int
    node_a: int
    node_b: int
    given: str
    path: str | None = None


@dataclass
class ModelConfig:
    """All model parameters of one run (see module docstring for units)."""

    cc_mode: int = CC_HPCC
    packet_payload_bytes: int = 1000
    enable_qcn: bool = True  # ECN marking at switches (and CNP reaction)
    enable_pfc: bool = True  # pwormhole extension: 0 = lossy switches (drops counted)
    use_dynamic_pfc_threshold: bool = True

    # DCQCN (CC_MODE 1), ns-3 Mellanox flavour
    alpha_resume_interval_ps: int = 1_000_000  # ALPHA_RESUME_INTERVAL 1 us
    rate_decrease_interval_ps: int = 4_000_000  # RATE_DECREASE_INTERVAL 4 us
    rp_timer_ps: int = 900_000_000  # RP_TIMER 900 us
    clamp_target_rate: bool = False
    ewma_gain: float = 0.00390625
    fast_recovery_times: int = 1
    rate_ai_bps: int = 50_000_000
    rate_hai_bps: int = 100_000_000
    min_rate_bps: int = 100_000_000
    dctcp_rate_ai_bps: int = 1_000_000_000
    rate_on_first_cnp: float = 1.0  # ns-3 RdmaHw RateOnFirstCnp default
    # DCTCP (CC_MODE 8) also uses ewma_gain (its g) and min_rate_bps; DCTCP_RATE_AI above

    # TIMELY (CC_MODE 7): RdmaHw attribute defaults (third.cc sets none of them); also
    # rate_ai_bps, rate_hai_bps, min_rate_bps
    timely_alpha: float = 0.875  # TimelyAlpha: EWMA weight of the new RTT difference
    timely_beta: float = 0.8  # TimelyBeta: multiplicative decrease factor
    timely_t_low_ps: int = 50_000_000  # TimelyTLow 50000 ns: below it the rate always increases
    timely_t_high_ps: int = 500_000_000  # TimelyTHigh 500000 ns: above it the rate always decreases
    timely_min_rtt_ps: int = 20_000_000  # TimelyMinRtt 20000 ns: normalizes the RTT gradient
    timely_hai_rounds: int = 5  # increases by RATE_AI before RATE_HAI (a constant in UpdateRateTimely)

    # transport
    error_rate_per_link: float = 0.0
    l2_chunk_size: int = 4000
    l2_ack_interval: int = 1  # bytes between ACKs, as HPCC's RdmaHw counts them
    l2_back_to_zero: bool = False
    nack_interval_ps: int = 500_000_000  # RdmaHw NACK generation interval (500 us)

    # window / HPCC (CC_MODE 3)
    has_win: bool = True
    global_t: bool = True
    var_win: bool = True
    fast_react: bool = True
    u_target: float = 0.95
    mi_thresh: int = 0
    int_multi: int = 1
    multi_rate: bool = False
    sample_feedback: bool = False
    rate_bound: bool = True
    ack_high_prio: bool = False

    # switches
    kmax_map_bytes: dict[int, int] = field(
        default_factory=lambda: {25 * 10**9: 400_000, 50 * 10**9: 800_000, 100 * 10**9: 1_600_000})
    kmin_map_bytes: dict[int, int] = field(
        default_factory=lambda: {25 * 10**9: 100_000, 50 * 10**9: 200_000, 100 * 10**9: 400_000})
    pmax_map: dict[int, float] = field(default_factory=lambda: {25 * 10**9: 0.2, 50 * 10**9: 0.2, 100 * 10**9: 0.2})
    buffer_size_bytes: int = 32 * 2**20

    # NVLink (links to NVSwitches; pwormhole extension, not in ns-3's config.txt)
    nvlink_cc: str = NVLINK_CC_NONE

    # serialize and pace in whole ns, rounded down, as HPCC's ns-3 does (net.device.ns3_tx_ps: a
    # 1048-byte packet at 100 Gb/s 1% fast, at 400 Gb/s 4.8%); pwormhole's own: ps, rounded up (--ns3-time)
    ns3_time: bool = False

    # run
    simulator_stop_ps: int = 4 * 10**12
    link_down: tuple[LinkDown, ...] = ()  # LINK_DOWN and --link-down, in the order given

    # files named by a config (resolved paths; None when not given)
    topology_file: str | None = None
    flow_file: str | None = None
    trace_file: str | None = None
    fct_output_name: str = "fct.txt"
    pfc_output_name: str = "pfc.txt"

    # queue-length and link monitors (pwormhole.report.monitor): on when ``qlen_mon_file`` is set
    qlen_mon_file: str | None = None  # QLEN_MON_FILE's base name (written under --out)
    qlen_mon_start_ps: int = 2 * 10**12  # QLEN_MON_START (ns in the file; third.cc's default 2 s)
    qlen_mon_end_ps: int | None = 2_100_000_000_000  # QLEN_MON_END (2.1 s); None: to the run's end
    monitor_interval_ps: int = 100_000  # third.cc's qlen_mon_interval, 100 ns (not a config key)
    link_interval_ps: int = 10_000_000  # link_util.csv's interval, 10 us (a multiple of the above; pwormhole's)
    monitor_limit_bytes: int = 10**9  # link_util.csv may be expected to grow to this at most (--monitor-limit)

    source: str | None = None  # the config file this came from

    @property
    def cc_name(self) -> str:
        return CC_NAMES.get(self.cc_mode, f"cc{self.cc_mode}")

    def fill_k_maps(self, rates_bps) -> None:
        """Add RED/ECN map entries for link rates the maps lack, scaled linearly
        from HPCC's ``mix/config.txt`` (KMIN 4,000 B, KMAX 16,000 B per Gbps,
        PMAX 0.2), for configurations not read from a file (built-in
        topologies, SimAI fabrics at 200/400 Gbps and NVLink rates).
        """
        for r in rates_bps:
            gbps = r / 1e9
            self.kmin_map_bytes.setdefault(r, max(1, int(4_000 * gbps)))
            self.kmax_map_bytes.setdefault(r, max(2, int(16_000 * gbps)))
            self.pmax_map.setdefault(r, 0.2)
