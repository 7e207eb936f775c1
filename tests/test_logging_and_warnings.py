"""The library never prints: it logs to the "ucudnn" logger and warns with UcudnnWarning, so
that users can filter both. These tests read the source for what it must never do, and run
the planner, the cache and the library loader for what they log and warn."""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import pytest

import ucudnn
from ucudnn import errors
from ucudnn.errors import CacheWarning, UcudnnWarning
from ucudnn.planner.cache import BenchmarkCache

PACKAGE = Path(ucudnn.__file__).parent


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def warning_classes() -> list[type[Warning]]:
    return [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, Warning) and c.__module__ == errors.__name__
    ]


def test_every_warning_class_is_a_ucudnn_warning_and_a_user_warning() -> None:
    assert ucudnn.UcudnnWarning is UcudnnWarning
    assert len(warning_classes()) > 1
    for category in warning_classes():
        assert issubclass(category, UcudnnWarning) and issubclass(category, UserWarning)


def _category(call: ast.Call) -> ast.expr | None:
    keywords = [k.value for k in call.keywords if k.arg == "category"]
    return call.args[1] if len(call.args) > 1 else (keywords[0] if keywords else None)


def test_every_warning_the_library_issues_has_a_ucudnn_category() -> None:
    found = 0
    for path in modules():
        for call in calls(ast.parse(path.read_text(), str(path))):
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == "warn"):
                continue
            category = _category(call)
            place = f"{path.relative_to(PACKAGE.parent)}:{call.lineno}"
            assert isinstance(category, ast.Name), f"{place}: warns without a category"
            assert issubclass(getattr(errors, category.id, type), UcudnnWarning), place
            found += 1
    assert found >= 6  # the cache's, the Handle's, the solver's and the slow plan's


def test_filtering_ucudnn_warning_silences_the_librarys_warnings(tmp_path: Path) -> None:
    unusable = tmp_path / "a-file" / "cache.sqlite"  # its parent is a file, not a directory
    unusable.parent.write_text("")
    with pytest.warns(CacheWarning, match="cannot be used"):
        BenchmarkCache(unusable).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=UcudnnWarning)
        BenchmarkCache(unusable).close()
