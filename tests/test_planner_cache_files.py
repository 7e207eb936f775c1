"""Which files the benchmark cache may use, create or change: a file that is not ours is refused
and left exactly as it was, a cache that cannot be written still serves hits, an unusable path
falls back to memory, and `inspect_cache` reports without changing anything."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import sqlite3
import stat
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, damage_pages, fill, ok, snapshot
from ucudnn.errors import CacheError, CacheWarning
from ucudnn.planner.cache import APPLICATION_ID, SCHEMA_VERSION, BenchmarkCache, inspect_cache
from ucudnn.planner.tables import Candidate


def sqlite_file(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


def text_file(path: Path) -> None:
    path.write_text("notes, not a database\n" * 100)


def measurements_of_another_program(path: Path) -> None:
    sqlite_file(
        path,
        "CREATE TABLE measurements (id INTEGER PRIMARY KEY, value REAL)",
        "INSERT INTO measurements (value) SELECT value FROM generate_series(1, 1000)"
        if sqlite3.sqlite_version_info >= (3, 46)
        else "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
        "INSERT INTO measurements (value) SELECT i FROM n",
    )


def cache_of_schema_version_1(path: Path) -> None:
    """What ucudnn wrote before files were marked: our tables, no application_id."""
    sqlite_file(
        path,
        "CREATE TABLE schema_version (version INTEGER NOT NULL)",
        "INSERT INTO schema_version VALUES (1)",
        "CREATE TABLE measurement_sets (id INTEGER PRIMARY KEY, problem TEXT)",
    )


def another_application(path: Path) -> None:
    sqlite_file(path, "PRAGMA application_id = 305419896", "CREATE TABLE t (x)")  # 0x12345678


def header_only(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + bytes(20))


# Told apart from the header alone, so an old cache of ours reads as any other program's.
UNMARKED = (
    "an SQLite database without ucudnn's application_id, as is a cache written by ucudnn "
    "before schema version 2: delete such a cache, it can be measured again"
)
FOREIGN: dict[str, tuple[Callable[[Path], None], str]] = {
    "text": (text_file, "not an SQLite database"),
    "truncated": (header_only, "not an SQLite database"),
    "measurements": (measurements_of_another_program, UNMARKED),
    "version 1": (cache_of_schema_version_1, UNMARKED),
    "application": (
        another_application,
        "an SQLite database with application_id 0x12345678, not ucudnn's 0x7543444e",
    ),
}


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_foreign_file_is_refused_and_untouched(tmp_path: Path, kind: str, read_only: bool) -> None:
    make, reason = FOREIGN[kind]
    path = tmp_path / "cache.sqlite"
    make(path)
    before = snapshot(tmp_path)
    with pytest.raises(CacheError, match="is not a ucudnn benchmark cache") as raised:
        BenchmarkCache(path, read_only=read_only)
    assert (raised.value.path, raised.value.reason) == (str(path), reason)
    assert str(path) in str(raised.value)
    assert snapshot(tmp_path) == before  # not written, not moved, nothing made beside it


def test_refusal_survives_pickling() -> None:  # e.g. raised in a worker process
    error = pickle.loads(pickle.dumps(CacheError("/data/x.sqlite", "not an SQLite database")))
    assert (error.path, error.reason) == ("/data/x.sqlite", "not an SQLite database")
    assert str(error).startswith("/data/x.sqlite is not a ucudnn benchmark cache (not an SQLite")
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_inspect_reports_a_foreign_file(tmp_path: Path, kind: str) -> None:
    make, reason = FOREIGN[kind]
    path = tmp_path / "cache.sqlite"
    make(path)
    before = snapshot(tmp_path)
    report = inspect_cache(path)
    assert report.stats is None
    assert report.describe() == f"{path}: not a ucudnn benchmark cache ({reason}); left as is"
    assert snapshot(tmp_path) == before


def test_inspect_ignores_bad_settings_of_anything_but_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UCUDNN_BATCH_SIZE_POLICY", "foo")
    monkeypatch.setenv("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "lots")
    monkeypatch.setenv("UCUDNN_CHECK", "maybe")
    monkeypatch.delenv("UCUDNN_DATABASE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "ucudnn" / "benchmarks.sqlite"
    assert inspect_cache().describe() == f"{path} (not created yet)"
    with BenchmarkCache() as cache:
        assert cache.path == str(path)
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    report = inspect_cache()
    assert report.stats is not None and report.stats.sets == 1


def _die_mid_transaction(path: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA cache_size = 1")  # spill changed pages into the file before commit
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE measurements SET value = -value")
    os._exit(0)  # neither commit nor rollback: the journal beside the file stays hot


def test_hot_journal_of_a_foreign_file_is_not_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    measurements_of_another_program(path)
    process = multiprocessing.get_context("fork").Process(target=_die_mid_transaction, args=(path,))
    process.start()
    process.join(timeout=60)
    assert Path(f"{path}-journal").stat().st_size > 0
    before = snapshot(tmp_path)
    with pytest.raises(CacheError):
        BenchmarkCache(path)
    assert inspect_cache(path).stats is None
    assert snapshot(tmp_path) == before
    # The journal was hot: any SQLite connection would have rolled the file back.
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path, copy, ignore=shutil.ignore_patterns("copy"))
    sqlite_file(copy / "cache.sqlite", "SELECT COUNT(*) FROM measurements")
    assert snapshot(copy) != before


def test_new_cache_is_marked_and_keeps_a_rollback_journal(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path)
    header = path.read_bytes()[:100]
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert (header[18], header[19]) == (1, 1)  # legacy (rollback journal) read/write, not WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache.sqlite",
        "cache.sqlite.gate",
        "cache.sqlite.lock",
    ]


def test_empty_file_becomes_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.touch()
    fill(path)
    with BenchmarkCache(path) as cache:
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) == [
            Candidate(1, 0, 1.0, 0),
            Candidate(1, 1, 2.0, 0),
        ]


def marked_file(path: Path, version: int) -> None:
    """Ours (it carries our application_id), at the given schema version."""
    sqlite_file(
        path,
        f"PRAGMA application_id = {APPLICATION_ID}",
        "CREATE TABLE schema_version (version INTEGER NOT NULL)",
        f"INSERT INTO schema_version VALUES ({version})",
    )


def damaged_cache(path: Path) -> None:
    fill(path, sets=100)
    damage_pages(path)


UNUSABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "older": (
        lambda path: marked_file(path, SCHEMA_VERSION - 1),
        f"schema version {SCHEMA_VERSION - 1} is older than this ucudnn's {SCHEMA_VERSION}",
    ),
    "newer": (
        lambda path: marked_file(path, SCHEMA_VERSION + 1),
        f"schema version {SCHEMA_VERSION + 1} is newer than this ucudnn's {SCHEMA_VERSION}",
    ),
    "corrupt": (damaged_cache, "corrupt"),
}


@pytest.mark.parametrize("kind", list(UNUSABLE))
def test_read_only_reports_and_changes_nothing(tmp_path: Path, kind: str) -> None:
    make, reason = UNUSABLE[kind]
    path = tmp_path / "cache.sqlite"
    make(path)
    before = snapshot(tmp_path)
    with pytest.warns(CacheWarning, match=f"cannot be used \\({reason}.*in memory"):
        cache = BenchmarkCache(path, read_only=True)
    with cache:
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is None
    report = inspect_cache(path)
    assert report.stats is None
    assert report.describe().startswith(f"{path}: cannot be used: {reason}")
    assert snapshot(tmp_path) == before


def test_read_only_serves_hits_and_keeps_new_measurements_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=2)
    for lock in tmp_path.glob("cache.sqlite.*"):
        lock.unlink()  # read-only use must not make them
    before = snapshot(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with BenchmarkCache(path, read_only=True) as cache:
            assert cache.candidates(PROBLEM, "forward", 2, FACTS) == [
                Candidate(2, 0, 1.0, 0),
                Candidate(2, 1, 2.0, 0),
            ]
            assert not caught
            cache.store(PROBLEM, "forward", 8, FACTS, [ok(8, 3, 0.5)])
            cache.store(PROBLEM, "forward", 2, FACTS, [ok(2, 4, 0.25)])  # replaces a file set
            assert cache.candidates(PROBLEM, "forward", 8, FACTS) == [Candidate(8, 3, 0.5, 0)]
            assert cache.candidates(PROBLEM, "forward", 2, FACTS) == [Candidate(2, 4, 0.25, 0)]
            assert cache.stats().sets == 2  # the file's
    assert [str(w.message) for w in caught] == [
        f"ucudnn benchmark cache {path} is read-only (opened with read_only=True); "
        "new measurements are kept in memory for this process only"
    ]
    assert snapshot(tmp_path) == before


def test_read_only_path_with_uri_characters(tmp_path: Path) -> None:
    # Read-only connections name the file by URI, where ?, # and % mean something.
    path = tmp_path / "a?b#c%20d" / "cache?.sqlite"
    fill(path)
    with BenchmarkCache(path, read_only=True) as cache:
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is not None
    assert inspect_cache(path).stats is not None


def test_read_only_creates_nothing_for_a_missing_cache(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is wrong: no warning
        with BenchmarkCache(path, read_only=True) as cache:
            assert cache.candidates(PROBLEM, "forward", 1, FACTS) is None
            assert cache.stats().sets == 0
        report = inspect_cache(path)
    assert report.stats is None
    assert report.describe() == f"{path} (not created yet)"
    assert list(tmp_path.iterdir()) == []


def test_inspect_counts_sets_rows_and_bytes(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=3)
    monkeypatch.setenv("UCUDNN_DATABASE", str(path))
    before = snapshot(tmp_path)
    report = inspect_cache()  # the configured path
    assert report.path == str(path)
    assert report.stats is not None
    assert (report.stats.sets, report.stats.measurements) == (3, 6)
    assert report.stats.file_bytes == path.stat().st_size
    assert report.describe().startswith(f"{path} (3 measured problem sizes, 6 rows, ")
    assert snapshot(tmp_path) == before


def test_parent_that_is_a_file_gives_a_memory_cache(tmp_path: Path, monkeypatch) -> None:
    # Fails for every user, root included, unlike a directory without write permission.
    (tmp_path / "plain").write_text("a file, not a directory")
    path = tmp_path / "plain" / "cache.sqlite"
    monkeypatch.setenv("UCUDNN_DATABASE", str(path))
    with pytest.warns(CacheWarning, match="cannot be used.*Not a directory.*in memory"):
        cache = BenchmarkCache()
    with cache, warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, at open
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    assert "cannot be used: [Errno 20] Not a directory" in inspect_cache(path).describe()


def test_device_file_is_not_used(tmp_path: Path) -> None:
    with pytest.warns(CacheWarning, match="is not a regular file.*in memory"):
        cache = BenchmarkCache(os.devnull)
    with cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    assert "is not a regular file" in inspect_cache(os.devnull).describe()


def _remove_write_permission(path: Path, where: str) -> None:
    if where == "file":
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    else:
        path.parent.chmod(stat.S_IRWXU & ~stat.S_IWUSR)


@pytest.mark.parametrize("where", ["file", "directory", "directory without lock files"])
def test_unwritable_cache_serves_hits(tmp_path: Path, where: str) -> None:
    directory = tmp_path / "shared"
    directory.mkdir()
    path = directory / "cache.sqlite"
    fill(path, sets=2)
    if where == "directory without lock files":
        for lock in directory.glob("cache.sqlite.*"):
            lock.unlink()
    _remove_write_permission(path, where)
    try:
        if os.access(path if where == "file" else directory, os.W_OK):
            pytest.skip("permissions do not stop this user from writing (root)")
        before = snapshot(directory)
        with BenchmarkCache(path) as cache:
            assert cache.candidates(PROBLEM, "forward", 1, FACTS) is not None
            with pytest.warns(CacheWarning, match="is read-only.*kept in memory"):
                cache.store(PROBLEM, "forward", 8, FACTS, [ok(8, 3, 0.5)])
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # once is enough
                cache.store(PROBLEM, "forward", 16, FACTS, [ok(16, 3, 0.5)])
            assert cache.candidates(PROBLEM, "forward", 8, FACTS) == [Candidate(8, 3, 0.5, 0)]
            assert cache.candidates(PROBLEM, "forward", 16, FACTS) == [Candidate(16, 3, 0.5, 0)]
        assert snapshot(directory) == before
    finally:
        directory.chmod(stat.S_IRWXU)
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
