"""What every size measured in one benchmark shares, whichever family measures it."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable

from ucudnn._native import _cudnn
from ucudnn.core.arena import GrowingArena
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.runtime.timing import Timer


@dataclasses.dataclass
class Bench:
    """The handle and its stream's timer, one growing workspace, the caps and counts of the
    settings, and the build threads."""

    handle: _cudnn.Handle
    timer: Timer
    workspace: GrowingArena
    workspace_cap: int
    builders: concurrent.futures.ThreadPoolExecutor | None  # None: build on this thread
    wave: int = 1  # configurations built together: one per build thread

    def time(self, launch: Callable[[], object], warmup: int, runs: int) -> list[float]:
        return self.timer.times_ms(launch, warmup, runs)


def status_of(exc: CudnnError | CudaOutOfMemoryError) -> str:
    """The status a failed timing is recorded with."""
    return exc.status_name if isinstance(exc, CudnnError) else exc.name
