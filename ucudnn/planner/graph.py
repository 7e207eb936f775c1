"""A network as a graph of convolution layers, the unit the planner works on.

Each node is a layer carrying its `problem` and the `kernels` to plan for it; edges are data
flow. Layers with equal problems share benchmark rows (`unique_problems`), but every layer
keeps its own (layer, kernel) schedule slot (`kernel_ids`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ucudnn.core.checks import shown
from ucudnn.core.problem import KERNELS, ConvProblem, check_kernel
from ucudnn.planner.files import Source
from ucudnn.planner.layerlist import Layer, read_layer_list
from ucudnn.planner.tables import layer_name


class FreeNames:
    """Names handed out by one rule: `base` if it is not taken, else the first of "base#2",
    "base#3", ... that is not. The rule for telling apart layers that share a name: repeated
    rows of a layer list here, and a Handle's layers seen with several problems.

    The suffix to try next is kept per base, so that naming n rows of one label costs O(n),
    not O(n^2): the suffixes below it were all taken, and stay so until a name is released.
    """

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)
        self._next: dict[str, int] = {}  # base -> the first suffix that may be free

    def take(self, base: str) -> str:
        """The free name for `base` by the rule, now taken."""
        name, copy = base, self._next.get(base, 2)
        while name in self._taken:
            name, copy = f"{base}#{copy}", copy + 1
        if name != base:
            self._next[base] = copy
        self._taken.add(name)
        return name

    def release(self, name: str) -> None:
        """Free `name` again: the rule may hand it out anew."""
        self._taken.discard(name)
        # Any base it is a suffixed name of may have its hint past it: start those over.
        base, hash_sign, _ = name.rpartition("#")
        if hash_sign:
            self._next.pop(base, None)


class LayerGraph:
    """Layers in the order they were added, which is always a topological order, because a
    layer can only follow layers that already exist."""

    def __init__(self) -> None:
        import networkx  # here: importing the planner must not load networkx

        self.graph: networkx.DiGraph[str] = networkx.DiGraph()

    def add_layer(
        self,
        name: str,
        problem: ConvProblem,
        after: str | Iterable[str] = (),
        kernels: Sequence[str] = KERNELS,
    ) -> None:
        """Add layer `name` fed by the layer(s) `after`."""
        layer_name(name)
        if name in self.graph:
            raise ValueError(f"layer {name!r} is already in the graph")
        sources = [after] if isinstance(after, str) else list(after)
        missing = [s for s in sources if s not in self.graph]
        if missing:
            raise ValueError(f"layer {name!r} follows unknown layer(s) {', '.join(missing)}")
        kernels = tuple(check_kernel(k) for k in kernels)
        if not kernels or len(set(kernels)) != len(kernels):
            raise ValueError(f"layer {name!r} needs distinct kernels, got {shown(kernels)}")
        self.graph.add_node(name, problem=problem, kernels=kernels)
        self.graph.add_edges_from((s, name) for s in sources)

    @classmethod
    def from_layers(cls, layers: Iterable[Layer | tuple[str, ConvProblem]]) -> LayerGraph:
        """A chain of layers in the given order. Repeated labels (DeepBench lists repeat
        them) become "label#2", "label#3", ... so that each row keeps its own slot; a name
        that another row already uses as its label is skipped."""
        layers = [Layer(*layer) for layer in layers]
        graph = cls()
        # Every row's label is reserved up front, so a generated name never takes a label
        # that a later row brings.
        names = FreeNames(label for label, _ in layers)
        previous: list[str] = []
        for label, problem in layers:
            name = label if label not in graph else names.take(label)
            graph.add_layer(name, problem, after=previous)
            previous = [name]
        return graph

    @classmethod
    def from_csv(
        cls,
        source: Source,
        batch: int | None = None,
        **defaults: object,
    ) -> LayerGraph:
        """A chain of the layers of a layer-list CSV (see `ucudnn.planner.layerlist`)."""
        return cls.from_layers(read_layer_list(source, batch=batch, **defaults))

    # -- reading ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.graph)

    def __iter__(self) -> Iterator[str]:
        return iter(self.graph)

    def __contains__(self, name: object) -> bool:
        return name in self.graph

    def layers(self) -> list[str]:
        return list(self.graph)

    def problem(self, name: str) -> ConvProblem:
        problem: ConvProblem = self.graph.nodes[name]["problem"]
        return problem

    def kernels(self, name: str) -> tuple[str, ...]:
        kernels: tuple[str, ...] = self.graph.nodes[name]["kernels"]
        return kernels

    def predecessors(self, name: str) -> list[str]:
        return list(self.graph.predecessors(name))

    def kernel_ids(self) -> list[tuple[str, str]]:
        """Every (layer, kernel) to plan, layers in order, kernels in KERNELS order."""
        return [(name, k) for name in self.graph for k in KERNELS if k in self.kernels(name)]

    def unique_problems(self) -> dict[ConvProblem, list[str]]:
        """Layer names grouped by problem (equal problems have equal keys): one benchmark
        serves every layer of a group."""
        groups: dict[ConvProblem, list[str]] = {}
        for name in self.graph:
            groups.setdefault(self.problem(name), []).append(name)
        return groups

    # -- derived graphs ---------------------------------------------------------------------
    def _copy(self) -> LayerGraph:
        # nx copies each node's attribute dict, so replacing an attribute leaves self intact.
        new = LayerGraph()
        new.graph = self.graph.copy()
        return new

    def with_batch(self, batch: int) -> LayerGraph:
        """The same network at mini-batch `batch`."""
        new = self._copy()
        for name in new.graph:
            node = new.graph.nodes[name]
            node["problem"] = node["problem"].with_batch(batch)
        return new

    def without_input_gradient(self) -> LayerGraph:
        """The same network without backward_data for layers that no layer feeds: the
        gradient with respect to the network's input is rarely wanted."""
        new = self._copy()
        for name in new.graph:
            if new.graph.in_degree(name) == 0:
                node = new.graph.nodes[name]
                node["kernels"] = tuple(k for k in node["kernels"] if k != "backward_data")
        return new
