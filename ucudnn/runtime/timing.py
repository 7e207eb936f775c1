"""Our own timing: warm-up calls, then each repeat timed alone with CUDA events."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from ucudnn._native import _cuda


class Timer:
    """Times calls that enqueue work on one stream; the host waits only after each repeat."""

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self._start = _cuda.Event()
        self._end = _cuda.Event()

    def times_ms(self, launch: Callable[[], None], warmup: int, repeats: int) -> list[float]:
        """Elapsed milliseconds of `repeats` calls of `launch`, after `warmup` untimed ones."""
        for _ in range(warmup):
            launch()
        times = []
        for _ in range(repeats):
            self._start.record(self.stream)
            launch()
            self._end.record(self.stream)
            self._end.synchronize()
            times.append(self._start.elapsed_ms(self._end))
        return times

    def median_ms(self, launch: Callable[[], None], warmup: int, repeats: int) -> float:
        return statistics.median(self.times_ms(launch, warmup, repeats))
