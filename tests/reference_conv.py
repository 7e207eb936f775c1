"""Convolutions in plain numpy (float64), the independent reference the GPU tests compare to.

Arrays are in logical order: x (N, C, *spatial), w (K, C/groups, *filter), y (N, K, *out).
The loops run over filter offsets only, so the reference stays fast on small test shapes.
"""

from __future__ import annotations

import itertools

import numpy as np

from ucudnn.core.problem import ConvProblem


def _windows(problem: ConvProblem):
    """For each filter offset: the index tuple into w and the slices of padded x it meets."""
    out = problem.output_size
    for offset in itertools.product(*(range(f) for f in problem.filter_size)):
        slices = tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, problem.dilation, problem.stride, out, strict=True)
        )
        yield offset, slices


def _filter(problem: ConvProblem, w: np.ndarray) -> np.ndarray:
    """cuDNN's 'convolution' mode flips the filter; cross-correlation does not."""
    if problem.mode == "convolution":
        return np.flip(w, axis=tuple(range(2, w.ndim)))
    return w


def _grouped(a: np.ndarray, groups: int) -> np.ndarray:
    """(N, C, ...) -> (N, G, C/G, ...)."""
    return a.reshape(a.shape[0], groups, a.shape[1] // groups, *a.shape[2:])


def _grouped_filter(problem: ConvProblem, w: np.ndarray) -> np.ndarray:
    """(K, C/G, *filter) -> (G, K/G, C/G, *filter), flipped for convolution mode."""
    w = _filter(problem, w).astype(np.float64)
    return w.reshape(problem.groups, w.shape[0] // problem.groups, *w.shape[1:])


def _pad_width(problem: ConvProblem):
    return [(0, 0), (0, 0), *((p, p) for p in problem.padding)]


def forward(problem: ConvProblem, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    g = problem.groups
    xp = np.pad(x.astype(np.float64), _pad_width(problem))
    wg = _grouped_filter(problem, w)
    y = np.zeros((problem.batch, g, problem.out_channels // g, *problem.output_size))
    for offset, slices in _windows(problem):
        patch = _grouped(xp[(slice(None), slice(None), *slices)], g)  # (N, G, C/G, *out)
        y += np.einsum("ngc...,gkc->ngk...", patch, wg[(..., *offset)])
    return y.reshape(problem.y_dims)


def backward_data(problem: ConvProblem, w: np.ndarray, dy: np.ndarray) -> np.ndarray:
    g = problem.groups
    wg = _grouped_filter(problem, w)
    dyg = _grouped(dy.astype(np.float64), g)  # (N, G, K/G, *out)
    padded = [n + 2 * p for n, p in zip(problem.input_size, problem.padding, strict=True)]
    dxp = np.zeros((problem.batch, problem.in_channels, *padded))
    for offset, slices in _windows(problem):
        contribution = np.einsum("ngk...,gkc->ngc...", dyg, wg[(..., *offset)])
        dxp[(slice(None), slice(None), *slices)] += contribution.reshape(
            problem.batch, problem.in_channels, *problem.output_size
        )
    crop = tuple(slice(p, p + n) for p, n in zip(problem.padding, problem.input_size, strict=True))
    return dxp[(slice(None), slice(None), *crop)]


def backward_filter(problem: ConvProblem, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    g = problem.groups
    xp = np.pad(x.astype(np.float64), _pad_width(problem))
    dyg = _grouped(dy.astype(np.float64), g)
    dyg = dyg.reshape(*dyg.shape[:3], -1)  # spatial positions flattened for the sum
    dw = np.zeros((g, problem.out_channels // g, problem.in_channels // g, *problem.filter_size))
    for offset, slices in _windows(problem):
        patch = _grouped(xp[(slice(None), slice(None), *slices)], g)
        patch = patch.reshape(*patch.shape[:3], -1)
        dw[(..., *offset)] = np.einsum("ngkp,ngcp->gkc", dyg, patch)
    return _filter(problem, dw.reshape(problem.w_dims))


KERNELS = {"forward": forward, "backward_data": backward_data, "backward_filter": backward_filter}
