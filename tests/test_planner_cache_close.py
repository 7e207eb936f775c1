"""A cache gives back its file descriptors exactly once: closing it again touches nothing (its
numbers may name another file of the process by then), and a cache never closed gives them back
when it is collected."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from tests.test_planner_cache import FACTS, PROBLEM, ok
from ucudnn.planner.cache import BenchmarkCache

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd"
)


def open_descriptors() -> set[int]:
    gc.collect()  # so that objects left by earlier tests give theirs back now, not mid-test
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_closing_twice_closes_once(tmp_path: Path) -> None:
    before = open_descriptors()
    cache = BenchmarkCache(tmp_path / "cache.sqlite")
    assert len(open_descriptors() - before) >= 2  # the two lock files, at least
    with cache:  # as a Handle does: a with block, then close() again
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    cache.close()
    assert open_descriptors() == before


def test_closing_again_leaves_files_opened_since_alone(tmp_path: Path) -> None:
    before = open_descriptors()
    cache = BenchmarkCache(tmp_path / "cache.sqlite")
    cache_descriptors = open_descriptors() - before
    cache.close()
    others = []
    for i in range(2 * len(cache_descriptors)):
        path = tmp_path / f"other-{i}"
        path.write_text(f"file {i}")
        others.append((os.open(path, os.O_RDONLY), f"file {i}"))
    # The lowest free numbers are handed out first: the cache's old numbers are now others'.
    assert cache_descriptors <= {fd for fd, _ in others}
    cache.close()
    try:
        for fd, text in others:
            assert os.pread(fd, 100, 0).decode() == text
    finally:
        for fd, _ in others:
            os.close(fd)


def test_caches_never_closed_give_back_their_descriptors(tmp_path: Path) -> None:
    before = open_descriptors()
    caches = [BenchmarkCache(tmp_path / f"cache-{i % 4}.sqlite") for i in range(200)]
    assert len(open_descriptors() - before) >= 400  # each holds two lock files
    del caches
    assert open_descriptors() == before
