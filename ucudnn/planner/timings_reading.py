"""Reading timing tables: CSV files and JSON documents of the interchange format, whose
columns and rules docs/design/timings-format.md describes. A CSV is read column by column,
each distinct cell text checked once; a file that way refuses is read again row by row, to
say where its first error is."""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from ucudnn.core.algorithms import check_legacy_algo
from ucudnn.core.checks import parse_bool, shown
from ucudnn.core.problem import check_kernel
from ucudnn.core.splits import BATCH, Axis, axis_named
from ucudnn.planner.candidate import CANDIDATE_FIELDS, Candidate, Row
from ucudnn.planner.documents import line_of, read_document
from ucudnn.planner.files import CsvRecords, FieldError, Source, field_errors, located_error
from ucudnn.planner.kernel_table import KernelId, KernelTable, share_equal_rows
from ucudnn.planner.provenance import device_of_comments
from ucudnn.planner.values import (
    CANDIDATE_CHECKS,
    INTEGER_MAXIMUM,
    check_batch,
    check_engine_index,
    layer_name,
)

if TYPE_CHECKING:  # the readers make tables of the type they are given: no import cycle
    from ucudnn.planner.tables import TimingTables

REQUIRED_COLUMNS = ("layer", "kernel", "batch", "micro_batch", "algo", "time_ms", "workspace_bytes")
OPTIONAL_COLUMNS = ("math_type", "deterministic", "engine")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
# The split axis of a row's table: written only for tables split along another axis than the
# batch, so that files of batch splits are as they were; empty or absent, the batch.
AXIS_COLUMN = "axis"
# A row's planes per slab (Candidate.slab): written only for files that hold a candidate cut
# into slabs, so that other files are as they were; empty or absent, 0 (the whole volume).
SLAB_COLUMN = "slab"
READ_COLUMNS = (*COLUMNS, AXIS_COLUMN, SLAB_COLUMN)

JSON_FORMAT: Final = "ucudnn-timings"
JSON_VERSION: Final = 1

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
# One way to match each text: a long cell that is no number fails in linear time.
_UNSIGNED_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
_NUMBER_TEXT = re.compile(rf"[+-]?{_UNSIGNED_NUMBER}")


def tables_from_csv(tables_type: type[TimingTables], source: Source) -> TimingTables:
    """`TimingTables.read_csv`'s tables, of `tables_type`."""
    records = CsvRecords(source, "<stream>", comments=True)
    try:
        device = device_of_comments(records.comments)
        _check_columns(records.header)
    except FieldError as exc:
        raise located_error(exc, records.name) from None
    except ValueError as exc:
        raise located_error(exc, records.name, f"line {records.header_line}") from None
    tables = _tables_from_csv_records(tables_type, records)
    tables.device = device
    return tables


def _tables_from_csv_records(tables_type: type[TimingTables], records: CsvRecords) -> TimingTables:
    columns = records.columns()
    if columns is not None:
        # The fast way checks what the rows hold, not where; the first error of a file
        # that it refuses is then found row by row, and located.
        with contextlib.suppress(TypeError, ValueError):
            return _tables_from_columns(tables_type, columns, len(records))
    return _tables_from_numbered_rows(
        tables_type, records, records.name, lambda line, _: (f"line {line}",)
    )


def tables_from_json(
    tables_type: type[TimingTables], text: str | bytes, source: str
) -> TimingTables:
    """`TimingTables.from_json`'s tables, of `tables_type`."""
    data = read_document(text, JSON_FORMAT, JSON_VERSION, source)
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise located_error(
            FieldError("field 'rows'", "must be a list of objects"), source, line_of(data)
        )
    return tables_from_rows(tables_type, rows, source)


def tables_from_rows(
    tables_type: type[TimingTables], rows: Iterable[Mapping[str, object]], source: str
) -> TimingTables:
    """`TimingTables.from_rows`'s tables, of `tables_type`."""

    def where(n: int, row: Mapping[str, object]) -> tuple[str, ...]:
        return (line_of(row), f"row {n}")

    numbered = list(enumerate(rows, 1))
    for n, row in numbered:
        try:
            _check_columns(row.keys())
        except ValueError as exc:
            raise located_error(exc, source, *where(n, row)) from None
    return _tables_from_numbered_rows(tables_type, numbered, source, where)


def _tables_from_numbered_rows(
    tables_type: type[TimingTables],
    records: Iterable[tuple[int, Mapping[str, object]]],
    source: str,
    where: Callable[[int, Mapping[str, object]], tuple[str, ...]],
) -> TimingTables:
    """Tables from numbered rows, equal ones sharing their rows (`share_equal_rows`); `where`
    turns a number and row into the places that locate it in `source` ("line 3"), when an
    error needs them."""
    tables = tables_type()
    first_seen: dict[KernelId, tuple[int, Mapping[str, object]]] = {}
    for n, row in records:
        try:
            layer, kernel, batch, axis, candidate = _parse_row(row)
            _table_of(tables, layer, kernel, batch, axis).add(candidate)
        except (TypeError, ValueError) as exc:
            raise located_error(exc, source, *where(n, row)) from None
        first_seen.setdefault((layer, kernel), (n, row))
    for kernel_id, table in tables.items():
        try:
            table.check_complete()
        except ValueError as exc:
            *before, last = where(*first_seen[kernel_id])
            raise located_error(exc, source, *before, f"{last} (its first row)") from None
    share_equal_rows(table for _, table in tables.items())
    return tables


