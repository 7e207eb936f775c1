"""Shared test set-up: the device the gpu-marked tests run on, and what keeps tests apart.

- `gpu` tests skip cleanly, with the reason, when no device is usable. On the GPU machine the
  session script sets UCUDNN_REQUIRE_GPU=1: there a missing device or native module fails
  every gpu test instead of skipping it, so a broken set-up cannot pass for a green run.
- `--device=sim` (or UCUDNN_DEVICE=sim) runs them on the simulated device
  (`ucudnn.testing.simulator`); subprocesses inherit the setting. Tests marked `hardware`
  mean something only on a real GPU and skip there; tests marked `simulator` need the
  simulator's control API and skip elsewhere.
- Every run caches benchmarks in a temporary directory, never in the user's cache; the numpy
  functions' shared Handles are closed after each test module, so one module's failure
  cannot leak into the next; on the simulator, injected faults end with their test.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from ucudnn.core.checks import parse_bool


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--device",
        choices=("gpu", "sim"),
        default=None,
        help="run the gpu tests on the real device (gpu) or the simulated one (sim); "
        "default: UCUDNN_DEVICE, else gpu",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Before anything imports ucudnn._native: the switch is read once, at that import.
    device = config.getoption("--device")
    if device is not None:
        os.environ["UCUDNN_DEVICE"] = device
    cache = tempfile.mkdtemp(prefix="ucudnn-test-cache-")
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    os.environ["XDG_CACHE_HOME"] = cache
    os.environ.pop("UCUDNN_DATABASE", None)


def simulated() -> bool:
    return os.environ.get("UCUDNN_DEVICE", "").strip().lower() == "sim"


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
    for item in items:
        if simulated() and "hardware" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=_reason(item, "hardware")))
        if not simulated() and "simulator" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs the simulated device (--device=sim)"))
    if gpu_required() or not any("gpu" in item.keywords for item in items):
        return
    ok, reason = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _reason(item: pytest.Item, name: str) -> str:
    """The marker's own reason (its first argument), which says why only hardware can run it."""
    marker = item.get_closest_marker(name)
    why = marker.args[0] if marker is not None and marker.args else "needs a real GPU"
    return f"only hardware can run this: {why}"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "gpu" not in item.keywords or not gpu_required():
        return
    ok, reason = gpu_available()
    if not ok:
        pytest.fail(f"UCUDNN_REQUIRE_GPU is set, but {reason}", pytrace=False)


@pytest.fixture(autouse=True, scope="module")
def _fresh_numpy_handles() -> Iterator[None]:
    """The numpy functions keep Handles between calls; each module starts without them."""
    yield
    import sys

    numpy_api = sys.modules.get("ucudnn.faces.numpy_api")
    if numpy_api is not None:
        numpy_api.release_handles()


@pytest.fixture(autouse=True)
def _simulator_faults_end_with_their_test() -> Iterator[None]:
    yield
    if simulated():
        from ucudnn.testing import simulator

        if simulator.installed():
            simulator.reset()
