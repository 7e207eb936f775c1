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
    def __reduce__(self) -> tuple[type[Self], tuple[int, str, str, str]]:
        return type(self), (self.code, self.name, self.call, self.description)


class NoDeviceError(CudaError):
    """No usable CUDA device: no driver, a driver too old, or no GPU."""

    def _message(self) -> str:
        return f"no usable CUDA device or driver: {super()._message()}"


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


def warn_caller(message: str, category: type[UcudnnWarning]) -> None:
    """Warn, naming the first frame outside this package: the user's call, however deep
    inside ucudnn the cause was found."""
    frame, level = sys._getframe(1), 2  # level 2: warn_caller's caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ReplanWarning(UcudnnWarning):
    """A WD Handle met a kernel after its network was planned, and planned the whole network
    again: register every kernel (or call `finalize`) before the first convolution."""


class WorkspaceFallbackWarning(UcudnnWarning):
    """The workspace a plan needs could not be allocated; plans that need less run instead."""


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
