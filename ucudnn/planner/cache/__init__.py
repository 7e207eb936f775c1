"""SQLite cache of benchmark results, shared by every process of a user (or of a site).

A *measurement set* is everything measured for one kernel of one problem at one micro-batch on
one device/software stack by one kind of search: its key is the problem at the micro-batch
(`problem.with_batch(b).key()`, every field), the kernel, the micro-batch, every `DeviceFacts`
field and the source, so a different GPU, cuDNN or CUDA simply misses. The source names the
search and the candidate families it measured, e.g. "fast/v2/legacy+graph/A+FALLBACK"
(`ucudnn.runtime.benchmark.measurement_source`), so a process that measures other families, or by
another search, never takes a set as complete, and a changed search measures again. Sets of
older searches ("legacy", "graph/A+FALLBACK/v2": one family each) stay in the file, unused. A
measurement says whether its time is confirmed (timed in full) or a brief screen's. A set
holds one row per (algorithm, engine configuration, math type), including those that failed
(not supported, allocation failed, pruned), so failures are not retried; an empty set is still
a hit.

**What is ours.** A cache file carries ucudnn's mark, `APPLICATION_ID`, in SQLite's
`application_id` field of the 100-byte file header (readable even when later pages are
damaged), written in the same transaction that creates the tables. A missing path or an empty
(0-byte) file is a new cache and is created. A file with our mark is ours. Anything else is
foreign: another application_id, an unmarked SQLite database (application_id 0 with tables,
which includes caches of schema version 1), a file that is not SQLite at all. A foreign file is
refused with `CacheError` naming it, decided from its header without SQLite, before anything is
created beside it: it is never opened by SQLite (which could roll back its journal), written,
moved or rebuilt. A path that is not a regular file (a directory, /dev/null) cannot be used.

**Versions.** Our files at an older schema version are migrated (`MIGRATIONS`), each step in
one transaction, so a migration that fails leaves the file as it was. A file this ucudnn cannot
read is never changed, never rebuilt: a newer version, an older one with no migration path to
`SCHEMA_VERSION`, a version row that is not an integer, or tables without a version. The cache
is then not used (one CacheWarning naming the version found and the one expected, measurements
kept in memory) until its owner moves it aside or points UCUDNN_DATABASE elsewhere. Schema 3
added the engine configuration and notes of each measurement and the source of each set;
schema-2 files migrate to it with every row kept (legacy sets, engine "", no notes). Schema 4
added whether each time is confirmed; schema-3 rows keep their values, confirmed unknown.

**Corruption.** A file of ours that SQLite finds damaged (`PRAGMA quick_check` when connecting,
or SQLITE_CORRUPT/SQLITE_NOTADB from a lookup or store) is replaced once. The process that finds
it takes the lock exclusively and looks again: if the path still names the damaged file, it
moves it, with the `-journal` beside it (which belongs to it), to
`<name>.corrupt-<time>-<pid>`, creates a fresh cache and warns once, naming both paths; the
other processes that found the damage see a different file at the path and only reconnect. The
lookup or store that found the damage is retried once, so a measurement is not lost because the
damage was found mid-run. What the damaged file held is lost: it can be measured again.

**Concurrency.** Any number of processes and threads may use one cache at once; each process
(and each fork) must open its own `BenchmarkCache`. SQLite's busy timeout and `BEGIN IMMEDIATE`
serialise writers, and a store replaces a whole set in one transaction. Two lock files beside
the cache coordinate with a recovery (flock). `<path>.lock` is held shared by every connect,
lookup and store, and exclusively by a recovery. Under the shared lock, each operation first
checks that the path still names the file its connection has open (device and inode) and
reconnects if not, so no connection ever works on a file that was moved aside. `<path>.gate`
gives a recovery precedence: operations pass it on their way in, and a recovery holds it while
it waits, so it waits only for the operations in flight. Programs that do not take these locks
(the sqlite3 shell, ucudnn before schema version 2) must not write to a cache in use.

**Waits.** No wait is unbounded, so a stopped or hung process cannot hang the others. The lock
files, and the journal SQLite would open, must be regular files (a FIFO there blocks whoever
opens it; a symbolic link is not followed): anything else makes the cache unusable, naming it.
Locks are waited for `timeout` seconds (UCUDNN_CACHE_TIMEOUT, default BUSY_TIMEOUT_S; SQLite's
busy timeout too), then the error names the path and the holder (from /proc/locks). A lock file
held that long has a stuck holder, so the process stops using the file (one warning); an SQLite
transaction held that long fails only the operation that waited. `inspect_cache` waits
INSPECT_TIMEOUT_S.

**Why no WAL.** The file keeps SQLite's default rollback journal (`journal_mode=DELETE`).
SQLite finds a database's `-wal`, `-shm` and `-journal` files by the database's name, not by
the file. In WAL mode, closing the last connection to a file deletes the `-wal` of that name,
so a connection left open on a file moved aside destroys, when it closes, the write-ahead log
of the fresh file at the path, and no lock can stop a connection from being closed. A rollback
journal exists only during a write transaction, which the lock keeps off moved files, and
closing an idle connection touches no file. A rollback-journal file can also be read from a
read-only directory, where WAL needs its `-shm`. WAL's concurrent reading buys nothing here:
writes are rare, one per benchmarked problem size after seconds of GPU work.

**Read-only use.** A cache that this process cannot write (a site-wide file, a read-only
directory, lock files that cannot be created) is opened read-only and serves hits. The first
store then warns once, and new measurements are kept in memory and served to this process's
later lookups. `BenchmarkCache(path, read_only=True)` creates, migrates, recovers and writes
nothing, not even the lock files (it takes the locks only if they exist and can be read).
`inspect_cache` reports what is at a path without changing it. An interrupted write (a writer
killed mid-transaction leaves a hot `-journal`) must be rolled back before the file is read,
and only a process that can write there may: others read a private copy rolled back, in
memory (never the file as it is, which may mix the interrupted write with older pages), until
the owner's next use rolls the file back. One who cannot even read the journal is told what
the owner must do.

**Failures.** Only a foreign file raises. A cache that cannot be used at all (a path that cannot
be created or read, a schema version it cannot read, damage that cannot be set aside) gives one
CacheWarning and an in-memory cache. A failed lookup, or an unreadable row, is a warning and
a miss; a failed store is a warning, its results kept in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import fcntl
import logging
import numbers
import os
import pwd
import re
import shutil
import sqlite3
import stat
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ucudnn.core.checks import integer, parse_float, shown
from ucudnn.core.engines import parse_tag
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import MATH_TYPES, MAX_DIM, ConvProblem, check_kernel
from ucudnn.errors import CacheError, CacheWarning
from ucudnn.planner.config import database_from_env
from ucudnn.planner.tables import MAX_TIME_MS, MAX_WORKSPACE_BYTES, Candidate
from ucudnn.planner.units import format_size

# 2: the file carries APPLICATION_ID and a rollback journal. Version-1 files carry no mark, so
# they are foreign (refused), never migrated. 3: engine configurations (measurements' engine and
# notes, sets' source). 4: whether each time is confirmed (timed in full) or a screen's.
SCHEMA_VERSION = 4
APPLICATION_ID = int.from_bytes(b"uCDN", "big")  # 0x7543444e, in SQLite's file header
# How long a process waits for another's locks (the lock files' and SQLite's) before it gives
# up: UCUDNN_CACHE_TIMEOUT, else this; `inspect_cache` (`ucudnn info`) waits INSPECT_TIMEOUT_S.
BUSY_TIMEOUT_S = 30.0
INSPECT_TIMEOUT_S = 2.0
MAX_TIMEOUT_S = 3600.0
IN_MEMORY = ":memory:"
LEGACY = "legacy"  # the source of legacy algorithms' sets; graph-API searches: "graph/<id>"

logger = logging.getLogger(__name__)

# Each table's columns and constraints.
_TABLES = {
    "schema_version": "version INTEGER NOT NULL",
    "measurement_sets": """
        id INTEGER PRIMARY KEY,
        problem TEXT NOT NULL,
        kernel TEXT NOT NULL,
        micro_batch INTEGER NOT NULL CHECK (micro_batch >= 1),
        device_name TEXT NOT NULL,
        compute_capability TEXT NOT NULL,
        cudnn_version INTEGER NOT NULL,
        cuda_version INTEGER NOT NULL,
        source TEXT NOT NULL DEFAULT 'legacy' CHECK (source != ''),
        measured_at REAL NOT NULL,
        UNIQUE (problem, kernel, micro_batch, device_name, compute_capability,
                cudnn_version, cuda_version, source)
    """,
    "measurements": """
        set_id INTEGER NOT NULL REFERENCES measurement_sets (id) ON DELETE CASCADE,
        algo INTEGER NOT NULL CHECK (algo >= 0),
        engine TEXT NOT NULL DEFAULT '',
        math_type TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status != ''),
        median_ms REAL CHECK (median_ms >= 0),
        min_ms REAL CHECK (min_ms >= 0),
        max_ms REAL CHECK (max_ms >= 0),
        repeats INTEGER NOT NULL CHECK (repeats >= 0),
        workspace_bytes INTEGER CHECK (workspace_bytes >= 0),
        deterministic INTEGER NOT NULL CHECK (deterministic IN (0, 1)),
        notes TEXT NOT NULL DEFAULT '',
        confirmed INTEGER CHECK (confirmed IN (0, 1)),
        CHECK (status != 'ok' OR (median_ms IS NOT NULL AND workspace_bytes IS NOT NULL)),
        UNIQUE (set_id, algo, engine, math_type)
    """,
}
_KEY_COLUMNS = (
    "problem, kernel, micro_batch, device_name, compute_capability, cudnn_version, cuda_version, "
    "source"
)
_KEY_MATCHES = f"({_KEY_COLUMNS}) = ({', '.join('?' * len(_KEY_COLUMNS.split(',')))})"
_MEASUREMENT_COLUMNS = (
    "algo, status, median_ms, min_ms, max_ms, repeats, workspace_bytes, math_type, deterministic, "
    "engine, notes, confirmed"
)

# What a set's source and a note may be: the source goes into keys and messages, the notes are
# stored as one comma-separated text.
_SOURCE = re.compile(r"legacy|(graph|fast|exhaustive)/[!-~]+")  # printable ASCII, no spaces
_NOTE = re.compile(r"[A-Za-z0-9_]+")


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3 by copying: SQLite cannot change a UNIQUE constraint in place. The old
    tables are renamed first (the old measurements' reference follows its renamed table), so
    the new ones are made from _TABLES and dropping the old ones cascades into nothing new.
    Copied sets are legacy ones; copied measurements have no engine and no notes."""
    columns = {
        "measurement_sets": "id, problem, kernel, micro_batch, device_name, compute_capability, "
        "cudnn_version, cuda_version, measured_at",
        "measurements": "set_id, algo, math_type, status, median_ms, min_ms, max_ms, repeats, "
        "workspace_bytes, deterministic",
    }
    for table in columns:
        conn.execute(f"ALTER TABLE {table} RENAME TO schema_2_{table}")
    for table, names in columns.items():  # sets first: measurements refer to them
        _create_table(conn, table)
        conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM schema_2_{table}")
    for table in reversed(columns):
        conn.execute(f"DROP TABLE schema_2_{table}")


