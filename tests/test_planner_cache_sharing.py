"""Several users, one cache: a user who may not write the cache still reads what is safe to
read. An interrupted write (a hot rollback journal, left by a writer that crashed) is rolled
back in a private copy, never read torn; a reader who cannot even read the journal is told what
the owner must do. Either way one warning says that new measurements stay in memory.

Permission bits do not stop root, so when the tests run as root the reader is a child process
running as nobody (setpriv); otherwise it runs as this user, with the write permissions taken
away."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, fill, ok, snapshot
from ucudnn.planner.cache import BenchmarkCache, inspect_cache
from ucudnn.planner.tables import Candidate
from ucudnn.planner.units import format_size

ROOT = Path(__file__).resolve().parents[1]
SETS = 300  # enough pages that the interrupted write reaches the file before it stops
NOBODY = 65534

# A writer that stops mid-transaction, after SQLite has written part of it to the file (its
# page cache holds one page), as a crash or a kill would leave it: the journal stays, hot.
INTERRUPTED_WRITE = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE measurements SET median_ms = 7, min_ms = 7, max_ms = 7")
os._exit(0)
"""

# What a user who may not write the cache finds there, as one JSON line.
READER = """
import json, sys, warnings
from tests.test_planner_cache import FACTS, PROBLEM, ok
from ucudnn.planner.cache import BenchmarkCache, inspect_cache
path, sets = sys.argv[1], int(sys.argv[2])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with BenchmarkCache(path) as cache:
        found = [cache.candidates(PROBLEM, "forward", b, FACTS) for b in range(1, sets + 1)]
        cache.store(PROBLEM, "forward", 4096, FACTS, [ok(4096, 0)])
        cache.store(PROBLEM, "forward", 8192, FACTS, [ok(8192, 0)])
        kept = cache.candidates(PROBLEM, "forward", 4096, FACTS) is not None
print(json.dumps({
    "times": sorted({tuple(c.time_ms for c in f) if f is not None else None for f in found},
                    key=str),
    "kept": kept,
    "warnings": [str(w.message) for w in caught],
    "report": inspect_cache(path).describe(),
}))
"""


def reader_command() -> list[str]:
    if os.geteuid() != 0:
        return [sys.executable]
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and no setpriv to read the cache as another user")
    ids = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    command = ["setpriv", *ids, sys.executable]
    if subprocess.run([*command, "-c", "pass"], capture_output=True).returncode != 0:
        pytest.skip(f"another user cannot run {sys.executable} (its files are closed to them)")
    return command


