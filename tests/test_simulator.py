"""The simulated device itself: each of its checks fires, with the error class the real
libraries raise, and its faults drive the Handle's fallback paths. These run only on the
simulator (`--device=sim`), where `ucudnn._native` is its modules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn import errors
from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.check import normalised_l2, tolerance

pytestmark = pytest.mark.simulator

MiB = 1 << 20


@pytest.fixture
def sim():
    from ucudnn.testing import simulator

    return simulator


@pytest.fixture
def conv():
    """A small float32 NCHW forward problem with its descriptors and buffers on the device."""
    from ucudnn._native import _cuda
    from ucudnn.runtime import backend

    problem = ConvProblem.create(4, 3, 8, (6, 6), 3, padding=1, math_type="fma")
    descs = backend.ProblemDescriptors(problem)
    buffers = {t: _cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")}
    rng = np.random.default_rng(3)
    host = {t: rng.standard_normal(problem.nbytes(t) // 4).astype(np.float32) for t in ("x", "w")}
    for t, values in host.items():
        _cuda.memcpy_htod(buffers[t].ptr, values, values.nbytes)
    yield problem, descs, buffers
    for buffer in buffers.values():
        buffer.release()


@pytest.fixture
def computed(sim, monkeypatch) -> list:
    """The problems of the convolutions the simulator computes from now on, in order."""
    problems = []
    convolve = sim.numerics.convolve

    def counted(problem, *inputs):
        problems.append(problem)
        return convolve(problem, *inputs)

    monkeypatch.setattr(sim.numerics, "convolve", counted)
    return problems


def _forward(descs, x, w, y, algo=0, workspace=0, workspace_bytes=0, batch=None, beta=0.0):
    from ucudnn._native import _cudnn
    from ucudnn.runtime import backend

    handle = _cudnn.Handle()
    backend.run(
        handle, descs, "forward", batch or descs.problem.batch, algo, "fma", 1.0, beta,
        x, w, y, workspace, workspace_bytes,
    )  # fmt: skip


def test_a_micro_batch_one_sample_too_long_is_an_illegal_address(conv, sim) -> None:
    problem, descs, buffers = conv
    # Samples 1..4 of a 4-sample batch: the last one lies past the end of x.
    sample = problem.sample_offset_bytes("x", 1)
    with pytest.raises(errors.CudaError) as info:
        _forward(descs, buffers["x"].ptr + sample, buffers["w"].ptr, buffers["y"].ptr)
    assert isinstance(info.value, sim.IllegalAddressError)
    assert info.value.name == "cudaErrorIllegalAddress"
    assert info.value.call == "cudnnConvolutionForward"
    assert f"{sample} bytes past the end of allocation" in str(info.value)


def test_a_short_workspace_is_refused_with_cudnns_status(conv) -> None:
    from ucudnn._native import _cuda, _cudnn
    from ucudnn.runtime import backend

    problem, descs, buffers = conv
    handle = _cudnn.Handle()
    needs = {
        algo: backend.workspace_size(handle, descs, "forward", problem.batch, algo, "fma")
        for algo in range(len(_cudnn.ALGORITHMS["forward"]))
        if _runs(lambda a=algo: backend.workspace_size(handle, descs, "forward", 4, a, "fma"))
    }
    algo, need = max(needs.items(), key=lambda item: item[1])
    assert need > 0
    workspace = _cuda.DeviceBuffer(need)
    with pytest.raises(errors.CudnnError, match=r"needs .* bytes of workspace"):
        _forward(descs, buffers["x"].ptr, buffers["w"].ptr, buffers["y"].ptr, algo,
                 workspace.ptr, need - 1)  # fmt: skip
    _forward(descs, buffers["x"].ptr, buffers["w"].ptr, buffers["y"].ptr, algo, workspace.ptr, need)


def _runs(call) -> bool:
    try:
        call()
    except errors.CudnnError:
        return False
    return True


def test_use_after_free_and_double_free(conv, sim) -> None:
    from ucudnn._native import _cuda

    _, descs, buffers = conv
    x = buffers["x"].ptr
    buffers["x"].release()
    with pytest.raises(sim.IllegalAddressError, match="is in freed memory"):
        _forward(descs, x, buffers["w"].ptr, buffers["y"].ptr)
    with pytest.raises(errors.CudaError, match="cudaErrorInvalidValue") as info:
        _cuda.memcpy_dtoh(np.empty(4, np.uint8), x, 4)
    assert "freed" in str(info.value.__cause__)
    buffer = _cuda.DeviceBuffer(64)
    _cuda.free(buffer.ptr)  # behind the buffer's back: its release frees the memory again
    with pytest.raises(errors.CudaError, match="cudaFree failed: cudaErrorInvalidValue"):
        buffer.release()


def test_leaks_are_reported_with_where_they_were_made(sim) -> None:
    import gc

    from ucudnn._native import _cuda, _cudnn

    mark = sim.DEVICE.mark()
    buffer = _cuda.DeviceBuffer(1000)
    descriptor = _cudnn.TensorDescriptor("float32", (1, 2, 3, 4), (24, 12, 4, 1))
    leaks = sim.DEVICE.leaks(since=mark)
    assert sorted(leak.kind for leak in leaks) == ["allocation", "descriptor"]
    assert all(__file__ in leak.made_at for leak in leaks), leaks
    buffer.release()
    del descriptor
    gc.collect()
    assert sim.DEVICE.leaks(since=mark) == []


def test_a_layout_cudnn_cannot_run_is_not_supported() -> None:
    """NDHWC float64 forward: the first H100 run found no algorithm for it."""
    from ucudnn._native import _cudnn
    from ucudnn.runtime import backend

    problem = ConvProblem.create(2, 3, 4, (6, 5, 7), 3, padding=1, layout="NDHWC",
                                 dtype="float64")  # fmt: skip
    descs = backend.ProblemDescriptors(problem)
    handle = _cudnn.Handle()
    for algo in range(len(_cudnn.ALGORITHMS["forward"])):
        with pytest.raises(errors.CudnnNotSupportedError, match="observed"):
            backend.workspace_size(handle, descs, "forward", 2, algo, problem.math_type)


def test_misaligned_and_overlapping_operands(conv, sim) -> None:
    from ucudnn._native import _cuda

    problem, descs, buffers = conv
    with pytest.raises(errors.CudnnBadParamError, match="not aligned"):
        _forward(descs, buffers["x"].ptr + 2, buffers["w"].ptr, buffers["y"].ptr)
    both = _cuda.DeviceBuffer(problem.nbytes("x") + problem.nbytes("y"))
    with pytest.raises(sim.ConformanceError, match="output y overlaps x"):
        _forward(descs, both.ptr, buffers["w"].ptr, both.ptr + problem.nbytes("x") - 4)
    both.release()


def test_memory_capacity_and_mem_get_info(sim) -> None:
    from ucudnn._native import _cuda

    free, total = _cuda.mem_get_info()
    buffer = _cuda.DeviceBuffer(3 * MiB + 1)  # two granules of 2 MiB
    assert _cuda.mem_get_info()[0] == free - 4 * MiB
    sim.withhold_memory(free - 4 * MiB - MiB)
    with pytest.raises(errors.CudaOutOfMemoryError) as info:
        _cuda.DeviceBuffer(2 * MiB)
    assert "requested 2097152 bytes" in info.value.__notes__
    sim.reset()
    buffer.release()
    assert _cuda.mem_get_info() == (free, total)


def test_find_ranks_as_cudnn_and_overwrites_the_output(conv) -> None:
    from ucudnn._native import _cuda
    from ucudnn.runtime import backend

    problem, descs, buffers = conv
    from ucudnn._native import _cudnn

    handle = _cudnn.Handle()
    workspace = _cuda.DeviceBuffer(64 * MiB)
    perfs = backend.find(handle, descs, "forward", problem.batch, buffers["x"].ptr,
                         buffers["w"].ptr, buffers["y"].ptr, workspace.ptr, 64 * MiB)  # fmt: skip
    ran = [p for p in perfs if p.status == 0]
    assert ran and [p.time_ms for p in ran] == sorted(p.time_ms for p in ran)
    assert perfs[: len(ran)] == ran  # failures last
    assert {p.algo for p in perfs} == set(range(len(_cudnn.ALGORITHMS["forward"])))
    y = np.empty(problem.nbytes("y") // 4, np.float32)
    _cuda.memcpy_dtoh(y, buffers["y"].ptr, y.nbytes)
    assert np.isnan(y).all()


def test_convolutions_are_computed_only_when_read(conv, sim) -> None:
    from ucudnn._native import _cuda

    problem, descs, buffers = conv
    for _ in range(3):  # each replaces the last, unread
        _forward(descs, buffers["x"].ptr, buffers["w"].ptr, buffers["y"].ptr)
    assert sim.DEVICE.deferred == 1
    y = np.empty(problem.y_shape, np.float32)
    _cuda.memcpy_dtoh(y, buffers["y"].ptr, y.nbytes)
    assert sim.DEVICE.deferred == 0
    x, w = (_download(buffers[t], problem.nbytes(t)) for t in ("x", "w"))
    expected = ref.forward(problem, x.reshape(problem.x_shape), w.reshape(problem.w_shape))
    assert normalised_l2(y, expected) <= tolerance(problem, same_algorithm=False)


def test_find_over_part_of_a_deferred_result_computes_nothing(conv, computed) -> None:
    """Find at a micro-batch overwrites part of a convolution's unread output: the convolution
    stays deferred, and when read, Find's part is NaN and the rest is its result."""
    from ucudnn._native import _cudnn
    from ucudnn.runtime import backend

    problem, descs, buffers = conv
    x, w, y = (buffers[t].ptr for t in "xwy")
    _forward(descs, x, w, y)
    part = backend.ProblemDescriptors(problem.with_batch(2))
    x1, y1 = x + problem.sample_offset_bytes("x", 1), y + problem.sample_offset_bytes("y", 1)
    backend.find(_cudnn.Handle(), part, "forward", 2, x1, w, y1, 0, 0)
    assert not computed
    out = _download(buffers["y"], problem.nbytes("y")).reshape(problem.y_shape)
    assert len(computed) == 1
    assert np.isnan(out[1:3]).all()
    expected = _expected_forward(problem, buffers)
    assert normalised_l2(out[::3], expected[::3]) <= tolerance(problem, same_algorithm=False)