# MIGRATIONS[v] upgrades one of our files from schema v to v + 1 inside the caller's
# transaction. A file at a version with no path to SCHEMA_VERSION is left as it is.
def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4 in place: every row is kept, its `confirmed` unknown (NULL). A file that
    came from schema 2 has the column already: that step makes its tables from `_TABLES`."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(measurements)")}
    if "confirmed" not in columns:
        conn.execute(
            "ALTER TABLE measurements ADD COLUMN confirmed INTEGER CHECK (confirmed IN (0, 1))"
        )


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
}

# The SQLite file header: https://www.sqlite.org/fileformat.html#the_database_header
_HEADER_BYTES = 100
_SQLITE_MAGIC = b"SQLite format 3\x00"
_APPLICATION_ID_AT = slice(68, 72)

# Primary result codes that mean "this file cannot be written by this process" rather than "this
# write went wrong": SQLITE_PERM, SQLITE_READONLY (and its extended codes), SQLITE_CANTOPEN (no
# journal in a read-only directory), SQLITE_AUTH.
_CANNOT_WRITE_CODES = frozenset({3, 8, 14, 23})
_BUSY = 5  # SQLITE_BUSY: another connection's lock outlasted the busy timeout
_READONLY_ROLLBACK = 776  # a hot journal that this connection may not roll back

_T = TypeVar("_T")


class _CorruptError(sqlite3.DatabaseError):
    """The file opened but failed SQLite's quick check."""


class _SchemaError(sqlite3.DatabaseError):
    """Our file, at a schema version this process may not or cannot bring to SCHEMA_VERSION."""


