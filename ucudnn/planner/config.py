"""Planner configuration from the environment, and human-friendly byte sizes.

Sizes accept a plain byte count ("67108864") or a number with a unit ("64MiB", "512 MB",
"1.5GiB", "8M"). Units are case-insensitive. IEC units (KiB, MiB, GiB, TiB) and bare letters
(K, M, G, T, as in most GPU tools) are binary; SI units (KB, MB, GB, TB) are decimal. A size
is a whole number of bytes: "1.5KiB" (1536) is one, "1.5" and "0.5B" are refused, as rounding
either way would give a limit the user did not write.

The same checks serve values passed from Python (`byte_count`, `micro_batch_policy`,
`slab_policy`, `file_path`, `boolean`), so a `Config` built directly is held to what the
environment is held to.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ucudnn.core.checks import MAX_NUMBER_TEXT, boolean, integer, parse_bool, shown
from ucudnn.core.problem import MAX_DIM, tf32_allowed
from ucudnn.planner.choices import WORKSPACE_SHARING

if TYPE_CHECKING:
    from decimal import Decimal

POLICY_NAMES = ("undivided", "powerOfTwo", "all")
# A slab policy's names: the extents below a kernel's planes that are powers of two, or none.
SLAB_POLICY_NAMES = ("undivided", "powerOfTwo")

_UNITS = {
    "": 1,
    "b": 1,
    **{f"{p}{s}": 1024**i for i, p in enumerate("kmgt", 1) for s in ("", "i", "ib")},
    **{f"{p}b": 1000**i for i, p in enumerate("kmgt", 1)},
}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*")
_SIZE_HELP = (
    "a whole number of bytes such as 67108864 or a number with a unit such as 64MiB or 1.5GiB "
    "(K/KiB, M/MiB, G/GiB, T/TiB are binary; KB, MB, GB, TB are decimal)"
)


# CUDA sizes are size_t; a count beyond a signed 64-bit integer is never a real size.
MAX_BYTES = 2**63 - 1

# A micro-batch size or slab extent: positive, at most as many digits as MAX_DIM (checked
# after).
_POLICY_SIZE = re.compile("0*[1-9][0-9]{0,9}")


def _setting(name: str, text: str) -> str:
    """ "NAME='value'" for an error, the value cut short: a pasted megabyte is no message."""
    return f"{name}={shown(text)}"


class NotASize(ValueError):
    """Text that is no size at all, as opposed to a size out of range."""


def parse_size(text: str, name: str) -> int:
    """Bytes in `text`; `name` (e.g. the environment variable) is named in the error:
    NotASize for text that is no size, ValueError for one that is not a whole number of bytes
    or is larger than any memory."""
    match = _SIZE.fullmatch(text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise NotASize(_not_a_size(name, text))
    number = match.group(1)
    # More whole digits than MAX_BYTES has is too large: refused unread, as int() of a long
    # number is slow (a fraction's digits cost little).
    if len(number.partition(".")[0].lstrip("0")) > len(str(MAX_BYTES)):
        raise ValueError(_too_large(name, text))
    # Exact: the product has at most the digits of both factors; Decimal's default precision
    # (28 digits) would round 1.99999...9 bytes to 2, which the user did not write. Imported
    # here: most commands parse no size, and every command pays for what it imports.
    from decimal import Decimal, localcontext

    with localcontext(prec=len(number) + len(str(unit))):
        exact = Decimal(number) * unit
    if exact != exact.to_integral_value():
        raise ValueError(_not_whole(name, text, exact, unit))
    return _within_memory(int(exact), name, text)


def _not_whole(name: str, text: str, exact: Decimal, unit: int) -> str:
    """Why `text` is refused; with a unit, also the bytes it names, unless too long to read."""
    message = f"{name}={shown(text)} is not a whole number of bytes"
    nbytes = format(exact, "f").rstrip("0")  # a fraction: it has a point and no trailing zero
    if unit == 1 or len(nbytes) > MAX_NUMBER_TEXT:
        return message
    return f"{message}: it is {nbytes} bytes"


def byte_count(value: object, name: str) -> int:
    """A size passed from Python: an integer of any integral type (numpy's too, not bool) or
    text as `parse_size` reads it. Anything else gets the same error as bad text: TypeError
    for a value of another type (a float, NaN included), ValueError for a negative count."""
    if isinstance(value, str):
        return parse_size(value, name)
    try:
        nbytes = integer(value, name)
    except TypeError:
        raise TypeError(_not_a_size(name, value)) from None
    if nbytes < 0:
        raise ValueError(_not_a_size(name, value))
    return _within_memory(nbytes, name, value)


def _not_a_size(name: str, value: object) -> str:
    return f"{name}={shown(value)} is not a size; expected {_SIZE_HELP}"


def _within_memory(nbytes: int, name: str, value: object) -> int:
    if nbytes > MAX_BYTES:
        raise ValueError(_too_large(name, value))
    return nbytes


def _too_large(name: str, value: object) -> str:
    return f"{name}={shown(value)} is larger than any memory ({MAX_BYTES} bytes)"


@dataclasses.dataclass(frozen=True)
class _PolicyKind:
    """What a kind of policy names: its words, and what its lists count."""

    names: tuple[str, ...]
    unit: str  # one entry of a list, as messages say it

    @property
    def help(self) -> str:
        return (
            f"one of {', '.join(self.names)} (any letter case) or a comma-separated list of "
            f"positive {self.unit}s up to {MAX_DIM} such as 1,2,4,32"
        )


_MICRO_BATCHES = _PolicyKind(POLICY_NAMES, "micro-batch size")
_SLABS = _PolicyKind(SLAB_POLICY_NAMES, "slab extent")


def parse_policy(text: str, name: str) -> str | tuple[int, ...]:
    """A policy name (any letter case) or a comma list of positive micro-batch sizes."""
    return _parse_policy(text, name, _MICRO_BATCHES)


def parse_slab_policy(text: str, name: str) -> str | tuple[int, ...]:
    """A slab policy name (any letter case) or a comma list of positive slab extents."""
    return _parse_policy(text, name, _SLABS)


def _parse_policy(text: str, name: str, kind: _PolicyKind) -> str | tuple[int, ...]:
    if text in kind.names:  # as the planner passes it on, again and again
        return text
    if not text.strip():
        raise ValueError(f"{name} is empty; expected {kind.help}")
    by_lower = {p.lower(): p for p in kind.names}
    if text.strip().lower() in by_lower:
        return by_lower[text.strip().lower()]
    parts = [p.strip() for p in text.split(",")]
    sizes = [int(p) for p in parts if _POLICY_SIZE.fullmatch(p)]
    if len(sizes) == len(parts) and max(sizes) <= MAX_DIM:
        return tuple(sorted(set(sizes)))
    raise ValueError(f"{_setting(name, text)} is not a policy; expected {kind.help}")


def micro_batch_policy(value: object, name: str) -> str | tuple[int, ...]:
    """A policy passed from Python: text as `parse_policy` reads it, or any iterable of
    positive integers (list, tuple, set, numpy array). Sizes come back as a sorted tuple, so
    a policy can key a cache."""
    return _policy(value, name, _MICRO_BATCHES)


def slab_policy(value: object, name: str) -> str | tuple[int, ...]:
    """A slab policy passed from Python, as `micro_batch_policy` takes a policy: text as
    `parse_slab_policy` reads it, or any iterable of positive slab extents."""
    return _policy(value, name, _SLABS)


def _policy(value: object, name: str, kind: _PolicyKind) -> str | tuple[int, ...]:
    if isinstance(value, str):
        return _parse_policy(value, name, kind)
    entries = _policy_entries(value, name)
    sizes = {integer(v, f"{name} {kind.unit}", minimum=1, maximum=MAX_DIM) for v in entries}
    if not sizes:
        raise ValueError(f"{name} names no {kind.unit}; expected {kind.help}")
    return tuple(sorted(sizes))


def _policy_entries(value: object, name: str) -> Iterator[object]:
    # Bytes iterate as small integers: a misread policy, never a list of sizes.
    if not isinstance(value, (bytes, bytearray)):
        try:
            return iter(cast("Iterable[object]", value))  # TypeError if it is not
        except TypeError:
            pass
    raise TypeError(
        f"{name} must be a policy name, text such as '1,2,4,32' or an iterable of positive "
        f"integers, got {shown(value)} ({type(value).__name__})"
    )


def _budget(value: object, name: str) -> int | None:
    """A WD budget in bytes; None or 0 keeps workspace division off, as in µ-cuDNN."""
    return None if value is None else byte_count(value, name) or None


def file_path(value: object, name: str) -> Path:
    """A path passed from Python (str or os.PathLike); errors name `name`, the argument."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {shown(value)}")
    text = os.fsdecode(value)
    if not text:  # Path("") would quietly mean the current directory
        raise ValueError(f"{name} must be a path, got an empty one")
    if "\0" in text:
        raise ValueError(f"{name} must be a path, got {shown(value)} with a NUL character")
    return Path(text)


