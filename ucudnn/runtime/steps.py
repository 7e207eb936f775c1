"""Translate a schedule into the exact cuDNN calls that run it, as plain data.

Pure Python (no device access) so the slicing and alpha/beta rules can be checked on a CPU.
Where parts start and in what order they run is the split axis's (`ucudnn.core.splits`); a part
cut into slabs (`Candidate.slab`) makes one step per slab (`ucudnn.core.slabs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ucudnn.core import slabs
from ucudnn.core.problem import ConvProblem, TensorName, check_kernel
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner.tables import Candidate

# (first input, second input, output) of each kernel among the problem's x, w and y, in
# cuDNN's argument order: forward reads x, w and writes y; backward-data reads w, dy and writes
# dx; backward-filter reads x, dy and writes dw.
ROLES: dict[str, tuple[TensorName, TensorName, TensorName]] = {
    "forward": ("x", "w", "y"),
    "backward_data": ("w", "y", "x"),
    "backward_filter": ("x", "y", "w"),
}


@dataclasses.dataclass(frozen=True)
class Step:
    """One call: [first_sample, first_sample + micro_batch) of x and y along the split's axis
    (samples, for the batch axis, which the names keep), whole or, when `slab` is set, that
    slab of it (the offsets then include the slab's planes)."""

    first_sample: int
    micro_batch: int
    algo: int
    math_type: str
    workspace_bytes: int
    alpha: float
    beta: float
    x_offset_bytes: int
    y_offset_bytes: int
    engine: str = ""  # a graph-API engine configuration's tag; "" for a legacy algorithm
    slab: slabs.Slab | None = None

    def problem(self, whole: ConvProblem) -> ConvProblem:
        """The problem this call's descriptors describe, of the whole batch (`whole`, or its
        slab); its part of the batch is `micro_batch` along the axis."""
        return whole if self.slab is None else self.slab.problem(whole)


def schedule_steps(
    problem: ConvProblem,
    kernel: str,
    parts: Sequence[Candidate],
    alpha: float = 1.0,
    beta: float = 0.0,
    axis: Axis = BATCH,
) -> list[Step]:
    """The calls that run `parts`, split along `axis`, on the whole of `problem`, in the
    axis's `run_order`.

    Forward and backward-data micro-batches and slabs write disjoint slices of their output,
    so each uses the caller's (alpha, beta). Backward-filter sums into one dW: the first call
    applies the caller's beta to the old dW, every later one adds to it (beta = 1).
    """
    check_kernel(kernel)
    total = sum(part.micro_batch for part in parts)
    extent = axis.extent(problem)
    if total != extent:
        raise ValueError(
            f"schedule covers {total} {axis.unit} but the problem has {axis.name} {extent}"
        )
    steps: list[Step] = []
    first = 0
    for part in axis.run_order(parts):
        x_offset = axis.offset_bytes(problem, "x", first)
        y_offset = axis.offset_bytes(problem, "y", first)
        cuts = slabs.slabs(problem, kernel, part.slab) if part.slab else [None]
        for slab in cuts:
            accumulate = kernel == "backward_filter" and bool(steps)
            steps.append(
                Step(
                    first_sample=first,
                    micro_batch=part.micro_batch,
                    algo=part.algo,
                    math_type=part.math_type,
                    workspace_bytes=part.workspace_bytes,
                    alpha=alpha,
                    beta=1.0 if accumulate else beta,
                    x_offset_bytes=x_offset + (slab.offset_bytes(problem, "x") if slab else 0),
                    y_offset_bytes=y_offset + (slab.offset_bytes(problem, "y") if slab else 0),
                    engine=part.engine,
                    slab=slab,
                )
            )
        first += part.micro_batch
    return steps
