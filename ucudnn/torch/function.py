"""The autograd function of a converted layer: forward, backward-data and backward-filter,
each through the model's Handle.

It returns gradients to autograd, which accumulates them as usual, and runs only the kernels
whose gradient autograd needs: no backward-data for an input that needs no gradient (a
network's first layer), no backward-filter for a frozen weight. The bias's gradient is a sum
over dy, taken by PyTorch in float32 (float64 for
float64). Double backward is not supported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.autograd.function import once_differentiable

from ucudnn.torch.geometry import Geometry
from ucudnn.torch.handles import ModelHandles


@dataclasses.dataclass(frozen=True)
class LayerCall:
    """One call of a layer: its Handles, its name in the plan, its geometry, and whether it
    must run deterministic algorithms."""

    handles: ModelHandles
    layer: str | None
    geometry: Geometry
    deterministic: bool

    def run(
        self,
        kernel: str,
        inputs: tuple[torch.Tensor, torch.Tensor],
        output: torch.Tensor,
        bias: torch.Tensor | None = None,
    ) -> None:
        handles = self.handles
        handle = handles.handle_for(output.device, self.deterministic)
        handles.runs.run(handle, kernel, self.geometry, inputs, output, bias, self.layer)

    def empty(self, size: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """A new tensor of `size`, dense in the call's memory format."""
        return torch.empty(
            size, dtype=like.dtype, device=like.device, memory_format=self.geometry.memory_format
        )


class Convolution(torch.autograd.Function):
    """y = conv(x, w) + b through ucudnn; x and w dense in the call's memory format."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, call: LayerCall
    ) -> torch.Tensor:
        y = call.empty(call.geometry.problem.y_dims, x)
        call.run("forward", (x, w), y, b)
        needs_x, needs_w = ctx.needs_input_grad[:2]
        # Keep only what the gradients asked for will read.
        ctx.save_for_backward(x if needs_w else None, w if needs_x else None)
        ctx.call = call
        return y

    @staticmethod
    @once_differentiable
    def backward(
        ctx: Any, dy: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, None]:
        x, w = ctx.saved_tensors
        call: LayerCall = ctx.call
        dy = call.geometry.prepared(dy)
        needs_x, needs_w, needs_b, _ = ctx.needs_input_grad
        dx = dw = db = None
        if needs_x:
            dx = call.empty(call.geometry.problem.x_dims, dy)
            call.run("backward_data", (w, dy), dx)
        if needs_w:
            dw = call.empty(call.geometry.problem.w_dims, dy)
            call.run("backward_filter", (x, dy), dw)
        if needs_b:
            wide = torch.float64 if dy.dtype == torch.float64 else torch.float32
            db = dy.sum(dim=(0, *range(2, dy.dim())), dtype=wide).to(dy.dtype)
        return dx, dw, db, None
