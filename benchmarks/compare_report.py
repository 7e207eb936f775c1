"""The pure half of the GPU comparison: run ids, environment records, aggregation, Markdown.

Nothing here touches a device, so all of it is tested on a CPU. A run is a JSON-able dict
(see `gpu_compare.py`); its `measurements` are flat records, one per (network, dtype, layout,
limit, layer, kernel, method), with `limit_bytes` None for methods that take no limit
(the unlimited ceiling and PyTorch), which then join every limit of their configuration.
A ucudnn method's record also holds its `schedule` (gpu_compare.schedule_record), which runs
before version 2 lack.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence

FORMAT = "ucudnn-gpu-compare"
VERSION = 2  # 2: a ucudnn method's measurement records its schedule

# Method names as they appear in measurements, and how the report names them.
METHODS = {
    "baseline": "baseline (fastest single algorithm within the limit)",
    "wr": "ucudnn WR (per-kernel limit)",
    "wd_kernels": "ucudnn WD (total = limit x kernels)",
    "wd_limit": "ucudnn WD (total = limit)",
    "wd_kernels_undivided": "WD optimum over undivided runs (total = limit x kernels)",
    "wd_limit_undivided": "WD optimum over undivided runs (total = limit)",
    "ceiling": "ceiling (fastest single algorithm, no limit)",
    "pytorch": "PyTorch, cudnn.benchmark=True",
    "frontend": "cuDNN frontend, plans within the limit",
}
PLANNED = ("wr", "wd_kernels", "wd_limit")  # ucudnn plans: predicted next to measured
PREDICTED = (*PLANNED, "ceiling")  # every method with a predicted time
LISTED_ERROR = 0.20  # kernels whose prediction is further off are listed one by one
COMPARED = ("wr", "wd_kernels", "wd_limit", "ceiling", "pytorch", "frontend")

Config = tuple[str, str, str, int]  # network, dtype, layout, limit_bytes
KernelId = tuple[str, str]  # layer, kernel


def run_id(now: datetime.datetime, gpu_name: str) -> str:
    """A file-name-safe id that sorts by time: 20250101T120000Z-nvidia-h100-80gb-hbm3."""
    stamp = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    return f"{stamp}-{slug or 'gpu'}"


def environment(
    device_report: Mapping[str, object],
    *,
    driver_version: str | None,
    torch_versions: Mapping[str, object] | None,
    frontend_versions: Mapping[str, object] | None,
    ucudnn_version: str,
    commit: str,
    python: str,
) -> dict[str, object]:
    """What the numbers are only valid for, from `ucudnn.core.device.info()` and the peers."""
    devices = list(device_report.get("devices") or [])  # type: ignore[call-overload]
    first = devices[0] if devices else {}
    return {
        "gpu": first.get("name"),
        "compute_capability": first.get("compute_capability"),
        "gpu_memory_bytes": first.get("total_memory"),
        "gpu_count": len(devices),
        "driver": driver_version,
        "driver_cuda": device_report.get("cuda_driver"),
        "cuda_runtime": device_report.get("cuda_runtime"),
        "cudnn": device_report.get("cudnn"),
        "cudnn_build": device_report.get("cudnn_build"),
        "torch": dict(torch_versions) if torch_versions else None,
        "cudnn_frontend": dict(frontend_versions) if frontend_versions else None,
        "ucudnn": ucudnn_version,
        "commit": commit,
        "python": python,
    }


# -- aggregation ----------------------------------------------------------------------------
def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive values; None for none."""
    values = list(values)
    if not values:
        return None
    if any(v <= 0 for v in values):
        raise ValueError(f"geometric mean needs positive values, got {min(values)}")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


@dataclasses.dataclass(frozen=True)
class Ratio:
    layer: str
    kernel: str
    value: float

    @property
    def label(self) -> str:
        return f"{self.layer} {self.kernel}"