class _LockTimeout(TimeoutError):
    """A lock file stayed locked for the whole timeout. ucudnn holds them for milliseconds, so
    its holder is stopped or hung, and every later operation would wait as long: the process
    stops using the file."""


def _is_corrupt(exc: sqlite3.Error) -> bool:
    names = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    return isinstance(exc, _CorruptError) or getattr(exc, "sqlite_errorname", None) in names


def _cannot_write(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CANNOT_WRITE_CODES


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The outcome of benchmarking one algorithm or engine configuration at one micro-batch:
    timings if it ran (status "ok"), else why not (e.g. cuDNN's status name). Held to
    Candidate's bounds, so that every successful measurement the cache stores can be read back
    as a Candidate."""

    micro_batch: int
    algo: int
    status: str = "ok"
    time_ms: float | None = None  # median of `repeats` timed runs
    min_ms: float | None = None  # default: time_ms
    max_ms: float | None = None  # default: time_ms
    repeats: int = 1
    workspace_bytes: int | None = None
    math_type: str = "default"
    deterministic: bool = False
    engine: str = ""  # "" for a legacy algorithm, else the configuration's tag (algo its index)
    notes: tuple[str, ...] = ()  # the configuration's numerical and behaviour notes, by name
    # Whether time_ms is a full timing (True) or a brief screen's (False); None where it was
    # not recorded (before schema 4) or nothing ran.
    confirmed: bool | None = None

    def __post_init__(self) -> None:
        if not self.status:
            raise ValueError("status must be 'ok' or say why the algorithm did not run")
        self._set_integer("micro_batch", minimum=1, maximum=MAX_DIM)
        self._set_integer("algo", minimum=0, maximum=MAX_DIM)
        if self.engine:
            config = parse_tag(self.engine)
            if config.index != self.algo:
                raise ValueError(
                    f"engine {self.engine} is a configuration of engine {config.index}, but "
                    f"algo is {self.algo} (an engine's algo is its index)"
                )
            object.__setattr__(self, "engine", config.tag)
        object.__setattr__(self, "notes", _note_names(self.notes))
        if self.confirmed is not None and not isinstance(self.confirmed, bool):
            raise TypeError(f"confirmed must be True, False or None, got {shown(self.confirmed)}")
        self._set_integer("repeats", minimum=0)
        if self.workspace_bytes is not None:
            self._set_integer("workspace_bytes", minimum=0, maximum=MAX_WORKSPACE_BYTES)
        if self.math_type not in MATH_TYPES:
            raise ValueError(f"math_type {self.math_type!r} is not one of {', '.join(MATH_TYPES)}")
        if self.ok and (self.time_ms is None or self.workspace_bytes is None):
            raise ValueError(f"algo {self.algo}: a successful measurement needs time and workspace")
        if self.time_ms is not None:
            for name in ("min_ms", "max_ms"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, self.time_ms)
        times = [t for t in (self.min_ms, self.time_ms, self.max_ms) if t is not None]
        if any(isinstance(t, bool) or not isinstance(t, numbers.Real) for t in times):
            raise TypeError(
                f"algo {self.algo}: times must be numbers, "
                f"got {self.min_ms!r}, {self.time_ms!r}, {self.max_ms!r}"
            )
        if not all(0 <= t <= MAX_TIME_MS for t in times) or times != sorted(times):  # NaN too
            raise ValueError(
                f"algo {self.algo}: times must be between 0 and {MAX_TIME_MS:g} ms and "
                f"min <= median <= max, got {self.min_ms}, {self.time_ms}, {self.max_ms}"
            )

    def _set_integer(self, name: str, minimum: int, maximum: int | None = None) -> None:
        # Any integral type (numpy's too) becomes an int; a float, text or bool is refused.
        value = integer(getattr(self, name), name, minimum=minimum, maximum=maximum)
        object.__setattr__(self, name, value)

    @classmethod
    def timed(
        cls,
        candidate: Candidate,
        times_ms: Sequence[float],
        notes: Iterable[str] = (),
        confirmed: bool | None = None,
    ) -> Measurement:
        """A candidate (its time the median of `times_ms`) with the spread of its runs."""
        return cls(
            candidate.micro_batch,
            candidate.algo,
            time_ms=candidate.time_ms,
            min_ms=min(times_ms),
            max_ms=max(times_ms),
            repeats=len(times_ms),
            workspace_bytes=candidate.workspace_bytes,
            math_type=candidate.math_type,
            deterministic=candidate.deterministic,
            engine=candidate.engine,
            notes=tuple(notes),
            confirmed=confirmed,
        )

    @classmethod
    def failed(
        cls, micro_batch: int, algo: int, math_type: str, status: str, engine: str = ""
    ) -> Measurement:
        if status == "ok":
            raise ValueError("a failed measurement needs a status other than 'ok'")
        return cls(micro_batch, algo, status, repeats=0, math_type=math_type, engine=engine)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def candidate(self) -> Candidate:
        if not self.ok:
            raise ValueError(f"algo {self.algo} did not run ({self.status}): not a candidate")
        assert self.time_ms is not None and self.workspace_bytes is not None
        return Candidate(
            self.micro_batch,
            self.algo,
            self.time_ms,
            self.workspace_bytes,
            self.math_type,
            self.deterministic,
            self.engine,
        )


def _note_names(notes: object) -> tuple[str, ...]:
    if isinstance(notes, str) or not isinstance(notes, Iterable):
        raise TypeError(f"notes must be a sequence of note names, got {shown(notes)}")
    names = tuple(notes)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"a note name must be text, got {shown(name)}")
        if not _NOTE.fullmatch(name):
            raise ValueError(
                f"a note name is letters, digits and underscores (TENSOR_CORE), got {shown(name)}"
            )
    return names


@dataclasses.dataclass(frozen=True)
class CacheStats:
    sets: int  # (problem, kernel, micro-batch, device, source) keys measured
    measurements: int  # rows, failures included
    file_bytes: int  # the database file; 0 in memory


@dataclasses.dataclass(frozen=True)
class CacheReport:
    """What `inspect_cache` found at a cache path."""

    path: str
    stats: CacheStats | None  # None: no usable cache there
    # Why the file there cannot be used, or (with stats) what its owner should know; "" if
    # there is simply none yet, or nothing to say.
    problem: str = ""

    def describe(self) -> str:
        """One line for people, e.g. for `ucudnn info`."""
        if self.stats is not None:
            return (
                f"{self.path} ({self.stats.sets} measured problem sizes, "
                f"{self.stats.measurements} rows, {format_size(self.stats.file_bytes)})"
                + (f"; {self.problem}" if self.problem else "")
            )
        if self.problem:
            return f"{self.path}: {self.problem}"
        return f"{self.path} (not created yet)"


class BenchmarkCache:
    """Measurement sets in an SQLite file; `path=None` uses `database_from_env()`, which reads
    only the cache's own variables.

    `read_only=True` never creates, migrates, recovers or writes anything: its stores are kept
    in memory. `timeout`: the seconds to wait for other processes' locks (default
    `timeout_from_env()`). A foreign file raises CacheError in either mode; see the module's
    docstring for everything else.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        timeout: float | None = None,
    ) -> None:
        self.path = str(database_from_env() if path is None else path)
        self.read_only = read_only
        self.timeout = timeout_from_env() if timeout is None else _seconds(timeout, "timeout")
        self._lock = threading.Lock()  # the connections are used by any thread of this process
        self._memory = _connect_memory()  # measurements that no file holds
        self._file: _CacheFile | None = None
        self._unsaved_warning = ""  # given by the first store that stays in memory
        if self.path != IN_MEMORY:
            try:
                self._open_file()
            except CacheError:
                self._memory.close()
                raise
        logger.debug("benchmark cache %s: %s", self.path, self._access())

    # -- opening ----------------------------------------------------------------------------
    def _open_file(self) -> None:
        problems: list[str] = []
        for writable in (False,) if self.read_only else (True, False):
            try:
                self._file = _CacheFile.open(self.path, writable, self.timeout)
                break
            except (OSError, sqlite3.Error) as exc:
                problems.append(_explain(exc, self.path))
                if isinstance(exc, TimeoutError):
                    break  # opening it read-only would wait as long again
        if self._file is None or not self._file.writable:
            reason = "opened with read_only=True" if self.read_only else problems[0]
            self._unsaved_warning = self._read_only_text(reason)  # given by the first store
        if self._file is None and problems:
            self._unsaved_warning = ""  # said now, for every store to come
            warnings.warn(
                f"ucudnn benchmark cache {self.path} cannot be used "
                f"({'; '.join(dict.fromkeys(problems))}); "
                "keeping measurements in memory for this process",
                CacheWarning,
                stacklevel=3,
            )

    def _access(self) -> str:
        if self._file is None:
            return "kept in memory"
        return "opened for writing" if self._file.writable else "opened read-only"

    def _read_only_text(self, reason: str) -> str:
        return (
            f"ucudnn benchmark cache {self.path} is read-only ({reason}); new measurements are "
            "kept in memory for this process only"
        )

    # -- use --------------------------------------------------------------------------------
    def lookup(
        self,
        problem: ConvProblem,
        kernel: str,
        micro_batch: int,
        facts: DeviceFacts,
        source: str = LEGACY,
    ) -> list[Measurement] | None:
        """Everything recorded for this key, failures included; None if never measured.
        `source`: "legacy", or "graph/<search id>" for graph-API engine configurations."""
        key = _key(problem, kernel, micro_batch, facts, source)
        try:
            with self._lock:
                rows = _find_set(self._memory, key)
                if rows is None and self._file is not None:
                    try:
                        rows = self._file.run(lambda conn: _find_set(conn, key))
                    except _LockTimeout as exc:
                        self._give_up(exc)  # a miss
            found = None if rows is None else _measurements(micro_batch, rows)
            _log_lookup(problem, kernel, micro_batch, source, found)
            return found
        except (sqlite3.Error, OSError, ValueError) as exc:
            self._warn(exc, "read")
            return None

    def candidates(
        self,
        problem: ConvProblem,
        kernel: str,
        micro_batch: int,
        facts: DeviceFacts,
        source: str = LEGACY,
    ) -> list[Candidate] | None:
        """The algorithms that ran (possibly none); None if this key was never measured."""
        found = self.lookup(problem, kernel, micro_batch, facts, source)
        if found is None:
            return None
        return [m.candidate for m in found if m.ok]

    def store(
        self,
        problem: ConvProblem,
        kernel: str,
        micro_batch: int,
        facts: DeviceFacts,
        results: Iterable[Measurement],
        source: str = LEGACY,
    ) -> None:
        """Record the results of benchmarking this key, replacing what was there (of this
        source only)."""
        key = _key(problem, kernel, micro_batch, facts, source)
        results = list(results)
        if any(m.micro_batch != micro_batch for m in results):
            raise ValueError(f"results must all be measured at micro-batch {micro_batch}")
        seen = [(m.algo, m.engine, m.math_type) for m in results]
        if len(set(seen)) != len(seen):
            raise ValueError("results repeat an (algo, engine, math_type)")
        with self._lock:
            if self._file is not None and self._file.writable:
                try:
                    self._file.run(lambda conn: _replace_set(conn, key, results))
                    _delete_set(self._memory, key)  # kept there by a store that failed
                    return
                except _LockTimeout as exc:
                    self._give_up(exc)
                except (sqlite3.Error, OSError, CacheError) as exc:
                    self._write_failed(exc)
            if self._unsaved_warning:
                warnings.warn(self._unsaved_warning, CacheWarning, stacklevel=2)
                self._unsaved_warning = ""
            _replace_set(self._memory, key, results)

    def _write_failed(self, exc: Exception) -> None:
        assert self._file is not None
        if isinstance(exc, sqlite3.Error) and _cannot_write(exc):
            self._file.writable = False  # for good: later stores go to memory silently
            self._unsaved_warning = self._read_only_text(str(exc))
        else:
            self._warn(exc, "write")

    def _give_up(self, exc: _LockTimeout) -> None:
        """Stop using the file for good (under self._lock): see _LockTimeout."""
        assert self._file is not None
        self._file.close()
        self._file = None
        self._unsaved_warning = ""  # said now, for every store to come
        warnings.warn(
            f"ucudnn benchmark cache {self.path} is no longer used by this process ({exc}); "
            "measurements are kept in memory",
            CacheWarning,
            stacklevel=3,
        )

    def stats(self) -> CacheStats:
        """The file's sets, rows and size; for a cache without a file, the memory's."""
        with self._lock:
            file = self._file
            if file is None:
                return _stats(self._memory, None)
            return file.run(lambda conn: _stats(conn, file.path))

    def close(self) -> None:
        """Idempotent: a Handle closes its cache on every close() of its own."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._memory.close()

    def __enter__(self) -> BenchmarkCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _warn(self, exc: Exception, action: str) -> None:
        outcome = "treated as a miss" if action == "read" else "kept in memory for this process"
        warnings.warn(
            f"ucudnn benchmark cache {self.path}: {action} failed ({exc}); {outcome}",
            CacheWarning,
            stacklevel=3,
        )


def _log_lookup(
    problem: ConvProblem,
    kernel: str,
    micro_batch: int,
    source: str,
    found: list[Measurement] | None,
) -> None:
    if logger.isEnabledFor(logging.DEBUG):  # describe() only for a record that is shown
        outcome = "miss" if found is None else f"hit, {len(found)} results"
        logger.debug(
            "benchmark cache %s: %s of %s at micro-batch %d%s",
            outcome, kernel, problem.describe(), micro_batch,
            "" if source == LEGACY else f" ({source})",
        )  # fmt: skip


def inspect_cache(
    path: str | os.PathLike[str] | None = None, timeout: float = INSPECT_TIMEOUT_S
) -> CacheReport:
    """What is at the cache path (default: `database_from_env()`), read as it is: creates,
    migrates, recovers and writes nothing, and reports a foreign file instead of raising. Waits
    at most `timeout` seconds for other processes' locks. Only a bad UCUDNN_DATABASE (a ~user
    that does not exist) raises: there is no path to report on."""
    path = str(database_from_env() if path is None else path)
    try:
        file = _CacheFile.open(path, False, _seconds(timeout, "timeout"))
        if file is None:
            return CacheReport(path, None)
        with contextlib.closing(file):
            stats = file.run(lambda conn: _stats(conn, file.path))
            note = f"read as its last complete write left it: {_interrupted(file.path)}"
            return CacheReport(path, stats, note if file.rolled_back_copy else "")
    except CacheError as exc:
        return CacheReport(path, None, f"not a ucudnn benchmark cache ({exc.reason}); left as is")
    except (OSError, sqlite3.Error) as exc:
        return CacheReport(path, None, f"cannot be used: {_explain(exc, path)}")


def timeout_from_env(environ: Mapping[str, str] = os.environ) -> float:
    """UCUDNN_CACHE_TIMEOUT (seconds) if set and not empty, else BUSY_TIMEOUT_S."""
    text = environ.get("UCUDNN_CACHE_TIMEOUT", "").strip()
    if not text:
        return BUSY_TIMEOUT_S
    return parse_float(text, "UCUDNN_CACHE_TIMEOUT", 0.0, MAX_TIMEOUT_S)


def _seconds(value: object, name: str) -> float:
    """A timeout passed from Python: a real number of seconds from 0 to MAX_TIMEOUT_S."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        seconds = float(value)
        if 0 <= seconds <= MAX_TIMEOUT_S:  # False for NaN
            return seconds
    raise ValueError(
        f"{name} must be a number of seconds from 0 to {MAX_TIMEOUT_S:g}, got {shown(value)}"
    )


