"""ConvProblem: validation, shapes in both orders, byte extents, and keys that see every field."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ucudnn.core.checks import integer, shown
from ucudnn.core.problem import (
    MAX_DIM,
    ConvProblem,
    conv_output_size,
    default_math_type,
    packed_strides,
    to_logical,
)
from ucudnn.planner.config import Config

BASE = ConvProblem.create(8, 16, 32, (28, 28), 3, padding=1)


def test_output_size_formula_and_shapes() -> None:
    p = ConvProblem.create(
        4, 3, 8, (17, 10), (5, 3), padding=(2, 0), stride=(2, 3), dilation=(1, 2)
    )
    assert p.output_size == (9, 2)
    assert p.y_dims == (4, 8, 9, 2)
    assert conv_output_size(17, 5, 2, 2, 1) == 9


def test_packed_strides_follow_layout() -> None:
    assert packed_strides((2, 3, 4, 5), "NCHW") == (60, 20, 5, 1)
    assert packed_strides((2, 3, 4, 5), "NHWC") == (60, 1, 15, 3)
    assert packed_strides((2, 3, 4, 5, 6), "NDHWC") == (360, 1, 90, 18, 3)


def test_from_shapes_reads_stored_order() -> None:
    p = ConvProblem.from_shapes((2, 9, 9, 4), (8, 3, 3, 2), layout="NHWC", groups=2)
    assert p.x_dims == (2, 4, 9, 9) and p.w_dims == (8, 2, 3, 3)
    assert p.y_shape == (2, 7, 7, 8) and p.w_shape == (8, 3, 3, 2)
    assert to_logical(p.x_shape, "NHWC") == p.x_dims


def test_three_d_defaults_to_ncdhw() -> None:
    p = ConvProblem.from_shapes((1, 2, 4, 4, 4), (3, 2, 3, 3, 3), padding=1)
    assert p.layout == "NCDHW" and p.y_shape == (1, 3, 4, 4, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 2, 3, 3)}, "channels"),
        ({"x_shape": (1, 6, 8, 8), "w_shape": (4, 3, 3, 3), "groups": 4}, "channels"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3), "padding": -1}, "padding"),
        ({"x_shape": (1, 3, 8), "w_shape": (4, 3, 3)}, "rank"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3, 3)}, "rank"),
        ({"x_shape": (1, 3, 2, 2), "w_shape": (4, 3, 3, 3)}, "empty"),
        ({"x_shape": (1, 0, 8, 8), "w_shape": (4, 0, 3, 3)}, "channels"),
        ({"x_shape": (1, 3, 0, 8), "w_shape": (4, 3, 3, 3)}, r"input_size\[0\] must be >= 1"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3), "stride": 0}, "stride"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3), "layout": "NCDHW"}, "layout"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3), "dtype": "int8"}, "dtype"),
        ({"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3), "math_type": "fast"}, "math_type"),
    ],
)
def test_bad_problems_name_what_is_wrong(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ConvProblem.from_shapes(**kwargs)


def test_every_field_changes_the_key() -> None:
    changes = {
        "batch": 9, "in_channels": 32, "out_channels": 16, "input_size": (28, 29),
        "filter_size": (3, 1), "padding": (1, 0), "stride": (2, 1), "dilation": (1, 2),
        "groups": 2, "layout": "NHWC", "filter_layout": "NHWC", "dtype": "float16",
        "compute_dtype": "float16", "math_type": "tensor_op", "mode": "convolution",
        "x_strides": (16 * 28 * 28 * 2, 28 * 28, 28, 1),
        "y_strides": (32 * 28 * 28 * 2, 28 * 28, 28, 1), "padding_after": (0, 1),
    }  # fmt: skip
    fields = {f.name for f in dataclasses.fields(ConvProblem)}
    assert set(changes) == fields, "every field must be exercised"
    keys = {BASE.key()}
    for name, value in changes.items():
        changed = dataclasses.replace(BASE, **{name: value})
        assert changed.key() != BASE.key(), name
        keys.add(changed.key())
    assert len(keys) == len(changes) + 1


def test_dict_round_trip_and_with_batch() -> None:
    assert ConvProblem.from_dict(BASE.to_dict()) == BASE
    small = BASE.with_batch(2)
    assert small.batch == 2 and small.x_strides == BASE.x_strides
    with pytest.raises(ValueError, match="unknown problem fields"):
        ConvProblem.from_dict({**BASE.to_dict(), "colour": 1})


def test_byte_extents_and_sample_offsets() -> None:
    p = ConvProblem.create(4, 3, 2, (5, 5), 3, dtype="float16")
    assert p.nbytes("x") == 4 * 3 * 25 * 2 and p.nbytes("w") == 2 * 3 * 9 * 2
    assert p.nbytes("b") == 2 * 2 and p.b_shape == (2,) and p.b_dims == (1, 2, 1, 1)
    assert p.sample_offset_bytes("x", 3) == 3 * 75 * 2
    assert p.sample_offset_bytes("y", 1) == 2 * 9 * 2
    padded = dataclasses.replace(p, x_strides=(100, 25, 5, 1))  # a gap after each sample
    assert padded.nbytes("x") == (3 * 100 + 2 * 25 + 4 * 5 + 4 + 1) * 2
    assert p.with_batch(0).nbytes("x") == 0
    with pytest.raises(ValueError, match="tensor must be one of x, w, y, b, got 'dy'"):
        p.nbytes("dy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tensor must be one of x, y, got 'w'"):
        p.sample_offset_bytes("w", 1)  # type: ignore[arg-type]


def test_numpy_integers_are_stored_as_plain_ints() -> None:
    p = ConvProblem.from_shapes(
        np.array([2, 4, 9, 9]), (np.int64(6), np.int32(2), np.uint8(3), 3),
        padding=np.int64(1), stride=np.array([1, 2]), dilation=(np.int16(1), 1),
        groups=np.int64(2), x_strides=np.array([324, 81, 9, 1]),
    )  # fmt: skip
    integers = [p.batch, p.in_channels, p.out_channels, p.groups]
    for name in ("input_size", "filter_size", "padding", "stride", "dilation", "x_strides"):
        integers += getattr(p, name)
    assert all(type(v) is int for v in integers)
    assert json.loads(json.dumps(p.to_dict())) == json.loads(p.key())
    plain = ConvProblem.from_shapes((2, 4, 9, 9), (6, 2, 3, 3), padding=1, stride=(1, 2), groups=2)
    assert p == plain and p.key() == plain.key()


def test_constructor_takes_any_sequence_and_stores_tuples() -> None:
    p = ConvProblem(
        batch=np.int64(8), in_channels=16, out_channels=32, input_size=[28, 28],
        filter_size=np.array([3, 3]), padding=(1, 1), stride=[1, 1], dilation=(1, 1),
    )  # fmt: skip
    assert p == BASE and isinstance(p.input_size, tuple) and type(p.batch) is int


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"stride": True}, TypeError, "stride must be an integer, got True"),
        ({"stride": (1, True)}, TypeError, r"stride\[1\] must be an integer, got True"),
        ({"groups": 1.0}, TypeError, r"groups must be an integer, got 1\.0"),
        ({"groups": True}, TypeError, "groups must be an integer"),
        ({"padding": 0.5}, TypeError, "padding must be an integer"),
        ({"dilation": "2"}, ValueError, "dilation must be an int or 2 ints"),
        ({"x_shape": (1, 3.0, 8, 8)}, TypeError, r"x_shape\[1\] must be an integer"),
        ({"w_shape": 3}, TypeError, "w_shape must be a sequence of integers"),
        ({"x_strides": (192, 64, 8, 1.0)}, TypeError, r"x_strides\[3\] must be an integer"),
        ({"layout": 0}, TypeError, "layout must be a string, got 0"),
        ({"math_type": 0}, TypeError, "math_type must be a string, got 0"),
        ({"padding": 2**31}, ValueError, r"padding\[0\] must be <= 2147483647"),
        ({"stride": (1, 2**31)}, ValueError, r"stride\[1\] must be <= 2147483647"),
        ({"x_shape": (2**31, 3, 8, 8)}, ValueError, r"x_shape\[0\] must be <= 2147483647"),
        ({"x_strides": (2**31, 64, 8, 1)}, ValueError, r"x_strides\[0\] must be <= 2147483647"),
    ],
)
def test_bad_field_types_and_bounds_name_the_field(kwargs, error, message) -> None:
    shapes = {"x_shape": (1, 3, 8, 8), "w_shape": (4, 3, 3, 3)}
    with pytest.raises(error, match=message):
        ConvProblem.from_shapes(**{**shapes, **kwargs})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("batch", np.float64(8), "batch must be an integer"),
        ("batch", 2**31, "batch must be <= 2147483647"),
        ("in_channels", False, "in_channels must be an integer"),
        ("out_channels", 2**31, "out_channels must be <= 2147483647"),
        ("input_size", 28, "input_size must be a sequence of integers"),
        ("input_size", (28, 2**31), r"input_size\[1\] must be <= 2147483647"),
        ("y_strides", (1, 1, 1, -1), r"y_strides\[3\] must be >= 1"),
        ("y_strides", (1, 1, 1), "y_strides must have 4 entries"),
    ],
)
def test_constructor_names_the_field(name: str, value: object, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        dataclasses.replace(BASE, **{name: value})


def test_a_batch_beyond_one_descriptor_is_accepted_when_each_sample_fits() -> None:
    # 2**31 - 1 samples of 64x64x64: far beyond one cuDNN descriptor, but each sample fits, so
    # the planner takes it (running it would need the runtime to benchmark only sizes that fit
    # one descriptor, which it does not arrange yet).
    p = ConvProblem.create(MAX_DIM, 64, 64, (64, 64), 3, padding=1)
    assert p.batch == MAX_DIM and p.x_dims[0] * p.x_strides[0] > MAX_DIM
    assert p.with_batch(1).x_strides[0] == 64 * 64 * 64


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: ConvProblem.create(1, 2, 1, (2**15, 2**15), 1),
            "one sample of x spans 2147483648",
        ),
        (
            lambda: ConvProblem.create(1, 1, 2, (2**15, 2**15), 1, padding=(0, 0)),
            "one sample of y spans 2147483648",
        ),
        (lambda: ConvProblem.create(1, 2**16, 2**15, (1, 1), 1), "the filter w spans 2147483648"),
        (
            # Padded strides: one sample spans its gaps too.
            lambda: ConvProblem.create(1, 3, 1, (4, 4), 1, x_strides=(2**31 - 1, 2**30, 4, 1)),
            "one sample of x spans 2147483664",
        ),
    ],
)
def test_a_sample_beyond_one_descriptor_is_refused(make, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        make()
    assert "2**31 - 1" in str(info.value) and "no micro-batch can run it" in str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("conv1", "'conv1'"),
        ("a\x00b", r"'a\x00b'"),
        ("x" * 80, repr("x" * 80)),
        ("x" * 81, repr("x" * 60) + "... (81 characters)"),
        ("\u2028" * 100_000, repr("\u2028" * 60) + "... (100000 characters)"),
        (10**79, str(10**79)),
        (-(10**80), "an integer of 81 digits"),
        (10**5000, "an integer of 5001 digits"),  # past Python's own limit on str(int)
        (
            (1,) * 100,
            "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,... (300 characters)",
        ),
    ],
    ids=lambda value: type(value).__name__,  # str() of 10**5000 would fail
)
def test_values_in_errors_are_shown_cut_short(value: object, expected: str) -> None:
    assert shown(value) == expected


def test_integer_errors_show_huge_values_cut_short() -> None:
    with pytest.raises(ValueError, match=r"^batch must be <= 2147483647, got an integer of 5001 d"):
        integer(10**5000, "batch", maximum=MAX_DIM)
    with pytest.raises(TypeError, match=r"^batch must be an integer, got 'xxx.*\(100000 charac"):
        integer("x" * 100_000, "batch")


@pytest.mark.parametrize("field", ["dtype", "layout", "filter_layout", "math_type", "mode"])
def test_long_text_fields_are_shown_cut_short(field: str) -> None:
    with pytest.raises(
        ValueError, match=rf"^{field} 'xxx.*'\.\.\. \(100000 characters\) is not"
    ) as caught:
        dataclasses.replace(BASE, **{field: "x" * 100_000})
    assert len(str(caught.value)) < 200
    with pytest.raises(ValueError, match=r"unknown problem fields: 'yyy.*\(100000 characters\)"):
        ConvProblem.from_dict({**BASE.to_dict(), "y" * 100_000: 1})


# -- the one TF32 rule -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dtype", "allow_tf32", "expected"),
    [("float32", None, "fma"), ("float32", False, "fma"), ("float32", True, "default"),
     ("float16", None, "tensor_op"), ("bfloat16", True, "tensor_op"),
     ("float64", None, "default"), ("float64", True, "default")],
)  # fmt: skip
def test_one_rule_picks_the_math_type(monkeypatch, dtype, allow_tf32, expected) -> None:
    monkeypatch.delenv("UCUDNN_ALLOW_TF32", raising=False)
    assert default_math_type(dtype, allow_tf32) == expected
    problem = ConvProblem.create(2, 3, 4, (5, 5), 3, dtype=dtype, allow_tf32=allow_tf32)
    assert problem.math_type == expected
    if allow_tf32 is None:  # every way of making a problem follows the rule
        assert ConvProblem.create(2, 3, 4, (5, 5), 3, dtype=dtype).math_type == expected
        assert (
            ConvProblem(2, 3, 4, (5, 5), (3, 3), (0, 0), (1, 1), (1, 1), dtype=dtype).math_type
            == expected
        )


def test_the_environment_allows_tf32_where_no_argument_says(monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_ALLOW_TF32", "yes")
    assert ConvProblem.create(2, 3, 4, (5, 5), 3).math_type == "default"
    assert ConvProblem.create(2, 3, 4, (5, 5), 3, allow_tf32=False).math_type == "fma"
    assert ConvProblem.create(2, 3, 4, (5, 5), 3, math_type="fma").math_type == "fma"
    assert Config.from_env().allow_tf32 is True
    monkeypatch.setenv("UCUDNN_ALLOW_TF32", "sometimes")
    with pytest.raises(ValueError, match="UCUDNN_ALLOW_TF32='sometimes' is not a yes/no value"):
        ConvProblem.create(2, 3, 4, (5, 5), 3)


def test_tf32_on_and_off_never_share_a_key(monkeypatch) -> None:
    """The math type is part of the key, so the cache and the plans keep the two apart."""
    monkeypatch.delenv("UCUDNN_ALLOW_TF32", raising=False)
    off = ConvProblem.create(2, 3, 4, (5, 5), 3)
    on = ConvProblem.create(2, 3, 4, (5, 5), 3, allow_tf32=True)
    assert off.key() != on.key()
    monkeypatch.setenv("UCUDNN_ALLOW_TF32", "1")
    assert ConvProblem.create(2, 3, 4, (5, 5), 3).key() == on.key()
    assert ConvProblem.from_dict(off.to_dict()) == off  # a stored problem keeps its own


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [({"allow_tf32": True, "math_type": "fma"}, ValueError, "give allow_tf32 or math_type"),
     ({"allow_tf32": "no"}, TypeError, "allow_tf32 must be True or False"),
     ({"allow_tf32": 1}, TypeError, "allow_tf32 must be True or False"),
     ({"allow_tf32": "no", "dtype": "float16"}, TypeError, "allow_tf32 must be True or False")],
)  # fmt: skip
def test_bad_tf32_arguments_are_named(arguments, error, message) -> None:
    with pytest.raises(error, match=message):
        ConvProblem.create(2, 3, 4, (5, 5), 3, **arguments)
    assert ConvProblem.create(2, 3, 4, (5, 5), 3, allow_tf32=np.bool_(True)).math_type == "default"
