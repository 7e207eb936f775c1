"""Plan-to-call translation as data: slices, pointer offsets and the alpha/beta rules."""

from __future__ import annotations

import pytest

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, alignment_step
from ucudnn.planner.tables import Candidate
from ucudnn.runtime.steps import schedule_steps

PARTS = [Candidate(4, 1, 1.0, 1024), Candidate(2, 0, 0.5, 0, "fma"), Candidate(2, 0, 0.5, 0)]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_slices_cover_the_batch_with_sample_offsets(layout: str) -> None:
    p = ConvProblem.create(8, 3, 5, (6, 7), 3, layout=layout, dtype="float16")
    steps = schedule_steps(p, "forward", PARTS, alpha=2.0, beta=0.5)
    assert [(s.first_sample, s.micro_batch) for s in steps] == [(0, 4), (4, 2), (6, 2)]
    x_sample, y_sample = 3 * 6 * 7 * 2, 5 * 4 * 5 * 2
    assert [s.x_offset_bytes for s in steps] == [0, 4 * x_sample, 6 * x_sample]
    assert [s.y_offset_bytes for s in steps] == [0, 4 * y_sample, 6 * y_sample]
    assert [(s.algo, s.math_type, s.workspace_bytes) for s in steps] == [
        (1, "default", 1024), (0, "fma", 0), (0, "default", 0)
    ]  # fmt: skip


@pytest.mark.parametrize("kernel", ["forward", "backward_data"])
def test_disjoint_outputs_keep_the_callers_alpha_and_beta(kernel: str) -> None:
    p = ConvProblem.create(8, 3, 5, (6, 7), 3)
    steps = schedule_steps(p, kernel, PARTS, alpha=0.75, beta=0.25)
    assert {(s.alpha, s.beta) for s in steps} == {(0.75, 0.25)}


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_filter_gradient_accumulates_after_the_first_micro_batch(beta: float) -> None:
    p = ConvProblem.create(8, 3, 5, (6, 7), 3)
    steps = schedule_steps(p, "backward_filter", PARTS, alpha=0.75, beta=beta)
    assert [(s.alpha, s.beta) for s in steps] == [(0.75, beta), (0.75, 1.0), (0.75, 1.0)]


def test_three_d_offsets_use_strides() -> None:
    p = ConvProblem.create(4, 2, 3, (4, 4, 4), 3, padding=1, x_strides=(200, 64, 16, 4, 1))
    steps = schedule_steps(p, "forward", [Candidate(1, 0, 1.0, 0)] * 4)
    assert [s.x_offset_bytes for s in steps] == [0, 800, 1600, 2400]


def test_schedule_must_cover_exactly_the_batch() -> None:
    p = ConvProblem.create(8, 3, 5, (6, 7), 3)
    with pytest.raises(ValueError, match="covers 6 samples but the problem has batch 8"):
        schedule_steps(p, "forward", PARTS[:2])
    with pytest.raises(ValueError, match="unknown kernel"):
        schedule_steps(p, "sideways", PARTS)


# -- alignment: parts run where they were benchmarked, or better aligned ----------------------
def _partitions(n: int, largest: int | None = None):
    """Every multiset of positive sizes that adds up to n, largest first."""
    if n == 0:
        yield []
        return
    for first in range(min(n, largest or n), 0, -1):
        for rest in _partitions(n - first, first):
            yield [first, *rest]


def _alignment(offset_bytes: int) -> int:
    """The alignment an offset from a 256-byte aligned base keeps, up to 256 bytes."""
    return CUDNN_ALIGNMENT if offset_bytes % CUDNN_ALIGNMENT == 0 else offset_bytes & -offset_bytes


# A 3x227x227 float32 input (618,348 bytes a sample, 4-byte aligned), a channels-last float16
# one, and one whose samples are 256-byte multiples.
ALIGNMENT_PROBLEMS = [
    ConvProblem.create(16, 3, 8, (227, 227), 11, stride=4),
    ConvProblem.create(16, 3, 6, (5, 7), 3, layout="NHWC", dtype="float16"),
    ConvProblem.create(16, 16, 16, (4, 4), 3, padding=1),
]


