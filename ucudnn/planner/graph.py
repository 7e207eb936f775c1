"""A network as a graph of convolution layers, the unit the planner works on.

Each node is a layer carrying its `problem` and the `kernels` to plan for it; edges are data
flow. Layers with equal problems share benchmark rows (`unique_problems`), but every layer
keeps its own (layer, kernel) schedule slot (`kernel_ids`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ucudnn.core.checks import shown
from ucudnn.core.problem import KERNELS, ConvProblem, check_kernel
from ucudnn.planner.files import Source
from ucudnn.planner.layerlist import Layer, read_layer_list
from ucudnn.planner.values import layer_name

if TYPE_CHECKING:
    import networkx


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
    layer can only follow layers that already exist. Held in plain dicts: planning only walks
    layers in order and asks for their inputs, and a graph library would cost every command a
    fifth of a second to import; `to_networkx` gives the graph to those who want its
    algorithms."""

    def __init__(self) -> None:
        self._problems: dict[str, ConvProblem] = {}
        self._kernels: dict[str, tuple[str, ...]] = {}
        self._inputs: dict[str, tuple[str, ...]] = {}

    def add_layer(
        self,
        name: str,
        problem: ConvProblem,
        after: str | Iterable[str] = (),
        kernels: Sequence[str] = KERNELS,
    ) -> None:
        """Add layer `name` fed by the layer(s) `after`."""
        layer_name(name)
        if name in self._problems:
            raise ValueError(f"layer {name!r} is already in the graph")
        sources = dict.fromkeys([after] if isinstance(after, str) else after)
        missing = [s for s in sources if s not in self._problems]
        if missing:
            raise ValueError(f"layer {name!r} follows unknown layer(s) {', '.join(missing)}")
        kernels = tuple(check_kernel(k) for k in kernels)
        if not kernels or len(set(kernels)) != len(kernels):
            raise ValueError(f"layer {name!r} needs distinct kernels, got {shown(kernels)}")
        self._problems[name] = problem
        self._kernels[name] = kernels
        self._inputs[name] = tuple(sources)

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
        return len(self._problems)

    def __iter__(self) -> Iterator[str]:
        return iter(self._problems)

    def __contains__(self, name: object) -> bool:
        return name in self._problems

    def layers(self) -> list[str]:
        return list(self._problems)

    def problem(self, name: str) -> ConvProblem:
        return self._problems[name]

    def kernels(self, name: str) -> tuple[str, ...]:
        return self._kernels[name]

    def predecessors(self, name: str) -> list[str]:
        return list(self._inputs[name])

    def kernel_ids(self) -> list[tuple[str, str]]:
        """Every (layer, kernel) to plan, layers in order, kernels in KERNELS order."""
        return [
            (name, k) for name, kernels in self._kernels.items() for k in KERNELS if k in kernels
        ]

    def unique_problems(self) -> dict[ConvProblem, list[str]]:
        """Layer names grouped by problem (equal problems have equal keys): one benchmark
        serves every layer of a group."""
        groups: dict[ConvProblem, list[str]] = {}
        for name, problem in self._problems.items():
            groups.setdefault(problem, []).append(name)
        return groups

    def to_networkx(self) -> networkx.DiGraph[str]:
        """The graph as a networkx DiGraph, for its graph algorithms: layers in order, each
        with its `problem` and `kernels` as node attributes, edges from input to layer."""
        import networkx  # here: planning does not need it

        graph: networkx.DiGraph[str] = networkx.DiGraph()
        for name, problem in self._problems.items():
            graph.add_node(name, problem=problem, kernels=self._kernels[name])
            graph.add_edges_from((source, name) for source in self._inputs[name])
        return graph

    # -- derived graphs ---------------------------------------------------------------------
    def _derived(
        self, problems: dict[str, ConvProblem], kernels: dict[str, tuple[str, ...]]
    ) -> LayerGraph:
        new = LayerGraph()
        new._problems, new._kernels, new._inputs = problems, kernels, dict(self._inputs)
        return new

    def with_batch(self, batch: int) -> LayerGraph:
        """The same network at mini-batch `batch`."""
        problems = {name: p.with_batch(batch) for name, p in self._problems.items()}
        return self._derived(problems, dict(self._kernels))

    def without_input_gradient(self) -> LayerGraph:
        """The same network without backward_data for layers that no layer feeds: the
        gradient with respect to the network's input is rarely wanted."""
        kernels = {
            name: tuple(k for k in found if k != "backward_data")
            if not self._inputs[name]
            else found
            for name, found in self._kernels.items()
        }
        return self._derived(dict(self._problems), kernels)
