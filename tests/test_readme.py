"""The README's commands, names and code work as written: each command line parses, each
script and file it runs exists, each `ucudnn.…` name it mentions resolves, each link inside it
points at a section that exists, and each Python block passes mypy --strict and runs as printed
(on the simulated device)."""

from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mypy_strict import strict_errors
from ucudnn.faces.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SHELL_LINES = [
    line.split("#")[0].strip()
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    for line in block.splitlines()
    if line.split("#")[0].strip()
]
DOTTED_NAMES = sorted(set(re.findall(r"`(ucudnn(?:\.\w+)+)(?:\(\))?`", README)))
PYTHON_IMPORTS = re.findall(r"^from (ucudnn\S*) import (.+)$", README, flags=re.M)
# Each ```python block, keyed by the README line its code starts on.
PYTHON_BLOCKS = {
    README.count("\n", 0, match.start(1)) + 1: match.group(1)
    for match in re.finditer(r"```python\n(.*?)```", README, flags=re.S)
}


def test_the_readme_has_commands_to_check() -> None:
    assert len(SHELL_LINES) >= 7 and len(DOTTED_NAMES) >= 4 and PYTHON_IMPORTS


@pytest.mark.parametrize("line", [line for line in SHELL_LINES if line.startswith("ucudnn ")])
def test_each_ucudnn_command_parses(line: str) -> None:
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert callable(args.func)


@pytest.mark.parametrize("line", [line for line in SHELL_LINES if not line.startswith("ucudnn ")])
def test_each_other_command_runs_something_that_exists(line: str) -> None:
    words = shlex.split(line)
    while re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VARIABLE=value before the command
        words = words[1:]
    program, *rest = words
    if program == "ucudnn":
        assert callable(build_parser().parse_args(rest).func), line
    elif Path(program).name == "python" and rest[0] == "-m":
        assert importlib.util.find_spec(rest[1]) is not None, line
    elif program in ("bash", "python"):
        assert (ROOT / rest[0]).is_file(), line
    elif program == "pip":
        assert rest[0] == "install", line
        # A wheel built into dist/ or this source tree; nothing else is promised.
        assert rest[1].startswith("dist/ucudnn_cu13-"), line
    else:
        pytest.fail(f"unchecked command in the README: {line}")


@pytest.mark.parametrize("name", DOTTED_NAMES)
def test_each_dotted_name_resolves(name: str) -> None:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute)
        return
    pytest.fail(f"{name} does not import")


@pytest.mark.parametrize(("module", "names"), PYTHON_IMPORTS)
def test_each_python_import_resolves(module: str, names: str) -> None:
    imported = importlib.import_module(module)
    for name in names.split("#")[0].split(","):
        assert hasattr(imported, name.strip()), f"{module}.{name.strip()}"


def test_each_link_inside_the_readme_points_at_a_section() -> None:
    anchors = {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", README, flags=re.M)
    }
    for target in re.findall(r"\]\(#([^)]+)\)", README):
        assert target in anchors, target
    for target in re.findall(r"\]\((?!https?:|#)([^)]+)\)", README):
        assert (ROOT / target).exists(), target


def test_the_tune_example_runs_and_says_what_it_finds(capsys) -> None:
    """The `tune` example runs on the CPU from MODEL tables, and its comment is true."""
    (block,) = [
        block for block in PYTHON_BLOCKS.values() if "from ucudnn.planner.tune import tune" in block
    ]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    points = {point.batch: point for point in result.points}  # type: ignore[attr-defined]
    assert result.best.batch == 32  # type: ignore[attr-defined]
    assert points[64].status == "over_memory"
    assert not points[48].measured and points[48].samples_per_s < points[32].samples_per_s
    out = capsys.readouterr().out
    assert out.startswith(f"32 {points[32].samples_per_s:.0f} samples/s\n")
    assert "WD plan: total budget" in out


def _as_script(folder: Path, line: int) -> Path:
    """The block at `line` as a script whose line numbers are the README's (blank lines come
    first), so that mypy's errors and tracebacks point into the README."""
    script = folder / f"readme_line_{line}.py"
    script.write_text("\n" * (line - 1) + PYTHON_BLOCKS[line])
    return script


@pytest.fixture(scope="module")
def mypy_errors_by_block(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[str]]:
    """mypy --strict's errors in each Python block, from one run over all of them."""
    folder = tmp_path_factory.mktemp("readme")
    scripts = {line: _as_script(folder, line) for line in PYTHON_BLOCKS}
    errors = strict_errors(list(scripts.values()))
    return {
        line: [e.replace(str(script), "README.md") for e in errors if e.startswith(f"{script}:")]
        for line, script in scripts.items()
    }


def test_the_readme_has_python_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 4


@pytest.mark.parametrize("line", PYTHON_BLOCKS)
def test_each_python_block_passes_mypy_strict(
    line: int, mypy_errors_by_block: dict[int, list[str]]
) -> None:
    assert mypy_errors_by_block[line] == []


@pytest.mark.simulator
@pytest.mark.parametrize("line", PYTHON_BLOCKS)
def test_each_python_block_runs_as_printed(line: int, tmp_path: Path) -> None:
    """In a fresh interpreter, as a reader runs it (a block may configure logging and warnings
    for the whole process), in an empty directory (whatever it writes stays out of the tree)."""
    script = _as_script(tmp_path, line)
    done = subprocess.run(
        [sys.executable, script.name], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0, f"README.md, the block at line {line}:\n{done.stderr}"
