"""Units at the edges: parse strings with units into integers, and back.

Inside pwormhole time is an ``int`` of picoseconds (``*_ps``), rates are ``int``
bits per second (``*_bps``) and sizes ``int`` bytes (``*_bytes``). Strings with
units are parsed only here. Accepted spellings follow ns-3 (``DataRate`` and
``Time`` attribute strings as the HPCC simulator's files use them): ``100Gbps``,
``50Mb/s``, ``25Gbps``, ``1000ns``, ``0.001ms``, ``1us``, ``2s``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000
PS_PER_S = 1_000_000_000_000
MAX_TIME_PS = 2**62  # 53 days: every time of a run, and sums of them, stay int64
MAX_RATE_BPS = 10**15  # 1 Pb/s: rates, and bytes x 8e12 / rate, stay far from overflow

_TIME_UNITS = {
    "ps": 1,
    "ns": PS_PER_NS,
    "us": PS_PER_US,
    "ms": PS_PER_MS,
    "s": PS_PER_S,
    "min": 60 * PS_PER_S,
    "h": 3600 * PS_PER_S,
}

# ns-3 DataRate suffixes: bps, b/s, Kbps, Kb/s, KiBps (bytes), ... Only SI bit
# and byte rates are accepted (k = 1000).
_RATE_UNITS = {
    "": 1,
    "bps": 1, "b/s": 1,
    "kbps": 10**3, "kb/s": 10**3,
    "mbps": 10**6, "mb/s": 10**6,
    "gbps": 10**9, "gb/s": 10**9,
    "tbps": 10**12, "tb/s": 10**12,
}
_BYTE_RATE_UNITS = {"Bps": 8, "KBps": 8 * 10**3, "MBps": 8 * 10**6, "GBps": 8 * 10**9, "TBps": 8 * 10**12,
                    "B/s": 8, "KB/s": 8 * 10**3, "MB/s": 8 * 10**6, "GB/s": 8 * 10**9}

_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}

_NUM = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z/]*)\s*$")


def _split(text: str, what: str) -> tuple[Decimal, str]:
    m = _NUM.match(str(text))
    if not m:
        raise ValueError(f"cannot read {what} {text!r}")
    try:
        return Decimal(m.group(1)), m.group(2)
    except InvalidOperation:  # pragma: no cover - the regex admits only numbers
        raise ValueError(f"cannot read {what} {text!r}") from None


def parse_time_ps(text: str | int | float, default_unit: str = "s", cap: bool = False) -> int:
    """Parse a duration such as ``"1000ns"``, ``"0.001ms"`` or ``"2"`` into int ps.

    A bare number is in ``default_unit``. Raises ValueError for an unknown unit,
    a negative value, a value that is not a whole number of picoseconds, or one past
    :data:`MAX_TIME_PS` (with ``cap``, a stop time, that is :data:`MAX_TIME_PS`: never).
    """
    if isinstance(text, int):
        text = str(text)
    num, unit = _split(str(text), "time")
    unit = unit or default_unit
    if unit not in _TIME_UNITS:
        raise ValueError(f"unknown time unit {unit!r} in {text!r} (use ps, ns, us, ms or s)")
    ps = num * _TIME_UNITS[unit]
    if ps < 0:
        raise ValueError(f"negative time {text!r}")
    if ps != ps.to_integral_value():
        raise ValueError(f"time {text!r} is not a whole number of picoseconds")
    if ps > MAX_TIME_PS and cap:
        return MAX_TIME_PS
    if ps > MAX_TIME_PS:
        raise ValueError(f"time {text!r} is past the limit of {MAX_TIME_PS} ps (53 days)")
    return int(ps)


def parse_rate_bps(text: str | int) -> int:
    """Parse a data rate such as ``"100Gbps"``, ``"50Mb/s"`` or ``"25000000000"`` into int bps.

    A bare number is bits per second (ns-3 DataRate). Byte rates (``"1GBps"``)
    are accepted. Raises ValueError for an unknown unit, zero or negative rates.
    """
    num, unit = _split(str(text), "rate")
    if unit in _BYTE_RATE_UNITS:
        bps = num * _BYTE_RATE_UNITS[unit]
    elif unit.lower() in _RATE_UNITS:
        bps = num * _RATE_UNITS[unit.lower()]
    else:
        raise ValueError(f"unknown rate unit {unit!r} in {text!r} (use bps, Kbps, Mbps, Gbps or b/s forms)")
    if bps <= 0:
        raise ValueError(f"rate must be positive, got {text!r}")
    if bps != bps.to_integral_value():
        raise ValueError(f"rate {text!r} is not a whole number of bits per second")
    if bps > MAX_RATE_BPS:
        raise ValueError(f"rate {text!r} is over the limit of {format_rate(MAX_RATE_BPS)}")
    return int(bps)


def parse_size_bytes(text: str | int) -> int:
    """Parse a size such as ``"1000"``, ``"4KB"``, ``"2MiB"`` into int bytes (k = 1000, Ki = 1024)."""
    num, unit = _split(str(text), "size")
    if unit.lower() not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {text!r}")
    b = num * _SIZE_UNITS[unit.lower()]
    if b < 0:
        raise ValueError(f"negative size {text!r}")
    if b != b.to_integral_value():
        raise ValueError(f"size {text!r} is not a whole number of bytes")
    return int(b)


def serialization_ps(size_bytes: int, rate_bps: int) -> int:
    """Time to put ``size_bytes`` on a link of ``rate_bps``: ``ceil(n * 8 * 10**12 / r)`` ps."""
    return -((-size_bytes * 8 * PS_PER_S) // rate_bps)


def format_time(ps: int) -> str:
    """Human-readable duration for messages and progress (``"35.670 ms"``)."""
    for unit, scale in (("s", PS_PER_S), ("ms", PS_PER_MS), ("us", PS_PER_US), ("ns", PS_PER_NS)):
        if abs(ps) >= scale:
            return f"{ps / scale:.3f} {unit}"
    return f"{ps} ps"


def format_rate(bps: int) -> str:
    """Human-readable rate (``"100Gbps"``) for messages."""
    for unit, scale in (("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps >= scale and bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bps"


def axis_time_unit(span_ns: float) -> tuple[str, int]:
    """The unit of a figure's time axis over ``span_ns``, and its ns: ms from 1 ms on, else us."""
    return ("ms", 10**6) if span_ns >= 10**6 else ("us", 10**3)
