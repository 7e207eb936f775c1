"""Schema versions of the benchmark cache: a cache at schema 2 (committed as
tests/data/cache-schema-2.sqlite) migrates to 3 keeping every row, and a cache at a version this
ucudnn cannot read is left exactly as it was.

The fixture was made with ucudnn at schema 2 (commit 4a1f60c, before schema 3), by running
`fill_schema_2(BenchmarkCache("tests/data/cache-schema-2.sqlite"))` from this module and deleting
the lock files made beside it. The function uses only what both versions accept, so the test
checks the migrated file against what it stored.
"""

from __future__ import annotations

import dataclasses

from tests.test_planner_cache import FACTS, PROBLEM, ok
from ucudnn.planner.cache import BenchmarkCache, Measurement
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
