"""Plans a Handle did not make itself: a legacy part whose plan states less workspace than
cuDNN asks for falls back as a failed engine part does, and a Handle whose engines are off
refuses a plan that runs engine configurations (issue 37)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.test_handle_engines import _run_and_compare
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudnnError, WorkspaceFallbackWarning
from ucudnn.planner.plan import KernelPlan, Plan
from ucudnn.planner.tables import Candidate, Schedule

if TYPE_CHECKING:
    from ucudnn.runtime.handle import Handle

MiB = 1 << 20
KERNELS = ["forward", "backward_data", "backward_filter"]


def _problem() -> ConvProblem:
    return ConvProblem.create(8, 16, 32, (28, 28), 3, padding=1, math_type="fma")


def _hungriest_algorithm(
    handle: Handle, problem: ConvProblem, kernel: str, micro_batch: int
) -> int:
    """The legacy algorithm that asks cuDNN for the most workspace at `micro_batch`."""
    from ucudnn._native import _cudnn
    from ucudnn.runtime import backend

    descs = handle.descriptors(problem)
    needs = {}
    for algo in range(len(_cudnn.ALGORITHMS[kernel])):
        try:
            needs[algo] = backend.workspace_size(
                handle.cudnn, descs, kernel, micro_batch, algo, problem.math_type
            )
        except CudnnError:
            continue  # not for this problem
    algo = max(needs, key=needs.__getitem__)
    if needs[algo] == 0:
        pytest.skip(f"no {kernel} algorithm of {problem.describe()} needs workspace")
    return algo


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS)
def test_a_legacy_part_that_needs_more_workspace_than_planned_falls_back(kernel: str) -> None:
    """The plan says its algorithm needs no workspace; cuDNN says it does. Every call used to
    fail with CUDNN_STATUS_BAD_PARAM; now both parts (the second adds to dW in
    backward-filter) run a legacy algorithm that fits, warned once, and the answer is right."""
    from ucudnn.runtime.handle import Handle

    problem = _problem()
    with Handle(workspace_limit=MiB, use_cache=False, engines=False) as handle:
        algo = _hungriest_algorithm(handle, problem, kernel, 4)
        part = Candidate(4, algo, 0.1, 0, problem.math_type)
        schedule = Schedule((part, part))
        plan = Plan("wr", MiB, "powerOfTwo", (KernelPlan("conv", kernel, 8, schedule),))
        handle.register(problem, kernel, layer="conv")
        handle.use_plan(Plan.from_json(plan.to_json()))
        expected = (
            rf"{kernel} of .* at micro-batch 4: legacy algorithm {algo} needs \d+ bytes of "
            r"workspace, more than the 0 its plan gives it; that part runs the legacy algorithm"
        )
        with pytest.warns(WorkspaceFallbackWarning, match=expected) as caught:
            _run_and_compare(handle, problem, kernel, beta=0.5)
            _run_and_compare(handle, problem, kernel, beta=0.5)
        assert len([w for w in caught if w.category is WorkspaceFallbackWarning]) == 1
        assert handle.schedule(problem, kernel, "conv") == schedule  # the plan stays as given


@pytest.mark.gpu
def test_a_handles_own_plan_falls_back_nowhere(tmp_path: Path) -> None:
    """The workspace check finds nothing to replace in a plan made from the Handle's own
    measurements."""
    from ucudnn.runtime.handle import Handle

    problem = _problem()
    database = tmp_path / "db.sqlite"
    with (
        Handle(
            workspace_limit=MiB, policy="powerOfTwo", database=database, engines=False
        ) as handle,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", WorkspaceFallbackWarning)
        for kernel in KERNELS:
            _run_and_compare(handle, problem, kernel, beta=0.0)
