"""Public functions say what they raise: each of the callables below has a "Raises:" section
in its docstring, and each exception it names is a class that exists, so that a renamed or
misspelt exception shows here."""

from __future__ import annotations

import builtins
import importlib
import inspect
import re

import pytest

import ucudnn.core.padding
import ucudnn.errors
import ucudnn.planner.errors

HANDLE_METHODS = (
    "forward", "backward_data", "backward_filter", "backward_bias", "run_algorithm", "schedule",
    "workspace_size", "register", "finalize", "replan", "use_plan",
)  # fmt: skip
# The public API whose docstrings must say what it raises: "module:qualified.name".
DOCUMENTED = [
    "ucudnn:conv_forward",
    "ucudnn:conv_backward_data",
    "ucudnn:conv_backward_filter",
    "ucudnn:conv_backward_bias",
    "ucudnn:Handle",
    *(f"ucudnn:Handle.{method}" for method in HANDLE_METHODS),
    "ucudnn:ConvProblem",
    "ucudnn:ConvProblem.create",
    "ucudnn:ConvProblem.from_shapes",
    "ucudnn.planner:make_plan_wr",
    "ucudnn.planner:make_plan_wd",
    "ucudnn.planner:plan_wr",
    "ucudnn.planner:baseline",
    "ucudnn.planner:builtin_network",
    "ucudnn.planner:TimingTables.read_csv",
    "ucudnn.planner:TimingTables.from_json",
    "ucudnn.planner.networks:load_network",
    "ucudnn.planner.synthetic:model_table",
    "ucudnn.planner.synthetic:model_tables",
    "ucudnn.planner.layerlist:read_layer_list",
]

_EXCEPTION_MODULES = (builtins, ucudnn.errors, ucudnn.planner.errors, ucudnn.core.padding)
_HEADER = re.compile(r"^( *)Raises(?: \([^)]*\))?:\n", flags=re.M)


def _resolve(name: str) -> object:
    module, _, qualified = name.partition(":")
    value: object = importlib.import_module(module)
    for part in qualified.split("."):
        value = getattr(value, part)
    return value


def raised_names(doc: str) -> list[str]:
    """The exception names a docstring's Raises section lists (each entry is "Name: why" or
    "Name, Name: why", indented one step more than the header)."""
    header = _HEADER.search(doc)
    if header is None:
        return []
    entry = re.compile(rf"^{header.group(1)} {{4}}([A-Za-z, ]+):")
    names = []
    for line in doc[header.end() :].splitlines():
        if not line.strip():
            break
        match = entry.match(line)
        if match:
            names += [name.strip() for name in match.group(1).split(",")]
    return names


def _is_exception(name: str) -> bool:
    return any(
        isinstance(found := getattr(module, name, None), type) and issubclass(found, Exception)
        for module in _EXCEPTION_MODULES
    )


@pytest.mark.parametrize("name", DOCUMENTED)
def test_each_public_callable_says_what_it_raises(name: str) -> None:
    doc = inspect.getdoc(_resolve(name)) or ""
    names = raised_names(doc)
    assert names, f"{name} has no Raises section"
    assert all(_is_exception(n) for n in names), f"{name} names an unknown exception: {names}"


def test_raised_names_reads_entries_only() -> None:
    doc = "Summary.\n\nRaises:\n    ValueError: bad; TypeError is\n        not an entry.\n"
    listed = raised_names(doc + "    KeyError, OSError: missing.\n")
    assert listed == ["ValueError", "KeyError", "OSError"]
    assert raised_names("Summary.\n") == []
