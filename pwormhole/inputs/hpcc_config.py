"""Reader for the HPCC ns-3 run configuration (``mix/config.txt``).

Source of the format and of the units: HPCC's ns-3 simulator,
``simulation/scratch/third.cc`` (alibaba-edu/High-Precision-Congestion-Control),
and its annotated example ``simulation/mix/config_doc.txt``.
"""

from __future__ import annotations

import difflib
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path, PurePosixPath

from pwormhole.config import CC_DCQCN, CC_DCTCP, CC_HPCC, CC_TIMELY, MAX_PAYLOAD_BYTES, LinkDown, ModelConfig
from pwormhole.errors import InputError
from pwormhole.inputs.tokens import open_text, to_float, to_int
from pwormhole.outfiles import check_output_name
from pwormhole.topology.model import Topology
from pwormhole.units import MAX_TIME_PS, PS_PER_NS, PS_PER_S, PS_PER_US, format_rate, parse_rate_bps, parse_time_ps

IMPLEMENTED_CC = {CC_DCQCN: "DCQCN", CC_HPCC: "HPCC", CC_TIMELY: "TIMELY", CC_DCTCP: "DCTCP"}
# CC modes of third.cc refused, and why (shown with the error)
REFUSED_CC = {10: " (HPCC-PINT: its switches keep a per-port utilization EWMA updated by every packet "
                  "and encode it probabilistically; not modelled)"}

# third.cc schedules LINK_DOWN at Seconds(2) + MicroSeconds(a), where HPCC's flow files start
LINK_DOWN_BASE_PS = 2 * PS_PER_S
MAX_LINK_DOWN_US = 10**12  # 11.6 days: a LINK_DOWN past it is a mistake, not a failure

_BOOL = {
    "ENABLE_QCN": "enable_qcn",
    "ENABLE_PFC": "enable_pfc",
    "USE_DYNAMIC_PFC_THRESHOLD": "use_dynamic_pfc_threshold",
    "CLAMP_TARGET_RATE": "clamp_target_rate",
    "L2_BACK_TO_ZERO": "l2_back_to_zero",
    "HAS_WIN": "has_win",
    "GLOBAL_T": "global_t",
    "VAR_WIN": "var_win",
    "FAST_REACT": "fast_react",
    "MULTI_RATE": "multi_rate",
    "SAMPLE_FEEDBACK": "sample_feedback",
    "RATE_BOUND": "rate_bound",
    "ACK_HIGH_PRIO": "ack_high_prio",
}
# key -> (field, smallest allowed value, largest allowed value)
_INT = {
    "PACKET_PAYLOAD_SIZE": ("packet_payload_bytes", 1, MAX_PAYLOAD_BYTES),
    "L2_CHUNK_SIZE": ("l2_chunk_size", 0, 2**40),
    "L2_ACK_INTERVAL": ("l2_ack_interval", 1, 2**31 - 1),
    "FAST_RECOVERY_TIMES": ("fast_recovery_times", 0, 2**31 - 1),
    "MI_THRESH": ("mi_thresh", 0, 2**31 - 1),
    "INT_MULTI": ("int_multi", 1, 2**31 - 1),
}
# microseconds in the file (may be fractional), > 0
_MICROS = {
    "ALPHA_RESUME_INTERVAL": "alpha_resume_interval_ps",
    "RATE_DECREASE_INTERVAL": "rate_decrease_interval_ps",
    "RP_TIMER": "rp_timer_ps",
}
_RATES = {
    "RATE_AI": "rate_ai_bps",
    "RATE_HAI": "rate_hai_bps",
    "MIN_RATE": "min_rate_bps",
    "DCTCP_RATE_AI": "dctcp_rate_ai_bps",
}
# key -> (field, low, high, low inclusive, high inclusive)
_FLOATS: dict[str, tuple[str, float, float, bool, bool]] = {
    "EWMA_GAIN": ("ewma_gain", 0.0, 1.0, False, True),
    "U_TARGET": ("u_target", 0.0, 1.0, False, True),
    "ERROR_RATE_PER_LINK": ("error_rate_per_link", 0.0, 1.0, True, False),
}
_INPUT_FILES = {"TOPOLOGY_FILE": "topology_file", "FLOW_FILE": "flow_file", "TRACE_FILE": "trace_file"}
_OUTPUT_NAMES = {"FCT_OUTPUT_FILE": "fct_output_name", "PFC_OUTPUT_FILE": "pfc_output_name",
                 "QLEN_MON_FILE": "qlen_mon_file"}
