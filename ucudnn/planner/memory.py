"""A memory model of one training step of a network, from its convolution layers.

A step holds, on the device:

- **weights and their gradients**: every layer's filter, twice (layers with equal problems
  still have their own weights);
- **activations kept for backward**, per sample: every convolution's output, and every
  distinct convolution input (backward-filter reads it). Inputs are the same tensor when their
  layers have the same predecessors and shape (a ResNet block's first convolution and its
  downsample read one tensor; so do all layers that read the network's input). A layer's input
  and the output of the layer before it count apart, as they are whenever anything (ReLU,
  normalisation, pooling, a residual sum) sits between two convolutions;
- **gradient buffers in flight**, per sample, at the peak of the backward pass: the largest
  sum of one layer's output gradient and input gradient (when it runs backward-data), plus,
  in a network with branches, the gradient that one skip connection holds meanwhile (the
  largest input of a layer where branches join). It is an upper bound: the two need not peak
  at the same layer;
- **the workspace arena** that the convolution plan needs (WD: one arena for all kernels);
- **framework overhead**, which the model does not see: the CUDA context and library handles,
  optimizer state, the saved tensors of the layers between convolutions beyond the above,
  allocator slack. It is given as a size ("1GiB"), a percentage of the per-sample memory
  ("30%"), or both ("1GiB+30%"); `tune` keeps DEFAULT_OVERHEAD unless told otherwise.

All activations are counted as held at the start of the backward pass, where a framework
that frees them as it goes reaches its peak. Sizes are packed tensors of the problems' data
type.
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction
from typing import TYPE_CHECKING

from ucudnn.core.checks import parse_float, shown
from ucudnn.planner.choices import DEFAULT_OVERHEAD_TEXT
from ucudnn.planner.config import NotASize, byte_count, parse_size
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.units import format_size

if TYPE_CHECKING:  # at run time it would load the plans and the explainer, which need none
    from ucudnn.planner import plan_formats

_PERCENT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%\s*")
# A percentage of the per-sample memory; more than 100 times it is a slip, not an overhead.
MAX_OVERHEAD_PERCENT = 10_000
_OVERHEAD_HELP = (
    'a size such as 1GiB, a percentage of the per-sample memory such as 30%, or both: "1GiB+30%"'
)


@dataclasses.dataclass(frozen=True)
class FrameworkOverhead:
    """Memory the model does not see: `fixed_bytes` whatever the batch, and `per_sample` as a
    fraction of the modelled per-sample memory (0.3 for 30 %)."""

    fixed_bytes: int = 0
    per_sample: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fixed_bytes", byte_count(self.fixed_bytes, "fixed_bytes"))
        fraction = Fraction(self.per_sample)
        if fraction < 0:
            raise ValueError(f"per_sample must not be negative, got {self.per_sample}")
        if fraction > MAX_OVERHEAD_PERCENT // 100:  # its value unshown: it may be huge
            raise ValueError(f"per_sample must be at most {MAX_OVERHEAD_PERCENT // 100}")
        object.__setattr__(self, "per_sample", fraction)

    def text(self) -> str:
        """For people, as the command line takes it: "1 GiB+30%", "0"."""
        parts = [format_size(self.fixed_bytes)] if self.fixed_bytes else []
        if self.per_sample:
            parts.append(f"{float(self.per_sample * 100):g}%")
        return "+".join(parts) or "0"


NO_OVERHEAD = FrameworkOverhead()


def parse_overhead(text: str, name: str) -> FrameworkOverhead:
    """ "1GiB", "30%" or "1GiB+30%" (either part once); `name` is named in errors."""
    error = ValueError(f"{name}={shown(text)} is not an overhead; expected {_OVERHEAD_HELP}")
    parts = text.split("+")
    percents = [match for part in parts if (match := _PERCENT.fullmatch(part))]
    sizes = [part for part in parts if not _PERCENT.fullmatch(part)]
    if len(percents) > 1 or len(sizes) > 1:
        raise error
    try:
        fixed = parse_size(sizes[0], name) if sizes else 0
    except NotASize:  # a size too large says so itself
        raise error from None
    percent = Fraction(0)
    if percents:
        text = percents[0].group(1)
        parse_float(text, f"{name} percentage", 0, MAX_OVERHEAD_PERCENT)  # bounded first
        percent = Fraction(text) / 100  # exact, as a float is not: 0.1% is 1/1000
    return FrameworkOverhead(fixed, percent)


# The headroom `tune` keeps by default for what the model does not see, as the command takes
# it. 1 GiB for what every process pays once: a CUDA context takes 300-400 MiB since CUDA 11.7
# loads kernels lazily, and took over 1 GiB when every kernel was loaded at once, as before it
# (PyTorch's maintainers, pytorch/pytorch#107667 and #109888); cuDNN's and cuBLAS's handles and
# workspaces come on top. 10 % of the per-sample memory for the allocator's slack, which grows
# with the tensors: a caching allocator (PyTorch's) carves tensors out of larger segments and
# keeps freed blocks that later tensors may not fit. No bound holds for that, so 10 % is a
# margin, not a measurement. "0" turns the headroom off.
DEFAULT_OVERHEAD = parse_overhead(DEFAULT_OVERHEAD_TEXT, "DEFAULT_OVERHEAD_TEXT")


@dataclasses.dataclass(frozen=True)
class StepMemory:
    """The memory of one training step at one batch size, by part, in bytes."""

    batch: int
    weights_bytes: int  # the filters; their gradients take as much again
    activations_bytes: int
    gradients_bytes: int  # in flight at the peak
    overhead_bytes: int
    arena_bytes: int  # the workspace the plan uses

    @property
    def total_bytes(self) -> int:
        return (
            2 * self.weights_bytes
            + self.activations_bytes
            + self.gradients_bytes
            + self.overhead_bytes
            + self.arena_bytes
        )

    def to_dict(self) -> plan_formats.StepMemory:
        """The parts as a ucudnn-tune document holds them, the gradients of weights apart."""
        return {
            "weights_bytes": self.weights_bytes,
            "weight_gradients_bytes": self.weights_bytes,
            "activations_bytes": self.activations_bytes,
            "gradients_bytes": self.gradients_bytes,
            "overhead_bytes": self.overhead_bytes,
            "arena_bytes": self.arena_bytes,
            "total_bytes": self.total_bytes,
        }


@dataclasses.dataclass(frozen=True)
class TrainingMemory:
    """The model of a network's training step: fixed parts, and parts per sample."""

    weights_bytes: int
    activations_per_sample: int
    gradients_per_sample: int
    overhead: FrameworkOverhead = NO_OVERHEAD

    def step(self, batch: int, arena_bytes: int = 0) -> StepMemory:
        """The step at mini-batch `batch` with a workspace arena of `arena_bytes`."""
        per_sample = self.activations_per_sample + self.gradients_per_sample
        overhead = self.overhead.fixed_bytes + math.ceil(
            self.overhead.per_sample * per_sample * batch
        )
        return StepMemory(
            batch=batch,
            weights_bytes=self.weights_bytes,
            activations_bytes=self.activations_per_sample * batch,
            gradients_bytes=self.gradients_per_sample * batch,
            overhead_bytes=overhead,
            arena_bytes=arena_bytes,
        )

    def arena_room(self, batch: int, memory_bytes: int) -> int:
        """What `memory_bytes` leaves for the workspace arena at `batch` (negative: short)."""
        return memory_bytes - self.step(batch).total_bytes


def training_memory(graph: LayerGraph, overhead: FrameworkOverhead = NO_OVERHEAD) -> TrainingMemory:
    """The memory model of `graph`'s training step (see the module's description)."""

    def per_sample(dims: tuple[int, ...], itemsize: int) -> int:
        return math.prod(dims[1:]) * itemsize

    weights = outputs = largest_pair = largest_join = 0
    inputs: dict[tuple[frozenset[str], tuple[int, ...], int], int] = {}
    for name in graph.layers():
        p = graph.problem(name)
        x, y = per_sample(p.x_dims, p.itemsize), per_sample(p.y_dims, p.itemsize)
        predecessors = frozenset(graph.predecessors(name))
        weights += p.nbytes("w")
        outputs += y
        inputs[(predecessors, p.x_dims[1:], p.itemsize)] = x
        input_gradient = x if "backward_data" in graph.kernels(name) else 0
        largest_pair = max(largest_pair, y + input_gradient)
        if len(predecessors) > 1:
            largest_join = max(largest_join, x)
    return TrainingMemory(
        weights_bytes=weights,
        activations_per_sample=outputs + sum(inputs.values()),
        gradients_per_sample=largest_pair + largest_join,
        overhead=overhead,
    )