def test_a_deferred_convolution_reads_its_inputs_as_they_were_when_called(conv, sim) -> None:
    """Inputs overwritten or freed after the call, before its output is read, do not change
    what it computes (on hardware it has run by then)."""
    from ucudnn._native import _cuda

    problem, descs, buffers = conv
    expected = _expected_forward(problem, buffers)
    _forward(descs, buffers["x"].ptr, buffers["w"].ptr, buffers["y"].ptr)
    buffers["w"].release()
    _cuda.memset(buffers["x"].ptr, 0, problem.nbytes("x"))
    y = _download(buffers["y"], problem.nbytes("y")).reshape(problem.y_shape)
    assert normalised_l2(y, expected) <= tolerance(problem, same_algorithm=False)


def test_accumulations_nobody_reads_are_not_computed(conv, sim, computed) -> None:
    """Timing a backward filter that adds to dW (beta 1) chains each run onto the last: none
    is computed until something reads the result, which is then each run's, in order, with
    what other writes replaced in between."""
    from ucudnn._native import _cuda

    problem, descs, buffers = conv
    x, w, y = (buffers[t].ptr for t in "xwy")
    for beta in (0.0, 1.0):
        _forward(descs, x, w, y, beta=beta)
    _cuda.memset(y, 0, problem.nbytes("y"))  # replaces all they wrote: neither is computed
    assert (sim.DEVICE.deferred, len(computed)) == (0, 0)
    for beta in (0.0, 1.0, 1.0):
        _forward(descs, x, w, y, beta=beta)
    _cuda.memset(y, 0, problem.sample_offset_bytes("y", 1))  # sample 0 starts again from 0
    _forward(descs, x, w, y, beta=1.0)
    assert (sim.DEVICE.deferred, len(computed)) == (1, 2)  # the third reads what the two made
    for _ in range(sys.getrecursionlimit()):  # a chain longer than nested calls could run
        _forward(descs, x, w, y, beta=1.0)
    assert (sim.DEVICE.deferred, len(computed)) == (1, 2)
    out = _download(buffers["y"], problem.nbytes("y")).reshape(problem.y_shape)
    runs = sys.getrecursionlimit() + 4
    assert len(computed) == runs
    scale = np.array([runs - 3, runs, runs, runs])[:, None, None, None]
    expected = _expected_forward(problem, buffers) * scale
    assert normalised_l2(out, expected) <= tolerance(problem, same_algorithm=False)