def _table_of(tables: TimingTables, layer: str, kernel: str, batch: int, axis: Axis) -> KernelTable:
    # The batch or axis may disagree with the layer's earlier rows.
    known = (layer, kernel) in tables
    column = AXIS_COLUMN if known and tables[layer, kernel].batch == batch else "batch"
    with field_errors(f"column {column!r}"):
        return tables.setdefault(layer, kernel, batch, axis)


def _check_columns(columns: Iterable[str]) -> None:
    columns = list(columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ValueError(f"missing column(s) {', '.join(missing)}")
    unknown = [c for c in columns if c not in READ_COLUMNS]
    if unknown:
        raise ValueError(
            f"unknown column(s) {', '.join(map(shown, unknown))}; "
            f"known columns are {', '.join(READ_COLUMNS)}"
        )


def integer_text(text: str, column: str, maximum: int) -> int:
    """The integer a cell spells in plain decimal digits (no '1_000', no '1e3'). More digits
    than `maximum` has are refused before converting: no allowed value has them, and int()
    is slow on long digit strings and refuses those past Python's limit."""
    if not _INTEGER_TEXT.fullmatch(text):
        raise ValueError(f"{column} must be an integer, got {shown(text)}")
    # Leading zeros are no digits of the value, but Python's limit would count them.
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > len(str(maximum)):
        raise ValueError(
            f"{column} has {len(digits)} digits, more than any allowed value (at most {maximum})"
        )
    return -int(digits) if text.startswith("-") else int(digits)


def _number_text(text: str, column: str) -> float:
    if not _NUMBER_TEXT.fullmatch(text):
        raise ValueError(f"{column} must be a number, got {shown(text)}")
    value = float(text)
    if math.isinf(value):  # more digits than a float holds: say what was written, not "inf"
        raise ValueError(f"{column} is too large to be a number, got {shown(text)}")
    return value


# How a CSV cell's text becomes a value; the value is then checked as a Python argument would
# be. Cells that are already values (rows given in Python or JSON) skip the text step.
_FROM_TEXT: dict[str, Callable[[str, str], object]] = {
    **{
        column: functools.partial(integer_text, maximum=maximum)
        for column, maximum in INTEGER_MAXIMUM.items()
    },
    "time_ms": _number_text,
    "deterministic": parse_bool,
}
_CHECKS: dict[str, Callable[[object], object]] = {
    "layer": layer_name,
    "kernel": check_kernel,  # type: ignore[dict-item]
    "batch": check_batch,
    **CANDIDATE_CHECKS,
    AXIS_COLUMN: axis_named,  # type: ignore[dict-item]
}
_DEFAULTS: dict[str, object] = {
    "math_type": "default", "deterministic": False, "engine": "", AXIS_COLUMN: BATCH.name,
    SLAB_COLUMN: 0,
}  # fmt: skip


def _cell(row: Mapping[str, object], column: str) -> object:
    """The checked value of `column` in `row`; TypeError or ValueError if it is bad."""
    value = row.get(column)
    if isinstance(value, str):
        return (_repeated_text_cell if column in _REPEATING else _text_cell)(column, value)
    if value is None and column in _DEFAULTS:
        value = _DEFAULTS[column]
    return _CHECKS[column](value)


def _text_cell(column: str, text: str) -> object:
    """The checked value of a cell given as text (CSV cells; JSON cells may be text too)."""
    if column == "engine" and text.isspace():
        # Empty means a legacy algorithm; blanks are no choice between the two.
        raise ValueError(f"engine {text!r} is white space alone: give an engine tag, or nothing")
    text = text.strip()
    value: object = text
    if text == "" and column in _DEFAULTS:
        value = _DEFAULTS[column]
    elif column in _FROM_TEXT:
        value = _FROM_TEXT[column](text, column)
    return _CHECKS[column](value)


# Columns whose few distinct texts come back row after row (tables of engines have 1e5 rows):
# their checked values are kept, not worked out again.
_REPEATING = frozenset(READ_COLUMNS) - {"time_ms", "workspace_bytes"}
_repeated_text_cell = functools.lru_cache(maxsize=8192)(_text_cell)


def _tables_from_columns(
    tables_type: type[TimingTables], columns: Mapping[str, list[str]], count: int
) -> TimingTables:
    """The tables of `count` rows given column by column as text, checked as `_parse_row`
    checks each row, but each distinct cell text once, the checks across columns once per
    distinct combination and a size's rows once per distinct list of them, equal tables sharing
    their rows (`share_equal_rows`); a TypeError or ValueError, unlocated, for anything
    `_parse_row` refuses."""
    values = {column: _column_values(column, columns.get(column), count) for column in READ_COLUMNS}
    kernels = values["kernel"]
    for kernel, algo, engine in set(zip(kernels, values["algo"], values["engine"], strict=True)):
        check_engine_index(engine, algo)  # type: ignore[arg-type]
        if not engine:
            check_legacy_algo(kernel, algo)  # type: ignore[arg-type]
    # Each size's rows of each table, as Candidate field values.
    sizes: dict[tuple[object, ...], list[tuple[object, ...]]] = collections.defaultdict(list)
    keys = zip(
        values["layer"], kernels, values["batch"], values[AXIS_COLUMN], values["micro_batch"],
        strict=True,
    )  # fmt: skip
    fields = zip(*(values[name] for name in CANDIDATE_FIELDS), strict=True)
    for key, row in zip(keys, fields, strict=True):
        sizes[key].append(row)
    tables = tables_type()
    # A file repeats its tables, as a network its blocks: the rows of a size are checked and
    # ordered once, and the tables read with the same rows there share them.
    first_read: dict[tuple[object, ...], list[tuple[list[Row], KernelTable]]]
    first_read = collections.defaultdict(list)
    for (layer, kernel, batch, axis, micro_batch), found in sizes.items():
        if micro_batch > batch:  # type: ignore[operator]
            raise ValueError("a micro_batch is larger than its batch")
        # Its rows' batch or axis conflicts with that of the rows before them.
        table = tables.setdefault(layer, kernel, batch, axis)  # type: ignore[arg-type]
        alike = first_read[kernel, batch, axis, micro_batch, len(found)]
        twin = next((t for rows, t in alike if rows == found), None)
        if twin is None:
            table.set_checked_size(micro_batch, found)  # type: ignore[arg-type]
            alike.append((found, table))  # type: ignore[arg-type]
        else:
            table.share_size(micro_batch, twin)  # type: ignore[arg-type]
    for _, table in tables.items():
        table.check_complete()
    share_equal_rows(table for _, table in tables.items())
    return tables


def _column_values(column: str, texts: list[str] | None, count: int) -> list[object]:
    """The checked value of each cell of `column` (`count` of the default without a column)."""
    if texts is None:
        return [_CHECKS[column](_DEFAULTS[column])] * count
    if texts and texts.count(texts[0]) == len(texts):  # one text throughout, as many columns
        return [_text_cell(column, texts[0])] * len(texts)
    checked = _CheckedTexts(column)
    if column in _PLAIN_NUMBERS:
        checked.update(_plain_numbers(column, set(texts)))
    return list(map(checked.__getitem__, texts))


# Numbers as tables write them: unsigned, without blanks, integers no longer than the column's
# maximum. What int() or float() makes of such a text is what the cell rules (`_FROM_TEXT`)
# make of it, so a column's distinct ones convert in bulk: an engine table has 1e4 times.
_PLAIN_NUMBERS: dict[str, tuple[re.Pattern[str], Callable[[str], float]]] = {
    **{
        column: (re.compile(rf"[0-9]{{1,{len(str(maximum))}}}"), int)
        for column, maximum in INTEGER_MAXIMUM.items()
    },
    "time_ms": (re.compile(_UNSIGNED_NUMBER), float),
}


def _plain_numbers(column: str, texts: set[str]) -> dict[str, float]:
    """Those of `texts` that are plain numbers (`_PLAIN_NUMBERS`), each with its checked value.
    The column's check takes a range, so the least and the greatest value are checked for all:
    a ValueError, unlocated, if one is outside."""
    pattern, convert = _PLAIN_NUMBERS[column]
    plain = list(filter(pattern.fullmatch, texts))
    checked = dict(zip(plain, map(convert, plain), strict=True))
    if checked:
        check = _CHECKS[column]
        check(min(checked.values()))
        check(max(checked.values()))
    return checked


class _CheckedTexts(dict[str, object]):
    """The checked value of each text of a column, worked out the first time it is asked for."""

    def __init__(self, column: str) -> None:
        super().__init__()
        self.column = column

    def __missing__(self, text: str) -> object:
        value = self[text] = _text_cell(self.column, text)
        return value


def _parse_row(row: Mapping[str, object]) -> tuple[str, str, int, Axis, Candidate]:
    values: dict[str, object] = {}
    # One handler per row, not a field_errors block per cell: tables have 1e5 cells and more.
    try:
        for column in READ_COLUMNS:
            values[column] = _cell(row, column)
    except (TypeError, ValueError) as exc:
        raise FieldError(f"column {column!r}", str(exc)) from None
    batch, micro_batch = values["batch"], values["micro_batch"]
    if micro_batch > batch:  # type: ignore[operator]
        raise FieldError(
            "column 'micro_batch'",
            f"micro_batch must be between 1 and batch ({batch}), got {micro_batch}",
        )
    with field_errors("column 'engine'"):  # its index may disagree with algo
        candidate = Candidate(**{name: values[name] for name in CANDIDATE_CHECKS})  # type: ignore[arg-type]
    if not candidate.engine:
        with field_errors("column 'algo'"):
            check_legacy_algo(values["kernel"], candidate.algo)  # type: ignore[arg-type]
    axis = values[AXIS_COLUMN]
    return values["layer"], values["kernel"], batch, axis, candidate  # type: ignore[return-value]
