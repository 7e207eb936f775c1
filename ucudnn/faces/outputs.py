"""The JSON documents `ucudnn COMMAND --json` prints, built from what the command found.

Each builder returns its document's type, whose fields `ucudnn.faces.formats` declares. The
builders take plain results and touch no device, so they are tested on a CPU with real data
objects; the commands print them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import ucudnn
from ucudnn.core.build import distribution
from ucudnn.faces import formats
from ucudnn.faces.info import unusable_reason
from ucudnn.faces.report import timing_totals

if TYPE_CHECKING:  # none is needed at run time; the runtime's would load native modules
    from ucudnn.core.device import InfoReport
    from ucudnn.core.facts import DeviceFacts
    from ucudnn.planner.cache import CacheReport
    from ucudnn.planner.plan import Plan
    from ucudnn.planner.policies import Policy
    from ucudnn.planner.tables import TimingTables
    from ucudnn.planner.tune import TunePoint, TuneResult
    from ucudnn.runtime.check import CheckResult
    from ucudnn.runtime.engines_setting import EnginesSetting
    from ucudnn.runtime.measure import KernelTiming


def policy_value(policy: Policy) -> str | list[int]:
    """A policy as documents hold it: its name, or its sizes as a list."""
    return policy if isinstance(policy, str) else list(policy)


def info_document(
    report: InfoReport, problems: Sequence[str], cache: CacheReport, engines: EnginesSetting
) -> formats.InfoDocument:
    """ucudnn-info: what `device.info()` reports, the bad settings, the cache as found, and
    the engines' setting in effect."""
    stats = cache.stats
    return {
        "format": "ucudnn-info",
        "version": 1,
        "ucudnn_version": ucudnn.__version__,
        "distribution": distribution(),
        "native_loaded": report["native"],
        "cudnn_version": report.get("cudnn"),
        "cudnn_build_version": report.get("cudnn_build"),
        "cuda_runtime_version": report.get("cuda_runtime"),
        "cuda_driver_version": report.get("cuda_driver"),
        "libraries": [
            {
                "name": library["name"],
                "soname": library["soname"],
                "path": library["path"],
                "found_by": library["found_by"],
                "distribution": library["distribution"],
            }
            for library in report.get("libraries", [])
        ],
        "devices": [
            {
                "index": d["index"],
                "name": d["name"],
                "compute_capability": d["compute_capability"],
                "total_memory_bytes": d["total_memory"],
                "multiprocessor_count": d["multiprocessor_count"],
                "uuid": d["uuid"],
                "pci_bus_id": d["pci_bus_id"],
            }
            for d in report["devices"]
        ],
        "unusable_reason": unusable_reason(report),
        "configuration_problems": list(problems),
        "engines": {
            "enabled": engines.enabled,
            "source": engines.source,
            "reason": engines.reason,
        },
        "cache": {
            "path": cache.path,
            "state": "ready" if stats else "unusable" if cache.problem else "absent",
            "problem": cache.problem or None,
            "measured_problem_sizes": stats.sets if stats else None,
            "rows": stats.measurements if stats else None,
            "file_bytes": stats.file_bytes if stats else None,
        },
    }


def bench_document(
    network: formats.NetworkGiven,
    policy: Policy,
    kernels: int,
    counts: Mapping[str, int],
    elapsed_s: float,
    export_path: str | None,
    facts: DeviceFacts,
    tables: TimingTables,
) -> formats.BenchDocument:
    """ucudnn-bench: what was measured for `network`, and the timings themselves."""
    return {
        "format": "ucudnn-bench",
        "version": 1,
        **network,
        "policy": policy_value(policy),
        "kernels": kernels,
        "problem_sizes_measured": counts["measured"],
        "problem_sizes_cached": counts["cached"],
        "elapsed_s": elapsed_s,
        "export_path": export_path,
        "device": facts.to_dict(),
        "timings": tables.to_document(),  # the ucudnn-timings document, as written
    }


