"""The GPU session needs nothing outside the repository: benchmarks/device_session.sh, and
benchmarks/fetch_wheels.py, which carries its wheels to a machine without a package index."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import fetch_wheels  # noqa: E402

# A folder beside the repository, or a path of one machine: no committed file may lean on
# either. The results' logs are kept as the runs printed them.
OUTSIDE_PATHS = re.compile(r"\.\./shared\b|(?<![\w.~-])/(?:work|root)/")
RECORDS = "benchmarks/results/"


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / name for name in listed.split("\0") if name]


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    leaning = []
    for path in tracked_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(RECORDS) or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        leaning += [f"{relative}: {match}" for match in OUTSIDE_PATHS.findall(text)]
    assert leaning == []


def test_every_shell_script_parses() -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    scripts = [
        path
        for path in tracked_files()
        if path.is_file() and path.read_bytes().startswith(b"#!/usr/bin/env bash")
    ]
    assert BENCHMARKS / "device_session.sh" in scripts
    for script in scripts:
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script.name}: {result.stderr}"


def test_every_file_the_session_script_names_exists() -> None:
    text = (BENCHMARKS / "device_session.sh").read_text()
    named = set(re.findall(r"\b(?:benchmarks|ucudnn|tests)/[\w./-]+\.(?:py|sh)\b", text))
    assert "benchmarks/fetch_wheels.py" in named
    assert [name for name in sorted(named) if not (ROOT / name).is_file()] == []


def printed_requirements(*extra: str) -> list[str]:
    command = [sys.executable, str(BENCHMARKS / "fetch_wheels.py"), "--print", *extra]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split("\n")


def test_print_lists_what_pyproject_needs_and_what_the_session_runs() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = config["project"]
    runtime = (
        project.get("dependencies")
        or (config["tool"]["scikit-build"]["metadata"]["dependencies"]["result"])
    )
    printed = printed_requirements("highspy<1.16")
    test = project["optional-dependencies"]["test"]
    session_test = [
        requirement
        for requirement in test
        if fetch_wheels.requirement_name(requirement) not in fetch_wheels.WHEEL_TEST_TOOLS
    ]
    assert len(session_test) == len(test) - len(fetch_wheels.WHEEL_TEST_TOOLS)
    left_out = set(test) - set(session_test)
    assert left_out and not left_out & set(printed)
    for requirement in [
        *config["build-system"]["requires"],
        *runtime,
        *session_test,
        "pytest-timeout",
        "nvidia-cudnn-frontend",
        "highspy<1.16",
    ]:
        assert requirement in printed
    assert any(line.startswith("ml_dtypes") for line in printed)
    assert any(line.startswith("platformdirs") for line in printed)


def test_manylinux_platforms_include_every_older_glibc_and_its_legacy_name() -> None:
    platforms = fetch_wheels.compatible_platforms("manylinux_2_28_x86_64")
    assert platforms[0] == "manylinux_2_28_x86_64"
    for older in ("manylinux_2_27_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"):
        assert older in platforms
    assert fetch_wheels.compatible_platforms("win_amd64") == ["win_amd64"]


def test_the_machines_own_distributions_are_read_in_any_spelling(tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(
        "NumPy==2.1.0\nml_dtypes==0.5.1\ntorch @ file:///wheels/torch.whl\n-e git+https://x/y\n"
    )
    assert fetch_wheels.installed_names(freeze) == {"numpy", "ml-dtypes", "torch"}
    freeze.write_text("not a freeze list\n")
    with pytest.raises(SystemExit, match="names no installed distribution"):
        fetch_wheels.installed_names(freeze)


def test_only_what_the_machine_lacks_and_the_session_uses_is_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolution = [
        ("mip", "2.0.0"),
        ("cbcbox", "2.935"),
        ("numpy", "2.3.0"),
        ("nvidia-cutlass-dsl-libs-cu13", "4.8.1"),
        ("Cython", "3.1.0"),
        ("cffi", "2.0.0"),
    ]
    pip_calls: list[list[str]] = []
    monkeypatch.setattr(fetch_wheels, "resolve", lambda requirements, options: resolution)
    monkeypatch.setattr(fetch_wheels, "run_pip", lambda arguments: pip_calls.append(arguments))
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("numpy==2.1.0\ncython==3.1.0\n")
    fetch_wheels.main(["--dest", str(tmp_path / "wheels"), "--have", str(freeze)])
    (download,) = pip_calls
    assert download[:2] == ["download", "--no-deps"]
    assert "--python-version=3.12" in download
    assert "--platform=manylinux2014_x86_64" in download
    assert [argument for argument in download if "==" in argument] == [
        "mip==2.0.0",
        "cffi==2.0.0",
    ]


def test_the_tests_that_need_the_wheel_tools_are_not_gpu_tests() -> None:
    # The session runs `pytest -m gpu` only, so it does without the wheel tests' tools.
    using = [
        path
        for path in (ROOT / "tests").glob("*.py")
        if path.name != Path(__file__).name
        and re.search(r"\b(?:auditwheel|patchelf)\b", path.read_text())
    ]
    assert ROOT / "tests" / "test_wheel.py" in using
    assert [path.name for path in using if "mark.gpu" in path.read_text()] == []


def test_missing_names_each_requirement_this_interpreter_does_not_meet() -> None:
    requirements = [
        "pytest>=8",
        "pytest>=999",
        "no-such-distribution-here",
        "Cython[extra]>=0.1",
        "numpy; python_version < '3'",
    ]
    assert fetch_wheels.unmet(requirements) == ["pytest>=999", "no-such-distribution-here"]


@pytest.mark.parametrize(("version", "enough"), [("23.2.1", False), ("23.3", True), ("24.0", True)])
def test_a_pip_that_takes_platform_only_with_target_is_named_in_one_line(
    version: str, enough: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pip_calls: list[list[str]] = []
    monkeypatch.setattr(fetch_wheels.importlib.metadata, "version", lambda name: version)
    monkeypatch.setattr(fetch_wheels, "resolve", lambda requirements, options: [("mip", "2.0.0")])
    monkeypatch.setattr(fetch_wheels, "run_pip", lambda arguments: pip_calls.append(arguments))
    fetch = ["--dest", str(tmp_path)]
    if enough:
        fetch_wheels.main(fetch)
        assert len(pip_calls) == 1
        return
    with pytest.raises(SystemExit, match=rf"needs pip 23\.3 or newer.*has pip {version}: "):
        fetch_wheels.main(fetch)
    assert pip_calls == []