def _user_path(text: str, name: str) -> Path:
    """A path from the environment, with ~ and ~user expanded."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of no known user, or no home directory
        raise ValueError(
            f"{_setting(name, text)}: cannot expand ~ (no such user or home)"
        ) from None


def default_database() -> Path:
    """The benchmark cache in the user's cache directory as the platform has it, found by
    platformdirs from the process's environment: on Linux $XDG_CACHE_HOME/ucudnn when that is
    an absolute path (the XDG spec ignores a relative one), else ~/.cache/ucudnn."""
    # Imported here: it imports tempfile and random, which a plan made in Python needs not.
    import platformdirs

    return platformdirs.user_cache_path("ucudnn", appauthor=False) / "benchmarks.sqlite"


def database_from_env(environ: Mapping[str, str] = os.environ) -> Path:
    """The benchmark cache's path: UCUDNN_DATABASE in `environ` (~ expanded) if set and not
    empty, else `default_database`. Reads no other setting, so a bad one elsewhere cannot hide
    the cache."""
    text = environ.get("UCUDNN_DATABASE", "").strip()
    return _user_path(text, "UCUDNN_DATABASE") if text else default_database()


def engines_from_env(environ: Mapping[str, str] = os.environ) -> bool | None:
    """UCUDNN_ENGINES in `environ` as a yes/no value; None when unset or empty. Reads no other
    setting, so that `ucudnn info` can say where the engines' setting comes from even when
    another variable is bad."""
    text = environ.get("UCUDNN_ENGINES", "").strip()
    return parse_bool(text, "UCUDNN_ENGINES") if text else None


def workspace_sharing(value: object, name: str) -> str:
    """How a total workspace serves the kernels: "divided" or "shared" (see Config)."""
    if not isinstance(value, str) or value.strip().lower() not in WORKSPACE_SHARING:
        raise ValueError(
            f"{name} must be one of {', '.join(WORKSPACE_SHARING)}, got {shown(value)}"
        )
    return value.strip().lower()


@dataclasses.dataclass(frozen=True)
class Config:
    """What the planner does when the caller does not say otherwise."""

    batch_size_policy: str | tuple[int, ...] = "powerOfTwo"
    default_workspace_limit: int = 64 * 1024**2
    total_workspace_size: int | None = None  # set (> 0): plan the whole network at once (WD)
    database: Path = dataclasses.field(default_factory=default_database)
    check: bool = False  # compare every call with the undivided convolution
    # float32 problems without a named math type may use TF32 (see core.problem.default_math_type)
    allow_tf32: bool = False
    # Also measure cuDNN's graph-API engine configurations; None (not set): wherever they can
    # run, as the runtime finds out on the device (ucudnn.runtime.engines_setting).
    engines: bool | None = None
    # How a total workspace serves the kernels: "divided" (each its own slice, WD) or "shared"
    # (one buffer every kernel uses in turn: WR at the total).
    workspace_sharing: str = "divided"
    # Which slab extents are tried at each micro-batch size (`policies.slab_extents`).
    slab_policy: str | tuple[int, ...] = "undivided"

    def __post_init__(self) -> None:
        # Built from Python as well as from the environment: both are checked here.
        checked = {
            "batch_size_policy": micro_batch_policy(self.batch_size_policy, "batch_size_policy"),
            "slab_policy": slab_policy(self.slab_policy, "slab_policy"),
            "default_workspace_limit": byte_count(
                self.default_workspace_limit, "default_workspace_limit"
            ),
            "total_workspace_size": _budget(self.total_workspace_size, "total_workspace_size"),
            "database": file_path(self.database, "database"),
            "check": boolean(self.check, "check"),
            "allow_tf32": boolean(self.allow_tf32, "allow_tf32"),
            "engines": None if self.engines is None else boolean(self.engines, "engines"),
            "workspace_sharing": workspace_sharing(self.workspace_sharing, "workspace_sharing"),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def workspace_division(self) -> bool:
        return self.total_workspace_size is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Config:
        """Read the UCUDNN_* variables in `environ`; unset or empty ones keep their defaults
        (the cache's default directory comes from the process's environment: `default_database`)."""

        def get(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None

        fields: dict[str, object] = {
            "database": database_from_env(environ),
            "allow_tf32": tf32_allowed(environ),
        }
        if (text := get("UCUDNN_BATCH_SIZE_POLICY")) is not None:
            fields["batch_size_policy"] = parse_policy(text, "UCUDNN_BATCH_SIZE_POLICY")
        if (text := get("UCUDNN_SLAB_POLICY")) is not None:
            fields["slab_policy"] = parse_slab_policy(text, "UCUDNN_SLAB_POLICY")
        if (text := get("UCUDNN_DEFAULT_WORKSPACE_LIMIT")) is not None:
            fields["default_workspace_limit"] = parse_size(text, "UCUDNN_DEFAULT_WORKSPACE_LIMIT")
        if (text := get("UCUDNN_TOTAL_WORKSPACE_SIZE")) is not None:
            fields["total_workspace_size"] = parse_size(text, "UCUDNN_TOTAL_WORKSPACE_SIZE")
        if (text := get("UCUDNN_CHECK")) is not None:
            fields["check"] = parse_bool(text, "UCUDNN_CHECK")
        fields["engines"] = engines_from_env(environ)
        if (text := get("UCUDNN_WORKSPACE_SHARING")) is not None:
            fields["workspace_sharing"] = workspace_sharing(text, "UCUDNN_WORKSPACE_SHARING")
        return cls(**fields)  # type: ignore[arg-type]
