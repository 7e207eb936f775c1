"""The NumPy functions: every bad input is refused before any device work (so these run on a
CPU), empty batches need no device, and on a GPU the results match the numpy reference."""

from __future__ import annotations

import dataclasses
import inspect
import re

import numpy as np
import pytest

import ucudnn
from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem, to_physical
from ucudnn.faces import numpy_api
from ucudnn.runtime.check import normalised_l2, tolerance

X = np.zeros((2, 4, 8, 8), np.float32)
W = np.zeros((6, 4, 3, 3), np.float32)
DY = np.zeros((2, 6, 6, 6), np.float32)  # the gradient of y = conv(X, W)


def _w(k: int, c: int) -> np.ndarray:
    return np.zeros((k, c, 3, 3), np.float32)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: ucudnn.conv_forward(X.tolist(), W), TypeError, "x must be a numpy.ndarray"),
        (lambda: ucudnn.conv_forward(X, W.astype(np.float16)), TypeError, "share one dtype"),
        (lambda: ucudnn.conv_forward(X.astype(np.int32), W), TypeError, "dtype int32"),
        (lambda: ucudnn.conv_forward(X[..., ::2], W), ValueError, "not C-contiguous"),
        (lambda: ucudnn.conv_forward(X[0], W), ValueError, "rank 4"),
        (lambda: ucudnn.conv_forward(X, _w(6, 3)), ValueError, "x has 4 channels"),
        (lambda: ucudnn.conv_forward(X, _w(6, 1), groups=3), ValueError, "channels"),
        (lambda: ucudnn.conv_forward(X, _w(5, 2), groups=2), ValueError, "groups=2 must divide"),
        (lambda: ucudnn.conv_forward(X, W, padding=-1), ValueError, "padding"),
        (lambda: ucudnn.conv_forward(X, W, stride=(1, 2, 3)), ValueError, "stride"),
        (lambda: ucudnn.conv_forward(X, W, layout="NCDHW"), ValueError, "layout"),
        (
            lambda: ucudnn.conv_forward(X, W, colour="red"),
            TypeError,
            "unexpected keyword argument 'colour'",
        ),
        (lambda: ucudnn.conv_forward(X[:, :, :0], W), ValueError, "input_size"),
        (lambda: ucudnn.conv_forward(X[:, :0], W[:, :0]), ValueError, "channels"),
        (
            lambda: ucudnn.conv_backward_data(W, np.zeros((2, 6, 5, 5), np.float32), X.shape),
            ValueError,
            r"dy has shape \(2, 6, 5, 5\), expected \(2, 6, 6, 6\)",
        ),
        (
            lambda: ucudnn.conv_backward_filter(X, np.zeros((2, 6, 6, 6), np.float64), W.shape),
            TypeError,
            "share one dtype",
        ),
        (lambda: ucudnn.conv_backward_data(W, DY, 4), TypeError, "x_shape must be a sequence"),
        (lambda: ucudnn.conv_forward(X.astype(">f4"), W), TypeError, "x has non-native byte"),
        (lambda: ucudnn.conv_forward(np.ma.masked_array(X), W), TypeError, "got MaskedArray"),
        (lambda: ucudnn.conv_backward_filter(X, DY, (6, 4.0, 3, 3)), TypeError, r"w_shape\[1\]"),
    ],
)
def test_bad_input_is_named_before_device_work(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


FUNCTIONS = [ucudnn.conv_forward, ucudnn.conv_backward_data, ucudnn.conv_backward_filter]


def test_the_three_functions_take_the_same_keyword_options() -> None:
    """One list of options, with one default each, in every signature and docstring; forward
    alone takes a bias, before them."""
    options = [field.name for field in dataclasses.fields(numpy_api._Options)]
    keywords = [
        [p for p in inspect.signature(f).parameters.values() if p.kind is p.KEYWORD_ONLY]
        for f in FUNCTIONS
    ]
    assert [p.name for p in keywords[0]] == ["bias", *options]
    assert keywords[1] == keywords[2] == keywords[0][1:]
    for function in FUNCTIONS:
        missing = [name for name in options if not re.search(rf"\b{name}\b", function.__doc__)]
        assert not missing, function.__name__


KERNELS = {
    "forward": lambda **o: ucudnn.conv_forward(X, W, **o),
    "backward_data": lambda **o: ucudnn.conv_backward_data(W, DY, X.shape, **o),
    "backward_filter": lambda **o: ucudnn.conv_backward_filter(X, DY, W.shape, **o),
}
NAN = float("nan")


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"workspace_limit": NAN}, TypeError, "workspace_limit=nan is not a size"),
        ({"workspace_limit": float("inf")}, TypeError, "workspace_limit=inf is not a size"),
        ({"workspace_limit": 1.5}, TypeError, "workspace_limit=1.5 is not a size"),
        ({"workspace_limit": True}, TypeError, "workspace_limit=True is not a size"),
        ({"workspace_limit": -1}, ValueError, "workspace_limit=-1 is not a size"),
        ({"workspace_limit": "64 apples"}, ValueError, "workspace_limit='64 apples'"),
        ({"workspace_limit": [64]}, TypeError, r"workspace_limit=\[64\] is not a size"),
        ({"policy": "bogus"}, ValueError, "policy='bogus' is not a policy"),
        ({"policy": [0]}, ValueError, "policy micro-batch size must be >= 1"),
        ({"policy": {0, 2}}, ValueError, "policy micro-batch size must be >= 1"),
        ({"policy": [2**31]}, ValueError, "policy micro-batch size must be <= 2147483647"),
        ({"policy": 4}, TypeError, "policy must be a policy name"),
        ({"policy": []}, ValueError, "policy names no micro-batch size"),
        ({"algo": 99}, ValueError, r"algo must be a \w+ algorithm, 0\.\.\d or .*; got 99$"),
        ({"algo": -1}, ValueError, r"algo must be a \w+ algorithm, 0\.\.\d or .*; got -1$"),
        ({"algo": True}, TypeError, r"algo must be a \w+ algorithm, .*; got True \(bool\)$"),
        ({"algo": 1.0}, TypeError, r"algo must be a \w+ algorithm, .*; got 1\.0 \(float\)$"),
        ({"algo": "nope"}, ValueError, r"algo must be a \w+ algorithm, .* one of .*; got 'nope'$"),
        ({"groups": 1.0}, TypeError, r"groups must be an integer, got 1\.0"),
        ({"groups": True}, TypeError, "groups must be an integer, got True"),
        ({"stride": True}, TypeError, "stride must be an integer, got True"),
        ({"dilation": (1, 1.0)}, TypeError, r"dilation\[1\] must be an integer"),
        ({"padding": 2**31}, ValueError, r"padding\[0\] must be <= 2147483647"),
        ({"allow_tf32": "no"}, TypeError, "allow_tf32 must be True or False"),
        ({"math_type": 0}, TypeError, "math_type must be a string"),
        ({"database": 5}, TypeError, "database must be a path"),
    ],
)
def test_every_option_is_checked_before_device_work(kernel, options, error, message) -> None:
    # Without a GPU the device step raises NoDeviceError: these must fail before it.
    with pytest.raises(error, match=message):
        KERNELS[kernel](**options)


