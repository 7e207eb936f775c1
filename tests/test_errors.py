"""ucudnn.errors: status/code -> class mapping, messages, pickling."""

from __future__ import annotations

import pickle

import pytest

from ucudnn import errors


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (1001, errors.CudnnNotInitializedError),
        (1002, errors.CudnnError),  # SUBLIBRARY_VERSION_MISMATCH: no dedicated class
        (2000, errors.CudnnBadParamError),
        (2002, errors.CudnnBadParamError),  # BAD_PARAM_NULL_POINTER
        (2012, errors.CudnnBadParamError),
        (3000, errors.CudnnNotSupportedError),
        (3007, errors.CudnnNotSupportedError),  # NOT_SUPPORTED_ARCH_MISMATCH
        (4000, errors.CudnnError),  # INTERNAL_ERROR
        (4003, errors.CudnnAllocFailedError),  # host allocation
        (4004, errors.CudnnAllocFailedError),  # device allocation
        (5000, errors.CudnnExecutionFailedError),
        (5003, errors.CudnnExecutionFailedError),  # EXECUTION_FAILED_CUDART
    ],
)
def test_cudnn_status_maps_to_class(status: int, cls: type) -> None:
    assert errors.cudnn_error_class(status) is cls


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (1, errors.CudaError),  # cudaErrorInvalidValue
        (2, errors.CudaOutOfMemoryError),
        (34, errors.NoDeviceError),  # stub library
        (35, errors.NoDeviceError),  # insufficient driver
        (100, errors.NoDeviceError),  # no device
        (700, errors.CudaError),  # illegal address: a real error, not "no device"
    ],
)
def test_cuda_code_maps_to_class(code: int, cls: type) -> None:
    assert errors.cuda_error_class(code) is cls


def test_classes_are_also_the_builtin_kinds_callers_expect() -> None:
    assert issubclass(errors.CudnnBadParamError, ValueError)
    assert issubclass(errors.CudnnAllocFailedError, MemoryError)
    assert issubclass(errors.CudaOutOfMemoryError, MemoryError)
    assert issubclass(errors.NoDeviceError, errors.CudaError)
    for cls in (errors.CudaError, errors.CudnnError, errors.CudnnNotSupportedError):
        assert issubclass(cls, errors.UcudnnError)


def test_cudnn_error_names_call_status_and_detail() -> None:
    exc = errors.CudnnBadParamError(2000, "CUDNN_STATUS_BAD_PARAM", "cudnnSetX", "stride 0")
    assert (exc.status, exc.status_name, exc.call, exc.detail) == (
        2000,
        "CUDNN_STATUS_BAD_PARAM",
        "cudnnSetX",
        "stride 0",
    )
    assert str(exc) == "cudnnSetX failed: CUDNN_STATUS_BAD_PARAM (2000): stride 0"
    assert str(errors.CudnnError(4000, "CUDNN_STATUS_INTERNAL_ERROR", "cudnnY")) == (
        "cudnnY failed: CUDNN_STATUS_INTERNAL_ERROR (4000)"
    )


def test_no_device_error_says_why_then_what_failed() -> None:
    exc = errors.NoDeviceError(
        35, "cudaErrorInsufficientDriver", "cudaGetDeviceCount", "insufficient", 0, 13000
    )
    assert str(exc) == (
        f"{exc.reason} (cudaGetDeviceCount failed: cudaErrorInsufficientDriver (35): insufficient)"
    )
    assert exc.reason.startswith("no NVIDIA driver is installed or loaded")
    assert (exc.code, exc.name, exc.description) == (
        35,
        "cudaErrorInsufficientDriver",
        "insufficient",
    )
    assert (exc.driver_version, exc.runtime_version, exc.visible_devices) == (0, 13000, None)


OLD_DRIVER = "the NVIDIA driver supports CUDA 12.2, older than the CUDA 13.0 runtime ucudnn uses"
HIDDEN = "no CUDA device is visible: CUDA_VISIBLE_DEVICES={} selects none of this machine's devices"


@pytest.mark.parametrize(
    ("code", "driver", "runtime", "visible", "expected"),
    [
        # No driver: cudaDriverGetVersion reports 0, and the runtime says "insufficient".
        (35, 0, 13000, None, "no NVIDIA driver is installed or loaded (libcuda.so.1 could not"),
        (3, 0, 13000, None, "no NVIDIA driver is installed or loaded"),
        (35, 12020, 13000, None, OLD_DRIVER),
        (100, 13000, 13000, None, "the NVIDIA driver sees no CUDA device on this machine"),
        (100, 13000, 13000, "", HIDDEN.format("''")),
        (100, 13000, 13000, "-1", HIDDEN.format("'-1'")),
        (34, 13000, 13000, None, "the CUDA driver stub library was loaded"),
        (46, 13000, 13000, None, "every CUDA device is busy or unavailable"),
        (803, 13000, 13000, None, "the NVIDIA driver library does not match the loaded kernel"),
        (35, None, None, None, "no usable CUDA device or driver"),  # versions unknown
        (35, 13050, 13000, None, "no usable CUDA device or driver"),  # the driver is not older
    ],
)
def test_no_device_reason_tells_the_cases_apart(
    code: int, driver: int | None, runtime: int | None, visible: str | None, expected: str
) -> None:
    assert errors.no_device_reason(code, driver, runtime, visible).startswith(expected)


@pytest.mark.parametrize(
    ("driver", "runtime", "fix"),
    [
        (
            12020,
            13000,
            "install an NVIDIA driver for CUDA 13 or newer, or ucudnn built for CUDA 12 "
            "(pip install ucudnn-cu12)",
        ),
        (11080, 12040, "install an NVIDIA driver for CUDA 12 or newer"),  # no ucudnn-cu11
    ],
)
def test_a_driver_too_old_names_both_versions_and_the_fixes(
    driver: int, runtime: int, fix: str
) -> None:
    reason = errors.no_device_reason(35, driver, runtime, None)
    assert reason.endswith(f"runtime ucudnn uses: {fix}")


def test_no_device_error_takes_cuda_visible_devices_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    exc = errors.no_device_error(100, "cudaErrorNoDevice", "cudaGetDeviceCount", "", 13000, 13000)
    assert exc.visible_devices == ""
    assert str(exc).startswith(HIDDEN.format("''"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    exc = errors.no_device_error(100, "cudaErrorNoDevice", "cudaGetDeviceCount", "", 13000, 13000)
    assert exc.visible_devices is None


@pytest.mark.parametrize(
    "exc",
    [
        errors.CudnnBadParamError(2000, "CUDNN_STATUS_BAD_PARAM", "cudnnSetX", "why"),
        errors.CudaOutOfMemoryError(2, "cudaErrorMemoryAllocation", "cudaMalloc", "oom"),
        errors.NoDeviceError(100, "cudaErrorNoDevice", "cudaGetDeviceCount"),
        errors.NoDeviceError(35, "cudaErrorInsufficientDriver", "cudaGetDevice", "", 12020, 13000),
        errors.NoDeviceError(100, "cudaErrorNoDevice", "cudaGetDevice", "", 13000, 13000, "-1"),
    ],
)
def test_errors_survive_pickling(exc: errors.UcudnnError) -> None:
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc)
    assert str(copy) == str(exc)
    assert vars(copy) == vars(exc)
