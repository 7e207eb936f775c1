"""Schema versions of the benchmark cache: a cache at schema 2 (committed as
tests/data/cache-schema-2.sqlite) migrates to 4 keeping every row, so does a cache at schema 3
(tests/data/cache-schema-3.sqlite), and a cache at a version this ucudnn cannot read is left
exactly as it was.

The fixture was made with ucudnn at schema 2 (commit 4a1f60c, before schema 3), by running
`fill_schema_2(BenchmarkCache("tests/data/cache-schema-2.sqlite"))` from this module and deleting
the lock files made beside it. The function uses only what both versions accept, so the test
checks the migrated file against what it stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, fill, ok, snapshot
from ucudnn.errors import CacheWarning
from ucudnn.planner import cache as cache_module
from ucudnn.planner.cache import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    BenchmarkCache,
    Measurement,
    inspect_cache,
)
from ucudnn.planner.tables import Candidate

H200 = dataclasses.replace(FACTS, device_name="NVIDIA H200")

# What fill_schema_2 stores: (kernel, micro-batch, facts) -> measurements.
SCHEMA_2_SETS = {
    ("forward", 4, FACTS): [
        ok(4, 0, 1.0, 0),
        ok(4, 1, 0.5, 1024, math_type="tensor_op", deterministic=True),
        ok(4, 1, 0.625, 1024),
        Measurement.timed(Candidate(4, 2, 0.75, 2048), [0.7, 0.75, 0.9]),
        Measurement.failed(4, 3, "default", "CUDNN_STATUS_NOT_SUPPORTED"),
        Measurement(4, 5, "CUDNN_STATUS_ALLOC_FAILED", workspace_bytes=1 << 40, repeats=0),
    ],
    ("forward", 2, FACTS): [],  # measured, nothing ran: still a hit
    ("backward_filter", 8, FACTS): [ok(8, 0, 3.0, 0, deterministic=True), ok(8, 1, 2.5, 64)],
    ("forward", 4, H200): [ok(4, 6, 0.25, 4096)],
}


def fill_schema_2(cache: BenchmarkCache) -> None:
    with cache:
        for (kernel, micro_batch, facts), results in SCHEMA_2_SETS.items():
            cache.store(PROBLEM, kernel, micro_batch, facts, results)


FIXTURE = Path(__file__).parent / "data" / "cache-schema-2.sqlite"
GRAPH = "graph/A+FALLBACK/v1"


@pytest.fixture
def schema_2(tmp_path: Path) -> Path:
    """A copy of the committed schema-2 cache: tests never change the fixture itself."""
    path = tmp_path / "cache.sqlite"
    shutil.copyfile(FIXTURE, path)
    return path


def schema_version(path: Path) -> object:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]


def rows(path: Path, query: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(query).fetchall()


def in_cache_order(results: list[Measurement]) -> list[Measurement]:
    return sorted(results, key=lambda m: (m.algo, m.engine, m.math_type))


def test_fixture_is_a_schema_2_cache() -> None:
    header = FIXTURE.read_bytes()[:100]
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert schema_version(FIXTURE) == 2
    assert len(rows(FIXTURE, "SELECT * FROM measurement_sets")) == len(SCHEMA_2_SETS)


def test_schema_2_migrates_keeping_every_row(schema_2: Path, tmp_path: Path) -> None:
    sets_before = rows(schema_2, "SELECT * FROM measurement_sets ORDER BY id")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say: the cache is simply current
        with BenchmarkCache(schema_2) as cache:
            for (kernel, micro_batch, facts), results in SCHEMA_2_SETS.items():
                found = cache.lookup(PROBLEM, kernel, micro_batch, facts)
                assert found == in_cache_order(results)
                assert all(m.engine == "" and m.notes == () for m in found)
                assert cache.lookup(PROBLEM, kernel, micro_batch, facts, GRAPH) is None
            stats = cache.stats()
    assert (stats.sets, stats.measurements) == (4, 9)
    assert schema_version(schema_2) == SCHEMA_VERSION == 4
    # Ids and times of the sets are kept; every copied set is a legacy one.
    sets_after = rows(
        schema_2,
        "SELECT id, problem, kernel, micro_batch, device_name, compute_capability, "
        "cudnn_version, cuda_version, measured_at, source FROM measurement_sets ORDER BY id",
    )
    assert sets_after == [(*row, "legacy") for row in sets_before]
    # The migrated tables are exactly those of a new cache, and nothing of schema 2 is left.
    fill(tmp_path / "new.sqlite")
    schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    assert rows(schema_2, schema) == rows(tmp_path / "new.sqlite", schema)
    assert rows(schema_2, "PRAGMA foreign_key_check") == []
    assert rows(schema_2, "PRAGMA integrity_check") == [("ok",)]


# What the schema-3 fixture holds: (kernel, micro-batch, source) -> measurements. It was made
# with ucudnn at schema 3 (commit 45aef76's cache.py), storing these with PROBLEM and FACTS.
SCHEMA_3_SETS = {
    ("forward", 4, "legacy"): [
        ok(4, 0, 1.0, 0),
        ok(4, 1, 0.5, 1024, math_type="tensor_op", deterministic=True),
    ],
    ("forward", 4, "graph/A+FALLBACK/v2"): [
        ok(4, 62, 0.125, 8 << 20, engine="eng62_k2=0", notes=("TENSOR_CORE",)),
    ],
    ("backward_filter", 8, "graph/A+FALLBACK/v2"): [
        ok(8, 9, 2.0, 64, engine="eng9_k2=1", notes=("BETA1_UNSUPPORTED",)),
    ],
}
FIXTURE_3 = Path(__file__).parent / "data" / "cache-schema-3.sqlite"


def test_schema_3_migrates_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    shutil.copyfile(FIXTURE_3, path)
    assert schema_version(path) == 3
    sets_before = rows(path, "SELECT * FROM measurement_sets ORDER BY id")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with BenchmarkCache(path) as cache:
            for (kernel, micro_batch, source), results in SCHEMA_3_SETS.items():
                found = cache.lookup(PROBLEM, kernel, micro_batch, FACTS, source)
                assert found == in_cache_order(results)
                assert all(m.confirmed is None for m in found)  # not recorded then
            confirmed = ok(4, 0, 0.75, 0, confirmed=True)
            cache.store(PROBLEM, "forward", 4, FACTS, [confirmed], "fast/v1/legacy")
    assert schema_version(path) == SCHEMA_VERSION == 4
    assert rows(path, "SELECT * FROM measurement_sets ORDER BY id")[:3] == sets_before
    with BenchmarkCache(path) as cache:
        assert cache.lookup(PROBLEM, "forward", 4, FACTS, "fast/v1/legacy") == [confirmed]
        assert cache.stats().sets == len(SCHEMA_3_SETS) + 1
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


def test_migrated_cache_takes_graph_sets_beside_legacy_ones(schema_2: Path) -> None:
    engine = ok(4, 62, 0.125, 8 << 20, engine="eng62_k2=0", notes=("TENSOR_CORE",))
    with BenchmarkCache(schema_2) as cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [engine], GRAPH)
    with BenchmarkCache(schema_2) as cache:
        assert cache.lookup(PROBLEM, "forward", 4, FACTS, GRAPH) == [engine]
        legacy = SCHEMA_2_SETS["forward", 4, FACTS]
        assert cache.lookup(PROBLEM, "forward", 4, FACTS) == in_cache_order(legacy)
        assert cache.stats().sets == len(SCHEMA_2_SETS) + 1


def test_failed_migration_leaves_the_file_as_it_was(
    schema_2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def migrate_then_fail(conn: sqlite3.Connection) -> None:
        migrate(conn)  # everything copied and dropped: the failure must undo it all
        raise sqlite3.OperationalError("disk I/O error")

    migrate = cache_module.MIGRATIONS[2]
    before = schema_2.read_bytes()
    monkeypatch.setitem(cache_module.MIGRATIONS, 2, migrate_then_fail)
    with pytest.warns(
        CacheWarning,
        match=r"cannot be used \(schema version 2 could not be migrated to 4 \(disk I/O error\); "
        "left as is; .*in memory",
    ):
        cache = BenchmarkCache(schema_2)
    with cache:
        assert cache.lookup(PROBLEM, "forward", 4, FACTS) is None
    assert schema_2.read_bytes() == before
    assert not Path(f"{schema_2}-journal").exists()
    monkeypatch.undo()
    with BenchmarkCache(schema_2) as cache:  # the real migration still finds everything
        assert cache.stats().measurements == 9


def test_read_only_open_of_schema_2_changes_nothing(schema_2: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    reason = "schema version 2 is older than this ucudnn's 4; a process that can write it migrates"
    with pytest.warns(CacheWarning, match=f"cannot be used \\({reason}"):
        BenchmarkCache(schema_2, read_only=True).close()
    assert inspect_cache(schema_2).describe() == f"{schema_2}: cannot be used: {reason} it"
    assert snapshot(tmp_path) == before


def marked(path: Path, *statements: str) -> None:
    """Ours (it carries our application_id), holding what `statements` make, beside a table of
    data that must survive."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("CREATE TABLE measurement_sets (id INTEGER PRIMARY KEY, problem TEXT)")
        conn.execute("INSERT INTO measurement_sets VALUES (1, 'measured for hours')")
        for statement in statements:
            conn.execute(statement)


