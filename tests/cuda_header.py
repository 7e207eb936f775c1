"""The CUDA runtime's error names as its header declares them: the cudaError enum of
driver_types.h, found where the build finds the runtime's headers (the NVIDIA pip package of
the CUDA major this build is for, else a toolkit under CUDA_HOME or CUDA_PATH).
cudaGetErrorName answers with these identifiers, so tests hold names to them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ucudnn import _build_info
from ucudnn.core.libraries import library_specs, package_dirs

_ENUM = re.compile(r"enum\s+__device_builtin__\s+cudaError\s*\{(.*?)\};", re.S)
_MEMBER = re.compile(r"^\s*(cuda\w+)\s*=\s*(\d+)\s*,?\s*$", re.M)


def _header() -> Path | None:
    runtime = library_specs(_build_info.CUDA_MAJOR)[1]
    roots = [*package_dirs(runtime.package), *filter(None, map(os.environ.get, runtime.roots))]
    headers = (Path(root, "include", "driver_types.h") for root in roots)
    return next((header for header in headers if header.is_file()), None)


def cuda_error_names() -> dict[int, str]:
    """The cudaError enum's names by code; skips the calling test where no header is found."""
    header = _header()
    if header is None:
        pytest.skip("no CUDA runtime header (driver_types.h) declares the cudaError enum here")
    enum = _ENUM.search(header.read_text())
    assert enum, f"{header} declares no cudaError enum"
    return {int(code): name for name, code in _MEMBER.findall(enum.group(1))}
