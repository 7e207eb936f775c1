"""Bias: conv_forward(bias=) and the Handle add one value per output channel once per
mini-batch; the bias gradient sums dy over the batch and every position. On a CPU: the
refusals and the host-side gradient; on a GPU: both against the numpy reference, micro-batched,
and what an empty batch does to dw and db."""

from __future__ import annotations

import numpy as np
import pytest

import ucudnn
from tests import reference_conv as ref
from tests.test_handle import _logical, _problem, _upload
from ucudnn.core.dtypes import host_dtype
from ucudnn.core.problem import ConvProblem
from ucudnn.runtime.check import normalised_l2, tolerance

X = np.zeros((2, 4, 8, 8), np.float32)
W = np.zeros((6, 4, 3, 3), np.float32)
B = np.zeros(6, np.float32)
MiB = 1 << 20


@pytest.mark.parametrize(
    ("bias", "error", "message"),
    [
        (B.tolist(), TypeError, "bias must be a numpy.ndarray, got list"),
        (np.zeros(5, np.float32), ValueError, r"bias has shape \(5,\), expected \(6,\)"),
        (np.zeros((1, 6, 1, 1), np.float32), ValueError, "bias must have rank 1"),
        (B.astype(np.float64), TypeError, "bias has dtype float64, but x is float32"),
        (np.zeros(12, np.float32)[::2], ValueError, "bias is not C-contiguous"),
        (B.astype(">f4"), TypeError, "bias has non-native byte order"),
    ],
)
def test_bad_bias_is_named_before_device_work(bias, error, message) -> None:
    with pytest.raises(error, match=message):
        ucudnn.conv_forward(X, W, bias=bias)


def test_an_empty_batch_with_a_bias_needs_no_device() -> None:
    assert ucudnn.conv_forward(X[:0], W, bias=B).shape == (0, 6, 6, 6)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC", "NCDHW", "NDHWC"])
def test_the_bias_gradient_sums_all_but_the_channels(layout) -> None:
    rng = np.random.default_rng(0)
    logical = rng.standard_normal((3, 5, 4, 2) if len(layout) == 4 else (2, 5, 3, 2, 4))
    stored = np.moveaxis(logical, 1, -1) if layout[-1] == "C" else logical
    db = ucudnn.conv_backward_bias(np.ascontiguousarray(stored), layout=layout)
    expected = [logical[:, k].sum() for k in range(5)]
    np.testing.assert_allclose(db, expected, rtol=1e-12)
    assert db.dtype == np.float64 and db.shape == (5,)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_bias_gradient_accumulates_half_types_in_float32(dtype) -> None:
    """4096 ones: a half-precision running sum stops at 2048 (256 in bfloat16), a float32 one
    reaches 4096, which both types hold."""
    db = ucudnn.conv_backward_bias(np.ones((8, 2, 32, 16), host_dtype(dtype)))
    assert db.dtype == host_dtype(dtype) and db.astype(np.float32).tolist() == [4096.0, 4096.0]


