"""Progress bars on stderr for long work on the device: benchmarking, timing a plan."""

from __future__ import annotations

import sys
from typing import Never

from tqdm import tqdm


def progress_bar(total: int, show: bool | None, description: str, unit: str) -> tqdm[Never]:
    """A bar of `total` steps (updated by hand: it wraps no iterable) when `show` is True, or
    when it is None and stderr is a terminal; a silent one otherwise. The command line decides
    `show` itself (`ucudnn.faces.commands._progress`); None is for library users."""
    if show is None:
        show = sys.stderr.isatty()
    return tqdm(total=total, desc=description, unit=unit, leave=False, disable=not show)
