from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.layerlist import Layer, read_layer_list, write_layer_list

DATA = resources.files("ucudnn.planner") / "data"
SHARED = ["alexnet.csv", "resnet18.csv", "deepbench_conv_train.csv", "cnn3d.csv"]
HEADER_2D = "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h\n"


def read_text(text: str, **kwargs: object) -> list[Layer]:
    return read_layer_list(io.StringIO(text), **kwargs)


@pytest.mark.parametrize(("name", "count"), list(zip(SHARED, [5, 20, 94, 11], strict=True)))
def test_shared_lists_parse(name: str, count: int) -> None:
    with resources.as_file(DATA / name) as path:
        layers = read_layer_list(path)
    assert len(layers) == count
    assert all(layer.label for layer in layers)


@pytest.mark.parametrize("name", SHARED)
def test_write_reproduces_shared_lists(name: str, tmp_path: Path) -> None:
    with resources.as_file(DATA / name) as path:
        original = path.read_text(encoding="utf-8-sig")
        layers = read_layer_list(path)
    write_layer_list(layers, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text() == original.rstrip("\n") + "\n"


def test_alexnet_shapes() -> None:
    with resources.as_file(DATA / "alexnet.csv") as path:
        layers = read_layer_list(path)
    conv1 = layers[0].problem
    assert layers[0].label == "conv1"
    assert conv1.x_dims == (256, 3, 224, 224)
    assert conv1.w_dims == (64, 3, 11, 11)
    assert conv1.y_dims == (256, 64, 55, 55)
    assert [layer.problem.out_channels for layer in layers] == [64, 192, 384, 384, 256]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-8"])
def test_byte_order_mark_is_tolerated(encoding: str, tmp_path: Path) -> None:
    # The original µ-cuDNN's alexnet.csv starts with a UTF-8 BOM.
    text = HEADER_2D + "conv1,224,224,3,256,64,11,11,2,2,4,4\r\n"
    (tmp_path / "bom.csv").write_text(text, encoding=encoding)
    from_path = read_layer_list(tmp_path / "bom.csv")
    from_text = read_text("\ufeff" + text)  # an already-decoded file keeps the BOM
    assert from_path == from_text
    assert from_path[0].label == "conv1"
    assert from_path[0].problem.y_dims == (256, 64, 55, 55)


def test_width_and_height_go_to_the_right_axes() -> None:
    text = HEADER_2D + "l,700,161,1,4,32,20,5,0,0,2,1\n"
    (layer,) = read_text(text)
    assert layer.problem.input_size == (161, 700)  # logical (H, W)
    assert layer.problem.filter_size == (5, 20)
    assert layer.problem.stride == (1, 2)
    assert layer.problem.y_dims == (4, 32, 157, 341)


def test_3d_shapes() -> None:
    with resources.as_file(DATA / "cnn3d.csv") as path:
        layers = read_layer_list(path)
    enc = next(layer.problem for layer in layers if layer.label == "unet3d.enc1a")
    assert enc.layout == "NCDHW"
    assert enc.x_dims == (2, 1, 116, 132, 132)
    assert enc.y_dims == (2, 32, 114, 130, 130)


def test_batch_override_and_missing_n() -> None:
    layers = read_text(HEADER_2D + "a,8,8,3,256,4,3,3,1,1,1,1\n", batch=32)
    assert layers[0].problem.batch == 32
    layers = read_text("W,H,C_in,C_out,kernel_w,kernel_h\n8,8,3,4,3,3\n", batch=2)
    assert layers[0].problem == ConvProblem.create(2, 3, 4, (8, 8), 3)
    assert layers[0].label == "line2"  # no source column: labelled by line


def test_optional_columns_and_defaults() -> None:
    text = "W,H,C_in,N,C_out,kernel_w,kernel_h,dilation_w,dilation_h,groups,dtype\n"
    text += "9,9,4,2,8,3,3,2,1,2,float16\n"
    (layer,) = read_text(text, layout="NHWC", math_type="tensor_op")
    p = layer.problem
    assert p.dilation == (1, 2) and p.groups == 2 and p.dtype == "float16"
    assert p.layout == "NHWC" and p.math_type == "tensor_op"
    assert p.padding == (0, 0) and p.stride == (1, 1)


def test_columns_win_over_defaults() -> None:
    text = "W,H,C_in,N,C_out,kernel_w,kernel_h,dtype\n8,8,1,1,1,1,1,float64\n"
    assert read_text(text, dtype="float16")[0].problem.dtype == "float64"


def test_round_trip_of_every_optional_field(tmp_path: Path) -> None:
    layers = [
        Layer("plain", ConvProblem.create(4, 3, 8, (9, 9), 3)),
        Layer(
            "fancy",
            ConvProblem.create(
                4, 6, 8, (9, 11), (3, 1), padding=(1, 0), stride=(2, 1), dilation=(1, 2),
                groups=2, layout="NHWC", filter_layout="NCHW", dtype="float16",
                compute_dtype="float16", math_type="tensor_op", mode="convolution",
            ),
        ),
    ]  # fmt: skip
    write_layer_list(layers, tmp_path / "x.csv")
    header = (tmp_path / "x.csv").read_text().splitlines()[0].split(",")
    assert {"dilation_w", "groups", "dtype", "compute_dtype", "filter_layout"} <= set(header)
    assert read_layer_list(tmp_path / "x.csv") == layers


def test_round_trip_3d_with_dilation() -> None:
    problem = ConvProblem.create(2, 4, 4, (5, 6, 7), (1, 2, 3), dilation=(2, 1, 1), layout="NDHWC")
    out = io.StringIO()
    write_layer_list([("a", problem)], out)
    assert read_text(out.getvalue()) == [Layer("a", problem)]


def test_write_rejects_what_csv_cannot_hold() -> None:
    packed = ConvProblem.create(2, 3, 4, (8, 8), 3)
    strided = ConvProblem.create(2, 3, 4, (8, 8), 3, x_strides=(500, 192, 24, 3))
    with pytest.raises(ValueError, match="'s' has non-packed tensor strides"):
        write_layer_list([("s", strided)], io.StringIO())
    with pytest.raises(ValueError, match="either 2D or 3D"):
        write_layer_list(
            [("a", packed), ("b", ConvProblem.create(2, 3, 4, (8, 8, 8), 3, layout="NCDHW"))],
            io.StringIO(),
        )
    with pytest.raises(ValueError, match="no layers"):
        write_layer_list([], io.StringIO())


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "a,8,8,3,256,4,x,3,1,1,1,1",
            "line 3, layer 'a', column 'kernel_w': kernel_w must be an integer, got 'x'",
        ),
        ("a,8,8,3,,4,3,3,1,1,1,1", "line 3, layer 'a', column 'N': the value is missing"),
        ("a,8,8,3,0,4,3,3,1,1,1,1", "line 3, layer 'a', column 'N': N must be >= 1, got 0"),
        (
            "a,8,8,3,9223372036854775808,4,3,3,1,1,1,1",
            r"line 3, layer 'a', column 'N': N has 19 digits, more than any allowed value \(at",
        ),
        (
            f"a,8,8,3,{'9' * 5000},4,3,3,1,1,1,1",
            r"line 3, layer 'a', column 'N': N has 5000 digits, more than any allowed value \(at",
        ),
        (
            "a,8,8,3,2147483648,4,3,3,1,1,1,1",
            "line 3, layer 'a', column 'N': N must be <= 2147483647",
        ),
        (
            "a,8,8,3,2_56,4,3,3,1,1,1,1",
            "line 3, layer 'a', column 'N': N must be an integer, got '2_56'",
        ),
        ("a,8,8,3,256,4,3,3,1,1", "line 3: has 10 fields but the header has 12"),
        ("a,8,8,3,256,4,3,3,1,1,1,1,7", "line 3: has 13 fields but the header has 12"),
        ("a,8,8,3,256,4,30,3,1,1,1,1", "line 3, layer 'a': output would be empty"),
        ("a,8,8,0,256,4,3,3,1,1,1,1", "line 3, layer 'a', column 'C_in': C_in must be >= 1, got 0"),
        (
            "a,8,8,3,256,4,3,3,-1,1,1,1",
            "line 3, layer 'a', column 'pad_w': pad_w must be >= 0, got -1",
        ),
        (
            "a,8,8,3,256,4,3,3,1,1,0,1",
            "line 3, layer 'a', column 'stride_w': stride_w must be >= 1",
        ),
        (
            '"a\x00b",8,8,3,256,4,3,3,1,1,1,1',
            r"line 3, column 'source': label .* control character '\\x00'",
        ),
        (
            '"a\nb",8,8,3,256,4,3,3,1,1,1,1',
            r"line 3, column 'source': label .* control character '\\n'",
        ),
    ],
)
def test_malformed_rows_name_the_line_layer_and_column(row: str, message: str) -> None:
    text = HEADER_2D + "ok,8,8,3,256,4,3,3,1,1,1,1\n" + row + "\n"
    with pytest.raises(ValueError, match=r"^<layer list>, " + message):
        read_text(text)


