"""The slab geometry (ucudnn.core.slabs) against a direct convolution written here.

Each kernel is run whole and slab by slab, every slab on views of the whole tensors padded as
its `Slab` says; integer-valued float64 data makes every sum exact, so the two must agree bit
for bit. The cases cover strides 1-3, dilations 1-2, even and odd filters, "same" and "valid"
padding, extents that do not divide the planes, and 2D and 3D problems.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ucudnn.core import slabs
from ucudnn.core.problem import KERNELS, ConvProblem

RNG = np.random.default_rng(40)


def _windows(x: np.ndarray, problem: ConvProblem) -> np.ndarray:
    """x (N, C, *spatial) padded as `problem` says, cut into (N, C, *out, *filter) windows."""
    pads = [(0, 0), (0, 0), *zip(problem.padding, problem.padding_end, strict=True)]
    padded = np.pad(x, pads)
    rank = problem.rank
    out, taps = problem.output_size, problem.filter_size
    windows = np.empty((*x.shape[:2], *out, *taps))
    for o in itertools.product(*map(range, out)):
        for t in itertools.product(*map(range, taps)):
            index = tuple(
                o[a] * problem.stride[a] + t[a] * problem.dilation[a] for a in range(rank)
            )
            windows[(slice(None), slice(None), *o, *t)] = padded[(slice(None), slice(None), *index)]
    return windows


def _forward(problem: ConvProblem, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rank = problem.rank
    spec = "nc" + "opq"[:rank] + "rst"[:rank] + ",kc" + "rst"[:rank] + "->nk" + "opq"[:rank]
    return np.einsum(spec, _windows(x, problem), w)


def _backward_filter(problem: ConvProblem, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    rank = problem.rank
    spec = "nc" + "opq"[:rank] + "rst"[:rank] + ",nk" + "opq"[:rank] + "->kc" + "rst"[:rank]
    return np.einsum(spec, _windows(x, problem), dy)


def _backward_data(problem: ConvProblem, w: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """The adjoint of `_forward`: each dy value spread over the x planes its window read, what
    lands in the padding dropped."""
    rank = problem.rank
    pre, post = problem.padding, problem.padding_end
    padded = np.zeros((dy.shape[0], w.shape[1], *(n + a + b for n, a, b in zip(
        problem.input_size, pre, post, strict=True))))  # fmt: skip
    for o in itertools.product(*map(range, problem.output_size)):
        for t in itertools.product(*map(range, problem.filter_size)):
            index = tuple(
                o[a] * problem.stride[a] + t[a] * problem.dilation[a] for a in range(rank)
            )
            contribution = np.einsum("nk,kc->nc", dy[(slice(None), slice(None), *o)],
                                     w[(slice(None), slice(None), *t)])  # fmt: skip
            padded[(slice(None), slice(None), *index)] += contribution
    inner = tuple(slice(a, a + n) for a, n in zip(pre, problem.input_size, strict=True))
    return padded[(slice(None), slice(None), *inner)]


def _ints(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(-3, 4, shape).astype(np.float64)


def _planes(tensor: np.ndarray, first: int, count: int) -> np.ndarray:
    return tensor[:, :, first : first + count]


def _slab_by_slab(problem: ConvProblem, kernel: str, extent: int, x, w, y) -> np.ndarray:
    """The kernel run slab by slab on views of x and y (y is dy for the backward kernels)."""
    out = np.zeros_like(w if kernel == "backward_filter" else (y if kernel == "forward" else x))
    for slab in slabs.slabs(problem, kernel, extent):
        part = slab.problem(problem)
        assert part.input_size[0] == slab.x_planes
        assert part.output_size[0] == slab.y_planes  # the views are what the slab's dims say
        xs, ys = _planes(x, slab.x_first, slab.x_planes), _planes(y, slab.y_first, slab.y_planes)
        if kernel == "forward":
            out[:, :, slab.y_first : slab.y_first + slab.y_planes] = _forward(part, xs, w)
        elif kernel == "backward_data":
            out[:, :, slab.x_first : slab.x_first + slab.x_planes] = _backward_data(part, w, ys)
        else:
            out += _backward_filter(part, xs, ys)
    return out


CASES = [
    # (input spatial size, filter, padding, stride, dilation)
    ((9, 5), (3, 3), 1, 1, 1),  # "same", odd filter
    ((10, 4), (3, 2), 1, 2, 1),  # stride 2
    ((11, 4), (3, 3), 2, 1, 2),  # dilation 2, "same"
    ((12, 3), (4, 1), (1, 0), 1, 1),  # even filter, padding 1 of its reach 3
    ((13, 3), (4, 2), (3, 0), 2, 1),  # even filter padded by its reach, stride 2
    ((9, 4), (2, 2), 1, 3, 1),  # stride past the filter: dx planes no dy plane reaches
    ((10, 4), (1, 1), 0, 2, 1),  # 1x1 filter with stride 2: every other dx plane is zero
    ((14, 3), (3, 3), 2, 3, 2),  # stride 3, dilation 2
    ((8, 5), (5, 3), 0, 1, 1),  # "valid"
    ((7, 3, 4), (3, 3, 1), 1, 1, 1),  # 3D
    ((9, 3, 3), (3, 2, 2), (2, 1, 1), 2, (2, 1, 1)),  # 3D, stride and dilation 2
]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("size", "filt", "pad", "stride", "dilation"), CASES)
def test_slabs_equal_the_whole_kernel_bit_for_bit(kernel, size, filt, pad, stride, dilation):
    problem = ConvProblem.create(2, 3, 2, size, filt, pad, stride, dilation)
    x, w, y = _ints(problem.x_dims), _ints(problem.w_dims), _ints(problem.y_dims)
    whole = {
        "forward": lambda: _forward(problem, x, w),
        "backward_data": lambda: _backward_data(problem, w, y),
        "backward_filter": lambda: _backward_filter(problem, x, y),
    }[kernel]()
    for extent in range(1, slabs.planes(problem, kernel) + 1):
        np.testing.assert_array_equal(
            _slab_by_slab(problem, kernel, extent, x, w, y), whole, err_msg=f"extent {extent}"
        )


def test_the_reference_backward_data_is_the_adjoint_of_forward():
    """<forward(x), dy> = <x, backward_data(dy)>: the test's own reference is right, unequal
    padding included."""
    problem = ConvProblem.create(1, 2, 3, (9, 4), (3, 2), (2, 0), 2, 1, padding_after=(1, 0))
    x, w, dy = _ints(problem.x_dims), _ints(problem.w_dims), _ints(problem.y_dims)
    assert np.sum(_forward(problem, x, w) * dy) == np.sum(x * _backward_data(problem, w, dy))


def test_a_border_slab_is_padded_on_its_own_side_only():
    problem = ConvProblem.create(1, 1, 1, (8, 8), 3, 1)  # "same", 8 y planes
    first, middle, last = slabs.slabs(problem, "forward", 3)
    assert (first.pre, first.post, first.x_first, first.x_planes) == (1, 0, 0, 4)
    assert (middle.pre, middle.post, middle.x_first, middle.x_planes) == (0, 0, 2, 5)
    assert (last.y_first, last.y_planes) == (6, 2)  # 3 does not divide 8: what is left
    assert (last.pre, last.post, last.x_first, last.x_planes) == (0, 1, 5, 3)
    assert first.problem(problem).describe().endswith("pad=1+0,1 NCHW float32")


def test_backward_data_starts_a_dy_plane_early_when_the_stride_phase_asks():
    """1x1 filter, stride 2: dx plane 1 receives from no dy plane; its slab takes dy plane 0,
    whose only tap lands in the slab's padding."""
    problem = ConvProblem.create(1, 1, 1, (6, 1), 1, 0, 2)
    slab = slabs.slab_at(problem, "backward_data", 1, 1)
    assert (slab.y_first, slab.y_planes, slab.pre, slab.post) == (0, 1, 1, 0)


