"""Arrows point down: the planner (and `import ucudnn` itself) must load no native module, so
they work where the CUDA libraries cannot be loaded at all; nor the ILP solver, which only WD
needs (the GPU machine has no python-mip unless it is carried there)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
import {module}
loaded = sorted(m for m in sys.modules if m in ("ucudnn._cuda", "ucudnn._cudnn", "mip", "highspy"))
print(",".join(loaded))
"""


@pytest.mark.parametrize(
    "module",
    [
        "ucudnn",
        "ucudnn.planner",
        "ucudnn.planner.plan",
        "ucudnn.planner.cache",
        "ucudnn.planner.networks",
        "ucudnn.planner.cli",
        "ucudnn.planner.synthetic",
        "ucudnn.planner.wd",
    ],
)
def test_module_loads_no_native_code(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == ""