def test_leading_zeros_are_no_digits_of_a_value() -> None:
    text = HEADER_2D + f"a,8,8,3,{'0' * 5000}256,4,3,3,+00,1,1,1\n"
    assert read_text(text) == [Layer("a", ConvProblem.create(256, 3, 4, (8, 8), 3, (1, 0)))]


@pytest.mark.parametrize(
    ("column", "place"),
    [
        ("stride_h", "layer 'a', column 'stride_h': stride_h must be an integer"),
        ("source", r"column 'source': label .* control character"),
        ("dtype", "layer 'a': dtype .* is not one of"),
    ],
)
def test_long_cells_are_shown_cut_short(column: str, place: str) -> None:
    header = [*HEADER_2D.rstrip("\n").split(","), "dtype"]
    good = "a,8,8,3,256,4,3,3,1,1,1,1,float32"
    cells = dict(zip(header, good.split(","), strict=True))
    cells[column] = "x" * 100_000 + "\x00"
    with pytest.raises(ValueError, match=f"^<layer list>, line 2, {place}") as caught:
        read_text(",".join(header) + "\n" + ",".join(cells.values()) + "\n")
    assert len(str(caught.value)) < 300 and "(100001 characters)" in str(caught.value)
    assert "\x00" not in str(caught.value)


