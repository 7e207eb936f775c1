"""mypy --strict, with the project's settings (pyproject.toml), on code outside the package:
the documented calls in tests/typing and the examples of the README and docs/*.md. mypy is a
developer tool (CI installs it), so the tests that use it skip, saying so, where it is missing."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Apart from the package run's cache: other options (follow-imports) would invalidate it.
_CACHE = ".mypy_cache/outside-the-package"


def strict_errors(paths: Sequence[Path]) -> list[str]:
    """mypy's error lines for `paths`. The modules they import are read, not reported on:
    the package's own mypy run checks those."""
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (a developer tool)")
    # From the repository root, as .ci/test runs mypy: there `import ucudnn` is this tree.
    with contextlib.chdir(ROOT):
        out, err, status = api.run(
            ["--config-file", "pyproject.toml", "--follow-imports=silent", "--no-error-summary",
             "--cache-dir", _CACHE, *map(str, paths)]
        )  # fmt: skip
    if status not in (0, 1):  # 2: mypy itself failed (bad options, a crash)
        raise RuntimeError(f"mypy exited {status}: {err or out}")
    return [line for line in out.splitlines() if ": error: " in line]
