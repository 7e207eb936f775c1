"""Exceptions raised for failed CUDA runtime and cuDNN calls, and the warnings ucudnn issues.

Pure Python: the native modules build these from a status code, the name of the failed call and
the library's own description, so every failure names what failed and why. Higher layers add the
problem's shape with `exc.add_note(problem.describe())`. Every warning is a `UcudnnWarning`, so
that users can filter them all, or one kind by its subclass.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Self

from ucudnn.core.checks import shown
from ucudnn.core.facts import cuda_version_string


class UcudnnError(Exception):
    """Base class of every error ucudnn raises on purpose."""


class CudaError(UcudnnError):
    """A CUDA runtime call returned an error code."""

    def __init__(self, code: int, name: str, call: str, description: str = "") -> None:
        self.code = code
        self.name = name
        self.call = call
        self.description = description
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"{self.call} failed: {self.name} ({self.code})"
        return f"{text}: {self.description}" if self.description else text

    # The default would call __init__ with the message only.
    def __reduce__(self) -> tuple[type[Self], tuple[object, ...]]:
        return type(self), (self.code, self.name, self.call, self.description)


class NoDeviceError(CudaError):
    """No usable CUDA device: no driver, a driver too old for the runtime, or no device visible.

    `reason` tells these apart, from the driver's and the runtime's CUDA versions (as
    cudaDriverGetVersion and cudaRuntimeGetVersion report them; None when unknown) and from
    CUDA_VISIBLE_DEVICES as the process had it (None when unset).
    """

    def __init__(
        self,
        code: int,
        name: str,
        call: str,
        description: str = "",
        driver_version: int | None = None,
        runtime_version: int | None = None,
        visible_devices: str | None = None,
    ) -> None:
        self.driver_version = driver_version
        self.runtime_version = runtime_version
        self.visible_devices = visible_devices
        super().__init__(code, name, call, description)

    @property
    def reason(self) -> str:
        """Why no device is usable, and what would fix it."""
        return no_device_reason(
            self.code, self.driver_version, self.runtime_version, self.visible_devices
        )

    def _message(self) -> str:
        return f"{self.reason} ({super()._message()})"

    def __reduce__(self) -> tuple[type[Self], tuple[object, ...]]:
        return type(self), (
            self.code,
            self.name,
            self.call,
            self.description,
            self.driver_version,
            self.runtime_version,
            self.visible_devices,
        )


VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def no_device_error(
    code: int, name: str, call: str, description: str, driver_version: int, runtime_version: int
) -> NoDeviceError:
    """The NoDeviceError for a failed call, with CUDA_VISIBLE_DEVICES as this process has it."""
    return NoDeviceError(
        code,
        name,
        call,
        description,
        driver_version,
        runtime_version,
        os.environ.get(VISIBLE_DEVICES),
    )


def no_device_reason(
    code: int,
    driver_version: int | None,
    runtime_version: int | None,
    visible_devices: str | None,
) -> str:
    """Why a call that failed with cudaError_t `code` found no usable device, and the fix.

    A driver version of 0 means that no driver could be loaded (cudaDriverGetVersion reports
    0 when libcuda.so.1 is missing); None means it is not known.
    """
    if code in _FIXED_REASONS:
        return _FIXED_REASONS[code]
    if driver_version == 0:
        return (
            "no NVIDIA driver is installed or loaded (libcuda.so.1 could not be loaded): "
            "install the NVIDIA driver, or run on a machine with an NVIDIA GPU"
        )
    if code == 35 and driver_version and runtime_version and driver_version < runtime_version:
        return _old_driver_reason(driver_version, runtime_version)
    if code == 100:  # cudaErrorNoDevice
        return _no_device_visible_reason(visible_devices)
    return "no usable CUDA device or driver"


# Codes whose cause the code alone says.
_FIXED_REASONS = {
    34: (  # cudaErrorStubLibrary
        "the CUDA driver stub library was loaded instead of the NVIDIA driver: remove the CUDA "
        "toolkit's stubs directory from LD_LIBRARY_PATH"
    ),
    46: (  # cudaErrorDevicesUnavailable
        "every CUDA device is busy or unavailable (in exclusive-process compute mode, another "
        "process may hold it)"
    ),
    803: (  # cudaErrorSystemDriverMismatch
        "the NVIDIA driver library does not match the loaded kernel module (a driver update "
        "without a reboot): reboot, or reinstall the driver"
    ),
    804: (  # cudaErrorCompatNotSupportedOnDevice
        "the CUDA forward-compatibility package is loaded, and this GPU does not support it: "
        "install an NVIDIA driver for the CUDA runtime instead"
    ),
}


def _old_driver_reason(driver_version: int, runtime_version: int) -> str:
    driver, runtime = cuda_version_string(driver_version), cuda_version_string(runtime_version)
    fix = f"install an NVIDIA driver for CUDA {runtime_version // 1000} or newer"
    driver_major = driver_version // 1000
    if 12 <= driver_major < runtime_version // 1000:  # ucudnn is built for CUDA 12 and 13
        fix += f", or ucudnn built for CUDA {driver_major} (pip install ucudnn-cu{driver_major})"
    return (
        f"the NVIDIA driver supports CUDA {driver}, older than the CUDA {runtime} runtime "
        f"ucudnn uses: {fix}"
    )


def _no_device_visible_reason(visible_devices: str | None) -> str:
    if visible_devices is None:
        return (
            "the NVIDIA driver sees no CUDA device on this machine; nvidia-smi -L lists the "
            "GPUs it sees"
        )
    return (
        f"no CUDA device is visible: {VISIBLE_DEVICES}={shown(visible_devices)} selects none "
        "of this machine's devices; unset it, or name a device that nvidia-smi -L lists"
    )


class CudaOutOfMemoryError(CudaError, MemoryError):
    """A device allocation failed."""


# cudaError_t codes that mean "there is no device to run on" rather than "this call was wrong".
NO_DEVICE_CODES = frozenset(
    {
        3,  # cudaErrorInitializationError
        34,  # cudaErrorStubLibrary: the driver stub, not a real driver, was loaded
        35,  # cudaErrorInsufficientDriver: no driver, or one older than the runtime
        46,  # cudaErrorDevicesUnavailable
        100,  # cudaErrorNoDevice
        803,  # cudaErrorSystemDriverMismatch
        804,  # cudaErrorCompatNotSupportedOnDevice
    }
)
CUDA_OUT_OF_MEMORY = 2  # cudaErrorMemoryAllocation


def cuda_error_class(code: int) -> type[CudaError]:
    """The exception class for a cudaError_t code."""
    if code in NO_DEVICE_CODES:
        return NoDeviceError
    if code == CUDA_OUT_OF_MEMORY:
        return CudaOutOfMemoryError
    return CudaError


class CudnnError(UcudnnError):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS."""

    def __init__(self, status: int, status_name: str, call: str, detail: str = "") -> None:
        self.status = status
        self.status_name = status_name
        self.call = call
        self.detail = detail  # cudnnGetLastErrorString at the time of the failure
        text = f"{call} failed: {status_name} ({status})"
        super().__init__(f"{text}: {detail}" if detail else text)

    # The default would call __init__ with the message only.
    def __reduce__(self) -> tuple[type[Self], tuple[int, str, str, str]]:
        return type(self), (self.status, self.status_name, self.call, self.detail)


