"""Graph-API engine configurations on the device: parts run by engines equal the reference
(three kernels x beta x dtypes x layouts x 2-D/3-D, micro-batched at odd offsets), a Handle
that measures engines runs a plan made of them, builds its plans ahead in `finalize`, and falls
back to a legacy algorithm, once warned and still right, when a plan cannot build.

On the simulated device these run against its model of the backend API (a test double); only
a GPU run is evidence about cuDNN itself.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

from tests import reference_conv as ref
from tests.test_handle import _logical, _problem, _upload
from ucudnn.core import engines
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudnnError, EngineFallbackWarning
from ucudnn.planner.plan import make_plan_wr
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.runtime.check import normalised_l2, tolerance
from ucudnn.runtime.steps import ROLES, schedule_steps

MiB = 1 << 20
KERNELS = ["forward", "backward_data", "backward_filter"]


def _engine_parts(handle, problem, kernel, sizes, pointers, alpha, beta) -> list[Candidate]:
    """For each part of `sizes`, in the order and at the offsets it will run, the first
    configuration cuDNN's heuristics rank that the problem's math type allows and that builds
    for that part's alignment and scalars; skips naming the statuses when a part has none."""
    from ucudnn.runtime import graph

    placeholder = [Candidate(b, 0, 0.0, 0, problem.math_type) for b in sizes]
    parts, statuses = [], collections.Counter[str]()
    for index, step in enumerate(schedule_steps(problem, kernel, placeholder, alpha, beta)):
        alignments = (
            graph.alignment(pointers["x"] + step.x_offset_bytes),
            graph.alignment(pointers["w"]),
            graph.alignment(pointers["y"] + step.y_offset_bytes),
        )
        at_size = problem.with_batch(step.micro_batch)
        step_beta = 1.0 if kernel == "backward_filter" and index > 0 else beta
        try:
            op_graph = graph.operation_graph(handle, at_size, kernel, alignments, alpha, step_beta)
            choices = graph.heuristic_choices(op_graph)
        except CudnnError as exc:
            pytest.skip(f"no engine for {kernel} of {at_size.describe()}: {exc.status_name}")
        for choice in choices:
            if engines.refusal(choice.notes, problem.dtype, problem.math_type, False):
                statuses["refused by its notes"] += 1
                continue
            try:
                plan = graph.build_plan(handle, choice.descriptor, choice.config.tag)
            except CudnnError as exc:
                statuses[exc.status_name] += 1
                continue
            math_type = engines.math_type_of(problem.dtype, choice.notes)
            index, tag = choice.config.index, choice.config.tag
            workspace = plan.workspace_bytes
            parts.append(Candidate(step.micro_batch, index, 0.0, workspace, math_type, engine=tag))
            break
        else:
            pytest.skip(
                f"no engine builds {kernel} of {at_size.describe()}: "
                + ", ".join(f"{n} x {s}" for s, n in statuses.most_common())
            )
    return parts


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(("rank", "channels_last"), [(2, False), (2, True), (3, False), (3, True)])
def test_engine_parts_equal_the_reference(kernel, beta, dtype, rank, channels_last) -> None:
    """A 3+2+1 split (run 2, 3, 1: offsets 0, 2 and 5 samples, so odd ones) by engine
    configurations, through the executor; a fall back to legacy would fail the test."""
    from ucudnn._native import _cuda, _cudnn
    from ucudnn.runtime import backend, executor
    from ucudnn.runtime.engine_calls import EngineRuns

    problem = _problem(rank, dtype, channels_last)
    output = ROLES[kernel][2]
    host, device = _upload(problem, np.random.default_rng(11))
    pointers = {t: a.ptr for t, a in device.items()}
    handle = _cudnn.Handle()
    parts = _engine_parts(handle, problem, kernel, (3, 2, 1), pointers, 0.75, beta)
    need = max(p.workspace_bytes for p in parts)
    workspace = _cuda.DeviceBuffer(need)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", EngineFallbackWarning)
            executor.execute(
                handle, backend.ProblemDescriptors(problem), kernel, parts, **pointers,
                workspace=workspace.ptr, workspace_bytes=need, alpha=0.75, beta=beta,
                engine_runs=EngineRuns(),
            )  # fmt: skip
    finally:
        workspace.release()
    got = _logical(device[output], problem, output)
    expected = 0.75 * ref.KERNELS[kernel](problem, *(host[t] for t in ROLES[kernel][:2]))
    expected = expected + beta * host[output]
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


