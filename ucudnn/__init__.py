"""ucudnn: faster cuDNN convolutions under a memory budget, by micro-batching.

The planner (`ucudnn.planner`) is pure Python and works without a GPU; the Handle and the
NumPy functions need the native modules and, to run, a CUDA device.

Every name below loads on first use: `import ucudnn` itself loads neither numpy, the planner's
solvers nor the native modules.

`ucudnn.cuda` and `ucudnn.cudnn`, imported by name, offer the CUDA runtime and cuDNN calls a
framework needs beside the convolutions (device memory, descriptors, activations, pooling).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ucudnn.core.lazy import lazy_exports

# The one place the version is written; the build reads it from here (pyproject.toml).
__version__ = "0.1.0"

if TYPE_CHECKING:  # the lazily loaded names, for type checkers and IDEs
    from ucudnn.core.array import DeviceArray as DeviceArray
    from ucudnn.core.device import info as info
    from ucudnn.core.problem import KERNELS as KERNELS, ConvProblem as ConvProblem
    from ucudnn.errors import UcudnnWarning as UcudnnWarning
    from ucudnn.faces.numpy_api import (
        conv_backward_bias as conv_backward_bias,
        conv_backward_data as conv_backward_data,
        conv_backward_filter as conv_backward_filter,
        conv_forward as conv_forward,
    )
    from ucudnn.runtime.handle import Handle as Handle

_EXPORTS = {
    "DeviceArray": "ucudnn.core.array",
    **dict.fromkeys(["KERNELS", "ConvProblem"], "ucudnn.core.problem"),
    **dict.fromkeys(
        ["conv_backward_bias", "conv_backward_data", "conv_backward_filter", "conv_forward"],
        "ucudnn.faces.numpy_api",
    ),
    "Handle": "ucudnn.runtime.handle",
    "UcudnnWarning": "ucudnn.errors",
    "info": "ucudnn.core.device",
}
__all__ = sorted(_EXPORTS)
if not TYPE_CHECKING:  # checkers see the imports above, and so flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
