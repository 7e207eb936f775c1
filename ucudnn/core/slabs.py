"""Spatial micro-batches: a kernel cut into slabs of its outermost spatial axis (D in 3D, H in
2D), each a convolution of its own on a view of the caller's tensors, with the halo it needs.

A kernel's slabs cut the tensor it writes: y for forward, dx for backward-data. Backward-
filter writes dW, which has no planes; its slabs cut dy, as forward's cut y, and add up in dW.
The geometry, derived in docs/design/spatial-split.md, along the split axis with padding p
before it, stride s, dilation d, filter k, input extent I and output extent O:

- forward and backward-filter, y planes [o0, o1): x planes o0*s - p through
  (o1 - 1)*s - p + (k - 1)*d inclusive, clipped to [0, I); what the clipping leaves out is
  the slab's padding, before (`pre`) and after (`post`).
- backward-data, dx planes [i0, i1): the dy planes from the first that reaches i0 (one
  earlier when the stride phase would leave a negative padding) through the last that starts
  at or before i1 - 1, clipped to [0, O); `pre` and `post` place them so that each reaches
  the dx planes it reaches in the whole problem, and what lands in the padding is dropped.

Pure Python: the planner prices slabs and the runtime runs them from the same `Slab`s.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ucudnn.core.checks import integer
from ucudnn.core.problem import ConvProblem, check_kernel

AXIS = 0  # the split axis among the spatial ones: the outermost (D, or H in 2D)


def sliced_tensor(kernel: str) -> Literal["x", "y"]:
    """The tensor whose planes a kernel's slabs cut: dx for backward-data, y (dy) otherwise."""
    return "x" if check_kernel(kernel) == "backward_data" else "y"


def planes(problem: ConvProblem, kernel: str) -> int:
    """The extent of the split axis in the tensor `kernel`'s slabs cut."""
    if sliced_tensor(kernel) == "x":
        return problem.input_size[AXIS]
    return problem.output_size[AXIS]


def unsplittable(problem: ConvProblem) -> str | None:
    """Why `problem` cannot be cut into slabs, said for people; None if it can.

    Padding larger than the filter's reach, (k - 1) * d, lets a border slab of y read no plane
    of x at all, a convolution cuDNN cannot be given; such padding is never needed.
    """
    reach = (problem.filter_size[AXIS] - 1) * problem.dilation[AXIS]
    widest = max(problem.padding[AXIS], problem.padding_end[AXIS])
    if widest > reach:
        return (
            f"padding {widest} of the outermost spatial axis is more than the filter reaches "
            f"({reach}): a slab at the border would read no input plane"
        )
    return None


@dataclasses.dataclass(frozen=True)
class Slab:
    """One slab of one kernel: the planes of x and of y it touches, and the zero planes its
    convolution pads x with along the split axis (`pre` before, `post` after)."""

    x_first: int
    x_planes: int
    y_first: int
    y_planes: int
    pre: int
    post: int

    def describe(self) -> str:
        """Its planes and padding, said for people: "y 8:16 of x 7:17, padded 0+0"."""
        return (
            f"y {self.y_first}:{self.y_first + self.y_planes} of x "
            f"{self.x_first}:{self.x_first + self.x_planes}, padded {self.pre}+{self.post}"
        )

    def problem(self, whole: ConvProblem) -> ConvProblem:
        """The convolution this slab runs: `whole` on its planes, padded by its `pre` and
        `post`, with the whole problem's tensor strides, so that its x and y are views of the
        whole's (at `offset_bytes`)."""
        return dataclasses.replace(
            whole,
            input_size=_along_axis(whole.input_size, self.x_planes),
            padding=_along_axis(whole.padding, self.pre),
            padding_after=_along_axis(whole.padding_end, self.post),
        )

    def offset_bytes(self, whole: ConvProblem, tensor: Literal["x", "y"]) -> int:
        """Byte offset of the slab's view in x or y of `whole` (of any micro-batch)."""
        first, strides = (
            (self.x_first, whole.x_strides) if tensor == "x" else (self.y_first, whole.y_strides)
        )
        return first * strides[2 + AXIS] * whole.itemsize


def _along_axis(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    return (*values[:AXIS], value, *values[AXIS + 1 :])


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def slab_at(problem: ConvProblem, kernel: str, first: int, count: int) -> Slab:
    """The slab of `kernel` of `problem` cutting planes [first, first + count) of the tensor the
    kernel's slabs cut (`sliced_tensor`).

    Raises:
        ValueError: planes outside that tensor, or a problem that cannot be cut
            (`unsplittable`).
    """
    why = unsplittable(problem)
    if why is not None:
        raise ValueError(f"{problem.describe()} cannot be cut into slabs: {why}")
    extent = planes(problem, kernel)
    first = integer(first, "first", minimum=0, maximum=extent - 1)
    count = integer(count, "count", minimum=1, maximum=extent - first)
    size, pad = problem.input_size[AXIS], problem.padding[AXIS]
    stride, reach = problem.stride[AXIS], (problem.filter_size[AXIS] - 1) * problem.dilation[AXIS]
    if sliced_tensor(kernel) == "y":
        start, end = first * stride - pad, (first + count - 1) * stride - pad + reach
        x_first, x_last = max(start, 0), min(end, size - 1)
        return Slab(x_first, x_last - x_first + 1, first, count, x_first - start, end - x_last)
    out = problem.output_size[AXIS]
    last = first + count - 1
    # The first dy plane whose taps reach dx plane `first`, and the last that starts at or
    # before dx plane `last`, both within dy.
    y_first = min(max(_ceil_div(first + pad - reach, stride), 0), out - 1)
    y_last = min((last + pad) // stride, out - 1)
    pre = first + pad - y_first * stride  # dx plane `first`, in the slab's padded coordinates
    if pre < 0:  # dy plane y_first starts past `first`: begin a plane earlier (stride phase)
        y_first, pre = y_first - 1, pre + stride
    post = max(0, y_last * stride - pad + reach - last)
    return Slab(first, count, y_first, y_last - y_first + 1, pre, post)


def slabs(problem: ConvProblem, kernel: str, extent: int) -> list[Slab]:
    """`kernel` of `problem` cut into slabs of `extent` planes of the tensor its slabs cut,
    in order; the last has what is left, fewer planes when `extent` does not divide them."""
    total = planes(problem, kernel)
    extent = integer(extent, "extent", minimum=1, maximum=total)
    return [
        slab_at(problem, kernel, first, min(extent, total - first))
        for first in range(0, total, extent)
    ]


def distinct(problem: ConvProblem, kernel: str, extent: int) -> list[tuple[Slab, int]]:
    """The distinct convolutions among `slabs(problem, kernel, extent)`, in order: the first
    slab of each and how many slabs run it. A slab's convolution is its x planes and its
    padding (`Slab.problem`), wherever it is: the slabs inside the volume are all one."""
    found: dict[tuple[int, int, int], tuple[Slab, int]] = {}
    for slab in slabs(problem, kernel, extent):
        first, count = found.get((slab.x_planes, slab.pre, slab.post), (slab, 0))
        found[slab.x_planes, slab.pre, slab.post] = (first, count + 1)
    return list(found.values())
