"""Built-in networks: common CNNs generated from their architectures, plus bundled layer lists.

Generated: alexnet (torchvision's), vgg16, resnet18 and resnet50 (torchvision's v1.5, stride
on the 3x3 convolution), named as in torchvision (Caffe's names for VGG). Only convolutions
become layers; pooling and residual additions shape the data flow between them. Bundled
lists (in ucudnn/planner/data): "deepbench" (DeepBench training convolutions), "cnn3d" (3D
layers), "cnn3d-large" (the first layers of CosmoFlow and of a 3D U-Net encoder at 256^3, one
sample each: volumes whose batch cannot be split, for spatial micro-batches) and
"ucudnn-alexnet" (the AlexNet list of the original µ-cuDNN, whose conv4/conv5 channels differ
from torchvision's).

cnn3d-large's CosmoFlow runs at 256^3, not at CosmoFlow's 512^3: there its first layer's
output (4.3e9 values) is past cuDNN's 2^31-element descriptors, which ConvProblem refuses.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import SupportsIndex, TypedDict

from ucudnn.core.checks import integer, shown
from ucudnn.core.problem import ConvProblem, conv_output_size
from ucudnn.planner.graph import LayerGraph

DEFAULT_BATCH = 256
DEFAULT_IMAGE_SIZE = 224

_BUNDLED = {
    "deepbench": "deepbench_conv_train.csv",
    "cnn3d": "cnn3d.csv",
    "cnn3d-large": "cnn3d_large.csv",
    "ucudnn-alexnet": "alexnet.csv",
}


class _SharedFields(TypedDict, total=False):
    """The ConvProblem fields every layer of a network shares."""

    dtype: str
    layout: str


@dataclasses.dataclass(frozen=True)
class _Tensor:
    """An activation: the convolutions whose outputs make it, its channels and square size."""

    producers: tuple[str, ...]
    channels: int
    size: int


class _Builder:
    def __init__(self, batch: int, fields: _SharedFields) -> None:
        self.graph = LayerGraph()
        self.batch = batch
        self.fields = fields

    def conv(
        self, x: _Tensor, name: str, out: int, kernel: int, stride: int = 1, padding: int = 0
    ) -> _Tensor:
        problem = ConvProblem.create(
            self.batch, x.channels, out, (x.size, x.size), kernel, padding, stride, **self.fields
        )
        self.graph.add_layer(name, problem, after=x.producers)
        return _Tensor((name,), out, problem.output_size[0])


def _pool(x: _Tensor, kernel: int, stride: int, padding: int = 0) -> _Tensor:
    return dataclasses.replace(x, size=conv_output_size(x.size, kernel, padding, stride, 1))


def _add(a: _Tensor, b: _Tensor) -> _Tensor:
    assert (a.channels, a.size) == (b.channels, b.size), "residual shapes must match"
    return _Tensor(tuple(dict.fromkeys(a.producers + b.producers)), a.channels, a.size)


def _alexnet(net: _Builder, x: _Tensor) -> None:
    x = _pool(net.conv(x, "conv1", 64, 11, 4, 2), 3, 2)
    x = _pool(net.conv(x, "conv2", 192, 5, 1, 2), 3, 2)
    for name, out in (("conv3", 384), ("conv4", 256), ("conv5", 256)):
        x = net.conv(x, name, out, 3, 1, 1)


def _vgg16(net: _Builder, x: _Tensor) -> None:
    for stage, (width, count) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)), 1):
        for i in range(1, count + 1):
            x = net.conv(x, f"conv{stage}_{i}", width, 3, 1, 1)
        x = _pool(x, 2, 2)


def _shortcut(net: _Builder, x: _Tensor, name: str, out: int, stride: int) -> _Tensor:
    if stride == 1 and x.channels == out:
        return x
    return net.conv(x, f"{name}.downsample", out, 1, stride)


def _basic_block(net: _Builder, x: _Tensor, name: str, width: int, stride: int) -> _Tensor:
    y = net.conv(x, f"{name}.conv1", width, 3, stride, 1)
    y = net.conv(y, f"{name}.conv2", width, 3, 1, 1)
    return _add(y, _shortcut(net, x, name, width, stride))


def _bottleneck(net: _Builder, x: _Tensor, name: str, width: int, stride: int) -> _Tensor:
    y = net.conv(x, f"{name}.conv1", width, 1)
    y = net.conv(y, f"{name}.conv2", width, 3, stride, 1)
    y = net.conv(y, f"{name}.conv3", width * 4, 1)
    return _add(y, _shortcut(net, x, name, width * 4, stride))


def _resnet(
    net: _Builder, x: _Tensor, blocks: tuple[int, ...], block: Callable[..., _Tensor]
) -> None:
    x = _pool(net.conv(x, "conv1", 64, 7, 2, 3), 3, 2, 1)
    for stage, count in enumerate(blocks, 1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            x = block(net, x, f"layer{stage}.{i}", 64 * 2 ** (stage - 1), stride)


_GENERATED: dict[str, Callable[[_Builder, _Tensor], None]] = {
    "alexnet": _alexnet,
    "vgg16": _vgg16,
    "resnet18": functools.partial(_resnet, blocks=(2, 2, 2, 2), block=_basic_block),
    "resnet50": functools.partial(_resnet, blocks=(3, 4, 6, 3), block=_bottleneck),
}


def network_names() -> list[str]:
    return [*_GENERATED, *_BUNDLED]


def builtin_network(
    name: str,
    batch: SupportsIndex | None = None,
    dtype: str = "float32",
    layout: str | None = None,
    *,
    image_size: SupportsIndex = DEFAULT_IMAGE_SIZE,
    input_gradient: bool = True,
) -> LayerGraph:
    """A built-in network by name; see `load_network` for the options.

    Raises:
        ValueError: `name` is not a built-in network, or a field out of range (as
            `load_network` says).
        TypeError: as `load_network` says.
    """
    if name not in network_names():
        raise ValueError(f"unknown network {shown(name)}; built-in: {', '.join(network_names())}")
    return load_network(
        name, batch, dtype, layout, image_size=image_size, input_gradient=input_gradient
    )


def _exists(path: str | os.PathLike[str]) -> bool:
    """Whether something is at `path`; the reader then says what it cannot read (a directory,
    a device), and reads a FIFO as it reads a file."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL: no file
        return False


