"""ucudnn inside PyTorch: micro-batched convolutions for a model, under a workspace budget.

    import ucudnn.torch
    model = ucudnn.torch.convert(model, workspace_limit="64MiB")   # every Conv2d/Conv3d
    ...train as before...
    ucudnn.torch.revert(model)

`convert` swaps a model's torch.nn.Conv2d and Conv3d layers, in place, for `Conv2d` and
`Conv3d`, which run their forward and both backward convolutions through one ucudnn Handle per
device, on PyTorch's current stream. In WR mode (`workspace_limit`) each layer plans on first
use; in WD mode (`total_workspace`) call `plan(model, example_input)` once before training, so
the network is planned as a whole. docs/torch.md says the rest.

PyTorch is optional: it comes with the extra, `pip install "ucudnn-cu13[torch]"`.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401  (the check that PyTorch is there)
except ImportError as exc:
    raise ImportError(
        "ucudnn.torch needs PyTorch, which ucudnn does not install by itself: install it with "
        "the extra, pip install 'ucudnn-cu13[torch]' (or 'ucudnn-cu12[torch]')"
    ) from exc

from ucudnn.errors import TorchFallbackWarning, UnplannedNetworkWarning
from ucudnn.torch.conversion import convert, plan, revert, workspace_bytes
from ucudnn.torch.handles import ModelHandles
from ucudnn.torch.layers import Conv2d, Conv3d

__all__ = [
    "Conv2d",
    "Conv3d",
    "ModelHandles",
    "TorchFallbackWarning",
    "UnplannedNetworkWarning",
    "convert",
    "plan",
    "revert",
    "workspace_bytes",
]
