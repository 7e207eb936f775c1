"""Blob: a float32 NCHW tensor on the device with its gradient, as in Caffe."""

from __future__ import annotations

from ucudnn import cuda, cudnn
from ucudnn.core.array import DeviceArray
from ucudnn.core.problem import packed_strides

DTYPE = "float32"


def zeros(shape: tuple[int, ...]) -> DeviceArray:
    array = DeviceArray.empty(shape, DTYPE)
    cuda.memset(array.ptr, 0, array.nbytes)
    return array


class Blob:
    """`data` and `diff` (its gradient) share one shape and one cuDNN tensor descriptor."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.desc = cudnn.TensorDescriptor(DTYPE, self.shape, packed_strides(self.shape, "NCHW"))
        self.data = zeros(self.shape)
        self.diff = zeros(self.shape)
