"""ucudnn.core.device: versions, devices and info(), with and without a GPU or native module."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ucudnn.core import device
from ucudnn.core.facts import DeviceFacts, cuda_version_string, cudnn_version_string
from ucudnn.errors import NoDeviceError


def _has_device() -> bool:
    from ucudnn._native import _cuda

    try:
        return _cuda.device_count() > 0
    except NoDeviceError:
        return False


def test_version_strings() -> None:
    assert cuda_version_string(13050) == "13.5"
    assert cuda_version_string(12040) == "12.4"
    assert cudnn_version_string(92800) == "9.28.0"
    assert cudnn_version_string(90103) == "9.1.3"


def test_a_measurement_names_its_device_and_cudnn_in_one_form() -> None:
    """Versions print one way, "cuDNN 9.19.0", never as cuDNN's number (91900)."""
    facts = DeviceFacts("NVIDIA H200", "9.0", 91900, 13000)
    assert facts.describe() == "NVIDIA H200 (cuDNN 9.19.0)"


def test_versions_are_consistent() -> None:
    numbers = device.versions()
    assert numbers["cudnn"] // 10000 == 9
    assert numbers["cudnn_build"] // 10000 == numbers["cudnn"] // 10000
    assert numbers["cudnn"] >= numbers["cudnn_build"]  # never older than the headers
    assert numbers["cuda_runtime"] >= 12000
    # cuDNN must be the build for the CUDA major we link.
    assert numbers["cudnn_cudart"] // 1000 == numbers["cuda_runtime"] // 1000
    assert numbers["cuda_driver"] >= 0


def test_info_reports_versions_and_devices_or_why_not() -> None:
    report = device.info()
    assert report["native"] is True
    assert re.fullmatch(r"9\.\d+\.\d+", report["cudnn"])
    assert re.fullmatch(r"1\d\.\d+", report["cuda_runtime"])
    if _has_device():
        assert report["reason"] is None
        assert report["devices"] and report["devices"][0]["index"] == 0
    else:
        assert report["devices"] == []
        assert isinstance(report["reason"], str)
        assert "(cudaError" in report["reason"]


@pytest.mark.skipif(_has_device(), reason="this machine has a CUDA device")
def test_without_a_device_lists_nothing_and_facts_raise() -> None:
    assert device.devices() == []
    with pytest.raises(NoDeviceError, match=r"NVIDIA driver|CUDA device"):
        device.device_facts()


def test_info_reports_a_native_module_that_does_not_import(monkeypatch) -> None:
    import ucudnn._native

    monkeypatch.delattr(ucudnn._native, "_cuda", raising=False)
    monkeypatch.setitem(sys.modules, "ucudnn._native._cuda", None)  # makes the import fail
    report = device.info()
    assert set(report) == {"native", "devices", "reason"}
    assert report["native"] is False
    assert report["devices"] == []
    assert report["reason"].startswith("native modules did not import:")
    assert "ucudnn._native._cuda" in report["reason"]


def test_info_names_the_library_files_it_loaded() -> None:
    report = device.info()
    if not report["native"]:
        pytest.skip(f"native modules not loaded: {report['reason']}")
    if report["simulated"]:
        pytest.skip("the simulated device loads no library file")
    from ucudnn import _build_info

    libraries = {lib["soname"]: lib for lib in report["libraries"]}
    assert set(libraries) == {"libcudnn.so.9", f"libcudart.so.{_build_info.CUDA_MAJOR}"}
    for library in libraries.values():
        assert os.path.isfile(library["path"]), library
        assert library["found_by"]
    if libraries["libcudnn.so.9"]["found_by"] == "the nvidia.cudnn package":
        assert libraries["libcudnn.so.9"]["distribution"] == "nvidia-cudnn-cu13"


CODES = {"cudaErrorInsufficientDriver": 35, "cudaErrorNoDevice": 100}
TEXTS = {
    "cudaErrorInsufficientDriver": "CUDA driver version is insufficient for CUDA runtime version",
    "cudaErrorNoDevice": "no CUDA-capable device is detected",
}


SIMULATED_NO_DEVICE = """
import ucudnn
from ucudnn._native import _cuda
print(ucudnn.info()["reason"])
try:
    _cuda.device_count()
except ucudnn.errors.NoDeviceError as exc:
    print(exc)
"""