def run_document(
    network: formats.NetworkGiven,
    repeats: int,
    timings: Sequence[KernelTiming],
    checks: Sequence[CheckResult] | None,
    plan: Plan,
) -> formats.RunDocument:
    """ucudnn-run: each kernel's predicted and measured times, the comparisons with undivided
    runs when there were any (`checks`), and the plan that ran."""
    totals = timing_totals(timings)
    return {
        "format": "ucudnn-run",
        "version": 1,
        **network,
        "mode": plan.mode,
        "limit_bytes": plan.limit_bytes,
        "policy": policy_value(plan.policy),
        "repeats": repeats,
        "kernels": [
            {
                "layer": t.layer,
                "kernel": t.kernel,
                "predicted_ms": t.predicted_ms,
                "measured_ms": t.measured_ms,
                "baseline_predicted_ms": t.baseline_predicted_ms,
                "baseline_measured_ms": t.baseline_measured_ms,
                "speedup": t.speedup,
            }
            for t in timings
        ],
        "totals": {
            "predicted_ms": totals.predicted_ms,
            "measured_ms": totals.measured_ms,
            "baseline_measured_ms": totals.baseline_measured_ms,
            "speedup": totals.speedup,
            "prediction_error": totals.prediction_error,
        },
        "check": None if checks is None else _check_part(checks),
        "plan": plan.to_dict(),
    }


def _check_part(checks: Sequence[CheckResult]) -> formats.Comparison:
    return {
        "passed": all(c.ok for c in checks),
        "results": [
            {
                "layer": c.layer,
                "kernel": c.kernel,
                "normalised_l2_distance": c.distance,
                "bound": c.tolerance,
                "within_bound": c.ok,
            }
            for c in checks
        ],
    }


def plot_document(layer: str, paths: Sequence[Path]) -> formats.PlotDocument:
    """ucudnn-plot: the files written, each named by what it shows (its file name's stem)."""
    return {
        "format": "ucudnn-plot",
        "version": 1,
        "layer": layer,
        "files": [{"kind": path.stem, "path": str(path)} for path in paths],
    }


def numpy_check_part(
    x_shape: Sequence[int], w_shape: Sequence[int], y_shape: Sequence[int], distance: float
) -> formats.NumpyCheck:
    """The demo's numpy convolution: its shapes, and how far micro-batching moved the result."""
    return {
        "x_shape": list(x_shape),
        "w_shape": list(w_shape),
        "y_shape": list(y_shape),
        "normalised_l2_distance": distance,
    }


def demo_document(
    network: str,
    batch: int,
    workspace_limit_bytes: int,
    info: formats.InfoDocument,
    *,
    numpy_check: formats.NumpyCheck | None = None,
    run: formats.RunDocument | None = None,
    model_plans: tuple[Plan, Plan] | None = None,
) -> formats.DemoDocument:
    """ucudnn-demo: on a GPU the numpy check and the run, without one the model's plans (wr,
    wd)."""
    return {
        "format": "ucudnn-demo",
        "version": 1,
        "network": network,
        "batch": batch,
        "workspace_limit_bytes": workspace_limit_bytes,
        "info": info,
        "gpu": run is not None,
        "numpy_check": numpy_check,
        "run": run,
        "model_plans": None
        if model_plans is None
        else {"wr": model_plans[0].to_dict(), "wd": model_plans[1].to_dict()},
    }


def tune_document(
    network: formats.NetworkGiven, result: TuneResult, plot: Path | None
) -> formats.TuneDocument:
    """ucudnn-tune: the chosen batch and its plan, the memory model and the whole curve."""
    best, model = result.best, result.model
    assert best.plan is not None  # the best point fits
    return {
        "format": "ucudnn-tune",
        "version": 1,
        "network": network["network"],
        "dtype": network["dtype"],
        "layout": network["layout"],
        "batch": best.batch,
        "samples_per_s": best.samples_per_s,
        "time_ms": best.plan.time_ms,
        "memory_bytes": result.memory_bytes,
        "table_batch": result.table_batch,
        "timings_source": result.timings_source,
        "memory_model": {
            "weights_bytes": model.weights_bytes,
            "activations_per_sample_bytes": model.activations_per_sample,
            "gradients_per_sample_bytes": model.gradients_per_sample,
            "overhead_bytes": model.overhead.fixed_bytes,
            "overhead_per_sample_fraction": float(model.overhead.per_sample),
        },
        "curve": [_tune_point(point) for point in result.points],
        "plan": best.plan.to_dict(),
        "plot_path": None if plot is None else str(plot),
    }


def _tune_point(point: TunePoint) -> formats.TunePoint:
    return {
        "batch": point.batch,
        "status": point.status,
        "measured_undivided": point.measured,
        "time_ms": point.time_ms,
        "samples_per_s": point.samples_per_s,
        "memory": None if point.step is None else point.step.to_dict(),
        "minimum_memory": point.minimum.to_dict(),
    }
