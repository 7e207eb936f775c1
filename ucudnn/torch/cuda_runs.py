"""Calls on CUDA tensors: raw pointers to a Handle, on PyTorch's current stream.

The tensors come dense in the call's memory format, with shapes the layer's geometry was made
from, so the Handle takes their pointers as they are (its fast path, checking nothing). Each
call first sets the Handle's stream to PyTorch's current one, so the convolutions are ordered
with the rest of the step, and nothing is synchronised.
"""

from __future__ import annotations

import torch

from ucudnn.runtime.handle import Handle
from ucudnn.torch.geometry import Geometry


class CudaRuns:
    """Runs a Handle's kernel on CUDA tensors of the Handle's device."""

    def run(
        self,
        handle: Handle,
        kernel: str,
        geometry: Geometry,
        inputs: tuple[torch.Tensor, torch.Tensor],
        output: torch.Tensor,
        bias: torch.Tensor | None,
        layer: str | None,
    ) -> None:
        if output.device.index != torch.cuda.current_device():
            # cuDNN runs a handle on the device current when it was made.
            with torch.cuda.device(output.device):
                self.run(handle, kernel, geometry, inputs, output, bias, layer)
            return
        handle.set_stream(torch.cuda.current_stream(output.device).cuda_stream)
        first, second = inputs
        pointers = (first.data_ptr(), second.data_ptr(), output.data_ptr())
        bias_pointer = None if bias is None else bias.data_ptr()
        handle.run(kernel, geometry.problem, pointers, bias=bias_pointer, layer=layer)
