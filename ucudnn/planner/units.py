"""Byte counts for people: the counterpart of `config.parse_size` for reports and errors."""

from __future__ import annotations

_UNITS = ("KiB", "MiB", "GiB", "TiB")


def format_size(nbytes: int) -> str:
    """ "512 B", "1.5 KiB", "64 MiB": binary units, at most one decimal, exact when whole."""
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            break
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {unit}"


def bytes_text(nbytes: int) -> str:
    """ "67108864 bytes (64 MiB)": exact and readable, for error messages."""
    return f"{nbytes} bytes ({format_size(nbytes)})"
