"""A benchmarking session on the current device, for commands that measure without a Handle."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ucudnn._native import _cudnn
from ucudnn.core.device import device_facts
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings


@contextlib.contextmanager
def open_benchmarker(
    database: str | os.PathLike[str], progress: bool | None = None
) -> Iterator[Benchmarker]:
    """A Benchmarker on a fresh cuDNN handle, writing to the cache at `database`."""
    facts = device_facts()  # first, so that a missing driver raises NoDeviceError
    with BenchmarkCache(database) as cache:
        yield Benchmarker(_cudnn.Handle(), facts, cache, BenchmarkSettings(progress=progress))
