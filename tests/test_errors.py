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


def test_no_device_error_says_so() -> None:
    exc = errors.NoDeviceError(35, "cudaErrorInsufficientDriver", "cudaGetDeviceCount", "old")
    assert str(exc).startswith("no usable CUDA device or driver: cudaGetDeviceCount failed")
    assert (exc.code, exc.name, exc.description) == (35, "cudaErrorInsufficientDriver", "old")


@pytest.mark.parametrize(
    "exc",
    [
        errors.CudnnBadParamError(2000, "CUDNN_STATUS_BAD_PARAM", "cudnnSetX", "why"),
        errors.CudaOutOfMemoryError(2, "cudaErrorMemoryAllocation", "cudaMalloc", "oom"),
        errors.NoDeviceError(100, "cudaErrorNoDevice", "cudaGetDeviceCount"),
    ],
)
def test_errors_survive_pickling(exc: errors.UcudnnError) -> None:
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc)
    assert str(copy) == str(exc)
    assert vars(copy) == vars(exc)
