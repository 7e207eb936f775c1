"""Print the newest Python 3.12+ of this machine other than the one running this script.

PYTHON_NEWEST, when set, names it. Otherwise each python3.N (newest first) is looked for on
PATH, then in every Python that pyenv manages (pyenv's shims run only the selected versions,
so its version directories are searched). A candidate counts only if it runs and is the
version its name says. Prints nothing when there is none; .ci/test then says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

OLDEST_MINOR = 12
NEWEST_MINOR = 20  # looked for, not required to exist


def version_of(python: str) -> str | None:
    """ "3.N" of the interpreter `python`, or None if it does not run."""
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        result = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def pyenv_bin_dirs() -> list[Path]:
    if not shutil.which("pyenv"):
        return []
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    return sorted(Path(root).glob("versions/*/bin")) if root else []


def candidates() -> Iterator[tuple[str, str]]:
    """(path, the version its name claims), newest first."""
    pyenv_dirs = pyenv_bin_dirs()
    for minor in range(NEWEST_MINOR, OLDEST_MINOR - 1, -1):
        name = f"python3.{minor}"
        on_path = shutil.which(name)
        paths = [on_path] if on_path else []
        paths += [str(d / name) for d in pyenv_dirs if (d / name).is_file()]
        yield from ((path, f"3.{minor}") for path in paths)


def newest_other_python() -> str | None:
    if os.environ.get("PYTHON_NEWEST"):
        return os.environ["PYTHON_NEWEST"]
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    for path, claimed in candidates():
        if claimed != own and version_of(path) == claimed:
            return path
    return None


if __name__ == "__main__":
    print(newest_other_python() or "")
