"""Schedules cut into slabs (spatial micro-batches) run by the executor on the device.

Each case runs a hand-made schedule whose parts are cut into slabs — whole batch or micro-batch
then slab — against the undivided call of the same algorithm and against the reference
convolution, for the three kernels, beta 0, 0.5 and 1, 2D and 3D in both layouts, strides,
dilations, even and odd filters, "same" padding, and extents of 1, 2, an odd one that does not
divide the planes, and the whole. Border slabs are padded on one side: the legacy algorithms
run them on a staged x (runtime/staging.py), the engine configurations with unequal pre and
post paddings. On the simulated device these check the slicing, staging and alpha/beta rules,
not cuDNN's own behaviour, which only hardware shows.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import reference_conv as ref
from tests.test_handle import _logical, _upload
from ucudnn.core import slabs
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.tables import Candidate
from ucudnn.runtime.check import normalised_l2, tolerance
from ucudnn.runtime.steps import ROLES

pytestmark = pytest.mark.gpu

LAYOUTS = {(2, False): "NCHW", (2, True): "NHWC", (3, False): "NCDHW", (3, True): "NDHWC"}
# (rank, channels last, dtype, filter, padding, stride, dilation)
CASES = [
    (3, False, "float32", 3, 1, 1, 1),  # "same"
    (3, True, "float16", 3, 1, 1, 1),
    (3, False, "float64", (4, 3, 3), (1, 1, 1), 1, 1),  # even filter along the split axis
    (2, False, "float32", 3, 2, 1, 2),  # dilation 2, "same"
    (2, True, "float32", 3, 1, 2, 1),  # stride 2
    (2, False, "float64", (2, 3), (1, 1), (3, 1), 1),  # stride past the filter: a dx phase
]


def _case_problem(rank, channels_last, dtype, filt, pad, stride, dilation) -> ConvProblem:
    size = (7, 5) if rank == 2 else (7, 4, 3)
    return ConvProblem.create(
        2, 3, 4, size, filt, pad, stride, dilation, dtype=dtype,
        layout=LAYOUTS[(rank, channels_last)],
        math_type="fma" if dtype == "float32" else "default",
    )  # fmt: skip


def _slab_workspace(handle, problem: ConvProblem, kernel: str, algo: int, parts) -> int:
    """The most workspace any slab of `parts` needs with legacy `algo`, staging included."""
    from ucudnn.runtime import backend

    need = 0
    for part in parts:
        cuts = slabs.slabs(problem, kernel, part.slab) if part.slab else [None]
        for cut in cuts:
            shape = problem if cut is None else cut.problem(problem)
            descs = backend.ProblemDescriptors(shape)
            need = max(
                need,
                backend.workspace_size(
                    handle, descs, kernel, part.micro_batch, algo, problem.math_type
                ),
            )
    return need


@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(map(str, case)))
def test_slabs_equal_the_undivided_call_and_the_reference(kernel, beta, case) -> None:
    from ucudnn._native import _cuda, _cudnn
    from ucudnn.runtime import backend, executor

    problem = _case_problem(*case)
    output = ROLES[kernel][2]
    planes = slabs.planes(problem, kernel)
    algo = 0  # implicit GEMM: every kernel, every shape, no workspace of its own
    handle = _cudnn.Handle()
    descs = backend.ProblemDescriptors(problem)
    inputs = None
    # An odd extent that does not divide the planes, where one does; else one slab of them all.
    odd = next((e for e in (3, 5) if e < planes and planes % e), planes)
    schedules = {
        "undivided": [(2, 0)],
        "slabs of 1": [(2, 1)],
        "slabs of 2": [(2, min(2, planes))],
        "odd slabs": [(2, odd)],
        "micro-batch then slab": [(1, min(2, planes)), (1, 0)],
    }
    results = {}
    for name, shape in schedules.items():
        host, device = _upload(problem, np.random.default_rng(40))
        inputs = inputs or host
        parts = [Candidate(b, algo, 0.0, 0, problem.math_type, slab=e) for b, e in shape]
        need = _slab_workspace(handle, problem, kernel, algo, parts)
        parts = [Candidate(p.micro_batch, algo, 0.0, need, p.math_type, slab=p.slab) for p in parts]
        workspace = _cuda.DeviceBuffer(need)
        try:
            pointers = {t: a.ptr for t, a in device.items()}
            executor.execute(handle, descs, kernel, parts, **pointers, workspace=workspace.ptr,
                             workspace_bytes=need, alpha=0.75, beta=beta)  # fmt: skip
            results[name] = _logical(device[output], problem, output)
        finally:
            workspace.release()
    assert inputs is not None
    expected = 0.75 * ref.KERNELS[kernel](problem, *[inputs[t] for t in ROLES[kernel][:2]])
    expected = expected + beta * inputs[output]
    for name, got in results.items():
        assert normalised_l2(got, results["undivided"]) <= tolerance(problem), name
        assert normalised_l2(got, expected) <= max(tolerance(problem), 2e-3), name


def test_a_border_slab_of_the_legacy_api_is_staged_in_its_workspace() -> None:
    """The first slab of a "same" convolution is padded before only: its legacy descriptors
    describe the staged x, and its workspace counts the staged buffer."""
    from ucudnn.runtime import backend

    problem = _case_problem(*CASES[0])
    first, middle = slabs.slabs(problem, "forward", 2)[:2]
    border = backend.ProblemDescriptors(first.problem(problem))
    inside = backend.ProblemDescriptors(middle.problem(problem))
    assert border.staging is not None and inside.staging is None
    staged = border.staging.legacy
    assert staged.input_size[0] == first.x_planes + 1 and staged.padding[0] == 0
    assert border.staging.nbytes(2) >= staged.with_batch(2).nbytes("x")


def _engine_choices(handle, problem, kernel, extent, pointers, beta):
    """For each slab step of `kernel` cut into slabs of `extent`, the tags cuDNN's heuristics
    rank that the problem's math type allows, each with the workspace of the plan it builds
    for that step's alignments and scalars (None where it does not build), and the engine
    index of each tag."""
    from ucudnn.core import engines
    from ucudnn.errors import CudnnError
    from ucudnn.runtime import graph
    from ucudnn.runtime.steps import schedule_steps

    placeholder = [Candidate(problem.batch, 0, 0.0, 0, problem.math_type, slab=extent)]
    per_step, index = [], {}
    for step in schedule_steps(problem, kernel, placeholder, 0.75, beta):
        at_size = step.problem(problem).with_batch(step.micro_batch)
        alignments = (
            graph.alignment(pointers["x"] + step.x_offset_bytes),
            graph.alignment(pointers["w"]),
            graph.alignment(pointers["y"] + step.y_offset_bytes),
        )
        op_graph = graph.operation_graph(handle, at_size, kernel, alignments, 0.75, step.beta)
        built = {}
        for choice in graph.heuristic_choices(op_graph):
            if engines.refusal(choice.notes, problem.dtype, problem.math_type, False):
                continue
            index[choice.config.tag] = (choice.config.index, choice.notes)
            try:
                plan = graph.build_plan(handle, choice.descriptor, choice.config.tag)
            except CudnnError:
                built[choice.config.tag] = None
                continue
            built[choice.config.tag] = plan.workspace_bytes
        per_step.append(built)
    return per_step, index


def _run_engine_slabs(problem, kernel, beta, pick):
    """Cut `kernel` into slabs of 2 planes, all run by the configuration `pick` chooses from
    (per-step choices, engine indices); returns (result, expected, fallback warnings)."""
    import warnings

    from ucudnn._native import _cuda, _cudnn
    from ucudnn.core import engines
    from ucudnn.errors import EngineFallbackWarning
    from ucudnn.runtime import backend, executor
    from ucudnn.runtime.engine_calls import EngineRuns

    output = ROLES[kernel][2]
    host, device = _upload(problem, np.random.default_rng(41))
    pointers = {t: a.ptr for t, a in device.items()}
    handle = _cudnn.Handle()
    per_step, index = _engine_choices(handle, problem, kernel, 2, pointers, beta)
    tag = pick(per_step, index)
    if tag is None:
        pytest.skip(f"no configuration suits this test for {kernel} of {problem.describe()}")
    algo, notes = index[tag]
    # Enough for the engine where it builds and for the staged legacy fallback where not.
    need = 1 << 20
    part = Candidate(problem.batch, algo, 0.0, need, engines.math_type_of(problem.dtype, notes),
                     engine=tag, slab=2)  # fmt: skip
    workspace = _cuda.DeviceBuffer(need)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EngineFallbackWarning)
            executor.execute(
                handle, backend.ProblemDescriptors(problem), kernel, [part], **pointers,
                workspace=workspace.ptr, workspace_bytes=need, alpha=0.75, beta=beta,
                engine_runs=EngineRuns(),
            )  # fmt: skip
    finally:
        workspace.release()
    got = _logical(device[output], problem, output)
    expected = 0.75 * ref.KERNELS[kernel](problem, *(host[t] for t in ROLES[kernel][:2]))
    expected = expected + beta * host[output]
    fallbacks = [w for w in caught if issubclass(w.category, EngineFallbackWarning)]
    return got, expected, fallbacks


def _builds_everywhere(per_step, index):
    return next((t for t in per_step[1] if all(s.get(t) is not None for s in per_step)), None)


@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
@pytest.mark.parametrize("case", CASES[:2] + CASES[3:5], ids=lambda case: "-".join(map(str, case)))
def test_engine_slabs_pad_border_slabs_on_one_side(kernel, beta, case) -> None:
    """One engine configuration that builds for every slab, border slabs with unequal pre and
    post paddings included, runs them all: no fallback, and the reference's result."""
    problem = _case_problem(*case)
    if problem.dtype == "float64":
        pytest.skip("the engines run no float64")
    got, expected, fallbacks = _run_engine_slabs(problem, kernel, beta, _builds_everywhere)
    assert not fallbacks, fallbacks[0].message
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.simulator
@pytest.mark.parametrize("kernel", ["forward", "backward_filter"])
def test_an_engine_that_refuses_unequal_padding_falls_back_at_the_border(kernel) -> None:
    """An engine the simulator makes refuse unequal paddings (PAD_ALIKE_ONLY) runs the interior
    slabs; the border slabs fall back to a staged legacy algorithm, warned once, still right."""
    from ucudnn.testing.simulator.engines import PAD_ALIKE_ONLY

    problem = _case_problem(*CASES[1])  # float16: the tensor-core engines are offered

    def refusing(per_step, index):
        inside = per_step[1]
        return next((t for t in inside if index[t][0] in PAD_ALIKE_ONLY and inside[t]), None)

    got, expected, fallbacks = _run_engine_slabs(problem, kernel, 0.5, refusing)
    assert len(fallbacks) == 1 and "legacy algorithm" in str(fallbacks[0].message)
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


