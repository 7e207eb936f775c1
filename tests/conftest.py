"""Shared test set-up: the `gpu` marker skips cleanly, with the reason, when no device is usable.

On the GPU machine the session script sets UCUDNN_REQUIRE_GPU=1: there a missing device or
native module fails every gpu test instead of skipping it, so a broken set-up cannot pass for
a green run.
"""

from __future__ import annotations

import functools
import os

import pytest

from ucudnn.core.checks import parse_bool


@functools.cache
def gpu_available() -> tuple[bool, str]:
    """(True, "") when a CUDA device and cuDNN handle can be created, else (False, why)."""
    try:
        from ucudnn._native import _cuda, _cudnn
    except ImportError as exc:
        return False, f"native modules did not import: {exc}"
    from ucudnn.errors import UcudnnError

    try:
        if _cuda.device_count() < 1:
            return False, "no CUDA device found"
        _cudnn.Handle()
    except UcudnnError as exc:
        return False, f"no usable GPU: {exc}"
    return True, ""


def gpu_required() -> bool:
    """UCUDNN_REQUIRE_GPU as a yes/no value (unset or empty: no)."""
    text = os.environ.get("UCUDNN_REQUIRE_GPU", "").strip()
    return parse_bool(text, "UCUDNN_REQUIRE_GPU") if text else False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    del config
    if gpu_required() or not any("gpu" in item.keywords for item in items):
        return
    ok, reason = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "gpu" not in item.keywords or not gpu_required():
        return
    ok, reason = gpu_available()
    if not ok:
        pytest.fail(f"UCUDNN_REQUIRE_GPU is set, but {reason}", pytrace=False)
