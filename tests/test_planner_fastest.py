"""`fastest_by_size`: what WR plans from, the fastest eligible candidate at each size, is the
least speed key among `eligible_candidates` there, ties in time included."""

from __future__ import annotations

import random

import pytest

from ucudnn.planner.dp import eligible_candidates, fastest_by_size
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
                for c in eligible_candidates(table, limit, policy, deterministic_only):
                    best = expected.get(c.micro_batch)
                    if best is None or c.speed_key() < best.speed_key():
                        expected[c.micro_batch] = c
                found = fastest_by_size(table, limit, policy, deterministic_only)
                assert found == expected