@dataclasses.dataclass(frozen=True)
class RatioStats:
    """Geometric mean, largest and smallest of per-kernel ratios."""

    count: int
    geomean: float
    best: Ratio  # the largest ratio
    worst: Ratio  # the smallest ratio

    @classmethod
    def of(cls, ratios: Sequence[Ratio]) -> RatioStats | None:
        if not ratios:
            return None
        return cls(
            count=len(ratios),
            geomean=geomean(r.value for r in ratios),  # type: ignore[arg-type]
            best=max(ratios, key=lambda r: r.value),
            worst=min(ratios, key=lambda r: r.value),
        )


def configurations(
    measurements: Iterable[Mapping[str, object]],
) -> dict[Config, dict[KernelId, dict[str, Mapping[str, object]]]]:
    """Measurements grouped by configuration, then kernel, then method, in first-seen order.

    A record without a limit (ceiling, PyTorch) joins every limit of its network, dtype and
    layout.
    """
    limited: dict[Config, dict[KernelId, dict[str, Mapping[str, object]]]] = {}
    free: dict[tuple[str, str, str], dict[KernelId, dict[str, Mapping[str, object]]]] = {}
    for m in measurements:
        base = (str(m["network"]), str(m["dtype"]), str(m["layout"]))
        kernel_id = (str(m["layer"]), str(m["kernel"]))
        if m["limit_bytes"] is None:
            target = free.setdefault(base, {})
        else:
            target = limited.setdefault((*base, int(m["limit_bytes"])), {})  # type: ignore[call-overload]
        target.setdefault(kernel_id, {})[str(m["method"])] = m
    for config, kernels in limited.items():
        for kernel_id, methods in free.get(config[:3], {}).items():
            kernels.setdefault(kernel_id, {}).update(methods)
    return limited


def ratios(
    kernels: Mapping[KernelId, Mapping[str, Mapping[str, object]]], numerator: str, denominator: str
) -> list[Ratio]:
    """numerator time / denominator time for every kernel that has both."""
    found = []
    for (layer, kernel), methods in kernels.items():
        if numerator in methods and denominator in methods:
            num = float(methods[numerator]["measured_ms"])  # type: ignore[arg-type]
            den = float(methods[denominator]["measured_ms"])  # type: ignore[arg-type]
            found.append(Ratio(layer, kernel, num / den))
    return found


def totals(kernels: Mapping[KernelId, Mapping[str, Mapping[str, object]]]) -> dict[str, float]:
    """Sum of measured times per method, for methods measured on every kernel."""
    sums = {}
    for method in METHODS:
        times = [m[method]["measured_ms"] for m in kernels.values() if method in m]
        if times and len(times) == len(kernels):
            sums[method] = math.fsum(float(t) for t in times)  # type: ignore[arg-type]
    return sums


@dataclasses.dataclass(frozen=True)
class PredictionStats:
    count: int
    median_abs_error: float  # of (predicted - measured) / measured
    max_abs_error: float
    total_error: float  # of the sums


def prediction_stats(
    kernels: Mapping[KernelId, Mapping[str, Mapping[str, object]]], method: str
) -> PredictionStats | None:
    pairs = [
        (float(m[method]["predicted_ms"]), float(m[method]["measured_ms"]))  # type: ignore[arg-type]
        for m in kernels.values()
        if method in m and m[method].get("predicted_ms") is not None
    ]
    if not pairs:
        return None
    errors = [abs(p - m) / m for p, m in pairs]
    predicted, measured = math.fsum(p for p, _ in pairs), math.fsum(m for _, m in pairs)
    return PredictionStats(
        count=len(pairs),
        median_abs_error=statistics.median(errors),
        max_abs_error=max(errors),
        total_error=(predicted - measured) / measured,
    )


@dataclasses.dataclass(frozen=True)
class PredictionMiss:
    """A kernel whose measured time is off its prediction by more than LISTED_ERROR."""

    record: Mapping[str, object]  # the measurement
    error: float  # measured / predicted - 1
    causes: tuple[str, ...]  # what the recorded schedule shows to explain it, if anything