def _explain(exc: Exception, path: str) -> str:
    if isinstance(exc, sqlite3.Error) and _is_corrupt(exc):
        return (
            f"corrupt ({exc}); the next ucudnn process that can write there moves it aside and "
            "starts a fresh cache"
        )
    if getattr(exc, "sqlite_errorcode", None) == _READONLY_ROLLBACK:
        return _interrupted(os.path.realpath(path))
    return str(exc)


def _interrupted(path: str) -> str:
    """What the owner of a cache with a hot journal, which others may not roll back, must do."""
    try:
        uid = os.stat(path).st_uid
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = f"user {uid}"
    except OSError:
        owner = "the user who can write there"
    return (
        f"an interrupted write left {path}-journal, which only a process that can write there "
        f"may roll back: open the cache once as its owner, {owner}, e.g. python -c "
        f'"from ucudnn.planner import BenchmarkCache; BenchmarkCache({path!r}).close()"'
    )


class _CacheFile:
    """A connection to our cache file that follows its path: every operation runs under the
    shared lock, on the file the path names at that moment. A writable one replaces a corrupt
    file, under the exclusive lock."""

    def __init__(self, path: str, lock: _FileLock | None, writable: bool, timeout: float) -> None:
        self.path = path
        self.writable = writable
        self.timeout = timeout  # SQLite's busy timeout; the lock has its own copy
        self.rolled_back_copy = False  # connected to a copy: see _rolled_back_copy
        self._lock = lock  # writable ones always have one
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file connected

    @classmethod
    def open(cls, path: str, writable: bool, timeout: float) -> _CacheFile | None:
        """Our file at `path`, created if writable; None if there is none and none may be made.
        Raises CacheError for a foreign file before creating anything beside it."""
        path = os.path.realpath(path)  # the lock and the journal belong beside the real file
        exists = _holds_cache(path)
        if not (exists or writable):
            return None
        if writable:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        lock = _FileLock.beside(path, writable, timeout)
        file = cls(path, lock, writable, timeout)
        try:
            with file._shared():
                file._follow_path()
        except BaseException:
            file.close()
            raise
        return file

    def run(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        """`operation` on the file at the path; retried once on a fresh file if it found the
        file corrupt."""
        with self._shared():
            try:
                return operation(self._follow_path())
            except sqlite3.DatabaseError as exc:
                if not (self.writable and _is_corrupt(exc)):
                    raise
                self._replace_corrupt(exc)
            return operation(self._follow_path())

    def close(self) -> None:
        self._close_connection()
        if self._lock is not None:
            self._lock.close()

    @contextlib.contextmanager
    def _shared(self) -> Iterator[None]:
        """Under the shared lock (if any); SQLite's "database is locked" said clearly."""
        with self._lock.shared() if self._lock is not None else contextlib.nullcontext():
            try:
                yield
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != _BUSY:
                    raise
                holders = _holders(os.stat(self.path), writers_only=False)
                raise TimeoutError(
                    f"{self.path} is locked by {holders}, in an SQLite transaction: gave up "
                    f"after waiting {self.timeout:g} s"
                ) from exc

    def _follow_path(self) -> sqlite3.Connection:
        """The connection to the file the path names now (under the shared lock). A recovery
        briefly drops the shared lock, so look until the answer holds still. A rolled-back
        copy is left once its owner has rolled the file back: the file is whole again."""
        _require_regular(self.path + "-journal")  # SQLite would block on a FIFO there
        while (
            self._conn is None
            or _identity(self.path) != self._identity
            or (self.rolled_back_copy and not os.path.lexists(self.path + "-journal"))
        ):
            self._connect()
        return self._conn

    def _connect(self) -> None:
        try:
            self._open_connection()
        except sqlite3.DatabaseError as exc:
            if not (self.writable and _is_corrupt(exc)):
                raise
            self._replace_corrupt(exc)

    def _open_connection(self) -> None:
        """Connect to the file at the path: create or update our tables (writable) or check
        that they are current (read-only), then check the pages."""
        self._close_connection()
        if not _holds_cache(self.path) and not self.writable:  # also refuses a foreign newcomer
            raise FileNotFoundError(f"{self.path}: the benchmark cache is gone")
        if self.writable:
            conn = _connect_file(self.path, True, self.timeout)
        else:
            conn, self.rolled_back_copy = _connect_reader(self.path, self.timeout)
        try:
            # Under the shared lock nobody moves the file: the path names what conn has open.
            self._identity = _identity(self.path)
            if self.writable:
                # Read first: a file this ucudnn cannot read must not be touched, not even by
                # the journal mode.
                current = _schema_version(conn, self.path) == SCHEMA_VERSION
                conn.execute("PRAGMA journal_mode = DELETE")  # never WAL: see the docstring
                if not current:  # else no write lock
                    with _transaction(conn):
                        _prepare_schema(conn, self.path)
            else:
                _require_current_schema(conn, self.path)
            _check_pages(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _replace_corrupt(self, damage: sqlite3.DatabaseError) -> None:
        """Set the corrupt file aside and start a fresh cache, once: of the processes that found
        the damage, the first to hold the exclusive lock does it, and the others find another
        file at the path and only connect to it."""
        assert self._lock is not None
        corrupt = self._identity
        self._close_connection()  # give up its SQLite locks before waiting for other processes
        with self._lock.exclusive():
            if corrupt is not None and _identity(self.path) == corrupt:
                aside = _set_aside(self.path)
                warnings.warn(
                    f"ucudnn benchmark cache {self.path} is corrupt ({damage}); moved it to "
                    f"{aside} and started a fresh cache",
                    CacheWarning,
                    stacklevel=1,  # reached from several depths: name this line, not a guess
                )
            self._open_connection()

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _FileLock:
    """flock on two files beside the cache. `<cache>.lock` is held shared by every operation
    and exclusively by a recovery. `<cache>.gate` gives a recovery precedence: new operations
    pass it shared, for an instant, and a recovery holds it exclusively while it waits, so it
    waits only for the operations in flight (flock alone would let a stream of overlapping
    shared holders keep it waiting). A flock belongs to one open file description, so each
    BenchmarkCache holds its own, even within one process.

    No wait is unbounded: each ends in _LockTimeout after `timeout` seconds, naming the holder.
    The files are opened without blocking, and only regular files are used: anyone who can
    write the directory can put a FIFO there, whose opening would wait for a writer forever."""

    _SUFFIXES = (".lock", ".gate")

    def __init__(self, main: int, gate: int, path: str, timeout: float) -> None:
        self._main = main
        self._gate = gate
        self._names = {main: path + ".lock", gate: path + ".gate"}
        self._timeout = timeout
        # Closes both once, on close() or when an unclosed cache is collected; it must not
        # refer to self, or self would never be collected.
        self._release = weakref.finalize(self, _close_descriptors, main, gate)

    @classmethod
    def beside(cls, path: str, create: bool, timeout: float) -> _FileLock | None:
        """The lock of the cache at `path`; None when its files are missing or unreadable and
        may not be created. flock needs no write access, so one user's lock files serve every
        reader. Something else than a regular file there is refused (OSError)."""
        flags = os.O_RDONLY | (os.O_CREAT if create else 0)
        fds: list[int] = []
        try:
            for suffix in cls._SUFFIXES:
                fds.append(_open_regular(path + suffix, flags))
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            if create or not isinstance(exc, (FileNotFoundError, PermissionError)):
                raise
            return None
        main, gate = fds
        return cls(main, gate, path, timeout)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        deadline = time.monotonic() + self._timeout
        self._take(self._gate, fcntl.LOCK_SH, deadline)  # waits while a recovery is pending
        try:
            self._take(self._main, fcntl.LOCK_SH, deadline)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """For a holder of the shared lock, which it holds again afterwards. It lets go of the
        shared lock first (two recoveries, each keeping it while waiting for the other to let
        go, would deadlock), so the holder must look again at what the lock guards."""
        fcntl.flock(self._main, fcntl.LOCK_UN)
        deadline = time.monotonic() + self._timeout
        self._take(self._gate, fcntl.LOCK_EX, deadline)
        try:
            self._take(self._main, fcntl.LOCK_EX, deadline)
            try:
                yield
            finally:
                self._take(self._main, fcntl.LOCK_SH, time.monotonic() + self._timeout)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    def _take(self, fd: int, operation: int, deadline: float) -> None:
        """flock without blocking, tried again until `deadline` (time.monotonic())."""
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, operation | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    # A shared lock waits only for exclusive holders; an exclusive one for all.
                    holders = _holders(os.fstat(fd), writers_only=operation == fcntl.LOCK_SH)
                    raise _LockTimeout(
                        f"{self._names[fd]} is locked by {holders}: gave up after waiting "
                        f"{self._timeout:g} s"
                    ) from None
            time.sleep(min(pause, left))
            pause = min(2 * pause, 0.05)  # quick for a short wait, few wake-ups for a long one

    def close(self) -> None:
        """Idempotent. The numbers are forgotten: once closed they may name another file of
        this process, which a later flock must fail on (-1) rather than lock."""
        self._release()
        self._main = self._gate = -1


def _close_descriptors(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _holders(status: os.stat_result, writers_only: bool) -> str:
    """Who holds a lock (flock or SQLite's fcntl locks) on the file `status` describes, as
    Linux's /proc/locks tells: "process 4242 (python3, stopped)", or "another process" where
    it cannot tell (another system, a process in another PID namespace)."""
    file_id = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        lines = []
    pids = set()
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2147361 0 EOF"; a waiter's line has "->" after
        # "1:", so no file there; an OFD lock's pid is -1, not digits.
        fields = line.split()
        held = len(fields) >= 6 and fields[5] == file_id and fields[4].isdigit()
        if held and (not writers_only or fields[3] == "WRITE"):
            pids.add(int(fields[4]))
    others = sorted(pids - {os.getpid()})
    if others:
        return ("process " if len(others) == 1 else "processes ") + ", ".join(
            _process(pid) for pid in others
        )
    return "this process" if pids else "another process"


def _process(pid: int) -> str:
    """ "4242 (python3)", with ", stopped" for a process stopped by a signal or a debugger."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            name, _, rest = file.read().partition("(")[2].rpartition(")")
    except OSError:  # gone meanwhile
        return str(pid)
    stopped = ", stopped" if rest.split()[:1] in (["T"], ["t"]) else ""
    return f"{pid} ({name}{stopped})"


def _open_regular(path: str, flags: int) -> int:
    """A descriptor of the regular file at `path`, opened with `flags` (O_CREAT makes it), or
    OSError naming what is there instead. Opening does not block (a FIFO would wait for a
    writer) nor follow a symbolic link (one planted in a shared directory would send ucudnn's
    files elsewhere); the type is checked on what was opened, so nothing can swap it."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        _require_regular(path)  # names what is there
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(_not_regular(path, mode))
    return fd


def _require_regular(path: str) -> None:
    """OSError if `path` names something else than a regular file (a missing one is fine)."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(_not_regular(path, mode))


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int) -> str:
    kind = next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")
    return f"{path} is not a regular file ({kind})"


def _holds_cache(path: str) -> bool:
    """Whether `path` holds one of our caches; False if it holds none yet (no file, or an empty
    one). Reads the header itself: SQLite would roll back a foreign file's journal, or make WAL
    files beside it. Raises CacheError for a foreign file and OSError for a path that is not a
    readable regular file."""
    header = _read_header(path)
    if not header:
        return False
    if len(header) < _HEADER_BYTES or not header.startswith(_SQLITE_MAGIC):
        raise CacheError(path, "not an SQLite database")
    owner = int.from_bytes(header[_APPLICATION_ID_AT], "big")
    if owner != APPLICATION_ID:
        raise CacheError(path, _stranger(owner))
    return True


def _read_header(path: str) -> bytes | None:
    """The first bytes of the file at `path`; None if there is no file."""
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return os.read(fd, _HEADER_BYTES)
    finally:
        os.close(fd)


def _stranger(owner: int) -> str:
    if owner == 0:
        return (
            "an SQLite database without ucudnn's application_id, as is a cache written by "
            "ucudnn before schema version 2: delete such a cache, it can be measured again"
        )
    return (
        f"an SQLite database with application_id {owner:#010x}, not ucudnn's {APPLICATION_ID:#010x}"
    )


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def _set_aside(path: str) -> str:
    """Move a corrupt cache, and the journal that belongs to it, out of the way."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S.%f")
    aside = f"{path}.corrupt-{stamp}-{os.getpid()}"
    os.rename(path, aside)
    with contextlib.suppress(FileNotFoundError):
        os.rename(path + "-journal", aside + "-journal")
    return aside


def _connect_file(path: str, writable: bool, timeout: float) -> sqlite3.Connection:
    if writable:
        return _connect(path, timeout)
    return _connect(Path(path).absolute().as_uri() + "?mode=ro", timeout, uri=True)


def _connect_reader(path: str, timeout: float) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection to the cache at `path`, and whether it is to a rolled-back copy.
    A hot journal (an interrupted write's) must be rolled back before anything is read, which
    SQLite does only where it may write: a reader that may not is given a copy rolled back
    (_rolled_back_copy), or if it cannot read the journal, the error, which _explain explains.
    Reading the file as it is (SQLite's immutable mode) could mix pages of the interrupted
    write with older ones."""
    journal = _open_journal(path)  # before SQLite looks at it: see _rolled_back_copy
    try:
        conn = _connect_file(path, False, timeout)
        try:
            conn.execute("PRAGMA schema_version")  # reads the file: SQLite finds the journal
            return conn, False
        except sqlite3.OperationalError as exc:
            conn.close()
            if exc.sqlite_errorcode != _READONLY_ROLLBACK or journal is None:
                raise
        copy = _rolled_back_copy(path, journal)
    finally:
        if journal is not None:
            os.close(journal)
    if copy is None:  # its owner rolled it back meanwhile: the file is whole again
        return _connect_file(path, False, timeout), False
    return copy, True


def _open_journal(path: str) -> int | None:
    """The cache's rollback journal opened for reading; None if there is none or it may not be
    read."""
    try:
        return _open_regular(path + "-journal", os.O_RDONLY)
    except (FileNotFoundError, PermissionError):
        return None


def _rolled_back_copy(path: str, journal: int) -> sqlite3.Connection | None:
    """The cache as its last complete write left it, in memory: copies of the file and of its
    hot `journal` are made in a private directory, where SQLite rolls them back. None if the
    journal was rolled back (or changed) while it was copied.

    The copies belong together: a hot journal does not change until it is rolled back, and the
    file changes meanwhile only by that rollback (every writer rolls it back first), which puts
    back pages the journal holds and ends by deleting it. `journal` was opened before SQLite
    found it hot, so it is that journal if it is still linked, unchanged, after the copying."""
    before = os.fstat(journal)
    with tempfile.TemporaryDirectory(prefix="ucudnn-cache-") as private:
        copy = os.path.join(private, "cache.sqlite")
        with open(journal, "rb", closefd=False) as source, open(copy + "-journal", "wb") as out:
            shutil.copyfileobj(source, out)
        shutil.copyfile(path, copy)
        after = os.fstat(journal)
        if after.st_nlink == 0 or (after.st_size, after.st_mtime_ns) != (
            before.st_size,
            before.st_mtime_ns,
        ):
            return None
        with contextlib.closing(sqlite3.connect(copy, isolation_level=None)) as rolled_back:
            rolled_back.execute("PRAGMA schema_version")  # rolls the copy back
            image = rolled_back.serialize()
    conn = _connect(IN_MEMORY, 0.0)
    conn.deserialize(image)
    conn.execute("PRAGMA query_only = ON")  # a copy: nothing written to it would be kept
    return conn


def _connect_memory() -> sqlite3.Connection:
    conn = _connect(IN_MEMORY, 0.0)
    with _transaction(conn):
        _prepare_schema(conn, IN_MEMORY)
    return conn


def _connect(target: str, timeout: float, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )
    conn.execute("PRAGMA foreign_keys = ON")  # a replaced set's rows go with it (CASCADE)
    return conn


def _check_pages(conn: sqlite3.Connection) -> None:
    problem = conn.execute("PRAGMA quick_check").fetchone()[0]
    if problem != "ok":
        raise _CorruptError(problem)


# A row as SQLite returns it: its values' types are the file's, checked where they are read.
_Row = tuple[Any, ...]


def _find_set(conn: sqlite3.Connection, key: tuple[object, ...]) -> list[_Row] | None:
    row = conn.execute(f"SELECT id FROM measurement_sets WHERE {_KEY_MATCHES}", key).fetchone()
    if row is None:
        return None
    return conn.execute(
        f"SELECT {_MEASUREMENT_COLUMNS} FROM measurements WHERE set_id = ? "
        "ORDER BY algo, engine, math_type",
        (row[0],),
    ).fetchall()


def _measurements(micro_batch: int, rows: list[_Row]) -> list[Measurement]:
    """A set's rows; ValueError if one is not a measurement (a file changed by hand)."""
    try:
        return [
            Measurement(
                micro_batch,
                a,
                s,
                t,
                lo,
                hi,
                r,
                w,
                m,
                bool(d),
                e,
                _stored_notes(n),
                None if c is None else bool(c),
            )
            for a, s, t, lo, hi, r, w, m, d, e, n, c in rows
        ]
    except TypeError as exc:  # a value of the wrong type: the row is as unreadable
        raise ValueError(f"unreadable row: {exc}") from exc


def _stored_notes(text: object) -> tuple[str, ...]:
    if not isinstance(text, str):
        raise TypeError(f"notes must be text, got {shown(text)}")
    return tuple(text.split(",")) if text else ()


def _replace_set(
    conn: sqlite3.Connection, key: tuple[object, ...], results: list[Measurement]
) -> None:
    with _transaction(conn):
        _delete_set(conn, key)
        set_id = conn.execute(
            f"INSERT INTO measurement_sets ({_KEY_COLUMNS}, measured_at) "
            f"VALUES ({', '.join('?' * (len(key) + 1))})",
            (*key, time.time()),
        ).lastrowid
        conn.executemany(
            f"INSERT INTO measurements (set_id, {_MEASUREMENT_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (set_id, m.algo, m.status, m.time_ms, m.min_ms, m.max_ms, m.repeats,
                 m.workspace_bytes, m.math_type, int(m.deterministic), m.engine,
                 ",".join(m.notes), None if m.confirmed is None else int(m.confirmed))
                for m in results
            ],
        )  # fmt: skip


def _delete_set(conn: sqlite3.Connection, key: tuple[object, ...]) -> None:
    conn.execute(f"DELETE FROM measurement_sets WHERE {_KEY_MATCHES}", key)


def _stats(conn: sqlite3.Connection, path: str | None) -> CacheStats:
    sets = conn.execute("SELECT COUNT(*) FROM measurement_sets").fetchone()[0]
    rows = conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    return CacheStats(sets, rows, 0 if path is None else os.path.getsize(path))


def _key(
    problem: ConvProblem, kernel: str, micro_batch: int, facts: DeviceFacts, source: str
) -> tuple[object, ...]:
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    if not isinstance(source, str):
        raise TypeError(f"source must be text, got {shown(source)}")
    if not _SOURCE.fullmatch(source):
        raise ValueError(
            "source must be 'legacy' or 'graph/<search id>' (printable ASCII without spaces), "
            f"got {shown(source)}"
        )
    return (
        problem.with_batch(micro_batch).key(),
        check_kernel(kernel),
        micro_batch,
        facts.device_name,
        facts.compute_capability,
        facts.cudnn_version,
        facts.cuda_version,
        source,
    )


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front, so concurrent writers wait (busy timeout)
    # instead of failing when a read lock cannot be upgraded.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")  # may fail too (busy readers): then roll back as well
    except BaseException:
        if conn.in_transaction:  # some errors (SQLITE_FULL, SQLITE_IOERR) have rolled back
            conn.execute("ROLLBACK")
        raise


def _prepare_schema(conn: sqlite3.Connection, path: str) -> None:
    """Inside a write transaction: create or migrate our tables so that they are at
    SCHEMA_VERSION. Raises CacheError for a foreign database and _SchemaError for one of ours
    that this ucudnn cannot read or could not migrate; the transaction's rollback then leaves
    the file as it was."""
    version = _schema_version(conn, path)
    if version == SCHEMA_VERSION:
        return
    if version is None:
        _create_schema(conn)
    else:
        _migrate(conn, version)
    conn.execute("DELETE FROM schema_version")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    try:
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](conn)
    except sqlite3.Error as exc:
        if _is_corrupt(exc):  # a damaged file is set aside, not kept
            raise
        raise _SchemaError(
            f"schema version {version} could not be migrated to {SCHEMA_VERSION} ({exc}); "
            f"{_LEFT_AS_IS}"
        ) from exc


def _require_current_schema(conn: sqlite3.Connection, path: str) -> None:
    version = _schema_version(conn, path)
    if version is None:
        raise _SchemaError("no tables yet; a process that can write it creates them")
    if version != SCHEMA_VERSION:
        raise _SchemaError(
            f"schema version {version} is older than this ucudnn's {SCHEMA_VERSION}; "
            "a process that can write it migrates it"
        )


_LEFT_AS_IS = "left as is; move it aside, or set UCUDNN_DATABASE to another path, for a fresh cache"


def _schema_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The schema version of our database: SCHEMA_VERSION or one that migrates to it; None for
    an empty database (a cache about to be created). Raises CacheError for a foreign database
    and _SchemaError for ours at a version this ucudnn cannot read."""
    owner = conn.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if owner != APPLICATION_ID and (owner != 0 or tables):
        raise CacheError(path, _stranger(owner))
    if not tables:
        return None
    found = (
        conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        if "schema_version" in tables
        else None
    )
    if found is None:  # no table, no row, or NULL
        raise _SchemaError(
            f"no schema version recorded (this ucudnn's is {SCHEMA_VERSION}); {_LEFT_AS_IS}"
        )
    if not isinstance(found, int):  # text, a fraction, bytes: never guess what it means
        raise _SchemaError(
            f"schema version {shown(found)} is not an integer (this ucudnn's is "
            f"{SCHEMA_VERSION}); {_LEFT_AS_IS}"
        )
    if found > SCHEMA_VERSION:
        raise _SchemaError(
            f"schema version {found} is newer than this ucudnn's {SCHEMA_VERSION}; {_LEFT_AS_IS}"
        )
    if any(step not in MIGRATIONS for step in range(found, SCHEMA_VERSION)):
        raise _SchemaError(
            f"schema version {found} is older than this ucudnn's {SCHEMA_VERSION}, with no "
            f"migration to it; {_LEFT_AS_IS}"
        )
    return found


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # in this transaction
    for table in _TABLES:
        _create_table(conn, table)


def _create_table(conn: sqlite3.Connection, table: str) -> None:
    conn.execute(f"CREATE TABLE {table} ({_TABLES[table]})")
