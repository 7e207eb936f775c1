"""SGD with momentum, as Caffe does it, entirely on the device."""

from __future__ import annotations

from examples.tiny_caffe.blob import zeros
from examples.tiny_caffe.net import Net
from ucudnn import cudnn


class SGD:
    """v = momentum * v - lr * dw, then w = w + v, for every parameter.

    Both updates are cudnnAddTensor calls (c = alpha * a + beta * c), so parameters and their
    gradients never leave the GPU.
    """

    def __init__(self, net: Net, lr: float, momentum: float) -> None:
        self.net = net
        self.lr = lr
        self.momentum = momentum
        self.history = [zeros(param.shape) for param in net.params]

    def step(self) -> None:
        handle = self.net.handle.cudnn
        for param, v in zip(self.net.params, self.history, strict=True):
            cudnn.add_tensor(
                handle, -self.lr, param.desc, param.diff.ptr, self.momentum, param.desc, v.ptr
            )
            cudnn.add_tensor(handle, 1.0, param.desc, v.ptr, 1.0, param.desc, param.data.ptr)
