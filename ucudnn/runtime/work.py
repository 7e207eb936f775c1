"""What the runtime is asked to plan: kernels of named layers."""

from __future__ import annotations

from typing import NamedTuple

from ucudnn.core.problem import ConvProblem


class Work(NamedTuple):
    layer: str  # the name the planner knows the layer by (unique per problem)
    problem: ConvProblem
    kernel: str
