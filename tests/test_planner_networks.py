from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.networks import builtin_network, load_network, network_names

DATA = resources.files("ucudnn.planner") / "data"
COUNTS = {"alexnet": 5, "vgg16": 13, "resnet18": 20, "resnet50": 53}


@pytest.mark.parametrize(("name", "count"), COUNTS.items())
def test_layer_counts(name: str, count: int) -> None:
    graph = builtin_network(name)
    assert len(graph) == count
    assert len(graph.kernel_ids()) == 3 * count
    assert all(graph.problem(n).batch == 256 for n in graph)


@pytest.mark.parametrize("name", list(COUNTS))
def test_channels_and_sizes_flow(name: str) -> None:
    graph = builtin_network(name)
    (first,) = [n for n in graph if not graph.predecessors(n)]
    assert graph.problem(first).x_dims == (256, 3, 224, 224)
    for layer in graph:
        problem = graph.problem(layer)
        for before in graph.predecessors(layer):
            source = graph.problem(before)
            assert problem.in_channels == source.out_channels, (before, layer)
            # Pooling only ever shrinks what flows on.
            sizes = zip(problem.input_size, source.output_size, strict=True)
            assert all(mine <= theirs for mine, theirs in sizes), (before, layer)


def test_resnet18_equals_the_shared_layer_list() -> None:
    with resources.as_file(DATA / "resnet18.csv") as path:
        listed = LayerGraph.from_csv(path)
    generated = builtin_network("resnet18")
    assert generated.layers() == listed.layers()
    assert [generated.problem(n) for n in generated] == [listed.problem(n) for n in listed]


def test_resnet_shortcuts_feed_the_next_block() -> None:
    graph = builtin_network("resnet50")
    assert graph.predecessors("layer1.0.downsample") == ["conv1"]
    assert set(graph.predecessors("layer2.0.conv1")) >= {"layer1.2.conv3", "layer1.0.downsample"}
    downsamples = [n for n in graph if n.endswith("downsample")]
    assert len(downsamples) == 4
    assert all(graph.problem(n).filter_size == (1, 1) for n in downsamples)


def test_known_shapes() -> None:
    alexnet = builtin_network("alexnet")
    assert [alexnet.problem(n).out_channels for n in alexnet] == [64, 192, 384, 256, 256]
    assert alexnet.problem("conv3").input_size == (13, 13)
    vgg = builtin_network("vgg16")
    assert vgg.problem("conv5_3").x_dims == (256, 512, 14, 14)
    resnet50 = builtin_network("resnet50")
    assert resnet50.problem("layer4.2.conv3").y_dims == (256, 2048, 7, 7)
    assert resnet50.problem("layer2.0.conv2").stride == (2, 2)  # v1.5: stride on the 3x3


def test_identical_layers_are_grouped() -> None:
    graph = builtin_network("resnet18")
    groups = graph.unique_problems()
    assert len(groups) < len(graph)
    assert graph.problem("layer1.0.conv1") == graph.problem("layer1.1.conv2")


def test_options() -> None:
    graph = builtin_network(
        "vgg16", batch=32, dtype="float16", layout="NHWC", image_size=64, input_gradient=False
    )
    problem = graph.problem("conv1_1")
    assert (problem.batch, problem.dtype, problem.layout) == (32, "float16", "NHWC")
    assert problem.input_size == (64, 64)
    assert "backward_data" not in graph.kernels("conv1_1")
    assert "backward_data" in graph.kernels("conv1_2")


@pytest.mark.parametrize(
    ("name", "count"),
    [("deepbench", 94), ("cnn3d", 11), ("cnn3d-large", 9), ("ucudnn-alexnet", 5)],
)
def test_bundled_lists(name: str, count: int) -> None:
    assert name in network_names()
    assert len(load_network(name)) == count
    assert all(load_network(name, batch=3).problem(n).batch == 3 for n in load_network(name))


def test_bundled_3d_list_takes_layout() -> None:
    graph = load_network("cnn3d", layout="NDHWC")
    assert {graph.problem(n).layout for n in graph} == {"NDHWC"}


def test_load_network_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("W,H,C_in,N,C_out,kernel_w,kernel_h\n8,8,3,2,4,3,3\n")
    graph = load_network(path, batch=5)
    assert graph.layers() == ["line2"] and graph.problem("line2").batch == 5
    assert load_network(str(path)).problem("line2").batch == 2


def test_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown network 'lenet'; built-in: alexnet"):
        builtin_network("lenet")
    with pytest.raises(ValueError, match=r"neither a built-in network .* nor a layer-list CSV"):
        load_network("lenet")
    # A name that can only be a file is a missing file, not an unknown network.
    for path in ("no/such/file.csv", "mynet.csv"):
        with pytest.raises(ValueError, match=f"^layer list '{path}': no such file$"):
            load_network(path)


def test_bundled_data_files_are_package_data() -> None:
    names = {entry.name for entry in DATA.iterdir()}
    assert {
        "alexnet.csv",
        "resnet18.csv",
        "deepbench_conv_train.csv",
        "cnn3d.csv",
        "cnn3d_large.csv",
    } <= names
