"""Arrows point down: the planner (and `import ucudnn` itself) must load no native module, so
they work where the CUDA libraries cannot be loaded at all; nor the ILP solver, which only WD
needs (the GPU machine has no python-mip unless it is carried there); nor networkx or tqdm,
which only building a network and benchmarking need, so that importing stays light."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ucudnn

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


def test_only_the_switch_imports_the_simulator() -> None:
    """Production code reaches ucudnn.testing through ucudnn._native's UCUDNN_DEVICE switch
    alone, so the simulator is never imported, nor chosen, implicitly."""
    root = Path(ucudnn.__file__).parent
    importers = []
    for path in sorted(root.rglob("*.py")):
        if root / "testing" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if any(name.startswith("ucudnn.testing") for name in names):
                importers.append(str(path.relative_to(root)))
    assert importers == ["_native/__init__.py"]


@pytest.mark.parametrize(("device", "simulated"), [("", False), ("gpu", False), ("sim", True)])
def test_the_switch_alone_decides(device, simulated) -> None:
    code = "import ucudnn._native as n, sys; print(n.SIMULATED, 'ucudnn.testing' in sys.modules)"
    env = {**os.environ, "UCUDNN_DEVICE": device}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True)  # fmt: skip
    assert done.stdout.split() == [str(simulated)] * 2


@pytest.mark.parametrize(
    ("device", "quoted"),
    [("tpu", "'tpu'"), ("x" * 5000, "'" + "x" * 60 + "'... (5000 characters)")],
)
def test_an_unknown_device_is_refused_by_name(device, quoted) -> None:
    code = "import ucudnn._native"
    env = {**os.environ, "UCUDNN_DEVICE": device}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert f"UCUDNN_DEVICE={quoted}: expected 'gpu' (the default) or 'sim'" in done.stderr
    assert len(done.stderr) < 2000  # not the whole value back


def _imported_modules(tree: ast.AST) -> list[str]:
    """Every module an import statement names, `from a import b` counting as a.b too (b may
    be a submodule)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return names


def test_the_examples_use_only_public_modules() -> None:
    """The examples are what users copy: they reach CUDA and cuDNN through ucudnn.cuda and
    ucudnn.cudnn, never through ucudnn._native or another private module."""
    examples = Path(__file__).parent.parent / "examples"
    private = [
        f"{path.relative_to(examples)}: {name}"
        for path in sorted(examples.rglob("*.py"))
        for name in _imported_modules(ast.parse(path.read_text()))
        if name.split(".")[0] == "ucudnn" and any(p.startswith("_") for p in name.split(".")[1:])
    ]
    assert private == []
