"""Documented device calls as users write them: numpy integers where integers go, and sizes
as text. `tests/test_typed_calls.py` type-checks this file with mypy --strict and runs it on
the simulated device."""

from __future__ import annotations

import numpy as np

import ucudnn
from ucudnn import ConvProblem, Handle
from ucudnn.core.array import DeviceArray

x = np.random.rand(4, 3, 8, 8).astype(np.float32)
w = np.random.rand(6, 3, 3, 3).astype(np.float32)
b = np.random.rand(6).astype(np.float32)
y = ucudnn.conv_forward(
    x, w, bias=b, padding=np.int64(1), stride=(np.int64(1), 1), dilation=np.int32(1),
    groups=np.int64(1), workspace_limit="64MiB", policy=[np.int64(1), np.int64(2)],
)  # fmt: skip
x_shape = (np.int64(4), np.int64(3), np.int64(8), np.int64(8))
dx = ucudnn.conv_backward_data(w, y, x_shape, padding=1, workspace_limit=np.int64(1 << 26))
dw = ucudnn.conv_backward_filter(x, y, (np.int64(6), 3, 3, 3), padding="same", algo=np.int64(0))
assert dx.shape == x.shape and dw.shape == w.shape

problem = ConvProblem.from_shapes(x.shape, w.shape, padding=np.int64(1))
with Handle(workspace_limit="8MiB", stream=np.int64(0)) as handle:
    x_dev, w_dev, y_dev = (DeviceArray.from_numpy(a) for a in (x, w, y))
    handle.forward(x_dev, w_dev, y_dev, problem, layer="conv1")
    handle.replan(workspace_limit=np.int64(1 << 20))
    assert handle.workspace_size(problem, "forward", layer="conv1") <= 1 << 20
with Handle(total_workspace="64MiB") as network:
    network.register(problem, layer="conv1")
    assert network.finalize().workspace_bytes <= 64 << 20
