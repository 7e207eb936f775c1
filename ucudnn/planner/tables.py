"""Benchmark tables: measured candidates per kernel, and the schedules built from them.

Interchange format
------------------
A timings CSV has one row per measured candidate, with the header (one line, optional columns
in brackets)

    layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes
    [,math_type][,deterministic][,engine]

- ``layer``: the layer's name: non-empty text without control characters (NUL, newline, ...)
  that does not start or end with white space.
- ``kernel``: ``forward``, ``backward_data`` or ``backward_filter``.
- ``batch``: the layer's mini-batch N (one value per layer and kernel), 1 <= N <= 2**31 - 1
  (cuDNN's dimensions are 32-bit).
- ``micro_batch``: the micro-batch b the row was measured at, 1 <= b <= N.
- ``algo``: the cuDNN algorithm (enum value of the legacy API for that kernel), or the global
  index of a graph-API engine (see ``engine``), an integer from 0 to 2**31 - 1.
- ``time_ms``: time of one run at b, in milliseconds, from 0 to 1e9.
- ``workspace_bytes``: exact workspace the run needs, in bytes, an integer from 0 to 2**50.
- ``math_type`` (optional, default ``default``): ``default``, ``tensor_op``,
  ``tensor_op_allow_conversion`` or ``fma``.
- ``deterministic`` (optional, default false): a yes/no word as settings take it: ``true``/
  ``false``, ``1``/``0``, ``yes``/``no`` or ``on``/``off``, in any letter case.
- ``engine`` (optional, default empty): empty for a legacy algorithm; for a cuDNN graph-API
  engine configuration its tag, ``eng<index>`` then ``_k<knob type>=<value>`` per knob
  (``eng62_k2=0_k13=1_k25=1``, values may be negative), whose index must equal ``algo``.
  Knobs may come in any order; tables keep the tag with knobs sorted by type.

Integers are plain decimal digits, no more of them (leading zeros aside) than the column's
maximum has; each column appears once in the header. Every (layer, kernel) must have rows at
micro_batch == batch, so a table always knows what the undivided run costs. A candidate
(micro_batch, algo, engine, math_type) appears once per table. Errors name the file, the line
and the column, and show a long cell cut short. The same rows also travel as JSON (version 1
with or without ``engine``: the field is optional):
``{"format": "ucudnn-timings", "version": 1, "rows": [{column: value, ...}, ...]}``.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import csv
import dataclasses
import functools
import io
import itertools
import json
import math
import numbers
import operator
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Final, SupportsIndex

from ucudnn.core.algorithms import check_legacy_algo
from ucudnn.core.checks import integer, parse_bool, shown
from ucudnn.core.engines import canonical_tag
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import MATH_TYPES, MAX_DIM, check_kernel
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.documents import line_of, read_document
from ucudnn.planner.files import (
    CsvRecords,
    FieldError,
    Source,
    atomic_write,
    field_errors,
    located_error,
)
from ucudnn.planner.provenance import device_comment, device_of_comments

KernelId = tuple[str, str]
# A candidate's field values, in order (Candidate.values()), and where planners find some.
Row = tuple[int, int, float, int, str, bool, str]
ROW_SIZE: Final = 0
ROW_TIME: Final = 2
ROW_WORKSPACE: Final = 3
ROW_DETERMINISTIC: Final = 5


class ContentKey(tuple[int, tuple[Row, ...]]):
    """A table's batch and its candidates' values (see KernelTable.content_key): a tuple whose
    hash is worked out once, as plans look tables up by content again and again, and a tuple
    of 1e3 rows is hashed anew each time."""

    def __init__(self, _: object) -> None:
        self._hash = tuple.__hash__(self)

    def __hash__(self) -> int:
        return self._hash


REQUIRED_COLUMNS = ("layer", "kernel", "batch", "micro_batch", "algo", "time_ms", "workspace_bytes")
OPTIONAL_COLUMNS = ("math_type", "deterministic", "engine")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

JSON_FORMAT = "ucudnn-timings"
JSON_VERSION = 1

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
# One way to match each text: a long cell that is no number fails in linear time.
_UNSIGNED_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
_NUMBER_TEXT = re.compile(rf"[+-]?{_UNSIGNED_NUMBER}")

# Beyond these a row is a mistake, not a measurement (a convolution of 11 days, a workspace of
# a pebibyte), and the numbers would leave the range where the WD solver stays exact.
MAX_TIME_MS = 1e9
MAX_WORKSPACE_BYTES = 2**50

# The largest value of each integer column: the checks refuse more, and the readers refuse a
# cell with more digits than it has before converting the cell.
_MAXIMUM = {
    "batch": MAX_DIM, "micro_batch": MAX_DIM, "algo": MAX_DIM,
    "workspace_bytes": MAX_WORKSPACE_BYTES,
}  # fmt: skip

# Characters that would break a name across lines or hide in it: C0/C1 controls (NUL, tab,
# newline, ...) and the Unicode line and paragraph separators.
_UNPRINTABLE = ("Cc", "Zl", "Zp")


def layer_name(value: object, what: str = "layer") -> str:
    """`value` if it can name a layer: text on one line, without control characters, that
    neither starts nor ends with a space (CSV readers strip cells, so it would not come back)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be text, got {shown(value)}")
    if not value:
        raise ValueError(f"{what} must be a non-empty name, got {value!r}")
    bad = next((c for c in value if unicodedata.category(c) in _UNPRINTABLE), None)
    if bad is not None:
        raise ValueError(f"{what} {shown(value)} contains the control character {bad!r}")
    if value != value.strip():
        raise ValueError(f"{what} {shown(value)} starts or ends with white space")
    return value


