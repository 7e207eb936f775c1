"""The package's public names: each resolves (loaded on first use), and nothing else does."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ucudnn
from ucudnn.core.build import distribution, version_text

ROOT = Path(__file__).resolve().parent.parent
SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")


@pytest.mark.parametrize("package", ["ucudnn", "ucudnn.planner"])
def test_every_exported_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        source = importlib.import_module(module._EXPORTS[name], package)
        assert getattr(module, name) is getattr(source, name)
        assert name in dir(module)


@pytest.mark.parametrize("package", ["ucudnn", "ucudnn.planner"])
def test_dir_lists_what_a_user_may_reach_for_and_not_the_set_up(package: str) -> None:
    listed = set(dir(importlib.import_module(package)))
    assert not listed & {"TYPE_CHECKING", "annotations", "lazy_exports", "_EXPORTS"}
    assert {"__version__", "DeviceArray", "Handle"} <= set(dir(ucudnn))


def test_a_framework_author_finds_device_arrays_at_the_top() -> None:
    from ucudnn.core.array import DeviceArray

    assert ucudnn.DeviceArray is DeviceArray
    assert "DeviceArray" in ucudnn.__all__


@pytest.mark.parametrize("package", ["ucudnn", "ucudnn.planner"])
def test_an_unknown_name_is_an_attribute_error_naming_it(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'conv_fwd'"):
        module.conv_fwd  # noqa: B018


def test_version_is_plain() -> None:
    # Package indexes refuse local labels such as "+cu13"; the CUDA major is in the name.
    assert "+" not in ucudnn.__version__
    assert all(part.isdigit() for part in ucudnn.__version__.split("."))


def test_python_dash_m_is_the_ucudnn_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ucudnn", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout == version_text() + "\n"


def test_the_version_names_the_distribution_and_what_it_was_built_for() -> None:
    text = version_text()
    if importlib.util.find_spec("ucudnn._build_info") is None:
        assert text == f"ucudnn {ucudnn.__version__} (native modules not built)"
        return
    from ucudnn import _build_info

    assert re.fullmatch(
        rf"ucudnn {re.escape(ucudnn.__version__)} \(ucudnn-cu{_build_info.CUDA_MAJOR}\), "
        rf"built for CUDA {_build_info.CUDA_MAJOR}\.\d+ and cuDNN 9\.\d+\.\d+",
        text,
    )


def test_a_source_tree_never_built_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ucudnn._build_info", None)  # as if CMake never ran
    assert version_text() == f"ucudnn {ucudnn.__version__} (native modules not built)"
    assert distribution() == "ucudnn-cu13"


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    # `ucudnn plan ... | head -1`: the pipe closes after the first line, long before the
    # command has written its 200 kB (more than a pipe holds).
    command = [sys.executable, "-m", "ucudnn", "plan", "deepbench", "--model", "--json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.readline()
        process.stdout.close()
        errors = process.stderr.read().decode()
        status = process.wait(timeout=60)
    assert status == 141  # 128 + SIGPIPE, as shells report it
    assert "Broken pipe" not in errors and "Traceback" not in errors, errors


def test_wd_plans_with_highs_when_the_cbc_package_is_removed() -> None:
    # python-mip requires cbcbox (about 600 MB installed) although WD solves with HiGHS; the
    # docs/installing.md says it may be uninstalled. Here it is made unimportable, as if it were.
    code = """
import sys
sys.modules["cbcbox"] = None
import ucudnn.planner.wd.search
ucudnn.planner.wd.search.DP_WORK_LIMIT = 0  # the ILP decides, not WD's exact search
from ucudnn.faces.cli import main
status = main(["plan", "resnet50", "--model", "--mode", "wd", "--total-workspace", "8MiB"])
print(status, "mip.highs" in sys.modules, "mip.cbc" in sys.modules, file=sys.stderr)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stderr.splitlines()[-1] == "0 True False", result.stderr
    assert "CBC" not in result.stderr
    assert "solver highs" in result.stdout


def pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def test_the_test_extra_holds_no_developer_tools_and_dev_holds_them() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    extras = project["optional-dependencies"]
    tools = ("ruff", "cython-lint", "mypy", "types-")
    assert not [r for r in extras["test"] if r.startswith(tools)]
    assert {t for t in tools for r in extras["dev"] if r.startswith(t)} == set(tools)
    assert f"{project['name']}[test]" in extras["dev"]  # dev runs the tests too


