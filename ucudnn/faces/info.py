"""What `ucudnn info` prints, and the one question commands ask first: is there a GPU?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ucudnn
from ucudnn.core import device
from ucudnn.planner.units import format_size

if TYPE_CHECKING:
    from ucudnn.runtime.engines_setting import EnginesSetting


def unusable_reason(report: device.InfoReport | None = None) -> str | None:
    """None when a CUDA device is there to use, else why not (driver, device, library); from
    `report` when given, else from a fresh `device.info()`."""
    if report is None:
        report = device.info()
    if report["reason"]:
        return str(report["reason"])
    if not report["devices"]:
        return "no CUDA device found"
    return None


def _library_line(library: dict[str, Any], simulated: bool) -> str:
    """Which file, which rule found it, and who installed it."""
    where = f"{library['soname']}: {library['path']} (found by {library['found_by']}"
    if simulated:
        return f"{where})"
    owner = library["distribution"]
    installer = f"pip package {owner}" if owner else "system library, not a pip package"
    return f"{where}; {installer})"


def info_text(engines: EnginesSetting) -> str:
    """Library, cuDNN, CUDA runtime and driver versions, the devices or why none, then whether
    benchmarks measure engine configurations (`engines`) and why."""
    lines = [
        f"ucudnn {ucudnn.__version__}",
        *_found_lines(device.info()),
        f"graph-API engines: {engines.describe()}",
    ]
    return "\n".join(lines)


def _found_lines(report: device.InfoReport) -> list[str]:
    """The versions, libraries and devices found, or why the native modules did not load."""
    if not report["native"]:
        return [f"native modules: not loaded ({report['reason']})"]
    lines = []
    if report.get("simulated"):
        lines.append(
            "SIMULATED DEVICE (UCUDNN_DEVICE=sim): a test double in Python, not a GPU; its "
            "times come from tables and a model, never from hardware"
        )
    driver = f"supports CUDA {report['cuda_driver']}" if report["cuda_driver"] else "none"
    lines.append(
        f"cuDNN {report['cudnn']} (built against {report['cudnn_build']}), "
        f"CUDA runtime {report['cuda_runtime']}, NVIDIA driver: {driver}"
    )
    lines += [
        _library_line(library, report.get("simulated", False)) for library in report["libraries"]
    ]
    if report["reason"] or not report["devices"]:
        lines.append(f"devices: none ({report['reason'] or 'no CUDA device found'})")
    for d in report["devices"]:
        lines.append(
            f"device {d['index']}: {d['name']}, compute capability {d['compute_capability']}, "
            f"{format_size(d['total_memory'])}, {d['multiprocessor_count']} SMs"
        )
    return lines
