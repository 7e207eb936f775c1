"""No wait on the cache is unbounded. Something else than a regular file where the cache's lock
files or journal belong (a FIFO, whose opening waits for a writer forever) is refused at once,
naming it; a lock held by a stopped or hung process, and an SQLite transaction that is never
finished, end in a timeout that names the holder. `ucudnn info` waits a short while only."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, damage_pages, fill, ok, snapshot
from ucudnn.errors import CacheWarning
from ucudnn.planner.cache import (
    BUSY_TIMEOUT_S,
    INSPECT_TIMEOUT_S,
    BenchmarkCache,
    inspect_cache,
    timeout_from_env,
)
from ucudnn.planner.tables import Candidate

ROOT = Path(__file__).resolve().parents[1]
Holder = Callable[..., int]  # hold(how, *paths) -> pid
WAIT = 0.3  # the timeout the tests give; a hang is caught by the alarm or subprocess timeout

# Takes flock ("sh"/"ex") on the files named, or SQLite's lock ("sqlite-exclusive": a commit
# in progress, which blocks readers; "sqlite-immediate": a write transaction, which blocks
# writers), says so and stops itself, as a process stopped mid-operation would.
HOLDER = """
import fcntl, os, signal, sqlite3, sys
how, paths = sys.argv[1], sys.argv[2:]
if how.startswith("sqlite-"):
    conn = sqlite3.connect(paths[0], isolation_level=None)
    conn.execute("BEGIN " + how.removeprefix("sqlite-").upper())
else:
    for path in paths:
        fcntl.flock(os.open(path, os.O_RDONLY | os.O_CREAT), getattr(fcntl, "LOCK_" + how.upper()))
print("holding", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""


@pytest.fixture
def hold() -> Iterator[Holder]:
    """hold(how, *paths) -> the pid of a stopped process holding those locks."""
    holders: list[subprocess.Popen[str]] = []

    def start(how: str, *paths: Path) -> int:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, how, *map(str, paths)], stdout=subprocess.PIPE, text=True
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        while Path(f"/proc/{holder.pid}/stat").read_text().rpartition(")")[2].split()[0] != "T":
            time.sleep(0.01)
        return holder.pid

    yield start
    for holder in holders:
        holder.kill()
        holder.wait()


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Fails a test that waits on a lock (in Python) instead of hanging the run."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError("still waiting after 60 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def stopped_python(pid: int) -> str:
    return rf"process {pid} \(python[^,)]*, stopped\)"


def fresh_cache(path: Path) -> None:
    fill(path)
    assert {p.name for p in path.parent.iterdir()} >= {"cache.sqlite.lock", "cache.sqlite.gate"}


# -- things that are not regular files ----------------------------------------------------------
# Run in a child process with a time limit: before the fix, opening a FIFO (ours, or SQLite's
# opening of its journal) blocked in C, where no signal reaches Python.
OPEN_ALL_WAYS = """
import json, sys, warnings
from ucudnn.planner.cache import BenchmarkCache, inspect_cache
path = sys.argv[1]
said = {}
for read_only in (False, True):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BenchmarkCache(path, read_only=read_only).close()
    said[str(read_only)] = [str(w.message) for w in caught]
said["inspect"] = inspect_cache(path).describe()
print(json.dumps(said))
"""


@pytest.mark.parametrize("suffix", [".lock", ".gate", "-journal"])
def test_fifo_beside_the_cache_is_refused_at_once(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    fifo = Path(f"{path}{suffix}")
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    before = snapshot_names(tmp_path)
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", OPEN_ALL_WAYS, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 30
    said = json.loads(result.stdout)
    refused = f"{fifo} is not a regular file (a FIFO)"
    for read_only in ("False", "True"):
        assert said[read_only] == [
            f"ucudnn benchmark cache {path} cannot be used ({refused}); keeping measurements "
            "in memory for this process"
        ]
    assert said["inspect"] == f"{path}: cannot be used: {refused}"
    assert snapshot_names(tmp_path) == before


def snapshot_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())  # a FIFO cannot be read for a snapshot


@pytest.mark.parametrize("suffix", [".lock", ".gate"])
def test_link_where_a_lock_file_belongs_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    elsewhere = tmp_path / "elsewhere"
    lock = Path(f"{path}{suffix}")
    lock.unlink()
    lock.symlink_to(elsewhere)  # dangling: following it would create the file there
    with pytest.warns(CacheWarning, match=re.escape(f"{lock} is not a regular file (a symbolic")):
        BenchmarkCache(path).close()
    assert not elsewhere.exists()


def test_directory_where_the_journal_belongs_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    Path(f"{path}-journal").mkdir()
    assert inspect_cache(path).describe() == (
        f"{path}: cannot be used: {path}-journal is not a regular file (a directory)"
    )


# -- locks held too long --------------------------------------------------------------------
@pytest.mark.parametrize("read_only", [False, True])
def test_stopped_recovery_ends_in_a_timeout_naming_it(
    tmp_path: Path, hold: Holder, read_only: bool
) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    pid = hold("ex", f"{path}.gate", f"{path}.lock")
    start = time.monotonic()
    with pytest.warns(CacheWarning) as caught:
        cache = BenchmarkCache(path, read_only=read_only, timeout=WAIT)
    assert time.monotonic() - start < WAIT + 2  # waited once, not once per way of opening
    [warning] = [str(w.message) for w in caught]
    assert re.fullmatch(
        f"ucudnn benchmark cache {re.escape(str(path))} cannot be used "
        f"\\({re.escape(str(path))}.gate is locked by {stopped_python(pid)}: gave up after "
        f"waiting {WAIT} s\\); keeping measurements in memory for this process",
        warning,
    )
    with cache, warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]


