"""Net: a chain of layers with one blob between each pair, run forward and backward."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from examples.tiny_caffe.blob import Blob
from examples.tiny_caffe.layers import Convolution, Layer, SoftmaxWithLoss
from ucudnn import Handle


class Net:
    """Layers in order, ending in SoftmaxWithLoss; shapes are worked out at construction."""

    def __init__(self, layers: Sequence[Layer], input_shape: tuple[int, ...]) -> None:
        loss_layer = layers[-1] if layers else None
        if not isinstance(loss_layer, SoftmaxWithLoss):
            raise ValueError("a net must end with a SoftmaxWithLoss layer")
        self.layers = list(layers)
        self.layers[0].propagate_down = False  # the data needs no gradient
        self.shapes = [tuple(input_shape)]
        for layer in self.layers:
            self.shapes.append(tuple(layer.setup(self.shapes[-1])))
        self.loss_layer = loss_layer

    @property
    def convolutions(self) -> list[Convolution]:
        return [layer for layer in self.layers if isinstance(layer, Convolution)]

    @property
    def params(self) -> list[Blob]:
        return [param for layer in self.layers for param in layer.params]

    def to_device(self, handle: Handle, seed: int) -> None:
        """Allocate blobs and parameters, then plan every convolution before the first pass."""
        self.handle = handle
        rng = np.random.default_rng(seed)
        self.blobs = [Blob(shape) for shape in self.shapes]
        for layer in self.layers:
            layer.allocate(handle, rng)
        # WD needs the whole network to divide its budget; WR plans each kernel alone, and doing
        # it here keeps benchmarking out of the first iteration.
        for conv in self.convolutions:
            handle.register(conv.problem, conv.kernels, layer=conv.name)
        handle.finalize()

    def forward(self, images: np.ndarray, labels: np.ndarray) -> float:
        """Run every layer on one batch; returns the loss."""
        if len(labels) != self.shapes[0][0]:
            raise ValueError(f"got {len(labels)} labels for a batch of {self.shapes[0][0]}")
        self.blobs[0].data.copy_from_numpy(images)
        self.loss_layer.labels = labels
        for layer, bottom, top in self._steps():
            layer.forward(bottom, top)
        return self.loss_layer.loss

    def backward(self) -> None:
        """Fill every parameter's gradient from the last forward pass."""
        for layer, bottom, top in reversed(self._steps()):
            layer.backward(top, bottom)

    def _steps(self) -> list[tuple[Layer, Blob, Blob]]:
        return list(zip(self.layers, self.blobs[:-1], self.blobs[1:], strict=True))
