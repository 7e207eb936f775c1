"""ucudnn.torch.Conv2d and Conv3d: torch.nn.Conv2d and Conv3d whose convolutions run through a
ucudnn Handle.

They are subclasses, with the same constructor arguments and parameters (`weight`, `bias`), so
a state_dict loads either way and code that looks for nn.Conv2d finds them; `convert` turns a
model's layers into them in place (the same objects, their class changed) and `revert` back.
Only padding_mode="zeros" runs: the others are refused when the layer is made.

What runs where:
- CUDA tensors of float32 (TF32 as PyTorch allows it its cuDNN convolutions), float16,
  bfloat16 or float64, contiguous or channels-last (channels_last_3d), batched or not, under
  torch.autocast too: through the Handle, on PyTorch's current stream; deterministic
  algorithms only while torch.use_deterministic_algorithms or torch.backends.cudnn.deterministic
  asks for them.
- A non-dense input (a slice, a transpose): a dense copy in the memory format the call runs
  in, as PyTorch's own cuDNN path makes.
- padding="same" with an even kernel (more zeros after than before, which cuDNN cannot):
  the input is padded by a copy (memory the size of x, as PyTorch itself does), and its
  gradient cropped back, for every candidate alike.
- Tensors not on a CUDA device (CPU tensors): PyTorch's own convolution, with one
  TorchFallbackWarning per process. On the simulated device (UCUDNN_DEVICE=sim), CPU tensors
  run on the simulator instead (`staging.py`).
- An empty batch: PyTorch's own convolution (there is nothing to plan).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn
from torch.nn.common_types import _size_2_t, _size_3_t

from ucudnn._native import SIMULATED
from ucudnn.core.checks import shown
from ucudnn.errors import TorchFallbackWarning, UnplannedNetworkWarning, warn_caller
from ucudnn.torch.function import Convolution, LayerCall
from ucudnn.torch.geometry import (
    DTYPE_NAMES,
    Geometry,
    LayerSettings,
    geometry_of,
    runs_channels_last,
    tf32_allowed,
)
from ucudnn.torch.handles import ModelHandles, default_handles


class _Geometries(dict[tuple[Any, ...], Geometry]):
    """A layer's geometries by call; never pickled or copied (made again on use)."""

    def __reduce__(self) -> tuple[type[_Geometries], tuple[()]]:
        return _Geometries, ()


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d through ucudnn; `handles` (keyword only) shares a converted model's
    Handles, else the process's default ones (options from the UCUDNN_* variables).

    Raises (when made):
        ValueError: a padding_mode other than "zeros", or what torch.nn.Conv2d refuses.
    """

    ucudnn_handles: ModelHandles
    ucudnn_layer: str | None  # the layer's name in the plan
    _ucudnn_geometries: _Geometries

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: _size_2_t,
        stride: _size_2_t = 1,
        padding: _size_2_t | str = 0,
        dilation: _size_2_t = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
        *,
        handles: ModelHandles | None = None,
    ) -> None:
        check_padding_mode(padding_mode, "Conv2d")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            "zeros", device, dtype,
        )  # fmt: skip
        attach(self, handles or default_handles(), None)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return converted_forward(self, input)


class Conv3d(nn.Conv3d):
    """torch.nn.Conv3d through ucudnn, as Conv2d is torch.nn.Conv2d."""

    ucudnn_handles: ModelHandles
    ucudnn_layer: str | None
    _ucudnn_geometries: _Geometries

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: _size_3_t,
        stride: _size_3_t = 1,
        padding: _size_3_t | str = 0,
        dilation: _size_3_t = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
        *,
        handles: ModelHandles | None = None,
    ) -> None:
        check_padding_mode(padding_mode, "Conv3d")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            "zeros", device, dtype,
        )  # fmt: skip
        attach(self, handles or default_handles(), None)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return converted_forward(self, input)


Converted = Conv2d | Conv3d

# Each torch class and its ucudnn subclass, both ways.
CONVERTED: dict[type[nn.Module], type[nn.Module]] = {nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}
ORIGINAL: dict[type[nn.Module], type[nn.Module]] = {new: old for old, new in CONVERTED.items()}


def check_padding_mode(padding_mode: object, what: str) -> None:
    if padding_mode != "zeros":
        raise ValueError(
            f"ucudnn.torch.{what} runs padding_mode='zeros' only, got {shown(padding_mode)}: "
            "keep torch.nn's layer for it (convert() leaves such layers as they are), or pad "
            "with torch.nn.functional.pad and give padding=0"
        )


def attach(layer: Converted, handles: ModelHandles, name: str | None) -> None:
    """Give a layer (a converted class) the Handles it runs on and its name in their plan."""
    layer.ucudnn_handles = handles
    layer.ucudnn_layer = name
    layer._ucudnn_geometries = _Geometries()


def detach(layer: Converted) -> None:
    """Remove what `attach` gave."""
    for attribute in ("ucudnn_handles", "ucudnn_layer", "_ucudnn_geometries"):
        layer.__dict__.pop(attribute, None)


_fallback_warned = False
# Warnings name the user's line, not torch.nn's call of the layer.
_TORCH_DIRECTORY = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,)


def converted_forward(layer: Converted, input: torch.Tensor) -> torch.Tensor:
    """The forward of a converted layer (see the module's docstring for what runs where)."""
    rank = len(layer.kernel_size)
    if input.dim() == rank + 1:  # unbatched, as torch.nn takes it
        return converted_forward(layer, input.unsqueeze(0)).squeeze(0)
    if input.dim() != rank + 2:
        raise ValueError(
            f"{type(layer).__name__} takes a {rank + 1}D (unbatched) or {rank + 2}D (batched) "
            f"input, got one of size {tuple(input.shape)}"
        )
    if not SIMULATED and input.device.type != "cuda":
        _warn_fallback(input.device)
        return _torch_forward(layer, input, layer.weight, layer.bias)
    handles = layer.ucudnn_handles
    x, w, b = _autocast(input, layer.weight, layer.bias)
    _check_tensors(x, w, b)
    if x.shape[0] == 0:
        return _torch_forward(layer, x, w, b)
    geometry = _geometry(layer, x, w)
    deterministic = (
        torch.are_deterministic_algorithms_enabled() or torch.backends.cudnn.deterministic
    )
    if handles.registering:
        kernels = ["forward"]
        if torch.is_grad_enabled():
            kernels += ["backward_data"] * input.requires_grad
            kernels += ["backward_filter"] * layer.weight.requires_grad
        handle = handles.handle_for(x.device, deterministic)
        handle.register(geometry.problem, kernels, layer.ucudnn_layer)
        return _torch_forward(layer, x, w, b)
    if handles.mode == "wd" and not handles.planned and not handles.warned_unplanned:
        handles.warned_unplanned = True
        warn_caller(
            "this model's Handles plan the network as a whole (total_workspace), but "
            "ucudnn.torch.plan(model, example_input) was not called: each kernel that appears "
            "plans the whole network again",
            UnplannedNetworkWarning,
            _TORCH_DIRECTORY,
        )
    x = geometry.prepared(geometry.padded_input(x))
    w = geometry.prepared(w)
    call = LayerCall(handles, layer.ucudnn_layer, geometry, deterministic)
    y: torch.Tensor = Convolution.apply(x, w, b, call)  # type: ignore[no-untyped-call]
    return y


def _torch_forward(
    layer: Converted, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
) -> torch.Tensor:
    """PyTorch's own convolution of the layer."""
    y: torch.Tensor = layer._conv_forward(x, w, b)
    return y


def _warn_fallback(device: torch.device) -> None:
    global _fallback_warned
    if _fallback_warned:
        return
    _fallback_warned = True
    warn_caller(
        f"a converted layer got tensors on {device}, which ucudnn cannot take; PyTorch's own "
        "convolution runs them (said once per process)",
        TorchFallbackWarning,
        _TORCH_DIRECTORY,
    )


def _autocast(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The tensors as torch.autocast casts a convolution's: floating ones but float64 to the
    autocast dtype, when autocast is on for their device."""
    device = x.device.type
    if not torch.is_autocast_enabled(device):
        return x, w, b
    dtype = torch.get_autocast_dtype(device)

    def cast(tensor: torch.Tensor) -> torch.Tensor:
        castable = tensor.is_floating_point() and tensor.dtype != torch.float64
        return tensor.to(dtype) if castable else tensor

    return cast(x), cast(w), None if b is None else cast(b)


def _check_tensors(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> None:
    if x.dtype not in DTYPE_NAMES:
        names = ", ".join(str(dtype) for dtype in DTYPE_NAMES)
        raise TypeError(f"ucudnn runs convolutions of {names}; the input is {x.dtype}")
    for name, tensor in (("weight", w), ("bias", b)):
        if tensor is None:
            continue
        if tensor.dtype != x.dtype:
            raise TypeError(f"the input is {x.dtype} but the {name} is {tensor.dtype}")
        if tensor.device != x.device:
            raise ValueError(f"the input is on {x.device} but the {name} on {tensor.device}")


def _geometry(layer: Converted, x: torch.Tensor, w: torch.Tensor) -> Geometry:
    channels_last = runs_channels_last(x, w)
    tf32 = tf32_allowed()
    key = (x.shape, w.shape, x.dtype, channels_last, tf32)
    geometries = layer._ucudnn_geometries
    geometry = geometries.get(key)
    if geometry is None:
        settings = LayerSettings(
            tuple(layer.stride), layer.padding if isinstance(layer.padding, str)
            else tuple(layer.padding), tuple(layer.dilation), layer.groups,
        )  # fmt: skip
        geometry = geometries[key] = geometry_of(x, w, channels_last, settings, tf32)
    return geometry
