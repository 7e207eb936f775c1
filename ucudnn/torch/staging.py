"""The simulated device's adapter: CPU tensors staged through the simulator's memory.

torch has no CUDA tensors where ucudnn runs on its simulated device (UCUDNN_DEVICE=sim, a
test double: docs/simulated-device.md), so there a converted model takes CPU tensors, and each
call copies its inputs into simulated device memory, runs, and copies the output back. This
is the only place that path lives: the same model code then runs in CI, checked against
torch's own CPU convolutions, and nothing here stands for a GPU's speed or memory.
"""

from __future__ import annotations

import numpy as np
import torch

from ucudnn.core.array import DeviceArray
from ucudnn.runtime.handle import Handle
from ucudnn.torch.geometry import Geometry


class StagedRuns:
    """Runs a Handle's kernel on CPU tensors, through copies in simulated device memory."""

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
        if output.device.type != "cpu":
            raise ValueError(
                f"on the simulated device (UCUDNN_DEVICE=sim) a converted layer takes CPU "
                f"tensors, got one on {output.device}"
            )
        first, second = (_to_device(geometry.stored(tensor)) for tensor in inputs)
        result = DeviceArray.empty(geometry.stored(output).shape, geometry.problem.dtype)
        device_bias = None if bias is None else _to_device(bias)
        tensors = (first, second, result)
        handle.run(kernel, geometry.problem, tensors, bias=device_bias, layer=layer)
        geometry.stored(output).copy_(_from_device(result))


def _to_device(tensor: torch.Tensor) -> DeviceArray:
    host = tensor.detach().contiguous()
    if host.dtype == torch.bfloat16:  # numpy has no bfloat16: its bit patterns, as uint16
        bits = host.view(torch.int16).numpy().view(np.uint16)
        return DeviceArray.from_numpy(bits, dtype="bfloat16")
    return DeviceArray.from_numpy(host.numpy())


def _from_device(array: DeviceArray) -> torch.Tensor:
    host = array.to_numpy()
    if array.dtype == "bfloat16":
        return torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(host)
