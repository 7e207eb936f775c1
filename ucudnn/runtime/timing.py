"""Our own timing: calls back to back, as a training step makes them, timed with CUDA events."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable

from ucudnn._native import _cuda


class Timer:
    """Times calls that enqueue work on one stream.

    The calls run back to back with an event recorded after each, and the host waits once, at
    the end. While the device works through one call the host is already enqueuing the next,
    so a call's time is what the device spends on it, as in a training step, not the host's
    work before its launch; the warm-up calls make the stream busy before the first event. Were
    the device faster than the host's launches, the times would show the host's pace, which a
    training step would meet too.
    """

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self._events: list[_cuda.Event] = []

    def times_ms(self, launch: Callable[[], object], warmup: int, repeats: int) -> list[float]:
        """Elapsed milliseconds of each of `repeats` calls of `launch`, made right after
        `warmup` untimed ones."""
        while len(self._events) < repeats + 1:
            self._events.append(_cuda.Event())
        events = self._events[: repeats + 1]
        for _ in range(warmup):
            launch()
        events[0].record(self.stream)
        for event in events[1:]:
            launch()
            event.record(self.stream)
        events[-1].synchronize()
        return [start.elapsed_ms(end) for start, end in itertools.pairwise(events)]

    def median_ms(self, launch: Callable[[], object], warmup: int, repeats: int) -> float:
        return statistics.median(self.times_ms(launch, warmup, repeats))