def prediction_misses(measurements: Iterable[Mapping[str, object]]) -> list[PredictionMiss]:
    """Every predicted kernel, in record order, whose |measured / predicted - 1| is over
    LISTED_ERROR."""
    misses = []
    for m in measurements:
        if m["method"] not in PREDICTED or m.get("predicted_ms") is None:
            continue
        error = float(m["measured_ms"]) / float(m["predicted_ms"]) - 1  # type: ignore[arg-type]
        if abs(error) > LISTED_ERROR:
            misses.append(PredictionMiss(m, error, known_causes(m)))
    return misses


def known_causes(measurement: Mapping[str, object]) -> tuple[str, ...]:
    """What the recorded schedule shows that makes the run differ from what was benchmarked:
    none without a schedule (runs before version 2)."""
    schedule: Mapping[str, object] | None = measurement.get("schedule")  # type: ignore[assignment]
    if not schedule:
        return ()
    steps: list[Mapping[str, object]] = schedule["steps"]  # type: ignore[assignment]
    causes = []
    if any(step["engine"] and step["beta"] == 1 for step in steps):
        # Only a split backward filter adds to its output (beta 1) after its first part.
        causes.append(
            "split backward filter of an engine configuration: its first part runs the "
            "beta-0 plan, the others the beta-1 plan (timed since the fast search of issue 36; "
            "before it, the beta-0 plan's time stood for every part)"
        )
    moved = [s for s in steps if s["alignment_bytes"] != s["benchmark_alignment_bytes"]]
    if moved:
        parts = ", ".join(
            dict.fromkeys(  # equal parts once
                f"{s['micro_batch']} at {s['alignment_bytes']} B "
                f"(benchmarked at {s['benchmark_alignment_bytes']} B)"
                for s in moved
            )
        )
        causes.append(f"parts run at another byte alignment than benchmarked: {parts}")
    return tuple(causes)


@dataclasses.dataclass(frozen=True)
class ConfigSummary:
    config: Config
    kernels: int
    speedups: dict[str, RatioStats | None]  # baseline time / method time, per method
    ceiling_gap: RatioStats | None  # WR time / ceiling time
    peer_over_wr: dict[str, RatioStats | None]  # peer time / WR time (>1: ucudnn faster)
    slower_than_baseline: dict[str, int]  # kernels where a ucudnn plan measured slower
    totals: dict[str, float]
    prediction: dict[str, PredictionStats | None]


def summarise(measurements: Iterable[Mapping[str, object]]) -> list[ConfigSummary]:
    summaries = []
    for config, kernels in configurations(measurements).items():
        speedups = {
            method: RatioStats.of(ratios(kernels, "baseline", method)) for method in COMPARED
        }
        summaries.append(
            ConfigSummary(
                config=config,
                kernels=len(kernels),
                speedups=speedups,
                ceiling_gap=RatioStats.of(ratios(kernels, "wr", "ceiling")),
                peer_over_wr={
                    peer: RatioStats.of(ratios(kernels, peer, "wr"))
                    for peer in ("pytorch", "frontend")
                },
                slower_than_baseline={
                    method: sum(r.value < 1 for r in ratios(kernels, "baseline", method))
                    for method in PLANNED
                },
                totals=totals(kernels),
                prediction={method: prediction_stats(kernels, method) for method in PLANNED},
            )
        )
    return summaries


