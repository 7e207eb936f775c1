"""The `plan` command: options, outputs and exit statuses."""

from __future__ import annotations

import json

import pytest

from ucudnn.faces.cli import main
from ucudnn.planner.plan import Plan
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

MiB = 1 << 20


@pytest.fixture
def timings(tmp_path, monkeypatch) -> str:
    for name in (
        "UCUDNN_DEFAULT_WORKSPACE_LIMIT",
        "UCUDNN_TOTAL_WORKSPACE_SIZE",
        "UCUDNN_WORKSPACE_SHARING",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("UCUDNN_BATCH_SIZE_POLICY", raising=False)
    tables = TimingTables()
    for layer in ("conv1", "conv2"):
        table = KernelTable(layer, "forward", 256)
        table.add(Candidate(256, 0, 8.0, 1000, deterministic=True))
        table.add(Candidate(256, 1, 4.0, 256 * MiB))
        table.add(Candidate(64, 1, 0.75, 64 * MiB))
        tables.add(table)
    path = tmp_path / "t.csv"
    tables.write_csv(path)
    return str(path)


def plan(*argv: str) -> int:
    return main(["plan", *argv])


def test_wr_text(timings, capsys) -> None:
    assert plan("--timings", timings, "--workspace-limit", "64MiB") == 0
    out = capsys.readouterr().out
    assert out.startswith("WR plan: per-kernel limit 64 MiB, policy powerOfTwo")
    assert "conv2  forward  4x64" in out and "total" in out


def test_wr_json(timings, capsys) -> None:
    assert plan("--timings", timings, "--mode", "wr", "--workspace-limit", "64MiB", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "wr" and data["solver_status"] == "optimal"
    assert data["totals"]["time_ms"] == 6.0 and data["totals"]["workspace_bytes"] == 64 * MiB
    k = data["kernels"][0]
    assert (k["layer"], k["kernel"], k["micro_batches"], k["algos"]) == (
        "conv1",
        "forward",
        [64, 64, 64, 64],
        [1, 1, 1, 1],
    )
    assert (k["time_ms"], k["workspace_bytes"]) == (3.0, 64 * MiB)


def test_wd_json_shares_the_budget(timings, capsys) -> None:
    assert plan("--timings", timings, "--mode", "wd", "--total-workspace", "100MiB", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    # Two kernels: WD's exact search decides (solver "dp"), no ILP is needed.
    assert data["mode"] == "wd" and data["solver"] == "dp" and data["solver_status"] == "optimal"
    assert sorted(k["micro_batches"] for k in data["kernels"]) == [[64, 64, 64, 64], [256]]
    assert data["kernels"][0]["offset_bytes"] == 0
    assert data["totals"]["time_ms"] == 11.0


def test_a_shared_total_is_planned_as_wr_at_the_total(timings, capsys, monkeypatch) -> None:
    """Divided, 100 MiB leaves one kernel undivided (11 ms); shared, each kernel may use all
    of it in turn, as a Handle runs them (6 ms)."""
    argv = ["--timings", timings, "--mode", "wd", "--total-workspace", "100MiB", "--json"]
    assert plan(*argv, "--workspace-sharing", "shared") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["limit_bytes"], data["totals"]["time_ms"]) == ("wr", 100 * MiB, 6.0)
    monkeypatch.setenv("UCUDNN_WORKSPACE_SHARING", "shared")
    assert plan(*argv) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "wr"
    assert plan(*argv, "--workspace-sharing", "divided") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["totals"]["time_ms"]) == ("wd", 11.0)


def test_options_from_the_environment(timings, capsys, monkeypatch) -> None:
    monkeypatch.setenv("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "1KiB")
    monkeypatch.setenv("UCUDNN_TOTAL_WORKSPACE_SIZE", "128MiB")
    monkeypatch.setenv("UCUDNN_BATCH_SIZE_POLICY", "undivided")
    # UCUDNN_TOTAL_WORKSPACE_SIZE turns WD on, as docs/configuration.md says; --mode wr still wins.
    assert plan("--timings", timings, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["limit_bytes"], data["totals"]["time_ms"]) == ("wd", 128 * MiB, 16.0)
    assert plan("--timings", timings, "--mode", "wr", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["limit_bytes"], data["totals"]["time_ms"]) == ("wr", 1024, 16.0)


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["--total-workspace", "100MiB"], {}, ("wd", 100 * MiB)),
        (["--workspace-limit", "1G"], {}, ("wr", 1 << 30)),
        ([], {"UCUDNN_TOTAL_WORKSPACE_SIZE": "128MiB"}, ("wd", 128 * MiB)),
        # An option beats the environment, whichever size each names.
        (["--workspace-limit", "1G"], {"UCUDNN_TOTAL_WORKSPACE_SIZE": "128MiB"}, ("wr", 1 << 30)),
        (["--total-workspace", "100MiB"], {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1G"}, ("wd", 100 * MiB)),
        (["--mode", "wr"], {"UCUDNN_TOTAL_WORKSPACE_SIZE": "128MiB"}, ("wr", 64 * MiB)),
    ],
)
def test_the_size_given_selects_the_mode(timings, capsys, monkeypatch, argv, environ, expected):
    """One rule, as the Handle has it: a total workspace selects wd, a limit per kernel wr."""
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert plan("--timings", timings, *argv, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["mode"], data["limit_bytes"]) == expected


def test_a_total_workspace_alone_plans_resnet50_in_wd(capsys, monkeypatch) -> None:
    monkeypatch.delenv("UCUDNN_TOTAL_WORKSPACE_SIZE", raising=False)
    monkeypatch.delenv("UCUDNN_WORKSPACE_SHARING", raising=False)
    assert plan("resnet50", "--model", "--total-workspace", "64MiB", "-q") == 0
    assert capsys.readouterr().out.startswith("WD plan: total budget 64 MiB, policy powerOfTwo")


def test_policy_and_determinism(timings, capsys) -> None:
    assert plan("--timings", timings, "--policy", "UNDIVIDED", "--workspace-limit", "1G") == 0
    assert "4x64" not in capsys.readouterr().out
    assert plan("--timings", timings, "--deterministic", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["deterministic_only"] and [k["algos"] for k in data["kernels"]] == [[0], [0]]


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--workspace-limit", "64 apples"], 2, "--workspace-limit='64 apples' is not a size"),
        (["--policy", "some"], 2, "--policy='some' is not a policy"),
        (["--mode", "wr", "--total-workspace", "1G"], 2, "--total-workspace is for --mode wd"),
        (
            ["--workspace-limit", "1G", "--total-workspace", "1G"],
            2,
            "give --workspace-limit (wr) or --total-workspace (wd), not both",
        ),
        (["--mode", "wd"], 2, "--mode wd needs --total-workspace"),
        (["--mode", "wd", "--workspace-limit", "1G"], 2, "--workspace-limit is for --mode wr"),
        (["--mode", "wd", "--total-workspace", "100"], 1, "no plan fits: total workspace budget"),
        (["--workspace-limit", "0"], 1, "the smallest workspace that works is 1000 bytes"),
        (["--workspace-sharing", "shared"], 2, "--workspace-sharing is for a total workspace"),
    ],
)
def test_errors(timings, capsys, argv, status: int, message: str) -> None:
    assert plan("--timings", timings, *argv) == status
    assert message in capsys.readouterr().err


