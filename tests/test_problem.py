"""ConvProblem: validation, shapes in both orders, byte extents, and keys that see every field."""

from __future__ import annotations

import dataclasses

import pytest

from ucudnn.core.problem import ConvProblem, conv_output_size, packed_strides, to_logical

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
        ({"x_shape": (1, 3, 0, 8), "w_shape": (4, 3, 3, 3)}, "spatial"),
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
        "compute_dtype": "float16", "math_type": "fma", "mode": "convolution",
        "x_strides": (16 * 28 * 28 * 2, 28 * 28, 28, 1),
        "y_strides": (32 * 28 * 28 * 2, 28 * 28, 28, 1),
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
    assert p.sample_offset_bytes("x", 3) == 3 * 75 * 2
    assert p.sample_offset_bytes("y", 1) == 2 * 9 * 2
    padded = dataclasses.replace(p, x_strides=(100, 25, 5, 1))  # a gap after each sample
    assert padded.nbytes("x") == (3 * 100 + 2 * 25 + 4 * 5 + 4 + 1) * 2
    assert p.with_batch(0).nbytes("x") == 0