class CudnnNotInitializedError(CudnnError):
    """cuDNN could not start, usually because there is no GPU or driver."""


class CudnnBadParamError(CudnnError, ValueError):
    """cuDNN rejected an argument (CUDNN_STATUS_BAD_PARAM and its sub-codes)."""


class CudnnNotSupportedError(CudnnError):
    """The configuration is valid but this cuDNN build or device cannot run it."""


class CudnnAllocFailedError(CudnnError, MemoryError):
    """cuDNN could not allocate host or device memory."""


class CudnnExecutionFailedError(CudnnError):
    """A kernel launched by cuDNN failed on the device."""


# cuDNN 9 statuses are category * 1000 + a specific code (CUDNN_STATUS_CATEGORY in cudnn_graph.h).
_CUDNN_CATEGORY_CLASSES: dict[int, type[CudnnError]] = {
    2000: CudnnBadParamError,
    3000: CudnnNotSupportedError,
    5000: CudnnExecutionFailedError,
}
_CUDNN_STATUS_CLASSES: dict[int, type[CudnnError]] = {
    1001: CudnnNotInitializedError,  # CUDNN_STATUS_NOT_INITIALIZED
    4003: CudnnAllocFailedError,  # CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED
    4004: CudnnAllocFailedError,  # CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
}


