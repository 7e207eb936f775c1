"""SQLite cache of benchmark results, shared by every process of a user.

A *measurement set* is everything measured for one kernel of one problem at one micro-batch on
one device/software stack: its key is the problem at the micro-batch (`problem.with_batch(b)
.key()`, every field), the kernel, the micro-batch and every `DeviceFacts` field, so a
different GPU, cuDNN or CUDA simply misses. A set holds one row per (algorithm, math type),
including those that failed (not supported, allocation failed), so failures are not retried;
an empty set is still a hit.

The file is in WAL mode with a busy timeout, so several processes can read and write it at
once; each process (and each fork) must open its own `BenchmarkCache`. A corrupt file is moved
aside with a warning and replaced by a fresh one; an unreadable one gives a warning and an
in-memory cache. Errors never reach the caller as anything but a warning and a miss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import MATH_TYPES, ConvProblem, check_kernel
from ucudnn.planner.config import Config
from ucudnn.planner.tables import Candidate

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0
IN_MEMORY = ":memory:"

# MIGRATIONS[v] upgrades a file from schema v to v + 1 inside one transaction. Versions with
# no path to SCHEMA_VERSION are rebuilt empty: a cache can always be measured again.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS measurement_sets (
    id INTEGER PRIMARY KEY,
    problem TEXT NOT NULL,
    kernel TEXT NOT NULL,
    micro_batch INTEGER NOT NULL CHECK (micro_batch >= 1),
    device_name TEXT NOT NULL,
    compute_capability TEXT NOT NULL,
    cudnn_version INTEGER NOT NULL,
    cuda_version INTEGER NOT NULL,
    measured_at REAL NOT NULL,
    UNIQUE (problem, kernel, micro_batch, device_name, compute_capability,
            cudnn_version, cuda_version)
);
CREATE TABLE IF NOT EXISTS measurements (
    set_id INTEGER NOT NULL REFERENCES measurement_sets (id) ON DELETE CASCADE,
    algo INTEGER NOT NULL CHECK (algo >= 0),
    math_type TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status != ''),
    median_ms REAL CHECK (median_ms >= 0),
    min_ms REAL CHECK (min_ms >= 0),
    max_ms REAL CHECK (max_ms >= 0),
    repeats INTEGER NOT NULL CHECK (repeats >= 0),
    workspace_bytes INTEGER CHECK (workspace_bytes >= 0),
    deterministic INTEGER NOT NULL CHECK (deterministic IN (0, 1)),
    CHECK (status != 'ok' OR (median_ms IS NOT NULL AND workspace_bytes IS NOT NULL)),
    UNIQUE (set_id, algo, math_type)
);
"""
_TABLES = ("measurements", "measurement_sets", "schema_version")
_KEY_COLUMNS = (
    "problem, kernel, micro_batch, device_name, compute_capability, cudnn_version, cuda_version"
)


class _CorruptError(sqlite3.DatabaseError):
    """The file opened but failed SQLite's integrity check."""


