"""The simulated cuDNN handle, which both the legacy calls and the backend API take."""

from __future__ import annotations

from ucudnn.testing.simulator.convert import cudnn_error, to_address
from ucudnn.testing.simulator.descriptors import BAD_PARAM
from ucudnn.testing.simulator.device import DEVICE, Destroyable

_NOT_INITIALIZED = 1001


class Handle(Destroyable):
    """A simulated cuDNN handle, bound to the current device."""

    _KIND, _NAME = "cudnn handle", "cuDNN handle"

    def __init__(self) -> None:
        if not DEVICE.memories:
            raise cudnn_error(_NOT_INITIALIZED, "cudnnCreate", "there is no device")
        self._stream = 0
        super().__init__()

    @property
    def ptr(self) -> int:
        return self._alive()

    @property
    def stream(self) -> int:
        self._alive()
        return self._stream

    def set_stream(self, stream: int) -> None:
        self._alive()
        handle = to_address(stream, "stream")
        if DEVICE.stream(handle) is None:
            raise cudnn_error(BAD_PARAM, "cudnnSetStream", f"{handle:#x} is not a live stream")
        self._stream = handle


def live(handle: Handle) -> int:
    """The stream of a live handle, refused as the binding's typed argument refuses others."""
    if not isinstance(handle, Handle):
        got = "None" if handle is None else type(handle).__name__
        raise TypeError(f"Argument 'handle' has incorrect type (expected Handle, got {got})")
    return handle.stream
