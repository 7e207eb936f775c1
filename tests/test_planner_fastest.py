"""`fastest_by_size`: what WR plans from, the fastest eligible candidate at each size, is the
least speed key among the eligible rows there, ties in time included."""

from __future__ import annotations

import random

import pytest

from ucudnn.planner.eligible import eligible_rows, fastest_by_size, size_records
from ucudnn.planner.tables import Candidate, KernelTable


def random_table(rng: random.Random, batch: int) -> KernelTable:
    table = KernelTable("conv", "forward", batch)
    for size in sorted({batch, *rng.sample(range(1, batch + 1), min(batch, 6))}):
        for algo in rng.sample(range(8), rng.randint(1, 8)):
            time_ms = rng.choice((0.5, 1.0, 1.5)) * size  # few values: many ties in time
            workspace = rng.choice((0, 256, 1024, 4096))
            table.add(Candidate(size, algo, time_ms, workspace, deterministic=rng.random() < 0.5))
    return table


@pytest.mark.parametrize("seed", range(40))
def test_the_fastest_at_each_size_is_the_least_speed_key_of_the_eligible(seed: int) -> None:
    rng = random.Random(seed)
    table = random_table(rng, rng.choice((8, 12, 16)))
    for limit in (None, 0, 256, 1024, 4096):
        for policy in ("all", "powerOfTwo", "undivided", (1, 3, 4)):
            for deterministic_only in (False, True):
                expected: dict[int, Candidate] = {}
                for c in map(
                    Candidate.of_row, eligible_rows(table, limit, policy, deterministic_only)
                ):
                    best = expected.get(c.micro_batch)
                    if best is None or c.speed_key() < best.speed_key():
                        expected[c.micro_batch] = c
                found = fastest_by_size(table, limit, policy, deterministic_only)
                assert found == {b: c.values() for b, c in expected.items()}


def test_a_sizes_records_are_those_faster_than_all_with_less_workspace() -> None:
    table = KernelTable("c", "forward", 4)
    for c in [
        Candidate(4, 0, 3.0, 0),
        Candidate(4, 1, 3.0, 512),  # as fast, more workspace: never the best
        Candidate(4, 2, 2.0, 256),
        Candidate(4, 3, 2.5, 1024),  # slower than algo 2 and larger
        Candidate(4, 4, 1.0, 1024),
        Candidate(2, 0, 1.0, 0),
        Candidate(2, 1, 1.0, 0),  # ties algo 0 in both, later in speed order
    ]:
        table.add(c)
    records = map(Candidate.of_row, size_records(table, None, "all", deterministic_only=False))
    assert [(c.micro_batch, c.algo) for c in records] == [(2, 0), (4, 0), (4, 2), (4, 4)]
    within = map(Candidate.of_row, size_records(table, 512, "all", False))
    assert [c.algo for c in within] == [0, 0, 2]
