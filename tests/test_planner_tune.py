"""Tuning the mini-batch size (ucudnn.planner.tune) on synthetic tables with known optima and on
the cost model's tables of real networks."""

from __future__ import annotations

import math

import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.memory import DEFAULT_OVERHEAD, NO_OVERHEAD, TrainingMemory, training_memory
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import smallest_workspace
from ucudnn.planner.plan import make_plan_wd
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.planner.tune import default_batches, tune

MiB = 1 << 20
SIZES = (1, 2, 4, 8)


def one_layer() -> LayerGraph:
    """One forward convolution with large activations: 64 MiB per sample in and out."""
    graph = LayerGraph()
    problem = ConvProblem.create(8, 64, 64, (512, 512), 3, 1)
    graph.add_layer("conv", problem, kernels=("forward",))
    return graph


def memory_model(graph: LayerGraph) -> TrainingMemory:
    """The memory model as `tune` applies it: with the default headroom."""
    return training_memory(graph, DEFAULT_OVERHEAD)


def squeezable_table(sizes: tuple[int, ...] = SIZES) -> TimingTables:
    """Algorithm 0: no workspace, 1 ms per sample. Algorithm 1: 100 MiB of workspace per
    sample, 0.25 ms per sample plus 0.5 ms per call, so small micro-batches pay for it."""
    table = KernelTable("conv", "forward", 8)
    for b in sizes:
        table.add(Candidate(b, 0, 1.0 * b, 0))
        table.add(Candidate(b, 1, 0.25 * b + 0.5, 100 * MiB * b))
    return TimingTables([table])


def test_the_largest_batch_that_fits_is_not_the_fastest_when_its_workspace_is_squeezed() -> None:
    graph = one_layer()
    model = memory_model(graph)
    memory = model.step(8).total_bytes + 150 * MiB  # batch 8 leaves 150 MiB of workspace

    result = tune(graph, squeezable_table(), memory, batches=SIZES)

    by_batch = {p.batch: p for p in result.points}
    assert all(p.fits for p in result.points)
    # Batch 8 fits, but only algorithm 1 on one sample at a time: 8 x 0.75 ms = 6 ms.
    squeezed = by_batch[8].plan
    assert squeezed is not None
    assert [(p.micro_batch, p.algo) for p in squeezed.kernels[0].schedule.parts] == [(1, 1)] * 8
    assert by_batch[8].time_ms == pytest.approx(6.0)
    # Batch 4 has 4 x 64 MiB x 3 more room, enough for algorithm 1 undivided: 1.5 ms.
    assert by_batch[4].time_ms == pytest.approx(1.5)
    assert by_batch[2].time_ms == pytest.approx(1.0)
    assert by_batch[1].time_ms == pytest.approx(0.75)
    assert result.best.batch == 4
    assert result.best.samples_per_s == pytest.approx(4 / 1.5e-3)
    assert by_batch[8].samples_per_s == pytest.approx(8 / 6e-3)
    for point in result.points:
        assert point.step is not None and point.step.total_bytes <= memory
        assert point.step.arena_bytes == point.plan.workspace_bytes  # type: ignore[union-attr]


def test_with_memory_to_spare_the_largest_batch_wins() -> None:
    graph = one_layer()
    memory = memory_model(graph).step(8).total_bytes + 800 * MiB  # algorithm 1 undivided

    result = tune(graph, squeezable_table(), memory)

    assert result.best.batch == 8
    assert result.best.time_ms == pytest.approx(2.5)


