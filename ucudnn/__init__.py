"""ucudnn: faster cuDNN convolutions under a memory budget, by micro-batching.

The planner (`ucudnn.planner`) is pure Python and works without a GPU; the Handle and the
NumPy functions need the native modules and, to run, a CUDA device.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ucudnn.core.problem import KERNELS, ConvProblem
from ucudnn.faces.numpy_api import conv_backward_data, conv_backward_filter, conv_forward

try:
    __version__ = version("ucudnn")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "KERNELS",
    "ConvProblem",
    "Handle",
    "conv_backward_data",
    "conv_backward_filter",
    "conv_forward",
    "info",
]


def __getattr__(name: str) -> object:
    # Loaded on first use so that `import ucudnn` never touches the native modules.
    if name == "Handle":
        from ucudnn.runtime.handle import Handle

        return Handle
    if name == "info":
        from ucudnn.core.device import info

        return info
    raise AttributeError(f"module 'ucudnn' has no attribute {name!r}")
