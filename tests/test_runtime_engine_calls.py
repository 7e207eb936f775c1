"""Parts run by engine configurations, on the CPU: which plan each call uses (built once per
alignment, alpha and beta), and the fall back to a legacy algorithm when a plan cannot build,
run or fit, with one warning per handle and the same pointers. cuDNN is replaced by recording
fakes; the simulated device and the GPU run the real calls (tests/test_handle_engines.py)."""

from __future__ import annotations

import types
import warnings

import pytest

from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudnnNotSupportedError, EngineFallbackWarning
from ucudnn.runtime import backend, engine_calls
from ucudnn.runtime.engine_calls import EngineRuns, prepared_engine_run

TAG = "eng62_k2=0_k13=1"


class FakePlans:
    """Stands for graph.GraphPlans: records each build, fails for the tags in `failing`."""

    def __init__(self, workspace: int = 100, failing: tuple[str, ...] = ()) -> None:
        self.built: list[tuple[object, ...]] = []
        self.workspace, self.failing = workspace, failing

    def plan(self, handle, problem, kernel, config, alignments, alpha, beta):
        self.built.append((problem.batch, kernel, config.tag, alignments, alpha, beta))
        if config.tag in self.failing:
            raise CudnnNotSupportedError(3000, "CUDNN_STATUS_NOT_SUPPORTED", "cudnnBackendFinalize")
        return types.SimpleNamespace(workspace_bytes=self.workspace, tag=config.tag)

    def clear(self) -> None:
        self.built.clear()


@pytest.fixture
def calls(monkeypatch):
    """What ran: ("engine", tag, pointers...) and ("legacy", algo, pointers...) in order."""
    ran: list[tuple[object, ...]] = []

    def run_plan(handle, plan, x, w, y, workspace):
        ran.append(("engine", plan.tag, x, w, y, workspace))

    def prepared_run(descs, kernel, micro_batch, algo, math_type):
        def call(handle, alpha, beta, x, w, y, workspace, workspace_bytes):
            ran.append(("legacy", algo, alpha, beta, x, w, y, workspace))
            return False

        return call

    # Legacy algorithm 0 needs 500 bytes, 1 is refused, 2 needs 50.
    needs = {0: 500, 2: 50}

    def workspace_size(handle, descs, kernel, micro_batch, algo, math_type):
        if algo not in needs:
            raise CudnnNotSupportedError(3000, "CUDNN_STATUS_NOT_SUPPORTED", "size query")
        return needs[algo]

    monkeypatch.setattr(engine_calls.graph, "run_plan", run_plan)
    monkeypatch.setattr(backend, "prepared_run", prepared_run)
    monkeypatch.setattr(backend, "workspace_size", workspace_size)
    return ran


def _problem() -> ConvProblem:
    return ConvProblem.create(8, 4, 8, (9, 10), 3, padding=1, math_type="fma")


def _descs() -> types.SimpleNamespace:
    """What the engine calls read of a problem's descriptors: the problem and its parts."""
    problem = _problem()
    return types.SimpleNamespace(problem=problem, part=problem.with_batch)


def _launch(plans: FakePlans, tag: str = TAG):
    runs = EngineRuns()
    runs.plans = plans  # type: ignore[assignment]
    descs = _descs()
    return prepared_engine_run(descs, "forward", 4, tag, runs), runs  # type: ignore[arg-type]


def test_a_plan_is_built_once_per_alignment_and_scalars(calls) -> None:
    plans = FakePlans()
    run, _ = _launch(plans)
    for x in (0x1000, 0x1000, 0x1008, 0x1000):
        assert run(None, 1.0, 0.0, x, 0x2000, 0x3000, 0x4000, 100) is False
    assert run(None, 1.0, 1.0, 0x1000, 0x2000, 0x3000, 0x4000, 100) is False
    assert plans.built == [
        (4, "forward", TAG, (16, 16, 16), 1.0, 0.0),
        (4, "forward", TAG, (8, 16, 16), 1.0, 0.0),
        (4, "forward", TAG, (16, 16, 16), 1.0, 1.0),
    ]
    assert [c[:3] for c in calls] == [("engine", TAG, 0x1000)] * 2 + [
        ("engine", TAG, 0x1008),
        ("engine", TAG, 0x1000),
        ("engine", TAG, 0x1000),
    ]


def test_a_plan_that_fails_to_build_falls_back_to_the_smallest_legacy_algorithm(calls) -> None:
    plans = FakePlans(failing=(TAG,))
    run, runs = _launch(plans)
    with pytest.warns(EngineFallbackWarning, match=f"{TAG}.*NOT_SUPPORTED.*legacy algorithm 2"):
        # The call says it fell back, so that its Handle plans again without the part.
        assert run(None, 0.5, 0.25, 0x1000, 0x2000, 0x3000, 0x4000, 100) is True
    # The same pointers and scalars, the least workspace that fits (algorithm 1 is refused).
    assert calls == [("legacy", 2, 0.5, 0.25, 0x1000, 0x2000, 0x3000, 0x4000)]
    assert runs.failed == {(_problem().key(), "forward", TAG, 4)}
    # From then on the part runs the legacy algorithm without trying the plan, and a second
    # failing configuration on the same handle does not warn again.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100) is False
        other = prepared_engine_run(_descs(), "forward", 4, "eng7", runs)
        plans.failing = ("eng7",)
        assert other(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100) is True
    assert len(plans.built) == 2
    assert [c[:2] for c in calls[1:]] == [("legacy", 2), ("legacy", 2)]


def test_a_plan_wanting_more_workspace_than_planned_falls_back(calls) -> None:
    run, _ = _launch(FakePlans(workspace=101))
    with pytest.warns(EngineFallbackWarning, match="needs 101 bytes of workspace, more than"):
        run(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100)
    assert calls == [("legacy", 2, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000)]


def test_without_a_legacy_algorithm_that_fits_the_engine_error_is_raised(calls) -> None:
    run, _ = _launch(FakePlans(failing=(TAG,)))
    with pytest.raises(CudnnNotSupportedError) as caught:
        run(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 49)
    assert "no legacy algorithm runs it within 49 bytes" in "".join(caught.value.__notes__)
    assert calls == []


def test_another_launch_of_the_handle_does_not_try_a_failed_part_again(calls) -> None:
    """A re-planned or re-compiled kernel makes a new launch: it goes straight to the legacy
    algorithm for the part that failed, without building the plan again or warning again."""
    plans = FakePlans(failing=(TAG,))
    run, runs = _launch(plans)
    with pytest.warns(EngineFallbackWarning):
        run(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100)
    again = prepared_engine_run(
        _descs(),  # type: ignore[arg-type]
        "forward", 4, TAG, runs,
    )  # fmt: skip
    other_size = prepared_engine_run(
        _descs(),  # type: ignore[arg-type]
        "forward", 2, TAG, runs,
    )  # fmt: skip
    plans.failing = ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Known to have failed already: no news for the Handle.
        assert again(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100) is False
        assert other_size(None, 1.0, 0.0, 0x1000, 0x2000, 0x3000, 0x4000, 100) is False
    assert [b[0] for b in plans.built] == [4, 2]  # only the other size builds its plan
    assert [c[:2] for c in calls] == [("legacy", 2), ("legacy", 2), ("engine", TAG)]
