"""The slab policy (which extents are tried), the MODEL's prices of runs cut into slabs, and
the plans made of them: WR's and WD's optima against brute force on small volumes, and on the
large 3D layers a spatial split chosen only where it is faster within the limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.planner_oracles import KERNELS, all_schedules, best_wd
from ucudnn.core import slabs
from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.config import Config, parse_slab_policy, slab_policy
from ucudnn.planner.networks import load_network, network_names
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.policies import slab_extents
from ucudnn.planner.synthetic import model_candidates, model_table, model_tables
from ucudnn.planner.tables import Candidate, TimingTables
from ucudnn.planner.wr import plan_wr

SMALL = ConvProblem.create(2, 4, 8, (8, 6, 6), 3, 1, dtype="float16")
# Small enough to list every schedule, large enough that slabs win at some limits.
VOLUME = ConvProblem.create(2, 16, 32, (16, 16, 16), 3, 1, dtype="float16")


# -- the policy --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "policy"),
    [
        ("undivided", "undivided"),
        (" PowerOfTwo ", "powerOfTwo"),
        ("POWEROFTWO", "powerOfTwo"),
        ("8, 2,8", (2, 8)),
        ("004", (4,)),
    ],
)
def test_slab_policies_are_read_as_micro_batch_policies_are(text: str, policy: object) -> None:
    assert parse_slab_policy(text, "--slab-policy") == policy
    assert slab_policy(text, "slab_policy") == policy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("all", "--slab-policy='all' is not a policy; expected one of undivided, powerOfTwo "),
        ("0,4", "positive slab extents up to 2147483647"),
        ("", "--slab-policy is empty"),
    ],
)
def test_bad_slab_policies_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_slab_policy(text, "--slab-policy")


def test_slab_policies_from_python_and_the_environment() -> None:
    assert slab_policy([np.int64(8), 2], "slab_policy") == (2, 8)
    with pytest.raises(ValueError, match="slab_policy slab extent must be >= 1"):
        slab_policy([0], "slab_policy")
    with pytest.raises(ValueError, match="slab_policy names no slab extent"):
        slab_policy([], "slab_policy")
    assert Config().slab_policy == "undivided"
    assert Config.from_env({"UCUDNN_SLAB_POLICY": "powerofTWO"}).slab_policy == "powerOfTwo"
    with pytest.raises(ValueError, match="UCUDNN_SLAB_POLICY='some' is not a policy"):
        Config.from_env({"UCUDNN_SLAB_POLICY": "some"})
    with pytest.raises(TypeError, match="slab_policy must be a policy name"):
        Config(slab_policy=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("policy", "planes", "extents"),
    [
        ("undivided", 64, []),
        ("powerOfTwo", 64, [1, 2, 4, 8, 16, 32]),
        ("powerOfTwo", 65, [1, 2, 4, 8, 16, 32, 64]),
        ("powerOfTwo", 1, []),
        ((3, 8, 100), 8, [3]),
        ("5,1", 6, [1, 5]),
    ],
)
def test_the_extents_are_below_the_planes(policy: object, planes: int, extents: list[int]) -> None:
    assert slab_extents(policy, planes) == extents  # type: ignore[arg-type]


# -- the model's prices ------------------------------------------------------------------------
def by_slot(candidates: list[Candidate]) -> dict[tuple[int, str, int], Candidate]:
    return {(c.algo, c.math_type, c.slab): c for c in candidates}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("extent", [1, 3, 4])
def test_a_slab_run_costs_its_slabs_priced_as_their_own_problems(kernel: str, extent: int) -> None:
    found = by_slot(model_candidates(SMALL, kernel, 2, slab_policy=[extent]))
    parts = [s.problem(SMALL) for s in slabs.slabs(SMALL, kernel, extent)]
    # The planes they read overlap by their halos (dy's for backward-data, else x's).
    read = (
        (lambda p: p.output_size[0]) if kernel == "backward_data" else (lambda p: p.input_size[0])
    )
    assert sum(map(read, parts)) > read(SMALL)
    priced = [by_slot(model_candidates(part, kernel, 2)) for part in parts]
    cut = {slot: c for slot, c in found.items() if slot[2] == extent}
    assert cut, "every GEMM family runs in slabs"
    for (algo, math_type, _), candidate in cut.items():
        own = [at[algo, math_type, 0] for at in priced]
        assert candidate.time_ms == pytest.approx(math.fsum(c.time_ms for c in own), abs=1e-6)
        assert candidate.workspace_bytes == max(c.workspace_bytes for c in own)
        # The halos' planes and one launch per slab: never cheaper than the run whole.
        assert candidate.time_ms > found[algo, math_type, 0].time_ms


def test_half_types_have_tensor_core_runs_that_copy_channels_first_tensors() -> None:
    first = by_slot(model_candidates(SMALL, "forward", 2))
    channels_last = ConvProblem.create(2, 4, 8, (8, 6, 6), 3, 1, dtype="float16", layout="NDHWC")
    last = by_slot(model_candidates(channels_last, "forward", 2))
    copies = 2 * (4 * 8 * 6 * 6 + 8 * 8 * 6 * 6) * 2  # b * (C*in + K*out) * itemsize
    for algo in (0, 1, 2):
        tensor_op, default = first[algo, "tensor_op", 0], first[algo, "default", 0]
        assert tensor_op.workspace_bytes == default.workspace_bytes + copies
        assert last[algo, "tensor_op", 0].workspace_bytes == default.workspace_bytes
        assert last[algo, "tensor_op", 0].time_ms < default.time_ms
    single = ConvProblem.create(2, 4, 8, (8, 6, 6), 3, 1)  # float32: no tensor-op runs
    assert {c.math_type for c in model_candidates(single, "forward", 2)} == {"default"}


def test_slab_runs_are_modelled_at_every_micro_batch_size() -> None:
    table = model_table("conv", "forward", SMALL, "powerOfTwo", "powerOfTwo")
    for b in (1, 2):
        assert {c.slab for c in table.candidates[b]} == {0, 1, 2, 4}
    assert table == model_table("conv", "forward", SMALL, "powerOfTwo", (1, 2, 4, 8, 9))


def test_problems_that_cannot_be_cut_get_no_slab_runs() -> None:
    wide = ConvProblem.create(1, 4, 8, (8, 6, 6), 1, 1, dtype="float16")  # padding past the 1x1
    assert slabs.unsplittable(wide) is not None
    table = model_table("conv", "forward", wide, "undivided", "powerOfTwo")
    assert {c.slab for c in table} == {0}


def test_the_default_slab_policy_models_what_the_model_did() -> None:
    plain = model_table("conv", "backward_data", SMALL)
    assert plain == model_table("conv", "backward_data", SMALL, slab_policy="undivided")
    assert {c.slab for c in plain} == {0}


# -- plans -------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("kernel", KERNELS)
def test_wr_finds_the_fastest_schedule_with_slabs_at_every_limit(batch: int, kernel: str) -> None:
    table = model_table("conv", kernel, VOLUME.with_batch(batch), "powerOfTwo", "powerOfTwo")
    schedules = all_schedules(table, "powerOfTwo")
    limits = sorted({s.workspace_bytes for s in schedules})
    sliced = 0
    for limit in limits:
        best = min(s.time_ms for s in schedules if s.workspace_bytes <= limit)
        chosen = plan_wr(table, limit, "powerOfTwo")
        assert chosen.time_ms == pytest.approx(best, rel=1e-12)
        assert chosen.workspace_bytes <= limit
        sliced += any(p.slab for p in chosen.parts)
    assert sliced, "some limit is best met in slabs"


def test_wd_finds_the_fastest_network_plan_with_slabs_at_every_budget() -> None:
    """The three kernels of one volume share a budget: WD's plan takes the least total time of
    any choice of one schedule per kernel (slabs or not) whose aligned workspaces fit."""
    tables = model_tables([("conv", VOLUME.with_batch(1), KERNELS)], "powerOfTwo", "powerOfTwo")
    sets = {kernel_id: all_schedules(table, "powerOfTwo") for kernel_id, table in tables.items()}
    unit = CUDNN_ALIGNMENT
    sizes = sorted({-(-s.workspace_bytes // unit) * unit for ss in sets.values() for s in ss})
    sliced = 0
    for budget in [sizes[0] * 3, *(3 * size for size in sizes[1::4])]:
        best = best_wd(sets, budget, unit)
        plan = make_plan_wd(tables, budget, "powerOfTwo")
        assert best is not None and plan.time_ms == pytest.approx(best, rel=1e-9), budget
        assert plan.workspace_bytes <= budget
        sliced += sliced_kernels(plan)
    assert sliced, "some budget is best spent on slabs"


def large(layout: str, policy: str) -> TimingTables:
    graph = load_network("cnn3d-large", dtype="float16", layout=layout)
    layers = ((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    return model_tables(layers, "powerOfTwo", policy)


def sliced_kernels(plan: Plan) -> int:
    return sum(any(p.slab for p in k.schedule.parts) for k in plan.kernels)


def test_a_spatial_split_wins_where_the_fast_runs_do_not_fit_whole() -> None:
    whole = make_plan_wr(large("NCDHW", "undivided"), "8MiB")
    cut = make_plan_wr(large("NCDHW", "powerOfTwo"), "8MiB")
    assert sliced_kernels(cut) > 0 and sliced_kernels(whole) == 0
    assert cut.time_ms < whole.time_ms
    # Measured against the same whole-volume baselines.
    assert cut.baseline_time_ms == whole.baseline_time_ms


@pytest.mark.parametrize(("layout", "limit"), [("NCDHW", "1TiB"), ("NDHWC", "8MiB")])
def test_no_spatial_split_where_the_fast_runs_fit_whole(layout: str, limit: str) -> None:
    whole = make_plan_wr(large(layout, "undivided"), limit)
    cut = make_plan_wr(large(layout, "powerOfTwo"), limit)
    assert sliced_kernels(cut) == 0
    assert cut.time_ms == whole.time_ms


def test_cnn3d_large_is_one_sample_of_large_volumes() -> None:
    assert "cnn3d-large" in network_names()
    graph = load_network("cnn3d-large")
    assert len(graph) == 9
    problems = [graph.problem(n) for n in graph.layers()]
    assert {p.batch for p in problems} == {1}
    assert {p.filter_size for p in problems} == {(3, 3, 3)}
    assert graph.problem("cosmoflow.conv1").input_size == (256, 256, 256)
    assert graph.problem("unet3d.enc3b").out_channels == 256