# -- Markdown -------------------------------------------------------------------------------
def format_bytes(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def _x(stats: RatioStats | None) -> str:
    return "" if stats is None else f"{stats.geomean:.2f}x"


def _extreme(stats: RatioStats | None, which: str) -> str:
    if stats is None:
        return ""
    r: Ratio = getattr(stats, which)
    return f"{r.value:.2f}x {r.label}"


def _pct(value: float) -> str:
    return f"{value:+.1%}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _config_cells(config: Config) -> list[str]:
    network, dtype, layout, limit = config
    return [network, dtype, layout, format_bytes(limit)]


def render_markdown(run: Mapping[str, object]) -> str:
    """The summary of a run: headline ratios per configuration, totals, prediction error,
    benchmarking time and what was skipped."""
    env: Mapping[str, object] = run["environment"]  # type: ignore[assignment]
    settings: Mapping[str, object] = run["settings"]  # type: ignore[assignment]
    summaries = summarise(run["measurements"])  # type: ignore[arg-type]
    torch_v: Mapping[str, object] = env.get("torch") or {}  # type: ignore[assignment]
    frontend_v: Mapping[str, object] = env.get("cudnn_frontend") or {}  # type: ignore[assignment]
    lines = [
        f"# ucudnn GPU comparison {run['run_id']}",
        "",
        f"- GPU: {env.get('gpu')} (compute capability {env.get('compute_capability')}), "
        f"driver {env.get('driver')} (CUDA {env.get('driver_cuda')})",
        f"- CUDA runtime {env.get('cuda_runtime')}, cuDNN {env.get('cudnn')}; "
        f"PyTorch {torch_v.get('version', 'absent')} (cuDNN {torch_v.get('cudnn', '-')}); "
        f"cuDNN frontend {frontend_v.get('version', 'absent')}",
        f"- ucudnn {env.get('ucudnn')} at commit {env.get('commit')}",
        f"- policy {settings.get('policy')}, warm-up {settings.get('warmup')}, median of "
        f"{settings.get('repeats')} CUDA-event timings; benchmarking workspace cap "
        f"{format_bytes(int(settings.get('workspace_cap', 0)))}",  # type: ignore[call-overload]
        "- "
        + (
            "complete"
            if run.get("complete")
            else f"**incomplete**: {run.get('stopped') or 'stopped early'}"
        ),
        "",
        "Speedup = baseline time / method time per kernel (>1: faster than cuDNN's fastest "
        "single algorithm within the limit); geometric means over kernels. "
        "PyTorch/WR and frontend/WR are peer time / ucudnn WR time (>1: ucudnn faster).",
        "",
        "## Per configuration",
        "",
    ]
    header = ["network", "dtype", "layout", "limit", "kernels", "WR", "WR best", "WR worst"]
    header += ["WD limit x k", "WD limit", "ceiling", "WR/ceiling", "WR/ceiling max"]
    header += ["PyTorch/WR"]
    header += ["frontend/WR", "slower than baseline (WR, WD x k, WD)"]
    rows = []
    for s in summaries:
        gap = s.ceiling_gap
        row = [*_config_cells(s.config), str(s.kernels), _x(s.speedups["wr"])]
        row += [_extreme(s.speedups["wr"], "best"), _extreme(s.speedups["wr"], "worst")]
        row += [_x(s.speedups["wd_kernels"]), _x(s.speedups["wd_limit"])]
        # WR/ceiling above 1 is the gap to the unlimited ceiling; its largest is the worst.
        row += [_x(s.speedups["ceiling"]), _x(gap), _extreme(gap, "best")]
        row += [_x(s.peer_over_wr["pytorch"]), _x(s.peer_over_wr["frontend"])]
        row += [", ".join(str(s.slower_than_baseline[m]) for m in PLANNED)]
        rows.append(row)
    lines += _table(header, rows)

    lines += ["## Totals (sum of kernel times, ms)", ""]
    methods = ("baseline", *COMPARED)
    rows = [
        _config_cells(s.config) + [f"{s.totals[m]:.3f}" if m in s.totals else "" for m in methods]
        for s in summaries
    ]
    lines += _table(["network", "dtype", "layout", "limit", *methods], rows)

    lines += ["## Predicted vs measured (ucudnn plans)", ""]
    rows = []
    for s in summaries:
        for method in PLANNED:
            p = s.prediction[method]
            if p is not None:
                rows.append(
                    [
                        *_config_cells(s.config),
                        method,
                        str(p.count),
                        f"{p.median_abs_error:.1%}",
                        f"{p.max_abs_error:.1%}",
                        _pct(p.total_error),
                    ]
                )
    header = ["network", "dtype", "layout", "limit", "plan", "kernels", "median |error|"]
    lines += _table([*header, "max |error|", "error of total"], rows)

    lines += _misses_section(run["measurements"])  # type: ignore[arg-type]

    lines += ["## Benchmarking time (s)", ""]
    rows = [
        [
            *(str(b[k]) for k in ("network", "dtype", "layout", "kernels")),
            f"{float(b['first_use_s']):.1f}",  # type: ignore[arg-type]
            f"{float(b['cached_s']):.2f}",  # type: ignore[arg-type]
        ]
        for b in run.get("benchmark_times", [])  # type: ignore[attr-defined]
    ]
    header = ["network", "dtype", "layout", "kernels", "first use (empty cache)", "from cache"]
    lines += _table(header, rows)

    lines += _skipped_section(run.get("skipped", []), run.get("errors", []))  # type: ignore[arg-type]
    lines += ["Methods:", ""] + [f"- `{name}`: {text}" for name, text in METHODS.items()]
    return "\n".join(lines) + "\n"


def _misses_section(measurements: Sequence[Mapping[str, object]]) -> list[str]:
    """Every predicted kernel off by more than LISTED_ERROR, with its schedule and the cause
    where the record shows one."""
    predicted = sum(
        m["method"] in PREDICTED and m.get("predicted_ms") is not None for m in measurements
    )
    misses = prediction_misses(measurements)
    lines = [
        f"## Prediction errors over {LISTED_ERROR:.0%}",
        "",
        f"{len(misses)} of the {predicted} predicted kernels ({', '.join(PREDICTED)}) are "
        f"off by more than {LISTED_ERROR:.0%}; error = measured / predicted - 1 (above 0: "
        "slower than predicted). A cause is named where the recorded schedule shows one; runs "
        "before version 2 recorded none (—).",
        "",
    ]
    if not misses:
        return lines
    header = ["network", "dtype", "layout", "limit", "method", "layer", "kernel"]
    header += ["measured ms", "predicted ms", "error", "micro-batches", "algorithms", "cause"]
    rows = []
    for miss in misses:
        m = miss.record
        limit = m["limit_bytes"]
        schedule: Mapping[str, object] = m.get("schedule") or {}  # type: ignore[assignment]
        row = [str(m[k]) for k in ("network", "dtype", "layout")]
        row += [format_bytes(limit) if isinstance(limit, int) else "none"]
        row += [str(m[k]) for k in ("method", "layer", "kernel")]
        row += [f"{float(m[k]):.4g}" for k in ("measured_ms", "predicted_ms")]  # type: ignore[arg-type]
        row += [_pct(miss.error)]
        row += [str(schedule.get(k, "—")) for k in ("micro_batches", "algos")]
        row += ["; ".join(miss.causes) or "unknown"]
        rows.append(row)
    return [*lines, *_table(header, rows)]


def _skipped_section(
    skipped: Sequence[Mapping[str, object]], errors: Sequence[Mapping[str, object]]
) -> list[str]:
    """How many kernels each method skipped, with the first reason given."""
    if not skipped and not errors:
        return []
    lines = ["## Skipped and failed", ""]
    counts: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for s in skipped:
        method = str(s["method"])
        counts[method] = counts.get(method, 0) + 1
        reasons.setdefault(method, str(s["reason"]))
    lines += [f"- {m}: {n} kernel(s) skipped, e.g. {reasons[m]}" for m, n in counts.items()]
    lines += [f"- error in {e['step']}: {e['error']}" for e in errors]
    return [*lines, ""]
