"""DLPack import: capsule parsing and ownership (on numpy's CPU capsules), the mapping into a
DeviceArray (through an exporter that claims a CUDA device but hands out a numpy capsule, whose
memory is never touched), the Handle's argument conversion, and a CuPy/PyTorch round trip."""

from __future__ import annotations

import datetime
import gc
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest

from ucudnn._native._dlpack import DLPackTensor
from ucudnn.core.array import DeviceArray
from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.buffers import device_pointer


class CudaExporter:
    """Says it lives on CUDA device `device`; exports `array`'s (CPU) capsule and records calls."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (2, 0)) -> None:
        self.array, self.device, self.calls = array, device, []

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        return self.array.__dlpack__(max_version=max_version)  # numpy takes no CUDA stream


class LegacyExporter(CudaExporter):
    """A producer older than DLPack 1.0: no max_version keyword."""

    def __dlpack__(self, *, stream=None):  # type: ignore[override]
        self.calls.append({"stream": stream})
        return self.array.__dlpack__()


# --- the capsule -----------------------------------------------------------------------------


def test_capsule_fields_of_a_strided_view() -> None:
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    view = base[1:, ::2, 1:4]
    tensor = DLPackTensor(view.__dlpack__())
    assert (tensor.device_type, tensor.device_id) == (1, 0)  # kDLCPU
    assert tensor.ptr == view.ctypes.data == base.ctypes.data + (20 + 1) * 4  # data + byte_offset
    assert tensor.shape == (2, 2, 3)
    assert tensor.strides == (20, 10, 1)  # elements, not bytes
    assert (tensor.dtype_code, tensor.dtype_bits, tensor.dtype_lanes) == (2, 32, 1)
    assert (tensor.readonly, tensor.version) == (False, (0, 0))


def test_zero_d_capsule() -> None:
    tensor = DLPackTensor(np.array(7, dtype=np.int64).__dlpack__())
    assert (tensor.shape, tensor.dtype_code, tensor.dtype_bits) == ((), 0, 64)


@pytest.mark.parametrize(
    ("dtype", "code", "bits"),
    [
        (np.float16, 2, 16),
        (np.float64, 2, 64),
        (np.int8, 0, 8),
        (np.uint8, 1, 8),
        (np.int32, 0, 32),
        (np.complex64, 5, 64),
        (np.bool_, 6, 8),
    ],
)
def test_capsule_dtype(dtype, code, bits) -> None:
    tensor = DLPackTensor(np.zeros(3, dtype).__dlpack__())
    assert (tensor.dtype_code, tensor.dtype_bits, tensor.dtype_lanes) == (code, bits, 1)


def test_a_consumed_capsule_is_marked_used_and_cannot_be_consumed_again() -> None:
    capsule = np.zeros(4).__dlpack__()
    assert 'capsule object "dltensor"' in repr(capsule)
    tensor = DLPackTensor(capsule)
    assert 'capsule object "used_dltensor"' in repr(capsule)
    with pytest.raises(ValueError, match="already consumed"):
        DLPackTensor(capsule)
    assert tensor.shape == (4,)


def test_versioned_capsule_carries_the_read_only_flag() -> None:
    array = np.arange(6, dtype=np.float32)
    array.setflags(write=False)
    capsule = array.__dlpack__(max_version=(1, 0))
    tensor = DLPackTensor(capsule)
    assert 'capsule object "used_dltensor_versioned"' in repr(capsule)
    assert tensor.version[0] == 1 and tensor.readonly
    assert (tensor.ptr, tensor.shape) == (array.ctypes.data, (6,))


@pytest.mark.parametrize("capsule", [5, np.zeros(2), datetime.datetime_CAPI])
def test_only_dlpack_capsules_are_accepted(capsule) -> None:
    with pytest.raises(TypeError, match="expected a DLPack capsule"):
        DLPackTensor(capsule)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_the_deleter_runs_when_the_tensor_is_garbage(max_version) -> None:
    array = np.zeros((8, 8))
    before = sys.getrefcount(array)
    capsule = array.__dlpack__(max_version=max_version)
    tensor = DLPackTensor(capsule)
    del capsule  # a used capsule no longer deletes: the tensor does
    assert sys.getrefcount(array) == before + 1
    del tensor
    gc.collect()
    assert sys.getrefcount(array) == before


def test_the_tensor_keeps_the_exporter_alive() -> None:
    view = np.zeros((8, 8))[::2]
    alive = weakref.ref(view)
    tensor = DLPackTensor(view.__dlpack__())
    del view
    gc.collect()
    assert alive() is not None
    del tensor
    gc.collect()
    assert alive() is None


# --- DeviceArray.from_dlpack -----------------------------------------------------------------


def test_from_dlpack_maps_a_cuda_tensor() -> None:
    source = np.arange(60, dtype=np.float64).reshape(3, 4, 5)[:, 1:, ::2]
    exporter = CudaExporter(source, device=(2, 3))
    array = DeviceArray.from_dlpack(exporter, stream=0x5000)
    assert (array.ptr, array.shape, array.dtype) == (source.ctypes.data, (3, 3, 3), "float64")
    assert array.strides == source.strides  # bytes again
    assert (array.device, array.stream, array.readonly) == (3, 0x5000, False)
    assert isinstance(array.owner, DLPackTensor)
    assert exporter.calls == [{"stream": 0x5000, "max_version": (1, 0)}]


def test_from_dlpack_passes_the_legacy_default_stream_as_1() -> None:
    exporter = CudaExporter(np.zeros(2, np.float32), device=(13, 0))  # kDLCUDAManaged
    DeviceArray.from_dlpack(exporter)
    assert exporter.calls[0]["stream"] == 1  # DLPack forbids 0, as the CAI does


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        (np.float16, "float16"),
        (np.float32, "float32"),
        (np.int8, "int8"),
        (np.uint8, "uint8"),
        (np.int32, "int32"),
        (np.int64, "int64"),
    ],
)
def test_from_dlpack_dtypes(dtype, name) -> None:
    array = DeviceArray.from_dlpack(CudaExporter(np.zeros((2, 3), dtype)))
    assert (array.dtype, array.strides) == (name, (3 * array.itemsize, array.itemsize))


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (np.complex64, r"type code 5, 64 bits\) is not supported"),
        (np.bool_, r"type code 6, 8 bits\) is not supported"),
        (np.int16, r"type code 0, 16 bits\) is not supported"),
    ],
)
def test_from_dlpack_refuses_other_dtypes(dtype, message) -> None:
    source = np.zeros(3, dtype)
    before = sys.getrefcount(source)
    with pytest.raises(ValueError, match=message):
        DeviceArray.from_dlpack(CudaExporter(source))
    gc.collect()
    assert sys.getrefcount(source) == before  # the refused tensor was still handed back


def test_from_dlpack_falls_back_for_producers_without_max_version() -> None:
    exporter = LegacyExporter(np.zeros(4, np.float32))
    array = DeviceArray.from_dlpack(exporter)
    assert array.shape == (4,) and array.owner.version == (0, 0)
    assert exporter.calls == [{"stream": 1}]


def test_from_dlpack_keeps_read_only_and_owns_the_memory() -> None:
    source = np.zeros((4, 4), np.float32)[1:]
    source.setflags(write=False)
    alive = weakref.ref(source)
    array = DeviceArray.from_dlpack(CudaExporter(source))
    assert array.readonly
    del source
    gc.collect()
    assert alive() is not None
    del array
    gc.collect()
    assert alive() is None


def test_from_dlpack_refuses_a_cpu_array() -> None:
    with pytest.raises(ValueError, match="ndarray is on the CPU, not a CUDA device"):
        DeviceArray.from_dlpack(np.zeros(3, np.float32))


def test_from_dlpack_refuses_other_devices_before_exporting() -> None:
    exporter = CudaExporter(np.zeros(3, np.float32), device=(10, 0))  # kDLROCM
    with pytest.raises(ValueError, match="on DLPack device type 10, not a CUDA device"):
        DeviceArray.from_dlpack(exporter)
    assert exporter.calls == []


def test_from_dlpack_needs_an_exporter() -> None:
    with pytest.raises(TypeError, match="list does not export DLPack"):
        DeviceArray.from_dlpack([1.0, 2.0])


# --- the Handle's tensors --------------------------------------------------------------------


def test_device_pointer_takes_dlpack_arrays() -> None:
    problem = ConvProblem.from_shapes((2, 3, 5, 5), (4, 3, 3, 3))
    x = np.zeros(problem.x_shape, np.float32)
    assert device_pointer(CudaExporter(x), problem, "x", "x") == x.ctypes.data
    with pytest.raises(ValueError, match=r"w has shape \(2, 3, 5, 5\), expected \(4, 3, 3, 3\)"):
        device_pointer(CudaExporter(x), problem, "w", "w")
    with pytest.raises(ValueError, match="ndarray is on the CPU"):
        device_pointer(x, problem, "x", "x")


def test_device_pointer_prefers_the_cuda_array_interface() -> None:
    problem = ConvProblem.from_shapes((0, 3, 5, 5), (4, 3, 3, 3))  # empty: no device query

    class Both(CudaExporter):
        @property
        def __cuda_array_interface__(self):
            return {"shape": problem.x_shape, "typestr": "<f4", "data": (0, False), "version": 3}

    both = Both(np.zeros(problem.x_shape, np.float32))
    assert device_pointer(both, problem, "x", "x") == 0
    assert both.calls == []


def test_device_pointer_asks_dlpack_producers_for_the_handles_stream() -> None:
    problem = ConvProblem.from_shapes((2, 3, 5, 5), (4, 3, 3, 3))
    exporter = CudaExporter(np.zeros(problem.x_shape, np.float32))
    device_pointer(exporter, problem, "x", "x", stream=0x5000)
    assert exporter.calls[0]["stream"] == 0x5000


@pytest.fixture
def orderings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Records (producer, consumer) each time work on one stream is ordered before another."""
    import ucudnn.core.array

    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(ucudnn.core.array, "order_after", lambda p, c: calls.append((p, c)))
    return calls


