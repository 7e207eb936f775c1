"""The Handle and micro-batched execution.

On a CPU: argument errors and the no-device error. On a GPU: micro-batched results equal
undivided ones (three kernels x beta x dtypes x layouts x 2D/3D), workspace stays within the
limit, allocation failure falls back, many calls do not grow memory, and the cache serves a
second benchmark.
"""

from __future__ import annotations

import resource

import numpy as np
import pytest

from tests import reference_conv as ref
from tests.conftest import gpu_available
from ucudnn.core.problem import ConvProblem, to_physical
from ucudnn.errors import CudaOutOfMemoryError, UcudnnError, WorkspaceFallbackWarning
from ucudnn.planner.tables import Candidate
from ucudnn.runtime.check import normalised_l2, tolerance
from ucudnn.runtime.steps import ROLES

MiB = 1 << 20


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"workspace_limit": MiB, "total_workspace": 8 * MiB}, ValueError, "not both"),
        ({"workspace_limit": -1}, ValueError, "workspace_limit=-1 is not a size"),
        ({"workspace_limit": float("nan")}, TypeError, "workspace_limit=nan is not a size"),
        ({"total_workspace": 1.5}, TypeError, "total_workspace=1.5 is not a size"),
        ({"workspace_limit": True}, TypeError, "workspace_limit=True is not a size"),
        ({"workspace_limit": "lots"}, ValueError, "workspace_limit='lots' is not a size"),
        ({"policy": [4, 0]}, ValueError, "policy micro-batch size must be >= 1"),
        ({"policy": "sometimes"}, ValueError, "policy='sometimes' is not a policy"),
        ({"stream": -1}, ValueError, "stream must be >= 0"),
        ({"stream": 1.0}, TypeError, "stream must be an integer"),
        ({"check": "yes"}, TypeError, "check must be True or False"),
        ({"deterministic": 1}, TypeError, "deterministic must be True or False"),
        ({"database": 3}, TypeError, "database must be a path"),
        ({"benchmark": {"warmup": 1}}, TypeError, "benchmark must be a BenchmarkSettings"),
    ],
)
def test_bad_arguments_are_refused_before_device_work(arguments, error, message) -> None:
    """Without a GPU, an argument that got past the checks would end in NoDeviceError."""
    from ucudnn.runtime.handle import Handle

    with pytest.raises(error, match=message):
        Handle(**arguments)


@pytest.mark.parametrize("value", ["maybe", "2", "nein"])
def test_a_bad_check_variable_is_refused_before_device_work(monkeypatch, value) -> None:
    from ucudnn.runtime.handle import Handle

    monkeypatch.setenv("UCUDNN_CHECK", value)
    with pytest.raises(ValueError, match=f"UCUDNN_CHECK={value!r} is not a yes/no value"):
        Handle(workspace_limit=MiB)


def test_without_a_device_the_handle_says_so() -> None:
    if gpu_available()[0]:
        pytest.skip("a GPU is present")
    from ucudnn.runtime.handle import Handle

    with pytest.raises(UcudnnError) as caught:
        Handle(workspace_limit=MiB)
    text = str(caught.value).lower()
    assert "driver" in text or "device" in text or "not_initialized" in text


# -- GPU -------------------------------------------------------------------------------------
def _problem(rank: int, dtype: str, channels_last: bool, batch: int = 6) -> ConvProblem:
    layout = {(2, False): "NCHW", (2, True): "NHWC", (3, False): "NCDHW", (3, True): "NDHWC"}
    size = (9, 10) if rank == 2 else (5, 6, 4)
    return ConvProblem.create(
        batch, 4, 8, size, 3, padding=1, dtype=dtype, layout=layout[(rank, channels_last)],
        math_type="fma" if dtype == "float32" else "default",
    )  # fmt: skip


