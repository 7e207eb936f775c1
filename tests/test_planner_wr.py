"""WR: the fastest schedule under a per-kernel limit, against brute force."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import (
    all_schedules,
    candidates_at,
    clip_policy,
    kernel_tables,
    policies,
)
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.policies import sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable
from ucudnn.planner.wr import plan_wr


@settings(max_examples=250, deadline=None)
@given(kernel_tables(), policies, st.integers(0, 64), st.booleans())
def test_wr_equals_brute_force(table: KernelTable, policy, limit: int, deterministic) -> None:
    policy = clip_policy(policy, table.batch)
    schedules = all_schedules(table, policy, deterministic)
    fitting = [s for s in schedules if s.workspace_bytes <= limit]
    if not fitting:
        with pytest.raises(InfeasibleError) as info:
            plan_wr(table, limit, policy, deterministic)
        assert info.value.kernel == (table.layer, table.kernel)
        expected = min((s.workspace_bytes for s in schedules), default=None)
        assert info.value.required_bytes == expected
        return
    best = plan_wr(table, limit, policy, deterministic)
    assert best.time_ms == min(s.time_ms for s in fitting)
    assert best.workspace_bytes <= limit and best.batch == table.batch
    assert [p.micro_batch for p in best.parts] == sorted(
        (p.micro_batch for p in best.parts), reverse=True
    )


@settings(max_examples=100, deadline=None)
@given(kernel_tables(), st.integers(0, 64), st.randoms(use_true_random=False))
def test_wr_does_not_depend_on_row_order(table: KernelTable, limit: int, rng) -> None:
    rows = list(table)
    rng.shuffle(rows)
    shuffled = KernelTable(table.layer, table.kernel, table.batch, rows)
    try:
        expected = plan_wr(table, limit, "all")
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            plan_wr(shuffled, limit, "all")
        return
    assert plan_wr(shuffled, limit, "all") == expected


def test_ties_go_to_the_undivided_run_then_to_the_faster_listed_candidate() -> None:
    table = KernelTable("c", "forward", 4)
    table.add(Candidate(4, 3, 2.0, 0))
    table.add(Candidate(2, 1, 1.0, 0))
    table.add(Candidate(1, 0, 0.5, 0))
    assert plan_wr(table, 0, "all").parts == (Candidate(4, 3, 2.0, 0),)
    table.add(Candidate(2, 2, 1.0, 0))  # same time as algo 1: the lower algo wins
    table.add(Candidate(4, 4, 2.0, 0))
    assert plan_wr(table, 0, "all").algos_text() == "3"


def test_wr_plans_when_nothing_fits_at_the_full_batch() -> None:
    # µ-cuDNN asserted here; smaller micro-batches alone are a valid plan.
    table = KernelTable("conv2", "backward_filter", 256)
    table.add(Candidate(256, 2, 10.0, 256 << 20))
    table.add(Candidate(64, 2, 2.0, 64 << 20))
    table.add(Candidate(32, 0, 3.0, 0))
    best = plan_wr(table, 64 << 20)
    assert best.micro_batches_text() == "4x64" and best.time_ms == 8.0
    assert plan_wr(table, 1 << 20).micro_batches_text() == "8x32"


def test_infeasible_names_the_kernel_and_the_smallest_workspace() -> None:
    table = KernelTable("conv3", "forward", 8)
    table.add(Candidate(8, 1, 1.0, 800))
    table.add(Candidate(4, 1, 0.4, 400))
    with pytest.raises(InfeasibleError, match="conv3/forward") as info:
        plan_wr(table, 100)
    assert info.value.kernel == ("conv3", "forward")
    assert info.value.required_bytes == 400
    assert "smallest workspace that works is 400 bytes" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InfeasibleError, match="no schedule at any workspace size") as info:
        plan_wr(table, 10**9, deterministic_only=True)
    assert info.value.required_bytes is None
    halves = KernelTable("conv4", "forward", 8, [Candidate(4, 1, 0.4, 0)])
    with pytest.raises(InfeasibleError, match="no schedule at any workspace size"):
        plan_wr(halves, 10**9, [3])  # the policy leaves out the only size measured
    with pytest.raises(ValueError, match="limit_bytes=-1 is not a size"):
        plan_wr(table, -1)


def test_wr_at_n256_power_of_two_on_random_tables() -> None:
    """Larger than brute force can reach: WR never loses to any single micro-batch size used
    throughout, which is one family of schedules it must consider."""
    rng = random.Random(1)
    for _ in range(20):
        table = KernelTable("c", "forward", 256)
        for i in range(9):
            for algo in range(4):
                b = 1 << i
                table.add(Candidate(b, algo, rng.uniform(0.1, 2) * b, rng.randrange(0, b << 20)))
        limit = rng.randrange(0, 256 << 20)
        best = plan_wr(table, limit)
        for b, rows in table.candidates.items():
            fitting = [c.time_ms for c in rows if c.workspace_bytes <= limit]
            if fitting:
                assert best.time_ms <= min(fitting) * (256 // b) + 1e-9


def test_equal_times_go_to_the_smaller_workspace() -> None:
    """Found by hypothesis: 2 undivided at 1 byte and 1+1 at 0 bytes take the same time, and
    WR must not answer with the dominated one."""
    table = KernelTable("conv", "forward", 2)
    table.add(Candidate(2, 0, 0.0, 1))
    table.add(Candidate(1, 0, 0.0, 0))
    schedule = plan_wr(table, 1 << 20)
    assert (schedule.time_ms, schedule.workspace_bytes) == (0.0, 0)
    assert [p.micro_batch for p in schedule.parts] == [1, 1]


@st.composite
def power_of_two_tables(draw: st.DrawFn) -> KernelTable:
    """Tables at batches up to 300 with rows at powers of two and the batch; size 1 always
    has a row without workspace, so some schedule always fits."""
    batch = draw(st.integers(1, 300))
    table = KernelTable("conv", "forward", batch)
    table.add(Candidate(1, 0, draw(st.integers(1, 400)) / 8, 0))
    for b in sorted({1 << i for i in range(batch.bit_length())} | {batch}):
        for c in draw(candidates_at(b)):
            if (c.micro_batch, c.algo) != (1, 0):
                table.add(c)
    return table


@settings(max_examples=200, deadline=None)
@given(power_of_two_tables(), st.integers(0, 64))
def test_divisor_chain_closed_form_equals_the_general_program(table: KernelTable, limit) -> None:
    """powerOfTwo sizes take the closed form; adding size 3 (never worth it: 1e6 ms) sends the
    same table through the general dynamic program, which must find the same optimum."""
    chain = plan_wr(table, limit, "powerOfTwo")
    general_table = KernelTable(table.layer, table.kernel, table.batch, table)
    sizes = list(sizes_for_policy("powerOfTwo", table.batch))
    if table.batch >= 6:
        general_table.add(Candidate(3, 0, 1e6, 0))
        sizes.append(3)
    general = plan_wr(general_table, limit, sizes)
    assert (general.time_ms, general.workspace_bytes) == (chain.time_ms, chain.workspace_bytes)
    assert general.batch == chain.batch == table.batch


def test_the_largest_batches_plan_in_closed_form() -> None:
    """N = 2**31 - 2**15 (near cuDNN's largest dimension) with powerOfTwo: the whole batch and
    2**30 need too much workspace, so the answer is 3 x 2**29 and then 2**28, ..., 2**15 for
    the rest (parts of at least N / 65536), each costing its launch plus its samples."""
    batch = 2**31 - 2**15
    table = KernelTable("conv", "forward", batch)
    for b in sizes_for_policy("powerOfTwo", batch):
        table.add(Candidate(b, 1, 0.25 + b / 2**20, 0 if b <= 2**29 else 1 << 40))
    best = plan_wr(table, 1 << 30)
    sizes = [p.micro_batch for p in best.parts]
    assert sizes == [2**29] * 3 + [2**i for i in range(28, 14, -1)]
    assert best.time_ms == 17 * 0.25 + batch / 2**20


def test_no_schedule_has_more_than_65536_parts() -> None:
    """Micro-batches are at least batch / 65536: one cuDNN call per part stays bounded."""
    table = KernelTable("conv", "forward", 1 << 20)
    table.add(Candidate(1, 0, 1.0, 0))
    table.add(Candidate(16, 0, 16.5, 0))
    table.add(Candidate(1 << 20, 0, 1.0, 1 << 30))
    assert plan_wr(table, 0).micro_batches_text() == "65536x16"
    table = KernelTable("conv", "forward", 1 << 20, [Candidate(1, 0, 1.0, 0)])
    with pytest.raises(InfeasibleError, match="no schedule at any workspace size"):
        plan_wr(table, 0)


def test_sizes_that_are_no_divisor_chain_are_bounded() -> None:
    # Every size runs a sample as fast as the undivided run: none can be left out.
    table = KernelTable("conv", "forward", 2**24)
    for b in (257, 263, 269, 2**24):
        table.add(Candidate(b, 0, b / 1024, 0))
    with pytest.raises(ValueError, match="sizes 257, 263, 269 do not each divide the next"):
        plan_wr(table, 0, [257, 263, 269])


def test_sizes_that_cannot_beat_the_undivided_run_cost_no_steps() -> None:
    # A sample takes longer in every part than undivided: the program leaves them all out.
    table = KernelTable("conv", "forward", 2**24)
    for b in (257, 263, 269, 2**24):
        table.add(Candidate(b, 0, 1.0, 0))
    assert plan_wr(table, 0, [257, 263, 269]).micro_batches_text() == str(2**24)