@pytest.mark.parametrize(
    ("kernel", "algo"), [("forward", 8), ("backward_data", 6), ("backward_filter", 7)]
)
def test_algo_range_is_the_kernels_own(kernel: str, algo: int) -> None:
    with pytest.raises(
        ValueError, match=f"algo must be a {kernel} algorithm, 0\\.\\.{algo - 1} or"
    ):
        KERNELS[kernel](algo=algo)


def test_an_empty_batch_still_checks_every_option() -> None:
    with pytest.raises(ValueError, match="policy='bogus'"):
        ucudnn.conv_forward(X[:0], W, policy="bogus")
    with pytest.raises(TypeError, match="workspace_limit"):
        ucudnn.conv_backward_filter(X[:0], DY[:0], W.shape, workspace_limit=NAN)


class _Reached(Exception):
    """Raised where the device work would begin."""


@pytest.fixture
def reached(monkeypatch) -> list[tuple]:
    """Stops each call at the device step and records the handle configuration it asked for."""
    calls: list[tuple] = []
    monkeypatch.delenv("UCUDNN_ENGINES", raising=False)

    def stop(*key) -> None:
        hash(key)  # the real function caches handles on these arguments
        calls.append(key)
        raise _Reached

    monkeypatch.setattr(numpy_api, "_default_handle", stop)
    return calls


@pytest.mark.parametrize(
    ("options", "limit", "policy"),
    [
        ({"workspace_limit": "64MiB", "policy": "ALL"}, 64 << 20, "all"),
        ({"workspace_limit": np.int64(5), "policy": {32, 1, 4}}, 5, (1, 4, 32)),
        ({"workspace_limit": np.uint8(0), "policy": np.array([8, 2])}, 0, (2, 8)),
        ({"workspace_limit": 7, "policy": "8, 2,8"}, 7, (2, 8)),
        ({"workspace_limit": 7, "policy": [np.int32(3)]}, 7, (3,)),
    ],
)
def test_limits_and_policies_reach_the_handle_plain_and_hashable(
    reached, options, limit: int, policy: object
) -> None:
    with pytest.raises(_Reached):
        ucudnn.conv_forward(X, W, **options)
    ((got_limit, got_policy, slab_policy, database, engines),) = reached
    assert (got_limit, got_policy, database, engines) == (limit, policy, None, None)
    assert slab_policy == "undivided" and type(got_limit) is int


