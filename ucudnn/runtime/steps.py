"""Translate a schedule into the exact cuDNN calls that run it, as plain data.

Pure Python (no device access) so the slicing, alignment and alpha/beta rules can be checked on
a CPU.

Alignment. A micro-batch's pointers are offsets into the caller's tensors, so they are only as
aligned as `first_sample * sample_stride * itemsize` (a 3x227x227 float32 input has 618,348
bytes per sample: an odd first sample is only 4-byte aligned), and tensor-core kernels may run
slower, or refuse, at a poorly aligned address. Two rules keep what runs no worse aligned than
what was benchmarked:

- Parts run in `run_order`: those with more factors of two first (then larger first). Every
  part before a part of b samples is then a multiple of `alignment_step(b)` (the largest power
  of two dividing b), so a part always starts at a multiple of that step, and so at an address
  at least as aligned as one step in.
- Benchmarking times b samples one step in (`benchmark_first_sample`), the least aligned start
  such a part can have, unless one step in is as aligned as the start itself (a multiple of
  256 bytes in x and in y), in which case it times them at the start.

With power-of-two sizes the step is b itself: parts run largest first, and size b is timed b
samples in. The rule depends only on b and the problem's strides, not on the mini-batch N,
because the benchmark cache shares a measurement of b among every N: a part of b samples can
start one step in whenever N >= b + step, so even the undivided run of one batch is timed where
a larger batch could run it. The benchmark buffers hold up to `benchmark_samples` samples for
that, a few more than N only for small batches whose samples are not 256-byte multiples.

This assumes the caller's tensors start 256-byte aligned, as cudaMalloc and the CuPy and
PyTorch allocators give; beyond 256 bytes (`CUDNN_ALIGNMENT`) no kernel gains anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.problem import ConvProblem, TensorName, check_kernel
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
    """One micro-batch: samples [first_sample, first_sample + micro_batch) of x and y."""

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


def alignment_step(micro_batch: int) -> int:
    """The largest power of two dividing `micro_batch`: a part of this size always starts at
    a multiple of it (in samples) when parts run in `run_order`."""
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    return micro_batch & -micro_batch


def run_order(parts: Sequence[Candidate]) -> list[Candidate]:
    """The parts in the order they run: more factors of two first, then larger first.

    Each part then starts at a sum of parts whose sizes are multiples of its own step, so at a
    multiple of `alignment_step` of its size. The order changes neither the time nor the
    workspace of a schedule.
    """
    return sorted(parts, key=lambda part: (-alignment_step(part.micro_batch), -part.micro_batch))


def benchmark_first_sample(problem: ConvProblem, micro_batch: int) -> int:
    """The first sample at which benchmarking runs `micro_batch` samples: the least aligned
    start a part of that size can have in any batch (see the module's notes)."""
    step = alignment_step(micro_batch)
    offsets = (problem.sample_offset_bytes("x", step), problem.sample_offset_bytes("y", step))
    return step if any(offset % CUDNN_ALIGNMENT for offset in offsets) else 0


def benchmark_samples(problem: ConvProblem, micro_batches: Iterable[int]) -> int:
    """Samples the benchmark buffers need so that each size fits at its benchmark offset (at
    least the problem's own batch)."""
    ends = (b + benchmark_first_sample(problem, b) for b in micro_batches)
    return max([problem.batch, *ends])


def schedule_steps(
    problem: ConvProblem,
    kernel: str,
    parts: Sequence[Candidate],
    alpha: float = 1.0,
    beta: float = 0.0,
) -> list[Step]:
    """The calls that run `parts` on the whole batch of `problem`, in `run_order`.

    Forward and backward-data micro-batches write disjoint slices of their output, so each
    uses the caller's (alpha, beta). Backward-filter sums into one dW: the first micro-batch
    applies the caller's beta to the old dW, every later one adds to it (beta = 1).
    """
    check_kernel(kernel)
    total = sum(part.micro_batch for part in parts)
    if total != problem.batch:
        raise ValueError(
            f"schedule covers {total} samples but the problem has batch {problem.batch}"
        )
    steps = []
    first = 0
    for index, part in enumerate(run_order(parts)):
        accumulate = kernel == "backward_filter" and index > 0
        steps.append(
            Step(
                first_sample=first,
                micro_batch=part.micro_batch,
                algo=part.algo,
                math_type=part.math_type,
                workspace_bytes=part.workspace_bytes,
                alpha=alpha,
                beta=1.0 if accumulate else beta,
                x_offset_bytes=problem.sample_offset_bytes("x", first),
                y_offset_bytes=problem.sample_offset_bytes("y", first),
                engine=part.engine,
            )
        )
        first += part.micro_batch
    return steps