def _volume(dtype: str = "float32", layout: str = "NCDHW") -> ConvProblem:
    """One sample of a small "same" 3D convolution: nothing for the batch to split."""
    return ConvProblem.create(1, 4, 8, (9, 6, 5), 3, 1, dtype=dtype, layout=layout,
                              math_type="fma" if dtype == "float32" else "default")  # fmt: skip


@pytest.mark.parametrize("engines", [False, True])
def test_a_handle_runs_a_plan_of_slabs_within_its_limit(tmp_path, engines) -> None:
    """A Handle measures the kernels cut into slabs as its slab policy says; a plan made of
    slab parts alone (the fastest of them within the limit) then runs every kernel to the
    reference's result, in no more workspace than it planned."""
    from ucudnn.planner.plan import make_plan_wr
    from ucudnn.planner.tables import KernelTable, TimingTables
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work

    problem = _volume()
    limit = 1 << 20
    host, _ = _upload(problem, np.random.default_rng(42))
    kernels = ["forward", "backward_data", "backward_filter"]
    with Handle(workspace_limit=limit, slab_policy="powerOfTwo", engines=engines,
                database=tmp_path / "cache.sqlite") as handle:  # fmt: skip
        handle.register(problem, kernels, layer="conv")
        work = [Work("conv", problem, k) for k in kernels]
        measured = handle.benchmarker.tables(work, handle.policy, slab_policy=handle.slab_policy)
        sliced = TimingTables()
        for kernel_id, table in measured.items():
            assert {c.slab for c in table} >= {1, 2, 4}, kernel_id  # planes 9: 1, 2, 4, 8
            only = KernelTable(table.layer, table.kernel, table.batch)
            for candidate in table:
                if candidate.slab:
                    only.add(candidate)
            sliced.add(only)
        plan = make_plan_wr(sliced, limit, handle.policy)
        handle.use_plan(plan)
        for kernel in kernels:
            output = ROLES[kernel][2]
            _, arrays = _upload(problem, np.random.default_rng(42))
            getattr(handle, kernel)(*(arrays[t] for t in ROLES[kernel]), problem,
                                    layer="conv", beta=0.5)  # fmt: skip
            got = _logical(arrays[output], problem, output)
            expected = ref.KERNELS[kernel](problem, *(host[t] for t in ROLES[kernel][:2]))
            expected = expected + 0.5 * host[output]
            assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)
            assert all(part.slab for part in plan[("conv", kernel)].schedule.parts)
        assert handle.workspace_in_use <= limit


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_the_numpy_functions_take_a_slab_policy(layout) -> None:
    """The three NumPy functions with a slab policy: the reference's results."""
    import ucudnn

    problem = _volume("float32", layout)
    rng = np.random.default_rng(43)
    x, w, dy = (rng.standard_normal(shape).astype(np.float32)
                for shape in (problem.x_shape, problem.w_shape, problem.y_shape))  # fmt: skip
    options = {"padding": 1, "layout": layout, "slab_policy": [2, 3], "workspace_limit": "1MiB"}
    got = {
        "forward": ucudnn.conv_forward(x, w, **options),
        "backward_data": ucudnn.conv_backward_data(w, dy, x.shape, **options),
        "backward_filter": ucudnn.conv_backward_filter(x, dy, w.shape, **options),
    }
    stored = {"x": x, "w": w, "y": dy}
    logical = {t: np.moveaxis(a, -1, 1) if layout[-1] == "C" else a for t, a in stored.items()}
    for kernel, result in got.items():
        expected = ref.KERNELS[kernel](problem, *(logical[t] for t in ROLES[kernel][:2]))
        result = np.moveaxis(result, -1, 1) if layout[-1] == "C" else result  # w's layout too
        assert normalised_l2(result, expected) <= tolerance(problem, same_algorithm=False), kernel