def test_the_classifiers_name_each_supported_python_and_the_urls_exist() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    for version in SUPPORTED_PYTHONS:
        assert f"Programming Language :: Python :: {version}" in project["classifiers"]
    assert project["requires-python"] == f">={SUPPORTED_PYTHONS[0]}"
    urls = project["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Issues", "Source"}
    assert all(url.startswith("https://") for url in urls.values())


def fake_program(directory: Path, name: str, output: str) -> None:
    """An executable `name` in `directory` that prints `output`, whatever it is asked (with
    the shell's builtin: `directory` is all the PATH there is)."""
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n")
    path.chmod(0o755)


def fake_cmake(directory: Path, version: str) -> None:
    # scikit-build-core reads `cmake -E capabilities`, a JSON document.
    fake_program(directory, "cmake", f'{{"version": {{"string": "{version}"}}}}')


def cmake_minimum() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.search(r"cmake_minimum_required\(VERSION ([\d.]+)\)", text)
    assert found
    return found[1]


def build_requirements(path: Path) -> list[str]:
    """What .ci/setup installs for the build, with only `path` on PATH."""
    script = ROOT / ".ci" / "build_requirements.py"
    result = subprocess.run(
        [sys.executable, str(script), "backend"],
        env={**os.environ, "PATH": str(path)},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split()


def test_setup_installs_cmake_and_ninja_when_the_system_cmake_is_too_old(tmp_path: Path) -> None:
    fake_cmake(tmp_path, "3.22.1")  # Debian 12 has 3.25, Ubuntu 22.04 3.22
    requirements = build_requirements(tmp_path)
    assert f"cmake>={cmake_minimum()}" in requirements
    assert [r for r in requirements if r.startswith("ninja")]  # none on this PATH
    assert "nvidia-cudnn-cu13>=9.1,<10" in requirements  # what the build compiles against


def test_setup_installs_no_cmake_when_the_system_has_a_new_enough_one(tmp_path: Path) -> None:
    if importlib.util.find_spec("cmake") or importlib.util.find_spec("ninja"):
        pytest.skip("the cmake or ninja package is installed here, so the build names it")
    fake_cmake(tmp_path, cmake_minimum() + ".0")
    fake_program(tmp_path, "ninja", "1.11.1")
    requirements = build_requirements(tmp_path)
    assert not [r for r in requirements if r.startswith(("cmake", "ninja"))], requirements


def newest_python(path: Path, **env: str) -> str:
    """What .ci/test runs the tests again with, with only `path` on PATH."""
    script = ROOT / ".ci" / "newest_python.py"
    environment = {k: v for k, v in os.environ.items() if k != "PYTHON_NEWEST"}
    result = subprocess.run(
        [sys.executable, str(script)],
        env={**environment, "PATH": str(path), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_ci_finds_the_newest_other_python_that_runs(tmp_path: Path) -> None:
    own = f"3.{sys.version_info.minor}"
    fake_program(tmp_path, "python3.12", "3.12")
    fake_program(tmp_path, f"python{own}", own)  # the default's version: not "another"
    fake_program(tmp_path, "python3.19", "3.13")  # not what its name says
    (tmp_path / "python3.18").write_text("#!/bin/sh\nexit 127\n")  # a pyenv shim, unselected
    (tmp_path / "python3.18").chmod(0o755)
    expected = "python3.12" if own != "3.12" else ""
    assert newest_python(tmp_path) == (str(tmp_path / expected) if expected else "")
    fake_program(tmp_path, "python3.17", "3.17")
    assert newest_python(tmp_path) == str(tmp_path / "python3.17")
    assert newest_python(tmp_path, PYTHON_NEWEST="/opt/py/bin/python3") == "/opt/py/bin/python3"


def test_the_build_files_cite_only_files_of_the_repository() -> None:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    names = {Path(f).name for f in listed} | {Path(f).name.removesuffix(".in") for f in listed}
    build_files = ["CMakeLists.txt", *(f for f in listed if f.startswith(".ci/"))]
    pattern = r"[\w./-]+\.(?:md|txt|toml|py|sh|in|pyx|json)\b"
    for build_file in build_files:
        for cited in re.findall(pattern, (ROOT / build_file).read_text()):
            if "/" in cited.lstrip("/"):
                assert (ROOT / cited).exists(), f"{build_file} cites {cited}"
            else:  # a file's name, as a comment or a CMake output names it
                assert cited.lstrip("/") in names, f"{build_file} cites {cited}"
