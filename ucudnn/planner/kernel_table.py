"""A KernelTable: the measured candidates of one kernel of one layer, kept as rows of plain
values in one canonical order, and shared with the tables that hold the same rows."""

from __future__ import annotations

import bisect
import collections
import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import SupportsIndex

from ucudnn.core.problem import check_kernel
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner.candidate import (
    ROW_DETERMINISTIC,
    ROW_SLAB,
    ROW_TIME,
    Candidate,
    Row,
    row_slot,
    row_workspace_speed_key,
)
from ucudnn.planner.values import check_batch, layer_name

KernelId = tuple[str, str]  # (layer, kernel)
_ROW_SLAB = operator.itemgetter(ROW_SLAB)


class ContentKey(tuple[int, tuple[Row, ...]]):
    """A table's batch and its candidates' values (see KernelTable.content_key): a tuple whose
    hash is worked out once, as plans look tables up by content again and again, and a tuple
    of 1e3 rows is hashed anew each time."""

    def __init__(self, _: object) -> None:
        self._hash = tuple.__hash__(self)

    def __hash__(self) -> int:
        return self._hash


class _Content:
    """The content key of the tables that hold the same rows (a table and those renamed from
    it, until one changes), worked out by the first that is asked for it: one key object, so
    that looking one of them up finds the others' by identity, comparing no rows."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key: ContentKey | None = None


class KernelTable:
    """The measured candidates of one kernel of one layer at mini-batch `batch`, split along
    `axis`: `batch` is the layer's extent along it, and each candidate's `micro_batch` the size
    of a part (the batch's names, kept for the files and code that use them; plain integers,
    so that the planners' loops over sizes are the same for any axis).

    Each size's candidates are kept in one canonical order, by (algo, engine, math_type, slab),
    so two tables with the same rows are equal and iterate alike whatever order the rows came
    in (cuDNN's Find order when measured, the cache's order when read back).

    They are kept as their field values (`Row`s, as `Candidate.values()` gives them), and made
    Candidates when `candidates` is first read: a network's tables hold up to 1e5 rows, and
    planning reads most of them as values (`rows`, `content_key`). Each size's list of rows is
    replaced, never changed in place, so tables derived from this one share them. The rows of a
    size, and its records, are tuples: tuples of plain values, the garbage collector leaves
    them out of its passes (a plan over 1,800 tables went through 33,000 lists of them)."""

    def __init__(
        self,
        layer: str,
        kernel: str,
        batch: SupportsIndex,
        candidates: Iterable[Candidate] = (),
        axis: Axis = BATCH,
    ) -> None:
        self.layer = layer_name(layer)
        self.kernel = check_kernel(kernel)
        self.batch = check_batch(batch)
        self.axis = axis
        # Changed only through add(), set_checked_size() and share_size().
        self._rows: dict[int, tuple[Row, ...]] = {}
        self._candidates: dict[int, list[Candidate]] | None = None
        self._content: _Content | None = None  # made when shared or first keyed
        # See records: shared with the tables that share the rows, replaced when they change.
        self._records: dict[tuple[int, bool], tuple[Row, ...]] = {}
        for candidate in candidates:
            self.add(candidate)

    @property
    def kernel_id(self) -> KernelId:
        return (self.layer, self.kernel)

    @property
    def candidates(self) -> dict[int, list[Candidate]]:
        """Each measured size's candidates, in canonical order; to read, not to change (a table
        changes through `add`)."""
        if self._candidates is None:
            self._candidates = {
                b: list(map(Candidate.of_row, rows)) for b, rows in self._rows.items()
            }
        return self._candidates

    def rows(self) -> Mapping[int, Sequence[Row]]:
        """Each measured size's candidates as field values, in canonical order; to read."""
        return self._rows

    def records(self, micro_batch: int, deterministic_only: bool) -> tuple[Row, ...]:
        """The rows at `micro_batch` (deterministic ones only, if asked) that are faster than
        every one that needs less workspace, or as much and comes first in speed order, in
        (workspace, speed) order: those within a limit are the fastest there, and the last of
        them within it is the fastest of all. Worked out once for the tables that share the
        rows (a tune plans every batch size from the same rows: `at_batch`); to read."""
        key = (micro_batch, deterministic_only)
        if (found := self._records.get(key)) is None:
            kept = []
            rows: Sequence[Row] = self._rows.get(micro_batch, ())
            if deterministic_only:
                rows = [r for r in rows if r[ROW_DETERMINISTIC]]
            fastest = math.inf
            for row in sorted(rows, key=row_workspace_speed_key):
                if row[ROW_TIME] < fastest:
                    kept.append(row)
                    fastest = row[ROW_TIME]
            found = self._records[key] = tuple(kept)
        return found

    def _changed(self) -> None:
        self._candidates = None
        self._content = None
        self._records = {}

    def add(self, c: Candidate) -> None:
        if not isinstance(c, Candidate):
            raise TypeError(f"a kernel table holds Candidates, got {c!r}")
        if c.micro_batch > self.batch:
            raise ValueError(f"micro_batch {c.micro_batch} is larger than batch {self.batch}")
        at_size = list(self._rows.get(c.micro_batch, ()))
        index = bisect.bisect_left(at_size, c.slot(), key=row_slot)
        if index < len(at_size) and row_slot(at_size[index]) == c.slot():
            slab = f", slab {c.slab}" if c.slab else ""
            raise ValueError(
                f"duplicate candidate: micro_batch {c.micro_batch}, algo {c.name}, "
                f"math_type {c.math_type}{slab} is already in {self.layer}/{self.kernel}"
            )
        at_size.insert(index, c.values())  # type: ignore[arg-type]
        self._rows[c.micro_batch] = tuple(at_size)
        self._changed()

    def set_checked_size(self, micro_batch: int, rows: list[Row]) -> None:
        """The candidates at `micro_batch`, a size not yet here and at most this table's
        batch: `rows`, each the checked field values of one (as `Candidate.of_row` takes
        them), put in the order `add` keeps. A ValueError (that does not say which) if two share
        a slot."""
        slots = list(map(row_slot, rows))
        # Rows mostly come in order (a model makes them so): then only their slots are compared.
        if any(map(operator.ge, slots, itertools.islice(slots, 1, None))):
            rows = sorted(rows, key=row_slot)
            slots.sort()
            if any(map(operator.eq, slots, itertools.islice(slots, 1, None))):
                raise ValueError(f"duplicate candidates in {self.layer}/{self.kernel}")
        self._rows[micro_batch] = tuple(rows)
        self._changed()

    def share_size(self, micro_batch: int, twin: KernelTable) -> None:
        """The candidates at `micro_batch`, a size not yet here, those of `twin` there (a table
        of the same kernel at the same batch, read with the same rows): shared, not checked or
        ordered again."""
        self._rows[micro_batch] = twin._rows[micro_batch]
        self._changed()

    def micro_batches(self) -> list[int]:
        return sorted(self._rows)

    def at_batch(self, batch: SupportsIndex) -> KernelTable:
        """The table of this kernel at a smaller mini-batch `batch`, from the rows measured at
        micro-batches up to it: a run on b samples costs the same whatever mini-batch it is a
        slice of. It has the undivided run only if `batch` itself was measured."""
        batch = check_batch(batch)
        if batch > self.batch:
            raise ValueError(
                f"{self.layer}/{self.kernel} was measured at batch {self.batch}; its table "
                f"says nothing about batch {batch}"
            )
        table = KernelTable(self.layer, self.kernel, batch, axis=self.axis)
        table._rows = {b: rows for b, rows in self._rows.items() if b <= batch}
        if self._candidates is not None:  # made already: share them, rather than make more
            table._candidates = {b: found for b, found in self._candidates.items() if b <= batch}
        table._records = self._records
        return table

    def whole_volume(self) -> KernelTable:
        """The table of this kernel's whole runs (slab 0) at its batch alone: what its
        undivided baseline is chosen from. This table itself where no run there is cut into
        slabs, as in every table without slab rows."""
        rows = self._rows.get(self.batch, ())
        if not any(map(_ROW_SLAB, rows)):
            return self
        table = KernelTable(self.layer, self.kernel, self.batch, axis=self.axis)
        whole = tuple(row for row in rows if not row[ROW_SLAB])
        table._rows = {self.batch: whole} if whole else {}
        return table

    def renamed(self, layer: str) -> KernelTable:
        """This table's rows as another layer's (a network repeats its blocks): they are not
        checked or ordered again, and the content key is worked out once for both, when first
        asked for."""
        table = KernelTable(layer, self.kernel, self.batch, axis=self.axis)
        table._share_rows_of(self)
        return table

    def _share_rows_of(self, twin: KernelTable) -> None:
        """Hold `twin`'s rows, its Candidates if made and its content from now on, until one
        of the two changes."""
        self._rows, self._candidates = dict(twin._rows), twin._candidates
        self._content = twin.shared_content()
        self._records = twin._records

    def __iter__(self) -> Iterator[Candidate]:
        candidates = self.candidates
        for b in self.micro_batches():
            yield from candidates[b]

    def shared_content(self) -> _Content:
        """The same object for tables known to hold the same rows without comparing them: a
        table, those renamed from it (until one changes), and equal tables read from one
        file. Tables that hold the same rows may still give different objects: a plan that
        solves once per object, not per content key, solves them each, and hashes no rows."""
        if self._content is None:
            self._content = _Content()
        return self._content

    def content_key(self) -> ContentKey:
        """Equal for tables with the same batch and candidates, whatever layer they are of.
        Kept until a candidate is added: every plan of the tables asks for it again."""
        content = self._content
        if content is not None and content.key is not None:  # asked for again and again
            return content.key
        content = self.shared_content()
        rows = itertools.chain.from_iterable(map(self._rows.__getitem__, sorted(self._rows)))
        content.key = ContentKey((self.batch, tuple(rows)))
        return content.key

    def check_complete(self) -> None:
        if not self._rows.get(self.batch):
            raise ValueError(
                f"{self.layer}/{self.kernel} has no rows at micro_batch == batch ({self.batch}); "
                "every table needs the undivided run"
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelTable):
            return NotImplemented
        return (self.kernel_id, self.batch, self.axis, self._rows) == (
            other.kernel_id,
            other.batch,
            other.axis,
            other._rows,
        )

    def __repr__(self) -> str:
        count = sum(map(len, self._rows.values()))
        axis = "" if self.axis is BATCH else f", axis={self.axis.name}"
        return (
            f"KernelTable({self.layer!r}, {self.kernel!r}, batch={self.batch}{axis}, {count} rows)"
        )


def share_equal_rows(tables: Iterable[KernelTable]) -> None:
    """Make each of `tables` that holds the same rows as an earlier one share them and its
    content key, as if renamed from it: a network repeats its blocks, and a file its tables
    (62k rows of ResNet-50's engines are 26k distinct), so that plans tell them apart at no
    cost (see `KernelTable.shared_content`). In a CSV's rows each distinct cell text is one
    value object, so there comparing equal tables compares no values."""
    firsts: dict[tuple[object, ...], list[KernelTable]] = collections.defaultdict(list)
    for table in tables:
        rows = table._rows
        alike = firsts[
            table.kernel, table.batch, table.axis, *((b, len(r)) for b, r in rows.items())
        ]
        twin = next((t for t in alike if t._rows == rows), None)
        if twin is None:
            alike.append(table)
        else:
            table._share_rows_of(twin)
