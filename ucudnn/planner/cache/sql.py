"""The cache's SQL, as functions of an open connection: the schema and its migrations, the
queries that find, replace and count measurement sets, and what SQLite's errors mean. Nothing
here knows about locks, recovery or other processes (files.py does), so all of it runs on
":memory:"."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ucudnn.core.checks import shown
from ucudnn.errors import CacheError
from ucudnn.planner.cache.records import CacheStats, Measurement

# 2: the file carries APPLICATION_ID and a rollback journal. Version-1 files carry no mark, so
# they are foreign (refused), never migrated. 3: engine configurations (measurements' engine and
# notes, sets' source). 4: whether each time is confirmed (timed in full) or a screen's.
# The functions below take the version to bring a file to as an argument: the front passes its
# SCHEMA_VERSION, read at each open.
SCHEMA_VERSION = 4
APPLICATION_ID = int.from_bytes(b"uCDN", "big")  # 0x7543444e, in SQLite's file header
IN_MEMORY = ":memory:"

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
# In the order of records.measurement_key's values.
_KEY_COLUMNS = (
    "problem, kernel, micro_batch, device_name, compute_capability, cudnn_version, cuda_version, "
    "source"
)
_KEY_MATCHES = f"({_KEY_COLUMNS}) = ({', '.join('?' * len(_KEY_COLUMNS.split(',')))})"
_MEASUREMENT_COLUMNS = (
    "algo, status, median_ms, min_ms, max_ms, repeats, workspace_bytes, math_type, deterministic, "
    "engine, notes, confirmed"
)


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


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4 in place: every row is kept, its `confirmed` unknown (NULL). A file that
    came from schema 2 has the column already: that step makes its tables from `_TABLES`."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(measurements)")}
    if "confirmed" not in columns:
        conn.execute(
            "ALTER TABLE measurements ADD COLUMN confirmed INTEGER CHECK (confirmed IN (0, 1))"
        )


# MIGRATIONS[v] upgrades one of our files from schema v to v + 1 inside the caller's
# transaction. A file at a version with no path to SCHEMA_VERSION is left as it is.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
}

# Primary result codes that mean "this file cannot be written by this process" rather than "this
# write went wrong": SQLITE_PERM, SQLITE_READONLY (and its extended codes), SQLITE_CANTOPEN (no
# journal in a read-only directory), SQLITE_AUTH.
_CANNOT_WRITE_CODES = frozenset({3, 8, 14, 23})
BUSY = 5  # SQLITE_BUSY: another connection's lock outlasted the busy timeout
READONLY_ROLLBACK = 776  # a hot journal that this connection may not roll back


class CorruptError(sqlite3.DatabaseError):
    """The file opened but failed SQLite's quick check."""


class SchemaError(sqlite3.DatabaseError):
    """Our file, at a schema version this process may not or cannot bring to its own."""


def is_corrupt(exc: sqlite3.Error) -> bool:
    names = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    return isinstance(exc, CorruptError) or getattr(exc, "sqlite_errorname", None) in names


