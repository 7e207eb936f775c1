"""PNG plots: a layer's desirable sets and a plan's per-kernel breakdown (matplotlib)."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ucudnn.core.build import distribution
from ucudnn.core.checks import shown
from ucudnn.planner.files import atomic_write
from ucudnn.planner.pareto import desirable_set
from ucudnn.planner.plan import Plan
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.tune import TuneResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_MIB = 1 << 20
_GIB = 1 << 30


class PlottingUnavailable(RuntimeError):
    """matplotlib, an optional dependency, is not installed."""


def pyplot() -> ModuleType:
    """The matplotlib.pyplot module; PlottingUnavailable without matplotlib, which a command
    asks first, before it does any work or creates anything."""
    try:
        import matplotlib
    except ImportError:
        raise PlottingUnavailable(
            f"plots need matplotlib: pip install '{distribution()}[plot]'"
        ) from None
    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def write_plots(
    tables: TimingTables, plan: Plan, out_dir: str | os.PathLike[str], layer: str | None = None
) -> list[Path]:
    """Write desirable_sets.png (for `layer`, default the layer the plan speeds up most) and
    breakdown.png (planned vs baseline time per kernel); return their paths. Without
    matplotlib, PlottingUnavailable, and `out_dir` is not created."""
    plt = pyplot()
    if not os.fspath(out_dir):
        raise ValueError("the folder to write the plots in is empty")  # Path("") is "."
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{out}: not a folder to write the plots in") from None
    layer = layer or most_improved_layer(plan)
    if layer not in {k.layer for k in plan.kernels}:
        raise ValueError(f"no layer {shown(layer)} in the timings")
    return [
        _desirable_sets(plt, tables, plan, layer, out / "desirable_sets.png"),
        _breakdown(plt, plan, out / "breakdown.png"),
    ]


def save_png(plt: ModuleType, fig: Figure, path: Path, *, source: str = "") -> Path:
    """Lay out `fig`, write it whole to `path` (never a half file) and close it; `source`,
    where its timings came from, goes on top, as every output of a plan names it."""
    try:
        if source:
            fig.suptitle(f"timings: {source}", fontsize=8)
        fig.tight_layout()
        with atomic_write(path, "wb") as f:
            fig.savefig(f, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path


def most_improved_layer(plan: Plan) -> str:
    """The layer of the kernel with the largest speedup: the one worth plotting."""
    return max(plan.kernels, key=lambda k: k.speedup or 0.0).layer


def _desirable_sets(
    plt: ModuleType, tables: TimingTables, plan: Plan, layer: str, path: Path
) -> Path:
    kernels = [k for k in plan.kernels if k.layer == layer]
    fig, axes = plt.subplots(1, len(kernels), figsize=(5 * len(kernels), 4), squeeze=False)
    for ax, chosen in zip(axes[0], kernels, strict=True):
        front = desirable_set(tables[chosen.kernel_id], None, plan.policy, plan.deterministic_only)
        ax.step(
            [s.workspace_bytes / _MIB for s in front],
            [s.time_ms for s in front],
            where="post",
            marker="o",
            label="desirable set",
        )
        ax.plot(chosen.workspace_bytes / _MIB, chosen.time_ms, "r*", markersize=14, label="chosen")
        if plan.mode == "wr":
            ax.axvline(plan.limit_bytes / _MIB, color="gray", linestyle="--", label="limit")
        ax.set_xscale("symlog", linthresh=1.0)  # zero-workspace points stay on the plot
        ax.set_xlim(left=0)
        ax.set_xlabel("workspace (MiB)")
        ax.set_ylabel("time (ms)")
        ax.set_title(f"{layer} {chosen.kernel}")
        ax.legend()
    return save_png(plt, fig, path, source=plan.timings_source)


def _breakdown(plt: ModuleType, plan: Plan, path: Path) -> Path:
    labels = [f"{k.layer} {k.kernel}" for k in plan.kernels]
    planned = [k.time_ms for k in plan.kernels]
    baseline = [k.baseline.time_ms if k.baseline else 0.0 for k in plan.kernels]
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.25 * len(labels))))
    rows = range(len(labels))
    ax.barh([r + 0.2 for r in rows], baseline, height=0.4, label="baseline (single algorithm)")
    ax.barh([r - 0.2 for r in rows], planned, height=0.4, label="ucudnn plan")
    ax.set_yticks(list(rows), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{plan.mode.upper()} plan, predicted times")
    ax.legend()
    return save_png(plt, fig, path, source=plan.timings_source)


def write_tune_plot(result: TuneResult, path: str | os.PathLike[str]) -> Path:
    """Samples per second and memory against the batch size, with the memory given and the
    chosen batch; batches the timings hold only as smaller micro-batches are hollow. The title
    names where the timings come from (measurements on a device, or the MODEL)."""
    plt = pyplot()
    fig, (speed, memory) = plt.subplots(2, 1, sharex=True, figsize=(8, 7))
    fitting = [p for p in result.points if p.fits]
    for measured in (True, False):
        points = [p for p in fitting if p.measured == measured]
        speed.plot(
            [p.batch for p in points],
            [p.samples_per_s or 0.0 for p in points],
            "o",
            fillstyle="full" if measured else "none",
            color="C0",
            label="undivided in the timings" if measured else "composed of smaller micro-batches",
        )
    best = result.best
    speed.plot(best.batch, best.samples_per_s or 0.0, "r*", markersize=16, label="chosen")
    speed.set_ylabel("predicted samples/s (convolutions)")
    speed.legend()
    batches = [p.batch for p in result.points]
    memory.plot(
        batches, [p.minimum.total_bytes / _GIB for p in result.points], "--", color="C1",
        label="needed with the smallest workspace",
    )  # fmt: skip
    memory.plot(
        [p.batch for p in fitting],
        [p.step.total_bytes / _GIB for p in fitting if p.step is not None],
        "o-", color="C0", label="used by the plan",
    )  # fmt: skip
    memory.axhline(result.memory_bytes / _GIB, color="gray", linestyle=":", label="memory given")
    if best.step is not None:
        memory.plot(best.batch, best.step.total_bytes / _GIB, "r*", markersize=16)
    memory.set_xlabel("mini-batch size")
    memory.set_ylabel("memory (GiB)")
    memory.legend()
    return save_png(plt, fig, Path(path), source=result.timings_source)
