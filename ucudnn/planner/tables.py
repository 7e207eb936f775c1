"""Timing tables: the measured candidates of a network's kernels (`TimingTables`, one
`KernelTable` per layer and kernel), read from and written to CSV files and JSON documents in
the interchange format that docs/design/timings-format.md describes.

The tables' public names are all importable from here: the types they are made of (`Candidate`,
`Schedule`, `KernelTable`) and the limits of their values are defined beside this module.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, SupportsIndex

from ucudnn.core.checks import shown
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.files import Source, atomic_write
from ucudnn.planner.kernel_table import KernelId, KernelTable
from ucudnn.planner.provenance import device_comment
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.timings_reading import (
    AXIS_COLUMN,
    COLUMNS,
    JSON_FORMAT,
    JSON_VERSION,
    SLAB_COLUMN,
    tables_from_csv,
    tables_from_json,
    tables_from_rows,
)
from ucudnn.planner.values import MAX_TIME_MS, MAX_WORKSPACE_BYTES, check_batch, layer_name

if TYPE_CHECKING:  # it imports this module (through planner.explain)
    from ucudnn.planner import plan_formats

__all__ = [
    "JSON_FORMAT",
    "JSON_VERSION",
    "MAX_TIME_MS",
    "MAX_WORKSPACE_BYTES",
    "Candidate",
    "KernelId",
    "KernelTable",
    "Schedule",
    "TimingTables",
    "layer_name",
]


class TimingTables:
    """Kernel tables keyed by (layer, kernel), in the order they were added; `device` is where
    they were measured, when known (a CSV records it in a comment: see `provenance`). Tables
    compare by what they hold, wherever it was measured."""

    def __init__(
        self, tables: Iterable[KernelTable] = (), device: DeviceFacts | None = None
    ) -> None:
        if device is not None and not isinstance(device, DeviceFacts):
            raise TypeError(f"device must be DeviceFacts or None, got {shown(device)}")
        self.device = device
        self._tables: dict[KernelId, KernelTable] = {}
        for table in tables:
            self.add(table)

    def add(self, table: KernelTable) -> None:
        if not isinstance(table, KernelTable):
            raise TypeError(f"timing tables hold KernelTables, got {table!r}")
        if table.kernel_id in self._tables:
            raise ValueError(f"{table.layer}/{table.kernel} is already in the tables")
        self._tables[table.kernel_id] = table

    def setdefault(
        self, layer: str, kernel: str, batch: SupportsIndex, axis: Axis = BATCH
    ) -> KernelTable:
        """The table of (layer, kernel), created if new; its batch and axis must agree."""
        batch = check_batch(batch)
        table = self._tables.get((layer, kernel))
        if table is None:
            table = KernelTable(layer, kernel, batch, axis=axis)
            self.add(table)
        elif table.batch != batch:
            raise ValueError(
                f"batch {batch} conflicts with batch {table.batch} given earlier "
                f"for {layer}/{kernel}"
            )
        elif table.axis is not axis:
            raise ValueError(
                f"axis {axis.name} conflicts with axis {table.axis.name} given earlier "
                f"for {layer}/{kernel}"
            )
        return table

    def __getitem__(self, kernel_id: KernelId) -> KernelTable:
        try:
            return self._tables[kernel_id]
        except KeyError:
            raise KeyError(
                f"no timings for layer {shown(kernel_id[0])} kernel {shown(kernel_id[1])}"
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
        """Tables from row mappings (column -> text or number); errors name the row (and its
        line, for rows read from JSON) and the column."""
        return tables_from_rows(cls, rows, source)

    def to_rows(self) -> list[plan_formats.TimingsRow]:
        """One mapping per candidate; the batch axis and the whole volume are implied (see
        `AXIS_COLUMN` and `SLAB_COLUMN`)."""
        rows: list[plan_formats.TimingsRow] = []
        for table in self._tables.values():
            for c in table:
                row: plan_formats.TimingsRow = {
                    "layer": table.layer,
                    "kernel": table.kernel,
                    "batch": table.batch,
                    "micro_batch": c.micro_batch,
                    "algo": c.algo,
                    "time_ms": c.time_ms,
                    "workspace_bytes": c.workspace_bytes,
                    "math_type": c.math_type,
                    "deterministic": c.deterministic,
                    "engine": c.engine,
                }
                if table.axis is not BATCH:
                    row["axis"] = table.axis.name
                if c.slab:
                    row["slab"] = c.slab
                rows.append(row)
        return rows

    # -- CSV --------------------------------------------------------------------------------
    @classmethod
    @collector_paused()  # the whole read: its deferred young pass then meets no text or cell
    def read_csv(cls, source: Source) -> TimingTables:
        """Tables from a CSV file: a path (gzip or not), or an open text or binary file. A
        device comment before the header (as `write_csv` writes it) sets `device`.

        Raises:
            ValueError: a file that is not timing tables: an unknown or missing column, a
                cell that does not parse, a row repeated or at odds with the layer's batch, a
                kernel without its undivided run (the message names the line and column).
            OSError: the file cannot be read.
        """
        return tables_from_csv(cls, source)

    def write_csv(self, dest: str | os.PathLike[str] | IO[str]) -> None:
        """Write the CSV to a path (all or nothing: see `atomic_write`) or an open text file."""
        if isinstance(dest, str | os.PathLike):
            with atomic_write(dest, newline="") as f:
                self._write_csv(f)
        else:
            self._write_csv(dest)

    def _write_csv(self, f: IO[str]) -> None:
        if self.device is not None:
            f.write(device_comment(self.device) + "\n")
        rows = self.to_rows()
        split_otherwise = any(t.axis is not BATCH for t in self._tables.values())
        sliced = any(SLAB_COLUMN in row for row in rows)
        columns = (
            *COLUMNS,
            *((AXIS_COLUMN,) if split_otherwise else ()),
            *((SLAB_COLUMN,) if sliced else ()),
        )
        # Where the slab column is written, whole runs say 0 in it.
        whole: dict[str, object] = {SLAB_COLUMN: 0} if sliced else {}
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            deterministic = "true" if row["deterministic"] else "false"
            writer.writerow({**whole, **row, "deterministic": deterministic})

    def to_csv(self) -> str:
        out = io.StringIO()
        self._write_csv(out)
        return out.getvalue()

    # -- JSON -------------------------------------------------------------------------------
    def to_document(self) -> plan_formats.TimingsDocument:
        """The ucudnn-timings document, as `to_json` writes it."""
        return {"format": JSON_FORMAT, "version": JSON_VERSION, "rows": self.to_rows()}

    def to_json(self) -> str:
        return json.dumps(self.to_document(), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<json>") -> TimingTables:
        """Tables from the document `to_json` writes; `source` names it in errors.

        Raises:
            ValueError: text that is not such a document, or rows as `read_csv` refuses them
                (the message names the line and field).
        """
        return tables_from_json(cls, text, source)
