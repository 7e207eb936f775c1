"""The numpy reference itself: direct loops on tiny shapes, and the adjoint identities that tie
the three kernels together (<conv(x, w), dy> = <x, dx> = <w, dw>)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem

PROBLEMS = [
    ConvProblem.create(2, 3, 4, (5, 6), 3, padding=1),
    ConvProblem.create(2, 4, 6, (7, 5), (3, 2), padding=(2, 0), stride=(2, 1), groups=2),
    ConvProblem.create(1, 2, 2, (6, 6), 2, dilation=2, mode="convolution"),
    ConvProblem.create(2, 2, 3, (4, 5, 3), 2, padding=1, stride=(1, 2, 1)),
]


def _direct_forward(p: ConvProblem, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """One output element at a time, straight from the definition."""
    y = np.zeros(p.y_dims)
    kg, cg = p.out_channels // p.groups, p.in_channels // p.groups
    for n, k, *o in itertools.product(*(range(d) for d in p.y_dims)):
        g = k // kg
        total = 0.0
        for c, *r in itertools.product(range(cg), *(range(f) for f in p.filter_size)):
            tap = [
                f - 1 - ri if p.mode == "convolution" else ri
                for ri, f in zip(r, p.filter_size, strict=True)
            ]
            pos = [oi * s + ri * d - pad for oi, s, ri, d, pad in
                   zip(o, p.stride, r, p.dilation, p.padding, strict=True)]  # fmt: skip
            if all(0 <= q < n_in for q, n_in in zip(pos, p.input_size, strict=True)):
                total += x[(n, g * cg + c, *pos)] * w[(k, c, *tap)]
        y[(n, k, *o)] = total
    return y


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.describe())
def test_forward_matches_direct_definition(problem: ConvProblem) -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(problem.x_dims), rng.standard_normal(problem.w_dims)
    np.testing.assert_allclose(ref.forward(problem, x, w), _direct_forward(problem, x, w))


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.describe())
def test_backward_kernels_are_adjoints_of_forward(problem: ConvProblem) -> None:
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(problem.x_dims), rng.standard_normal(problem.w_dims)
    dy = rng.standard_normal(problem.y_dims)
    inner = np.vdot(ref.forward(problem, x, w), dy)
    assert np.vdot(x, ref.backward_data(problem, w, dy)) == pytest.approx(inner)
    assert np.vdot(w, ref.backward_filter(problem, x, dy)) == pytest.approx(inner)
