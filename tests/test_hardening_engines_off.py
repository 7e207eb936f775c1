"""Engines off is off everywhere on the runtime side (issue 37): BenchmarkSettings checks
`engines` as the Handle does, a Handle whose engines are off runs no engine configuration (it
refuses plans of them, and its check's reference is a legacy algorithm), and the fallback
warning advises turning engines off only where they are on, in the way that works."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.test_handle import _problem
from tests.test_handle_engines import _engine_plan, _run_and_compare
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import EngineFallbackWarning
from ucudnn.planner.plan import KernelPlan, Plan
from ucudnn.planner.tables import Candidate, Schedule
from ucudnn.runtime.benchmark import BenchmarkSettings
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.engines_setting import EnginesSetting
from ucudnn.runtime.options import HandleOptions

MiB = 1 << 20
KERNELS = ["forward", "backward_data", "backward_filter"]


@pytest.mark.parametrize("engines", ["off", "on", "", 1, 0, 1.0])
def test_benchmark_settings_check_engines_as_the_handle_does(engines: Any) -> None:
    """ "off" used to be taken as true, turning engines on."""
    with pytest.raises(TypeError) as by_handle:
        HandleOptions.resolve(engines=engines, environ={})
    with pytest.raises(TypeError) as by_settings:
        BenchmarkSettings(engines=engines)
    assert str(by_settings.value) == str(by_handle.value)
    assert "engines must be True or False" in str(by_settings.value)


def test_benchmark_settings_keep_a_yes_or_no() -> None:
    import numpy as np

    assert BenchmarkSettings().engines is None
    no: Any = np.bool_(False)  # what numpy comparisons give
    assert BenchmarkSettings(engines=no).engines is False


@pytest.mark.parametrize(
    ("setting", "advice"),
    [
        (EnginesSetting(False, "argument", None), None),
        (EnginesSetting(False, "environment", None), None),
        (EnginesSetting(False, "default", "cuDNN 9.1.0 is older than 9.2.0"), None),
        (EnginesSetting(True, "argument", None), "engines=False"),
        (EnginesSetting(True, "environment", None), "UCUDNN_ENGINES=off"),
        (EnginesSetting(True, "default", None), "UCUDNN_ENGINES=off"),
    ],
)
def test_the_advice_turns_off_what_is_on(setting: EnginesSetting, advice: str | None) -> None:
    """An argument beats UCUDNN_ENGINES, so an argument's engines are turned off by another;
    engines already off need no advice."""
    assert setting.how_to_turn_off() == advice


def test_a_fallback_without_advice_names_no_setting() -> None:
    with pytest.warns(EngineFallbackWarning) as caught:
        EngineRuns(None).fell_back("forward of conv", "eng0_k2=1", "BAD_PARAM", 0)
    message = str(caught[0].message)
    assert message.endswith("(warned once per handle)")
    assert "UCUDNN_ENGINES" not in message


@pytest.mark.simulator
def test_the_fallback_warning_of_engines_on_by_argument_says_how_to_turn_them_off(
    tmp_path: Path,
) -> None:
    """UCUDNN_ENGINES=off, the advice before, cannot turn off engines asked for by argument."""
    from ucudnn.runtime.handle import Handle
    from ucudnn.testing import simulator

    problem = _problem(2, "float32", False, batch=12)
    with Handle(
        workspace_limit=4 * MiB, policy="powerOfTwo", database=tmp_path / "db.sqlite",
        engines=True,
    ) as handle:  # fmt: skip
        handle.use_plan(_engine_plan(handle, problem, 4 * MiB))
        for part in handle.schedule(problem, "forward", "conv").parts:
            simulator.fail_engine(part.engine, at="plan")
        with pytest.warns(EngineFallbackWarning) as caught:
            _run_and_compare(handle, problem, "forward", beta=0.0)
    message = str(caught[0].message)
    assert "engines=False avoids engines" in message
    assert "UCUDNN_ENGINES" not in message


def _engines_on_plan(tmp_path: Path, problem: ConvProblem) -> tuple[Plan, list[Candidate]]:
    """A WR plan made of engine configurations by a Handle with engines on, and the undivided
    engine candidates it measured for forward."""
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work

    with Handle(
        workspace_limit=4 * MiB, policy="powerOfTwo", database=tmp_path / "on.sqlite",
        engines=True,
    ) as handle:  # fmt: skip
        plan = _engine_plan(handle, problem, 4 * MiB)
        ((_, table),) = handle.benchmarker.tables(
            [Work("conv", problem, "forward")], handle.policy
        ).items()
    undivided = [c for c in table if c.engine and c.micro_batch == problem.batch]
    return plan, undivided


@pytest.mark.simulator
def test_a_handle_with_engines_off_refuses_a_plan_of_engines(tmp_path: Path) -> None:
    """It used to run the plan's engine parts."""
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False, batch=12)
    plan, _ = _engines_on_plan(tmp_path, problem)
    with Handle(workspace_limit=4 * MiB, use_cache=False, engines=False) as handle:
        handle.register(problem, layer="conv")
        with pytest.raises(
            ValueError,
            match=r"the plan's .* runs the engine configuration 'eng\d+.*', but this Handle's "
            r"engines are off \(set by an argument\): give it a plan of legacy algorithms only "
            r"\(made with engines off\), or make the Handle with engines=True",
        ):
            handle.use_plan(plan)
        assert handle.plan is None
        assert len(handle._engine_runs.plans) == 0


@pytest.mark.simulator
def test_a_checking_handle_with_engines_off_compares_with_a_legacy_algorithm(
    tmp_path: Path,
) -> None:
    """A plan of legacy parts whose baseline (the check's reference) is an engine
    configuration: the check used to run that engine."""
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False, batch=12)
    _, undivided = _engines_on_plan(tmp_path, problem)
    if not undivided:
        pytest.skip("no engine configuration measured at the whole batch")
    legacy = Candidate(problem.batch, 0, 1.0, 0, problem.math_type)
    baseline = dataclasses.replace(undivided[0], workspace_bytes=0)
    kernel_plan = KernelPlan("conv", "forward", problem.batch, Schedule((legacy,)), baseline)
    plan = Plan("wr", 4 * MiB, "powerOfTwo", (kernel_plan,))
    with Handle(workspace_limit=4 * MiB, use_cache=False, engines=False, check=True) as handle:
        handle.register(problem, "forward", layer="conv")
        handle.use_plan(plan)
        with warnings.catch_warnings():
            warnings.simplefilter("error", EngineFallbackWarning)
            _run_and_compare(handle, problem, "forward", beta=0.0)
        assert len(handle._engine_runs.plans) == 0
        assert handle.check is not None
        assert [result.ok for result in handle.check.results] == [True]
