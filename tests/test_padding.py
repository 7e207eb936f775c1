"""Padding "same" and "valid" with PyTorch's meaning: the split, the refusals, the explicit
padding the NumPy functions add for an even kernel (checked here against the numpy reference,
on a CPU), layer lists, and on a GPU the three kernels against that reference."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ucudnn
from tests import reference_conv as ref
from ucudnn.core.padding import AsymmetricPaddingError, word_padding
from ucudnn.core.problem import ConvProblem, to_physical
from ucudnn.faces import numpy_api
from ucudnn.planner.layerlist import read_layer_list
from ucudnn.runtime.check import normalised_l2, tolerance


@pytest.mark.parametrize(
    ("kernel", "dilation", "before", "after"),
    [(1, 1, 0, 0), (3, 1, 1, 1), (5, 1, 2, 2), (3, 2, 2, 2), (2, 2, 1, 1),
     (2, 1, 0, 1), (4, 1, 1, 2), (4, 3, 4, 5), (6, 1, 2, 3)],
)  # fmt: skip
def test_same_splits_the_padding_as_pytorch(kernel, dilation, before, after) -> None:
    """dilation * (kernel - 1) in all, the smaller half before."""
    if before == after:
        assert word_padding("same", (kernel,), (1,), (dilation,)) == (before,)
        return
    with pytest.raises(AsymmetricPaddingError) as info:
        word_padding("same", (kernel,), (1,), (dilation,))
    assert (info.value.before, info.value.after) == ((before,), (after,))


def test_same_keeps_the_extent_and_valid_pads_nothing() -> None:
    for w_shape, dilation in (((4, 3, 3, 5), 1), ((4, 3, 5, 1), (2, 1)), ((4, 3, 1, 3), 3)):
        problem = ConvProblem.from_shapes((2, 3, 9, 10), w_shape, padding="same", dilation=dilation)
        assert problem.output_size == (9, 10), w_shape
    assert ConvProblem.from_shapes((2, 3, 9, 10), (4, 3, 3, 5), padding=" Same ").padding == (1, 2)
    valid = ConvProblem.from_shapes((2, 3, 9, 10), (4, 3, 3, 5), padding="valid")
    assert valid == ConvProblem.from_shapes((2, 3, 9, 10), (4, 3, 3, 5), padding=0)
    volume = ConvProblem.create(1, 2, 2, (5, 6, 7), (3, 1, 5), padding="same")
    assert volume.padding == (1, 0, 2) and volume.output_size == (5, 6, 7)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"padding": "same", "stride": (1, 2)}, ValueError,
         r"padding='same' is not supported for strided convolutions \(stride \(1, 2\)\)"),
        ({"padding": "full"}, ValueError, "padding 'full' is not 'same', 'valid', an integer"),
        ({"padding": "same", "dilation": (1, "2")}, TypeError, r"dilation\[1\] must be an int"),
        ({"padding": b"same"}, TypeError, "padding"),
    ],
)  # fmt: skip
def test_bad_padding_words_are_named(arguments, error, message) -> None:
    with pytest.raises(error, match=message):
        ConvProblem.from_shapes((2, 3, 9, 10), (4, 3, 3, 3), **arguments)


def test_an_uneven_same_says_how_to_pad() -> None:
    with pytest.raises(AsymmetricPaddingError) as info:
        ConvProblem.from_shapes((2, 3, 9, 10), (4, 3, 2, 3), padding="same")
    assert (info.value.before, info.value.after) == ((0, 1), (1, 1))
    assert "needs (0, 1) before and (1, 1) after" in str(info.value)
    assert "give padding=(0, 1)" in str(info.value)


def _logical(array: np.ndarray, layout: str) -> np.ndarray:
    """A stored array in logical (N, C, *spatial) order."""
    return np.moveaxis(array, -1, 1) if layout in ("NHWC", "NDHWC") else array


def _stored(array: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(array, 1, -1)) if layout in ("NHWC", "NDHWC") else array


def _same_reference(x: np.ndarray, w: np.ndarray, dilation: tuple[int, ...]) -> np.ndarray:
    """PyTorch's "same", by definition: x padded by the split explicitly, then no padding."""
    totals = [d * (k - 1) for k, d in zip(w.shape[2:], dilation, strict=True)]
    padded = np.pad(x, [(0, 0), (0, 0), *((t // 2, t - t // 2) for t in totals)])
    problem = ConvProblem.create(
        x.shape[0], x.shape[1], w.shape[0], padded.shape[2:], w.shape[2:], 0, 1, dilation
    )
    return ref.forward(problem, padded, w)


def _options(layout: str, dilation: tuple[int, ...]) -> numpy_api._Options:
    return numpy_api._Options(
        padding="same", stride=1, dilation=dilation, groups=1, layout=layout,
        mode="cross_correlation", allow_tf32=None, math_type=None, workspace_limit=None,
        policy=None, slab_policy=None, database=None, algo=None, engines=None,
    )  # fmt: skip


def test_the_extra_zero_goes_after_as_in_pytorch() -> None:
    """conv1d([1, 2, 3], [1, 10], padding="same") is [21, 32, 3] in PyTorch."""
    x = np.array([1, 2, 3], np.float32).reshape(1, 1, 1, 3)
    w = np.array([1, 10], np.float32).reshape(1, 1, 1, 2)
    conv = numpy_api._convolution(x.shape, w.shape, x.dtype, _options("NCHW", (1, 1)))
    assert conv.end_padding == (0, 1) and conv.problem.padding == (0, 0)
    assert ref.forward(conv.problem, conv.pad(x), w).ravel().tolist() == [21, 32, 3]


CASES = [  # x and w in logical order, dilation
    ((2, 3, 7, 8), (4, 3, 2, 4), (1, 1)),
    ((2, 3, 7, 8), (4, 3, 2, 3), (3, 2)),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 4), (1, 1, 2)),
]


@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-dilated", "3d"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_padding_x_explicitly_gives_pytorchs_same(case, channels_last) -> None:
    """Forward on the padded x is PyTorch's "same"; dx cropped back is its exact adjoint, so
    backward-data and backward-filter follow (<conv(x), dy> == <x, dx>)."""
    x_dims, w_dims, dilation = case
    layout = ("NHWC", "NDHWC") if channels_last else ("NCHW", "NCDHW")
    layout = layout[len(x_dims) - 4]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_dims), rng.standard_normal(w_dims)
    stored_x = _stored(x, layout)
    conv = numpy_api._convolution(
        stored_x.shape,
        to_physical(w_dims, layout),
        np.dtype(np.float64),
        _options(layout, dilation),
    )
    padded = _logical(conv.pad(stored_x), layout)
    y = ref.forward(conv.problem, padded, w)
    assert y.shape[2:] == x.shape[2:]
    np.testing.assert_allclose(y, _same_reference(x, w, dilation), rtol=1e-12)
    dy = rng.standard_normal(y.shape)
    cropped = conv.crop(_stored(ref.backward_data(conv.problem, w, dy), layout))
    assert cropped.flags.c_contiguous
    dx = _logical(cropped, layout)
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)


