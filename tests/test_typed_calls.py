"""Documented calls type-check as users write them, and run: numpy integers wherever an integer
goes (`np.int64(256)` as a batch, a dimension, a stream) and sizes as text ("64MiB") wherever a
size goes. The calls are in tests/typing, checked by mypy --strict and run here."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.mypy_strict import strict_errors

CALLS = Path(__file__).resolve().parent / "typing"
PLANNER_CALLS = CALLS / "planner_calls.py"
DEVICE_CALLS = CALLS / "device_calls.py"


def test_documented_calls_pass_mypy_strict() -> None:
    assert strict_errors([PLANNER_CALLS, DEVICE_CALLS]) == []


def test_documented_planner_calls_run() -> None:
    runpy.run_path(str(PLANNER_CALLS), run_name="__main__")


@pytest.mark.gpu
def test_documented_device_calls_run() -> None:
    runpy.run_path(str(DEVICE_CALLS), run_name="__main__")
