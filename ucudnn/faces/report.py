"""Text reports of measured runs: predicted next to measured, plan next to baseline."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ucudnn.planner.textable import render_table

if TYPE_CHECKING:  # not at run time: it loads the native modules
    from ucudnn.runtime.measure import KernelTiming


@dataclasses.dataclass(frozen=True)
class TimingTotals:
    """The kernels' times added up."""

    predicted_ms: float
    measured_ms: float
    baseline_measured_ms: float | None  # None: a kernel has no baseline

    @property
    def speedup(self) -> float | None:
        """Measured baseline total over measured plan total."""
        if self.baseline_measured_ms is None or not self.measured_ms:
            return None
        return self.baseline_measured_ms / self.measured_ms

    @property
    def prediction_error(self) -> float | None:
        """(predicted - measured) / measured, a fraction; None when nothing was measured."""
        if not self.measured_ms:
            return None
        return (self.predicted_ms - self.measured_ms) / self.measured_ms


def timing_totals(timings: Sequence[KernelTiming]) -> TimingTotals:
    """Totals of `timings`; the baseline total only when every kernel has a baseline."""
    baselines = [t.baseline_measured_ms for t in timings]
    return TimingTotals(
        math.fsum(t.predicted_ms for t in timings),
        math.fsum(t.measured_ms for t in timings),
        None if None in baselines else math.fsum(baselines),  # type: ignore[arg-type]
    )


def _ms(value: float | None) -> str:
    return "none fits" if value is None else f"{value:.3f}"


def timing_report(timings: Sequence[KernelTiming]) -> str:
    """One row per kernel, then totals and how far the prediction was from the measurement."""
    header = ["layer", "kernel", "predicted ms", "measured ms", "baseline ms", "speedup"]
    rows = [
        [
            t.layer,
            t.kernel,
            _ms(t.predicted_ms),
            _ms(t.measured_ms),
            _ms(t.baseline_measured_ms),
            f"{t.speedup:.2f}x" if t.speedup is not None else "",
        ]
        for t in timings
    ]
    totals = timing_totals(timings)
    speedup = "" if totals.speedup is None else f"{totals.speedup:.2f}x"
    total = ["total", "", _ms(totals.predicted_ms), _ms(totals.measured_ms)]
    total += [_ms(totals.baseline_measured_ms), speedup]
    lines = render_table(header, rows, 2, total)
    if totals.prediction_error is not None:
        lines.append(
            f"prediction error of the total: {totals.prediction_error:+.1%} (predicted vs measured)"
        )
    return "\n".join(lines)
