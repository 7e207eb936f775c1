"""`--slab-policy` and `UCUDNN_SLAB_POLICY` on the command line: plans of the large 3D layers
from the cost model cut into slabs, their report, --explain and --json, and what is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpu_available
from ucudnn.faces.cli import main
from ucudnn.planner.plan import Plan

PLAN = ["plan", "cnn3d-large", "--model", "--dtype", "float16", "--workspace-limit", "8MiB"]


def test_plan_cuts_the_large_volumes_into_slabs_and_explains_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ucudnn", *PLAN, "--slab-policy", "powerOfTwo", "--explain"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report, _, why = done.stdout.partition("Why (WR)")
    assert "1/tensor_op in slabs of 4 planes" in report
    assert "1 algo 1/tensor_op in slabs of 4 planes" in why


def test_the_json_plan_carries_the_slabs(capsys) -> None:
    assert main([*PLAN, "--slab-policy", "powerOfTwo", "--json", "--explain"]) == 0
    text = capsys.readouterr().out
    document = json.loads(text)
    parts = [p for k in document["kernels"] for p in k["parts"]]
    assert any(p.get("slab", 0) > 0 for p in parts)
    assert all("slab" not in k["baseline"] for k in document["kernels"])
    assert any("slabs" in k["chosen"] for k in document["explain"]["kernels"])
    assert Plan.from_json(text).time_ms == pytest.approx(document["totals"]["time_ms"])


def test_without_a_slab_policy_nothing_is_cut(capsys) -> None:
    assert main([*PLAN, "--json"]) == 0
    assert '"slab' not in capsys.readouterr().out


def test_the_environment_names_the_slab_policy_and_the_option_beats_it(capsys, monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_SLAB_POLICY", "powerOfTwo")
    assert main(PLAN) == 0
    assert "in slabs of" in capsys.readouterr().out
    assert main([*PLAN, "--slab-policy", "UNDIVIDED"]) == 0
    assert "in slabs of" not in capsys.readouterr().out


def test_tune_takes_a_slab_policy(capsys) -> None:
    args = ["tune", "cnn3d-large", "--model", "--dtype", "float16", "--memory", "16GiB"]
    assert main([*args, "--slab-policy", "4,8"]) == 0
    out = capsys.readouterr().out
    assert "in slabs of 4 planes" in out or "in slabs of 8 planes" in out


def test_a_bad_slab_policy_is_refused(capsys) -> None:
    assert main([*PLAN, "--slab-policy", "all"]) == 2
    err = capsys.readouterr().err
    assert "ucudnn plan: error: --slab-policy='all' is not a policy" in err
    assert "one of undivided, powerOfTwo" in err


def test_a_timings_file_refuses_a_slab_policy(capsys, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes\nc,forward,1,1,0,1,0\n"
    )
    assert main(["plan", "--timings", str(path), "--slab-policy", "powerOfTwo"]) == 2
    assert "a timings file holds those it was measured with" in capsys.readouterr().err


def test_without_a_gpu_a_slab_policy_plans_from_the_model(capsys) -> None:
    if gpu_available()[0]:
        pytest.skip("a GPU is present: it measures instead")
    assert main(["plan", "alexnet"]) == 0
    assert "shipped with ucudnn" in capsys.readouterr().err
    assert main(["plan", "alexnet", "--slab-policy", "powerOfTwo"]) == 0
    assert "planning from MODEL timings" in capsys.readouterr().err  # the shipped hold no slabs
