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
        names = _imported_modules(ast.parse(path.read_text()))
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


def _package_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, deferred imports
    included; `from a import b` names a.b when b is a submodule, else a."""
    root = Path(ucudnn.__file__).parent
    paths = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    imports: dict[str, set[str]] = {}
    for module, path in paths.items():
        found = set()
        for node in _run_time_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{module}: relative import"
                submodules = [f"{node.module}.{alias.name}" for alias in node.names]
                known = [name for name in submodules if name in paths]
                found.update(known if len(known) == len(submodules) else [*known, node.module])
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        imports[module] = {name for name in found if name in paths and name != module}
    return imports


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` but those under `if TYPE_CHECKING:`, which never run."""
    nodes: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in _TYPE_CHECKING:
                pending += child.orelse
            else:
                pending.append(child)
    return nodes


_TYPE_CHECKING = ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _cycle(imports: dict[str, set[str]]) -> list[str]:
    """One import cycle, as the modules along it; [] when there is none."""
    state: dict[str, str] = {}  # "open" while on the path, "done" after
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for target in sorted(imports[module]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(imports):
        if module not in state and (found := visit(module)):
            return found
    return []


def test_the_package_imports_in_no_circle() -> None:
    """Arrows point one way, deferred imports included: the simulator plugs in at the
    `ucudnn._native` seam without any module it imports importing the seam back, and no
    module needs an import inside a function to dodge a circle."""
    imports = _package_imports()
    assert "ucudnn.testing.simulator" in imports["ucudnn._native"]  # the seam is seen
    assert _cycle(imports) == []


def test_a_circle_is_found() -> None:
    """The check above can fail: a made-up circle through the seam is reported along it."""
    imports = {
        "ucudnn._native": {"ucudnn.testing.simulator"},
        "ucudnn.testing.simulator": {"ucudnn.core.array"},
        "ucudnn.core.array": {"ucudnn._native"},
        "ucudnn.core.checks": set(),
    }
    assert _cycle(imports) == [
        "ucudnn._native", "ucudnn.testing.simulator", "ucudnn.core.array", "ucudnn._native"
    ]  # fmt: skip


def test_imports_for_type_checking_alone_are_not_run() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import ucudnn.planner.tables\nelse:\n    import ucudnn.errors\n"
        "def f():\n    import ucudnn.core.checks\n"
    )
    imported = {
        alias.name
        for node in _run_time_nodes(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported == {"ucudnn.errors", "ucudnn.core.checks"}


def test_no_module_is_over_600_lines() -> None:
    """Modules are cut where their jobs part; one that grows past 600 lines has taken on
    another job."""
    root = Path(ucudnn.__file__).parent
    long = {
        str(path.relative_to(root)): count
        for path in sorted(root.rglob("*.py"))
        if (count := len(path.read_text().splitlines())) > 600
    }
    assert long == {}