# the queue monitor's window: ns in the file (third.cc schedules NanoSeconds(QLEN_MON_START))
_MON_TIMES = {"QLEN_MON_START": "qlen_mon_start_ps", "QLEN_MON_END": "qlen_mon_end_ps"}
# read by third.cc, with no effect on a run here: TRACE_OUTPUT_FILE is written only under
# ENABLE_TRACE 1 (a warning), PINT_* only drive CC_MODE 10 (refused)
_ACCEPTED = {"TRACE_OUTPUT_FILE", "PINT_LOG_BASE", "PINT_PROB"}
# read by third.cc but not modelled by pwormhole: accepted with a warning naming the key (and what is missing)
_NOT_MODELLED = {"PAUSE_TIME": "", "DATA_RATE": "", "LINK_DELAY": ""}
# 0/1 switches of which pwormhole models one value only: key -> (the value not modelled, what runs instead)
_ONE_VALUE = {"USE_DYNAMIC_PFC_THRESHOLD": ("0", "switches always use the dynamic PFC threshold"),
              "MULTI_RATE": ("1", "HPCC runs MULTI_RATE 0"),
              "SAMPLE_FEEDBACK": ("1", "HPCC runs SAMPLE_FEEDBACK 0"),
              "ENABLE_TRACE": ("1", "no packet trace (TRACE_OUTPUT_FILE) is written")}
_MAPS = {"KMAX_MAP": "kmax_map_bytes", "KMIN_MAP": "kmin_map_bytes", "PMAX_MAP": "pmax_map"}

_COMMENT = re.compile(r"\{[^}]*\}?")

# every key read_hpcc_config knows (those of third.cc), for "did you mean" on an unknown one
_KEYS = frozenset({*_BOOL, *_INT, *_MICROS, *_RATES, *_FLOATS, *_INPUT_FILES, *_OUTPUT_NAMES, *_MON_TIMES,
                   *_ACCEPTED, *_NOT_MODELLED, *_ONE_VALUE, *_MAPS, "CC_MODE", "SIMULATOR_STOP_TIME",
                   "LINK_DOWN", "BUFFER_SIZE"})

# config key -> line it was read from, per ModelConfig produced here (for later messages)
_KEY_LINES_ATTR = "_hpcc_key_lines"


