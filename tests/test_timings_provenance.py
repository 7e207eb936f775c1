"""Where timings were measured travels with them: `bench --export` records the device and its
cuDNN in the CSV, `read_csv` keeps it, and plans from the file name it (text and JSON)."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pytest

from tests.conftest import simulated
from ucudnn.core.facts import DeviceFacts
from ucudnn.faces.cli import main
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

H100 = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 91900, 13000)
COMMENT = "# device: NVIDIA H100 80GB HBM3; compute capability 9.0; cuDNN 9.19.0; CUDA 13.0"
HEADER = "layer,kernel,batch,micro_batch,algo,time_ms,workspace_bytes"


def _tables(device: DeviceFacts | None = H100) -> TimingTables:
    table = KernelTable("c", "forward", 4, [Candidate(4, 1, 2.0, 0), Candidate(2, 0, 0.5, 64)])
    return TimingTables([table], device=device)


def read(text: str) -> TimingTables:
    f = io.StringIO(text)
    f.name = "t.csv"
    return TimingTables.read_csv(f)


def test_the_csv_records_the_device_before_its_header() -> None:
    text = _tables().to_csv()
    assert text.splitlines()[:2] == [COMMENT, HEADER + ",math_type,deterministic,engine"]
    tables = read(text)
    assert tables.device == H100 and tables == _tables()


def test_files_without_a_device_read_as_before() -> None:
    text = _tables(device=None).to_csv()
    assert text.startswith(HEADER)
    assert read(text).device is None


def test_other_comments_are_notes_and_lines_keep_their_numbers(tmp_path: Path) -> None:
    text = (
        f"# measured by hand\n{COMMENT}\n{HEADER}\nc,forward,4,4,1,2.0,0\nc,forward,4,x,1,2.0,0\n"
    )
    with pytest.raises(ValueError, match=r"^t.csv, line 5, column 'micro_batch'"):
        read(text)
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(text.rsplit("c,", 1)[0].encode()))
    assert TimingTables.read_csv(path).device == H100


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("# device: NVIDIA H100; cuDNN 9.19.0", r"line 1: the device comment 'NVIDIA H100; cuDNN"),
        (COMMENT.replace("9.0;", "nine;"), "line 1: the device comment"),
        (f"{COMMENT}\n{COMMENT}", "line 2: a second device comment"),
        (COMMENT.replace("HBM3", "HBM3\x00"), r"line 1: device_name must be printable"),
    ],
)
def test_a_bad_device_comment_is_refused_at_its_line(comment: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^t.csv, {message}"):
        read(f"{comment}\n{HEADER}\nc,forward,4,4,1,2.0,0\n")


def test_a_header_error_is_at_the_header_line() -> None:
    with pytest.raises(ValueError, match=r"^t.csv, line 2: missing column\(s\) workspace_bytes"):
        read(f"{COMMENT}\nlayer,kernel,batch,micro_batch,algo,time_ms\n")


def test_plan_names_the_device_and_fills_the_json_device(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(_tables().to_csv().encode()))
    assert main(["plan", "--timings", str(path)]) == 0
    captured = capsys.readouterr()
    source = f"timings file {path}, measured on NVIDIA H100 80GB HBM3 (cuDNN 9.19.0)"
    assert f"timings: {source}\n" in captured.out
    assert f"planning from {source}" in captured.err
    assert main(["plan", "--timings", str(path), "--json", "--engines", "off"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["device"] == H100.to_dict()
    assert document["timings_source"].startswith(source)


def test_a_file_of_unknown_origin_plans_with_a_null_device(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    _tables(device=None).write_csv(path)
    assert main(["plan", "--timings", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["device"] is None and document["timings_source"] == f"timings file {path}"


@pytest.mark.gpu
def test_bench_then_plan_round_trips_the_device(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    exported = tmp_path / "alexnet.csv"
    bench = ["bench", "alexnet", "--batch", "4", "--database", str(tmp_path / "db.sqlite")]
    assert main([*bench, "--quiet", "--json", "--export", str(exported)]) == 0
    measured_on = json.loads(capsys.readouterr().out)["device"]
    comment = exported.read_text().splitlines()[0]
    assert re.fullmatch(
        r"# device: .+; compute capability [0-9]+\.[0-9]+; cuDNN [0-9]+\.[0-9]+\.[0-9]+; "
        r"CUDA [0-9]+\.[0-9]+",
        comment,
    ), comment
    assert ("# device: SIMULATED " in comment) == simulated()
    assert main(["plan", "--timings", str(exported), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["device"] == measured_on
    assert main(["plan", "--timings", str(exported)]) == 0
    source = capsys.readouterr().out.splitlines()[1]
    facts = DeviceFacts.from_dict(measured_on)
    assert source == f"timings: timings file {exported}, measured on {facts.describe()}"
    assert re.search(r"\(cuDNN [0-9]+\.[0-9]+\.[0-9]+\)$", source), source
