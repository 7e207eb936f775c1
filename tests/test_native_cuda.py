"""ucudnn._native._cuda: the CUDA runtime binding, its errors without a device, and its stubs."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ucudnn
from tests.cuda_header import cuda_error_names
from ucudnn import errors
from ucudnn._native import _cuda, _cudnn


def _no_device_error() -> errors.NoDeviceError | None:
    try:
        _cuda.device_count()
    except errors.NoDeviceError as exc:
        return exc
    return None


no_device = pytest.mark.skipif(_no_device_error() is None, reason="this machine has a device")


def test_runtime_version_matches_the_one_cudnn_was_built_for() -> None:
    assert _cuda.runtime_version() >= 12000
    assert _cuda.runtime_version() // 1000 == _cudnn.cudart_version() // 1000


def test_error_names_agree_with_the_error_classes() -> None:
    expected = {
        3: "cudaErrorInitializationError",
        34: "cudaErrorStubLibrary",
        35: "cudaErrorInsufficientDriver",
        46: "cudaErrorDevicesUnavailable",
        100: "cudaErrorNoDevice",
        803: "cudaErrorSystemDriverMismatch",
        804: "cudaErrorCompatNotSupportedOnDevice",
    }
    assert set(expected) == errors.NO_DEVICE_CODES
    names = cuda_error_names()  # cudaGetErrorName's answers: the enum's identifiers
    assert {code: names[code] for code in expected} == expected
    assert names[errors.CUDA_OUT_OF_MEMORY] == "cudaErrorMemoryAllocation"


@no_device
def test_without_a_device_calls_raise_no_device_error() -> None:
    exc = _no_device_error()
    assert exc.call == "cudaGetDeviceCount"
    assert exc.code in (35, 100)
    assert (exc.driver_version, exc.runtime_version) == (
        _cuda.driver_version(),
        _cuda.runtime_version(),
    )
    if exc.driver_version == 0:  # no driver at all: not "a driver too old"
        assert str(exc).startswith("no NVIDIA driver is installed or loaded")
    elif exc.code == 35:  # insufficient driver: one older than the runtime
        assert str(exc).startswith("the NVIDIA driver supports CUDA ")
    for call in (lambda: _cuda.DeviceBuffer(16), _cuda.Stream, _cuda.Event, _cuda.mem_get_info):
        with pytest.raises(errors.NoDeviceError):
            call()
    with pytest.raises(errors.NoDeviceError, match="cudaGetDeviceCount"):  # still clean
        _cuda.device_count()


def test_zero_bytes_need_no_device() -> None:
    _cuda.free(0)
    buffer = _cuda.DeviceBuffer(0)
    assert (buffer.ptr, buffer.nbytes, buffer.device) == (0, 0, None)
    buffer.release()
    buffer.release()


_HOST = np.zeros(2, np.float32)
_READ_ONLY = np.zeros(2, np.float32)
_READ_ONLY.setflags(write=False)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: _cuda.DeviceBuffer(-1), ValueError, "nbytes must be >= 0, got -1"),
        (lambda: _cuda.DeviceBuffer(2.0), TypeError, "nbytes must be an int"),
        (lambda: _cuda.DeviceBuffer("8"), TypeError, "nbytes must be an int"),
        (lambda: _cuda.memcpy_htod(-8, _HOST, 8), ValueError, "dst must be a non-negative"),
        (
            lambda: _cuda.memcpy_htod(0, np.zeros((2, 2))[:, 0], 8),
            ValueError,
            "src must be a C-contiguous buffer",
        ),
        (lambda: _cuda.memcpy_htod(0, _HOST, 9), ValueError, "nbytes=9 exceeds the 8 bytes"),
        (lambda: _cuda.memcpy_htod(0, 5, 8), TypeError, "bytes-like"),
        (lambda: _cuda.memcpy_dtoh(_READ_ONLY, 0, 8), ValueError, "dst must be a writable"),
        (lambda: _cuda.memcpy_dtoh(_HOST, 0, 8, stream=-1), ValueError, "stream"),
        (lambda: _cuda.memcpy_dtod(0, 0, -1), ValueError, "nbytes must be >= 0"),
        (lambda: _cuda.memset(0, 256, 1), ValueError, r"value must be a byte \(0..255\)"),
        (lambda: _cuda.free(-1), ValueError, "ptr must be a non-negative address"),
    ],
)
def test_bad_arguments_are_rejected_before_any_device_work(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


# --- stubs -----------------------------------------------------------------------------------


def _public_names(module) -> set[str]:
    names = set()
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or inspect.ismodule(value):
            continue
        if getattr(value, "__module__", module.__name__) == module.__name__:
            names.add(name)
    return names


def _parameters(node: ast.FunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


@pytest.mark.parametrize(
    ("name", "module_name"),
    [
        *((name, f"ucudnn._native.{name}") for name in ("_cuda", "_cudnn", "_dlpack", "_loader")),
        # The simulated device must offer exactly the same surface.
        ("_cuda", "ucudnn.testing.simulator.cuda"),
        ("_cudnn", "ucudnn.testing.simulator.cudnn"),
    ],
)
def test_stub_declares_exactly_the_module(name: str, module_name: str) -> None:
    """The .pyi lists every public name with the real parameter names, and nothing else."""
    module = importlib.import_module(module_name)
    tree = ast.parse((Path(ucudnn.__file__).parent / "_native" / f"{name}.pyi").read_text())
    stub = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            stub[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            stub[node.target.id] = node
    assert set(stub) - {"DeviceProperties"} == _public_names(module)
    for symbol, node in stub.items():
        value = getattr(module, symbol, None)
        if isinstance(node, ast.FunctionDef):
            assert _parameters(node) == list(inspect.signature(value).parameters), symbol
        elif isinstance(node, ast.ClassDef) and value is not None:
            members = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
            fields = [n.target.id for n in node.body if isinstance(n, ast.AnnAssign)]
            if fields:  # a NamedTuple
                assert tuple(fields) == value._fields, symbol
                continue
            public = {m for m in dir(value) if not m.startswith("_")}
            assert set(members) - {"__init__"} == public, symbol
            for member, member_node in members.items():
                if member != "__init__" and inspect.isroutine(getattr(value, member)):
                    actual = list(inspect.signature(getattr(value, member)).parameters)
                    assert _parameters(member_node) == actual, f"{symbol}.{member}"


# --- on a GPU --------------------------------------------------------------------------------


@pytest.mark.gpu
def test_device_queries() -> None:
    count = _cuda.device_count()
    assert count >= 1
    _cuda.set_device(count - 1)
    assert _cuda.get_device() == count - 1
    _cuda.set_device(0)
    props = _cuda.device_properties(0)
    assert props["major"] >= 5 and props["total_memory"] > 2**30
    assert props["uuid"].startswith("GPU-") and props["name"]
    free, total = _cuda.mem_get_info()
    assert 0 < free <= total
    assert _cuda.driver_version() >= _cuda.runtime_version() // 1000 * 1000
    with pytest.raises(errors.CudaError, match="cudaGetDeviceProperties"):
        _cuda.device_properties(count)


@pytest.mark.gpu
def test_copies_and_memset_round_trip() -> None:
    host = np.arange(1000, dtype=np.float32)
    a, b = _cuda.DeviceBuffer(host.nbytes), _cuda.DeviceBuffer(host.nbytes)
    assert a.device == _cuda.get_device() and a.ptr % 256 == 0
    _cuda.memcpy_htod(a.ptr, host, host.nbytes)
    _cuda.memcpy_dtod(b.ptr, a.ptr, host.nbytes)
    _cuda.memset(b.ptr, 0, 400)  # the first 100 floats
    out = np.full_like(host, -1)
    _cuda.memcpy_dtoh(out, b.ptr, host.nbytes)
    _cuda.stream_synchronize(0)
    np.testing.assert_array_equal(out[:100], 0)
    np.testing.assert_array_equal(out[100:], host[100:])
    assert _cuda.pointer_device(a.ptr) == a.device
    assert _cuda.pointer_device(host.ctypes.data) is None
    a.release()
    assert (a.ptr, a.nbytes) == (0, 0)


@pytest.mark.gpu
def test_copies_take_arrays_of_any_dtype_as_bytes() -> None:
    # cudart's binding asks for bytes without a format; bfloat16 (ml_dtypes) has none.
    host = np.linspace(-2, 2, 64).astype(ml_dtypes.bfloat16)
    buffer = _cuda.DeviceBuffer(host.nbytes)
    _cuda.memcpy_htod(buffer.ptr, host, host.nbytes)
    out = np.zeros_like(host)
    _cuda.memcpy_dtoh(out, buffer.ptr, host.nbytes)
    _cuda.stream_synchronize(0)
    np.testing.assert_array_equal(out.view(np.uint16), host.view(np.uint16))


@pytest.mark.gpu
def test_out_of_memory_raises_and_leaves_the_runtime_usable() -> None:
    with pytest.raises(errors.CudaOutOfMemoryError) as info:
        _cuda.DeviceBuffer(1 << 50)
    assert info.value.call == "cudaMalloc"
    assert "requested 1125899906842624 bytes" in info.value.__notes__
    assert _cuda.DeviceBuffer(1024).ptr != 0


@pytest.mark.gpu
def test_streams_and_events() -> None:
    producer, consumer = _cuda.Stream(), _cuda.Stream(non_blocking=False)
    assert producer.handle not in (0, consumer.handle)
    size = 64 << 20
    buffer = _cuda.DeviceBuffer(size)
    start, end = _cuda.Event(), _cuda.Event()
    start.record(producer.handle)
    _cuda.memset(buffer.ptr, 3, size, producer.handle)
    end.record(producer.handle)
    _cuda.stream_wait_event(consumer.handle, end)
    out = np.zeros(16, np.uint8)
    _cuda.memcpy_dtoh(out, buffer.ptr + size - 16, 16, consumer.handle)
    consumer.synchronize()
    np.testing.assert_array_equal(out, 3)
    end.synchronize()
    assert end.query()
    assert start.elapsed_ms(end) >= 0.0
    untimed = _cuda.Event(timing=False)
    untimed.record(producer.handle)
    producer.synchronize()
    with pytest.raises(errors.CudaError, match="cudaEventElapsedTime"):
        start.elapsed_ms(untimed)
    producer.destroy()
    producer.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        producer.synchronize()
    end.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        start.elapsed_ms(end)
