"""Benchmark tables: measured candidates per kernel, and the schedules built from them.

Interchange format
------------------
A timings CSV has one row per measured candidate, with the header

    layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes[,math_type][,deterministic]

- ``layer``: the layer's name, any non-empty text.
- ``kernel``: ``forward``, ``backward_data`` or ``backward_filter``.
- ``batch``: the layer's mini-batch N (one value per layer and kernel).
- ``micro_batch``: the micro-batch b the row was measured at, 1 <= b <= N.
- ``algo``: the cuDNN algorithm (enum value of the legacy API for that kernel), an integer >= 0.
- ``time_ms``: time of one run at b, in milliseconds (finite, >= 0).
- ``workspace_bytes``: exact workspace the run needs, in bytes (integer >= 0).
- ``math_type`` (optional, default ``default``): ``default``, ``tensor_op``,
  ``tensor_op_allow_conversion`` or ``fma``.
- ``deterministic`` (optional, default false): ``true``/``false`` (also ``1``/``0``,
  ``yes``/``no``).

Every (layer, kernel) must have rows at micro_batch == batch, so a table always knows what the
undivided run costs. A candidate (micro_batch, algo, math_type) appears once per table. Errors
name the file and line. The same rows also travel as JSON: ``{"format": "ucudnn-timings",
"version": 1, "rows": [{column: value, ...}, ...]}``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import math
import numbers
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import IO

from ucudnn.core.checks import integer
from ucudnn.core.problem import MATH_TYPES, MAX_DIM, check_kernel
from ucudnn.planner.documents import read_document

KernelId = tuple[str, str]

REQUIRED_COLUMNS = ("layer", "kernel", "batch", "micro_batch", "algo", "time_ms", "workspace_bytes")
OPTIONAL_COLUMNS = ("math_type", "deterministic")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

JSON_FORMAT = "ucudnn-timings"
JSON_VERSION = 1

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")

# Beyond these a row is a mistake, not a measurement (a convolution of 11 days, a workspace of
# a pebibyte), and the numbers would leave the range where the WD solver stays exact.
MAX_TIME_MS = 1e9
MAX_WORKSPACE_BYTES = 2**50


@dataclasses.dataclass(frozen=True, order=True)
class Candidate:
    """One measured way to run a kernel on `micro_batch` samples."""

    micro_batch: int
    algo: int  # the seam where cuDNN graph-API engine configurations can come in later
    time_ms: float
    workspace_bytes: int
    math_type: str = "default"
    deterministic: bool = False

    def __post_init__(self) -> None:
        set_field = functools.partial(object.__setattr__, self)
        set_field(
            "micro_batch", integer(self.micro_batch, "micro_batch", minimum=1, maximum=MAX_DIM)
        )
        set_field("algo", integer(self.algo, "algo", minimum=0))
        set_field(
            "workspace_bytes",
            integer(
                self.workspace_bytes, "workspace_bytes", minimum=0, maximum=MAX_WORKSPACE_BYTES
            ),
        )
        if isinstance(self.time_ms, bool) or not isinstance(self.time_ms, numbers.Real):
            raise TypeError(f"time_ms must be a number, got {self.time_ms!r}")
        # -0.0 is 0: a zero time must read as zero everywhere (speedups, JSON).
        set_field("time_ms", float(self.time_ms) + 0.0)
        if not 0 <= self.time_ms <= MAX_TIME_MS:
            raise ValueError(
                f"time_ms must be a number between 0 and {MAX_TIME_MS:g}, got {self.time_ms}"
            )
        if self.math_type not in MATH_TYPES:
            raise ValueError(f"math_type {self.math_type!r} is not one of {', '.join(MATH_TYPES)}")

    def speed_key(self) -> tuple[float, int, int, str]:
        """Order for picking among candidates: faster, then smaller, then lower algo."""
        return (self.time_ms, self.workspace_bytes, self.algo, self.math_type)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Micro-batches run one after another on one stream, in this order, sharing one buffer:
    the time adds up and the workspace is the largest part's."""

    parts: tuple[Candidate, ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("a schedule needs at least one part")

    @property
    def time_ms(self) -> float:
        return math.fsum(p.time_ms for p in self.parts)

    @property
    def workspace_bytes(self) -> int:
        return max(p.workspace_bytes for p in self.parts)

    @property
    def batch(self) -> int:
        return sum(p.micro_batch for p in self.parts)

    @property
    def deterministic(self) -> bool:
        return all(p.deterministic for p in self.parts)

    def micro_batches_text(self) -> str:
        """ "2x128" when the parts are equal, else "128+64+64"."""
        sizes = [p.micro_batch for p in self.parts]
        if len(sizes) > 1 and len(set(sizes)) == 1:
            return f"{len(sizes)}x{sizes[0]}"
        return "+".join(map(str, sizes))

    def algos_text(self) -> str:
        """The algorithm of each part ("1" when they all agree), with a non-default math type."""
        names = [
            str(p.algo) if p.math_type == "default" else f"{p.algo}/{p.math_type}"
            for p in self.parts
        ]
        return names[0] if len(set(names)) == 1 else ",".join(names)


class KernelTable:
    """The measured candidates of one kernel of one layer at mini-batch `batch`."""

    def __init__(
        self, layer: str, kernel: str, batch: int, candidates: Iterable[Candidate] = ()
    ) -> None:
        if not isinstance(layer, str) or not layer:
            raise ValueError(f"layer must be a non-empty name, got {layer!r}")
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        self.layer = layer
        self.kernel = check_kernel(kernel)
        self.batch = batch
        self.candidates: dict[int, list[Candidate]] = {}
        for candidate in candidates:
            self.add(candidate)

    @property
    def kernel_id(self) -> KernelId:
        return (self.layer, self.kernel)

    def add(self, c: Candidate) -> None:
        if c.micro_batch > self.batch:
            raise ValueError(f"micro_batch {c.micro_batch} is larger than batch {self.batch}")
        at_size = self.candidates.setdefault(c.micro_batch, [])
        if any((o.algo, o.math_type) == (c.algo, c.math_type) for o in at_size):
            raise ValueError(
                f"duplicate candidate: micro_batch {c.micro_batch}, algo {c.algo}, "
                f"math_type {c.math_type} is already in {self.layer}/{self.kernel}"
            )
        at_size.append(c)

    def micro_batches(self) -> list[int]:
        return sorted(self.candidates)

    def __iter__(self) -> Iterator[Candidate]:
        for b in self.micro_batches():
            yield from self.candidates[b]

    def content_key(self) -> tuple[int, tuple[Candidate, ...]]:
        """Equal for tables with the same batch and candidates, whatever layer they are of."""
        return (self.batch, tuple(sorted(self)))

    def check_complete(self) -> None:
        if not self.candidates.get(self.batch):
            raise ValueError(
                f"{self.layer}/{self.kernel} has no rows at micro_batch == batch ({self.batch}); "
                "every table needs the undivided run"
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelTable):
            return NotImplemented
        return (self.kernel_id, self.batch, self.candidates) == (
            other.kernel_id,
            other.batch,
            other.candidates,
        )

    def __repr__(self) -> str:
        count = sum(len(v) for v in self.candidates.values())
        return f"KernelTable({self.layer!r}, {self.kernel!r}, batch={self.batch}, {count} rows)"


class TimingTables:
    """Kernel tables keyed by (layer, kernel), in the order they were added."""

    def __init__(self, tables: Iterable[KernelTable] = ()) -> None:
        self._tables: dict[KernelId, KernelTable] = {}
        for table in tables:
            self.add(table)

    def add(self, table: KernelTable) -> None:
        if table.kernel_id in self._tables:
            raise ValueError(f"{table.layer}/{table.kernel} is already in the tables")
        self._tables[table.kernel_id] = table

    def setdefault(self, layer: str, kernel: str, batch: int) -> KernelTable:
        """The table of (layer, kernel), created if new; its batch must agree."""
        table = self._tables.get((layer, kernel))
        if table is None:
            table = KernelTable(layer, kernel, batch)
            self.add(table)
        elif table.batch != batch:
            raise ValueError(
                f"batch {batch} conflicts with batch {table.batch} given earlier "
                f"for {layer}/{kernel}"
            )
        return table

    def __getitem__(self, kernel_id: KernelId) -> KernelTable:
        try:
            return self._tables[kernel_id]
        except KeyError:
            raise KeyError(
                f"no timings for layer {kernel_id[0]!r} kernel {kernel_id[1]!r}"
            ) from None

    def __contains__(self, kernel_id: object) -> bool:
        return kernel_id in self._tables

    def __len__(self) -> int:
        return len(self._tables)

    def __iter__(self) -> Iterator[KernelId]:
        return iter(self._tables)

    def items(self) -> Iterator[tuple[KernelId, KernelTable]]:
        return iter(self._tables.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimingTables):
            return NotImplemented
        return self._tables == other._tables

    # -- rows -------------------------------------------------------------------------------
    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, object]], source: str = "rows") -> TimingTables:
        """Tables from row mappings (column -> text or number); errors name "row n"."""
        return cls._from_located(
            ((f"{source}, row {n}", row) for n, row in enumerate(rows, 1)), check_each=True
        )

    @classmethod
    def _from_located(
        cls, rows: Iterable[tuple[str, Mapping[str, object]]], check_each: bool
    ) -> TimingTables:
        tables = cls()
        first_seen: dict[KernelId, str] = {}
        for where, row in rows:
            if check_each:
                _check_columns(row.keys(), where)
            try:
                layer, kernel, batch, candidate = _parse_row(row)
                tables.setdefault(layer, kernel, batch).add(candidate)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            first_seen.setdefault((layer, kernel), where)
        for kernel_id, table in tables.items():
            try:
                table.check_complete()
            except ValueError as exc:
                raise ValueError(f"{first_seen[kernel_id]} (its first row): {exc}") from None
        return tables

    def to_rows(self) -> list[dict[str, object]]:
        return [
            {
                "layer": table.layer,
                "kernel": table.kernel,
                "batch": table.batch,
                "micro_batch": c.micro_batch,
                "algo": c.algo,
                "time_ms": c.time_ms,
                "workspace_bytes": c.workspace_bytes,
                "math_type": c.math_type,
                "deterministic": c.deterministic,
            }
            for table in self._tables.values()
            for c in table
        ]

    # -- CSV --------------------------------------------------------------------------------
    @classmethod
    def read_csv(cls, source: str | os.PathLike[str] | IO[str]) -> TimingTables:
        if isinstance(source, (str, os.PathLike)):
            with open(source, newline="", encoding="utf-8-sig") as f:
                return cls._read_csv(f, os.fspath(source))
        return cls._read_csv(source, getattr(source, "name", "<stream>"))

    @classmethod
    def _read_csv(cls, f: IO[str], name: str) -> TimingTables:
        reader = csv.DictReader(f, restkey="\0extra")
        if reader.fieldnames is None:
            raise ValueError(f"{name}: empty file; expected the header {','.join(COLUMNS)}")
        reader.fieldnames = [c.strip() for c in reader.fieldnames]
        _check_columns(reader.fieldnames, f"{name}, line 1")
        width = len(reader.fieldnames)

        def located() -> Iterator[tuple[str, Mapping[str, object]]]:
            for row in reader:
                where = f"{name}, line {reader.line_num}"
                if "\0extra" in row or None in row.values():
                    count = width + len(row.get("\0extra", [])) - list(row.values()).count(None)
                    raise ValueError(f"{where}: has {count} fields but the header has {width}")
                yield where, row

        return cls._from_located(located(), check_each=False)

    def write_csv(self, dest: str | os.PathLike[str] | IO[str]) -> None:
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "w", newline="", encoding="utf-8") as f:
                self._write_csv(f)
        else:
            self._write_csv(dest)

    def _write_csv(self, f: IO[str]) -> None:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in self.to_rows():
            writer.writerow({**row, "deterministic": "true" if row["deterministic"] else "false"})

    def to_csv(self) -> str:
        out = io.StringIO()
        self._write_csv(out)
        return out.getvalue()

    # -- JSON -------------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({"format": JSON_FORMAT, "version": JSON_VERSION, "rows": self.to_rows()})

    @classmethod
    def from_json(cls, text: str, source: str = "<json>") -> TimingTables:
        data = read_document(text, JSON_FORMAT, JSON_VERSION, source)
        rows = data.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{source}: 'rows' must be a list of objects")
        return cls.from_rows(rows, source)