@pytest.mark.parametrize("problem", ALIGNMENT_PROBLEMS, ids=lambda p: p.describe())
def test_every_part_runs_at_least_as_aligned_as_it_was_benchmarked(problem) -> None:
    for batch in range(1, 17):
        p = problem.with_batch(batch)
        for sizes in _partitions(batch):
            parts = [Candidate(b, 0, 1.0, 0) for b in sizes]
            for step in schedule_steps(p, "forward", parts):
                first = BATCH.benchmark_first(p, step.micro_batch)
                for tensor, ran in (("x", step.x_offset_bytes), ("y", step.y_offset_bytes)):
                    measured = p.sample_offset_bytes(tensor, first)
                    assert _alignment(ran) >= _alignment(measured), (sizes, step)


def test_parts_run_most_factors_of_two_first_then_largest_first() -> None:
    parts = [Candidate(b, 0, 1.0, 0) for b in (5, 4, 3, 6, 1, 8)]
    assert [p.micro_batch for p in BATCH.run_order(parts)] == [8, 4, 6, 5, 3, 1]
    p = ConvProblem.create(27, 3, 5, (6, 7), 3)
    steps = schedule_steps(p, "forward", parts)
    assert [(s.first_sample, s.micro_batch) for s in steps] == [
        (0, 8), (8, 4), (12, 6), (18, 5), (23, 3), (26, 1)
    ]  # fmt: skip
    assert all(s.first_sample % alignment_step(s.micro_batch) == 0 for s in steps)


def test_filter_gradient_beta_follows_the_run_order() -> None:
    p = ConvProblem.create(6, 3, 5, (6, 7), 3)
    parts = [Candidate(1, 0, 1.0, 0), Candidate(3, 1, 1.0, 0), Candidate(2, 2, 1.0, 0)]
    steps = schedule_steps(p, "backward_filter", parts, beta=0.5)
    assert [(s.micro_batch, s.algo, s.beta) for s in steps] == [
        (2, 2, 0.5),
        (3, 1, 1.0),
        (1, 0, 1.0),
    ]


def test_benchmark_offset_is_one_step_in_unless_that_is_as_aligned_as_the_start() -> None:
    odd = ConvProblem.create(256, 3, 96, (227, 227), 11, stride=4)  # 618,348 B a sample
    # 2**6 samples of 618,348 bytes (4 * odd) are 256-byte aligned: from 64 on, the start
    # is as good as any offset.
    assert [BATCH.benchmark_first(odd, b) for b in (1, 2, 6, 32, 48, 64, 128, 256)] == [
        1, 2, 2, 32, 16, 0, 0, 0
    ]  # fmt: skip
    aligned = ConvProblem.create(8, 64, 64, (4, 4), 3, padding=1)  # 4 KiB a sample
    assert [BATCH.benchmark_first(aligned, b) for b in range(1, 9)] == [0] * 8


def test_benchmark_buffers_fit_every_size_at_its_offset() -> None:
    odd = ConvProblem.create(12, 3, 4, (5, 5), 3)  # 300 B a sample
    assert BATCH.benchmark_first(odd, 12) == 4  # 1200 B: 16-byte aligned only
    assert BATCH.benchmark_first(odd, 8) == 8
    assert BATCH.benchmark_extent(odd, [12, 8, 4, 2, 1]) == 16  # 8 samples 8 in
    assert BATCH.benchmark_extent(odd.with_batch(1), [1]) == 2
    aligned = ConvProblem.create(12, 64, 64, (4, 4), 3)
    assert BATCH.benchmark_extent(aligned, [12, 8, 4, 2, 1]) == 12
    assert BATCH.benchmark_extent(aligned, []) == 12


def test_alignment_step_needs_a_positive_size() -> None:
    assert [alignment_step(b) for b in (1, 2, 3, 12, 64)] == [1, 2, 1, 4, 64]
    with pytest.raises(ValueError, match="micro_batch must be >= 1"):
        alignment_step(0)