def test_device_pointer_orders_an_interface_producer_before_the_handles_stream(orderings):
    problem = ConvProblem.from_shapes((0, 3, 5, 5), (4, 3, 3, 3))  # empty: no device query

    class Produced:
        @property
        def __cuda_array_interface__(self):
            return {"shape": problem.x_shape, "typestr": "<f4", "data": (0, False),
                    "version": 3, "stream": 0x7000}  # fmt: skip

    device_pointer(Produced(), problem, "x", "x", stream=0x5000)
    device_pointer(Produced(), problem, "x", "x", stream=0x7000)  # the same stream: nothing
    assert orderings == [(0x7000, 0x5000)]


def test_device_pointer_orders_a_device_arrays_stream_before_the_handles(orderings) -> None:
    problem = ConvProblem.from_shapes((2, 3, 5, 5), (4, 3, 3, 3))
    array = DeviceArray(0x1000, problem.x_shape, "float32", stream=0x7000)
    assert device_pointer(array, problem, "x", "x", stream=0x5000) == 0x1000
    legacy = DeviceArray(0x1000, problem.x_shape, "float32", stream=0)
    device_pointer(legacy, problem, "x", "x", stream=1)  # 0 and 1 both name the legacy stream
    assert orderings == [(0x7000, 0x5000)]


