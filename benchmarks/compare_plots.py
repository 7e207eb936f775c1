"""PNG plots of a comparison run (matplotlib; optional: without it the run says so)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import compare_report

from ucudnn.faces.plots import save_png

_SHOWN = ("wr", "wd_kernels", "wd_limit", "ceiling", "pytorch", "frontend")


def write_plots(run: Mapping[str, object], folder: Path, stem: str) -> tuple[list[str], str | None]:
    """Write <stem>-speedup.png and <stem>-prediction.png; return their names, or why none."""
    try:
        import matplotlib
    except ImportError:
        return [], "plots skipped: matplotlib is not importable"
    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    summaries = compare_report.summarise(run["measurements"])  # type: ignore[arg-type]
    if not summaries:
        return [], "plots skipped: nothing was measured"
    written = []
    for name, draw in (("speedup", _speedups), ("prediction", _prediction)):
        written.append(save_png(plt, draw(plt, run, summaries), folder / f"{stem}-{name}.png").name)
    return written, None


def _label(config: compare_report.Config) -> str:
    network, dtype, layout, limit = config
    return f"{network} {dtype} {layout} {compare_report.format_bytes(limit)}"


def _speedups(plt, run, summaries):
    """Geometric-mean speedup over the baseline per configuration, one bar per method."""
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(summaries) + 2), 4.5))
    width = 0.8 / len(_SHOWN)
    for i, method in enumerate(_SHOWN):
        values = [s.speedups[method].geomean if s.speedups[method] else 0.0 for s in summaries]
        positions = [c + (i - (len(_SHOWN) - 1) / 2) * width for c in range(len(summaries))]
        ax.bar(positions, values, width=width, label=method)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(summaries)), [_label(s.config) for s in summaries], rotation=60,
                  ha="right", fontsize=7)  # fmt: skip
    ax.set_ylabel("speedup over baseline (geometric mean)")
    ax.set_title(f"{run['run_id']}: measured, per configuration")
    ax.legend(fontsize=7, ncols=3)
    return fig


def _prediction(plt, run, summaries):
    """Predicted against measured kernel time of every ucudnn plan (log-log)."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    low, high = math.inf, 0.0
    for method in compare_report.PLANNED:
        points = [
            (float(m["measured_ms"]), float(m["predicted_ms"]))
            for m in run["measurements"]
            if m["method"] == method and m.get("predicted_ms") and m["measured_ms"] > 0
        ]
        if points:
            ax.scatter(*zip(*points, strict=True), s=8, label=method)
            low = min(low, *(min(p) for p in points))
            high = max(high, *(max(p) for p in points))
    if high > 0:
        ax.plot([low, high], [low, high], color="gray", linewidth=1, label="predicted = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (ms)")
    ax.set_ylabel("predicted (ms)")
    ax.set_title(f"{run['run_id']}: prediction")
    ax.legend(fontsize=7)
    return fig
