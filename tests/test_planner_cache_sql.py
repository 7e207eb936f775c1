"""The cache's SQL on ":memory:" connections, for what the tests through files do not reach: the
ownership check made in SQL after the header's (for a file swapped in between), a store that
fails inside its transaction, SQLite's refusals to write told apart from failed writes, and
migrations stopping at the version they are given."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, ok
from ucudnn.errors import CacheError
from ucudnn.planner.cache import sql
from ucudnn.planner.cache.records import Measurement, measurement_key

KEY = measurement_key(PROBLEM, "forward", 4, FACTS, "legacy")
FIXTURE_2 = Path(__file__).parent / "data" / "cache-schema-2.sqlite"


@pytest.fixture
def empty() -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sql.connect(sql.IN_MEMORY, 0.0)) as conn:
        yield conn


@pytest.fixture
def cache() -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sql.connect_memory(sql.SCHEMA_VERSION)) as conn:
        yield conn


def tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def stored(conn: sqlite3.Connection) -> list[Measurement] | None:
    rows = sql.find_set(conn, KEY)
    return None if rows is None else sql.read_measurements(4, rows)


@pytest.mark.parametrize(
    ("application_id", "with_table", "reason"),
    [
        (0x1234, False, "application_id 0x00001234, not ucudnn's 0x7543444e"),
        (0, True, "without ucudnn's application_id"),
    ],
)
def test_foreign_database_is_refused_and_left_as_it_was(
    empty: sqlite3.Connection, application_id: int, with_table: bool, reason: str
) -> None:
    empty.execute(f"PRAGMA application_id = {application_id}")
    if with_table:
        empty.execute("CREATE TABLE theirs (x)")
    with pytest.raises(CacheError, match=reason), sql.transaction(empty):
        sql.prepare_schema(empty, "swapped.sqlite", sql.SCHEMA_VERSION)
    assert tables(empty) == (["theirs"] if with_table else [])
    assert empty.execute("PRAGMA application_id").fetchone()[0] == application_id


def test_empty_database_is_marked_and_prepared_once(empty: sqlite3.Connection) -> None:
    with sql.transaction(empty):
        sql.prepare_schema(empty, sql.IN_MEMORY, sql.SCHEMA_VERSION)
    assert empty.execute("PRAGMA application_id").fetchone()[0] == sql.APPLICATION_ID
    assert empty.execute("SELECT version FROM schema_version").fetchall() == [(4,)]
    changes = empty.total_changes
    with sql.transaction(empty):
        sql.prepare_schema(empty, sql.IN_MEMORY, sql.SCHEMA_VERSION)  # current: writes nothing
    assert empty.total_changes == changes


def test_failed_store_keeps_the_set_it_would_replace(cache: sqlite3.Connection) -> None:
    sql.replace_set(cache, KEY, [ok(4, 0)])
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        sql.replace_set(cache, KEY, [ok(4, 1), ok(4, 1, 2.0)])  # its delete ran first
    assert not cache.in_transaction
    assert stored(cache) == [ok(4, 0)]
    assert sql.stats(cache, None).measurements == 1


def test_refused_writes_are_told_from_failed_ones(cache: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError) as failed:
        sql.replace_set(cache, KEY, [ok(4, 1), ok(4, 1)])
    cache.execute("PRAGMA query_only = ON")  # as a database SQLite may only read
    with pytest.raises(sqlite3.OperationalError) as refused:
        sql.replace_set(cache, KEY, [ok(4, 0)])
    assert sql.cannot_write(refused.value) and not sql.is_corrupt(refused.value)
    assert not sql.cannot_write(failed.value) and not sql.is_corrupt(failed.value)
    assert sql.is_corrupt(sql.CorruptError("*** in database main ***"))


def test_migration_stops_at_the_version_given(empty: sqlite3.Connection) -> None:
    empty.deserialize(FIXTURE_2.read_bytes())
    with sql.transaction(empty):
        sql.prepare_schema(empty, sql.IN_MEMORY, 3)
    assert sql.schema_version(empty, sql.IN_MEMORY, 3) == 3
    assert sql.schema_version(empty, sql.IN_MEMORY, 4) == 3  # one migration short of 4
    with pytest.raises(sql.SchemaError, match="3 is older than this ucudnn's 4; a process"):
        sql.require_current_schema(empty, sql.IN_MEMORY, 4)
    with sql.transaction(empty):
        sql.prepare_schema(empty, sql.IN_MEMORY, 4)
    sql.require_current_schema(empty, sql.IN_MEMORY, 4)
    assert (sql.stats(empty, None).sets, sql.stats(empty, None).measurements) == (4, 9)