def test_timeout_comes_from_the_environment(
    tmp_path: Path, hold: Holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    pid = hold("ex", f"{path}.gate")
    monkeypatch.setenv("UCUDNN_CACHE_TIMEOUT", "0.2")
    with pytest.warns(CacheWarning, match=f"{stopped_python(pid)}: gave up after waiting 0.2 s"):
        BenchmarkCache(path).close()


def test_lock_held_mid_run_gives_the_file_up_once(tmp_path: Path, hold: Holder) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    with BenchmarkCache(path, timeout=WAIT) as cache:
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is not None
        pid = hold("ex", f"{path}.gate")
        with pytest.warns(CacheWarning) as caught:
            assert cache.candidates(PROBLEM, "forward", 1, FACTS) is None  # a miss
        assert [str(w.message) for w in caught] == [
            f"ucudnn benchmark cache {path} is no longer used by this process "
            f"({path}.gate is locked by {caught_process(caught, pid)}: gave up after waiting "
            f"{WAIT} s); measurements are kept in memory"
        ]
        start = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once, and no more waiting
            for b in range(2, 20):
                cache.store(PROBLEM, "forward", b, FACTS, [ok(b, 0)])
                assert cache.candidates(PROBLEM, "forward", b, FACTS) == [Candidate(b, 0, 1.0, 0)]
        assert time.monotonic() - start < WAIT


def caught_process(caught: pytest.WarningsRecorder, pid: int) -> str:
    """The holder as the warning names it, checked against the pattern."""
    match = re.search(stopped_python(pid), str(caught[0].message))
    assert match is not None, str(caught[0].message)
    return match.group(0)


def test_recovery_waiting_for_a_stopped_operation_gives_up(tmp_path: Path, hold: Holder) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=100)
    damage_pages(path)
    pid = hold("sh", f"{path}.lock")  # an operation stopped midway
    damaged = path.read_bytes()
    with pytest.warns(CacheWarning, match=f"cache.sqlite.lock is locked by {stopped_python(pid)}"):
        BenchmarkCache(path, timeout=WAIT).close()
    assert path.read_bytes() == damaged  # not moved aside under the stopped operation
    assert not list(tmp_path.glob("*.corrupt-*"))


def test_info_with_a_held_lock_answers_promptly(tmp_path: Path, hold: Holder) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    pid = hold("ex", f"{path}.gate", f"{path}.lock")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "ucudnn.faces.cli", "info"],
        cwd=ROOT,
        env={**os.environ, "UCUDNN_DATABASE": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - start < INSPECT_TIMEOUT_S + 20
    assert result.returncode == 0, result.stderr
    assert re.search(
        f"^cache: {re.escape(str(path))}: cannot be used: {re.escape(str(path))}.gate is locked "
        f"by {stopped_python(pid)}: gave up after waiting {INSPECT_TIMEOUT_S:g} s$",
        result.stdout,
        re.MULTILINE,
    ), result.stdout


# -- SQLite's own locks ---------------------------------------------------------------------
def test_commit_that_never_ends_stops_readers_for_the_timeout_only(
    tmp_path: Path, hold: Holder
) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    pid = hold("sqlite-exclusive", path)
    locked = f"{re.escape(str(path))} is locked by {stopped_python(pid)}, in an SQLite transaction"
    with pytest.warns(CacheWarning, match=f"cannot be used \\({locked}: gave up after waiting"):
        BenchmarkCache(path, timeout=WAIT).close()
    assert re.fullmatch(f"{re.escape(str(path))}: cannot be used: {locked}.*", describe(path))


def describe(path: Path) -> str:
    return inspect_cache(path, timeout=WAIT).describe()


def test_write_transaction_that_never_ends_stops_stores_for_the_timeout_only(
    tmp_path: Path, hold: Holder
) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    with BenchmarkCache(path, timeout=WAIT) as cache:
        pid = hold("sqlite-immediate", path)
        locked = f"is locked by {stopped_python(pid)}, in an SQLite transaction"
        with pytest.warns(CacheWarning, match=f"write failed \\(.*{locked}.*kept in memory"):
            cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is not None  # reads go on


# -- settings -------------------------------------------------------------------------------
def test_timeout_settings_are_checked() -> None:
    assert timeout_from_env({}) == BUSY_TIMEOUT_S == 30
    assert timeout_from_env({"UCUDNN_CACHE_TIMEOUT": " 2.5 "}) == 2.5
    assert timeout_from_env({"UCUDNN_CACHE_TIMEOUT": "0"}) == 0
    with pytest.raises(ValueError, match="UCUDNN_CACHE_TIMEOUT='soon' is not a number"):
        timeout_from_env({"UCUDNN_CACHE_TIMEOUT": "soon"})
    with pytest.raises(ValueError, match="UCUDNN_CACHE_TIMEOUT='-1' is out of range"):
        timeout_from_env({"UCUDNN_CACHE_TIMEOUT": "-1"})
    for bad in (float("nan"), -1, 1e9, True, "30"):
        with pytest.raises(ValueError, match="timeout must be a number of seconds from 0 to"):
            BenchmarkCache(":memory:", timeout=bad)  # type: ignore[arg-type]


def test_zero_timeout_does_not_wait(tmp_path: Path, hold: Holder) -> None:
    path = tmp_path / "cache.sqlite"
    fresh_cache(path)
    before = snapshot(tmp_path)
    hold("ex", f"{path}.gate")
    start = time.monotonic()
    with pytest.warns(CacheWarning, match="gave up after waiting 0 s"):
        BenchmarkCache(path, timeout=0).close()
    assert time.monotonic() - start < 1
    assert snapshot(tmp_path) == before
