"""The CUDA runtime calls a framework needs beside the convolutions: devices, device memory,
copies, streams and events.

A deliberate subset of `ucudnn._native._cuda`, the thin binding of the CUDA runtime, reached
through `ucudnn._native`: with UCUDNN_DEVICE=sim these are the simulated device's. Importing
this module loads cuDNN and the CUDA runtime, which needs no GPU. Device addresses and streams
are Python ints (stream 0 is the default stream). Each function's docstring says what it
raises: NoDeviceError (its message says which: no driver, a driver too old for the runtime, or
no device visible), another CudaError when a call fails, and ValueError or TypeError for an
argument refused before any device work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ucudnn._native._cuda import (
    DeviceBuffer as DeviceBuffer,
    Event as Event,
    Stream as Stream,
    device_count as device_count,
    device_properties as device_properties,
    device_synchronize as device_synchronize,
    driver_version as driver_version,
    get_device as get_device,
    mem_get_info as mem_get_info,
    memcpy_dtod as memcpy_dtod,
    memcpy_dtoh as memcpy_dtoh,
    memcpy_htod as memcpy_htod,
    memset as memset,
    runtime_version as runtime_version,
    set_device as set_device,
    stream_synchronize as stream_synchronize,
)

if TYPE_CHECKING:  # a type only: what device_properties returns
    from ucudnn._native._cuda import DeviceProperties as DeviceProperties

__all__ = [
    "DeviceBuffer",
    "Event",
    "Stream",
    "device_count",
    "device_properties",
    "device_synchronize",
    "driver_version",
    "get_device",
    "mem_get_info",
    "memcpy_dtod",
    "memcpy_dtoh",
    "memcpy_htod",
    "memset",
    "runtime_version",
    "set_device",
    "stream_synchronize",
]
