"""A benchmarking session on the current device, for commands that measure without a Handle."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ucudnn._native import _cudnn
from ucudnn.core.device import device_facts
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.config import Config
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings


@contextlib.contextmanager
def open_benchmarker(
    database: str | os.PathLike[str], progress: bool | None = None, engines: bool | None = None
) -> Iterator[Benchmarker]:
    """A Benchmarker on a fresh cuDNN handle, writing to the cache at `database`; it measures
    engine configurations too when `engines` says so (None: as UCUDNN_ENGINES says)."""
    facts = device_facts()  # first, so that a missing driver raises NoDeviceError
    if engines is None:
        engines = Config.from_env().engines
    settings = BenchmarkSettings(progress=progress, engines=engines)
    with BenchmarkCache(database) as cache:
        yield Benchmarker(_cudnn.Handle(), facts, cache, settings)