def test_long_unknown_columns_and_labels_are_shown_cut_short() -> None:
    with pytest.raises(ValueError, match=r"unknown column\(s\) 'yyyy.*\(100000 characters\);"):
        read_text(HEADER_2D.rstrip("\n") + "," + "y" * 100_000 + "\n")
    label = "L" * 100_000
    with pytest.raises(
        ValueError, match=r"^<layer list>, line 2, layer 'LLL.*\(100000 ch"
    ) as caught:
        read_text(HEADER_2D + label + ",8,8,3,256,4,3,3,1,1,1,x\n")
    assert len(str(caught.value)) < 300


def test_bad_text_field_names_the_line() -> None:
    text = "W,H,C_in,N,C_out,kernel_w,kernel_h,dtype\n8,8,1,1,1,1,1,int8\n"
    with pytest.raises(ValueError, match=r"line 2, layer 'line2': dtype 'int8' is not one of"):
        read_text(text)


def test_unknown_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "typo.csv"
    path.write_text(HEADER_2D.replace("pad_h", "pad_H") + "a,8,8,3,2,4,3,3,1,1,1,1\n")
    with pytest.raises(ValueError, match=r"typo.csv, line 1: unknown column\(s\) 'pad_H'"):
        read_layer_list(path)


def test_3d_column_without_d_is_unknown() -> None:
    with pytest.raises(ValueError, match=r"unknown column.*'kernel_d'"):
        read_text("W,H,C_in,N,C_out,kernel_w,kernel_h,kernel_d\n8,8,1,1,1,1,1,1\n")