def _engine_plan(handle, problem: ConvProblem, limit: int):
    """A WR plan of the handle's kernels made from its measured engine configurations only."""
    from ucudnn.runtime.work import Work

    work = [Work("conv", problem, kernel) for kernel in KERNELS]
    for item in work:
        handle.register(item.problem, item.kernel, layer=item.layer)
    measured = handle.benchmarker.tables(work, handle.policy)
    only_engines = TimingTables()
    for (layer, kernel), table in measured.items():
        rows = [c for c in table if c.engine]
        assert rows, f"no engine configuration ran {kernel} of {problem.describe()}"
        only_engines.add(KernelTable(layer, kernel, table.batch, rows))
    return make_plan_wr(only_engines, limit, policy=handle.policy)


@pytest.mark.gpu
def test_a_handle_runs_a_plan_of_engine_configurations(tmp_path) -> None:
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float16", False, batch=12)
    with Handle(
        workspace_limit=4 * MiB, policy="powerOfTwo", database=tmp_path / "db.sqlite",
        engines=True,
    ) as handle:  # fmt: skip
        plan = _engine_plan(handle, problem, 4 * MiB)
        handle.use_plan(plan)
        for kernel in KERNELS:
            assert all(part.engine for part in handle.schedule(problem, kernel, "conv").parts)
        with warnings.catch_warnings():
            warnings.simplefilter("error", EngineFallbackWarning)
            for kernel in KERNELS:
                _run_and_compare(handle, problem, kernel, beta=0.0)


def _run_and_compare(handle, problem: ConvProblem, kernel: str, beta: float) -> None:
    """One call of `kernel` on fresh random tensors, against the reference."""
    host, device = _upload(problem, np.random.default_rng(5))
    getattr(handle, kernel)(*(device[t] for t in ROLES[kernel]), problem, beta=beta, layer="conv")
    output = ROLES[kernel][2]
    got = _logical(device[output], problem, output)
    expected = ref.KERNELS[kernel](problem, *(host[t] for t in ROLES[kernel][:2]))
    expected = expected + beta * host[output]
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
def test_finalize_builds_the_plans_the_first_call_needs(tmp_path) -> None:
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float16", True, batch=8)
    _, device = _upload(problem, np.random.default_rng(6))
    with Handle(
        workspace_limit=4 * MiB, policy=[2, 4, 8], database=tmp_path / "db.sqlite", engines=True
    ) as handle:  # fmt: skip
        handle.use_plan(_engine_plan(handle, problem, 4 * MiB))
        handle.finalize()
        built = len(handle._engine_runs.plans)
        assert built >= 3  # at least one plan per kernel
        for kernel in KERNELS:
            getattr(handle, kernel)(*(device[t] for t in ROLES[kernel]), problem, layer="conv")
        assert len(handle._engine_runs.plans) == built  # nothing compiled at the first call


