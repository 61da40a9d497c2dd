"""Numbers as profilers print them ("1,234.5", "n/a") and their units, in base units."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][+-]?\d+)?$")
_TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
_SI = {
    "": 1.0,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
    "Ti": 1024.0**4,
}
_BYTES = re.compile(r"^(|K|M|G|T|Ki|Mi|Gi|Ti)(byte|B)$")
_RATE = re.compile(r"^(|K|M|G|T|Ki|Mi|Gi|Ti)(byte|B)/(s|second)$")


def number(text: str | None) -> float | None:
    """'1,234.5' -> 1234.5; '', 'n/a', '(!) n/a' and anything else non-numeric -> None."""
    if text is None:
        return None
    text = text.strip()
    if not text or not _NUMBER.match(text) or text in ("+", "-", "."):
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def to_ns(value: float, unit: str) -> float | None:
    scale = _TIME_NS.get(unit.strip())
    return value * scale if scale is not None else None


def to_bytes(value: float, unit: str) -> float | None:
    match = _BYTES.match(unit.strip())
    return value * _SI[match.group(1)] if match else None


def to_bytes_per_s(value: float, unit: str) -> float | None:
    match = _RATE.match(unit.strip())
    return value * _SI[match.group(1)] if match else None
