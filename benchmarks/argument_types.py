"""argparse types the benchmarks share: sizes such as "64MiB", and comma-separated lists."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def size(text: str) -> int:
    """A byte count, as ucudnn reads sizes ("64MiB", "1GiB", 1048576)."""
    from ucudnn.planner.config import parse_size

    try:
        return parse_size(text.strip(), "size")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def comma_list(
    choices: tuple[str, ...] | None = None, parse: Callable[[str], Any] = str
) -> Callable[[str], list[Any]]:
    """An argparse type for a comma-separated list, each item parsed and, when `choices` are
    given, one of them."""

    def convert(text: str) -> list[Any]:
        items = [parse(t.strip()) for t in text.split(",") if t.strip()]
        bad = [i for i in items if choices is not None and i not in choices]
        if not items or bad:
            allowed = f"; choose from {', '.join(choices)}" if choices else ""
            raise argparse.ArgumentTypeError(f"bad list {text!r}{allowed}")
        return items

    return convert
