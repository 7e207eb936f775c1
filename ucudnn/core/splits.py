"""The axes a convolution is split along into parts, and the one rule that places the parts.

A split cuts a problem along one `Axis` into parts of whole extents. The axis says how long
the problem is along it, what problem a part of a given size is, where a part's x and y start,
in what order parts run and where benchmarking times a part. Only the batch axis (`BATCH`)
exists; the tables, plans and cache rows name their axis (`axis_named`), the batch when they
name none. Pure Python: the planner reads axis names without loading anything native.

Why parts run in `Axis.run_order` and are timed at `Axis.benchmark_first`: see
docs/design/split-axes.md.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol, TypeVar

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.checks import shown
from ucudnn.core.problem import ConvProblem


class Part(Protocol):
    """What the run order needs of a part: its size along the axis."""

    @property
    def micro_batch(self) -> int: ...


PartT = TypeVar("PartT", bound=Part)


def alignment_step(size: int) -> int:
    """The largest power of two dividing `size`: a part of this size always starts at a
    multiple of it when parts run in `Axis.run_order`."""
    if size < 1:
        raise ValueError(f"micro_batch must be >= 1, got {size}")  # a part's size
    return size & -size


def _run_order_key(part: Part) -> tuple[int, int]:
    return (-alignment_step(part.micro_batch), -part.micro_batch)


class Axis(abc.ABC):
    """One dimension a problem is split along. A subclass says what a part is along it
    (`extent`, `part`, `offset_bytes`); where parts run and are timed follows from that."""

    name: str  # what files, plans and cache rows call it
    unit: str  # what its extent counts, as messages say it ("samples")

    @abc.abstractmethod
    def extent(self, problem: ConvProblem) -> int:
        """The problem's length along this axis: what its parts add up to."""

    @abc.abstractmethod
    def part(self, problem: ConvProblem, size: int) -> ConvProblem:
        """The problem a part of `size` runs: its descriptors and its cache key."""

    @abc.abstractmethod
    def offset_bytes(self, problem: ConvProblem, tensor: Literal["x", "y"], first: int) -> int:
        """Byte offset in x or y of the part that starts at `first` along this axis."""

    def run_order(self, parts: Sequence[PartT]) -> list[PartT]:
        """The parts in the order they run: more factors of two first, then larger first.

        Each part then starts at a sum of parts whose sizes are multiples of its own step, so
        at a multiple of `alignment_step` of its size. The order changes neither the time nor
        the workspace of a schedule.
        """
        return sorted(parts, key=_run_order_key)

    def benchmark_first(self, problem: ConvProblem, size: int) -> int:
        """Where benchmarking runs a part of `size`: the least aligned start a part of that
        size can have in a problem of any extent."""
        step = alignment_step(size)
        offsets = (self.offset_bytes(problem, "x", step), self.offset_bytes(problem, "y", step))
        return step if any(offset % CUDNN_ALIGNMENT for offset in offsets) else 0

    def benchmark_extent(self, problem: ConvProblem, sizes: Iterable[int]) -> int:
        """The extent the benchmark buffers need so that each size fits at its benchmark
        start (at least the problem's own)."""
        ends = (size + self.benchmark_first(problem, size) for size in sizes)
        return max([self.extent(problem), *ends])

    def __repr__(self) -> str:
        return f"<split axis {self.name}>"


class BatchAxis(Axis):
    """The samples: a part is the same convolution on fewer samples, a slice of x and y."""

    name = "batch"
    unit = "samples"

    def extent(self, problem: ConvProblem) -> int:
        return problem.batch

    def part(self, problem: ConvProblem, size: int) -> ConvProblem:
        return problem.with_batch(size)

    def offset_bytes(self, problem: ConvProblem, tensor: Literal["x", "y"], first: int) -> int:
        return problem.sample_offset_bytes(tensor, first)


BATCH = BatchAxis()
# Every axis by its name; what a file, plan or cache row that names none means is BATCH.
AXES: dict[str, Axis] = {axis.name: axis for axis in (BATCH,)}


def axis_named(name: str) -> Axis:
    """The axis called `name`; a ValueError that names it and the known ones otherwise (a
    TypeError when it is not text)."""
    if not isinstance(name, str):
        raise TypeError(f"a split axis is named by text, got {shown(name)}")
    axis = AXES.get(name)
    if axis is None:
        raise ValueError(f"unknown split axis {shown(name)}; expected one of {', '.join(AXES)}")
    return axis