def at_version(version: str, column: str = "version INTEGER NOT NULL") -> Callable[[Path], None]:
    return lambda path: marked(
        path,
        f"CREATE TABLE schema_version ({column})",
        f"INSERT INTO schema_version VALUES ({version})",
    )


LEFT_AS_IS = "left as is; move it aside, or set UCUDNN_DATABASE to another path, for a fresh cache"
UNREADABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "older, no migration": (
        at_version("1"),
        "schema version 1 is older than this ucudnn's 4, with no migration to it",
    ),
    "zero": (at_version("0"), "schema version 0 is older than this ucudnn's 4, with no migration"),
    "negative": (at_version("-2"), "schema version -2 is older than this ucudnn's 4"),
    "newer": (at_version("5"), "schema version 5 is newer than this ucudnn's 4"),
    "text": (
        at_version("'two'", "version"),
        "schema version 'two' is not an integer \\(this ucudnn's is 4\\)",
    ),
    "digits as text": (at_version("'3'", "version TEXT"), "schema version '3' is not an integer"),
    "fraction": (at_version("2.5", "version"), "schema version 2.5 is not an integer"),
    "blob": (at_version("X'03'", "version"), "schema version b'\\\\x03' is not an integer"),
    "null": (at_version("NULL", "version"), "no schema version recorded \\(this ucudnn's is 4\\)"),
    "no row": (
        lambda path: marked(path, "CREATE TABLE schema_version (version INTEGER NOT NULL)"),
        "no schema version recorded",
    ),
    "no table": (marked, "no schema version recorded"),
}


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_unreadable_version_is_left_intact(tmp_path: Path, kind: str) -> None:
    make, reason = UNREADABLE[kind]
    path = tmp_path / "cache.sqlite"
    make(path)
    before = path.read_bytes()
    with pytest.warns(CacheWarning) as caught:
        cache = BenchmarkCache(path)
    with cache:
        assert cache.lookup(PROBLEM, "forward", 4, FACTS) is None
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])  # kept in memory, said at open
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    [warning] = caught
    assert re.search(f"cache {path} cannot be used \\({reason}", str(warning.message))
    assert f"{LEFT_AS_IS}); keeping measurements in memory" in str(warning.message)
    assert path.read_bytes() == before
    # Nothing beside it but the lock files a writable open makes: no journal, no copy.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache.sqlite",
        "cache.sqlite.gate",
        "cache.sqlite.lock",
    ]
    assert re.match(f"{path}: cannot be used: {reason}", inspect_cache(path).describe())
    with pytest.warns(CacheWarning, match=reason):
        BenchmarkCache(path, read_only=True).close()
    assert path.read_bytes() == before
    assert rows(path, "SELECT * FROM measurement_sets") == [(1, "measured for hours")]