def cudnn_error_class(status: int) -> type[CudnnError]:
    """The exception class for a cudnnStatus_t value."""
    if status in _CUDNN_STATUS_CLASSES:
        return _CUDNN_STATUS_CLASSES[status]
    return _CUDNN_CATEGORY_CLASSES.get(status // 1000 * 1000, CudnnError)


class CacheError(UcudnnError, ValueError):
    """A file given as ucudnn's benchmark cache belongs to something else (another program's
    SQLite database, or not a database at all): ucudnn refuses it and changes nothing."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path} is not a ucudnn benchmark cache ({reason}); ucudnn neither uses nor changes "
            "it. Give ucudnn another path (UCUDNN_DATABASE) or move that file away"
        )

    # The default would call __init__ with the message only.
    def __reduce__(self) -> tuple[type[Self], tuple[str, str]]:
        return type(self), (self.path, self.reason)


class LibraryNotFoundError(UcudnnError, ImportError):
    """cuDNN or the CUDA runtime could not be loaded from any place searched; `attempts` says
    what was tried, in order, and why each failed."""

    def __init__(self, library: str, soname: str, attempts: list[str], hint: str) -> None:
        self.library = library
        self.soname = soname
        self.attempts = list(attempts)
        self.hint = hint
        tried = "".join(f"\n  {attempt}" for attempt in attempts)
        super().__init__(f"cannot load {library} ({soname}); tried, in order:{tried}\n{hint}")

    # The default would call __init__ with the message only.
    def __reduce__(self) -> tuple[type[Self], tuple[str, str, list[str], str]]:
        return type(self), (self.library, self.soname, self.attempts, self.hint)


class UcudnnWarning(UserWarning):
    """Base class of every warning ucudnn issues: filter them all with this category, or one
    kind with its subclass."""


def warn_caller(
    message: str, category: type[UcudnnWarning], also_inside: tuple[str, ...] = ()
) -> None:
    """Warn, naming the first frame outside this package (and outside the directories
    `also_inside`, say a framework's that calls ucudnn): the user's call, however deep inside
    ucudnn the cause was found."""
    inside = (_PACKAGE_DIR, *also_inside)
    frame, level = sys._getframe(1), 2  # level 2: warn_caller's caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ReplanWarning(UcudnnWarning):
    """A WD Handle met a kernel after its network was planned, and planned the whole network
    again: register every kernel (or call `finalize`) before the first convolution."""


class WorkspaceFallbackWarning(UcudnnWarning):
    """The workspace a plan needs could not be allocated, or a plan's legacy part needs more
    than the plan gives it; plans or algorithms that need less run instead."""


class SlowPlanWarning(UcudnnWarning):
    """A plan is predicted slower than its baseline, the undivided runs under the same limit:
    a WD solver stopped by its time limit before it found a better plan."""


class SolverWarning(UcudnnWarning):
    """The ILP solver asked for could not be loaded, and another one solves instead."""


class CacheWarning(UcudnnWarning):
    """The benchmark cache could not be used as asked (it cannot be opened or written, a read
    or write failed, or it was corrupt and replaced); measurements are kept in memory."""


class EngineFallbackWarning(UcudnnWarning):
    """A graph-API engine configuration could not build or run a part at run time; a legacy
    algorithm ran it instead, with the same result."""


class TorchFallbackWarning(UcudnnWarning):
    """A converted PyTorch layer got tensors ucudnn cannot take (not on a CUDA device, outside
    the simulated device), and ran PyTorch's own convolution instead; said once per process."""


class UnplannedNetworkWarning(UcudnnWarning):
    """A converted PyTorch model in WD mode ran before `ucudnn.torch.plan(model, example)`: its
    kernels are planned as they appear, each new one planning the whole network again."""
