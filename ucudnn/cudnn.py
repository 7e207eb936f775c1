"""The cuDNN calls a framework needs beside the convolutions: tensor, activation and pooling
descriptors, tensor arithmetic, activations, pooling and softmax, and the names of cuDNN's
legacy convolution algorithms.

A deliberate subset of `ucudnn._native._cudnn`, the thin binding of cuDNN, reached through
`ucudnn._native`: with UCUDNN_DEVICE=sim these are the simulated device's. Importing this
module loads cuDNN and the CUDA runtime, which needs no GPU; descriptors need none either.
Dtypes, modes and algorithms are names ("float32", "relu", "max", "accurate", "channel"), and
device addresses are Python ints. Each function's docstring says what it raises: a CudnnError
subclass naming the failed call, or ValueError or TypeError for an argument refused before
cuDNN sees it.

`ALGORITHMS[kernel]` names the legacy algorithms of "forward", "backward_data" and
"backward_filter" in the order of their enum values: the names and numbers `algo` takes.
"""

from __future__ import annotations

from ucudnn._native._cudnn import (
    ALGORITHMS as ALGORITHMS,
    ActivationDescriptor as ActivationDescriptor,
    Handle as Handle,
    PoolingDescriptor as PoolingDescriptor,
    TensorDescriptor as TensorDescriptor,
    activation_backward as activation_backward,
    activation_forward as activation_forward,
    add_tensor as add_tensor,
    pooling_backward as pooling_backward,
    pooling_forward as pooling_forward,
    scale_tensor as scale_tensor,
    softmax_backward as softmax_backward,
    softmax_forward as softmax_forward,
    version as version,
)

__all__ = [
    "ALGORITHMS",
    "ActivationDescriptor",
    "Handle",
    "PoolingDescriptor",
    "TensorDescriptor",
    "activation_backward",
    "activation_forward",
    "add_tensor",
    "pooling_backward",
    "pooling_forward",
    "scale_tensor",
    "softmax_backward",
    "softmax_forward",
    "version",
]