def test_a_batch_that_does_not_fit_says_what_it_needs() -> None:
    graph = one_layer()
    model = memory_model(graph)
    memory = model.step(4).total_bytes  # batch 4 with no workspace; batch 8 not at all

    result = tune(graph, squeezable_table(), memory, batches=SIZES)

    statuses = {p.batch: p.status for p in result.points}
    assert statuses == {1: "fits", 2: "fits", 4: "fits", 8: "over_memory"}
    over = result.points[-1]
    assert over.plan is None and over.step is None and over.samples_per_s is None
    assert over.minimum.total_bytes == model.step(8).total_bytes > memory
    # Batch 4 has no room for workspace: algorithm 0, 4 ms. Batch 2 has two samples' worth
    # (384 MiB): algorithm 1 undivided, 1 ms, the most samples per second.
    assert [p.time_ms for p in result.points[:3]] == pytest.approx([0.75, 1.0, 4.0])
    assert result.best.batch == 2


def test_below_the_smallest_batch_the_error_names_what_it_needs() -> None:
    graph = one_layer()
    need = memory_model(graph).step(1).total_bytes  # algorithm 0 needs no workspace

    with pytest.raises(
        InfeasibleError, match=f"the smallest batch size tried, 1, needs {need} "
    ) as info:
        tune(graph, squeezable_table(), need - 1, batches=SIZES)

    assert info.value.required_bytes == need
    assert "activations" in str(info.value)


def test_a_batch_not_measured_undivided_is_composed_and_says_so() -> None:
    graph = one_layer()
    memory = memory_model(graph).step(8).total_bytes + 800 * MiB

    result = tune(graph, squeezable_table(), memory, batches=[6, 8])

    six = result.points[0]
    assert not six.measured and result.points[1].measured
    assert six.plan is not None
    assert [p.micro_batch for p in six.plan.kernels[0].schedule.parts] == [4, 2]
    assert six.plan.kernels[0].baseline is None  # no undivided run at 6 was measured
    assert "composed" in result.report()


def test_sizes_the_measurements_cannot_make_up_are_unplannable() -> None:
    graph = one_layer()
    memory = memory_model(graph).step(8).total_bytes + 800 * MiB
    undivided_only = squeezable_table(sizes=(8,))

    result = tune(graph, undivided_only, memory, batches=[4, 8])

    assert [p.status for p in result.points] == ["unplannable", "fits"]
    with pytest.raises(InfeasibleError, match=r"can be planned: .* make up none of 4"):
        tune(graph, undivided_only, memory, batches=[4])


def test_batches_above_the_measured_one_are_refused_not_extrapolated() -> None:
    with pytest.raises(
        ValueError, match=r"batches 9, 16 are beyond the batch 8 .* never extrapolated"
    ):
        tune(one_layer(), squeezable_table(), 1 << 40, batches=[4, 9, 16])
    with pytest.raises(ValueError, match="no batch sizes"):
        tune(one_layer(), squeezable_table(), 1 << 40, batches=[])
    with pytest.raises(ValueError, match="batch"):
        tune(one_layer(), squeezable_table(), 1 << 40, batches=[0])


def test_the_tables_must_be_the_networks_at_one_batch() -> None:
    graph = one_layer()
    other = KernelTable("other", "forward", 8, [Candidate(8, 0, 1.0, 0)])
    with pytest.raises(ValueError, match="no rows for 1 of the network's 1 kernels, such as conv"):
        tune(graph, TimingTables([other]), 1 << 40)
    with pytest.raises(ValueError, match="not in the network, such as other/forward"):
        tune(graph, TimingTables([*squeezable_table()._tables.values(), other]), 1 << 40)
    two = LayerGraph()
    two.add_layer("a", ConvProblem.create(8, 4, 4, (8, 8), 3, 1), kernels=("forward",))
    two.add_layer("b", ConvProblem.create(4, 4, 4, (8, 8), 3, 1), kernels=("forward",))
    tables = TimingTables(
        [
            KernelTable("a", "forward", 8, [Candidate(8, 0, 1.0, 0)]),
            KernelTable("b", "forward", 4, [Candidate(4, 0, 1.0, 0)]),
        ]
    )
    with pytest.raises(ValueError, match=r"different batches \(4, 8\)"):
        tune(two, tables, 1 << 40)


