"""ucudnn's NumPy face: a micro-batched convolution on the GPU, checked against NumPy."""

import sys

import numpy as np

import ucudnn
from ucudnn.errors import NoDeviceError

rng = np.random.default_rng(0)
x = rng.standard_normal((32, 8, 20, 20), dtype=np.float32)  # N, C, H, W
w = rng.standard_normal((16, 8, 3, 3), dtype=np.float32)  # K, C, R, S
b = rng.standard_normal(16, dtype=np.float32)  # one bias per output channel
try:
    y = ucudnn.conv_forward(x, w, bias=b, padding="same", workspace_limit="8MiB")
except NoDeviceError as exc:
    print(f"no GPU: nothing to run ({exc})")
    sys.exit(0)

# The same cross-correlation in float64 NumPy: every 3x3 window of the input padded by 1 on
# each side ("same" for a 3x3 filter) times w, plus the bias.
padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
reference = np.einsum("nchwrs,kcrs->nkhw", windows, w) + b.reshape(1, -1, 1, 1)
error = np.linalg.norm(y - reference) / np.linalg.norm(reference)
device = ucudnn.info()["devices"][0]["name"]  # "SIMULATED ..." with UCUDNN_DEVICE=sim
print(f"y {y.shape} {y.dtype} on {device}; normalised L2 difference from NumPy: {error:.2e}")