def read_hpcc_config(path: str | os.PathLike, input_files: bool = True,
                     strict: bool = False) -> tuple[ModelConfig, list[str]]:
    """Read an HPCC ns-3 ``config.txt`` into a :class:`ModelConfig`.

    Format: one ``KEY value...`` per line. Blank lines, CRLF and tabs are fine; a
    ``{...}`` annotation (as in HPCC's ``mix/config_doc.txt``) is stripped, and so
    is a line starting with ``#`` (ns-3-alibabacloud's configs). Keys are
    case-sensitive, as in ``third.cc``; a key given twice keeps the last value
    (with a warning).

    Keys and units (``ModelConfig`` field in brackets):

    * 0/1 switches: ENABLE_QCN, ENABLE_PFC (pwormhole extension; 0 = lossy
      switches), USE_DYNAMIC_PFC_THRESHOLD, CLAMP_TARGET_RATE, L2_BACK_TO_ZERO,
      HAS_WIN, GLOBAL_T, VAR_WIN, FAST_REACT, MULTI_RATE, SAMPLE_FEEDBACK,
      RATE_BOUND, ACK_HIGH_PRIO;
    * integers: PACKET_PAYLOAD_SIZE (bytes, >= 1), L2_CHUNK_SIZE (>= 0),
      L2_ACK_INTERVAL (>= 1), FAST_RECOVERY_TIMES, MI_THRESH (>= 0), INT_MULTI (>= 1);
    * CC_MODE: 1 (DCQCN), 3 (HPCC), 7 (TIMELY) or 8 (DCTCP); other HPCC modes
      (10, HPCC-PINT) are not implemented;
    * ALPHA_RESUME_INTERVAL, RATE_DECREASE_INTERVAL, RP_TIMER: microseconds,
      possibly fractional, > 0 [``*_ps``, int ps];
    * RATE_AI, RATE_HAI, MIN_RATE, DCTCP_RATE_AI: ns-3 rate strings (``50Mb/s``)
      [``*_bps``];
    * EWMA_GAIN, U_TARGET in (0, 1]; ERROR_RATE_PER_LINK in [0, 1);
    * SIMULATOR_STOP_TIME: seconds, > 0 [``simulator_stop_ps``];
    * LINK_DOWN ``a b c``: take down link b-c a microseconds after the traffic starts
      (``third.cc`` schedules it at 2 s + a us, where HPCC's flows start); ``a = 0`` means no
      link down [``link_down = (LinkDown(a us in ps, b, c),)``, ``()`` when none];
    * KMAX_MAP / KMIN_MAP ``n rate1 k1 ... rate_n k_n``: rate in bits/s (a plain
      integer, or an ns-3 rate string), K in KB of 1000 bytes
      [``kmax_map_bytes``/``kmin_map_bytes``, bytes]; PMAX_MAP ``n rate1 p1 ...``
      with ``0 <= p <= 1`` [``pmax_map``];
    * BUFFER_SIZE: MB of 2**20 bytes per switch, > 0 [``buffer_size_bytes``];
    * TOPOLOGY_FILE, FLOW_FILE, TRACE_FILE: input paths, resolved (see below) to
      absolute paths [``topology_file``, ``flow_file``, ``trace_file``]; not read, nor
      looked for, with ``input_files=False`` (the command line names the inputs);
    * FCT_OUTPUT_FILE, PFC_OUTPUT_FILE, QLEN_MON_FILE: only the base name is kept
      [``fct_output_name``, ``pfc_output_name``, ``qlen_mon_file``]; outputs go
      under ``--out``; a name of pwormhole's own outputs (``summary.json``...),
      ``..``, a ``.part`` name, or the same name for two of them is an error;
      QLEN_MON_FILE turns on the queue-length and link monitors (:mod:`pwormhole.report.monitor`);
    * QLEN_MON_START, QLEN_MON_END: integer ns >= 0, absolute simulated time
      [``qlen_mon_start_ps``, ``qlen_mon_end_ps``]; without QLEN_MON_FILE a warning;
    * accepted, no effect here: TRACE_OUTPUT_FILE, PINT_LOG_BASE, PINT_PROB
      (HPCC-PINT, CC_MODE 10, is refused);
    * not modelled, ignored with a warning naming the key: PAUSE_TIME,
      DATA_RATE, LINK_DELAY, and the values ENABLE_TRACE 1, USE_DYNAMIC_PFC_THRESHOLD 0, MULTI_RATE 1,
      SAMPLE_FEEDBACK 1.

    Input paths: HPCC is run as ``./waf --run 'scratch/third mix/config.txt'`` from
    the folder holding ``mix/``, so relative paths are relative to that folder.
    A relative path is tried, in order, against the config file's folder, each
    ancestor of that folder, and the current directory; the first that exists
    wins. An absolute path is used as is.

    Returns:
        ``(config, warnings)``: ``config.source = str(path)``; ``warnings`` holds
        one line per unknown key (``"<path>:<line>: unknown key CC_MODEE ignored (did you mean
        CC_MODE?)"``; ``strict``: an unknown key is an error instead), repeated key,
        ignored-but-meaningful key or missing TRACE_FILE.

    Raises:
        InputError naming the file, the line, the key and the value for: a file
        that cannot be opened; a key without a value or with too many values; a
        malformed or out-of-range value (``RATE_AI fast``, a negative
        BUFFER_SIZE, a map whose declared count disagrees with its pairs); a
        CC_MODE other than 1, 3, 7 or 8; a TOPOLOGY_FILE or FLOW_FILE that exists at
        none of the candidate places.
    """
    spath = str(path)
    cfg = ModelConfig()
    cfg.source = spath
    warnings: list[str] = []
    seen: dict[str, int] = {}
    conf_dir = Path(os.path.abspath(spath)).parent

    with open_text(path, "config file") as f:
        for lineno, raw in enumerate(f, start=1):
            text = _COMMENT.sub(" ", raw).strip()
            if not text or text.startswith("#"):
                continue
            key, *vals = text.split()

            def err(msg: str) -> InputError:
                return InputError(msg, spath, lineno)

            def positive_time(key: str, v: str, unit: str, unit_name: str, cap: bool = False) -> int:
                try:
                    ps = parse_time_ps(v, default_unit=unit, cap=cap)
                except ValueError as e:
                    raise err(f"{key} value {v!r} is not a time in {unit_name}: {e}") from None
                if ps <= 0:
                    raise err(f"{key} value {v!r} must be > 0 {unit_name}")
                return ps

            def one() -> str:
                if len(vals) != 1:
                    got = "no value" if not vals else f"{len(vals)} values {' '.join(vals)!r}"
                    raise err(f"{key} takes one value, got {got}")
                return vals[0]

            known = True
            if key in _BOOL or key == "ENABLE_TRACE":
                v = one()
                if v not in ("0", "1"):
                    raise err(f"{key} value {v!r} must be 0 or 1")
                if key in _BOOL:
                    setattr(cfg, _BOOL[key], v == "1")
                if key in _ONE_VALUE and v == _ONE_VALUE[key][0]:
                    warnings.append(f"{spath}:{lineno}: {key} {v} is not modelled by pwormhole "
                                    f"({_ONE_VALUE[key][1]}); ignored")
            elif key in _INT:
                fld, lo, hi = _INT[key]
                setattr(cfg, fld, to_int(one(), f"{key} value", spath, lineno, lo=lo, hi=hi))
            elif key == "CC_MODE":
                v = one()
                mode = to_int(v, "CC_MODE value", spath, lineno)
                if mode not in IMPLEMENTED_CC:
                    impl = " and ".join(f"{k}={n}" for k, n in IMPLEMENTED_CC.items())
                    raise err(f"CC_MODE {v} is not implemented{REFUSED_CC.get(mode, '')} "
                              f"(only {impl} are implemented)")
                cfg.cc_mode = mode
            elif key in _MICROS:
                setattr(cfg, _MICROS[key], positive_time(key, one(), "us", "microseconds"))
            elif key in _RATES:
                v = one()
                try:
                    setattr(cfg, _RATES[key], parse_rate_bps(v))
                except ValueError as e:
                    raise err(f"{key} value {v!r} is not a rate: {e}") from None
            elif key in _FLOATS:
                fld, low, high, lo_in, hi_in = _FLOATS[key]
                v = one()
                x = to_float(v, f"{key} value", spath, lineno)
                ok_lo = x >= low if lo_in else x > low
                ok_hi = x <= high if hi_in else x < high
                if not (ok_lo and ok_hi):
                    rng = f"{'[' if lo_in else '('}{low:g}, {high:g}{']' if hi_in else ')'}"
                    raise err(f"{key} value {v!r} is outside {rng}")
                setattr(cfg, fld, x)
            elif key == "SIMULATOR_STOP_TIME":
                cfg.simulator_stop_ps = positive_time(key, one(), "s", "seconds", cap=True)  # (past it: never)
            elif key == "LINK_DOWN":
                if len(vals) != 3:
                    raise err(f"LINK_DOWN takes 3 values (time_us node_a node_b), got {' '.join(vals)!r}")
                t_us, a, b = (to_int(v, "LINK_DOWN value", spath, lineno, lo=0) for v in vals)
                if t_us == 0:
                    cfg.link_down = ()
                else:
                    if a == b:
                        raise err(f"LINK_DOWN link {a}-{b} connects a node to itself")
                    if t_us > MAX_LINK_DOWN_US:
                        raise err(f"LINK_DOWN time {t_us} us is past any run (at most {MAX_LINK_DOWN_US})")
                    cfg.link_down = (LinkDown(t_us * PS_PER_US, a, b, f"LINK_DOWN {a} {b}", f"{spath}:{lineno}"),)
            elif key in _MAPS:
                setattr(cfg, _MAPS[key], _read_map(key, vals, spath, lineno, warnings))
            elif key == "BUFFER_SIZE":
                v = one()
                mb = to_int(v, "BUFFER_SIZE value (MB)", spath, lineno, hi=2**20)  # up to 1 TB
                if mb <= 0:
                    raise err(f"BUFFER_SIZE value {v!r} must be a positive number of MB")
                cfg.buffer_size_bytes = mb * 2**20
            elif key in _INPUT_FILES:
                v = one()
                found = _resolve_input(v, conf_dir) if input_files else None
                if not input_files:  # the command line names the inputs: the config's are not read
                    pass
                elif found is None:
                    tried = conf_dir / v
                    msg = (f"{key} {v!r} not found (looked relative to {conf_dir}, its parent "
                           f"folders and the current directory; first candidate {tried})")
                    if key == "TRACE_FILE":
                        warnings.append(f"{spath}:{lineno}: {msg}; trace file ignored")
                        cfg.trace_file = None
                    else:
                        raise err(msg)
                else:
                    setattr(cfg, _INPUT_FILES[key], str(found))
            elif key in _OUTPUT_NAMES:
                v = one()
                name = PurePosixPath(v.replace("\\", "/")).name
                if not name:
                    raise err(f"{key} value {v!r} has no file name")
                why = check_output_name(name)
                if why:
                    raise err(f"{key} value {v!r}: {name!r} {why}; choose another name")
                setattr(cfg, _OUTPUT_NAMES[key], name)
            elif key in _MON_TIMES:
                ns = to_int(one(), f"{key} value (ns)", spath, lineno, lo=0, hi=MAX_TIME_PS // PS_PER_NS)
                setattr(cfg, _MON_TIMES[key], ns * PS_PER_NS)
            elif key in _ACCEPTED:
                if not vals:
                    raise err(f"{key} has no value")
            elif key in _NOT_MODELLED:
                warnings.append(f"{spath}:{lineno}: {key} is not modelled by pwormhole{_NOT_MODELLED[key]}; ignored")
            else:
                known = False
                close = difflib.get_close_matches(key, _KEYS, n=1, cutoff=0.8)
                hint = f" (did you mean {close[0]}?)" if close else ""
                if strict:
                    raise err(f"unknown key {key}{hint}; --strict refuses unknown keys")
                warnings.append(f"{spath}:{lineno}: unknown key {key} ignored{hint}")

            if known:
                if key in seen:
                    warnings.append(f"{spath}:{lineno}: {key} given again (first on line {seen[key]}); "
                                    f"the last value is used")
                seen[key] = lineno

    named = [(k, getattr(cfg, f)) for k, f in _OUTPUT_NAMES.items() if getattr(cfg, f) is not None]
    for i, (k1, n1) in enumerate(named):  # only set names can clash: the defaults differ
        for k2, n2 in named[i + 1:]:
            if n1 == n2:
                key, line = max(((k, seen[k]) for k in (k1, k2) if k in seen), key=lambda kl: kl[1])
                raise InputError(f"{key} names the file {n1!r} of both {k1} and {k2} (only its base name is "
                                 f"used, under --out); give them different names", spath, line)
    if cfg.qlen_mon_file is None and any(k in seen for k in _MON_TIMES):
        k = min((k for k in _MON_TIMES if k in seen), key=lambda k: seen[k])
        warnings.append(f"{spath}:{seen[k]}: {k} without QLEN_MON_FILE: no queue-length monitor runs; ignored")
    setattr(cfg, _KEY_LINES_ATTR, dict(seen))
    return cfg, warnings


def _read_map(key: str, vals: list[str], path: str, line: int, warnings: list[str]) -> dict:
    """``n rate1 v1 ... rate_n v_n`` -> {rate_bps: value} (K in bytes, or pmax)."""
    if not vals:
        raise InputError(f"{key} has no value (expected: count, then rate value pairs)", path, line)
    n = to_int(vals[0], f"{key} count", path, line, lo=0)
    rest = vals[1:]
    if len(rest) != 2 * n:
        raise InputError(f"{key} declares {n} pairs but has {len(rest)} values after the count "
                         f"({' '.join(rest)!r}); expected {2 * n}", path, line)
    out: dict = {}
    for rate_tok, v in zip(rest[0::2], rest[1::2]):
        try:
            rate = parse_rate_bps(rate_tok)
        except ValueError as e:
            raise InputError(f"{key} rate {rate_tok!r} is not a rate in bits/s: {e}", path, line) from None
        if rate in out:
            warnings.append(f"{path}:{line}: {key} lists rate {rate_tok} twice; the last value is used")
        if key == "PMAX_MAP":
            p = to_float(v, f"{key} value for {rate_tok}", path, line)
            if not 0.0 <= p <= 1.0:
                raise InputError(f"{key} value {v!r} for {rate_tok} is outside [0, 1]", path, line)
            out[rate] = p
        else:
            out[rate] = _kb_to_bytes(key, rate_tok, v, path, line)
    return out


def _kb_to_bytes(key: str, rate_tok: str, v: str, path: str, line: int) -> int:
    try:
        kb = Decimal(v)
    except InvalidOperation:
        kb = None
    if kb is None or not kb.is_finite():
        raise InputError(f"{key} value {v!r} for {rate_tok} is not a number of KB", path, line)
    b = kb * 1000
    if b < 0 or b != b.to_integral_value() or b > 2**50:
        raise InputError(f"{key} value {v!r} for {rate_tok} must be a non-negative whole number of bytes "
                         f"(KB of 1000 bytes), at most 2**50", path, line)
    return int(b)


def _resolve_input(value: str, conf_dir: Path) -> Path | None:
    p = Path(value)
    if p.is_absolute():
        return p if p.is_file() else None
    for base in (conf_dir, *conf_dir.parents, Path.cwd()):
        cand = base / p
        if cand.is_file():
            return Path(os.path.abspath(cand))
    return None


def check_k_maps(cfg: ModelConfig, topology: Topology) -> None:
    """Check that every switch port rate has KMIN/KMAX/PMAX map entries.

    ``third.cc`` asserts, for every switch port, that its link rate is a key of
    ``KMIN_MAP``, ``KMAX_MAP`` and ``PMAX_MAP`` (``"must set kmin for each link
    speed"``). pwormhole checks this only when ECN marking is on
    (``cfg.enable_qcn``), since the maps are unused otherwise.

    Raises:
        InputError naming the config file (``cfg.source``) and the line of the
        map key when it came from the file, the missing rate and the first link
        with that rate, e.g. ``no KMIN_MAP entry for 40Gbps = 40000000000 bps
        (link 3-7 in fat.txt)``.
    """
    if not cfg.enable_qcn:
        return
    lines = getattr(cfg, _KEY_LINES_ATTR, {})
    topo_name = Path(topology.source).name if topology.source else topology.name
    maps = (("KMIN_MAP", cfg.kmin_map_bytes), ("KMAX_MAP", cfg.kmax_map_bytes), ("PMAX_MAP", cfg.pmax_map))
    checked: set[int] = set()
    for link in topology.links:
        if link.rate_bps in checked or not (topology.is_switch(link.a) or topology.is_switch(link.b)):
            continue
        checked.add(link.rate_bps)
        for key, m in maps:
            if link.rate_bps not in m:
                where = "" if key in lines else " (the map is not in the config; pwormhole's default is used)"
                raise InputError(
                    f"no {key} entry for {format_rate(link.rate_bps)} = {link.rate_bps} bps "
                    f"(link {link.a}-{link.b} in {topo_name}){where}",
                    cfg.source, lines.get(key))


def check_min_rate(cfg: ModelConfig, topology: Topology) -> None:
    """InputError (naming the config's line) when ``MIN_RATE`` is above a NIC's line rate: no QP of
    that NIC could ever be paced that slowly, and DCQCN's and HPCC's floors would exceed the line."""
    nics = [ln for ln in topology.links if not (topology.is_switch(ln.a) and topology.is_switch(ln.b))
            and not (ln.a in topology.nvswitches or ln.b in topology.nvswitches)]
    slowest = min(nics, key=lambda ln: ln.rate_bps, default=None)
    if slowest is not None and cfg.min_rate_bps > slowest.rate_bps:
        where = f" of {topology.source}" if topology.source else ""
        raise InputError(f"MIN_RATE {format_rate(cfg.min_rate_bps)} is above the line rate of the slowest NIC "
                         f"({format_rate(slowest.rate_bps)}: link {slowest.a}-{slowest.b}{where}; a rate without a "
                         "unit is in bits per second, as ns-3 reads it)", cfg.source,
                         getattr(cfg, _KEY_LINES_ATTR, {}).get("MIN_RATE"))


__all__ = ["read_hpcc_config", "check_k_maps", "check_min_rate", "IMPLEMENTED_CC", "LINK_DOWN_BASE_PS",
           "MAX_LINK_DOWN_US"]
