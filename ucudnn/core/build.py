"""What this install of ucudnn is: its distribution, and what it was compiled against.

Read from `ucudnn/_build_info.py`, which CMake writes when the native modules are built;
nothing here loads a library, so it answers even where cuDNN cannot be found.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import ucudnn
from ucudnn.core.facts import cuda_version_string, cudnn_version_string

DEFAULT_CUDA_MAJOR = 13  # what a source tree that was never built would be built for


def _build_info() -> ModuleType | None:
    try:
        return importlib.import_module("ucudnn._build_info")
    except ImportError:
        return None


def distribution() -> str:
    """The pip name of this install: "ucudnn-cu13" or "ucudnn-cu12"."""
    info = _build_info()
    major = DEFAULT_CUDA_MAJOR if info is None else info.CUDA_MAJOR
    return f"ucudnn-cu{major}"


def version_text() -> str:
    """One line: the version, the distribution, and the CUDA and cuDNN headers built with."""
    info = _build_info()
    if info is None:
        return f"ucudnn {ucudnn.__version__} (native modules not built)"
    runtime = cuda_version_string(info.CUDA_RUNTIME_VERSION)
    cudnn = cudnn_version_string(info.CUDNN_VERSION)
    built_for = f"built for CUDA {runtime} and cuDNN {cudnn}"
    return f"ucudnn {ucudnn.__version__} ({distribution()}), {built_for}"