def test_symmetric_cases_need_no_copy() -> None:
    x = np.zeros((2, 3, 7, 8), np.float32)
    conv = numpy_api._convolution(x.shape, (4, 3, 3, 5), x.dtype, _options("NCHW", (1, 1)))
    assert conv.end_padding == () and conv.pad(x) is x and conv.crop(x) is x


def test_layer_lists_take_the_words_per_axis() -> None:
    header = "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h\n"
    text = header + "a,9,9,3,2,4,5,3,same,SAME,1,1\nb,9,9,3,2,4,5,3,valid,same,2,1\n"
    layers = read_layer_list(io.StringIO(text))
    assert [layer.problem.padding for layer in layers] == [(1, 2), (1, 0)]
    for row, message in (
        ("c,9,9,3,2,4,4,3,same,1,1,1", r"line 2, layer 'c', column 'pad_w': padding='same' here"),
        ("d,9,9,3,2,4,3,3,1,same,1,2", r"line 2, layer 'd', column 'pad_h': .*strided"),
        ("e,9,9,3,2,4,3,3,1,wide,1,1", r"line 2, layer 'e', column 'pad_h'"),
    ):
        with pytest.raises(ValueError, match=message):
            read_layer_list(io.StringIO(header + row + "\n"))


# -- on a GPU --------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-dilated", "3d"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_same_matches_the_reference_on_the_device(case, channels_last, kernel) -> None:
    x_dims, w_dims, dilation = case
    layout = (("NHWC", "NDHWC") if channels_last else ("NCHW", "NCDHW"))[len(x_dims) - 4]
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(x_dims), rng.standard_normal(w_dims)
    y = _same_reference(x, w, dilation)
    dy = rng.standard_normal(y.shape)
    options = {"padding": "same", "dilation": dilation, "layout": layout}
    sx, sw, sdy = (_stored(a.astype(np.float32), layout) for a in (x, w, dy))
    if kernel == "forward":
        got, expected = ucudnn.conv_forward(sx, sw, **options), y
    elif kernel == "backward_data":
        got = ucudnn.conv_backward_data(sw, sdy, sx.shape, **options)
        expected = _adjoint(lambda v: _same_reference(v, w, dilation), x.shape, dy)
    else:
        got = ucudnn.conv_backward_filter(sx, sdy, sw.shape, **options)
        expected = _adjoint(lambda v: _same_reference(x, v, dilation), w.shape, dy)
    # The tolerance is that of the problem the device ran: "same", with x padded at its end
    # where the split is uneven.
    conv = numpy_api._convolution(sx.shape, sw.shape, sx.dtype, _options(layout, dilation))
    assert normalised_l2(_logical(got, layout), expected) <= tolerance(conv.problem, False)


def _adjoint(linear, shape: tuple[int, ...], dy: np.ndarray) -> np.ndarray:
    """The gradient of <linear(v), dy> with respect to v, one basis vector at a time (the
    shapes here are small): independent of the reference's own backward functions."""
    flat = np.zeros(int(np.prod(shape)))
    for i in range(flat.size):
        basis = np.zeros(flat.size)
        basis[i] = 1.0
        flat[i] = np.vdot(linear(basis.reshape(shape)), dy)
    return flat.reshape(shape)
