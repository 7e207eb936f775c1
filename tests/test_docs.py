"""The README's and the docs pages' commands, names and code work as written: each command line
parses, each script and file it runs exists, each `ucudnn.…` name it mentions resolves, each
link points at a file and section that exist, each Python block passes mypy --strict and runs
as printed (on the simulated device), and the README stays a short front page that links every
page. The pages are README.md and docs/*.md (docs/design/ holds design notes, not examples).
Where PyTorch is not installed (an optional extra), the blocks and names that need it are
skipped, saying so."""

from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mypy_strict import strict_errors
from ucudnn.faces.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
# Each page's text, keyed by its path from the repository root.
PAGES = {
    path.relative_to(ROOT).as_posix(): path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}
README = PAGES["README.md"]
SHELL_LINES = [
    line.split("#")[0].strip()
    for text in PAGES.values()
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    for line in block.splitlines()
    if line.split("#")[0].strip()
]
DOTTED_NAMES = sorted(
    {name for text in PAGES.values() for name in re.findall(r"`(ucudnn(?:\.\w+)+)(?:\(\))?`", text)}
)
PYTHON_IMPORTS = sorted(
    {
        found
        for text in PAGES.values()
        for found in re.findall(r"^from (ucudnn\S*) import (.+)$", text, flags=re.M)
    }
)
# Each ```python block, keyed by "page:line", the line its code starts on.
PYTHON_BLOCKS = {
    f"{page}:{line}": code
    for page, text in PAGES.items()
    for match in re.finditer(r"```python\n(.*?)```", text, flags=re.S)
    for line, code in [(text.count("\n", 0, match.start(1)) + 1, match.group(1))]
}

# ucudnn.torch needs PyTorch, an optional extra that CI's newest-Python pass does not install.
NO_TORCH = "torch is not installed (ucudnn.torch needs the [torch] extra)"
TORCH_MISSING = importlib.util.find_spec("torch") is None


def needs_torch(name_or_code: str) -> bool:
    """Whether a dotted name or an import is under ucudnn.torch, or a block imports torch."""
    return bool(re.match(r"ucudnn\.torch\b", name_or_code)) or bool(
        re.search(r"^(?:import|from) (?:torch|ucudnn\.torch)\b", name_or_code, flags=re.M)
    )


def case(*values: str, torch: bool) -> Any:
    """A test case, skipped with the reason where it needs PyTorch and PyTorch is missing."""
    return pytest.param(*values, marks=pytest.mark.skipif(torch and TORCH_MISSING, reason=NO_TORCH))


# The Python blocks, each skipped where it imports torch and PyTorch is missing.
BLOCK_CASES = [case(where, torch=needs_torch(code)) for where, code in PYTHON_BLOCKS.items()]
CHECKED_BLOCKS = [
    where for where, code in PYTHON_BLOCKS.items() if not (TORCH_MISSING and needs_torch(code))
]


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", text, flags=re.M)
    }


def test_the_pages_have_commands_to_check() -> None:
    assert len(SHELL_LINES) >= 7 and len(DOTTED_NAMES) >= 4 and PYTHON_IMPORTS


def test_the_readme_shows_the_two_commands() -> None:
    """`.ci/main` and `.ci/test` are the README's two commands (`.ci/run` calls the second)."""
    (block,) = re.findall(r"^## Two commands\n.*?```sh\n(.*?)```", README, flags=re.M | re.S)
    assert [line.split("#")[0].strip() for line in block.splitlines() if line[:1] != " "] == [
        "bash .ci/main",
        "bash .ci/test",
    ]


def test_the_readme_is_a_short_front_page_that_links_every_page() -> None:
    assert README.count("\n") < 300
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", README))
    assert linked == {page for page in PAGES if page.startswith("docs/")}


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
        pytest.fail(f"unchecked command in the docs: {line}")


@pytest.mark.parametrize("name", [case(name, torch=needs_torch(name)) for name in DOTTED_NAMES])
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


@pytest.mark.parametrize(
    ("module", "names"), [case(*found, torch=needs_torch(found[0])) for found in PYTHON_IMPORTS]
)
def test_each_python_import_resolves(module: str, names: str) -> None:
    imported = importlib.import_module(module)
    for name in names.split("#")[0].split(","):
        assert hasattr(imported, name.strip()), f"{module}.{name.strip()}"


@pytest.mark.parametrize("page", PAGES)
def test_each_link_points_at_a_file_and_section(page: str) -> None:
    text = PAGES[page]
    for target in re.findall(r"\]\(#([^)]+)\)", text):
        assert target in anchors(text), target
    folder = (ROOT / page).parent
    for target in re.findall(r"\]\((?!https?:|#)([^)]+)\)", text):
        path, _, section = target.partition("#")
        assert (folder / path).exists(), target
        if section:
            assert section in anchors((folder / path).read_text()), target


def test_the_tune_example_runs_and_says_what_it_finds(capsys) -> None:
    """The `tune` example runs on the CPU from MODEL tables, and its comment is true."""
    ((where, block),) = [
        (where, block)
        for where, block in PYTHON_BLOCKS.items()
        if "from ucudnn.planner.tune import tune" in block
    ]
    namespace: dict[str, object] = {}
    exec(compile(block, where, "exec"), namespace)
    result = namespace["result"]
    points = {point.batch: point for point in result.points}  # type: ignore[attr-defined]
    assert result.best.batch == 32  # type: ignore[attr-defined]
    assert points[64].status == "over_memory"
    assert not points[48].measured and points[48].samples_per_s < points[32].samples_per_s
    out = capsys.readouterr().out
    assert out.startswith(f"32 {points[32].samples_per_s:.0f} samples/s\n")
    assert "WD plan: total budget" in out


def _as_script(folder: Path, where: str) -> Path:
    """The block at `where` as a script whose line numbers are its page's (blank lines come
    first), so that mypy's errors and tracebacks point into the page."""
    page, line = where.split(":")
    name = re.sub(r"\W", "_", page)
    script = folder / f"{name}_line_{line}.py"
    script.write_text("\n" * (int(line) - 1) + PYTHON_BLOCKS[where])
    return script


@pytest.fixture(scope="module")
def mypy_errors_by_block(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy --strict's errors in each Python block, from one run over all of them."""
    folder = tmp_path_factory.mktemp("docs")
    scripts = {where: _as_script(folder, where) for where in CHECKED_BLOCKS}
    errors = strict_errors(list(scripts.values()))
    return {
        where: [
            e.replace(str(script), where.split(":")[0])
            for e in errors
            if e.startswith(f"{script}:")
        ]
        for where, script in scripts.items()
    }


def test_the_pages_have_python_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 4


@pytest.mark.parametrize("where", BLOCK_CASES)
def test_each_python_block_passes_mypy_strict(
    where: str, mypy_errors_by_block: dict[str, list[str]]
) -> None:
    assert mypy_errors_by_block[where] == []


@pytest.mark.simulator
@pytest.mark.parametrize("where", BLOCK_CASES)
def test_each_python_block_runs_as_printed(where: str, tmp_path: Path) -> None:
    """In a fresh interpreter, as a reader runs it (a block may configure logging and warnings
    for the whole process), in an empty directory (whatever it writes stays out of the tree)."""
    script = _as_script(tmp_path, where)
    done = subprocess.run(
        [sys.executable, script.name], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0, f"{where}, the block there:\n{done.stderr}"
