"""convert, revert and plan: a whole PyTorch model onto ucudnn and back."""

from __future__ import annotations

import os
import warnings
from typing import Any, cast

import torch
from torch import nn

from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.errors import UcudnnWarning
from ucudnn.planner.plan import Plan
from ucudnn.torch.handles import ModelHandles, is_default
from ucudnn.torch.layers import CONVERTED, ORIGINAL, Converted, attach, detach


def convert(
    model: nn.Module,
    *,
    workspace_limit: Size | None = None,
    total_workspace: Size | None = None,
    engines: bool | None = None,
    policy: PolicyArgument | None = None,
    slab_policy: PolicyArgument | None = None,
    database: str | os.PathLike[str] | None = None,
    workspace_sharing: str | None = None,
) -> nn.Module:
    """Run `model`'s convolutions through ucudnn, and return it.

    Every torch.nn.Conv2d and Conv3d of the model (the model itself too) becomes, in place,
    a `ucudnn.torch.Conv2d` or `Conv3d`: the same object with the same parameters, so an
    optimizer made before still trains it, and its state_dict is unchanged. Layers of other
    classes derived from them are left alone, as are layers with a padding_mode other than
    "zeros" (one UcudnnWarning names them). Layers converted before join this call's Handles.

    The model gets one Handle per device it runs on, made on first use, with these options
    (as `ucudnn.Handle` takes them; unset ones come from the UCUDNN_* variables):
    `workspace_limit` (WR: bytes per kernel, each kernel planned when first run) or
    `total_workspace` (WD: bytes for the whole network: call `plan(model, example_input)`
    before training), `workspace_sharing` ("divided", the default: each kernel its own slice
    of the total; "shared": one buffer of the total that the layers use in turn, as they run
    one at a time), `engines`, `policy`, `slab_policy` (slabs of large volumes: docs/spatial.md),
    `database`. Each kernel is known to the plan by its
    layer's name in the model (`model.named_modules()`).

    Raises:
        TypeError: `model` is not a torch.nn.Module, or an option of the wrong type.
        ValueError: an option the Handle refuses (both workspace_limit and total_workspace,
            text that is no size, an unknown policy, ...).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"convert takes a torch.nn.Module, got {type(model).__name__}")
    handles = ModelHandles(
        workspace_limit=workspace_limit, total_workspace=total_workspace, engines=engines,
        policy=policy, slab_policy=slab_policy, database=database,
        workspace_sharing=workspace_sharing,
    )  # fmt: skip
    left = []
    for name, module in model.named_modules():
        kind = type(module)
        if kind in CONVERTED:
            if module.padding_mode != "zeros":
                left.append(name or "the model")
                continue
            module.__class__ = CONVERTED[kind]
        elif kind not in ORIGINAL:
            continue
        attach(cast(Converted, module), handles, name or None)
    if left:
        warnings.warn(
            f"convert left {', '.join(left)} as PyTorch's: ucudnn runs padding_mode='zeros' only",
            UcudnnWarning,
            stacklevel=2,
        )
    return model


def revert(model: nn.Module) -> nn.Module:
    """Turn `model`'s ucudnn layers back into torch.nn.Conv2d and Conv3d, in place, and close
    the Handles `convert` gave it (their workspaces). Returns the model.

    Raises:
        TypeError: `model` is not a torch.nn.Module.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"revert takes a torch.nn.Module, got {type(model).__name__}")
    for handles in _handles_of(model):
        if not is_default(handles):  # other layers of the process may use those
            handles.close()
    for module in model.modules():
        kind = type(module)
        if kind in ORIGINAL:
            detach(cast(Converted, module))
            module.__class__ = ORIGINAL[kind]
    return model


def plan(model: nn.Module, *inputs: Any, **kwargs: Any) -> Plan:
    """Plan every convolution of `model` together, from one forward of `model(*inputs,
    **kwargs)` run as a step would run it (call it under the torch.autocast and on the device
    and memory format training uses): each converted layer registers its forward kernel, and
    the backward ones autograd will ask of it (backward-data where its input needs a
    gradient, backward-filter where its weight does), and computes with PyTorch's own
    convolution meanwhile. Then the Handle plans them (`Handle.finalize`: in WD mode as one
    network within total_workspace; in WR mode each alone) and measures what it lacks.

    Nothing of the model changes: its buffers (BatchNorm's running statistics) are restored
    afterwards, no gradient is made, and PyTorch's random numbers are left as they were.
    Returns the plan.

    Raises:
        TypeError: `model` is not a torch.nn.Module.
        ValueError: the model has no converted layer, layers converted by several convert
            calls, or layers that ran on several devices in the forward (or none ran).
        InfeasibleError, SolverError, CudaError, CudnnError: planning fails (Handle.finalize).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"plan takes a torch.nn.Module, got {type(model).__name__}")
    found = _handles_of(model)
    if len(found) != 1:
        what = "no converted layer" if not found else "layers of several convert() calls"
        raise ValueError(f"plan() needs a model converted by one convert() call; it has {what}")
    (handles,) = found
    saved = {name: buffer.clone() for name, buffer in model.named_buffers()}
    devices = sorted({p.device.index for p in model.parameters() if p.device.type == "cuda"})
    try:
        # Its own random numbers (dropout's), so the training's are those it would have drawn.
        with handles.trace(), torch.random.fork_rng(devices=devices), torch.enable_grad():
            model(*inputs, **kwargs)
    finally:
        with torch.no_grad():
            for name, buffer in model.named_buffers():
                buffer.copy_(saved[name])
    return handles.finalize()


def workspace_bytes(model: nn.Module) -> int:
    """Device memory that ucudnn holds as workspace for `model`'s layers now: outside
    PyTorch's allocator, so torch.cuda.memory_allocated does not count it."""
    return sum(handles.workspace_bytes() for handles in _handles_of(model))


def _handles_of(model: nn.Module) -> list[ModelHandles]:
    """The distinct ModelHandles of the model's converted layers."""
    converted = (cast(Converted, m) for m in model.modules() if type(m) in ORIGINAL)
    return list(dict.fromkeys(layer.ucudnn_handles for layer in converted))