def check_batch(value: object) -> int:
    """A mini-batch N as cuDNN takes it: an integer from 1 to 2**31 - 1."""
    return integer(value, "batch", minimum=1, maximum=_MAXIMUM["batch"])


def _time_ms(value: object) -> float:
    # A float is asked first: readers check 1e4 of them, and numbers.Real's check is slow.
    if type(value) is not float and (
        isinstance(value, bool) or not isinstance(value, numbers.Real)
    ):
        raise TypeError(f"time_ms must be a number, got {shown(value)}")
    # -0.0 is 0: a zero time must read as zero everywhere (speedups, JSON).
    time_ms = float(value) + 0.0
    if not 0 <= time_ms <= MAX_TIME_MS:
        raise ValueError(f"time_ms must be a number between 0 and {MAX_TIME_MS:g}, got {time_ms}")
    return time_ms


def _math_type(value: object) -> str:
    if not isinstance(value, str) or value not in MATH_TYPES:
        raise ValueError(f"math_type {shown(value)} is not one of {', '.join(MATH_TYPES)}")
    return value


# The longest tag of the engine configurations recorded in tests/data and the simulator's data
# is 57 characters (8 knobs); cuDNN 9 has about 40 knob types, each once per tag. Past this a
# tag is no configuration but a pasted mistake, which would fill messages and plan reports.
MAX_ENGINE_TAG_LENGTH = 512


def _engine(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"engine must be text (an engine tag, or empty), got {shown(value)}")
    if len(value) > MAX_ENGINE_TAG_LENGTH:
        raise ValueError(
            f"engine tag {shown(value)} is longer than {MAX_ENGINE_TAG_LENGTH} characters, "
            "the most an engine configuration's tag has"
        )
    return _canonical_tag(value) if value else ""


# Tables repeat a few thousand tags over tens of thousands of rows.
_canonical_tag = functools.lru_cache(maxsize=4096)(canonical_tag)


def flag(value: object, name: str) -> bool:
    """`value` as a bool: True or False (numpy's too, as its comparisons give them), or 1 or 0
    as C enums and numpy integers give them; other numbers are refused."""
    # A numpy bool exists only once numpy is loaded, and planning alone does not load it.
    numpy = sys.modules.get("numpy")
    if (numpy is not None and isinstance(value, numpy.bool_)) or (
        isinstance(value, numbers.Integral) and value in (0, 1)
    ):
        return bool(value)
    raise TypeError(f"{name} must be true or false, got {shown(value)}")