@pytest.mark.parametrize(
    ("slab_policy", "expected"),
    [("POWEROFTWO", "powerOfTwo"), ("16, 4", (4, 16)), (np.array([8, 2]), (2, 8))],
)
def test_a_slab_policy_reaches_the_handle_plain_and_hashable(reached, slab_policy, expected):
    with pytest.raises(_Reached):
        ucudnn.conv_forward(X, W, slab_policy=slab_policy)
    assert reached[0][2] == expected


def test_a_bad_slab_policy_names_itself(reached) -> None:
    with pytest.raises(ValueError, match="slab_policy"):
        ucudnn.conv_forward(X, W, slab_policy="sometimes")
    assert reached == []


def test_unset_limit_and_policy_come_from_the_environment(reached, monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "2MiB")
    monkeypatch.setenv("UCUDNN_BATCH_SIZE_POLICY", "4,1")
    monkeypatch.setenv("UCUDNN_SLAB_POLICY", "8,2")
    with pytest.raises(_Reached):
        ucudnn.conv_forward(X, W)
    monkeypatch.setenv("UCUDNN_ENGINES", "off")
    with pytest.raises(_Reached):
        ucudnn.conv_forward(X, W)
    # None: not set, so the Handle's default decides (on wherever engines can run)
    assert reached == [
        (2 << 20, (1, 4), (2, 8), None, None),
        (2 << 20, (1, 4), (2, 8), None, False),
    ]


@pytest.mark.parametrize(("argument", "environ"), [(False, "on"), (True, "off"), (True, "")])
def test_the_engines_argument_beats_the_environment(reached, monkeypatch, argument, environ):
    monkeypatch.setenv("UCUDNN_ENGINES", environ)
    dy = np.zeros((2, 6, 6, 6), np.float32)
    calls = (
        lambda: ucudnn.conv_forward(X, W, engines=argument),
        lambda: ucudnn.conv_backward_data(W, dy, X.shape, engines=argument),
        lambda: ucudnn.conv_backward_filter(X, dy, W.shape, engines=argument),
    )
    for call in calls:
        with pytest.raises(_Reached):
            call()
    assert [key[4] for key in reached] == [argument] * 3


def test_a_bad_engines_argument_names_itself(reached) -> None:
    with pytest.raises(TypeError, match="engines must be True or False, got 'yes'"):
        ucudnn.conv_forward(X, W, engines="yes")
    assert reached == []


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("algo", [0, np.int64(1), "fft"])
def test_algorithms_by_number_or_name_reach_the_device_step(reached, kernel, algo) -> None:
    with pytest.raises(_Reached):
        KERNELS[kernel](algo=algo)


def test_numpy_integers_are_taken_everywhere(reached) -> None:
    options = {
        "padding": np.int64(0), "stride": np.array([1, 1]), "dilation": (np.int8(1), 1),
        "groups": np.int64(1), "allow_tf32": np.bool_(False),
    }  # fmt: skip
    for call in (
        lambda: ucudnn.conv_forward(X, W, **options),
        lambda: ucudnn.conv_backward_data(W, DY, np.array(X.shape), **options),
        lambda: ucudnn.conv_backward_filter(X, DY, np.array(W.shape), **options),
    ):
        with pytest.raises(_Reached):
            call()
    assert len(reached) == 3


class _Kept:
    """What the handle cache holds, reduced to what the cache does with it: close it."""

    def __init__(self, *key) -> None:
        self.key, self.closed = key, False

    def close(self) -> None:
        self.closed = True


def _maker(made: list[_Kept]):
    """A handle factory that records what it makes."""

    def make(*key) -> _Kept:
        made.append(_Kept(*key))
        return made[-1]

    return make


def test_only_the_most_recent_configurations_keep_a_handle() -> None:
    made: list[_Kept] = []
    handles = numpy_api._RecentHandles(2, _maker(made))
    a = handles.get(1, "all", None)
    assert handles.get(1, "all", None) is a
    b = handles.get(2, "all", None)
    assert handles.get(1, "all", None) is a  # now the most recent: b is the least
    handles.get(3, "all", None)
    assert [k.closed for k in made] == [False, True, False]
    again = handles.get(2, "all", None)  # b's configuration again: a new handle, a goes
    assert again is not b and not again.closed
    assert [k.closed for k in made] == [True, True, False, False]


def test_a_handle_that_cannot_be_made_is_not_kept() -> None:
    made: list[_Kept] = []
    record = _maker(made)

    def make(limit, *rest) -> _Kept:
        if limit < 0:
            raise RuntimeError("no device")
        return record(limit, *rest)

    handles = numpy_api._RecentHandles(1, make)
    first = handles.get(1, "all", None)
    with pytest.raises(RuntimeError):
        handles.get(-1, "all", None)
    assert handles.get(1, "all", None) is first and not first.closed


