"""Which driver, CUDA runtime, cuDNN and devices this process sees.

Works on machines without a GPU or driver: `devices()` is then empty and `info()` says why.
`info()` also reports, instead of raising, when the native modules themselves do not import.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Required, TypedDict

from ucudnn.core.facts import DeviceFacts, cuda_version_string, cudnn_version_string
from ucudnn.core.libraries import LoadedLibrary, owning_distribution
from ucudnn.errors import NoDeviceError, UcudnnError


@dataclasses.dataclass(frozen=True)
class Device:
    """One CUDA device as cudaGetDeviceProperties describes it."""

    index: int
    name: str
    compute_capability: str  # "9.0"
    total_memory: int  # bytes
    multiprocessor_count: int
    uuid: str  # "GPU-…", as nvidia-smi prints it
    pci_bus_id: str


def versions() -> dict[str, int]:
    """Raw version numbers; cuda_driver is 0 when no driver is loaded.

    Raises ImportError when the native modules cannot be loaded.
    """
    from ucudnn._native import _cuda, _cudnn

    return {
        "cudnn": _cudnn.version(),
        "cudnn_build": _cudnn.build_version(),
        "cudnn_cudart": _cudnn.cudart_version(),
        "cuda_runtime": _cuda.runtime_version(),
        "cuda_driver": _cuda.driver_version(),
    }


def devices() -> list[Device]:
    """Every visible CUDA device; empty when there is no driver or no device."""
    from ucudnn._native import _cuda

    try:
        count = _cuda.device_count()
    except NoDeviceError:
        return []
    return [_device(index) for index in range(count)]


def _device(index: int) -> Device:
    from ucudnn._native import _cuda

    props = _cuda.device_properties(index)
    return Device(
        index=index,
        name=props["name"],
        compute_capability=f"{props['major']}.{props['minor']}",
        total_memory=props["total_memory"],
        multiprocessor_count=props["multiprocessor_count"],
        uuid=props["uuid"],
        pci_bus_id=props["pci_bus_id"],
    )


def device_facts(device: int | None = None) -> DeviceFacts:
    """What plans and measurements on `device` (default: the current one) depend on.

    Raises NoDeviceError when there is no usable device.
    """
    from ucudnn._native import _cuda, _cudnn

    found = _device(_cuda.get_device() if device is None else device)
    return DeviceFacts(
        device_name=found.name,
        compute_capability=found.compute_capability,
        cudnn_version=_cudnn.version(),
        cuda_version=_cuda.runtime_version(),
    )


class InfoReport(TypedDict, total=False):
    """What `info()` returns; the versions and libraries only when the native modules load."""

    native: Required[bool]
    simulated: bool  # the native modules are the simulated device's (UCUDNN_DEVICE=sim)
    devices: Required[list[dict[str, Any]]]  # each a Device as a dict
    reason: Required[str | None]  # why no device is usable; None when one is
    # Each a LoadedLibrary as a dict, plus "distribution": the pip distribution that owns the
    # file, None for a system library (and for the simulated device's).
    libraries: list[dict[str, Any]]
    cudnn: str
    cudnn_build: str
    cuda_runtime: str
    cuda_driver: str | None  # None without a driver


def _library_report(library: LoadedLibrary, simulated: bool) -> dict[str, Any]:
    owner = None if simulated else owning_distribution(library.path)
    return {**dataclasses.asdict(library), "distribution": owner}


def info() -> InfoReport:
    """Versions and devices as plain data, with `reason` saying why no device is usable.

    Never raises for a missing driver, device or native module: that is what it reports.
    """
    try:
        numbers = versions()
    except ImportError as exc:
        return {"native": False, "devices": [], "reason": f"native modules did not import: {exc}"}
    from ucudnn._native import LIBRARIES, SIMULATED

    report: InfoReport = {
        "native": True,
        "simulated": SIMULATED,
        "libraries": [_library_report(library, SIMULATED) for library in LIBRARIES],
        "cudnn": cudnn_version_string(numbers["cudnn"]),
        "cudnn_build": cudnn_version_string(numbers["cudnn_build"]),
        "cuda_runtime": cuda_version_string(numbers["cuda_runtime"]),
        "cuda_driver": cuda_version_string(numbers["cuda_driver"])
        if numbers["cuda_driver"]
        else None,
        "devices": [],
        "reason": None,
    }
    from ucudnn._native import _cuda

    try:
        count = _cuda.device_count()
        report["devices"] = [dataclasses.asdict(_device(index)) for index in range(count)]
    except NoDeviceError as exc:
        report["reason"] = f"{exc.reason} ({exc.name})"
    except UcudnnError as exc:
        report["reason"] = str(exc)
    return report
