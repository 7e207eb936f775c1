"""Arrows point down: the planner (and `import ucudnn` itself) must load no native module, so
they work where the CUDA libraries cannot be loaded at all; nor the ILP solver, which only WD
needs (the GPU machine has no python-mip unless it is carried there); nor networkx or tqdm,
which only building a network and benchmarking need, so that importing stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = (
    "ucudnn._native._cuda",
    "ucudnn._native._cudnn",
    "ucudnn._native._dlpack",
    "mip",
    "highspy",
    "networkx",
    "tqdm",
)
PROBE = """
import sys
{statement}
print(",".join(sorted(m for m in sys.modules if m in {heavy!r})))
"""


@pytest.mark.parametrize(
    "statement",
    [
        "import ucudnn",
        "from ucudnn import conv_forward, conv_backward_data, conv_backward_filter, ConvProblem",
        "import ucudnn.faces.numpy_api",
        "import ucudnn.faces.cli",
        "import ucudnn.planner",
        "import ucudnn.planner.plan",
        "import ucudnn.planner.cache",
        "import ucudnn.planner.networks",
        "import ucudnn.planner.cli",
        "import ucudnn.planner.synthetic",
        "import ucudnn.planner.wd",
    ],
)
def test_import_loads_nothing_heavy(statement: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == ""
