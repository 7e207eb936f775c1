"""A Handle's plans survive a kernel it cannot plan (the first H100 run's cascade).

On the H100, one unsupported problem (NDHWC float64 forward: cuDNN 9.19 runs none of its
algorithms) stayed registered on the numpy API's shared Handle, and every later plan failed.
Here the simulator's fault injection makes cuDNN fail every algorithm of float64 forward
convolutions, whatever the layout, so the tests mean the same on any capability table. The
tests that inject it measure the legacy algorithms alone (engines=False), as engine
configurations, which it leaves alone, would run those convolutions.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.check import normalised_l2, tolerance

pytestmark = pytest.mark.simulator

MiB = 1 << 20
GOOD = ConvProblem.create(4, 3, 8, (6, 6), 3, padding=1, math_type="fma")
OTHER = ConvProblem.create(2, 8, 4, (5, 5), 3, padding=1, math_type="fma")
BAD = ConvProblem.create(2, 3, 4, (6, 5, 7), 3, padding=1, dtype="float64")
BAD_LAST = dataclasses.replace(BAD, layout="NDHWC", filter_layout="", x_strides=(), y_strides=())


@pytest.fixture
def no_float64_forward():
    """Every forward algorithm fails when it runs on float64 data (Find still lists them)."""
    from ucudnn._native import _cudnn
    from ucudnn.testing import simulator

    for algo in range(len(_cudnn.ALGORITHMS["forward"])):
        simulator.fail_algorithm("forward", algo, when=lambda p: p.dtype == "float64")


def _arrays(problem: ConvProblem, seed: int = 0):
    from ucudnn.core.array import DeviceArray

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(problem.x_shape).astype(problem.dtype)
    w = rng.standard_normal(problem.w_shape).astype(problem.dtype)
    device = [DeviceArray.from_numpy(x), DeviceArray.from_numpy(w)]
    return x, w, [*device, DeviceArray.empty(problem.y_shape, problem.dtype)]


def _forward_is_right(handle, problem: ConvProblem, layer: str | None = None) -> None:
    x, w, device = _arrays(problem)
    handle.forward(*device, problem, layer=layer)
    last = problem.layout in ("NHWC", "NDHWC")  # the arrays are stored channels-last

    def logical(array: np.ndarray) -> np.ndarray:
        return np.moveaxis(array, -1, 1) if last else array

    expected = ref.forward(problem, logical(x), logical(w))
    got = logical(device[2].to_numpy())
    assert normalised_l2(got, expected) <= tolerance(problem, same_algorithm=False)


def test_a_kernel_cuDNN_cannot_run_is_named_with_its_statuses_and_forgotten(
    tmp_path, no_float64_forward
) -> None:
    from ucudnn.planner.errors import NoAlgorithmError
    from ucudnn.runtime.handle import Handle

    database = tmp_path / "db.sqlite"
    with Handle(workspace_limit=64 * MiB, database=database, engines=False) as handle:
        _forward_is_right(handle, GOOD)
        planned = handle.plan
        assert planned is not None
        for _ in range(2):  # the second call meets the same error, not a poisoned plan
            with pytest.raises(NoAlgorithmError) as info:
                handle.forward(*_arrays(BAD)[2], BAD)
            message = str(info.value)
            assert "runs none of its forward algorithms for N=2 C=3->K=4 6x5x7" in message
            assert "NCDHW float64" in message and "at any micro-batch size tried (2, 1)" in message
            # Find lists some as not supported (FFT has no float64); the others fail to run.
            statuses = info.value.statuses
            assert "CUDNN_STATUS_EXECUTION_FAILED" in statuses
            assert all(f"{count} x {status}" in message for status, count in statuses.items())
            assert info.value.kernel == ("conv1", "forward")
            assert "the Handle forgot conv1/forward" in info.value.__notes__[-1]
            # WR keeps every schedule made before, and plans nothing for what failed.
            assert handle.plan is planned
        _forward_is_right(handle, OTHER)  # named conv1 in its turn: the name was freed
        assert handle.plan[("conv0", "forward")] is planned[("conv0", "forward")]
        assert [(k.layer, k.batch) for k in handle.plan.kernels] == [("conv0", 4), ("conv1", 2)]


def test_wd_plans_the_rest_of_the_network_without_the_kernel(tmp_path, no_float64_forward) -> None:
    from ucudnn.planner.errors import NoAlgorithmError
    from ucudnn.runtime.handle import Handle

    database = tmp_path / "db.sqlite"
    with Handle(total_workspace=64 * MiB, database=database, engines=False) as handle:
        handle.register(GOOD, ["forward"], layer="good")
        handle.register(BAD, ["forward"], layer="bad")
        handle.register(OTHER, ["forward"], layer="other")
        with pytest.raises(NoAlgorithmError, match="bad/forward: cuDNN") as info:
            handle.finalize()
        assert "the Handle forgot bad/forward" in info.value.__notes__[-1]
        assert handle.plan is not None
        assert [k.layer for k in handle.plan.kernels] == ["good", "other"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no ReplanWarning: the plan covers both
            _forward_is_right(handle, GOOD, "good")
        assert handle.finalize() is handle.plan  # nothing new: nothing planned again


def test_a_replan_that_fails_keeps_the_plan_and_the_budget(tmp_path) -> None:
    from ucudnn.planner.errors import InfeasibleError
    from ucudnn.planner.pareto import smallest_workspace
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work

    # On the H100, no NDHWC float32 forward algorithm of cuDNN 9.19 runs without workspace.
    ndhwc = ConvProblem.create(4, 8, 8, (6, 6, 6), 3, padding=1, math_type="fma", layout="NDHWC")
    with Handle(total_workspace=64 * MiB, database=tmp_path / "db.sqlite") as handle:
        handle.register(ndhwc, ["forward"], layer="ndhwc")
        plan = handle.finalize()
        work = [Work("ndhwc", ndhwc, "forward")]
        table = handle.benchmarker.tables(work, handle.policy)[("ndhwc", "forward")]
        if smallest_workspace(table, handle.policy) == 0:
            pytest.skip("this device runs the problem without workspace; no budget is too small")
        with pytest.raises(InfeasibleError) as info:
            handle.replan(total_workspace=0)
        assert info.value.required_bytes
        assert handle.plan is plan and handle.limit == 64 * MiB
        _forward_is_right(handle, ndhwc, "ndhwc")


def test_released_workspace_comes_back_for_the_same_plan(tmp_path) -> None:
    from ucudnn.runtime.handle import Handle

    with Handle(workspace_limit=64 * MiB, database=tmp_path / "db.sqlite") as handle:
        _forward_is_right(handle, GOOD)
        _forward_is_right(handle, OTHER)
        plan = handle.plan
        handle.release_workspace()
        assert handle.workspace_in_use == 0
        _forward_is_right(handle, OTHER)
        assert handle.plan is plan  # allocated again, not planned again
        assert handle.workspace_in_use >= plan.workspace_bytes


def test_the_numpy_api_runs_the_channels_first_equivalent(
    tmp_path, caplog, no_float64_forward
) -> None:
    """When cuDNN runs nothing channels-last, the numpy API transposes, and logs that it did;
    here cuDNN runs nothing for float64 forward at all, so the fallback fails as plainly."""
    import ucudnn
    from ucudnn.planner.errors import NoAlgorithmError

    x, w = _arrays(BAD_LAST)[:2]
    with (
        caplog.at_level("INFO", logger="ucudnn.faces.numpy_api"),
        pytest.raises(NoAlgorithmError, match="NCDHW float64"),
    ):
        # A cache of its own: the failures injected here must not reach other tests.
        ucudnn.conv_forward(
            x, w, layout="NDHWC", padding=1, database=tmp_path / "db.sqlite", engines=False
        )
    assert "running it NCDHW on transposed copies" in caplog.text
    # and the shared Handle still serves every other problem
    x32 = np.ones(GOOD.x_shape, np.float32)
    w32 = np.ones(GOOD.w_shape, np.float32)
    y = ucudnn.conv_forward(x32, w32, padding=1, database=tmp_path / "db.sqlite", engines=False)
    assert y.shape == GOOD.y_shape


def test_a_call_after_replan_runs_the_new_plan(tmp_path) -> None:
    """The Handle compiles each kernel's schedule once; a new plan must replace it."""
    from ucudnn.runtime.handle import Handle
    from ucudnn.testing import simulator

    with Handle(workspace_limit=64 * MiB, database=tmp_path / "db.sqlite") as handle:
        _forward_is_right(handle, GOOD)
        before = handle.schedule(GOOD, "forward")
        if before.workspace_bytes == 0:
            pytest.skip("the fastest schedule needs no workspace here; a limit of 0 keeps it")
        handle.replan(workspace_limit=0)
        after = handle.schedule(GOOD, "forward")
        assert after.workspace_bytes == 0
        for algo in {part.algo for part in before.parts} - {part.algo for part in after.parts}:
            simulator.fail_algorithm("forward", algo)  # the old schedule can no longer run
        _forward_is_right(handle, GOOD)


