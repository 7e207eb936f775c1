"""A workspace arena: one device allocation carved into aligned sub-buffers by offset.

Workspaces are reused across calls instead of being allocated per call: a WD plan assigns each
kernel an aligned offset into one arena (`at`), WR runs every kernel in the same workspace
(`at(0, n)`), and ad-hoc users take consecutive aligned pieces (`reserve`) until `reset`.
`ArenaLayout` holds the offset arithmetic without any memory so it can be tested on the CPU.
`GrowingArena` holds one arena that is only ever replaced by a larger one (the Handle's
workspace, benchmarking's workspace), since every free waits for the device.
"""

from __future__ import annotations

import math

from ucudnn.core.checks import integer

# Bytes: cudaMalloc's alignment, what cuDNN usually needs of a workspace, and the alignment
# beyond which no kernel gains anything. The one place this number is written.
CUDNN_ALIGNMENT = 256


def align_up(n: int, alignment: int) -> int:
    """The smallest multiple of `alignment` that is >= n."""
    if alignment < 1:
        raise ValueError(f"alignment must be >= 1, got {alignment}")
    return -(-n // alignment) * alignment


class ArenaLayout:
    """Offsets within `capacity` bytes: reservations are aligned and consecutive until reset.

    `in_use` is the end of the last reservation since the last reset; `peak` is the highest end
    ever handed out by `reserve` or checked by `claim`.
    """

    def __init__(self, capacity: int, alignment: int = CUDNN_ALIGNMENT) -> None:
        self.capacity = integer(capacity, "capacity", minimum=0)
        self.alignment = integer(alignment, "alignment", minimum=1)
        self.in_use = 0
        self.peak = 0

    def reserve(self, nbytes: int) -> int:
        """The offset of a new aligned piece of nbytes after the previous ones."""
        nbytes = integer(nbytes, "nbytes", minimum=0)
        offset = align_up(self.in_use, self.alignment)
        if offset + nbytes > self.capacity:
            raise ValueError(
                f"arena cannot fit {nbytes} bytes at offset {offset}: "
                f"capacity {self.capacity}, {self.in_use} in use"
            )
        self.in_use = offset + nbytes
        self.peak = max(self.peak, self.in_use)
        return offset

    def claim(self, offset: int, nbytes: int) -> None:
        """Check a piece a plan placed itself: aligned and inside the arena."""
        offset = integer(offset, "offset", minimum=0)
        nbytes = integer(nbytes, "nbytes", minimum=0)
        if offset % self.alignment:
            raise ValueError(f"offset {offset} is not a multiple of {self.alignment}")
        if offset + nbytes > self.capacity:
            raise ValueError(
                f"{nbytes} bytes at offset {offset} overrun the {self.capacity}-byte arena"
            )
        self.peak = max(self.peak, offset + nbytes)

    def reset(self) -> None:
        """Forget all reservations (peak is kept)."""
        self.in_use = 0


class Arena:
    """`nbytes` of device memory on the current device, handed out by aligned offsets.

    Freed by `release()` (or on leaving a `with` block, or when garbage); a zero-byte arena
    allocates nothing and works without a device.
    """

    def __init__(self, nbytes: int, alignment: int = CUDNN_ALIGNMENT) -> None:
        from ucudnn._native import _cuda

        self._layout = ArenaLayout(nbytes, alignment)
        # cudaMalloc aligns to 256 bytes, so aligning its address moves it up by at most
        # alignment - gcd(alignment, 256) bytes; over-allocate by that much.
        alignment = self._layout.alignment
        extra = alignment - math.gcd(alignment, CUDNN_ALIGNMENT) if nbytes else 0
        self._buffer: _cuda.DeviceBuffer | None = _cuda.DeviceBuffer(self._layout.capacity + extra)
        self._base = align_up(self._buffer.ptr, self._layout.alignment)
        self.device = self._buffer.device

    @property
    def ptr(self) -> int:
        """Address of offset 0."""
        self._check_live()
        return self._base

    @property
    def capacity(self) -> int:
        return self._layout.capacity

    @property
    def alignment(self) -> int:
        return self._layout.alignment

    @property
    def in_use(self) -> int:
        return self._layout.in_use

    @property
    def peak(self) -> int:
        return self._layout.peak

    def stats(self) -> dict[str, int]:
        return {"capacity": self.capacity, "in_use": self.in_use, "peak": self.peak}

    def reserve(self, nbytes: int) -> int:
        """Offset of a new aligned piece of nbytes (see ArenaLayout.reserve)."""
        self._check_live()
        return self._layout.reserve(nbytes)

    def at(self, offset: int, nbytes: int) -> int:
        """Device address of the nbytes at `offset`, checked to be aligned and in bounds."""
        self._check_live()
        self._layout.claim(offset, nbytes)
        return self._base + offset

    def reset(self) -> None:
        self._layout.reset()

    def release(self) -> None:
        """Free the device memory now; later calls to release do nothing."""
        if self._buffer is not None:
            buffer, self._buffer = self._buffer, None
            buffer.release()

    def _check_live(self) -> None:
        if self._buffer is None:
            raise ValueError("the arena was released")

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._buffer is None else f"ptr={self._base:#x}"
        return (
            f"Arena({state}, capacity={self.capacity}, in_use={self.in_use}, "
            f"peak={self.peak}, alignment={self.alignment})"
        )


class GrowingArena:
    """A workspace that holds at most one Arena and replaces it only by a larger one.

    Growing frees the old allocation before making the new one (cudaFree waits for the
    device, so no work still queued can use freed memory), so a failed allocation leaves
    nothing held. Few growths mean few of those waits: size the first request generously.
    """

    def __init__(self, alignment: int = CUDNN_ALIGNMENT) -> None:
        self.alignment = alignment
        self._arena: Arena | None = None

    @property
    def arena(self) -> Arena | None:
        """The arena held now, or None."""
        return self._arena

    @property
    def capacity(self) -> int:
        """Bytes held now."""
        return self._arena.capacity if self._arena is not None else 0

    def ensure(self, nbytes: int) -> Arena:
        """An arena of at least `nbytes`: the one held, or a new one in its place."""
        nbytes = integer(nbytes, "nbytes", minimum=0)
        if self._arena is None or self._arena.capacity < nbytes:
            self.release()
            self._arena = Arena(nbytes, self.alignment)
        return self._arena

    def release(self) -> None:
        """Free what is held now; the next `ensure` allocates again."""
        if self._arena is not None:
            arena, self._arena = self._arena, None
            arena.release()
