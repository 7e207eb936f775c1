"""Run a schedule: one cuDNN call per micro-batch, back to back on the handle's stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ucudnn._native import _cudnn
from ucudnn.errors import UcudnnError
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend
from ucudnn.runtime.steps import Step, schedule_steps


class _Call(NamedTuple):
    step: Step
    run: backend.PreparedRun
    accumulates: bool  # a later backward-filter part: it adds to dW (beta = 1)


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
    ) -> None:
        self.descs, self.kernel, self.workspace_bytes = descs, kernel, workspace_bytes
        steps = schedule_steps(descs.problem, kernel, parts)
        for step in steps:
            if step.workspace_bytes > workspace_bytes:
                raise ValueError(
                    f"{kernel} algo {step.algo} at micro-batch {step.micro_batch} needs "
                    f"{step.workspace_bytes} bytes of workspace but {workspace_bytes} were given"
                )
        self._calls = tuple(
            _Call(
                step,
                backend.prepared_run(descs, kernel, step.micro_batch, step.algo, step.math_type),
                accumulates=kernel == "backward_filter" and index > 0,
            )
            for index, step in enumerate(steps)
        )

    def __call__(
        self,
        handle: _cudnn.Handle,
        x: int,
        w: int,
        y: int,
        workspace: int,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
        """Run every micro-batch; nothing here waits for the device."""
        size = self.workspace_bytes
        for step, run, accumulates in self._calls:
            try:
                run(
                    handle, alpha, 1.0 if accumulates else beta, x + step.x_offset_bytes, w,
                    y + step.y_offset_bytes, workspace, size,
                )  # fmt: skip
            except UcudnnError as exc:
                exc.add_note(
                    f"while running {self.kernel} of {self.descs.problem.describe()}, micro-batch "
                    f"{step.first_sample}:{step.first_sample + step.micro_batch} with algo "
                    f"{step.algo}"
                )
                raise


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
) -> None:
    """Run `parts` over the whole batch once; nothing here waits for the device."""
    Launch(descs, kernel, parts, workspace_bytes)(handle, x, w, y, workspace, alpha, beta)