def test_use_plan_runs_a_plan_made_elsewhere_and_refuses_one_that_does_not_fit(tmp_path) -> None:
    from ucudnn.planner.plan import Plan
    from ucudnn.runtime.handle import Handle

    with Handle(workspace_limit=64 * MiB, database=tmp_path / "a.sqlite") as planner:
        planner.register(GOOD, ["forward"], layer="good")
        made = Plan.from_json(planner.finalize().to_json())  # as a file would bring it
    with Handle(workspace_limit=64 * MiB, database=tmp_path / "b.sqlite") as handle:
        with pytest.raises(ValueError, match="good/forward is not one this handle has seen"):
            handle.use_plan(made)
        handle.register(GOOD, ["forward"], layer="good")
        handle.use_plan(made)
        assert handle.plan is made
        _forward_is_right(handle, GOOD, "good")
        assert handle.plan is made  # run as given, not planned again
    with Handle(workspace_limit=64 * MiB, database=tmp_path / "c.sqlite") as handle:
        handle.register(OTHER, ["forward"], layer="good")
        with pytest.raises(ValueError, match="has batch 4, its problem 2"):
            handle.use_plan(made)
    with (
        Handle(total_workspace=64 * MiB, database=tmp_path / "d.sqlite") as handle,
        pytest.raises(ValueError, match="in WD mode; the plan is wr"),
    ):
        handle.use_plan(made)
    if made.workspace_bytes:
        with Handle(workspace_limit=made.workspace_bytes - 1, database=tmp_path / "e") as handle:
            handle.register(GOOD, ["forward"], layer="good")
            with pytest.raises(ValueError, match="over the limit"):
                handle.use_plan(made)