@pytest.mark.simulator
def test_backward_filter_slabs_are_measured_adding_into_dw(tmp_path) -> None:
    """Backward filter's slabs add into dW with beta 1, so they are measured so: a
    configuration whose beta-1 plan cannot build (the simulator's that set its workspace knob
    to 1) runs the whole volume, but is never a candidate cut into slabs."""
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work
    from ucudnn.testing.simulator.engines import WORKSPACE_KNOB

    problem = ConvProblem.create(1, 4, 8, (9, 6, 5), 3, (0, 1, 1), dtype="float16")
    work = [Work("conv", problem, "backward_filter")]
    with Handle(workspace_limit="64MiB", engines=True,
                database=tmp_path / "cache.sqlite") as handle:  # fmt: skip
        table = handle.benchmarker.tables(work, handle.policy, slab_policy="powerOfTwo")[
            ("conv", "backward_filter")
        ]
    blends_not = f"_k{WORKSPACE_KNOB}=1"
    assert any(blends_not in c.engine for c in table if not c.slab)
    sliced = [c for c in table if c.slab and c.engine]
    assert sliced and not any(blends_not in c.engine for c in sliced)


def test_a_staged_border_slab_beyond_the_benchmark_cap_is_no_candidate(tmp_path) -> None:
    """A border slab's staged x larger than the benchmark's workspace cap leaves no legacy
    algorithm to run it: no slab candidate, and the whole volume's candidates as before."""
    from ucudnn.runtime.benchmark import BenchmarkSettings
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work

    problem = _volume()
    cap = 600  # bytes: less than any border slab's staged x
    settings = BenchmarkSettings(workspace_cap=cap)
    with Handle(workspace_limit=cap, engines=False, benchmark=settings,
                database=tmp_path / "cache.sqlite") as handle:  # fmt: skip
        work = [Work("conv", problem, "forward")]
        table = handle.benchmarker.tables(work, handle.policy, slab_policy="powerOfTwo")[
            ("conv", "forward")
        ]
    assert [c for c in table if not c.slab] and not [c for c in table if c.slab]
