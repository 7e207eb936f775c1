"""A benchmarking session on the current device, for commands that measure without a Handle."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator

from ucudnn._native import _cudnn
from ucudnn.core.device import device_facts
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.config import engines_from_env
from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings
from ucudnn.runtime.engines_setting import EnginesRequest, engines_setting


@contextlib.contextmanager
def open_benchmarker(
    database: str | os.PathLike[str], settings: BenchmarkSettings | None = None
) -> Iterator[Benchmarker]:
    """A Benchmarker on a fresh cuDNN handle, writing to the cache at `database`; it measures
    engine configurations too as `settings.engines` says, else as a Handle would decide
    (UCUDNN_ENGINES, else wherever they can run)."""
    facts = device_facts()  # first, so that a missing driver raises NoDeviceError
    settings = settings or BenchmarkSettings()
    request = EnginesRequest.of(settings.engines, engines_from_env())
    settings = dataclasses.replace(settings, engines=engines_setting(request).enabled)
    with BenchmarkCache(database) as cache:
        yield Benchmarker(_cudnn.Handle(), facts, cache, settings)
