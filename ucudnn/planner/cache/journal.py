"""Reading a cache that an interrupted write left with a hot rollback journal, which only a
process that can write there may roll back: others read a private copy rolled back in memory
(`connect_reader`), or are told what the owner must do (`interrupted`)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import sqlite3
import tempfile

from ucudnn.planner.cache import sql
from ucudnn.planner.cache.regular import open_regular


def connect_reader(path: str, timeout: float) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection to the cache at `path`, and whether it is to a rolled-back copy.
    A hot journal (an interrupted write's) must be rolled back before anything is read, which
    SQLite does only where it may write: a reader that may not is given a copy rolled back
    (_rolled_back_copy), or if it cannot read the journal, the error, which files.explain
    explains. Reading the file as it is (SQLite's immutable mode) could mix pages of the
    interrupted write with older ones."""
    journal = _open_journal(path)  # before SQLite looks at it: see _rolled_back_copy
    try:
        conn = sql.connect_file(path, False, timeout)
        try:
            conn.execute("PRAGMA schema_version")  # reads the file: SQLite finds the journal
            return conn, False
        except sqlite3.OperationalError as exc:
            conn.close()
            if exc.sqlite_errorcode != sql.READONLY_ROLLBACK or journal is None:
                raise
        copy = _rolled_back_copy(path, journal)
    finally:
        if journal is not None:
            os.close(journal)
    if copy is None:  # its owner rolled it back meanwhile: the file is whole again
        return sql.connect_file(path, False, timeout), False
    return copy, True


def _open_journal(path: str) -> int | None:
    """The cache's rollback journal opened for reading; None if there is none or it may not be
    read."""
    try:
        return open_regular(path + "-journal", os.O_RDONLY)
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
    conn = sql.connect(sql.IN_MEMORY, 0.0)
    conn.deserialize(image)
    conn.execute("PRAGMA query_only = ON")  # a copy: nothing written to it would be kept
    return conn


def interrupted(path: str) -> str:
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
