"""Plan-to-call translation as data: slices, pointer offsets and the alpha/beta rules."""

from __future__ import annotations

import pytest

from ucudnn.core.problem import ConvProblem
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