def _upload(problem: ConvProblem, rng: np.random.Generator):
    """Random x, w, y in the problem's layout on the device, plus their logical host copies."""
    from ucudnn.core.array import DeviceArray

    host, device = {}, {}
    for tensor, dims in (("x", problem.x_dims), ("w", problem.w_dims), ("y", problem.y_dims)):
        layout = problem.filter_layout if tensor == "w" else problem.layout
        logical = rng.standard_normal(dims).astype(problem.dtype)
        stored = np.moveaxis(logical, 1, -1) if layout[-1] == "C" else logical
        host[tensor] = logical
        device[tensor] = DeviceArray.from_numpy(np.ascontiguousarray(stored))
        assert device[tensor].shape == to_physical(dims, layout)
    return host, device


def _logical(array, problem: ConvProblem, tensor: str) -> np.ndarray:
    layout = problem.filter_layout if tensor == "w" else problem.layout
    values = array.to_numpy()
    return np.moveaxis(values, -1, 1) if layout[-1] == "C" else values


def _runnable_algorithm(handle, descs, kernel: str, sizes, scratch) -> tuple[int, dict[int, int]]:
    """The algorithm that runs at every size in `sizes` with the least workspace (its largest
    over the sizes; then the lowest number), and its workspace at each size, as cuDNN reports
    them: the workspace query under the problem's math type, and Find's status on `scratch`
    (Find overwrites its output) with as much workspace as any algorithm asked for. Without
    one, the test is skipped with cuDNN's status for each algorithm."""
    from collections import Counter

    from ucudnn._native import _cuda, _cudnn
    from ucudnn.errors import CudnnError
    from ucudnn.runtime import backend

    problem = descs.problem
    algos = range(len(_cudnn.ALGORITHMS[kernel]))
    needs: dict[int, dict[int, int]] = {algo: {} for algo in algos}
    refused: dict[int, str] = {}  # algorithm -> the first status that ruled it out
    for b in sizes:
        for algo in algos:
            if algo in refused:
                continue
            try:
                needs[algo][b] = backend.workspace_size(
                    handle, descs, kernel, b, algo, problem.math_type
                )
            except CudnnError as exc:
                refused[algo] = exc.status_name
        asked = [algo for algo in algos if algo not in refused]
        if not asked:
            break
        # Find also says which algorithms fail to run although their size query answered.
        workspace = _cuda.DeviceBuffer(max(needs[algo][b] for algo in asked))
        try:
            pointers = {t: a.ptr for t, a in scratch.items()}
            perfs = backend.find(
                handle, descs, kernel, b, **pointers,
                workspace=workspace.ptr, workspace_bytes=workspace.nbytes,
            )  # fmt: skip
        except CudnnError as exc:
            refused.update(dict.fromkeys(asked, exc.status_name))
            break
        finally:
            workspace.release()
        ran = {perf.algo for perf in perfs if perf.status == 0}
        for algo in asked:
            if algo not in ran:
                refused[algo] = next(
                    (p.status_name for p in perfs if p.algo == algo), "not listed by Find"
                )
    runnable = [algo for algo in algos if algo not in refused]
    if not runnable:
        statuses = Counter(refused[algo] for algo in algos)
        pytest.skip(
            f"cuDNN runs no {kernel} algorithm for {problem.describe()}: "
            + ", ".join(f"{count} x {status}" for status, count in statuses.most_common())
        )
    best = min(runnable, key=lambda algo: (max(needs[algo].values()), algo))
    return best, needs[best]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize(("rank", "channels_last"), [(2, False), (2, True), (3, False), (3, True)])
