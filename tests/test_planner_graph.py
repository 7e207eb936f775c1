from __future__ import annotations

import io

import networkx as nx
import pytest

from ucudnn.core.problem import KERNELS, ConvProblem
from ucudnn.planner.graph import FreeNames, LayerGraph

A = ConvProblem.create(8, 3, 16, (32, 32), 3, padding=1)
B = ConvProblem.create(8, 16, 16, (32, 32), 3, padding=1)
C = ConvProblem.create(8, 16, 32, (32, 32), 1)


def diamond() -> LayerGraph:
    graph = LayerGraph()
    graph.add_layer("a", A)
    graph.add_layer("b1", B, after="a")
    graph.add_layer("b2", B, after="a", kernels=("forward", "backward_filter"))
    graph.add_layer("c", C, after=["b1", "b2"])
    return graph


def test_build_from_code() -> None:
    graph = diamond()
    assert graph.layers() == ["a", "b1", "b2", "c"]
    assert len(graph) == 4 and "b1" in graph and "z" not in graph
    assert graph.problem("c") == C
    assert graph.predecessors("c") == ["b1", "b2"]
    as_nx = graph.to_networkx()
    assert nx.is_directed_acyclic_graph(as_nx)
    assert next(iter(nx.topological_sort(as_nx))) == "a"
    assert as_nx.nodes["b2"] == {"problem": B, "kernels": ("forward", "backward_filter")}
    assert list(as_nx.predecessors("c")) == ["b1", "b2"]


def test_kernel_ids_in_layer_then_kernel_order() -> None:
    ids = diamond().kernel_ids()
    assert ids[:3] == [("a", k) for k in KERNELS]
    assert ("b2", "backward_data") not in ids
    assert len(ids) == 3 + 3 + 2 + 3


def test_identical_layers_share_a_problem_but_keep_their_slots() -> None:
    graph = diamond()
    assert graph.unique_problems() == {A: ["a"], B: ["b1", "b2"], C: ["c"]}
    assert ("b1", "forward") in graph.kernel_ids() and ("b2", "forward") in graph.kernel_ids()


def test_with_batch_leaves_the_original_alone() -> None:
    graph = diamond()
    bigger = graph.with_batch(64)
    assert all(bigger.problem(n).batch == 64 for n in bigger)
    assert all(graph.problem(n).batch == 8 for n in graph)
    assert bigger.kernel_ids() == graph.kernel_ids()
    assert list(bigger.to_networkx().edges) == list(graph.to_networkx().edges)


def test_without_input_gradient_drops_backward_data_of_sources_only() -> None:
    graph = diamond()
    trimmed = graph.without_input_gradient()
    assert trimmed.kernels("a") == ("forward", "backward_filter")
    assert trimmed.kernels("b1") == KERNELS and trimmed.kernels("c") == KERNELS
    assert graph.kernels("a") == KERNELS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("a", A), "already in the graph"),
        (("d", A, "nope"), "follows unknown layer"),
        (("d", A, "a", ("forward", "sideways")), "unknown kernel"),
        (("d", A, "a", ()), "needs distinct kernels"),
        (("d", A, "a", ("forward", "forward")), "needs distinct kernels"),
    ],
)
def test_bad_layers(args: tuple[object, ...], message: str) -> None:
    graph = diamond()
    with pytest.raises(ValueError, match=message):
        graph.add_layer(*args)  # type: ignore[arg-type]


def test_from_csv_chains_rows_and_renames_repeated_labels() -> None:
    text = (
        "source,W,H,C_in,N,C_out,kernel_w,kernel_h\n"
        "x,8,8,3,2,4,3,3\nx,6,6,4,2,4,3,3\ny,4,4,4,2,4,1,1\nx,4,4,4,2,4,1,1\n"
    )
    graph = LayerGraph.from_csv(io.StringIO(text), batch=16)
    assert graph.layers() == ["x", "x#2", "y", "x#3"]
    assert list(graph.to_networkx().edges) == [("x", "x#2"), ("x#2", "y"), ("y", "x#3")]
    assert all(graph.problem(n).batch == 16 for n in graph)
    # y and x#3 are the same convolution: one benchmark, two schedule slots.
    assert graph.unique_problems()[graph.problem("y")] == ["y", "x#3"]


@pytest.mark.parametrize(
    ("labels", "names"),
    [
        (["a#2", "a", "a"], ["a#2", "a", "a#3"]),
        (["a", "a", "a#2"], ["a", "a#3", "a#2"]),
        (["a", "a", "a", "a#3", "a#3"], ["a", "a#2", "a#4", "a#3", "a#3#2"]),
        (["b", "a", "b", "a"], ["b", "a", "b#2", "a#2"]),
    ],
)
def test_repeated_labels_get_free_names(labels: list[str], names: list[str]) -> None:
    graph = LayerGraph.from_layers((label, A) for label in labels)
    assert graph.layers() == names


@pytest.mark.parametrize(
    ("base", "taken", "name"),
    [
        ("a", set(), "a"),
        ("a", {"b", "a#2"}, "a"),  # a free name is kept as it is
        ("a", {"a"}, "a#2"),
        ("a", {"a", "a#2", "a#4"}, "a#3"),  # the first free copy number
        ("a#2", {"a#2"}, "a#2#2"),
        # The Handle's unnamed layers: conv3 taken by a layer the user named so.
        ("conv3", {"conv0", "conv1", "conv2", "conv3"}, "conv3#2"),
    ],
)
def test_free_name(base: str, taken: set[str], name: str) -> None:
    assert FreeNames(taken).take(base) == name


def test_free_names_count_up_as_they_are_taken() -> None:
    names = FreeNames()
    assert [names.take("conv") for _ in range(4)] == ["conv", "conv#2", "conv#3", "conv#4"]


def test_from_layers_of_a_list_whose_labels_clash_with_generated_names() -> None:
    text = "source,W,H,C_in,N,C_out,kernel_w,kernel_h\na#2,8,8,3,2,4,3,3\na,8,8,3,2,4,3,3\n"
    text += "a,8,8,3,2,4,3,3\n"
    assert LayerGraph.from_csv(io.StringIO(text)).layers() == ["a#2", "a", "a#3"]


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("a\x00", ValueError, "control character"),
        ("a\nb", ValueError, "control character"),
        ("", ValueError, "non-empty name"),
        (7, TypeError, "layer must be text"),
    ],
)
def test_layer_names_are_checked(name: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        LayerGraph().add_layer(name, A)  # type: ignore[arg-type]
