"""ucudnn.cuda and ucudnn.cudnn: the public face of the native modules, what each name raises,
and that the device switch (UCUDNN_DEVICE) stands behind them."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from types import ModuleType

import pytest

import ucudnn.cuda
import ucudnn.cudnn
from ucudnn import _native
from ucudnn._native import _cuda, _cudnn

PUBLIC = [(ucudnn.cuda, _cuda), (ucudnn.cudnn, _cudnn)]


@pytest.mark.parametrize(("public", "native"), PUBLIC, ids=["cuda", "cudnn"])
def test_each_public_name_is_the_native_modules_own(public: ModuleType, native: ModuleType) -> None:
    """The same objects, so the simulated device, when chosen, stands behind them too."""
    for name in public.__all__:
        assert getattr(public, name) is getattr(native, name), name


@pytest.mark.skipif(_native.SIMULATED, reason="the simulated device documents its own names")
@pytest.mark.parametrize(("public", "native"), PUBLIC, ids=["cuda", "cudnn"])
def test_each_public_call_says_what_it_raises(public: ModuleType, native: ModuleType) -> None:
    undocumented = [
        name
        for name in public.__all__
        if callable(value := getattr(public, name))
        and not any(words in (inspect.getdoc(value) or "") for words in ("Raises:", "raises"))
    ]
    assert undocumented == []


def test_the_legacy_algorithm_names_are_public() -> None:
    assert set(ucudnn.cudnn.ALGORITHMS) == {"forward", "backward_data", "backward_filter"}
    assert ucudnn.cudnn.ALGORITHMS["forward"][0] == "implicit_gemm"


def test_descriptors_need_no_device() -> None:
    desc = ucudnn.cudnn.TensorDescriptor("float32", (2, 3, 4, 4), (48, 16, 4, 1))
    assert (desc.dtype, desc.dims, desc.strides) == ("float32", (2, 3, 4, 4), (48, 16, 4, 1))
    pooling = ucudnn.cudnn.PoolingDescriptor("max", (2, 2), (0, 0), (2, 2))
    assert pooling.output_dims(desc) == (2, 3, 2, 2)


def test_the_simulated_device_stands_behind_the_public_modules() -> None:
    code = (
        "import ucudnn.cuda, ucudnn.cudnn\n"
        "print(ucudnn.cuda.device_count.__module__, ucudnn.cudnn.Handle.__module__)\n"
    )
    env = {**os.environ, "UCUDNN_DEVICE": "sim"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [
        "ucudnn.testing.simulator.cuda",
        "ucudnn.testing.simulator.cudnn",
    ]