def test_a_memset_of_a_whole_fresh_buffer_is_noted_and_reads_as_written(conv, sim) -> None:
    """Benchmarking fills large buffers that nothing reads: a memset of all of a buffer no call
    has touched makes none of its bytes, yet convolutions and copies read what it wrote."""
    from ucudnn._native import _cuda

    problem, descs, buffers = conv
    fresh = {t: _cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w")}
    for buffer in fresh.values():
        _cuda.memset(buffer.ptr, 0x3F, buffer.nbytes)  # 0.747 in every float32
    assert sim.DEVICE.owner(fresh["x"].ptr).uniform == 0x3F
    _cuda.memset(fresh["w"].ptr, 0, 4)  # then a part: the first weight is 0
    _forward(descs, fresh["x"].ptr, fresh["w"].ptr, buffers["y"].ptr)
    y = _download(buffers["y"], problem.nbytes("y")).reshape(problem.y_shape)
    expected = _expected_forward(problem, fresh)
    assert normalised_l2(y, expected) <= tolerance(problem, same_algorithm=False)
    assert np.unique(_download(fresh["x"], problem.nbytes("x"))).size == 1
    for buffer in fresh.values():
        buffer.release()


def _expected_forward(problem: ConvProblem, buffers) -> np.ndarray:
    x, w = (_download(buffers[t], problem.nbytes(t)) for t in ("x", "w"))
    return ref.forward(problem, x.reshape(problem.x_shape), w.reshape(problem.w_shape))


def _download(buffer, nbytes: int) -> np.ndarray:
    from ucudnn._native import _cuda

    out = np.empty(nbytes // 4, np.float32)
    _cuda.memcpy_dtoh(out, buffer.ptr, nbytes)
    return out


def test_the_device_is_named_simulated_everywhere() -> None:
    from ucudnn.core.device import device_facts, info
    from ucudnn.faces.info import info_text
    from ucudnn.runtime.engines_setting import EnginesSetting

    facts = device_facts()
    assert facts.device_name.startswith("SIMULATED ") and "ucudnn-sim" in facts.device_name
    assert info()["simulated"] is True
    assert "SIMULATED DEVICE" in info_text(EnginesSetting(True, "default", None))


# --- the Handle's fallbacks, by fault injection ----------------------------------------------


def test_an_algorithm_failing_while_timed_is_left_out(tmp_path, sim) -> None:
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(8, 16, 16, (12, 12), 3, padding=1, math_type="fma")
    with Handle(workspace_limit=64 * MiB, database=tmp_path / "first.sqlite") as handle:
        fastest = handle.schedule(problem, "forward").parts[0].algo
    sim.fail_algorithm("forward", fastest)
    with Handle(workspace_limit=64 * MiB, database=tmp_path / "second.sqlite") as handle:
        schedule = handle.schedule(problem, "forward")
    assert fastest not in {part.algo for part in schedule.parts}


def test_an_algorithm_failing_mid_schedule_names_the_micro_batch(tmp_path, sim) -> None:
    from ucudnn._native import _cudnn
    from ucudnn.core.array import DeviceArray
    from ucudnn.planner.tables import Candidate
    from ucudnn.runtime import backend, executor

    problem = ConvProblem.create(6, 3, 4, (5, 5), 3, padding=1, math_type="fma")
    arrays = {t: DeviceArray.empty((problem.nbytes(t) // 4,), "float32") for t in "xwy"}
    sim.fail_algorithm("forward", 0, when=lambda p: p.batch == 2)
    parts = [Candidate(4, 0, 0.0, 0, "fma"), Candidate(2, 0, 0.0, 0, "fma")]
    with pytest.raises(errors.CudnnExecutionFailedError) as info:
        executor.execute(
            _cudnn.Handle(), backend.ProblemDescriptors(problem), "forward", parts,
            **{t: a.ptr for t, a in arrays.items()}, workspace=0, workspace_bytes=0,
        )  # fmt: skip
    assert "micro-batch 4:6 with algo 0" in info.value.__notes__[-1]


def test_no_device_paths(tmp_path) -> None:
    """UCUDNN_SIM_DEVICES=0: a driver and no GPU, in a process of its own."""
    code = (
        "import ucudnn\n"
        "from ucudnn.faces.info import unusable_reason\n"
        "print(unusable_reason())\n"
        "import numpy as np\n"
        "try:\n"
        "    x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float32)\n"
        "    ucudnn.conv_forward(x, w)\n"
        "except ucudnn.errors.NoDeviceError as exc:\n"
        "    print(type(exc).__name__, exc.code)\n"
    )  # fmt: skip
    env = {**os.environ, "UCUDNN_DEVICE": "sim", "UCUDNN_SIM_DEVICES": "0"}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # which the reason would mention
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.splitlines() == [
        "the NVIDIA driver sees no CUDA device on this machine; nvidia-smi -L lists the GPUs it "
        "sees (cudaErrorNoDevice)",
        "NoDeviceError 100",
    ]


def test_the_numpy_api_falls_back_when_memory_is_short(sim) -> None:
    """Planned with memory, then run without: conv_forward warns, runs a plan that needs less,
    and is still right. A problem first met with little memory is benchmarked within it."""
    import ucudnn
    from ucudnn._native import _cuda
    from ucudnn.errors import WorkspaceFallbackWarning
    from ucudnn.faces.numpy_api import release_handles

    rng = np.random.default_rng(9)
    # (batch, room for how many copies of the arrays, whether the planned workspace is gone)
    for batch, room, warns in ((8, None, False), (8, 1, True), (4, 3, False)):
        problem = ConvProblem.create(batch, 64, 64, (28, 28), 3, padding=1, math_type="fma")
        x = rng.standard_normal(problem.x_shape).astype(np.float32)
        w = rng.standard_normal(problem.w_shape).astype(np.float32)
        if room is not None:
            release_handles()
            sim.reset()
            free = _cuda.mem_get_info()[0]
            granules = sum(-(-problem.nbytes(t) // (2 * MiB)) * 2 * MiB for t in "xwy")
            sim.withhold_memory(free - room * granules)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = ucudnn.conv_forward(x, w, padding=1, workspace_limit="1GiB", allow_tf32=False)
        fell_back = [c for c in caught if issubclass(c.category, WorkspaceFallbackWarning)]
        assert bool(fell_back) == warns
        expected = ref.forward(problem, x, w)
        assert normalised_l2(y, expected) <= tolerance(problem, same_algorithm=False)


def test_an_array_on_another_device_is_refused_by_name() -> None:
    """UCUDNN_SIM_DEVICES=2: two devices, addresses apart, each array knowing its own."""
    code = (
        "import numpy as np\n"
        "from ucudnn._native import _cuda\n"
        "from ucudnn.core.array import DeviceArray\n"
        "from ucudnn.core.problem import ConvProblem\n"
        "from ucudnn.runtime.handle import Handle\n"
        "problem = ConvProblem.create(1, 1, 1, (3, 3), 1)\n"
        "_cuda.set_device(1)\n"
        "x = DeviceArray.from_numpy(np.ones((1, 1, 3, 3), np.float32))\n"
        "print(_cuda.device_count(), _cuda.pointer_device(x.ptr))\n"
        "_cuda.set_device(0)\n"
        "w, y = (DeviceArray.from_numpy(np.ones((1, 1, 1, 1), np.float32)) for _ in range(2))\n"
        "try:\n"
        "    Handle(workspace_limit=0, use_cache=False).forward(x, w, y, problem)\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "UCUDNN_DEVICE": "sim", "UCUDNN_SIM_DEVICES": "2"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.splitlines() == ["2 1", "x is on device 1, but this handle uses device 0"]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("UCUDNN_SIM_MEMORY_GIB", "1e400", "expected a number from 0 to 1048576"),
        ("UCUDNN_SIM_MEMORY_GIB", "9" * 5000, "(5000 characters)"),
        ("UCUDNN_SIM_DEVICES", "9" * 5000, "(5000 characters)"),
        ("UCUDNN_SIM_DEVICES", "65", "expected an integer from 0 to 64"),
    ],
)
def test_the_simulators_settings_are_bounded(monkeypatch, variable, value, says) -> None:
    """Huge or endless numbers in its settings get one short message naming the variable."""
    from ucudnn.testing.simulator.device import SimConfig

    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable) as info:
        SimConfig.from_environment()
    assert says in str(info.value) and len(str(info.value)) < 300
