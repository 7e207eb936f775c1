"""A damaged cache of ours is set aside once and replaced by a fresh one, whether the damage is
found on opening or in the middle of a run, by one process or by many at once; what is stored
after the recovery survives."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import warnings
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, damage_pages, fill, ok
from ucudnn.errors import CacheWarning
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.tables import Candidate


def test_damage_found_on_open_sets_the_file_aside(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=100)
    damage_pages(path)
    damaged = path.read_bytes()
    with pytest.warns(CacheWarning, match="is corrupt") as caught:
        cache = BenchmarkCache(path)
    with cache:
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is None
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    (aside,) = tmp_path.glob("cache.sqlite.corrupt-*")
    assert aside.read_bytes() == damaged
    assert [str(w.message).endswith(f"moved it to {aside} and started a fresh cache")
            for w in caught] == [True]  # fmt: skip
    assert f"benchmark cache {path} is corrupt" in str(caught[0].message)


def test_journal_of_the_damaged_file_goes_with_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=100)
    damage_pages(path)
    # A journal SQLite does not roll back (it starts with a zero byte) but that belongs to the
    # damaged file: the fresh file must not find it beside itself.
    journal = Path(f"{path}-journal")
    journal.write_bytes(bytes(512) + b"left by the damaged file")
    with pytest.warns(CacheWarning, match="is corrupt"):
        BenchmarkCache(path).close()
    (aside,) = tmp_path.glob("cache.sqlite.corrupt-*[0-9]")
    assert Path(f"{aside}-journal").read_bytes() == bytes(512) + b"left by the damaged file"
    assert not journal.exists()


def test_store_that_finds_damage_mid_run_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with BenchmarkCache(path) as cache:
        for b in range(1, 100):
            cache.store(PROBLEM, "forward", b, FACTS, [ok(b, 0)])
        damage_pages(path)  # under the open connection, as a failing disk would
        with pytest.warns(CacheWarning, match="is corrupt.*moved it to"):
            cache.store(PROBLEM, "backward_data", 8, FACTS, [ok(8, 2, 3.0)])
        assert cache.candidates(PROBLEM, "backward_data", 8, FACTS) == [Candidate(8, 2, 3.0, 0)]
        assert cache.stats().sets == 1  # the damaged file's sets are gone with it
    with BenchmarkCache(path) as cache:  # and the retried store reached the file
        assert cache.candidates(PROBLEM, "backward_data", 8, FACTS) == [Candidate(8, 2, 3.0, 0)]
    assert len(list(tmp_path.glob("cache.sqlite.corrupt-*"))) == 1


def test_lookup_that_finds_damage_mid_run_is_a_miss_on_a_fresh_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with BenchmarkCache(path) as cache:
        for b in range(1, 100):
            cache.store(PROBLEM, "forward", b, FACTS, [ok(b, 0)])
        damage_pages(path)
        with pytest.warns(CacheWarning, match="is corrupt.*moved it to"):
            assert cache.candidates(PROBLEM, "forward", 50, FACTS) is None
        cache.store(PROBLEM, "forward", 50, FACTS, [ok(50, 1)])
        assert cache.candidates(PROBLEM, "forward", 50, FACTS) == [Candidate(50, 1, 1.0, 0)]


def test_other_open_caches_follow_the_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with BenchmarkCache(path) as first, BenchmarkCache(path) as second:
        for b in range(1, 100):
            first.store(PROBLEM, "forward", b, FACTS, [ok(b, 0)])
        damage_pages(path)
        with pytest.warns(CacheWarning, match="is corrupt"):
            first.store(PROBLEM, "forward", 1, FACTS, [ok(1, 7)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the second one only reconnects: no second recovery
            assert second.candidates(PROBLEM, "forward", 1, FACTS) == [Candidate(1, 7, 1.0, 0)]
            second.store(PROBLEM, "forward", 2, FACTS, [ok(2, 8)])
        assert first.candidates(PROBLEM, "forward", 2, FACTS) == [Candidate(2, 8, 1.0, 0)]
    assert len(list(tmp_path.glob("cache.sqlite.corrupt-*"))) == 1


def test_open_cache_follows_a_file_put_at_its_path(tmp_path: Path) -> None:
    path, other = tmp_path / "cache.sqlite", tmp_path / "other.sqlite"
    fill(other)
    with BenchmarkCache(path) as cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        os.replace(other, path)  # say, another cache copied into place
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) is None
        assert cache.candidates(PROBLEM, "forward", 1, FACTS) is not None
        cache.store(PROBLEM, "forward", 8, FACTS, [ok(8, 0)])
    with BenchmarkCache(path) as cache:
        assert cache.candidates(PROBLEM, "forward", 8, FACTS) == [Candidate(8, 0, 1.0, 0)]


WORKERS = 8
SETS_PER_WORKER = 100


def store_own_sets(cache: BenchmarkCache, worker: int, count: int) -> None:
    for i in range(count):
        b = 1 + worker * count + i
        cache.store(PROBLEM, "forward", b, FACTS, [ok(b, worker), ok(b, 9, 2.0)])


def assert_all_sets_kept(path: Path, workers: int, count: int) -> None:
    with BenchmarkCache(path) as cache:
        assert cache.stats().sets == workers * count
        for worker in range(workers):
            for i in range(count):
                b = 1 + worker * count + i
                assert cache.candidates(PROBLEM, "forward", b, FACTS) == [
                    Candidate(b, worker, 1.0, 0),
                    Candidate(b, 9, 2.0, 0),
                ]
    assert len(list(path.parent.glob("cache.sqlite.corrupt-*"))) == 1
    assert not Path(f"{path}-journal").exists()


def _worker(path: str, worker: int, damaged_before_opening: bool, opened, go) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one that recovers says so
        if damaged_before_opening:
            go.wait()  # all open the damaged file together
        with BenchmarkCache(path) as cache:
            if not damaged_before_opening:
                opened.wait()  # all hold the healthy file open ...
                go.wait()  # ... when it is damaged under them
            store_own_sets(cache, worker, SETS_PER_WORKER)


@pytest.mark.parametrize("damaged_before_opening", [False, True])
def test_many_processes_recover_once_and_keep_every_later_measurement(
    tmp_path: Path, damaged_before_opening: bool
) -> None:
    context = multiprocessing.get_context("fork")
    for trial in range(2):
        path = tmp_path / f"trial{trial}" / "cache.sqlite"
        fill(path, sets=100)
        if damaged_before_opening:
            damage_pages(path)
        opened, go = context.Barrier(WORKERS + 1), context.Event()
        processes = [
            context.Process(target=_worker, args=(str(path), w, damaged_before_opening, opened, go))
            for w in range(WORKERS)
        ]
        for process in processes:
            process.start()
        if not damaged_before_opening:
            opened.wait(timeout=60)
            damage_pages(path)
        go.set()
        for process in processes:
            process.join(timeout=120)
        assert [p.exitcode for p in processes] == [0] * WORKERS
        assert_all_sets_kept(path, WORKERS, SETS_PER_WORKER)


def test_threads_with_their_own_caches_recover_once(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    fill(path, sets=100)
    threads, count = 4, 50
    caches = [BenchmarkCache(path) for _ in range(threads)]
    damage_pages(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(store_own_sets, caches, range(threads), [count] * threads))
    for cache in caches:
        cache.close()
    assert_all_sets_kept(path, threads, count)
