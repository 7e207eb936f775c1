"""Layer-list CSV files: one convolution per row, columns found by their header names.

2D files have W, H, C_in, N, C_out, kernel_w/h, pad_w/h, stride_w/h; 3D files add D and the
_d columns. Optional columns: source (the layer's label), dilation_* (default 1), groups
(default 1) and the problem's text fields (dtype, compute_dtype, math_type, mode, layout,
filter_layout). pad_* defaults to 0 and stride_* to 1; a pad_* cell may also say "same" or
"valid", as PyTorch means them (see ucudnn.core.padding). Unknown columns are an error, so a
misspelt header cannot silently fall back to a default, and so is a column named twice.

Integers are plain decimal digits, at least 1 (pad_* at least 0) and at most 2**31 - 1, since
cuDNN's dimensions are 32-bit (a cell of more than 10 digits, leading zeros aside, is refused
before it is converted). Labels are one line of text without control characters; a label
that is empty becomes "line<n>". Files are UTF-8 (a byte-order mark is tolerated). Errors
name the file, the line, the layer and the column, and show a long cell cut short.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import os
from collections.abc import Iterable
from typing import IO, Any, NamedTuple, SupportsIndex

from ucudnn.core.checks import integer, shown
from ucudnn.core.padding import PADDING_WORDS, word_padding
from ucudnn.core.problem import MAX_DIM, TEXT_FIELDS, ConvProblem, packed_strides
from ucudnn.planner.files import CsvRecords, Source, atomic_write, field_errors, located_error
from ucudnn.planner.timings_reading import integer_text
from ucudnn.planner.values import check_batch, layer_name

# Spatial axes in the column order of the shared files (2D lists W first, 3D lists D first).
_AXES = {2: ("w", "h"), 3: ("d", "h", "w")}


class Layer(NamedTuple):
    label: str
    problem: ConvProblem


def _columns(rank: int, dilation: bool) -> list[str]:
    axes = _AXES[rank]
    cols = ["source", *(a.upper() for a in axes), "C_in", "N", "C_out"]
    for prefix in ("kernel", "pad", "stride", *(("dilation",) if dilation else ())):
        cols += [f"{prefix}_{a}" for a in axes]
    return cols


def _int(row: dict[str, str], column: str, default: int | None) -> int:
    """The integer in `column`: at least 1 (0 for padding) and at most 2**31 - 1, since
    cuDNN's dimensions are 32-bit; `default` when the cell is empty or absent."""
    text = (row.get(column) or "").strip()
    with field_errors(f"column {column!r}"):
        if not text:
            if default is None:
                raise ValueError("the value is missing")
            return default
        minimum = 0 if column.startswith("pad_") else 1
        return integer(
            integer_text(text, column, MAX_DIM), column, minimum=minimum, maximum=MAX_DIM
        )


def _padding(row: dict[str, str], axis: str, kernel: int, stride: int, dilation: int) -> int:
    """pad_<axis>: an integer, or "same" or "valid" as PyTorch means them."""
    column = f"pad_{axis}"
    word = (row.get(column) or "").strip().lower()
    if word not in PADDING_WORDS:
        return _int(row, column, 0)
    with field_errors(f"column {column!r}"):
        return word_padding(word, (kernel,), (stride,), (dilation,))[0]


def _label(row: dict[str, str], line: int) -> str:
    """The layer's label: its source cell, or "line<n>" when there is none."""
    text = (row.get("source") or "").strip()
    with field_errors("column 'source'"):
        return layer_name(text, "label") if text else f"line{line}"


def _parse_row(
    row: dict[str, str], rank: int, batch: int | None, defaults: dict[str, object]
) -> ConvProblem:
    # Logical spatial order is (D,) H, W whatever order the columns come in.
    axes = "dhw"[3 - rank :]
    filter_size = tuple(_int(row, f"kernel_{a}", None) for a in axes)
    stride = tuple(_int(row, f"stride_{a}", 1) for a in axes)
    dilation = tuple(_int(row, f"dilation_{a}", 1) for a in axes)
    numbers = {
        "batch": batch if batch is not None else _int(row, "N", None),
        "in_channels": _int(row, "C_in", None),
        "out_channels": _int(row, "C_out", None),
        "input_size": tuple(_int(row, a.upper(), None) for a in axes),
        "filter_size": filter_size,
        "padding": tuple(
            map(functools.partial(_padding, row), axes, filter_size, stride, dilation)
        ),
        "stride": stride,
        "dilation": dilation,
        "groups": _int(row, "groups", 1),
    }
    texts = {f: row[f].strip() for f in TEXT_FIELDS if (row.get(f) or "").strip()}
    # What is left to fail involves several columns (an empty output, groups that do not
    # divide the channels) or a text field, which the message names.
    return ConvProblem(**numbers, **{**defaults, **texts})  # type: ignore[arg-type]


