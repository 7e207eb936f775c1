"""What the runtime is asked to plan: kernels of named layers."""

from __future__ import annotations

from typing import NamedTuple

from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner.graph import LayerGraph


class Work(NamedTuple):
    layer: str  # the name the planner knows the layer by (unique per problem)
    problem: ConvProblem
    kernel: str
    axis: Axis = BATCH  # what its parts split


def work_from_graph(graph: LayerGraph) -> list[Work]:
    """Every kernel of every layer of a network, in layer order."""
    return [
        Work(name, graph.problem(name), kernel)
        for name in graph.layers()
        for kernel in graph.kernels(name)
    ]
