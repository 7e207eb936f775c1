"""What every size measured in one benchmark shares (`Bench`), and what each family measuring
a size knows of it (`AtSize`)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable

from ucudnn._native import _cudnn
from ucudnn.core.arena import GrowingArena
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import Measurement
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


@dataclasses.dataclass
class AtSize:
    """One kernel of one problem at one micro-batch size, as a family measures it; what failed
    goes to `failed`, by candidate, shared with the other families of the size."""

    bench: Bench
    problem: ConvProblem  # the part's own problem, run whole
    micro_batch: int  # the part's size along the split axis, as its measurements record it
    kernel: str
    at: dict[str, int]  # x, w and y where this size is timed
    split: bool  # a size below the whole extent
    failed: dict[object, Measurement]


def status_of(exc: CudnnError | CudaOutOfMemoryError) -> str:
    """The status a failed timing is recorded with."""
    return exc.status_name if isinstance(exc, CudnnError) else exc.name