def test_device_pointer_refuses_an_array_on_another_device(orderings) -> None:
    problem = ConvProblem.from_shapes((2, 3, 5, 5), (4, 3, 3, 3))
    array = DeviceArray(0x1000, problem.x_shape, "float32", device=1)
    with pytest.raises(ValueError, match="dy is on device 1, but this handle uses device 0"):
        device_pointer(array, problem, "x", "dy", device=0)
    assert device_pointer(array, problem, "x", "dy", device=1) == 0x1000


# --- on a GPU --------------------------------------------------------------------------------


class DLPackOnly:
    """Hides a tensor's __cuda_array_interface__, so the Handle has to take the DLPack path."""

    def __init__(self, tensor) -> None:
        self.tensor = tensor

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)


def _cuda_libraries() -> list:
    """(name, to_device, to_host) for each of PyTorch and CuPy that is installed with CUDA."""
    found = []
    try:
        import torch

        if torch.cuda.is_available():
            found.append(
                ("torch", lambda a: torch.tensor(a, device="cuda"), lambda t: t.cpu().numpy())
            )
    except ImportError:
        pass
    try:
        import cupy

        found.append(("cupy", cupy.asarray, cupy.asnumpy))
    except ImportError:
        pass
    if not found:
        pytest.skip("neither PyTorch nor CuPy with CUDA is installed")
    return found


@pytest.mark.gpu
@pytest.mark.hardware("PyTorch and CuPy allocate on a real GPU, not on the simulated one")
def test_cuda_tensors_round_trip_through_dlpack() -> None:
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    for name, to_device, _ in _cuda_libraries():
        tensor = to_device(host)
        array = DeviceArray.from_dlpack(tensor)
        assert array.ptr == tensor.__cuda_array_interface__["data"][0], name
        np.testing.assert_array_equal(array.to_numpy(), host, err_msg=name)
        view = DeviceArray.from_dlpack(tensor[:, 1:])
        assert (view.ptr, view.shape, view.strides) == (array.ptr + 4, (4, 5), (24, 4)), name


@pytest.mark.gpu
@pytest.mark.hardware("PyTorch allocates on a real GPU, not on the simulated one")
def test_torch_bfloat16_tensors_come_back_as_ml_dtypes_arrays() -> None:
    """DLPack's bfloat16 (type code 4) is the device's bfloat16, and the host copy is the
    numpy bfloat16 of ml_dtypes holding the same values (CuPy has no bfloat16)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    values = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    tensor = torch.tensor(values, device="cuda").to(torch.bfloat16)
    array = DeviceArray.from_dlpack(tensor)
    host = array.to_numpy()
    assert array.dtype == "bfloat16" and host.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(host.astype(np.float32), tensor.float().cpu().numpy())


@pytest.mark.gpu
@pytest.mark.hardware("PyTorch and CuPy allocate on a real GPU, not on the simulated one")
def test_the_handle_takes_dlpack_tensors(tmp_path) -> None:
    from tests import reference_conv as ref
    from ucudnn.runtime.check import normalised_l2, tolerance
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.from_shapes((2, 3, 6, 6), (4, 3, 3, 3), padding=1, math_type="fma")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(problem.x_shape, dtype=np.float32)
    w = rng.standard_normal(problem.w_shape, dtype=np.float32)
    for name, to_device, to_host in _cuda_libraries():
        y = to_device(np.zeros(problem.y_shape, np.float32))
        with Handle(workspace_limit=1 << 20, database=tmp_path / f"{name}.sqlite") as handle:
            handle.forward(*(DLPackOnly(to_device(a)) for a in (x, w)), DLPackOnly(y), problem)
        bound = tolerance(problem, same_algorithm=False)  # the plan may use FFT or Winograd
        assert normalised_l2(to_host(y), ref.forward(problem, x, w)) <= bound, name
