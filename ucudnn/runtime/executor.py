"""Run a schedule: one cuDNN call per micro-batch, back to back on the handle's stream."""

from __future__ import annotations

from collections.abc import Sequence

from ucudnn._native import _cudnn
from ucudnn.errors import UcudnnError
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend
from ucudnn.runtime.steps import schedule_steps


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
    """Run `parts` over the whole batch; nothing here waits for the device."""
    problem = descs.problem
    for step in schedule_steps(problem, kernel, parts, alpha, beta):
        if step.workspace_bytes > workspace_bytes:
            raise ValueError(
                f"{kernel} algo {step.algo} at micro-batch {step.micro_batch} needs "
                f"{step.workspace_bytes} bytes of workspace but {workspace_bytes} were given"
            )
        try:
            backend.run(
                handle,
                descs,
                kernel,
                step.micro_batch,
                step.algo,
                step.math_type,
                step.alpha,
                step.beta,
                x + step.x_offset_bytes,
                w,
                y + step.y_offset_bytes,
                workspace,
                workspace_bytes,
            )
        except UcudnnError as exc:
            exc.add_note(
                f"while running {kernel} of {problem.describe()}, micro-batch "
                f"{step.first_sample}:{step.first_sample + step.micro_batch} with algo {step.algo}"
            )
            raise
