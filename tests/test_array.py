"""ucudnn.core.array: DeviceArray validation, views, __cuda_array_interface__, bfloat16."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ucudnn.core import array as array_module
from ucudnn.core.array import DTYPES, DeviceArray, host_dtype, itemsize
from ucudnn.errors import NoDeviceError


class Exporter:
    """Any object exposing a __cuda_array_interface__ dict."""

    def __init__(self, interface: object) -> None:
        self.__cuda_array_interface__ = interface


_DROP = object()


def _interface(**changes: object) -> dict:
    """A valid interface dict with some entries changed (or dropped with _DROP)."""
    cai = {"shape": (2, 3), "typestr": "<f4", "data": (0x10000, False), "version": 3}
    cai.update(changes)
    return {key: value for key, value in cai.items() if value is not _DROP}


def _has_device() -> bool:
    from ucudnn._native import _cuda

    try:
        return _cuda.device_count() > 0
    except NoDeviceError:
        return False


# --- dtypes and bfloat16 ---------------------------------------------------------------------


def test_dtype_tables() -> None:
    assert set(DTYPES) >= {"float16", "bfloat16", "float32", "float64"}
    assert [itemsize(d) for d in ("float16", "bfloat16", "float32", "float64")] == [2, 2, 4, 8]
    assert host_dtype("bfloat16") == ml_dtypes.bfloat16
    assert host_dtype("float16") == np.float16
    with pytest.raises(ValueError, match="unsupported dtype 'complex64'"):
        itemsize("complex64")


def test_bfloat16_is_converted_by_ml_dtypes_only() -> None:
    """The hand-written float32 <-> bit pattern conversions are gone: `astype` does both."""
    assert not hasattr(array_module, "bfloat16_bits")
    assert not hasattr(array_module, "bfloat16_values")


# --- construction and views ------------------------------------------------------------------


def test_defaults_are_c_contiguous() -> None:
    array = DeviceArray(0x1000, (2, 3, 4), "float32", owner="keeper", device=0)
    assert array.strides == (48, 16, 4)
    assert array.element_strides == (12, 4, 1)
    assert (array.ndim, array.size, array.nbytes, array.itemsize) == (3, 24, 96, 4)
    assert array.is_c_contiguous
    assert array.owner == "keeper"
    assert not DeviceArray(0x1000, (2, 3, 4), "float32", (48, 4, 12)).is_c_contiguous
    assert DeviceArray(0x1000, (2, 1, 4), "float32", (16, 999 * 4, 4)).is_c_contiguous
    assert DeviceArray(0, (0, 3), "float32", (4, 4)).is_c_contiguous


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0x1000, (2, -1), "float32"), ValueError, "negative extents"),
        ((0x1000, (2, 2.0), "float32"), TypeError, "shape must be a tuple of ints"),
        ((0x1000, "22", "float32"), TypeError, "shape must be a tuple of ints"),
        ((0x1000, (2, 3), "float24"), ValueError, "unsupported dtype 'float24'"),
        ((0x1000, (2, 3), "float32", (12,)), ValueError, "do not match shape"),
        ((0x1000, (2, 3), "float32", (12, 2)), ValueError, "multiples of the 4-byte"),
        ((0x1000, (2, 3), "float32", (-12, 4)), ValueError, "non-negative multiples"),
        ((0x1002, (2, 3), "float32"), ValueError, "not a 4-byte aligned"),
        ((-4, (2, 3), "float32"), ValueError, "aligned device address"),
        ((0, (2, 3), "float32"), ValueError, "ptr is 0 but the array has 6 elements"),
        ((1.0, (2, 3), "float32"), TypeError, "ptr must be an int device address"),
    ],
)
def test_constructor_validation(args, error, message) -> None:
    with pytest.raises(error, match=message):
        DeviceArray(*args)


def test_slice_batch_is_a_view() -> None:
    array = DeviceArray(0x1000, (8, 3, 2), "float16", owner="buffer", device=1, stream=5)
    part = array.slice_batch(2, 5)
    assert part.ptr == 0x1000 + 2 * 12
    assert (part.shape, part.strides, part.dtype) == ((3, 3, 2), (12, 4, 2), "float16")
    assert (part.owner, part.device, part.stream) == (array, 1, 5)
    assert array.slice_batch(8, 8).shape == (0, 3, 2)
    for start, stop in ((-1, 2), (3, 2), (0, 9)):
        with pytest.raises(ValueError, match="outside 0:8"):
            array.slice_batch(start, stop)


# --- __cuda_array_interface__ ----------------------------------------------------------------


def test_interface_export() -> None:
    array = DeviceArray(0x2000, (2, 3), "float32", readonly=True)
    assert array.__cuda_array_interface__ == {
        "shape": (2, 3),
        "typestr": "<f4",
        "data": (0x2000, True),
        "version": 3,
        "strides": None,
        "stream": 1,  # our stream 0 is the legacy default stream, spelled 1 in the interface
    }
    strided = DeviceArray(0x2000, (2, 3), "float64", (8, 16), stream=0x7F00)
    cai = strided.__cuda_array_interface__
    assert (cai["typestr"], cai["strides"], cai["stream"]) == ("<f8", (8, 16), 0x7F00)
    with pytest.raises(TypeError, match="bfloat16 has no __cuda_array_interface__ typestr"):
        _ = DeviceArray(0x2000, (2,), "bfloat16").__cuda_array_interface__


@pytest.mark.parametrize(
    ("interface", "error", "message"),
    [
        ([("shape", (1,))], TypeError, "must be a dict, got list"),
        (_interface(version=_DROP, typestr=_DROP), ValueError, "lacks typestr, version"),
        (_interface(version=4), ValueError, "version 4 is not supported"),
        (_interface(shape=(2, -3)), ValueError, "negative extents"),
        (_interface(shape=[2.5]), TypeError, "shape must be a tuple of ints"),
        (_interface(typestr=">f4"), ValueError, "big-endian"),
        (_interface(typestr="<f3"), ValueError, "typestr '<f3' is not valid"),
        (_interface(typestr="<c8"), ValueError, r"typestr '<c8' \(complex64\) is not supported"),
        (_interface(typestr=4), TypeError, "typestr must be a str"),
        (_interface(data=[0x10000, False]), ValueError, r"data must be \(ptr, readonly\)"),
        (_interface(data=(0x10000, 0)), ValueError, r"data must be \(ptr, readonly\)"),
        (_interface(data=("0x10000", False)), TypeError, "data pointer must be an int"),
        (_interface(data=(0x10002, False)), ValueError, "not a 4-byte aligned"),
        (_interface(data=(0, False)), ValueError, "ptr is 0 but the array has 6 elements"),
        (_interface(strides=(4,)), ValueError, "do not match shape"),
        (_interface(strides=(12, 3)), ValueError, "multiples of the 4-byte"),
        (_interface(mask=object()), ValueError, "masked arrays"),
        (_interface(stream=0), ValueError, "stream 0 is ambiguous"),
    ],
)
def test_interface_import_names_what_is_wrong(interface, error, message) -> None:
    with pytest.raises(error, match=message):
        DeviceArray.from_cuda_array_interface(Exporter(interface))


def test_interface_import_needs_an_exporter() -> None:
    with pytest.raises(TypeError, match="dict does not expose __cuda_array_interface__"):
        DeviceArray.from_cuda_array_interface(_interface())


def test_zero_size_interface_round_trip_needs_no_device() -> None:
    source = DeviceArray.empty((0, 4), "int32", stream=0)
    imported = DeviceArray.from_cuda_array_interface(source)
    assert (imported.shape, imported.dtype, imported.owner) == ((0, 4), "int32", source)
    assert imported.to_numpy().shape == (0, 4)
    # Version 2 exporters (PyTorch) have no stream entry; a stream given there is ignored.
    v2 = DeviceArray.from_cuda_array_interface(Exporter(_interface(shape=(0, 3), version=2)))
    assert v2.shape == (0, 3)


@pytest.mark.skipif(_has_device(), reason="this machine has a device")
def test_interface_import_without_a_device_raises_no_device() -> None:
    with pytest.raises(NoDeviceError, match="cudaPointerGetAttributes"):
        DeviceArray.from_cuda_array_interface(Exporter(_interface()))


# --- host copies -----------------------------------------------------------------------------


def test_zero_size_host_copies_need_no_device() -> None:
    array = DeviceArray.from_numpy(np.zeros((0, 3), np.float16))
    assert (array.shape, array.dtype, array.ptr, array.device) == ((0, 3), "float16", 0, None)
    assert array.to_numpy().dtype == np.float16
    bits = DeviceArray.from_numpy(np.zeros((0,), np.uint16), dtype="bfloat16")
    assert bits.dtype == "bfloat16" and bits.to_numpy().dtype == ml_dtypes.bfloat16
    values = DeviceArray.from_numpy(np.zeros((0, 2), ml_dtypes.bfloat16))
    assert values.dtype == "bfloat16" and values.to_numpy().dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: DeviceArray.from_numpy([1.0, 2.0]), TypeError, "needs a numpy array, got list"),
        (lambda: DeviceArray.from_numpy(np.zeros(0, np.complex64)), ValueError, "complex64"),
        (
            lambda: DeviceArray.from_numpy(np.zeros(0, np.float64), dtype="float32"),
            TypeError,
            "a float64 array cannot be copied as float32",
        ),
        (
            lambda: DeviceArray.from_numpy(np.zeros(0, np.int16), dtype="bfloat16"),
            TypeError,
            "a int16 array cannot be copied as bfloat16",
        ),
        (  # float values are converted by the caller, never reinterpreted as bit patterns
            lambda: DeviceArray.from_numpy(np.zeros(0, np.float32), dtype="bfloat16"),
            TypeError,
            r"a float32 array cannot be copied as bfloat16; convert it first with "
            r"\.astype\(ml_dtypes\.bfloat16\)",
        ),
        (
            lambda: DeviceArray.from_numpy(np.zeros(0, ml_dtypes.bfloat16), dtype="float16"),
            TypeError,
            r"a bfloat16 array cannot be copied as float16; convert it first with "
            r"\.astype\(numpy\.float16\)",
        ),
        (
            lambda: DeviceArray(0, (0, 2), "float32").copy_from_numpy(np.zeros((2, 0))),
            ValueError,
            r"shape \(2, 0\) != \(0, 2\)",
        ),
        (
            lambda: DeviceArray(0, (0,), "float32", readonly=True).copy_from_numpy(np.zeros(0)),
            ValueError,
            "read-only",
        ),
        (
            lambda: DeviceArray(0x1000, (2, 3), "float32", (4, 8)).to_numpy(),
            ValueError,
            r"to_numpy needs a C-contiguous device array, strides are \(4, 8\)",
        ),
        (
            lambda: DeviceArray.empty((2, -2), "float32"),
            ValueError,
            "negative extents",
        ),
    ],
)
def test_host_copy_validation(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


# --- on a GPU --------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int64"])
def test_numpy_round_trip(dtype: str) -> None:
    from ucudnn._native import _cuda

    host = (np.arange(60) - 30).reshape(3, 4, 5).astype(dtype)
    stream = _cuda.Stream()
    array = DeviceArray.from_numpy(host, stream=stream.handle)
    assert array.device == _cuda.get_device() and array.stream == stream.handle
    np.testing.assert_array_equal(array.to_numpy(stream=stream.handle), host)
    np.testing.assert_array_equal(array.slice_batch(1, 3).to_numpy(), host[1:3])
    array.copy_from_numpy(host[::-1])  # a non-contiguous source is copied contiguously first
    np.testing.assert_array_equal(array.to_numpy(), host[::-1])


@pytest.mark.gpu
def test_bfloat16_round_trip() -> None:
    host = np.linspace(-3, 3, 20, dtype=np.float32).reshape(4, 5).astype(ml_dtypes.bfloat16)
    back = DeviceArray.from_numpy(host).to_numpy()
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back, host)


@pytest.mark.gpu
def test_bfloat16_bit_patterns_are_taken_when_named() -> None:
    """uint16 bit patterns with dtype="bfloat16" are copied as they are (not converted from
    integers), and come back as the bfloat16 values they encode."""
    bits = np.array([0x3F80, 0xC000, 0x7F80, 0x3F81], np.uint16)  # 1, -2, inf, 1 + 2**-7
    array = DeviceArray.from_numpy(bits, dtype="bfloat16")
    back = array.to_numpy()
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), bits)
    np.testing.assert_array_equal(back.astype(np.float32), [1.0, -2.0, np.inf, 1 + 2**-7])


@pytest.mark.gpu
def test_interface_import_orders_after_the_producer_stream() -> None:
    from ucudnn._native import _cuda

    producer, consumer = _cuda.Stream(), _cuda.Stream()
    source = DeviceArray.empty((1 << 22,), "uint8", stream=producer.handle)
    _cuda.memset(source.ptr, 9, source.nbytes, producer.handle)
    imported = DeviceArray.from_cuda_array_interface(source, stream=consumer.handle)
    assert (imported.ptr, imported.device, imported.stream) == (
        source.ptr,
        source.device,
        consumer.handle,
    )
    out = imported.to_numpy(stream=consumer.handle)  # waits only for the consumer stream
    assert (out == 9).all()


@pytest.mark.gpu
@pytest.mark.hardware("PyTorch and CuPy allocate on a real GPU, not on the simulated one")
def test_torch_and_cupy_exchange_without_copies() -> None:
    exchanged = 0
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        tensor = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
        array = DeviceArray.from_cuda_array_interface(tensor)
        assert array.ptr == tensor.data_ptr() and array.owner is tensor
        np.testing.assert_array_equal(array.to_numpy(), tensor.cpu().numpy())
        back = torch.as_tensor(array, device="cuda")
        assert back.data_ptr() == array.ptr
        exchanged += 1
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        source = cupy.arange(12, dtype=cupy.float64).reshape(3, 4)[:, ::2]
        array = DeviceArray.from_cuda_array_interface(source)
        assert array.strides == source.strides and not array.is_c_contiguous
        back = cupy.asarray(array)
        assert back.data.ptr == source.data.ptr
        cupy.testing.assert_array_equal(back, source)
        exchanged += 1
    if not exchanged:
        pytest.skip("neither PyTorch nor CuPy with CUDA is installed")