def test_schema_2_without_its_migration_is_left_intact(
    schema_2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = schema_2.read_bytes()
    monkeypatch.delitem(cache_module.MIGRATIONS, 2)
    with pytest.warns(CacheWarning, match="schema version 2 is older than this ucudnn's 4, with"):
        BenchmarkCache(schema_2).close()
    assert schema_2.read_bytes() == before


def test_marked_file_without_tables_becomes_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # nothing in it to lose
    fill(path)
    assert schema_version(path) == SCHEMA_VERSION


def test_migration_keeps_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v1.sqlite"
    with BenchmarkCache(path) as cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])

    def add_note_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE measurements ADD COLUMN note TEXT DEFAULT 'migrated'")

    monkeypatch.setattr(cache_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(cache_module.MIGRATIONS, SCHEMA_VERSION, add_note_column)
    with BenchmarkCache(path) as cache:
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    assert schema_version(path) == SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT note FROM measurements").fetchall() == [("migrated",)]


def test_newer_version_is_not_touched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.sqlite"
    with BenchmarkCache(path) as cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    before = path.read_bytes()
    monkeypatch.setattr(cache_module, "SCHEMA_VERSION", SCHEMA_VERSION - 1)
    with pytest.warns(CacheWarning, match="newer than this ucudnn"):
        cache = BenchmarkCache(path)
    with cache:
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) is None  # in memory instead
    assert path.read_bytes() == before
    monkeypatch.undo()
    with BenchmarkCache(path) as cache:
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