def _known_columns(rank: int) -> set[str]:
    return {*_columns(rank, dilation=True), "groups", *TEXT_FIELDS}


def read_layer_list(
    source: Source,
    *,
    batch: SupportsIndex | None = None,
    **defaults: object,
) -> list[Layer]:
    """Layers of a CSV file (a path, or an open text or binary file), in file order.

    `batch` replaces the N column (which may then be absent). `defaults` are ConvProblem
    fields such as dtype="float16" or layout="NHWC" for rows whose file has no such column.

    Raises:
        TypeError: `batch` is not an integer.
        ValueError: a batch out of range, or a file that is not a layer list: an unknown or
            missing column, a cell that does not parse, a row that is no convolution (the
            message names the line and column).
        OSError: the file cannot be read.
    """
    if batch is not None:
        batch = check_batch(batch)
    records = CsvRecords(source, "<layer list>")
    rank = 3 if "D" in records.header else 2
    unknown = [h for h in records.header if h not in _known_columns(rank)]
    if unknown:
        raise ValueError(
            f"{records.name}, line 1: unknown column(s) {', '.join(map(shown, unknown))}; "
            f"{rank}D files take {', '.join(_columns(rank, dilation=True))}, groups, "
            f"{', '.join(TEXT_FIELDS)}"
        )
    layers = []
    parsed: dict[tuple[str, ...], ConvProblem] = {}  # rows repeated (blocks of a net) parse once
    for line, row in records:
        try:
            label = _label(row, line)
            cells = tuple(text for column, text in row.items() if column != "source")
            with field_errors(f"layer {shown(label)}"):
                problem = parsed.get(cells)
                if problem is None:
                    problem = parsed[cells] = _parse_row(row, rank, batch, defaults)
                layers.append(Layer(label, problem))
        except (TypeError, ValueError) as exc:
            raise located_error(exc, records.name, f"line {line}") from None
    return layers


def _optional_fields(problems: list[ConvProblem]) -> list[str]:
    """Text fields and groups whose value some problem would lose if its column were left out
    (and so took ConvProblem's default)."""
    optional = ("groups", *TEXT_FIELDS)
    # Any: each field's default has that field's own type.
    blank: dict[str, Any] = {
        f.name: f.default for f in dataclasses.fields(ConvProblem) if f.name in optional
    }
    return [
        name
        for name in optional
        if any(
            getattr(dataclasses.replace(p, **{name: blank[name]}), name) != getattr(p, name)
            for p in problems
        )
    ]


def _check_writable(layer: Layer) -> None:
    """Refuse what `read_layer_list` would refuse or read back differently."""
    label, p = layer
    layer_name(label, "label")
    try:
        check_batch(p.batch)
    except ValueError as exc:
        raise ValueError(f"layer {shown(label)}: {exc}") from None
    if (p.x_strides, p.y_strides) != (
        packed_strides(p.x_dims, p.layout),
        packed_strides(p.y_dims, p.layout),
    ):
        raise ValueError(
            f"layer {shown(label)} has non-packed tensor strides, which CSV cannot hold"
        )


def write_layer_list(
    layers: Iterable[Layer | tuple[str, ConvProblem]], dest: str | os.PathLike[str] | IO[str]
) -> None:
    """Write layers so that `read_layer_list` gives them back exactly; optional columns
    appear only when some layer needs them."""
    layer_list = [Layer(*layer) for layer in layers]
    if not layer_list:
        raise ValueError("no layers to write")
    problems = [layer.problem for layer in layer_list]
    ranks = {p.rank for p in problems}
    if len(ranks) != 1:
        raise ValueError("a layer list holds either 2D or 3D layers, not both")
    rank = ranks.pop()
    for layer in layer_list:
        _check_writable(layer)
    dilation = any(d != 1 for p in problems for d in p.dilation)
    extra = _optional_fields(problems)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*_columns(rank, dilation), *extra])
    order = [("dhw"[3 - rank :]).index(a) for a in _AXES[rank]]
    for label, p in layer_list:
        row: list[object] = [label, *(p.input_size[i] for i in order)]
        row += [p.in_channels, p.batch, p.out_channels]
        for values in (p.filter_size, p.padding, p.stride, *((p.dilation,) if dilation else ())):
            row += [values[i] for i in order]
        writer.writerow(row + [getattr(p, name) for name in extra])
    if isinstance(dest, str | os.PathLike):
        with atomic_write(dest, newline="") as f:
            f.write(out.getvalue())
    else:
        dest.write(out.getvalue())
