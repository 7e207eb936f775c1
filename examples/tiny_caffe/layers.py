"""Layers: each one is a cuDNN call on blobs; convolutions go through the ucudnn Handle.

Construction and `setup` (which works out shapes) need no device, so a network's plumbing can
be checked on any machine; `allocate` then creates the parameters on the device.
"""

from __future__ import annotations

import math

import numpy as np

from examples.tiny_caffe.blob import DTYPE, Blob
from ucudnn import Handle, cudnn
from ucudnn.core.problem import ConvProblem


class Layer:
    """One step of the network: bottom blob in, top blob out."""

    propagate_down = True  # whether backward must fill the bottom blob's gradient

    def __init__(self, name: str) -> None:
        self.name = name
        self.params: list[Blob] = []

    def setup(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The top shape for this bottom shape (the default keeps it)."""
        return bottom_shape

    def allocate(self, handle: Handle, rng: np.random.Generator) -> None:
        self.handle = handle

    def forward(self, bottom: Blob, top: Blob) -> None:
        raise NotImplementedError

    def backward(self, top: Blob, bottom: Blob) -> None:
        raise NotImplementedError


class Convolution(Layer):
    """Square filters with bias; all three convolution kernels run micro-batched by the Handle."""

    def __init__(
        self, name: str, out_channels: int, kernel: int, padding: int | str = 0, stride: int = 1
    ) -> None:
        super().__init__(name)
        self.out_channels = out_channels
        self.kernel = kernel
        self.padding = padding
        self.stride = stride

    def filter_size(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        return (self.kernel, self.kernel)

    def setup(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        w_shape = (self.out_channels, bottom_shape[1], *self.filter_size(bottom_shape))
        self.problem = ConvProblem.from_shapes(
            bottom_shape, w_shape, padding=self.padding, stride=self.stride, dtype=DTYPE,
            allow_tf32=False,  # so micro-batched and undivided runs differ only by rounding
        )  # fmt: skip
        return self.problem.y_shape

    @property
    def kernels(self) -> tuple[str, ...]:
        """The Handle kernels this layer runs (no backward-data below the data layer)."""
        kernels = ("forward", "backward_filter", "backward_data")
        return kernels if self.propagate_down else kernels[:2]

    def allocate(self, handle: Handle, rng: np.random.Generator) -> None:
        super().allocate(handle, rng)
        w_shape = self.problem.w_shape
        self.weight = Blob(w_shape)
        # He initialisation: keeps activations at unit scale through ReLUs.
        scale = math.sqrt(2.0 / math.prod(w_shape[1:]))
        self.weight.data.copy_from_numpy(rng.normal(0.0, scale, w_shape).astype(DTYPE))
        self.bias = Blob((1, self.out_channels, 1, 1))
        self.params = [self.weight, self.bias]

    # The bias blob is (1, K, 1, 1), Caffe's shape, for the solver's descriptors; the Handle
    # takes its K values by address.
    def forward(self, bottom: Blob, top: Blob) -> None:
        self.handle.forward(
            bottom.data, self.weight.data, top.data, self.problem,
            bias=self.bias.data.ptr, layer=self.name,
        )  # fmt: skip

    def backward(self, top: Blob, bottom: Blob) -> None:
        h = self.handle
        h.backward_filter(bottom.data, top.diff, self.weight.diff, self.problem, layer=self.name)
        h.backward_bias(top.diff, self.bias.diff.ptr, self.problem)
        if self.propagate_down:
            h.backward_data(self.weight.data, top.diff, bottom.diff, self.problem, layer=self.name)


class InnerProduct(Convolution):
    """Fully connected: a convolution whose filter covers the whole input, so cuDNN runs it."""

    def __init__(self, name: str, out_channels: int) -> None:
        super().__init__(name, out_channels, kernel=0)  # the input decides: see filter_size

    def filter_size(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(bottom_shape[2:])


class ReLU(Layer):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.activation = cudnn.ActivationDescriptor("relu")

    def forward(self, bottom: Blob, top: Blob) -> None:
        cudnn.activation_forward(
            self.handle.cudnn, self.activation, 1.0, bottom.desc, bottom.data.ptr, 0.0,
            top.desc, top.data.ptr,
        )  # fmt: skip

    def backward(self, top: Blob, bottom: Blob) -> None:
        cudnn.activation_backward(
            self.handle.cudnn, self.activation, 1.0, top.desc, top.data.ptr, top.desc,
            top.diff.ptr, bottom.desc, bottom.data.ptr, 0.0, bottom.desc, bottom.diff.ptr,
        )  # fmt: skip


class Pooling(Layer):
    """Max pooling over square windows without padding."""

    def __init__(self, name: str, window: int = 2, stride: int = 2) -> None:
        super().__init__(name)
        self.window = window
        self.stride = stride
        self.pooling = cudnn.PoolingDescriptor("max", (window, window), (0, 0), (stride, stride))

    def setup(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        n, c, *spatial = bottom_shape
        if any(size < self.window for size in spatial):
            raise ValueError(f"{self.name}: window {self.window} exceeds the input {bottom_shape}")
        # cuDNN rounds the output size down (Caffe rounds up).
        return (n, c, *((size - self.window) // self.stride + 1 for size in spatial))

    def forward(self, bottom: Blob, top: Blob) -> None:
        cudnn.pooling_forward(
            self.handle.cudnn, self.pooling, 1.0, bottom.desc, bottom.data.ptr, 0.0,
            top.desc, top.data.ptr,
        )  # fmt: skip

    def backward(self, top: Blob, bottom: Blob) -> None:
        cudnn.pooling_backward(
            self.handle.cudnn, self.pooling, 1.0, top.desc, top.data.ptr, top.desc,
            top.diff.ptr, bottom.desc, bottom.data.ptr, 0.0, bottom.desc, bottom.diff.ptr,
        )  # fmt: skip


class SoftmaxWithLoss(Layer):
    """Softmax on the device; its top holds the class probabilities.

    cuDNN has no loss call, so the cross-entropy and its gradient (a few numbers per sample)
    are computed on the host.
    """

    labels: np.ndarray  # set by the net before each forward pass

    def setup(self, bottom_shape: tuple[int, ...]) -> tuple[int, ...]:
        if tuple(bottom_shape[2:]) != (1, 1):
            raise ValueError(
                f"{self.name}: expects class scores of shape (N, classes, 1, 1), got {bottom_shape}"
            )
        return bottom_shape

    def forward(self, bottom: Blob, top: Blob) -> None:
        cudnn.softmax_forward(
            self.handle.cudnn, "accurate", "channel", 1.0, bottom.desc, bottom.data.ptr, 0.0,
            top.desc, top.data.ptr,
        )  # fmt: skip
        self.probabilities = top.data.to_numpy().reshape(top.shape[:2])
        picked = self.probabilities[np.arange(len(self.labels)), self.labels]
        self.loss = float(-np.mean(np.log(np.maximum(picked, np.finfo(np.float32).tiny))))

    def backward(self, top: Blob, bottom: Blob) -> None:
        # The gradient of the mean cross-entropy with respect to the scores.
        grad = self.probabilities.copy()
        grad[np.arange(len(self.labels)), self.labels] -= 1.0
        bottom.diff.copy_from_numpy((grad / len(self.labels)).reshape(bottom.shape))