def test_default_batches_are_powers_of_two_and_multiples_of_eight() -> None:
    assert default_batches(20) == [1, 2, 4, 8, 16, 20]
    assert default_batches(256) == [1, 2, 4, *range(8, 257, 8)]
    assert default_batches(1) == [1]


@pytest.fixture(scope="module")
def resnet18() -> tuple[LayerGraph, TimingTables]:
    graph = builtin_network("resnet18", batch=64)
    return graph, model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


@pytest.mark.parametrize("policy", ["all", "powerOfTwo", (3, 5)])
def test_each_points_least_arena_is_the_smallest_workspace_of_its_table(policy: object) -> None:
    table = KernelTable("conv", "forward", 8)
    for b in range(1, 9):
        if b % 4:  # at 4 and 8, only the algorithm that needs workspace: the front must tell
            table.add(Candidate(b, 0, 1.0 * b, 64))
        table.add(Candidate(b, 1, 0.25 * b + 0.5, 100 * MiB * b))
    result = tune(
        one_layer(), TimingTables([table]), 1 << 40, batches=range(1, 9), policy=policy,
        overhead="0", alignment=1,
    )  # fmt: skip
    for point in result.points:
        least = smallest_workspace(table.at_batch(point.batch), policy)
        assert point.minimum.arena_bytes == (least or 0), point.batch


def test_each_point_is_the_plan_of_its_batch_made_directly(
    resnet18: tuple[LayerGraph, TimingTables],
) -> None:
    graph, tables = resnet18
    memory = 3 << 30
    model = memory_model(graph)

    result = tune(graph, tables, memory, batches=[16, 24, 64])

    for point in result.points:
        if not point.fits:
            continue
        at_batch = TimingTables(tables[k].at_batch(point.batch) for k in graph.kernel_ids())
        direct = make_plan_wd(at_batch, model.arena_room(point.batch, memory))
        assert point.plan == direct
        assert point.step is not None and point.step.total_bytes <= memory


def test_more_memory_never_makes_the_best_slower(
    resnet18: tuple[LayerGraph, TimingTables],
) -> None:
    graph, tables = resnet18
    speeds = [
        tune(graph, tables, gib << 30, batches=[8, 16, 32, 64]).best.samples_per_s or 0.0
        for gib in (2, 3, 5, 9)  # 1 GiB of each is the default headroom
    ]
    assert speeds == sorted(speeds)
    assert len(set(speeds)) > 1  # the memory sizes do make a difference


def test_the_default_headroom_is_kept_and_stated() -> None:
    graph = one_layer()
    memory = memory_model(graph).step(8).total_bytes + 800 * MiB

    result = tune(graph, squeezable_table(), memory, batches=[8])

    assert result.model.overhead == DEFAULT_OVERHEAD
    step = result.best.step
    assert step is not None
    ten_percent = math.ceil((step.activations_bytes + step.gradients_bytes) / 10)
    assert step.overhead_bytes == (1 << 30) + ten_percent
    assert "headroom 1 GiB+10% (the default) for what the model does not see" in result.report()
    # None at all is still there to ask for.
    bare = tune(graph, squeezable_table(), memory, batches=[8], overhead="0")
    assert bare.model.overhead == NO_OVERHEAD and bare.best.step.overhead_bytes == 0  # type: ignore[union-attr]
    assert "headroom 0 for what" in bare.report()


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("", "timings at batch 8"),
        ("MODEL timings (cost model)", "timings: MODEL timings (cost model), at batch 8"),
        ("measurements on GPU X", "timings: measurements on GPU X, at batch 8"),
    ],
)
def test_the_report_names_where_the_timings_come_from(source: str, line: str) -> None:
    graph = one_layer()
    result = tune(graph, squeezable_table(), 1 << 40, batches=[6, 8], timings_source=source)

    assert result.timings_source == source
    report = result.report()
    assert line in report.splitlines()
    assert "measured" not in report  # the source says whether they were