def test_forced_split_equals_undivided(kernel, beta, dtype, rank, channels_last) -> None:
    """A hand-made 3+2+1 schedule against the undivided call, through the executor, with one
    algorithm that cuDNN runs at every size, given the workspace it asks for."""
    from ucudnn._native import _cuda, _cudnn
    from ucudnn.runtime import backend, executor

    problem = _problem(rank, dtype, channels_last)
    output = ROLES[kernel][2]
    host, split = _upload(problem, np.random.default_rng(7))
    _, whole = _upload(problem, np.random.default_rng(7))
    _, scratch = _upload(problem, np.random.default_rng(8))
    handle = _cudnn.Handle()
    descs = backend.ProblemDescriptors(problem)
    algo, needs = _runnable_algorithm(handle, descs, kernel, (6, 3, 2, 1), scratch)
    math = problem.math_type
    workspace = _cuda.DeviceBuffer(max(needs.values()))
    try:
        for arrays, parts in (
            (split, [Candidate(b, algo, 0.0, needs[b], math) for b in (3, 2, 1)]),
            (whole, [Candidate(6, algo, 0.0, needs[6], math)]),
        ):
            pointers = {t: a.ptr for t, a in arrays.items()}
            executor.execute(handle, descs, kernel, parts, **pointers, workspace=workspace.ptr,
                             workspace_bytes=workspace.nbytes, alpha=0.75, beta=beta)  # fmt: skip
    finally:
        workspace.release()
    got = _logical(split[output], problem, output)
    undivided = _logical(whole[output], problem, output)
    assert normalised_l2(got, undivided) <= tolerance(problem)
    # and both equal alpha * reference + beta * old output
    inputs = [host[t] for t in ROLES[kernel][:2]]
    expected = 0.75 * ref.KERNELS[kernel](problem, *inputs) + beta * host[output]
    assert normalised_l2(got, expected) <= max(tolerance(problem), 2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("policy", ["undivided", "powerOfTwo", "all", [1, 3]])
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_handle_results_match_reference(tmp_path, policy, kernel, beta) -> None:
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False, batch=12)
    host, device = _upload(problem, np.random.default_rng(3))
    output = ROLES[kernel][2]
    with Handle(workspace_limit=8 * MiB, policy=policy, database=tmp_path / "db.sqlite",
                check=True) as handle:  # fmt: skip
        getattr(handle, kernel)(*(device[t] for t in ROLES[kernel]), problem, alpha=1.5, beta=beta)
        got = _logical(device[output], problem, output)
        assert handle.schedule(problem, kernel).batch == 12
        assert all(result.ok for result in handle.check.results)
    inputs = [host[t] for t in ROLES[kernel][:2]]
    expected = 1.5 * ref.KERNELS[kernel](problem, *inputs) + beta * host[output]
    # The plan may use FFT or Winograd: against an exact reference, the cross-algorithm bound.
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_run_by_name_is_the_kernels_own_method(tmp_path, kernel) -> None:
    from ucudnn.core.array import DeviceArray
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False, batch=6)
    _, device = _upload(problem, np.random.default_rng(5))
    output = ROLES[kernel][2]
    tensors = [device[t] for t in ROLES[kernel]]
    with Handle(workspace_limit=MiB, database=tmp_path / "db.sqlite") as handle:
        getattr(handle, kernel)(*tensors, problem, alpha=1.5, layer="conv")
        by_method = device[output].to_numpy()
        handle.run(kernel, problem, tensors, alpha=1.5, layer="conv")
        np.testing.assert_array_equal(device[output].to_numpy(), by_method)
        with pytest.raises(ValueError, match="kernel"):
            handle.run("sideways", problem, tensors)
        if kernel != "forward":
            bias = DeviceArray.from_numpy(np.zeros(problem.out_channels, np.float32))
            with pytest.raises(ValueError, match="bias is added by the forward kernel"):
                handle.run(kernel, problem, tensors, bias=bias)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_micro_batches_at_poorly_aligned_offsets_stay_correct(tmp_path, kernel) -> None:
    """3x7x7 float16 samples are 294 bytes, so micro-batches with an odd first sample start
    only 2-byte aligned; every size was benchmarked at such an offset."""
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(
        10, 3, 8, (7, 7), 3, padding=1, dtype="float16", layout="NHWC", math_type="tensor_op"
    )
    host, device = _upload(problem, np.random.default_rng(4))
    output = ROLES[kernel][2]
    with Handle(workspace_limit=MiB, policy="all", database=tmp_path / "db.sqlite",
                check=True) as handle:  # fmt: skip
        getattr(handle, kernel)(*(device[t] for t in ROLES[kernel]), problem)
        assert all(result.ok for result in handle.check.results)
    got = _logical(device[output], problem, output)
    expected = ref.KERNELS[kernel](problem, *(host[t] for t in ROLES[kernel][:2]))
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["wr", "wd"])
def test_workspace_stays_within_the_limit(tmp_path, mode) -> None:
    from ucudnn._native import _cuda
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.measure import run_once
    from ucudnn.runtime.work import Work

    limit = 4 * MiB
    work = [
        Work(f"l{i}", ConvProblem.create(32, c, c, (28, 28), k, padding=k // 2), kernel)
        for i, (c, k) in enumerate([(32, 3), (64, 5), (64, 1)])
        for kernel in ROLES
    ]
    limits = {"workspace_limit": limit} if mode == "wr" else {"total_workspace": limit}
    with Handle(**limits, database=tmp_path / "db.sqlite") as handle:
        run_once(handle, work)
        assert handle.workspace_in_use <= limit
        assert all(k.workspace_bytes <= limit for k in handle.plan.kernels)
        if mode == "wd":
            assert sum(k.workspace_bytes for k in handle.plan.kernels) <= limit
        # What the handle itself holds, measured by giving it back: free memory before the
        # first call would also count CUDA's lazily loaded kernels and cuDNN's own buffers.
        _cuda.device_synchronize()
        free_holding = _cuda.mem_get_info()[0]
        handle.release_workspace()
        held = _cuda.mem_get_info()[0] - free_holding
        assert held <= limit + 2 * MiB  # the allocator's granularity
        run_once(handle, work)  # planned already: allocates the same arena again
        assert handle.workspace_in_use <= limit


@pytest.mark.gpu
def test_allocation_failure_falls_back_and_stays_correct(tmp_path, monkeypatch) -> None:
    """The workspace the plan wants is refused, as cudaMalloc refuses it when memory is short:
    the Handle warns, plans within less, and the result is still right."""
    from ucudnn.core import arena
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(32, 64, 64, (56, 56), 3, padding=1, math_type="fma")
    host, device = _upload(problem, np.random.default_rng(5))
    with Handle(workspace_limit=4 << 30, database=tmp_path / "db.sqlite") as handle:
        wanted = handle.workspace_size(problem, "forward")
        if wanted == 0:
            pytest.skip("the fastest forward algorithm needs no workspace here; nothing to force")
        handle.release_workspace()
        # GrowingArena allocates every workspace through `Arena`: refusing there fails the
        # allocation on any device, where starving the real allocator depends on its accounting.
        refused: list[int] = []
        allocate = arena.Arena

        def short_of_memory(nbytes: int, alignment: int = arena.CUDNN_ALIGNMENT) -> arena.Arena:
            if nbytes >= wanted:
                refused.append(nbytes)
                raise CudaOutOfMemoryError(
                    2, "cudaErrorMemoryAllocation", "cudaMalloc", f"injected for {nbytes} bytes"
                )
            return allocate(nbytes, alignment)

        monkeypatch.setattr(arena, "Arena", short_of_memory)
        with pytest.warns(WorkspaceFallbackWarning, match="falling back"):
            handle.forward(device["x"], device["w"], device["y"], problem)
        assert refused and handle.workspace_in_use < wanted
    got = _logical(device["y"], problem, "y")
    expected = ref.forward(problem, host["x"], host["w"])
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
def test_arrays_from_another_stream_are_ordered_before_the_handles_stream(tmp_path) -> None:
    """x and w are copied in on one non-blocking stream, the handle runs on another."""
    from ucudnn._native import _cuda
    from ucudnn.core.array import DeviceArray
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(16, 32, 32, (40, 40), 3, padding=1, math_type="fma")
    rng = np.random.default_rng(11)
    x = rng.standard_normal(problem.x_shape).astype(np.float32)
    w = rng.standard_normal(problem.w_shape).astype(np.float32)
    producer, consumer = _cuda.Stream(), _cuda.Stream()
    with Handle(workspace_limit=MiB, stream=consumer.handle, database=tmp_path / "db") as handle:
        handle.schedule(problem, "forward")  # plan first: the copies below are then fresh
        device_x = DeviceArray.from_numpy(x, stream=producer.handle)
        device_w = DeviceArray.from_numpy(w, stream=producer.handle)
        y = DeviceArray.empty(problem.y_shape, "float32", stream=consumer.handle)
        handle.forward(device_x, device_w, y, problem)
        got = y.to_numpy(stream=consumer.handle)
    expected = ref.forward(problem, x, w)
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
def test_many_planned_calls_do_not_grow_memory(tmp_path) -> None:
    from ucudnn._native import _cuda
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(4, 8, 8, (8, 8), 3, padding=1)
    _, device = _upload(problem, np.random.default_rng(1))
    tensors = [device[t] for t in ROLES["forward"]]
    with Handle(workspace_limit=MiB, database=tmp_path / "db.sqlite") as handle:
        for _ in range(1000):  # plan, warm up caches and allocator
            handle.forward(*tensors, problem)
        _cuda.device_synchronize()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        free = _cuda.mem_get_info()[0]
        for _ in range(100_000):
            handle.forward(*tensors, problem)
        _cuda.device_synchronize()
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 16 * 1024  # KiB
        assert _cuda.mem_get_info()[0] == free


@pytest.mark.gpu
def test_layers_seen_with_several_problems_get_their_own_names(tmp_path) -> None:
    """Unnamed layers are conv0, conv1, ... by order of first sight; a name already taken
    (a layer at a second batch size, a user's name that clashes) gets "#2", "#3", ..."""
    from ucudnn.runtime.handle import Handle

    small = ConvProblem.create(2, 4, 8, (8, 8), 3, padding=1)
    with Handle(workspace_limit=MiB, database=tmp_path / "db.sqlite") as handle:
        handle.register(small, "forward")
        handle.register(small.with_batch(4), "forward", layer="conv0")
        handle.register(small.with_batch(3), "forward", layer="conv0")
        handle.register(small.with_batch(4), "forward")
        handle.register(small, "forward")  # seen already: no new name
        names = [kernel_plan.layer for kernel_plan in handle.finalize().kernels]
    assert sorted(names) == ["conv0", "conv0#2", "conv0#3", "conv3"]


@pytest.mark.gpu
def test_second_benchmark_is_served_from_the_cache(tmp_path) -> None:
    from ucudnn.planner.networks import builtin_network
    from ucudnn.runtime.benchmark import BenchmarkSettings
    from ucudnn.runtime.session import open_benchmarker
    from ucudnn.runtime.work import work_from_graph

    work = work_from_graph(builtin_network("alexnet", batch=8))
    settings = BenchmarkSettings(progress=False)  # engines as by default: both families
    with open_benchmarker(tmp_path / "db.sqlite", settings) as first:
        measured = first.tables(work, "powerOfTwo")
        assert first.counts["measured"] > 0
    with open_benchmarker(tmp_path / "db.sqlite", settings) as second:
        cached = second.tables(work, "powerOfTwo")
        assert second.counts == {"measured": 0, "cached": sum(first.counts.values())}
    # The same measurements, whatever order each side lists them in (Find's order when
    # measured, the cache's when read back).
    assert _rows(cached) == _rows(measured)


def _rows(tables) -> list[tuple]:
    return sorted(tuple(row.values()) for row in tables.to_rows())


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("kernel", "names"),
    [
        ("forward", ("x", "w", "y")),
        ("backward_data", ("w", "dy", "dx")),
        ("backward_filter", ("x", "dy", "dw")),
    ],
)
def test_a_numpy_array_is_refused_by_its_name_and_told_where_to_go(kernel, names) -> None:
    """Each tensor in turn passed as a host array: the error names that argument and points to
    DeviceArray.from_numpy and the numpy functions (issue 37)."""
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False)
    _, device = _upload(problem, np.random.default_rng(3))
    with Handle(workspace_limit=1 << 20, use_cache=False, engines=False) as handle:
        for index, name in enumerate(names):
            tensors = [device[t] for t in ROLES[kernel]]
            tensors[index] = tensors[index].to_numpy()
            with pytest.raises(
                ValueError,
                match=rf"^{name}: this numpy ndarray is on the CPU, in host memory; copy it to the "
                rf"device with ucudnn\.DeviceArray\.from_numpy\({name}\), or pass numpy arrays "
                r"to ucudnn\.conv_forward, conv_backward_data or conv_backward_filter instead$",
            ):
                getattr(handle, kernel)(*tensors, problem)