class _NewerSchemaError(sqlite3.DatabaseError):
    """Written by a newer ucudnn: not ours to rebuild."""


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    names = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    return isinstance(exc, _CorruptError) or getattr(exc, "sqlite_errorname", None) in names


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The outcome of benchmarking one algorithm at one micro-batch: timings if it ran
    (status "ok"), else why not (e.g. cuDNN's status name)."""

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

    def __post_init__(self) -> None:
        if not self.status:
            raise ValueError("status must be 'ok' or say why the algorithm did not run")
        if self.micro_batch < 1:
            raise ValueError(f"micro_batch must be >= 1, got {self.micro_batch}")
        if self.algo < 0:
            raise ValueError(f"algo must be >= 0, got {self.algo}")
        if self.math_type not in MATH_TYPES:
            raise ValueError(f"math_type {self.math_type!r} is not one of {', '.join(MATH_TYPES)}")
        if self.repeats < 0:
            raise ValueError(f"repeats must be >= 0, got {self.repeats}")
        if self.ok and (self.time_ms is None or self.workspace_bytes is None):
            raise ValueError(f"algo {self.algo}: a successful measurement needs time and workspace")
        if self.time_ms is not None:
            for name in ("min_ms", "max_ms"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, self.time_ms)
        times = [t for t in (self.min_ms, self.time_ms, self.max_ms) if t is not None]
        if any(not math.isfinite(t) or t < 0 for t in times) or times != sorted(times):
            raise ValueError(
                f"algo {self.algo}: times must be finite, >= 0 and min <= median <= max, "
                f"got {self.min_ms}, {self.time_ms}, {self.max_ms}"
            )
        if self.workspace_bytes is not None and self.workspace_bytes < 0:
            raise ValueError(f"workspace_bytes must be >= 0, got {self.workspace_bytes}")

    @classmethod
    def timed(cls, candidate: Candidate, times_ms: Sequence[float]) -> Measurement:
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
        )

    @classmethod
    def failed(cls, micro_batch: int, algo: int, math_type: str, status: str) -> Measurement:
        if status == "ok":
            raise ValueError("a failed measurement needs a status other than 'ok'")
        return cls(micro_batch, algo, status, repeats=0, math_type=math_type)

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
        )


@dataclasses.dataclass(frozen=True)
class CacheStats:
    sets: int  # (problem, kernel, micro-batch, device) keys measured
    measurements: int  # rows, failures included
    file_bytes: int  # database plus its write-ahead log; 0 in memory


