"""Plan a set of kernels from measurements: benchmark (or read the cache), then WR or WD."""

from __future__ import annotations

from collections.abc import Sequence

from ucudnn.core.checks import shown
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.policies import UNDIVIDED, Policy
from ucudnn.runtime.benchmark import Benchmarker, EngineParts
from ucudnn.runtime.work import Work


def plan_kernels(
    benchmarker: Benchmarker,
    work: Sequence[Work],
    *,
    mode: str,
    limit: int,
    policy: Policy,
    slab_policy: Policy = UNDIVIDED,
    deterministic: bool = False,
    excluded: EngineParts = frozenset(),
) -> Plan:
    """WR (`limit` per kernel) or WD (`limit` in total) plan for `work`, from measurements
    whole and cut into slabs of `slab_policy`'s extents, without the `excluded` engine parts
    (they failed at run time)."""
    tables = benchmarker.tables(work, policy, excluded, slab_policy)
    facts = benchmarker.facts
    source = f"measured on {facts.describe()}"
    if mode == "wr":
        return make_plan_wr(
            tables, limit, policy, deterministic, device=facts, timings_source=source
        )
    if mode == "wd":
        return make_plan_wd(
            tables, limit, policy, deterministic, device=facts, timings_source=source
        )
    raise ValueError(f"mode must be 'wr' or 'wd', got {shown(mode)}")