@pytest.mark.parametrize(
    ("settings", "reason", "name"),
    [
        (
            {"UCUDNN_SIM_DRIVER_VERSION": "0"},
            "no NVIDIA driver is installed or loaded (libcuda.so.1 could not be loaded)",
            "cudaErrorInsufficientDriver",
        ),
        (
            {"UCUDNN_SIM_DRIVER_VERSION": "12020"},
            "the NVIDIA driver supports CUDA 12.2, older than the CUDA 13.0 runtime ucudnn uses: "
            "install an NVIDIA driver for CUDA 13 or newer, or ucudnn built for CUDA 12 "
            "(pip install ucudnn-cu12)",
            "cudaErrorInsufficientDriver",
        ),
        (
            {"UCUDNN_SIM_DEVICES": "0"},
            "the NVIDIA driver sees no CUDA device on this machine",
            "cudaErrorNoDevice",
        ),
        (
            {"UCUDNN_SIM_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "-1"},
            "no CUDA device is visible: CUDA_VISIBLE_DEVICES='-1' selects none",
            "cudaErrorNoDevice",
        ),
    ],
    ids=["no driver", "driver too old", "no device", "none visible"],
)
def test_info_and_the_error_say_why_no_device_is_usable(
    settings: dict[str, str], reason: str, name: str
) -> None:
    """Each case on the simulated device, in a process of its own: info() and the error."""
    env = {**os.environ, "UCUDNN_DEVICE": "sim", **settings}
    if "CUDA_VISIBLE_DEVICES" not in settings:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    done = subprocess.run(
        [sys.executable, "-c", SIMULATED_NO_DEVICE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    info_reason, error = done.stdout.splitlines()
    assert info_reason.startswith(reason) and info_reason.endswith(f" ({name})")
    assert error.startswith(reason)
    assert error.endswith(f" (cudaGetDeviceCount failed: {name} ({CODES[name]}): {TEXTS[name]})")


@pytest.mark.gpu
def test_devices_and_facts_on_a_gpu() -> None:
    from ucudnn._native import _cuda, _cudnn

    found = device.devices()
    assert [d.index for d in found] == list(range(_cuda.device_count()))
    first = found[0]
    assert re.fullmatch(r"\d+\.\d+", first.compute_capability)
    assert first.total_memory > 2**30
    assert first.multiprocessor_count > 0
    assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", first.uuid)
    assert re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", first.pci_bus_id)
    facts = device.device_facts(0)
    assert facts.device_name == first.name
    assert facts.compute_capability == first.compute_capability
    assert facts.cudnn_version == _cudnn.version()
    assert facts.cuda_version == _cuda.runtime_version()
    assert device.device_facts() == device.device_facts(_cuda.get_device())


def test_info_text_says_who_installed_each_library(monkeypatch) -> None:
    from ucudnn.faces.info import info_text
    from ucudnn.runtime.engines_setting import EnginesSetting

    report = {
        "native": True,
        "simulated": False,
        "libraries": [
            {"soname": "libcudnn.so.9", "path": "/site/nvidia/cudnn/lib/libcudnn.so.9",
             "found_by": "the nvidia.cudnn package", "distribution": "nvidia-cudnn-cu12"},
            {"soname": "libcudart.so.13", "path": "/usr/lib/libcudart.so.13",
             "found_by": "system loader", "distribution": None},
        ],
        "cudnn": "9.1.0", "cudnn_build": "9.1.0", "cuda_runtime": "13.0", "cuda_driver": "13.0",
        "devices": [], "reason": "the NVIDIA driver sees no CUDA device on this machine",
    }  # fmt: skip
    monkeypatch.setattr(device, "info", lambda: report)
    engines = EnginesSetting(False, "default", "cuDNN 9.1.0 is older than 9.2.0")
    lines = info_text(engines).splitlines()
    assert lines[2:4] == [
        "libcudnn.so.9: /site/nvidia/cudnn/lib/libcudnn.so.9 (found by the nvidia.cudnn package; "
        "pip package nvidia-cudnn-cu12)",
        "libcudart.so.13: /usr/lib/libcudart.so.13 (found by system loader; system library, "
        "not a pip package)",
    ]
    assert lines[-1] == "graph-API engines: off (by default: cuDNN 9.1.0 is older than 9.2.0)"
