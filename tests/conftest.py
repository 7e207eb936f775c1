"""Shared test set-up: the `gpu` marker skips cleanly, with the reason, when no device is usable."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_available() -> tuple[bool, str]:
    """(True, "") when a CUDA device and cuDNN handle can be created, else (False, why)."""
    try:
        from ucudnn import _cuda, _cudnn
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    del config
    if not any("gpu" in item.keywords for item in items):
        return
    ok, reason = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