def _check_columns(columns: Iterable[str], where: str) -> None:
    columns = list(columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise ValueError(
            f"{where}: unknown column(s) {', '.join(map(repr, unknown))}; "
            f"known columns are {', '.join(COLUMNS)}"
        )


def _text(row: Mapping[str, object], column: str) -> str:
    value = row.get(column)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{column} must be text, got {value!r}")
    return value.strip()


def _int(row: Mapping[str, object], column: str) -> int:
    value = row[column]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value)
    raise ValueError(f"{column} must be an integer, got {value!r}")


def _float(row: Mapping[str, object], column: str) -> float:
    value = row[column]
    if not isinstance(value, bool):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    raise ValueError(f"{column} must be a number, got {value!r}")


def _bool(row: Mapping[str, object], column: str) -> bool:
    value = row.get(column)
    if value is None or isinstance(value, bool):
        return bool(value)
    text = _text(row, column).lower()
    if text in _TRUE:
        return True
    if text in _FALSE or text == "":
        return False
    raise ValueError(f"{column} must be true or false, got {value!r}")


def _parse_row(row: Mapping[str, object]) -> tuple[str, str, int, Candidate]:
    layer = _text(row, "layer")
    if not layer:
        raise ValueError("layer is empty")
    kernel = check_kernel(_text(row, "kernel"))
    batch = _int(row, "batch")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    micro_batch = _int(row, "micro_batch")
    if not 1 <= micro_batch <= batch:
        raise ValueError(f"micro_batch must be between 1 and batch ({batch}), got {micro_batch}")
    candidate = Candidate(
        micro_batch=micro_batch,
        algo=_int(row, "algo"),
        time_ms=_float(row, "time_ms"),
        workspace_bytes=_int(row, "workspace_bytes"),
        math_type=_text(row, "math_type") or "default",
        deterministic=_bool(row, "deterministic"),
    )
    return layer, kernel, batch, candidate
