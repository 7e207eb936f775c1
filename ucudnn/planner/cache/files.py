"""The cache file on disk: `CacheFile`, a connection that follows the path under the lock
files and replaces a corrupt file by a fresh one; opening it writable or else read-only
(`open_file`); a report on what a path holds (`report`), from the header first
(`holds_cache`). docs/design/cache.md tells why each step is there."""

from __future__ import annotations

import contextlib
import datetime
import os
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ucudnn.errors import CacheError, CacheWarning
from ucudnn.planner.cache import sql
from ucudnn.planner.cache.journal import connect_reader, interrupted
from ucudnn.planner.cache.locks import FileLock, holders
from ucudnn.planner.cache.records import CacheReport
from ucudnn.planner.cache.regular import open_regular, require_regular

# The SQLite file header: https://www.sqlite.org/fileformat.html#the_database_header
_HEADER_BYTES = 100
_SQLITE_MAGIC = b"SQLite format 3\x00"
_APPLICATION_ID_AT = slice(68, 72)

_T = TypeVar("_T")


class CacheFile:
    """A connection to our cache file that follows its path: every operation runs under the
    shared lock, on the file the path names at that moment. A writable one replaces a corrupt
    file, under the exclusive lock."""

    def __init__(
        self,
        path: str,
        lock: FileLock | None,
        writable: bool,
        timeout: float,
        schema_version: int,
    ) -> None:
        self.path = path
        self.writable = writable
        self.timeout = timeout  # SQLite's busy timeout; the lock has its own copy
        self.schema_version = schema_version  # the one this ucudnn reads and writes
        self.rolled_back_copy = False  # connected to a copy: see journal.connect_reader
        self._lock = lock  # writable ones always have one
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file connected

    @classmethod
    def open(
        cls, path: str, writable: bool, timeout: float, schema_version: int
    ) -> CacheFile | None:
        """Our file at `path`, created if writable, its tables at `schema_version`;
        None if there is none and none may be made. Raises CacheError for a foreign file before
        creating anything beside it."""
        path = os.path.realpath(path)  # the lock and the journal belong beside the real file
        exists = holds_cache(path)
        if not (exists or writable):
            return None
        if writable:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock.beside(path, writable, timeout)
        file = cls(path, lock, writable, timeout, schema_version)
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
                if not (self.writable and sql.is_corrupt(exc)):
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
                if exc.sqlite_errorcode & 0xFF != sql.BUSY:
                    raise
                who = holders(os.stat(self.path), writers_only=False)
                raise TimeoutError(
                    f"{self.path} is locked by {who}, in an SQLite transaction: gave up "
                    f"after waiting {self.timeout:g} s"
                ) from exc

    def _follow_path(self) -> sqlite3.Connection:
        """The connection to the file the path names now (under the shared lock). A recovery
        briefly drops the shared lock, so look until the answer holds still. A rolled-back
        copy is left once its owner has rolled the file back: the file is whole again."""
        require_regular(self.path + "-journal")  # SQLite would block on a FIFO there
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
            if not (self.writable and sql.is_corrupt(exc)):
                raise
            self._replace_corrupt(exc)

    def _open_connection(self) -> None:
        """Connect to the file at the path: create or update our tables (writable) or check
        that they are current (read-only), then check the pages."""
        self._close_connection()
        if not holds_cache(self.path) and not self.writable:  # also refuses a foreign newcomer
            raise FileNotFoundError(f"{self.path}: the benchmark cache is gone")
        if self.writable:
            conn = sql.connect_file(self.path, True, self.timeout)
        else:
            conn, self.rolled_back_copy = connect_reader(self.path, self.timeout)
        try:
            # Under the shared lock nobody moves the file: the path names what conn has open.
            self._identity = _identity(self.path)
            if self.writable:
                # Read first: a file this ucudnn cannot read must not be touched, not even by
                # the journal mode.
                version = sql.schema_version(conn, self.path, self.schema_version)
                current = version == self.schema_version
                conn.execute("PRAGMA journal_mode = DELETE")  # never WAL: see the design notes
                if not current:  # else no write lock
                    with sql.transaction(conn):
                        sql.prepare_schema(conn, self.path, self.schema_version)
            else:
                sql.require_current_schema(conn, self.path, self.schema_version)
            sql.check_pages(conn)
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


def open_file(
    path: str, read_only: bool, timeout: float, schema_version: int
) -> tuple[CacheFile | None, list[str]]:
    """The cache file at `path`, opened for writing unless `read_only` or that fails, else for
    reading; None if there is none to read. With why each try that failed did (explained)."""
    problems: list[str] = []
    for writable in (False,) if read_only else (True, False):
        try:
            return CacheFile.open(path, writable, timeout, schema_version), problems
        except (OSError, sqlite3.Error) as exc:
            problems.append(explain(exc, path))
            if isinstance(exc, TimeoutError):
                break  # opening it read-only would wait as long again
    return None, problems


def report(path: str, timeout: float, schema_version: int) -> CacheReport:
    """What is at `path`, read as it is: see inspect_cache."""
    try:
        file = CacheFile.open(path, False, timeout, schema_version)
        if file is None:
            return CacheReport(path, None)
        with contextlib.closing(file):
            stats = file.run(lambda conn: sql.stats(conn, file.path))
            note = f"read as its last complete write left it: {interrupted(file.path)}"
            return CacheReport(path, stats, note if file.rolled_back_copy else "")
    except CacheError as exc:
        return CacheReport(path, None, f"not a ucudnn benchmark cache ({exc.reason}); left as is")
    except (OSError, sqlite3.Error) as exc:
        return CacheReport(path, None, f"cannot be used: {explain(exc, path)}")


def holds_cache(path: str) -> bool:
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
    if owner != sql.APPLICATION_ID:
        raise CacheError(path, sql.not_ours(owner))
    return True


def _read_header(path: str) -> bytes | None:
    """The first bytes of the file at `path`; None if there is no file."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return os.read(fd, _HEADER_BYTES)
    finally:
        os.close(fd)


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


def explain(exc: Exception, path: str) -> str:
    """Why the cache at `path` could not be opened or used, for a warning or a report."""
    if isinstance(exc, sqlite3.Error) and sql.is_corrupt(exc):
        return (
            f"corrupt ({exc}); the next ucudnn process that can write there moves it aside and "
            "starts a fresh cache"
        )
    if getattr(exc, "sqlite_errorcode", None) == sql.READONLY_ROLLBACK:
        return interrupted(os.path.realpath(path))
    return str(exc)