# The check of each Candidate field, shared by the constructor and the readers (which name the
# column of a bad value).
_CANDIDATE_CHECKS: dict[str, Callable[[object], object]] = {
    "micro_batch": functools.partial(
        integer, name="micro_batch", minimum=1, maximum=_MAXIMUM["micro_batch"]
    ),
    "algo": functools.partial(integer, name="algo", minimum=0, maximum=_MAXIMUM["algo"]),
    "time_ms": _time_ms,
    "workspace_bytes": functools.partial(
        integer, name="workspace_bytes", minimum=0, maximum=_MAXIMUM["workspace_bytes"]
    ),
    "math_type": _math_type,
    "deterministic": functools.partial(flag, name="deterministic"),
    "engine": _engine,
}


def _check_engine_index(engine: str, algo: int) -> None:
    """An engine candidate's algo is its engine index, which its canonical tag starts with."""
    if engine and engine.partition("_")[0] != f"eng{algo}":
        raise ValueError(
            f"engine {engine} is a configuration of engine {engine.partition('_')[0][3:]}, but "
            f"algo is {algo} (an engine candidate's algo is its engine index)"
        )


@dataclasses.dataclass(frozen=True, order=True)
class Candidate:
    """One measured way to run a kernel on `micro_batch` samples: a legacy cuDNN algorithm
    (`engine` empty, `algo` the cudnnConvolution*Algo_t value) or a graph-API engine
    configuration (`engine` its canonical tag, `algo` the engine's global index)."""

    micro_batch: int
    algo: int
    time_ms: float
    workspace_bytes: int
    math_type: str = "default"
    deterministic: bool = False
    engine: str = ""

    def __post_init__(self) -> None:
        for name, check in _CANDIDATE_CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        _check_engine_index(self.engine, self.algo)
        values = tuple(getattr(self, f.name) for f in dataclasses.fields(self))
        object.__setattr__(self, "_values", values)

    @classmethod
    def of_row(cls, values: Row) -> Candidate:
        """The candidate of a table's row (`KernelTable.rows`): field values in order, each
        already as its check returns it and checked together (`_check_engine_index`), as a
        table's rows are. Readers and planners make 1e5 of them."""
        candidate = object.__new__(cls)
        candidate.__dict__.update(zip(_CANDIDATE_KEYS, (*values, values), strict=True))
        return candidate

    def values(self) -> tuple[object, ...]:
        """The fields' values, in order: plain values, which compare and hash faster than
        candidates do (planning keys tables of hundreds of candidates by their content)."""
        return self.__dict__["_values"]  # type: ignore[no-any-return]

    def speed_key(self) -> tuple[float, int, int, str, str]:
        """Order for picking among candidates: faster, then smaller, then lower algo."""
        return (self.time_ms, self.workspace_bytes, self.algo, self.engine, self.math_type)

    def slot(self) -> tuple[int, str, str]:
        """What makes a candidate distinct within its micro-batch size: algorithm or engine
        configuration, math type."""
        return (self.algo, self.engine, self.math_type)

    @property
    def name(self) -> str:
        """The algorithm number, or the engine configuration's tag."""
        return self.engine or str(self.algo)


_CANDIDATE_FIELDS = tuple(f.name for f in dataclasses.fields(Candidate))
_CANDIDATE_KEYS = (*_CANDIDATE_FIELDS, "_values")  # of_row's: the fields, then the row
# Candidate.slot() of a candidate's field values.
_SLOT_FIELDS = operator.itemgetter(*map(_CANDIDATE_FIELDS.index, ("algo", "engine", "math_type")))
_SPEED_FIELDS = ("time_ms", "workspace_bytes", "algo", "engine", "math_type")
# Candidate.speed_key() of a candidate's field values, and the order in which the desirable
# sets offer a size's candidates: workspace, then speed.
row_speed_key = operator.itemgetter(*map(_CANDIDATE_FIELDS.index, _SPEED_FIELDS))
row_workspace_speed_key = operator.itemgetter(
    *map(_CANDIDATE_FIELDS.index, ("workspace_bytes", *_SPEED_FIELDS))
)


