"""One way to print numbers with units on the command line: SI prefixes
chosen so that one to three digits stand before the point, a space before
the unit, a true minus sign, and the same number of significant digits
everywhere (docs/cli-conventions.md).

    >>> fmt_time(0.000845)
    '845 µs'
    >>> fmt_bytes(3_500_000)
    '3.5 MB'
    >>> fmt_bytes(3 * 2**20, binary=True)
    '3 MiB'
    >>> fmt_rate(2.5e7, "events/s")
    '25 M events/s'

JSON output never goes through here: it keeps plain numbers in SI base
units (seconds, bytes), with the unit in the key's name."""

from __future__ import annotations

import math

#: SI prefixes from 10^-15 to 10^18, by power of 1000.
_PREFIXES = {-5: "f", -4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

DIGITS = 3


def _minus(text: str) -> str:
    return text.replace("-", "−") if text.startswith("-") else text


def fmt_si(value: float, unit: str = "", digits: int = DIGITS, *, smallest: int = -5, largest: int = 6) -> str:
    """`value` with the SI prefix that leaves one to three digits before the
    point, `digits` significant: 845 µs, 1.23 GB, 25 M events/s. The prefix
    stays between 1000^smallest and 1000^largest (a count has none below 1).
    A unit that is a word is set apart from the prefix: "25 M events/s"."""
    if not math.isfinite(value):
        return f"{value} {unit}".rstrip()
    if value == 0:
        return f"0 {unit}".rstrip()
    power = max(smallest, min(largest, math.floor(math.log10(abs(value)) / 3)))
    scaled = value / 1000.0**power
    if abs(float(f"{scaled:.{digits}g}")) >= 1000 and power < largest:  # 999.96 ms rounds to 1 s
        power += 1
        scaled = value / 1000.0**power
    prefix = _PREFIXES[power]
    text = f"{scaled:.{digits}g}"
    if "e" in text:  # beyond the prefixes: scientific, still with its unit
        text = f"{scaled:.{max(digits - 1, 0)}e}"
    word = len(unit) - len(unit.lstrip("abcdefghijklmnopqrstuvwxyz")) > 2  # "events/s", not "B/s" or "s"
    if prefix and word:
        return _minus(f"{text} {prefix} {unit}")  # "25 M events/s", not "25 Mevents/s"
    return _minus(f"{text} {prefix}{unit}".rstrip())


def fmt_time(seconds: float, digits: int = DIGITS) -> str:
    """A duration: 845 µs, 1.23 ms, 12.5 s; beyond 1000 s also in minutes,
    hours or days (4.2 ks reads badly): 28 min, 3.1 h, 2.5 d."""
    if math.isfinite(seconds) and abs(seconds) >= 1000:
        for scale, unit in ((86400, "d"), (3600, "h"), (60, "min")):
            if abs(seconds) >= 2 * scale:
                return _minus(f"{seconds / scale:.{digits}g} {unit}")
    return fmt_si(seconds, "s", digits, largest=0)


def fmt_bytes(n: float, digits: int = DIGITS, *, binary: bool = False) -> str:
    """A size: 512 B, 3.5 MB (powers of 1000), or with `binary` 3 MiB (of 1024)."""
    if not binary:
        return fmt_si(n, "B", digits, smallest=0)
    if not math.isfinite(n):
        return f"{n} B"
    power = 0
    while abs(n) >= 1024 ** (power + 1) and power < len(_BINARY) - 1:
        power += 1
    return _minus(f"{n / 1024**power:.{digits}g} {_BINARY[power]}B")


def fmt_rate(per_s: float, unit: str = "/s", digits: int = DIGITS) -> str:
    """A rate: 25 M events/s, 1.2 GB/s, 3.4 k/s."""
    return fmt_si(per_s, unit, digits, smallest=0)


def fmt_count(n: float, digits: int = DIGITS) -> str:
    """A large count with an SI prefix: 1.2 M, 950 (exact counts under 10^4 stay whole)."""
    if abs(n) < 10_000 and float(n).is_integer():
        return f"{int(n):,}"
    return fmt_si(n, "", digits, smallest=0)
