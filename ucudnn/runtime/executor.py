"""Run a schedule: one cuDNN call per micro-batch (per slab, for a part cut into slabs), back
to back on the handle's stream."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import NamedTuple

from ucudnn._native import _cudnn
from ucudnn.errors import CudnnError, UcudnnError
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend
from ucudnn.runtime.engine_calls import EngineRuns, legacy_fallback
from ucudnn.runtime.families import family_of
from ucudnn.runtime.steps import Step, schedule_steps

logger = logging.getLogger(__name__)


class _Call(NamedTuple):
    step: Step
    descs: backend.ProblemDescriptors  # of the step's problem: the whole's, or its slab's
    run: backend.PreparedRun
    accumulates: bool  # a later backward-filter part: it adds to dW (beta = 1)


def _slab_text(step: Step) -> str:
    """The step's slab, said for people after its micro-batch; "" for a whole one."""
    return "" if step.slab is None else f", slab {step.slab.describe()}"


class Launch:
    """A schedule compiled for one problem: its micro-batches' slicing, order, descriptors and
    workspace check worked out once, so that running it only adds the caller's pointers and
    scalars to each cuDNN call."""

    def __init__(
        self,
        descs: backend.ProblemDescriptors,
        kernel: str,
        parts: Sequence[Candidate],
        workspace_bytes: int,
        engine_runs: EngineRuns | None = None,
        descriptors: backend.DescriptorCache | None = None,
    ) -> None:
        """`engine_runs` keeps what the parts build to run (a Handle's, shared by its
        launches); without it the launch keeps its own. `descriptors` keeps the descriptors of
        the slabs' problems (a Handle's, kept across plans); without it the launch keeps its
        own."""
        self.descs, self.kernel, self.workspace_bytes = descs, kernel, workspace_bytes
        steps = schedule_steps(descs.problem, kernel, parts, axis=descs.axis)
        for step in steps:
            if step.workspace_bytes > workspace_bytes:
                raise ValueError(
                    f"{kernel} algo {step.algo} at micro-batch {step.micro_batch} needs "
                    f"{step.workspace_bytes} bytes of workspace but {workspace_bytes} were given"
                )
        self._engine_runs = engine_runs if engine_runs is not None else EngineRuns()
        descriptors = descriptors or backend.DescriptorCache()
        self._calls = []
        for index, step in enumerate(steps):
            step_descs = (
                descs
                if step.slab is None
                else descriptors.get(step.problem(descs.problem), descs.axis)
            )
            run = family_of(step).prepared_run(step_descs, kernel, step, self._engine_runs)
            accumulates = kernel == "backward_filter" and index > 0
            self._calls.append(_Call(step, step_descs, run, accumulates))

    def check_workspaces(self, handle: _cudnn.Handle) -> list[str]:
        """Ask each part's family whether it runs within this launch's workspace on this
        device (`Family.unfit`): a part that cannot runs the legacy algorithm with the least
        workspace within it instead, as a failed engine part does
        (`engine_calls.legacy_fallback`). Returns what was replaced, said for people.

        Raises:
            ValueError: no legacy algorithm runs such a part within the workspace.
        """
        replaced = []
        problem = self.descs.problem
        for index, call in enumerate(self._calls):
            step, descs = call.step, call.descs
            why = family_of(step).unfit(handle, descs, self.kernel, step, self.workspace_bytes)
            if why is None:
                continue
            where = (
                f"{self.kernel} of {problem.describe()} at micro-batch {step.micro_batch}"
                f"{_slab_text(step)}"
            )
            found = legacy_fallback(
                handle, descs, self.kernel, step.micro_batch, self.workspace_bytes
            )
            if found is None:
                raise ValueError(
                    f"{where}: legacy algorithm {step.algo} {why}, and no legacy algorithm runs "
                    f"it within {self.workspace_bytes} bytes of workspace"
                )
            run, algo = found
            fallback = dataclasses.replace(step, algo=algo, math_type=problem.math_type)
            self._calls[index] = _Call(fallback, descs, run, call.accumulates)
            replaced.append(
                f"{where}: legacy algorithm {step.algo} {why}; that part runs the legacy "
                f"algorithm {algo} instead"
            )
        return replaced

    def build_plans(self, handle: _cudnn.Handle) -> None:
        """Build now what the parts would build at their first call with alpha 1 and beta 0
        (beta 1 for the parts that add to dW), so that the first call compiles nothing. What
        fails to build is left to the call, which runs a legacy algorithm in its place."""
        for call in self._calls:
            beta = 1.0 if call.accumulates else 0.0
            try:
                family_of(call.step).build_ahead(
                    handle, call.descs, self.kernel, call.step, beta, self._engine_runs
                )
            except CudnnError as exc:
                logger.info("could not build the plan of %s ahead: %s", call.step.engine, exc)

    def __call__(
        self,
        handle: _cudnn.Handle,
        x: int,
        w: int,
        y: int,
        workspace: int,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> bool:
        """Run every micro-batch; nothing here waits for the device. Returns whether a part
        newly left its engine configuration for a legacy algorithm (`engine_calls`)."""
        size = self.workspace_bytes
        fell_back = False
        for call in self._calls:
            step = call.step
            try:
                fell_back |= call.run(
                    handle, alpha, 1.0 if call.accumulates else beta, x + step.x_offset_bytes, w,
                    y + step.y_offset_bytes, workspace, size,
                )  # fmt: skip
            except UcudnnError as exc:
                exc.add_note(
                    f"while running {self.kernel} of {self.descs.problem.describe()}, micro-batch "
                    f"{step.first_sample}:{step.first_sample + step.micro_batch}"
                    f"{_slab_text(step)} with {step.engine or f'algo {step.algo}'}"
                )
                raise
        return fell_back


def execute(
    handle: _cudnn.Handle,
    descs: backend.ProblemDescriptors,
    kernel: str,
    parts: Sequence[Candidate],
    x: int,
    w: int,
    y: int,
    workspace: int,
    workspace_bytes: int,
    alpha: float = 1.0,
    beta: float = 0.0,
    engine_runs: EngineRuns | None = None,
) -> None:
    """Run `parts` over the whole batch once; nothing here waits for the device."""
    launch = Launch(descs, kernel, parts, workspace_bytes, engine_runs)
    launch(handle, x, w, y, workspace, alpha, beta)
