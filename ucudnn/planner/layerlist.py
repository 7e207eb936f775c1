"""Layer-list CSV files: one convolution per row, columns found by their header names.

2D files have W, H, C_in, N, C_out, kernel_w/h, pad_w/h, stride_w/h; 3D files add D and the
_d columns. Optional columns: source (the layer's label), dilation_* (default 1), groups
(default 1) and the problem's text fields (dtype, compute_dtype, math_type, mode, layout,
filter_layout). pad_* defaults to 0 and stride_* to 1. Unknown columns are an error, so a
misspelt header cannot silently fall back to a default. A UTF-8 byte-order mark is tolerated.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, NamedTuple

from ucudnn.core.problem import ConvProblem, packed_strides

# Spatial axes in the column order of the shared files (2D lists W first, 3D lists D first).
_AXES = {2: ("w", "h"), 3: ("d", "h", "w")}
_TEXT_FIELDS = ("dtype", "compute_dtype", "math_type", "mode", "layout", "filter_layout")


class Layer(NamedTuple):
    label: str
    problem: ConvProblem


def _columns(rank: int, dilation: bool) -> list[str]:
    axes = _AXES[rank]
    cols = ["source", *(a.upper() for a in axes), "C_in", "N", "C_out"]
    for prefix in ("kernel", "pad", "stride", *(("dilation",) if dilation else ())):
        cols += [f"{prefix}_{a}" for a in axes]
    return cols


def _int(row: dict[str, str], column: str, default: int | None, where: str) -> int:
    text = (row.get(column) or "").strip()
    if not text:
        if default is None:
            raise ValueError(f"{where}: column {column!r} is missing or empty")
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{where}: column {column!r} must be an integer, got {text!r}") from None


def _parse_row(
    row: dict[str, str], rank: int, batch: int | None, defaults: dict[str, object], where: str
) -> ConvProblem:
    # Logical spatial order is (D,) H, W whatever order the columns come in.
    axes = "dhw"[3 - rank :]
    numbers = {
        "batch": batch if batch is not None else _int(row, "N", None, where),
        "in_channels": _int(row, "C_in", None, where),
        "out_channels": _int(row, "C_out", None, where),
        "input_size": tuple(_int(row, a.upper(), None, where) for a in axes),
        "filter_size": tuple(_int(row, f"kernel_{a}", None, where) for a in axes),
        "padding": tuple(_int(row, f"pad_{a}", 0, where) for a in axes),
        "stride": tuple(_int(row, f"stride_{a}", 1, where) for a in axes),
        "dilation": tuple(_int(row, f"dilation_{a}", 1, where) for a in axes),
        "groups": _int(row, "groups", 1, where),
    }
    texts = {f: row[f].strip() for f in _TEXT_FIELDS if (row.get(f) or "").strip()}
    try:
        return ConvProblem(**numbers, **{**defaults, **texts})  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _known_columns(rank: int) -> set[str]:
    return {*_columns(rank, dilation=True), "groups", *_TEXT_FIELDS}


def read_layer_list(
    source: str | os.PathLike[str] | IO[str],
    *,
    batch: int | None = None,
    **defaults: object,
) -> list[Layer]:
    """Layers of a CSV file (path or open text file), in file order.

    `batch` replaces the N column (which may then be absent). `defaults` are ConvProblem
    fields such as dtype="float16" or layout="NHWC" for rows whose file has no such column.
    """
    if isinstance(source, str | os.PathLike):
        name = str(source)
        with open(source, encoding="utf-8-sig", newline="") as f:
            return _read(f, name, batch, defaults)
    return _read(source, getattr(source, "name", "<layer list>"), batch, defaults)


def _read(f: IO[str], name: str, batch: int | None, defaults: dict[str, object]) -> list[Layer]:
    reader = csv.DictReader(f)
    header = [h.removeprefix("\ufeff").strip() for h in reader.fieldnames or []]
    if not header:
        raise ValueError(f"{name}: empty file, expected a header line")
    reader.fieldnames = header
    rank = 3 if "D" in header else 2
    unknown = [h for h in header if h not in _known_columns(rank)]
    if unknown:
        raise ValueError(
            f"{name} line 1: unknown column(s) {', '.join(map(repr, unknown))}; "
            f"{rank}D files take {', '.join(_columns(rank, dilation=True))}, groups, "
            f"{', '.join(_TEXT_FIELDS)}"
        )
    layers = []
    for row in reader:
        where = f"{name} line {reader.line_num}"
        if None in row:
            raise ValueError(f"{where}: more values than the {len(header)} columns of the header")
        if None in row.values():
            raise ValueError(f"{where}: fewer values than the {len(header)} columns of the header")
        label = (row.get("source") or "").strip() or f"line{reader.line_num}"
        layers.append(Layer(label, _parse_row(row, rank, batch, defaults, where)))
    return layers


def _optional_fields(problems: list[ConvProblem]) -> list[str]:
    """Text fields and groups whose value some problem would lose if its column were left out."""
    blank = {"groups": 1, "dtype": "float32", "compute_dtype": "", "math_type": "default"}
    blank |= {"mode": "cross_correlation", "layout": "", "filter_layout": ""}
    return [
        name
        for name in ("groups", *_TEXT_FIELDS)
        if any(
            getattr(dataclasses.replace(p, **{name: blank[name]}), name) != getattr(p, name)
            for p in problems
        )
    ]


def write_layer_list(
    layers: Iterable[Layer | tuple[str, ConvProblem]], dest: str | os.PathLike[str] | IO[str]
) -> None:
    """Write layers so that `read_layer_list` gives them back exactly; optional columns
    appear only when some layer needs them."""
    layers = [Layer(*layer) for layer in layers]
    if not layers:
        raise ValueError("no layers to write")
    problems = [layer.problem for layer in layers]
    ranks = {p.rank for p in problems}
    if len(ranks) != 1:
        raise ValueError("a layer list holds either 2D or 3D layers, not both")
    rank = ranks.pop()
    for label, p in layers:
        if (p.x_strides, p.y_strides) != (
            packed_strides(p.x_dims, p.layout),
            packed_strides(p.y_dims, p.layout),
        ):
            raise ValueError(
                f"layer {label!r} has non-packed tensor strides, which CSV cannot hold"
            )
    dilation = any(d != 1 for p in problems for d in p.dilation)
    extra = _optional_fields(problems)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*_columns(rank, dilation), *extra])
    order = [("dhw"[3 - rank :]).index(a) for a in _AXES[rank]]
    for label, p in layers:
        row: list[object] = [label, *(p.input_size[i] for i in order)]
        row += [p.in_channels, p.batch, p.out_channels]
        for values in (p.filter_size, p.padding, p.stride, *((p.dilation,) if dilation else ())):
            row += [values[i] for i in order]
        writer.writerow(row + [getattr(p, name) for name in extra])
    if isinstance(dest, str | os.PathLike):
        Path(dest).write_text(out.getvalue(), encoding="utf-8")
    else:
        dest.write(out.getvalue())