def read_as_other_user(path: Path, sets: int = SETS) -> dict[str, Any]:
    result = subprocess.run(
        [*reader_command(), "-c", READER, str(path), str(sets)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0 and "ModuleNotFoundError" in result.stderr:
        pytest.skip(f"the other user cannot import ucudnn from {ROOT}")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory that others may read (pytest's tmp_path is the user's alone)."""
    directory = Path(tempfile.mkdtemp(prefix="ucudnn-shared-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        for path in (directory, *directory.iterdir()):
            path.chmod(0o755)
        shutil.rmtree(directory)


def take_write_permission(directory: Path) -> None:
    """So that the reader may not write: for root's nobody, the files are root's already."""
    if os.geteuid() != 0:
        for path in (*directory.iterdir(), directory):
            path.chmod(path.stat().st_mode & ~0o222)


def interrupted_write(path: Path) -> None:
    fill(path, sets=SETS)
    subprocess.run([sys.executable, "-c", INTERRUPTED_WRITE, str(path)], check=True, timeout=60)
    assert Path(f"{path}-journal").stat().st_size > 0
    # The file itself is torn: read as it is, it mixes the interrupted write with older rows.
    uri = f"{path.as_uri()}?immutable=1"
    with sqlite3.connect(uri, uri=True) as torn:
        times = {t for (t,) in torn.execute("SELECT DISTINCT median_ms FROM measurements")}
    assert times == {1.0, 2.0, 7.0}


def owner() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def interrupted_text(path: Path) -> str:
    return (
        f"an interrupted write left {path}-journal, which only a process that can write there "
        f"may roll back: open the cache once as its owner, {owner()}, e.g. python -c "
        f"\"from ucudnn.planner import BenchmarkCache; BenchmarkCache('{path}').close()\""
    )


COMMITTED = [[1.0, 2.0]]  # every set, as the last complete write left it
KEPT_IN_MEMORY = "new measurements are kept in memory for this process only"


def test_reader_who_cannot_write_reads_the_last_complete_write(shared: Path) -> None:
    path = shared / "cache.sqlite"
    interrupted_write(path)
    take_write_permission(shared)
    before = snapshot(shared)
    found = read_as_other_user(path)
    assert found["times"] == COMMITTED
    assert found["kept"]
    assert found["warnings"] == [
        f"ucudnn benchmark cache {path} is read-only ({interrupted_text(path)}); {KEPT_IN_MEMORY}"
    ]
    assert found["report"] == (
        f"{path} ({SETS} measured problem sizes, {SETS * 2} rows, "
        f"{format_size(path.stat().st_size)}); "
        f"read as its last complete write left it: {interrupted_text(path)}"
    )
    assert snapshot(shared) == before  # the journal is the owner's to roll back


def test_reader_who_cannot_write_a_whole_cache_reads_it(shared: Path) -> None:
    path = shared / "cache.sqlite"
    fill(path, sets=3)
    take_write_permission(shared)
    before = snapshot(shared)
    found = read_as_other_user(path, sets=3)
    assert found["times"] == COMMITTED
    assert found["kept"]
    [warning] = found["warnings"]
    assert warning.startswith(f"ucudnn benchmark cache {path} is read-only (")
    assert warning.endswith(KEPT_IN_MEMORY)
    size = format_size(path.stat().st_size)
    assert found["report"] == f"{path} (3 measured problem sizes, 6 rows, {size})"
    assert snapshot(shared) == before


def test_reader_who_cannot_read_the_journal_is_told_what_the_owner_must_do(
    shared: Path,
) -> None:
    path = shared / "cache.sqlite"
    interrupted_write(path)
    Path(f"{path}-journal").chmod(0)  # root's own reads ignore this; nobody's do not
    take_write_permission(shared)
    before = snapshot(shared) if os.geteuid() == 0 else None
    found = read_as_other_user(path)
    assert found["times"] == [None]  # nothing torn: nothing at all
    assert found["kept"]
    assert found["warnings"] == [
        f"ucudnn benchmark cache {path} cannot be used ({interrupted_text(path)}); "
        "keeping measurements in memory for this process"
    ]
    assert found["report"] == f"{path}: cannot be used: {interrupted_text(path)}"
    if before is not None:
        assert snapshot(shared) == before


def test_read_only_open_reads_a_rolled_back_copy(tmp_path: Path) -> None:
    # read_only=True is the same decision (SQLite's mode=ro) for any user, root included.
    path = tmp_path / "cache.sqlite"
    interrupted_write(path)
    before = snapshot(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with BenchmarkCache(path, read_only=True) as cache:
            for b in (1, SETS // 2, SETS):
                assert cache.candidates(PROBLEM, "forward", b, FACTS) == [
                    Candidate(b, 0, 1.0, 0),
                    Candidate(b, 1, 2.0, 0),
                ]
            assert (cache.stats().sets, cache.stats().measurements) == (SETS, SETS * 2)
            assert not caught
            cache.store(PROBLEM, "forward", 4096, FACTS, [ok(4096, 0)])
            assert cache.candidates(PROBLEM, "forward", 4096, FACTS) == [Candidate(4096, 0, 1.0, 0)]
    assert [str(w.message) for w in caught] == [
        f"ucudnn benchmark cache {path} is read-only (opened with read_only=True); {KEPT_IN_MEMORY}"
    ]
    report = inspect_cache(path)
    assert report.stats is not None and report.stats.sets == SETS
    assert report.problem == f"read as its last complete write left it: {interrupted_text(path)}"
    assert snapshot(tmp_path) == before
    assert not list(Path(tempfile.gettempdir()).glob(f"ucudnn-cache-*/{path.name}"))


def test_copy_reader_follows_the_owner_once_it_rolls_back(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    interrupted_write(path)
    with BenchmarkCache(path, read_only=True) as reader:
        assert reader.candidates(PROBLEM, "forward", 1, FACTS) == [
            Candidate(1, 0, 1.0, 0),
            Candidate(1, 1, 2.0, 0),
        ]
        with BenchmarkCache(path) as writer:  # the owner: SQLite rolls the journal back
            writer.store(PROBLEM, "forward", 4096, FACTS, [ok(4096, 0, 0.5)])
        assert not Path(f"{path}-journal").exists()
        assert reader.candidates(PROBLEM, "forward", 4096, FACTS) == [Candidate(4096, 0, 0.5, 0)]
        assert reader.stats().sets == SETS + 1
    assert inspect_cache(path).problem == ""


def test_rollback_by_the_owner_while_copying_is_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.sqlite"
    interrupted_write(path)
    copy_file = shutil.copyfile

    def owner_rolls_back_first(source: str, target: str) -> object:
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA schema_version")  # rolls the journal back, deletes it
        return copy_file(source, target)

    monkeypatch.setattr(shutil, "copyfile", owner_rolls_back_first)
    with BenchmarkCache(path, read_only=True) as cache:
        assert cache.candidates(PROBLEM, "forward", SETS, FACTS) == [
            Candidate(SETS, 0, 1.0, 0),
            Candidate(SETS, 1, 2.0, 0),
        ]
    assert inspect_cache(path).problem == ""  # the file itself, whole again


def test_unreadable_lock_files_do_not_stop_a_reader(shared: Path) -> None:
    path = shared / "cache.sqlite"
    fill(path, sets=3)
    for lock in shared.glob("cache.sqlite.*"):
        lock.chmod(stat.S_IWUSR)  # write-only: nobody else may open them to read
    take_write_permission(shared)
    found = read_as_other_user(path, sets=3)
    assert found["times"] == COMMITTED
