"""benchmarks/first_use_replay.py on the recorded engines tables: the fast search finds the
exhaustive optimum within 1 % on every plan at the worst of 5 noise seeds, for much less work;
and the tool's input and output as its docstring says.

The issue's other targets (5x fewer builds + launches, 20 s modelled for ResNet-50 fp16) are
not met (benchmarks/results/2026-11-27-first-use-replay.md): LEAST_REDUCTION keeps what is.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from pathlib import Path

import pytest

from ucudnn.planner.plan import make_plan_wr

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
RESULTS = BENCHMARKS / "results"
sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by name

import first_use_replay as replay  # noqa: E402

MiB = 1 << 20
TABLES = [
    "2026-11-27-h200-engines-resnet50-fp16-tables.zip",
    "2026-11-25-h100-engines-resnet50-fp16-tables.zip",
    "2026-11-25-h100-engines-resnet50-fp32-tables.zip",
    "2026-11-25-h100-engines-deepbench-fp16-tables.zip",
]
LEAST_REDUCTION = 3.5  # builds + launches, exhaustive over fast: what the search does today


@pytest.mark.parametrize("name", TABLES)
def test_the_fast_search_finds_the_exhaustive_optimum_within_1_percent(name: str) -> None:
    tables = replay.read_tables(RESULTS / name, None)
    result = replay.run(tables, [8 * MiB, 64 * MiB], 5, replay.Timing(3, 10), 8)
    plans = result["plans"]
    assert [(p["plan"], p["limit_bytes"]) for p in plans] == [
        ("wr", 8 * MiB), ("wd_kernels", 8 * MiB), ("wd_limit", 8 * MiB),
        ("wr", 64 * MiB), ("wd_kernels", 64 * MiB), ("wd_limit", 64 * MiB),
        ("ceiling", None),
    ]  # fmt: skip
    for plan in plans:
        assert 0 <= plan["gap"] <= 0.01, plan
    builds, launches = result["builds"], result["launches"]
    work = {s: builds[s] + launches[s] for s in ("exhaustive", "fast")}
    assert work["exhaustive"] >= LEAST_REDUCTION * work["fast"], (builds, launches)
    seconds = result["modelled_seconds"]
    assert seconds["fast"] < seconds["exhaustive"] / 2, seconds
    # Confirming alone, with every time known, costs less than the whole noisy search.
    floor = result["confirmations_floor"]
    assert 0 < floor["builds"] < builds["fast"] and 0 < floor["launches"] < launches["fast"]
    assert floor["modelled_seconds"] < seconds["fast"], (floor, seconds)


def test_the_exhaustive_replay_plans_exactly_what_was_recorded() -> None:
    """Every recorded time stands for a full timing, so the exhaustive replay's tables are the
    recorded ones: its optimum is the recorded tables' optimum."""
    tables = replay.read_tables(RESULTS / TABLES[2], None)
    measured, cost = replay.replay(tables, "exhaustive", replay.Timing(3, 10), 8, seed=0)
    assert make_plan_wr(measured, 8 * MiB).time_ms == make_plan_wr(tables, 8 * MiB).time_ms
    assert cost.builds > 0 and cost.launches > cost.builds and cost.problem_sizes > 0


def test_it_reads_a_gzip_csv_and_prints_one_json_object(tmp_path: Path) -> None:
    tables = replay.read_tables(RESULTS / TABLES[2], None)
    path = tmp_path / "timings.csv.gz"
    path.write_bytes(gzip.compress(tables.to_csv().encode()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert replay.main([str(path), "--seeds", "1", "--limits", "64MiB"]) == 0
    (line,) = out.getvalue().splitlines()
    document = json.loads(line)
    assert set(document) == {
        "tables", "seeds", "builds", "launches", "modelled_seconds", "confirmations_floor",
        "plans",
    }  # fmt: skip
    assert document["tables"] == "timings.csv.gz" and document["seeds"] == 1
    assert len(document["plans"]) == 4  # WR, WD twice at 64 MiB, and the ceiling
    for plan in document["plans"]:
        assert set(plan) == {"plan", "limit_bytes", "exhaustive_ms", "fast_ms", "gap"}


def test_a_zip_of_several_tables_must_name_one() -> None:
    several = RESULTS / "2026-11-24-h100-compare-resnet50-alexnet-tables.zip"
    with pytest.raises(SystemExit, match=r"holds 4 CSV files .*name one with --member"):
        replay.read_tables(several, None)
    tables = replay.read_tables(several, "alexnet-float16-NCHW.csv")
    assert len(tables) > 0