def cannot_write(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CANNOT_WRITE_CODES


def connect(target: str, timeout: float, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )
    conn.execute("PRAGMA foreign_keys = ON")  # a replaced set's rows go with it (CASCADE)
    return conn


def connect_file(path: str, writable: bool, timeout: float) -> sqlite3.Connection:
    if writable:
        return connect(path, timeout)
    return connect(Path(path).absolute().as_uri() + "?mode=ro", timeout, uri=True)


def connect_memory(current: int) -> sqlite3.Connection:
    """A fresh cache in memory, its tables at schema version `current`."""
    conn = connect(IN_MEMORY, 0.0)
    with transaction(conn):
        prepare_schema(conn, IN_MEMORY, current)
    return conn


def check_pages(conn: sqlite3.Connection) -> None:
    problem = conn.execute("PRAGMA quick_check").fetchone()[0]
    if problem != "ok":
        raise CorruptError(problem)


# A row as SQLite returns it: its values' types are the file's, checked where they are read.
Row = tuple[Any, ...]


def find_set(conn: sqlite3.Connection, key: tuple[object, ...]) -> list[Row] | None:
    """The rows of the set with this key (records.measurement_key); None if there is none."""
    row = conn.execute(f"SELECT id FROM measurement_sets WHERE {_KEY_MATCHES}", key).fetchone()
    if row is None:
        return None
    return conn.execute(
        f"SELECT {_MEASUREMENT_COLUMNS} FROM measurements WHERE set_id = ? "
        "ORDER BY algo, engine, math_type",
        (row[0],),
    ).fetchall()


def read_measurements(micro_batch: int, rows: list[Row]) -> list[Measurement]:
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


def replace_set(
    conn: sqlite3.Connection, key: tuple[object, ...], results: list[Measurement]
) -> None:
    """Store `results` as the set with this key, in one transaction with the removal of the
    set it replaces."""
    with transaction(conn):
        delete_set(conn, key)
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


def delete_set(conn: sqlite3.Connection, key: tuple[object, ...]) -> None:
    conn.execute(f"DELETE FROM measurement_sets WHERE {_KEY_MATCHES}", key)


def stats(conn: sqlite3.Connection, path: str | None) -> CacheStats:
    """The sets and rows in the database, and the size of its file at `path` (None: none)."""
    sets = conn.execute("SELECT COUNT(*) FROM measurement_sets").fetchone()[0]
    rows = conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    return CacheStats(sets, rows, 0 if path is None else os.path.getsize(path))


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
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


def prepare_schema(conn: sqlite3.Connection, path: str, current: int) -> None:
    """Inside a write transaction: create or migrate our tables so that they are at schema
    version `current`. Raises CacheError for a foreign database and SchemaError for one of ours
    that this ucudnn cannot read or could not migrate; the transaction's rollback then leaves
    the file as it was."""
    version = schema_version(conn, path, current)
    if version == current:
        return
    if version is None:
        _create_schema(conn)
    else:
        _migrate(conn, version, current)
    conn.execute("DELETE FROM schema_version")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (current,))


def _migrate(conn: sqlite3.Connection, version: int, current: int) -> None:
    try:
        for step in range(version, current):
            MIGRATIONS[step](conn)
    except sqlite3.Error as exc:
        if is_corrupt(exc):  # a damaged file is set aside, not kept
            raise
        raise SchemaError(
            f"schema version {version} could not be migrated to {current} ({exc}); {_LEFT_AS_IS}"
        ) from exc


def require_current_schema(conn: sqlite3.Connection, path: str, current: int) -> None:
    """For a reader, which may change nothing: SchemaError unless the tables are at `current`."""
    version = schema_version(conn, path, current)
    if version is None:
        raise SchemaError("no tables yet; a process that can write it creates them")
    if version != current:
        raise SchemaError(
            f"schema version {version} is older than this ucudnn's {current}; "
            "a process that can write it migrates it"
        )


_LEFT_AS_IS = "left as is; move it aside, or set UCUDNN_DATABASE to another path, for a fresh cache"


def schema_version(conn: sqlite3.Connection, path: str, current: int) -> int | None:
    """The schema version of our database: `current` or one that migrates to it; None for an
    empty database (a cache about to be created). Raises CacheError for a foreign database and
    SchemaError for ours at a version this ucudnn cannot read."""
    owner = conn.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if owner != APPLICATION_ID and (owner != 0 or tables):
        raise CacheError(path, not_ours(owner))
    if not tables:
        return None
    found = (
        conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        if "schema_version" in tables
        else None
    )
    if found is None:  # no table, no row, or NULL
        raise SchemaError(f"no schema version recorded (this ucudnn's is {current}); {_LEFT_AS_IS}")
    if not isinstance(found, int):  # text, a fraction, bytes: never guess what it means
        raise SchemaError(
            f"schema version {shown(found)} is not an integer (this ucudnn's is "
            f"{current}); {_LEFT_AS_IS}"
        )
    if found > current:
        raise SchemaError(
            f"schema version {found} is newer than this ucudnn's {current}; {_LEFT_AS_IS}"
        )
    if any(step not in MIGRATIONS for step in range(found, current)):
        raise SchemaError(
            f"schema version {found} is older than this ucudnn's {current}, with no "
            f"migration to it; {_LEFT_AS_IS}"
        )
    return found


def not_ours(owner: int) -> str:
    """Why a database whose application_id is `owner` is not a cache of ours."""
    if owner == 0:
        return (
            "an SQLite database without ucudnn's application_id, as is a cache written by "
            "ucudnn before schema version 2: delete such a cache, it can be measured again"
        )
    return (
        f"an SQLite database with application_id {owner:#010x}, not ucudnn's {APPLICATION_ID:#010x}"
    )


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # in this transaction
    for table in _TABLES:
        _create_table(conn, table)


def _create_table(conn: sqlite3.Connection, table: str) -> None:
    conn.execute(f"CREATE TABLE {table} ({_TABLES[table]})")