def test_empty_file() -> None:
    with pytest.raises(ValueError, match=r"^<layer list>, line 1: empty file"):
        read_text("")


def test_repeated_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text("source,W,H,C_in,N,C_out,kernel_w,kernel_h,W\na,8,8,3,2,4,3,3,9\n")
    with pytest.raises(
        ValueError, match=r"^.*twice.csv, line 1, column 'W': the column is repeated"
    ):
        read_layer_list(path)


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(
        (HEADER_2D + "ok,8,8,3,2,4,3,3,1,1,1,1\ncaf\xe9,8,8,3,2,4,3,3,1,1,1,1\n").encode("latin-1")
    )
    with pytest.raises(ValueError, match=r"latin1.csv, line 3, column 4: not UTF-8 text"):
        read_layer_list(path)
    with path.open("rb") as f, pytest.raises(ValueError, match=r"latin1.csv, line 3, column 4"):
        read_layer_list(f)


def test_binary_streams_are_read_as_utf8() -> None:
    data = ("\ufeff" + HEADER_2D + "cönv,8,8,3,2,4,3,3,1,1,1,1\n").encode()
    (layer,) = read_layer_list(io.BytesIO(data))
    assert layer.label == "cönv"


def test_batch_override_takes_numpy_integers_and_is_bounded() -> None:
    text = HEADER_2D + "a,8,8,3,256,4,3,3,1,1,1,1\n"
    assert read_text(text, batch=np.int64(16))[0].problem.batch == 16
    with pytest.raises(TypeError, match="batch must be an integer, got True"):
        read_text(text, batch=True)
    for bad in (0, 2**31):
        with pytest.raises(ValueError, match="batch must be"):
            read_text(text, batch=bad)


def test_write_refuses_what_reading_would_refuse(tmp_path: Path) -> None:
    problem = ConvProblem.create(2, 3, 4, (8, 8), 3)
    for label, message in (("a\nb", "control character"), (" a", "white space"), ("", "non-empty")):
        with pytest.raises(ValueError, match=message):
            write_layer_list([(label, problem)], tmp_path / "x.csv")
    with pytest.raises(ValueError, match="layer 'z': batch must be >= 1"):
        write_layer_list([("z", problem.with_batch(0))], tmp_path / "x.csv")
    assert not list(tmp_path.iterdir())  # nothing half written


def test_repeated_rows_are_parsed_once_and_still_named_and_located(monkeypatch) -> None:
    """Networks repeat their blocks, and a list may repeat one row 40,000 times: each distinct
    row is parsed once, every layer keeps its own label, and a bad row is still found by line."""
    from ucudnn.planner import layerlist

    parsed = []
    original = layerlist._parse_row
    monkeypatch.setattr(
        layerlist, "_parse_row", lambda row, *rest: parsed.append(row) or original(row, *rest)
    )
    header = "source,W,H,C_in,N,C_out,kernel_w,kernel_h,pad_w,pad_h,stride_w,stride_h\n"
    rows = "".join(f"l{i},27,27,64,8,{192 if i % 2 else 96},5,5,2,2,1,1\n" for i in range(1000))
    layers = read_layer_list(io.StringIO(header + rows))
    assert len(parsed) == 2 and [label for label, _ in layers] == [f"l{i}" for i in range(1000)]
    assert {p.out_channels for _, p in layers[1::2]} == {192}
    bad = header + rows + "late,27,27,64,8,0,5,5,2,2,1,1\n"
    with pytest.raises(ValueError, match=r"line 1002, layer 'late', column 'C_out'"):
        read_layer_list(io.StringIO(bad))