def _names_a_file(name: str) -> bool:
    """Whether `name` can only mean a file: it has a folder or a file suffix in it, which no
    built-in network's name has."""
    return os.sep in name or "." in name


def load_network(
    name_or_path: str | os.PathLike[str],
    batch: SupportsIndex | None = None,
    dtype: str = "float32",
    layout: str | None = None,
    *,
    image_size: SupportsIndex = DEFAULT_IMAGE_SIZE,
    input_gradient: bool = True,
) -> LayerGraph:
    """A built-in network by name, or the layer-list CSV at a path.

    `batch` is the mini-batch (generated networks default to 256, layer lists keep their N
    column). `layout` defaults to channels-first; `image_size` applies to generated networks;
    `input_gradient=False` drops backward_data of the layers that take the network's input.

    Raises:
        TypeError: `batch` or `image_size` is not an integer, or `dtype` or `layout` not text.
        ValueError: neither a built-in network nor a file; a layer list that is not one (the
            message names the line and column); an unknown dtype or layout; a batch or
            image size for which a layer is out of cuDNN's range or has an empty output.
        OSError: the layer list cannot be read.
    """
    # Plain ints from here on; the problems check their ranges.
    batch = None if batch is None else integer(batch, "batch")
    image_size = integer(image_size, "image_size")
    fields: _SharedFields = {"dtype": dtype}
    if layout:
        fields["layout"] = layout
    name = str(name_or_path)
    if name in _GENERATED:
        net = _Builder(DEFAULT_BATCH if batch is None else batch, fields)
        _GENERATED[name](net, _Tensor((), 3, image_size))
        graph = net.graph
    else:
        if name in _BUNDLED:
            source = resources.files(__package__) / "data" / _BUNDLED[name]
        elif _exists(name_or_path):
            source = Path(name_or_path)
        elif _names_a_file(name):
            raise ValueError(f"layer list {shown(name)}: no such file")
        else:
            raise ValueError(
                f"{shown(name)} is neither a built-in network ({', '.join(network_names())}) "
                "nor a layer-list CSV file"
            )
        with resources.as_file(source) as path:
            graph = LayerGraph.from_csv(path, batch=batch, **fields)
        if not graph.layers():  # else a plan of nothing, or "no timing rows" of its timings
            raise ValueError(f"{name} has no layers: expected a header and at least one row")
    return graph if input_gradient else graph.without_input_gradient()