_TIME: Callable[[Candidate], float] = operator.attrgetter("time_ms")
_WORKSPACE: Callable[[Candidate], int] = operator.attrgetter("workspace_bytes")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Micro-batches run one after another on one stream, in this order, sharing one buffer:
    the time adds up and the workspace is the largest part's."""

    parts: tuple[Candidate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if not self.parts:
            raise ValueError("a schedule needs at least one part")
        if not all(isinstance(p, Candidate) for p in self.parts):
            raise TypeError(f"a schedule's parts are Candidates, got {self.parts!r}")

    @classmethod
    def of_parts(cls, parts: tuple[Candidate, ...]) -> Schedule:
        """The schedule of `parts`, a non-empty tuple of Candidates, not checked again."""
        return cls._made(parts, math.fsum(map(_TIME, parts)), max(map(_WORKSPACE, parts)))

    @classmethod
    def of_runs(cls, runs: list[tuple[int, Candidate]]) -> Schedule:
        """The schedule of `count` parts of each `part` in turn, (count, part) in `runs` (a
        non-empty list), not checked again: the planners make one per front point, of up to
        256 parts each, mostly one part repeated. The time is the fsum of the runs' repeated
        times, which rounds the exact sum once, as of the parts themselves."""
        if len(runs) == 1:  # most are
            count, part = runs[0]
            time_ms = math.fsum((part.time_ms,) * count)
            return cls._made((part,) * count, time_ms, part.workspace_bytes)
        parts: list[Candidate] = []
        times: list[float] = []
        workspace = 0
        for count, part in runs:
            parts += [part] * count
            times += [part.time_ms] * count
            workspace = max(workspace, part.workspace_bytes)
        return cls._made(tuple(parts), math.fsum(times), workspace)

    @classmethod
    def _made(cls, parts: tuple[Candidate, ...], time_ms: float, workspace_bytes: int) -> Schedule:
        # The planners read the time and workspace of each schedule they make: set here, as
        # the cached properties would (without the lock that 3.11's take on a first read).
        # Set one by one, they stay in the object (its __dict__ would be one more object for
        # the garbage collector to go through).
        schedule = object.__new__(cls)
        set_field = object.__setattr__
        set_field(schedule, "parts", parts)
        set_field(schedule, "time_ms", time_ms)
        set_field(schedule, "workspace_bytes", workspace_bytes)
        return schedule

    # Cached: planning reads them over and over, and a schedule never changes.
    @functools.cached_property
    def time_ms(self) -> float:
        return math.fsum(map(_TIME, self.parts))

    @functools.cached_property
    def workspace_bytes(self) -> int:
        return max(map(_WORKSPACE, self.parts))

    @functools.cached_property
    def batch(self) -> int:
        return sum(p.micro_batch for p in self.parts)

    @property
    def deterministic(self) -> bool:
        return all(p.deterministic for p in self.parts)

    def _runs(self) -> list[tuple[int, Candidate]]:
        """Consecutive equal parts as (count, part)."""
        return [(len(list(run)), part) for part, run in itertools.groupby(self.parts)]

    def micro_batches_text(self) -> str:
        """Runs of equal parts as count x size: "2x128", "128+2x64", "3x64+32"."""
        return "+".join(
            f"{count}x{part.micro_batch}" if count > 1 else str(part.micro_batch)
            for count, part in self._runs()
        )

    def algos_text(self) -> str:
        """The algorithm (or engine configuration tag) of each run of `micro_batches_text`
        ("1" when they all agree), with a non-default math type."""
        names = [
            p.name if p.math_type == "default" else f"{p.name}/{p.math_type}"
            for _, p in self._runs()
        ]
        return names[0] if len(set(names)) == 1 else ",".join(names)


class _Content:
    """The content key of the tables that hold the same rows (a table and those renamed from
    it, until one changes), worked out by the first that is asked for it: one key object, so
    that looking one of them up finds the others' by identity, comparing no rows."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key: ContentKey | None = None


class KernelTable:
    """The measured candidates of one kernel of one layer at mini-batch `batch`.

    Each size's candidates are kept in one canonical order, by (algo, engine, math_type), so two
    tables with the same rows are equal and iterate alike whatever order the rows came in
    (cuDNN's Find order when measured, the cache's order when read back).

    They are kept as their field values (`Row`s, as `Candidate.values()` gives them), and made
    Candidates when `candidates` is first read: a network's tables hold up to 1e5 rows, and
    planning reads most of them as values (`rows`, `content_key`). Each size's list of rows is
    replaced, never changed in place, so tables derived from this one share them. The rows of a
    size, and its records, are tuples: tuples of plain values, the garbage collector leaves
    them out of its passes (a plan over 1,800 tables went through 33,000 lists of them)."""

    def __init__(
        self, layer: str, kernel: str, batch: SupportsIndex, candidates: Iterable[Candidate] = ()
    ) -> None:
        self.layer = layer_name(layer)
        self.kernel = check_kernel(kernel)
        self.batch = check_batch(batch)
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
        index = bisect.bisect_left(at_size, c.slot(), key=_SLOT_FIELDS)
        if index < len(at_size) and _SLOT_FIELDS(at_size[index]) == c.slot():
            raise ValueError(
                f"duplicate candidate: micro_batch {c.micro_batch}, algo {c.name}, "
                f"math_type {c.math_type} is already in {self.layer}/{self.kernel}"
            )
        at_size.insert(index, c.values())  # type: ignore[arg-type]
        self._rows[c.micro_batch] = tuple(at_size)
        self._changed()

    def set_checked_size(self, micro_batch: int, rows: list[Row]) -> None:
        """The candidates at `micro_batch`, a size not yet here and at most this table's
        batch: `rows`, each the checked field values of one (as `Candidate.of_row` takes
        them), put in the order `add` keeps. A ValueError (that does not say which) if two share
        a slot."""
        slots = list(map(_SLOT_FIELDS, rows))
        # Rows mostly come in order (a model makes them so): then only their slots are compared.
        if any(map(operator.ge, slots, itertools.islice(slots, 1, None))):
            rows = sorted(rows, key=_SLOT_FIELDS)
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
        table = KernelTable(self.layer, self.kernel, batch)
        table._rows = {b: rows for b, rows in self._rows.items() if b <= batch}
        if self._candidates is not None:  # made already: share them, rather than make more
            table._candidates = {b: found for b, found in self._candidates.items() if b <= batch}
        table._records = self._records
        return table

    def renamed(self, layer: str) -> KernelTable:
        """This table's rows as another layer's (a network repeats its blocks): they are not
        checked or ordered again, and the content key is worked out once for both, when first
        asked for."""
        table = KernelTable(layer, self.kernel, self.batch)
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
        return (self.kernel_id, self.batch, self._rows) == (
            other.kernel_id,
            other.batch,
            other._rows,
        )

    def __repr__(self) -> str:
        count = sum(map(len, self._rows.values()))
        return f"KernelTable({self.layer!r}, {self.kernel!r}, batch={self.batch}, {count} rows)"


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

    def setdefault(self, layer: str, kernel: str, batch: SupportsIndex) -> KernelTable:
        """The table of (layer, kernel), created if new; its batch must agree."""
        batch = check_batch(batch)
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

        def where(n: int, row: Mapping[str, object]) -> tuple[str, ...]:
            return (line_of(row), f"row {n}")

        numbered = list(enumerate(rows, 1))
        for n, row in numbered:
            try:
                _check_columns(row.keys())
            except ValueError as exc:
                raise located_error(exc, source, *where(n, row)) from None
        return cls._from_records(numbered, source, where)

    @classmethod
    def _from_records(
        cls,
        records: Iterable[tuple[int, Mapping[str, object]]],
        source: str,
        where: Callable[[int, Mapping[str, object]], tuple[str, ...]],
    ) -> TimingTables:
        """Tables from numbered rows; `where` turns a number and row into the places that
        locate it in `source` ("line 3"), when an error needs them."""
        tables = cls()
        first_seen: dict[KernelId, tuple[int, Mapping[str, object]]] = {}
        for n, row in records:
            try:
                layer, kernel, batch, candidate = _parse_row(row)
                _table_of(tables, layer, kernel, batch).add(candidate)
            except (TypeError, ValueError) as exc:
                raise located_error(exc, source, *where(n, row)) from None
            first_seen.setdefault((layer, kernel), (n, row))
        for kernel_id, table in tables.items():
            try:
                table.check_complete()
            except ValueError as exc:
                *before, last = where(*first_seen[kernel_id])
                raise located_error(exc, source, *before, f"{last} (its first row)") from None
        return _sharing_equal_tables(tables)

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
                "engine": c.engine,
            }
            for table in self._tables.values()
            for c in table
        ]

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
        records = CsvRecords(source, "<stream>", comments=True)
        try:
            device = device_of_comments(records.comments)
            _check_columns(records.header)
        except FieldError as exc:
            raise located_error(exc, records.name) from None
        except ValueError as exc:
            raise located_error(exc, records.name, f"line {records.header_line}") from None
        tables = cls._read_records(records)
        tables.device = device
        return tables

    @classmethod
    def _read_records(cls, records: CsvRecords) -> TimingTables:
        columns = records.columns()
        if columns is not None:
            # The fast way checks what the rows hold, not where; the first error of a file
            # that it refuses is then found row by row, and located.
            with contextlib.suppress(TypeError, ValueError):
                return _sharing_equal_tables(_tables_from_columns(columns, len(records)))
        return cls._from_records(records, records.name, lambda line, _: (f"line {line}",))

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
        document = {"format": JSON_FORMAT, "version": JSON_VERSION, "rows": self.to_rows()}
        return json.dumps(document, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<json>") -> TimingTables:
        """Tables from the document `to_json` writes; `source` names it in errors.

        Raises:
            ValueError: text that is not such a document, or rows as `read_csv` refuses them
                (the message names the line and field).
        """
        data = read_document(text, JSON_FORMAT, JSON_VERSION, source)
        rows = data.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise located_error(
                FieldError("field 'rows'", "must be a list of objects"), source, line_of(data)
            )
        return cls.from_rows(rows, source)


def _table_of(tables: TimingTables, layer: str, kernel: str, batch: int) -> KernelTable:
    with field_errors("column 'batch'"):  # the batch may disagree with the layer's earlier rows
        return tables.setdefault(layer, kernel, batch)


def _check_columns(columns: Iterable[str]) -> None:
    columns = list(columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ValueError(f"missing column(s) {', '.join(missing)}")
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise ValueError(
            f"unknown column(s) {', '.join(map(shown, unknown))}; "
            f"known columns are {', '.join(COLUMNS)}"
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
        for column, maximum in _MAXIMUM.items()
    },
    "time_ms": _number_text,
    "deterministic": parse_bool,
}
_CHECKS: dict[str, Callable[[object], object]] = {
    "layer": layer_name,
    "kernel": check_kernel,  # type: ignore[dict-item]
    "batch": check_batch,
    **_CANDIDATE_CHECKS,
}
_DEFAULTS: dict[str, object] = {"math_type": "default", "deterministic": False, "engine": ""}


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
_REPEATING = frozenset(COLUMNS) - {"time_ms", "workspace_bytes"}
_repeated_text_cell = functools.lru_cache(maxsize=8192)(_text_cell)


def _sharing_equal_tables(tables: TimingTables) -> TimingTables:
    """`tables`, where each that holds the same rows as an earlier one shares them and its
    content key, as if renamed from it: a network repeats its blocks, and a file its tables
    (62k rows of ResNet-50's engines are 26k distinct), so that plans tell them apart at no
    cost (see `KernelTable.shared_content`). In a CSV's rows each distinct cell text is one
    value object, so there comparing equal tables compares no values."""
    firsts: dict[tuple[object, ...], list[KernelTable]] = collections.defaultdict(list)
    for _, table in tables.items():
        rows = table._rows
        alike = firsts[table.kernel, table.batch, *((b, len(r)) for b, r in rows.items())]
        twin = next((t for t in alike if t._rows == rows), None)
        if twin is None:
            alike.append(table)
        else:
            table._share_rows_of(twin)
    return tables


def _tables_from_columns(columns: Mapping[str, list[str]], count: int) -> TimingTables:
    """The tables of `count` rows given column by column as text, checked as `_parse_row`
    checks each row, but each distinct cell text once, the checks across columns once per
    distinct combination and a size's rows once per distinct list of them; a TypeError or
    ValueError, unlocated, for anything `_parse_row` refuses."""
    values = {column: _column_values(column, columns.get(column), count) for column in COLUMNS}
    kernels = values["kernel"]
    for kernel, algo, engine in set(zip(kernels, values["algo"], values["engine"], strict=True)):
        _check_engine_index(engine, algo)  # type: ignore[arg-type]
        if not engine:
            check_legacy_algo(kernel, algo)  # type: ignore[arg-type]
    # Each size's rows of each table, as Candidate field values.
    sizes: dict[tuple[object, ...], list[tuple[object, ...]]] = collections.defaultdict(list)
    keys = zip(values["layer"], kernels, values["batch"], values["micro_batch"], strict=True)
    fields = zip(*(values[name] for name in _CANDIDATE_FIELDS), strict=True)
    for key, row in zip(keys, fields, strict=True):
        sizes[key].append(row)
    tables = TimingTables()
    # A file repeats its tables, as a network its blocks: the rows of a size are checked and
    # ordered once, and the tables read with the same rows there share them.
    first_read: dict[tuple[object, ...], list[tuple[list[Row], KernelTable]]]
    first_read = collections.defaultdict(list)
    for (layer, kernel, batch, micro_batch), found in sizes.items():
        if micro_batch > batch:  # type: ignore[operator]
            raise ValueError("a micro_batch is larger than its batch")
        # Its rows' batch conflicts with that of the rows before them.
        table = tables.setdefault(layer, kernel, batch)  # type: ignore[arg-type]
        alike = first_read[kernel, batch, micro_batch, len(found)]
        twin = next((t for rows, t in alike if rows == found), None)
        if twin is None:
            table.set_checked_size(micro_batch, found)  # type: ignore[arg-type]
            alike.append((found, table))  # type: ignore[arg-type]
        else:
            table.share_size(micro_batch, twin)  # type: ignore[arg-type]
    for _, table in tables.items():
        table.check_complete()
    return tables


def _column_values(column: str, texts: list[str] | None, count: int) -> list[object]:
    """The checked value of each cell of `column` (`count` of the default without a column)."""
    if texts is None:
        return [_DEFAULTS[column]] * count
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
        for column, maximum in _MAXIMUM.items()
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


def _parse_row(row: Mapping[str, object]) -> tuple[str, str, int, Candidate]:
    values: dict[str, object] = {}
    # One handler per row, not a field_errors block per cell: tables have 1e5 cells and more.
    try:
        for column in COLUMNS:
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
        candidate = Candidate(**{name: values[name] for name in _CANDIDATE_CHECKS})  # type: ignore[arg-type]
    if not candidate.engine:
        with field_errors("column 'algo'"):
            check_legacy_algo(values["kernel"], candidate.algo)  # type: ignore[arg-type]
    return values["layer"], values["kernel"], batch, candidate  # type: ignore[return-value]
