"""Planner configuration from the environment, and human-friendly byte sizes.

Sizes accept a plain byte count ("67108864") or a number with a unit ("64MiB", "512 MB",
"1.5GiB", "8M"). Units are case-insensitive. IEC units (KiB, MiB, GiB, TiB) and bare letters
(K, M, G, T, as in most GPU tools) are binary; SI units (KB, MB, GB, TB) are decimal. A
fractional result is rounded down to whole bytes, so a limit is never exceeded.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from ucudnn.core.checks import integer

POLICY_NAMES = ("undivided", "powerOfTwo", "all")

_UNITS = {
    "": 1,
    "b": 1,
    **{f"{p}{s}": 1024**i for i, p in enumerate("kmgt", 1) for s in ("", "i", "ib")},
    **{f"{p}b": 1000**i for i, p in enumerate("kmgt", 1)},
}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*")
_SIZE_HELP = (
    "a byte count such as 67108864 or a number with a unit such as 64MiB, 512MB, 1.5GiB "
    "(K/KiB, M/MiB, G/GiB, T/TiB are binary; KB, MB, GB, TB are decimal)"
)


# CUDA sizes are size_t; a count beyond a signed 64-bit integer is never a real size.
MAX_BYTES = 2**63 - 1

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_size(text: str, name: str) -> int:
    """Bytes in `text`; `name` (e.g. the environment variable) is named in the error."""
    match = _SIZE.fullmatch(text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if unit is None:
        raise ValueError(f"{name}={text!r} is not a size; expected {_SIZE_HELP}")
    nbytes = int(Decimal(match.group(1)) * unit)
    if nbytes > MAX_BYTES:
        raise ValueError(f"{name}={text!r} is larger than any memory ({MAX_BYTES} bytes)")
    return nbytes


def byte_count(value: object, name: str) -> int:
    """A size passed from Python: an integer of any integral type (numpy's too, not bool) or
    text such as "64MiB"; errors name `name`, the argument."""
    if isinstance(value, str):
        return parse_size(value, name)
    try:
        return integer(value, name, minimum=0, maximum=MAX_BYTES)
    except TypeError:
        raise TypeError(
            f"{name} must be a number of bytes (an integer) or a size such as '64MiB', "
            f"got {value!r} ({type(value).__name__})"
        ) from None


def parse_bool(text: str, name: str) -> bool:
    """A yes/no setting: 1/0, true/false, yes/no, on/off in any letter case."""
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(
        f"{name}={text!r} is not a yes/no value; expected one of {', '.join(_TRUE + _FALSE)}"
    )


def parse_policy(text: str, name: str) -> str | tuple[int, ...]:
    """A policy name (any letter case) or a comma list of positive micro-batch sizes."""
    by_lower = {p.lower(): p for p in POLICY_NAMES}
    if text.strip().lower() in by_lower:
        return by_lower[text.strip().lower()]
    parts = [p.strip() for p in text.split(",")]
    if all(re.fullmatch("[0-9]+", p) and int(p) > 0 for p in parts):
        return tuple(sorted({int(p) for p in parts}))
    raise ValueError(
        f"{name}={text!r} is not a policy; expected one of {', '.join(POLICY_NAMES)} "
        "or a comma-separated list of positive micro-batch sizes such as 1,2,4,32"
    )


def default_database(environ: Mapping[str, str] = os.environ) -> Path:
    """The benchmark cache in the user's cache directory (XDG_CACHE_HOME, else ~/.cache)."""
    base = environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says relative values are invalid and must be ignored.
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "ucudnn" / "benchmarks.sqlite"


@dataclasses.dataclass(frozen=True)
class Config:
    """What the planner does when the caller does not say otherwise."""

    batch_size_policy: str | tuple[int, ...] = "powerOfTwo"
    default_workspace_limit: int = 64 * 1024**2
    total_workspace_size: int | None = None  # set (> 0): plan the whole network at once (WD)
    database: Path = dataclasses.field(default_factory=default_database)

    @property
    def workspace_division(self) -> bool:
        return self.total_workspace_size is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Config:
        """Read the UCUDNN_* variables; unset or empty ones keep their defaults."""

        def get(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None

        fields: dict[str, object] = {"database": default_database(environ)}
        if (text := get("UCUDNN_BATCH_SIZE_POLICY")) is not None:
            fields["batch_size_policy"] = parse_policy(text, "UCUDNN_BATCH_SIZE_POLICY")
        if (text := get("UCUDNN_DEFAULT_WORKSPACE_LIMIT")) is not None:
            fields["default_workspace_limit"] = parse_size(text, "UCUDNN_DEFAULT_WORKSPACE_LIMIT")
        if (text := get("UCUDNN_TOTAL_WORKSPACE_SIZE")) is not None:
            # 0 keeps workspace division off, as in the original µ-cuDNN.
            fields["total_workspace_size"] = parse_size(text, "UCUDNN_TOTAL_WORKSPACE_SIZE") or None
        if (text := get("UCUDNN_DATABASE")) is not None:
            fields["database"] = Path(text).expanduser()
        return cls(**fields)  # type: ignore[arg-type]
