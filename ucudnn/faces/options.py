"""The parsed options as the commands use them: numbers read from their text, the network and
engines asked for, and the benchmark cache to use."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ucudnn.core.checks import parse_float, parse_int, shown
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.choices import TIME_LIMIT_RANGE_S
from ucudnn.planner.config import Config, database_from_env, default_database, engines_from_env

if TYPE_CHECKING:
    from ucudnn.faces.formats import NetworkGiven
    from ucudnn.runtime.engines_setting import EnginesSetting

MAX_REPEATS = 10_000  # timed runs per kernel


def batch_size(text: str, name: str) -> int:
    """A batch size as cuDNN takes one: 1 to 2**31 - 1."""
    try:
        return parse_int(text, name, 1, MAX_DIM)
    except ValueError as exc:
        raise ValueError(f"{exc} (cuDNN's dimensions are 32-bit)") from None


def batch_list(text: str) -> list[int]:
    """--batches: a comma-separated list of batch sizes."""
    if not text.strip():
        raise ValueError("--batches is empty; expected a list of batch sizes such as 32,64,96")
    try:
        return [batch_size(part, "batch") for part in text.split(",")]
    except ValueError as exc:
        raise ValueError(
            f"--batches={shown(text)} is not a list of batch sizes such as 32,64,96: {exc}"
        ) from None


# The numeric options, read from their text here rather than by argparse (type=int), which
# quotes a bad value whole, refuses one past 4300 digits in Python's words, and exits before
# the command's one-line message.
_NUMBER_OPTIONS: dict[str, Callable[[str], object]] = {
    "batch": lambda text: batch_size(text, "--batch"),
    "repeats": lambda text: parse_int(text, "--repeats", 1, MAX_REPEATS),
    "time_limit": lambda text: parse_float(text, "--time-limit", *TIME_LIMIT_RANGE_S),
}


def read_numbers(args: argparse.Namespace) -> None:
    """The numeric options given, in place of their text (defaults are numbers already)."""
    for dest, read in _NUMBER_OPTIONS.items():
        text = getattr(args, dest, None)
        if isinstance(text, str):
            setattr(args, dest, read(text))


def network_given(args: argparse.Namespace) -> NetworkGiven:
    """The network arguments as documents give them."""
    return {
        "network": args.network,
        "batch": args.batch,
        "dtype": args.dtype,
        "layout": args.layout,
    }


def engines_choice(args: argparse.Namespace) -> bool | None:
    """--engines on/off; None (unset, or a command without it) leaves it to UCUDNN_ENGINES,
    else to the default."""
    choice: str | None = getattr(args, "engines", None)
    return None if choice is None else choice == "on"


def engines_in_effect(args: argparse.Namespace) -> EnginesSetting:
    """Whether the command measures engine configurations, and why: --engines, else
    UCUDNN_ENGINES (a bad value counts as unset here: `info` reports it, the others refuse
    it), else the default, which asks the device."""
    from ucudnn.runtime.engines_setting import EnginesRequest, engines_setting

    try:
        environment = engines_from_env()
    except ValueError:
        environment = None
    return engines_setting(EnginesRequest.of(engines_choice(args), environment))


def database_path(args: argparse.Namespace, config: Config) -> Path:
    """--database, else the configured cache."""
    return Path(args.database) if args.database else config.database


def database_or_default() -> Path:
    """UCUDNN_DATABASE, or the default when it cannot be read (`info` reports it)."""
    try:
        return database_from_env()
    except ValueError:
        return default_database()