def test_bad_files(tmp_path, capsys) -> None:
    assert plan() == 2
    assert "give --timings FILE.csv" in capsys.readouterr().err
    assert plan("--timings", str(tmp_path / "missing.csv")) == 2
    assert "No such file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes\nc,fwd,1,1,0,1,0\n")
    assert plan("--timings", str(bad)) == 2
    assert "bad.csv, line 2, column 'kernel': unknown kernel 'fwd'" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes\n")
    assert plan("--timings", str(empty)) == 2
    assert "has no timing rows" in capsys.readouterr().err


def test_explain_follows_the_report(timings, capsys) -> None:
    assert plan("--timings", timings, "--workspace-limit", "64MiB", "--explain") == 0
    out = capsys.readouterr().out
    report, why = out.split("\n\n")
    assert report.startswith("WR plan:") and why.startswith("Why (WR):")
    # 4x64 of algo 1 is the fastest schedule of both kernels; the next smaller is algo 0.
    rows = [line.split() for line in why.splitlines()[2:4]]
    assert rows[0][:2] == ["conv1", "forward"] and rows[0][-1] == "fastest"
    assert rows[1][4:7] == ["4x64", "algo", "1"] and rows[1][11:14] == ["256", "algo", "0"]


def test_explain_in_json_is_read_back_as_a_plan(timings, capsys) -> None:
    argv = ["--timings", timings, "--mode", "wd", "--total-workspace", "100MiB"]
    assert plan(*argv, "--json", "--explain") == 0
    text = capsys.readouterr().out
    data = json.loads(text)
    # One kernel took 4x64 (64 MiB); the other could not: its runner-up needs 64 MiB more
    # than its undivided algo 0 (1000 bytes, 1024 aligned).
    assert data["explain"]["budget_left_bytes"] == 100 * MiB - 64 * MiB - 1024
    reasons = sorted(k["reason"] for k in data["explain"]["kernels"])
    assert reasons == ["fastest", "over_budget"]
    assert Plan.from_json(text).to_dict() == {k: v for k, v in data.items() if k != "explain"}
    assert plan(*argv, "--json") == 0
    assert "explain" not in json.loads(capsys.readouterr().out)


def test_explain_alexnet_from_the_model_in_wd(capsys) -> None:
    argv = ["alexnet", "--model", "--batch", "128", "--mode", "wd", "--total-workspace", "256MiB"]
    assert plan(*argv, "--explain") == 0
    why = capsys.readouterr().out.split("\n\n")[1].splitlines()
    rows = [line.split() for line in why[2:17]]
    assert [row[0] for row in rows] == [f"conv{n}" for n in range(1, 6) for _ in range(3)]
    assert {" ".join(row[-2:]) if row[-1] == "budget" else row[-1] for row in rows} == {
        "over budget",
        "fastest",
    }
    assert why[-2].startswith("Budget 256 MiB: ") and why[-2].endswith(" left.")


def test_help_states_the_mode_rule(capsys) -> None:
    with pytest.raises(SystemExit):
        plan("--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "UCUDNN_TOTAL_WORKSPACE_SIZE) selects wd and --workspace-limit selects wr" in text
    assert "an option beats the environment" in text and "Sizes are whole bytes" in text