def test_bad_bias_gradient_input_is_named() -> None:
    with pytest.raises(ValueError, match="layout 'NCDHW' is not one of NCHW, NHWC"):
        ucudnn.conv_backward_bias(np.zeros((2, 3, 4, 4), np.float32), layout="NCDHW")
    with pytest.raises(TypeError, match=r"dy must be a numpy\.ndarray"):
        ucudnn.conv_backward_bias([[[[1.0]]]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dy must have rank 4"):
        ucudnn.conv_backward_bias(np.zeros((2, 3), np.float32))


# -- on a GPU --------------------------------------------------------------------------------
def _with_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """y (logical) plus b over every sample and position."""
    return y + b.reshape(1, -1, *(1,) * (y.ndim - 2))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC", "NCDHW"])
def test_conv_forward_adds_the_bias_once(dtype, layout) -> None:
    rng = np.random.default_rng(1)
    rank = len(layout) - 2
    problem = ConvProblem.create(
        6, 3, 5, (7, 6) if rank == 2 else (4, 5, 3), 3, padding=1, dtype=dtype, layout=layout
    )
    x, w = (rng.standard_normal(d).astype(dtype) for d in (problem.x_dims, problem.w_dims))
    b = rng.standard_normal(5).astype(dtype)

    def stored(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(a, 1, -1)) if layout[-1] == "C" else a

    y = ucudnn.conv_forward(stored(x), stored(w), bias=b, padding=1, layout=layout, policy="all")
    logical = np.moveaxis(y, -1, 1) if layout[-1] == "C" else y
    expected = _with_bias(ref.forward(problem, x, w), b.astype(np.float64))
    assert normalised_l2(logical, expected) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_the_handle_adds_the_bias_after_all_micro_batches(tmp_path, beta) -> None:
    """The Handle runs the schedule of its plan. No policy can force a split (the undivided
    batch is always a candidate, and usually the fastest), so the plan here is the planner's
    from the Handle's own measurements less the undivided run: every schedule left splits. The
    exhaustive search times every candidate in full, so each size keeps them all (the fast one
    keeps none where a larger size does the samples faster)."""
    from ucudnn.core.array import DeviceArray
    from ucudnn.planner.plan import make_plan_wr
    from ucudnn.planner.tables import KernelTable, TimingTables
    from ucudnn.runtime.benchmark import BenchmarkSettings
    from ucudnn.runtime.handle import Handle
    from ucudnn.runtime.work import Work

    problem = _problem(2, "float32", True, batch=7)
    host, device = _upload(problem, np.random.default_rng(2))
    b = np.random.default_rng(3).standard_normal(problem.out_channels).astype(np.float32)
    settings = BenchmarkSettings(search="exhaustive")
    database = tmp_path / "db.sqlite"
    with Handle(
        workspace_limit=MiB, policy=[1, 3], database=database, benchmark=settings
    ) as handle:
        handle.register(problem, "forward", layer="conv")
        handle.finalize()  # measures micro-batches 7, 3 and 1, and allocates the workspace
        measured = handle.benchmarker.tables([Work("conv", problem, "forward")], handle.policy)
        micro_batches = KernelTable(
            "conv", "forward", problem.batch,
            (c for c in measured[("conv", "forward")] if c.micro_batch < problem.batch),
        )  # fmt: skip
        plan = make_plan_wr(
            TimingTables([micro_batches]), handle.limit, handle.policy, device=handle.facts
        )
        handle.use_plan(plan)
        handle.forward(
            device["x"], device["w"], device["y"], problem,
            bias=DeviceArray.from_numpy(b), alpha=1.5, beta=beta, layer="conv",
        )  # fmt: skip
        # The Handle ran the plan it was given (it did not plan again), and that plan splits.
        schedule = handle.schedule(problem, "forward", layer="conv")
        assert handle.plan is plan and schedule == plan[("conv", "forward")].schedule
        assert len(schedule.parts) > 1 and schedule.batch == problem.batch
        got = _logical(device["y"], problem, "y")
        with pytest.raises(ValueError, match="bias is added by the forward kernel"):
            handle.run_algorithm(
                "backward_data", problem, [device["w"], device["y"], device["x"]], 0, bias=b
            )
    expected = 1.5 * ref.forward(problem, host["x"], host["w"]) + beta * host["y"]
    assert normalised_l2(got, _with_bias(expected, b)) <= tolerance(problem, same_algorithm=False)


@pytest.mark.gpu
def test_the_handle_computes_the_bias_gradient(tmp_path) -> None:
    from ucudnn.core.array import DeviceArray
    from ucudnn.runtime.handle import Handle

    problem = _problem(3, "float32", False, batch=5)
    host, device = _upload(problem, np.random.default_rng(4))
    old = np.random.default_rng(5).standard_normal(problem.out_channels).astype(np.float32)
    db = DeviceArray.from_numpy(old)
    with Handle(workspace_limit=MiB, database=tmp_path / "db.sqlite") as handle:
        handle.backward_bias(device["y"], db, problem, alpha=2.0, beta=0.5)
        got = db.to_numpy()
    expected = 2.0 * host["y"].astype(np.float64).sum(axis=(0, 2, 3, 4)) + 0.5 * old
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_an_empty_batch_leaves_beta_times_the_gradients(tmp_path, beta) -> None:
    """Nothing is added, but beta still applies: beta 0 overwrites even NaN, as cuDNN does."""
    from ucudnn.core.array import DeviceArray
    from ucudnn.runtime.handle import Handle

    problem = _problem(2, "float32", False, batch=0)
    old_w = np.full(problem.w_shape, np.nan if beta == 0 else 3.0, np.float32)
    old_b = np.full(problem.b_shape, np.nan if beta == 0 else 3.0, np.float32)
    dw, db = DeviceArray.from_numpy(old_w), DeviceArray.from_numpy(old_b)
    x = DeviceArray.empty(problem.x_shape, "float32")
    dy = DeviceArray.empty(problem.y_shape, "float32")
    with Handle(workspace_limit=MiB, database=tmp_path / "db.sqlite") as handle:
        handle.backward_filter(x, dy, dw, problem, beta=beta)
        handle.backward_bias(dy, db, problem, beta=beta)
        expected = 0.0 if beta == 0 else 3.0 * beta
        assert (dw.to_numpy() == expected).all() and (db.to_numpy() == expected).all()