def test_offsets_are_the_planes_of_the_whole_tensors():
    problem = ConvProblem.create(2, 4, 8, (6, 5, 7), 3, 1, layout="NDHWC", dtype="float16")
    slab = slabs.slab_at(problem, "forward", 2, 3)
    assert slab.offset_bytes(problem, "y") == 2 * 5 * 7 * 8 * 2  # y planes of H*W*K halves
    assert slab.offset_bytes(problem, "x") == 1 * 5 * 7 * 4 * 2
    assert slab.problem(problem).x_strides == problem.x_strides


def test_padding_past_the_filter_reach_cannot_be_cut():
    problem = ConvProblem.create(1, 1, 1, (8, 8), 1, 1)
    assert "more than the filter reaches" in (slabs.unsplittable(problem) or "")
    with pytest.raises(ValueError, match="cannot be cut into slabs"):
        slabs.slabs(problem, "forward", 2)


@pytest.mark.parametrize(("first", "count"), [(-1, 1), (0, 0), (7, 2)])
def test_planes_outside_the_tensor_are_refused(first, count):
    problem = ConvProblem.create(1, 1, 1, (8, 8), 3, 1)
    with pytest.raises(ValueError):
        slabs.slab_at(problem, "forward", first, count)


def test_padding_after_is_part_of_the_key_only_where_it_differs():
    even = ConvProblem.create(1, 2, 3, (8, 8), 3, 1)
    assert ConvProblem.create(1, 2, 3, (8, 8), 3, 1, padding_after=(1, 1)).key() == even.key()
    assert "padding_after" not in even.key()
    uneven = ConvProblem.create(1, 2, 3, (8, 8), 3, 1, padding_after=(0, 1))
    assert uneven.key() != even.key() and uneven.output_size == (7, 8)
    assert ConvProblem.from_dict(uneven.to_dict()) == uneven
