"""SQLite cache of benchmark results, shared by every process of a user (or of a site):
`BenchmarkCache` finds and stores measurement sets, keeping in memory what no file can take,
and `inspect_cache` reports on a cache path without changing it. Its parts: records.py (what is
stored, under which key), sql.py (the schema and queries), files.py and journal.py (the file on
disk), locks.py and regular.py (the files beside it). Design: docs/design/cache.md.

One SQLite file, not one immutable file per key put in place by os.replace in a versioned
directory: that would drop the journal and the recovery locks for new caches only. The SQLite
caches on users' disks, and site-wide ones their readers may not convert, must still be read,
migrated and recovered, so that code would stay beside a second format; and UCUDNN_DATABASE
names one file, which `ucudnn info` measures and sqlite3 opens.
"""

from __future__ import annotations

import logging
import numbers
import os
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Mapping

from ucudnn.core.checks import parse_float, shown
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, Axis
from ucudnn.errors import CacheError, CacheWarning
from ucudnn.planner.cache import sql
from ucudnn.planner.cache.files import CacheFile, open_file, report
from ucudnn.planner.cache.locks import LockTimeout
from ucudnn.planner.cache.records import (
    LEGACY as LEGACY,
    CacheReport as CacheReport,
    CacheStats as CacheStats,
    Measurement as Measurement,
    axis_source,
    measurement_key,
)
from ucudnn.planner.cache.sql import (
    APPLICATION_ID as APPLICATION_ID,
    IN_MEMORY as IN_MEMORY,
    MIGRATIONS as MIGRATIONS,
    SCHEMA_VERSION as SCHEMA_VERSION,
)
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.config import database_from_env

# How long a process waits for another's locks (the lock files' and SQLite's) before it gives
# up: UCUDNN_CACHE_TIMEOUT, else this; `inspect_cache` (`ucudnn info`) waits INSPECT_TIMEOUT_S.
BUSY_TIMEOUT_S = 30.0
INSPECT_TIMEOUT_S = 2.0
MAX_TIMEOUT_S = 3600.0
# SCHEMA_VERSION and BUSY_TIMEOUT_S are read from this module at each use, so that a change
# made here (as the migration and timeout tests make) is the one every part sees.

logger = logging.getLogger(__name__)


class BenchmarkCache:
    """Measurement sets in an SQLite file; `path=None` uses `database_from_env()`, which reads
    only the cache's own variables.

    `read_only=True` never creates, migrates, recovers or writes anything: its stores are kept
    in memory. `timeout`: the seconds to wait for other processes' locks (default
    `timeout_from_env()`). A foreign file raises CacheError in either mode; see the module's
    design notes (docs/design/cache.md) for everything else.
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
        self._memory = sql.connect_memory(SCHEMA_VERSION)  # measurements that no file holds
        self._file: CacheFile | None = None
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
        self._file, problems = open_file(self.path, self.read_only, self.timeout, SCHEMA_VERSION)
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
        axis: Axis = BATCH,
    ) -> list[Measurement] | None:
        """Everything recorded for this key, failures included; None if never measured.
        `source`: "legacy", or "graph/<search id>" for graph-API engine configurations;
        `axis`: what `micro_batch` is a part of."""
        key = measurement_key(problem, kernel, micro_batch, facts, source, axis)
        try:
            with self._lock:
                rows = sql.find_set(self._memory, key)
                if rows is None and self._file is not None:
                    try:
                        rows = self._file.run(lambda conn: sql.find_set(conn, key))
                    except LockTimeout as exc:
                        self._give_up(exc)  # a miss
            found = None if rows is None else sql.read_measurements(micro_batch, rows)
            _log_lookup(problem, kernel, micro_batch, axis_source(source, axis), found)
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
        axis: Axis = BATCH,
    ) -> list[Candidate] | None:
        """The algorithms that ran (possibly none); None if this key was never measured."""
        found = self.lookup(problem, kernel, micro_batch, facts, source, axis)
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
        axis: Axis = BATCH,
    ) -> None:
        """Record the results of benchmarking this key, replacing what was there (of this
        source only)."""
        key = measurement_key(problem, kernel, micro_batch, facts, source, axis)
        results = list(results)
        if any(m.micro_batch != micro_batch for m in results):
            raise ValueError(f"results must all be measured at micro-batch {micro_batch}")
        seen = [(m.algo, m.engine, m.math_type) for m in results]
        if len(set(seen)) != len(seen):
            raise ValueError("results repeat an (algo, engine, math_type)")
        with self._lock:
            if self._file is not None and self._file.writable:
                try:
                    self._file.run(lambda conn: sql.replace_set(conn, key, results))
                    sql.delete_set(self._memory, key)  # kept there by a store that failed
                    return
                except LockTimeout as exc:
                    self._give_up(exc)
                except (sqlite3.Error, OSError, CacheError) as exc:
                    self._write_failed(exc)
            if self._unsaved_warning:
                warnings.warn(self._unsaved_warning, CacheWarning, stacklevel=2)
                self._unsaved_warning = ""
            sql.replace_set(self._memory, key, results)

    def _write_failed(self, exc: Exception) -> None:
        assert self._file is not None
        if isinstance(exc, sqlite3.Error) and sql.cannot_write(exc):
            self._file.writable = False  # for good: later stores go to memory silently
            self._unsaved_warning = self._read_only_text(str(exc))
        else:
            self._warn(exc, "write")

    def _give_up(self, exc: LockTimeout) -> None:
        """Stop using the file for good (under self._lock): see LockTimeout."""
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
                return sql.stats(self._memory, None)
            return file.run(lambda conn: sql.stats(conn, file.path))

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
    return report(path, _seconds(timeout, "timeout"), SCHEMA_VERSION)


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