def test_sweeping_limits_holds_a_bounded_number_of_handles(monkeypatch) -> None:
    made: list[_Kept] = []
    kept = numpy_api._RecentHandles(4, _maker(made))
    monkeypatch.setattr(numpy_api, "_HANDLES", kept)
    for limit in range(10):
        numpy_api._default_handle(limit << 20, "powerOfTwo", "undivided", None)
    assert [k.key[0] >> 20 for k in made if not k.closed] == [6, 7, 8, 9]


def _huge(*shape: int) -> np.ndarray:
    """An array of `shape` that takes no memory (read-only, one element repeated)."""
    return np.broadcast_to(np.zeros((), np.float16), shape)


SMALL_W = np.zeros((1, 1, 1, 1), np.float16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # Each sample fits one cuDNN descriptor, the whole array does not.
        (lambda: ucudnn.conv_forward(_huge(2, 1, 2**15, 2**15 + 1), SMALL_W), "x of shape"),
        (
            lambda: ucudnn.conv_backward_filter(
                np.zeros((2, 1, 1, 1), np.float16), _huge(2, 1, 2**15, 2**15 + 1), (1, 1, 1, 1)
            ),
            "dy of shape",
        ),
        (
            lambda: ucudnn.conv_forward(np.zeros((2, 1, 1, 1), np.float16), SMALL_W, padding=2**14),
            r"the output y of shape \(2, 1, 32769, 32769\)",
        ),
        (
            lambda: ucudnn.conv_backward_data(
                SMALL_W, np.zeros((2, 1, 1, 2), np.float16), (2, 1, 2**15, 2**15 + 1), stride=2**15
            ),
            r"the output dx \(x_shape\) of shape \(2, 1, 32768, 32769\)",
        ),
    ],
)
def test_tensors_beyond_one_cudnn_descriptor_are_refused(call, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "at most 2**31 - 1 = 2147483647 elements per tensor" in str(info.value)


def test_empty_batch_needs_no_device() -> None:
    empty = X[:0]
    assert ucudnn.conv_forward(empty, W, padding=1).shape == (0, 6, 8, 8)
    dy = np.zeros((0, 6, 6, 6), np.float32)
    assert ucudnn.conv_backward_data(W, dy, empty.shape).shape == (0, 4, 8, 8)
    dw = ucudnn.conv_backward_filter(empty, dy, W.shape)
    assert dw.shape == W.shape and not dw.any()


# -- on a GPU --------------------------------------------------------------------------------
CASES = [
    ((3, 5, 9, 10), (6, 5, 3, 3), {"padding": 1}),
    ((2, 4, 11, 9), (8, 2, 3, 2), {"stride": (2, 1), "groups": 2, "dilation": (1, 2)}),
    ((2, 3, 6, 5, 7), (4, 3, 3, 3, 3), {"padding": 1}),
]
DTYPES = ["float32", "float16", "bfloat16", "float64"]


def _stored(array: np.ndarray, channels_last: bool) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(array, 1, -1)) if channels_last else array


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-grouped", "3d"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_matches_reference(case, dtype, channels_last, kernel) -> None:
    x_dims, w_dims, conv = case
    rank = len(x_dims) - 2
    layout = ("NHWC", "NDHWC")[rank - 2] if channels_last else ("NCHW", "NCDHW")[rank - 2]
    problem = ConvProblem.from_shapes(
        to_physical(x_dims, layout), to_physical(w_dims, layout), layout=layout, dtype=dtype,
        math_type="fma", **conv,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    x, w, dy = (rng.standard_normal(d).astype(dtype) for d in (x_dims, w_dims, problem.y_dims))
    options = {**conv, "layout": layout}
    if kernel == "forward":
        expected = ref.forward(problem, x, w)
        result = ucudnn.conv_forward(
            _stored(x, channels_last), _stored(w, channels_last), **options
        )
    elif kernel == "backward_data":
        expected = ref.backward_data(problem, w, dy)
        result = ucudnn.conv_backward_data(
            _stored(w, channels_last), _stored(dy, channels_last), problem.x_shape, **options
        )
    else:
        expected = ref.backward_filter(problem, x, dy)
        result = ucudnn.conv_backward_filter(
            _stored(x, channels_last), _stored(dy, channels_last), problem.w_shape, **options
        )
    assert result.dtype == np.dtype(dtype)
    logical = np.moveaxis(result, -1, 1) if channels_last else result
    assert normalised_l2(logical, expected) <= tolerance(problem, same_algorithm=False)