class BenchmarkCache:
    """Measurement sets in an SQLite file; `path=None` uses Config.from_env().database."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = str(Config.from_env().database if path is None else path)
        self._lock = threading.Lock()  # one connection, used by any thread of this process
        self._conn = self._open()

    # -- opening ----------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        if self.path == IN_MEMORY:
            return self._connect(IN_MEMORY)
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            return self._connect(self.path)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                return self._in_memory_instead(exc)
            aside = self._move_aside()
            warnings.warn(
                f"ucudnn benchmark cache {self.path} is corrupt ({exc}); moved it to {aside} "
                "and started a fresh cache",
                RuntimeWarning,
                stacklevel=3,
            )
        try:
            return self._connect(self.path)
        except sqlite3.DatabaseError as exc:
            return self._in_memory_instead(exc)

    def _in_memory_instead(self, exc: Exception) -> sqlite3.Connection:
        warnings.warn(
            f"ucudnn benchmark cache {self.path} cannot be used ({exc}); "
            "keeping measurements in memory for this process",
            RuntimeWarning,
            stacklevel=4,
        )
        return self._connect(IN_MEMORY)

    def _move_aside(self) -> Path:
        path = Path(self.path)
        aside = path.with_name(
            f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        )
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            path.rename(aside)
        for suffix in ("-wal", "-shm"):  # they belong to the bad file, not the fresh one
            with contextlib.suppress(FileNotFoundError):
                path.with_name(path.name + suffix).rename(aside.with_name(aside.name + suffix))
        return aside

    @staticmethod
    def _connect(path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if path != IN_MEMORY:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            with _transaction(conn):
                _prepare_schema(conn)
            problem = conn.execute("PRAGMA quick_check").fetchone()[0]
            if problem != "ok":
                raise _CorruptError(problem)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    # -- use --------------------------------------------------------------------------------
    def lookup(
        self, problem: ConvProblem, kernel: str, micro_batch: int, facts: DeviceFacts
    ) -> list[Measurement] | None:
        """Everything recorded for this key, failures included; None if never measured."""
        key = _key(problem, kernel, micro_batch, facts)
        try:
            with self._lock:
                row = self._conn.execute(
                    f"SELECT id FROM measurement_sets WHERE ({_KEY_COLUMNS}) = "
                    "(?, ?, ?, ?, ?, ?, ?)",
                    key,
                ).fetchone()
                if row is None:
                    return None
                rows = self._conn.execute(
                    "SELECT algo, status, median_ms, min_ms, max_ms, repeats, workspace_bytes, "
                    "math_type, deterministic FROM measurements WHERE set_id = ? "
                    "ORDER BY algo, math_type",
                    (row[0],),
                ).fetchall()
            return [
                Measurement(micro_batch, a, s, t, lo, hi, r, w, m, bool(d))
                for a, s, t, lo, hi, r, w, m, d in rows
            ]
        except (sqlite3.Error, ValueError) as exc:
            self._warn(exc, "read")
            return None

    def candidates(
        self, problem: ConvProblem, kernel: str, micro_batch: int, facts: DeviceFacts
    ) -> list[Candidate] | None:
        """The algorithms that ran (possibly none); None if this key was never measured."""
        found = self.lookup(problem, kernel, micro_batch, facts)
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
    ) -> None:
        """Record the results of benchmarking this key, replacing what was there."""
        key = _key(problem, kernel, micro_batch, facts)
        results = list(results)
        if any(m.micro_batch != micro_batch for m in results):
            raise ValueError(f"results must all be measured at micro-batch {micro_batch}")
        seen = [(m.algo, m.math_type) for m in results]
        if len(set(seen)) != len(seen):
            raise ValueError("results repeat an (algo, math_type) pair")
        try:
            with self._lock, _transaction(self._conn):
                self._conn.execute(
                    f"DELETE FROM measurement_sets WHERE ({_KEY_COLUMNS}) = (?, ?, ?, ?, ?, ?, ?)",
                    key,
                )
                set_id = self._conn.execute(
                    f"INSERT INTO measurement_sets ({_KEY_COLUMNS}, measured_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, time.time()),
                ).lastrowid
                self._conn.executemany(
                    "INSERT INTO measurements (set_id, algo, status, median_ms, min_ms, max_ms, "
                    "repeats, workspace_bytes, math_type, deterministic) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (set_id, m.algo, m.status, m.time_ms, m.min_ms, m.max_ms, m.repeats,
                         m.workspace_bytes, m.math_type, int(m.deterministic))
                        for m in results
                    ],
                )  # fmt: skip
        except sqlite3.Error as exc:
            self._warn(exc, "write")

    def stats(self) -> CacheStats:
        with self._lock:
            sets = self._conn.execute("SELECT COUNT(*) FROM measurement_sets").fetchone()[0]
            rows = self._conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
        size = 0
        if self.path != IN_MEMORY:
            for suffix in ("", "-wal"):
                with contextlib.suppress(FileNotFoundError):
                    size += os.path.getsize(self.path + suffix)
        return CacheStats(sets, rows, size)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> BenchmarkCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _warn(self, exc: Exception, action: str) -> None:
        warnings.warn(
            f"ucudnn benchmark cache {self.path}: {action} failed ({exc}); treated as a miss",
            RuntimeWarning,
            stacklevel=3,
        )


def _key(
    problem: ConvProblem, kernel: str, micro_batch: int, facts: DeviceFacts
) -> tuple[object, ...]:
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    return (
        problem.with_batch(micro_batch).key(),
        check_kernel(kernel),
        micro_batch,
        facts.device_name,
        facts.compute_capability,
        facts.cudnn_version,
        facts.cuda_version,
    )


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front, so concurrent writers wait (busy timeout)
    # instead of failing when a read lock cannot be upgraded.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _prepare_schema(conn: sqlite3.Connection) -> None:
    """Create, migrate or rebuild our tables so that they are at SCHEMA_VERSION. Tables that
    are not ours (say, the original µ-cuDNN's perfTable) are left alone."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = None  # no version table: not ours, or from before versions were recorded
    if "schema_version" in tables:
        version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise _NewerSchemaError(
            f"schema version {version} is newer than this ucudnn's {SCHEMA_VERSION}"
        )
    while version is not None and version in MIGRATIONS:
        MIGRATIONS[version](conn)
        version += 1
    if version != SCHEMA_VERSION:
        for table in _TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        # executescript would COMMIT the open transaction, so run the statements one by one.
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("DELETE FROM schema_version")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
