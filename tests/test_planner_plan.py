"""Whole-network plans: WR and WD from timing tables, baselines, JSON round trip, report."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ucudnn.core.facts import DeviceFacts
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import DesirableSets, desirable_set, smallest_workspace
from ucudnn.planner.plan import KernelPlan, Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, Schedule, TimingTables
from ucudnn.planner.wd import aligned, plan_wd
from ucudnn.planner.wr import plan_wr

MiB = 1 << 20
FACTS = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 92800, 13000)


@pytest.fixture(scope="module")
def tables() -> TimingTables:
    graph = builtin_network("alexnet", batch=128)
    return model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


def test_wr_plan_is_per_kernel_wr_and_never_slower_than_its_baseline(tables) -> None:
    plan = make_plan_wr(tables, 16 * MiB, device=FACTS, timings_source="model")
    assert [k.kernel_id for k in plan.kernels] == list(tables)
    for k in plan.kernels:
        table = tables[k.kernel_id]
        assert k.schedule == plan_wr(table, 16 * MiB)
        singles = [c for c in table.candidates[128] if c.workspace_bytes <= 16 * MiB]
        assert k.baseline == min(singles, key=Candidate.speed_key)
        assert k.speedup >= 1.0 and k.offset is None
    assert plan.time_ms <= plan.baseline_time_ms
    assert plan.workspace_bytes == max(k.workspace_bytes for k in plan.kernels) <= 16 * MiB
    assert any(len(k.schedule.parts) > 1 for k in plan.kernels)  # micro-batching pays here


def test_wd_plan_fits_the_budget_and_beats_its_undivided_baseline(tables) -> None:
    plan = make_plan_wd(tables, 64 * MiB, deterministic_only=True)
    assert plan.solver_status == "optimal" and plan.alignment == 256
    end = 0
    for k in plan.kernels:
        assert k.offset % 256 == 0 and k.offset >= end
        end = k.offset + aligned(k.workspace_bytes, 256)
        assert k.schedule.deterministic and k.baseline.deterministic
    assert plan.workspace_bytes <= end <= 64 * MiB
    assert sum(aligned(k.baseline.workspace_bytes, 256) for k in plan.kernels) <= 64 * MiB
    assert plan.time_ms <= plan.baseline_time_ms


@pytest.mark.parametrize("policy", ["powerOfTwo", "all"])
def test_wd_where_every_fastest_schedule_fits_takes_each_desirable_sets_last_point(
    policy: str,
) -> None:
    """Where they fit together, each kernel's fastest schedule is found by one solve instead
    of its front: the same schedules, offsets and solver as planning from the fronts."""
    graph = builtin_network("alexnet", batch=24)
    tables = model_tables(((n, graph.problem(n), graph.kernels(n)) for n in graph.layers()), policy)
    fastest = {k: plan_wr(t, 1 << 40, policy) for k, t in tables.items()}
    roomy = sum(aligned(s.workspace_bytes, 256) for s in fastest.values())
    for budget in (roomy, 2 * roomy, roomy - 1, roomy // 3):
        sets = DesirableSets(policy)
        plan = make_plan_wd(tables, budget, policy, sets=sets)
        if budget >= roomy:
            assert not sets._fronts  # no front was looked at, where all fit
        fronts = {k: desirable_set(t, budget, policy) for k, t in tables.items()}
        expected = plan_wd(fronts, budget)
        assert {k.kernel_id: k.schedule for k in plan.kernels} == expected.choices
        assert {k.kernel_id: k.offset for k in plan.kernels} == expected.offsets
        assert plan.solver == expected.solver
    assert make_plan_wd(tables, roomy, policy).solver == "none"


def test_wd_where_the_fastest_within_the_budget_split_and_fit_takes_them() -> None:
    # Within 512 B, each kernel runs fastest as two parts of 1 (3 + 3 ms in 256 B), not
    # undivided (10 ms in none, or 2 ms in 1 KiB); the two fit together.
    tables = TimingTables(
        KernelTable(
            layer,
            "forward",
            2,
            [
                Candidate(2, 0, 10.0, 0),
                Candidate(2, 1, 2.0, 1024),
                Candidate(1, 1, 3.0, 256),
            ],
        )
        for layer in ("a", "b")
    )
    sets = DesirableSets("all")
    plan = make_plan_wd(tables, 512, "all", sets=sets)
    assert not sets._fronts and plan.solver == "none"
    assert [k.schedule.micro_batches_text() for k in plan.kernels] == ["2x1", "2x1"]
    assert [k.offset for k in plan.kernels] == [0, 256]


def test_wd_infeasible_budget_names_the_minimum(tables) -> None:
    need = sum(aligned(smallest_workspace(t, "powerOfTwo", True), 256) for _, t in tables.items())
    assert need > 0
    with pytest.raises(InfeasibleError) as info:
        make_plan_wd(tables, need - 1, deterministic_only=True)
    assert info.value.required_bytes == need
    assert make_plan_wd(tables, need, deterministic_only=True).workspace_bytes <= need


def test_plan_without_a_baseline() -> None:
    table = KernelTable("big", "forward", 4, [Candidate(4, 1, 4.0, 100), Candidate(2, 1, 1.0, 10)])
    plan = make_plan_wr(TimingTables([table]), 50, policy=[2])
    k = plan["big", "forward"]
    assert k.baseline is None and k.speedup is None and plan.baseline_time_ms is None
    assert "none fits" in plan.report()
    assert Plan.from_json(plan.to_json()) == plan
    with pytest.raises(KeyError, match="no layer 'small' kernel 'forward'"):
        plan["small", "forward"]


@pytest.mark.parametrize("mode", ["wr", "wd"])
def test_json_round_trip(tables, mode: str) -> None:
    make = make_plan_wr if mode == "wr" else make_plan_wd
    plan = make(tables, 32 * MiB, policy=[1, 32], device=FACTS, timings_source="t.csv")
    text = plan.to_json()
    assert Plan.from_json(text) == plan
    data = json.loads(text)
    assert data["totals"]["time_ms"] == pytest.approx(plan.time_ms)
    assert data["policy"] == [1, 32] and data["device"]["cudnn_version"] == 92800
    first = data["kernels"][0]
    assert {"micro_batches", "algos", "time_ms", "workspace_bytes", "offset_bytes"} <= set(first)
    assert first["micro_batches"] == [p["micro_batch"] for p in first["parts"]]
    assert first["algos"] == [p["algo"] for p in first["parts"]]
    assert first["engines"] == [p["engine"] for p in first["parts"]]


def test_from_json_rejects_other_documents() -> None:
    with pytest.raises(ValueError, match=r"^<plan>, line 1: not a ucudnn-plan document"):
        Plan.from_json('{"format": "other"}')
    with pytest.raises(ValueError, match=r"version 4 is not supported \(expected 1, 2 or 3\)"):
        Plan.from_json('{"format": "ucudnn-plan", "version": 4}')
    with pytest.raises(ValueError, match=r"^p.json, line 1, field 'limit_bytes': is missing"):
        Plan.from_json('{"format": "ucudnn-plan", "version": 2, "mode": "wr"}', "p.json")
    # Where json places a syntax error changed in Python 3.13 (the trailing comma, not the
    # brace after it): assert on what ucudnn says around json's position and wording.
    with pytest.raises(ValueError, match=r"^p.json, line \d+, column \d+: malformed JSON: \w"):
        Plan.from_json('{"format": "ucudnn-plan",\n}', "p.json")
    with pytest.raises(ValueError, match="plan mode must be one of wr, wd"):
        Plan(mode="xx", limit_bytes=0, policy="all", kernels=())


def test_report_lists_every_kernel_with_totals() -> None:
    table = KernelTable("conv1", "forward", 256)
    table.add(Candidate(256, 0, 8.0, 0))
    table.add(Candidate(256, 1, 4.0, 256 * MiB))
    table.add(Candidate(128, 1, 2.5, 128 * MiB))
    table.add(Candidate(64, 1, 0.75, 64 * MiB))
    plan = make_plan_wr(TimingTables([table]), 64 * MiB, timings_source="t.csv")
    lines = plan.report().splitlines()
    assert lines[0] == "WR plan: per-kernel limit 64 MiB, policy powerOfTwo, solver dp (optimal)"
    assert lines[1] == "timings: t.csv"
    assert lines[2].split() == [
        "layer", "kernel", "micro-batches", "algos", "workspace", "time", "ms",
        "baseline", "ms", "speedup",
    ]  # fmt: skip
    row = ["conv1", "forward", "4x64", "1", "64", "MiB", "3.000", "8.000", "2.67x"]
    assert lines[3].split() == row
    assert lines[-1].split() == ["total", "64", "MiB", "3.000", "8.000", "2.67x"]


def _small_tables() -> TimingTables:
    a = KernelTable("a", "forward", 4, [Candidate(4, 0, 4.0, 0), Candidate(2, 1, 1.0, 1000)])
    b = KernelTable("b", "backward_filter", 2, [Candidate(2, 0, 2.0, 0), Candidate(2, 1, 1.0, 300)])
    return TimingTables([a, b])


def _document(mode: str) -> dict:
    tables = _small_tables()
    plan = make_plan_wr(tables, 4096) if mode == "wr" else make_plan_wd(tables, 4096)
    return json.loads(plan.to_json())


def _edit(document: dict, index: int, **fields: object) -> str:
    document["kernels"][index].update(fields)
    return json.dumps(document, indent=2)


def test_small_plans_round_trip() -> None:
    for mode in ("wr", "wd"):
        text = json.dumps(_document(mode))
        assert Plan.from_json(text).to_json() == Plan.from_json(text.encode()).to_json()


def test_version_1_documents_are_still_read() -> None:
    """Version 1 wrote micro_batches and algos as texts and named offset and alignment
    without their unit; a plan saved then reads back as the same plan."""
    plan = make_plan_wd(_small_tables(), 4096)
    v1 = json.loads(plan.to_json())
    v1["version"] = 1
    v1["alignment"] = v1.pop("alignment_bytes")
    for k in v1["kernels"]:
        k["offset"] = k.pop("offset_bytes")
        k["micro_batches"], k["algos"] = "2x2", "1"
        _drop_engines(k)
    assert Plan.from_json(json.dumps(v1)) == plan


def _drop_engines(kernel: dict) -> None:
    """A version 3 kernel object as versions 1 and 2 wrote it: no engines."""
    del kernel["engines"]
    for candidate in [*kernel["parts"], kernel["baseline"]]:
        if candidate is not None:
            del candidate["engine"]


def test_version_2_documents_are_read_as_legacy_algorithms() -> None:
    plan = make_plan_wd(_small_tables(), 4096)
    v2 = json.loads(plan.to_json())
    assert v2["version"] == 3
    v2["version"] = 2
    for k in v2["kernels"]:
        _drop_engines(k)
    assert Plan.from_json(json.dumps(v2)) == plan
    # Version 3 needs the field.
    v2["version"] = 3
    with pytest.raises(ValueError, match="part 0, field 'engine': is missing"):
        Plan.from_json(json.dumps(v2))


def test_engine_parts_round_trip_and_are_checked() -> None:
    tag = "eng62_k2=0_k13=1"
    table = KernelTable(
        "c",
        "forward",
        4,
        [Candidate(4, 1, 3.0, 0), Candidate(2, 62, 1.0, 8, "tensor_op", False, tag)],
    )
    plan = make_plan_wr(TimingTables([table]), 1024, "all")
    data = json.loads(plan.to_json())
    kernel = data["kernels"][0]
    assert kernel["algos"] == [62, 62] and kernel["engines"] == [tag, tag]
    assert [p["engine"] for p in kernel["parts"]] == [tag, tag]
    assert kernel["baseline"]["engine"] == ""
    assert Plan.from_json(plan.to_json()) == plan
    assert re.search(f" 2x2 +{tag}/tensor_op +8 B ", plan.report())
    kernel["parts"][0]["algo"] = 61
    with pytest.raises(ValueError, match="part 0: engine eng62_k2=0_k13=1 is a configuration of "
                                         "engine 62, but algo is 61"):  # fmt: skip
        Plan.from_json(json.dumps(data))


A_FWD = "kernel a/forward, field"
B_BWF = "kernel b/backward_filter, field"


@pytest.mark.parametrize(
    ("mode", "index", "fields", "message"),
    [
        ("wr", 0, {"batch": 8}, f"{A_FWD} 'parts': the micro-batches 2x2 add up to 4, "
                                "not to the batch 8"),
        ("wr", 0, {"batch": 0}, f"{A_FWD} 'batch': batch must be >= 1"),
        ("wr", 0, {"batch": "4"}, f"{A_FWD} 'batch': batch must be an integer"),
        ("wr", 0, {"batch": 2**63}, f"{A_FWD} 'batch': batch must be <= 2147483647"),
        ("wr", 0, {"parts": []}, f"{A_FWD} 'parts': a schedule needs at least one part"),
        ("wr", 0, {"parts": "2x2"}, f"{A_FWD} 'parts': must be a list"),
        ("wr", 0, {"parts": [1]}, f"{A_FWD} 'parts', part 0: expected an object"),
        ("wr", 0, {"parts": [{}]}, f"{A_FWD} 'parts', part 0, field 'micro_batch': is missing"),
        ("wr", 1, {"baseline": {"micro_batch": 2}}, f"{B_BWF} 'baseline', field 'algo': is "
                                                    "missing"),
        ("wr", 0, {"layer": 5}, "field 'layer': layer must be text, got 5"),
        ("wr", 0, {"layer": "a\nb"}, "field 'layer': layer .* control character"),
        ("wr", 0, {"kernel": "sideways"}, "field 'kernel': unknown kernel 'sideways'"),
        ("wr", 0, {"offset_bytes": 0}, f"{A_FWD} 'offset_bytes': WR plans have none, got 0"),
        ("wr", 0, {"colour": "red"}, "field 'colour': is not one of layer, kernel"),
        ("wd", 0, {"offset_bytes": None}, f"{A_FWD} 'offset_bytes': WD plans give every kernel "
                                          "an offset"),
        ("wd", 0, {"offset_bytes": -256}, f"{A_FWD} 'offset_bytes': offset_bytes must be >= 0"),
        ("wd", 0, {"offset_bytes": 1.5}, f"{A_FWD} 'offset_bytes': offset_bytes must be an "
                                         "integer"),
        ("wd", 1, {"offset_bytes": 100}, f"{B_BWF} 'offset_bytes': 100 is not a multiple of 256"),
        ("wd", 1, {"offset_bytes": 3840}, f"{B_BWF} 'offset_bytes': the workspace at 3840 of 300 "
                                          "bytes ends past the budget 4096"),
    ],
)  # fmt: skip
def test_from_json_names_the_kernel_and_field(
    mode: str, index: int, fields: dict, message: str
) -> None:
    with pytest.raises(ValueError, match="^p.json, (line [0-9]+, )?" + message):
        Plan.from_json(_edit(_document(mode), index, **fields), "p.json")


def test_kernel_errors_carry_the_line_of_their_object() -> None:
    text = _edit(_document("wr"), 1, batch=3)
    lines = text.splitlines()
    opening = next(n for n, line in enumerate(lines) if '"layer": "b"' in line)  # 0-based
    assert lines[opening - 1].strip() == "{"
    with pytest.raises(ValueError, match=rf"^p.json, line {opening}, {B_BWF} 'parts'"):
        Plan.from_json(text, "p.json")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "xx"}, "field 'mode': plan mode must be one of wr, wd"),
        ({"limit_bytes": -1}, "field 'limit_bytes': limit_bytes must be >= 0"),
        ({"limit_bytes": True}, "field 'limit_bytes': limit_bytes must be an integer"),
        ({"policy": "sometimes"}, "field 'policy': policy='sometimes' is not a policy"),
        ({"policy": [0]}, "field 'policy': policy micro-batch size must be >= 1"),
        ({"policy": 5}, "field 'policy': policy must be a policy name"),
        ({"kernels": {}}, "field 'kernels': must be a list"),
        ({"deterministic_only": "no"}, "field 'deterministic_only': deterministic_only must be"),
        ({"solver": None}, "field 'solver': must be text"),
        ({"alignment_bytes": 256}, "field 'alignment_bytes': WR plans have none"),
        (
            {"device": {"device_name": "x"}},
            "field 'device': device facts lack compute_capability",
        ),
        ({"extra": 1}, "field 'extra': is not one of mode"),
        ({"x" * 5000: 1}, r"field 'x{60}'\.\.\. \(5000 characters\): is not one of mode"),
    ],
)
def test_from_json_checks_the_plan_fields(change: dict, message: str) -> None:
    text = json.dumps({**_document("wr"), **change})
    with pytest.raises(ValueError, match="^<plan>, (line 1, )?" + message):
        Plan.from_json(text)


def test_from_json_refuses_kernels_that_clash() -> None:
    wd = _document("wd")
    wd["kernels"][1]["offset_bytes"] = 0
    with pytest.raises(
        ValueError, match=r"field 'offset_bytes': the workspace at 0 overlaps that of kernel "
    ):
        Plan.from_json(json.dumps(wd))
    wr = _document("wr")
    wr["kernels"].append(wr["kernels"][0])
    with pytest.raises(ValueError, match="kernel a/forward: appears twice in the plan"):
        Plan.from_json(json.dumps(wr))
    wr = _document("wr")
    wr["limit_bytes"] = 10
    with pytest.raises(ValueError, match="needs 1000 bytes of workspace, over the limit 10"):
        Plan.from_json(json.dumps(wr))
    wr = _document("wr")
    wr["deterministic_only"] = True
    with pytest.raises(ValueError, match="a deterministic-only plan runs a part that is not"):
        Plan.from_json(json.dumps(wr))
    text = json.dumps(_document("wr")).replace('"mode": "wr"', '"mode": "wr", "mode": "wd"')
    with pytest.raises(
        ValueError, match=r"^<plan>, line 1, column 1: the key 'mode' appears twice"
    ):
        Plan.from_json(text)


@pytest.mark.parametrize("digits", [101, 5000])
def test_long_integers_in_a_plan_are_located_at_their_value(digits: int) -> None:
    text = json.dumps(_document("wr"), indent=2)
    line = text.splitlines().index('  "limit_bytes": 4096,') + 1
    text = text.replace('"limit_bytes": 4096', f'"limit_bytes": {"9" * digits}')
    with pytest.raises(ValueError) as caught:
        Plan.from_json(text, "p.json")
    assert str(caught.value) == (
        f"p.json, line {line}, column 18: the integer has {digits} digits, more than any value "
        "a document holds (at most 100)"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [("9" * 5000, "line 1, column 1"), ("[1, 2,\n -" + "9" * 200 + "]", "line 2, column 2")],
)
def test_long_integers_outside_objects_are_located_too(text: str, where: str) -> None:
    with pytest.raises(ValueError, match=rf"^p.json, {where}: the integer has \d+ digits, more"):
        Plan.from_json(text, "p.json")


def test_a_plan_that_takes_no_time_has_no_speedup() -> None:
    table = KernelTable("z", "forward", 2, [Candidate(2, 0, 1.0, 0), Candidate(1, 1, -0.0, 0)])
    plan = make_plan_wr(TimingTables([table]), 0)
    k = plan["z", "forward"]
    assert k.time_ms == 0.0 and k.baseline.time_ms == 1.0
    assert k.speedup is None and plan.speedup is None
    text = plan.to_json()
    assert "Infinity" not in text and "NaN" not in text
    data = json.loads(text)
    assert data["kernels"][0]["speedup"] is None and data["totals"]["speedup"] is None
    assert data["kernels"][0]["parts"][0]["time_ms"] == 0.0
    row, total = plan.report().splitlines()[-3], plan.report().splitlines()[-1]
    assert row.split()[-2:] == ["1.000", "—"] and total.split()[-2:] == ["1.000", "—"]
    assert Plan.from_json(text) == plan


def test_a_zero_baseline_is_a_speedup_of_zero() -> None:
    table = KernelTable("z", "forward", 1, [Candidate(1, 0, 0.0, 0)])
    plan = make_plan_wr(TimingTables([table]), 0)
    assert plan["z", "forward"].speedup is None  # 0 / 0 says nothing either
    slow = KernelTable("s", "forward", 2, [Candidate(2, 0, 0.0, 0), Candidate(1, 1, 1.0, 0)])
    k = KernelPlan(
        "s", "forward", 2, Schedule((Candidate(1, 1, 1.0, 0),) * 2), slow.candidates[2][0]
    )
    assert k.speedup == 0.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"device_name": 7}, "device_name must be printable text"),
        ({"device_name": "H100\n"}, "device_name must be printable text"),
        ({"compute_capability": "9"}, "compute_capability must be 'major.minor'"),
        ({"cudnn_version": "92800"}, "cudnn_version must be an integer"),
        ({"cuda_version": -1}, "cuda_version must be >= 0"),
    ],
)
def test_device_facts_are_checked(fields: dict, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        DeviceFacts.from_dict({**FACTS.to_dict(), **fields})
    with pytest.raises(ValueError, match="unknown field"):
        DeviceFacts.from_dict({**FACTS.to_dict(), "extra": 1})
    assert DeviceFacts.from_dict(FACTS.to_dict()) == FACTS


def test_limits_are_taken_as_python_users_pass_them() -> None:
    table = KernelTable("c", "forward", 8, [Candidate(8, 0, 1.0, 0), Candidate(4, 1, 0.2, 100)])
    tables = TimingTables([table])
    assert make_plan_wr(tables, np.int64(100)).limit_bytes == 100
    assert make_plan_wd(tables, "1KiB").limit_bytes == 1024
    for make, name in ((make_plan_wr, "limit_bytes"), (make_plan_wd, "budget_bytes")):
        with pytest.raises(TypeError, match=rf"{name}=.* is not a size"):
            make(tables, float("nan"))
        with pytest.raises(ValueError, match=f"{name}=-1 is not a size"):
            make(tables, -1)