@pytest.mark.simulator
@pytest.mark.parametrize("stage", ["plan", "execute"])
def test_an_engine_that_fails_falls_back_with_one_warning(tmp_path, stage) -> None:
    """The simulator refuses to build (or to run) every execution plan of the configurations
    the plan chose; the Handle warns once, legacy algorithms give the right answer, and the
    kernels are planned again without what failed."""
    from ucudnn.runtime.handle import Handle
    from ucudnn.testing import simulator

    problem = _problem(2, "float32", False, batch=12)
    with Handle(
        workspace_limit=4 * MiB, policy="powerOfTwo", database=tmp_path / "db.sqlite",
        engines=True,
    ) as handle:  # fmt: skip
        handle.use_plan(_engine_plan(handle, problem, 4 * MiB))
        tags = {
            part.engine
            for kernel in KERNELS
            for part in handle.schedule(problem, kernel, "conv").parts
        }
        for tag in tags:
            simulator.fail_engine(tag, at=stage)
        with pytest.warns(EngineFallbackWarning) as caught:
            for kernel in KERNELS:
                _run_and_compare(handle, problem, kernel, beta=0.5)
        assert len([w for w in caught if w.category is EngineFallbackWarning]) == 1
        # Each kernel was planned again without the parts that failed, and still runs right.
        failed = handle._engine_runs.failed
        assert failed
        for kernel in KERNELS:
            parts = handle.schedule(problem, kernel, "conv").parts
            chosen = {(problem.key(), kernel, p.engine, p.micro_batch) for p in parts}
            assert not chosen & failed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EngineFallbackWarning)  # warned once already
            for kernel in KERNELS:
                _run_and_compare(handle, problem, kernel, beta=0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_numpy_functions_run_with_engines_on(monkeypatch, kernel) -> None:
    """UCUDNN_ENGINES=on reaches the NumPy functions' Handles: their results stay right, and
    the benchmark they ran measured engine configurations (read back from the cache)."""
    import ucudnn
    from ucudnn.core.device import device_facts
    from ucudnn.faces import numpy_api
    from ucudnn.planner.cache import BenchmarkCache
    from ucudnn.planner.config import database_from_env
    from ucudnn.runtime.benchmark import measurement_source

    monkeypatch.setenv("UCUDNN_ENGINES", "on")
    monkeypatch.setenv("UCUDNN_BATCH_SIZE_POLICY", "undivided")
    problem = ConvProblem.create(
        3, 4, 6, (7, 8), 3, padding=1, dtype="float16", math_type="tensor_op"
    )
    rng = np.random.default_rng(12)
    x, w, dy = (
        rng.standard_normal(d).astype("float16")
        for d in (problem.x_dims, problem.w_dims, problem.y_dims)
    )
    try:
        if kernel == "forward":
            got = ucudnn.conv_forward(x, w, padding=1)
            expected = ref.forward(problem, x, w)
        elif kernel == "backward_data":
            got = ucudnn.conv_backward_data(w, dy, problem.x_shape, padding=1)
            expected = ref.backward_data(problem, w, dy)
        else:
            got = ucudnn.conv_backward_filter(x, dy, problem.w_shape, padding=1)
            expected = ref.backward_filter(problem, x, dy)
    finally:
        numpy_api.release_handles()
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)
    with BenchmarkCache(database_from_env()) as cache:
        source = measurement_source("fast", True, kernel, split=False)
        found = cache.lookup(problem, kernel, 3, device_facts(), source=source)
    assert found and any(m.ok and m.engine for m in found)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "budget",
    [
        {"workspace_limit": "2MiB"},
        {"total_workspace": "3MiB"},
        {"total_workspace": "3MiB", "workspace_sharing": "shared"},
    ],
    ids=["wr", "wd-divided", "shared-total"],
)
def test_plans_over_both_families_run_right_in_every_mode(tmp_path, budget) -> None:
    """Planned as the Handle plans (legacy and engine candidates together), in each mode; the
    arena holds what the plan asks for and no more than the budget."""
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float16", True, batch=8)
    with Handle(
        policy="powerOfTwo", database=tmp_path / "db.sqlite", engines=True, **budget
    ) as handle:
        for kernel in KERNELS:
            handle.register(problem, kernel, layer="conv")
        plan = handle.finalize()
        assert plan.mode == ("wd" if budget.get("workspace_sharing") is None and
                             "total_workspace" in budget else "wr")  # fmt: skip
        assert handle.workspace_in_use <= 3 * MiB
        with warnings.catch_warnings():
            warnings.simplefilter("error", EngineFallbackWarning)
            for kernel in KERNELS:
                # beta 0: a backward-filter configuration kept for undivided runs need not
                # blend (any other beta may fall back; see the fallback test).
                _run_and_compare(handle, problem, kernel, beta=0.0)
