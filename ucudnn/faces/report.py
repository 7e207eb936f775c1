"""Text reports of measured runs: predicted next to measured, plan next to baseline."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ucudnn.planner.textable import render_table
from ucudnn.runtime.measure import KernelTiming


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
    predicted = math.fsum(t.predicted_ms for t in timings)
    measured = math.fsum(t.measured_ms for t in timings)
    baselines = [t.baseline_measured_ms for t in timings]
    baseline = None if None in baselines else math.fsum(baselines)  # type: ignore[arg-type]
    speedup = f"{baseline / measured:.2f}x" if baseline is not None and measured else ""
    total = ["total", "", _ms(predicted), _ms(measured), _ms(baseline), speedup]
    lines = render_table(header, rows, 2, total)
    if measured:
        error = (predicted - measured) / measured
        lines.append(f"prediction error of the total: {error:+.1%} (predicted vs measured)")
    return "\n".join(lines)
