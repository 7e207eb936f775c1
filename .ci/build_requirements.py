"""Print what building ucudnn from this checkout needs, one requirement a line (pip -r form).

    python .ci/build_requirements.py build-system  # the backend and Cython (pyproject.toml)
    python .ci/build_requirements.py backend       # what the backend asks for on this machine

`.ci/setup` builds without isolation, so it installs these itself, as pip's isolated build
would. `backend` asks scikit-build-core (installed first, from `build-system`), which names
the NVIDIA headers and libraries to compile against, and `cmake` and `ninja` when none new
enough is on PATH: CMakeLists.txt's cmake_minimum_required is the minimum it checks.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_system() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        requires: list[str] = tomllib.load(file)["build-system"]["requires"]
    return requires


def backend() -> list[str]:
    from scikit_build_core.build import get_requires_for_build_editable

    os.chdir(ROOT)  # the backend reads pyproject.toml and CMakeLists.txt from here
    return get_requires_for_build_editable()


SOURCES = {"build-system": build_system, "backend": backend}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", choices=SOURCES)
    args = parser.parse_args(argv)
    print("\n".join(SOURCES[args.source]()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
