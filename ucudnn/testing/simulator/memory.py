"""Simulated device memory: numpy bytes behind fake addresses, and the checks hardware skips.

Addresses start far above any host address and are never reused; allocations sit 2 MiB
apart. A pointer one byte past an allocation, into freed memory, or anywhere else therefore
lands in nobody's allocation and is named as such, with where the memory was made and freed.
Bytes are created on first touch and filled with 0xFF, which reads as NaN in every float type,
so a result computed from memory nobody wrote is visibly wrong, and a large allocation that is
never touched costs nothing; nor does a memset of all of it before then, which is only noted.
"""

from __future__ import annotations

import bisect
import dataclasses
import sys
from typing import Any

import numpy as np

from ucudnn.errors import CudaError, UcudnnError

BASE_ADDRESS = 0xD000_0000_0000
GRANULE = 2 << 20  # cudaMalloc hands out memory in 2 MiB pages; mem_get_info counts them
UNWRITTEN = 0xFF  # NaN in float16, bfloat16, float32 and float64 alike

ByteArray = np.ndarray[Any, np.dtype[np.uint8]]


def call_site() -> str:
    """Where the code outside the simulator made this call, for reports ("file:line in f")."""
    frame = sys._getframe(1)
    while frame is not None and "/testing/simulator/" in frame.f_code.co_filename:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "unknown"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


class IllegalAddressError(CudaError):
    """A call reached memory outside every live allocation: on hardware a kernel would fault
    (cudaErrorIllegalAddress, 700) or silently corrupt another allocation. The simulator
    raises it at the call that did it, and stays usable."""

    def __init__(self, call: str, description: str) -> None:
        super().__init__(700, "cudaErrorIllegalAddress", call, description)

    def __reduce__(self) -> tuple[type[IllegalAddressError], tuple[str, str]]:
        return type(self), (self.call, self.description)


@dataclasses.dataclass(eq=False)
class Allocation:
    """One cudaMalloc: its place, its bytes (made on first touch) and its history."""

    address: int
    nbytes: int
    device: int
    made_at: str
    serial: int  # the device's count of things made, for "leaked since"
    freed_at: str | None = None
    _bytes: ByteArray | None = None
    _fill: int = UNWRITTEN  # what every byte holds until `_bytes` is made

    @property
    def end(self) -> int:
        return self.address + self.nbytes

    @property
    def bytes(self) -> ByteArray:
        if self._bytes is None:
            self._bytes = np.full(self.nbytes, self._fill, np.uint8)
        return self._bytes

    @property
    def uniform(self) -> int | None:
        """The byte that every byte holds, while they are not made (None once they are)."""
        return self._fill if self._bytes is None else None

    def fill(self, offset: int, nbytes: int, byte: int) -> None:
        """Set bytes [offset, offset + nbytes) to `byte`: all of them, while none is made,
        without making them (benchmarking fills large buffers nobody reads)."""
        if self._bytes is None and nbytes == self.nbytes:
            self._fill = byte
        else:
            self.bytes[offset : offset + nbytes] = byte

    def describe(self) -> str:
        state = f"freed at {self.freed_at}" if self.freed_at else "live"
        return (
            f"allocation {self.address:#x} of {self.nbytes} bytes made at {self.made_at}, {state}"
        )


@dataclasses.dataclass(frozen=True)
class Span:
    """A checked byte range [offset, offset + nbytes) of one live allocation."""

    allocation: Allocation
    offset: int
    nbytes: int

    @property
    def start(self) -> int:
        return self.allocation.address + self.offset

    @property
    def stop(self) -> int:
        return self.start + self.nbytes

    def overlaps(self, other: Span) -> bool:
        return (
            self.allocation is other.allocation
            and self.start < other.stop
            and other.start < self.stop
        )


class Memory:
    """The allocations of one simulated device and its capacity."""

    def __init__(self, device: int, capacity: int, reserved: int) -> None:
        self.device = device
        self.capacity = capacity
        self.reserved = reserved  # what the context itself takes: never free for users
        self.withheld = 0  # bytes a test took away (fault injection: "shrink free memory")
        self._next = BASE_ADDRESS + device * (1 << 40)  # devices never share addresses
        self._starts: list[int] = []  # addresses of every allocation ever made, in order
        self._allocations: list[Allocation] = []

    @property
    def used(self) -> int:
        return sum(_granules(a.nbytes) for a in self.live())

    @property
    def free_bytes(self) -> int:
        return max(0, self.capacity - self.reserved - self.withheld - self.used)

    def live(self) -> list[Allocation]:
        return [a for a in self._allocations if a.freed_at is None]

    def allocate(self, nbytes: int, serial: int) -> Allocation | None:
        """A new allocation, or None when it does not fit in what is free."""
        if _granules(nbytes) > self.free_bytes:
            return None
        allocation = Allocation(self._next, nbytes, self.device, call_site(), serial)
        self._next += _granules(nbytes) + GRANULE
        self._starts.append(allocation.address)
        self._allocations.append(allocation)
        return allocation

    def release(self, address: int) -> str | None:
        """Free the allocation that starts at `address`; None, or why that cannot be done."""
        found = self.find(address)
        if found is None:
            return f"{address:#x} is in no allocation"
        if found.freed_at is not None:
            return f"{address:#x} was already freed ({found.describe()})"
        if found.address != address:
            return f"{address:#x} is inside {found.describe()}, not its start"
        found.freed_at = call_site()
        found._bytes = None
        return None

    def find(self, address: int) -> Allocation | None:
        """The allocation, live or freed, whose range holds `address`."""
        index = bisect.bisect_right(self._starts, address) - 1
        if index >= 0 and address < self._allocations[index].end:
            return self._allocations[index]
        return None

    def owner(self, address: int) -> Allocation | None:
        """The live allocation holding `address`, if any."""
        found = self.find(address)
        return found if found is not None and found.freed_at is None else None

    def span(self, address: int, nbytes: int, what: str, call: str) -> Span:
        """The live bytes [address, address + nbytes), or IllegalAddressError naming `what`."""
        found = self.find(address)
        if found is None or found.freed_at is not None:
            where = (
                f"is in freed memory ({found.describe()})"
                if found is not None
                else "is in no allocation"
            )
            raise IllegalAddressError(call, f"simulated device: {what} at {address:#x} {where}")
        if address + nbytes > found.end:
            raise IllegalAddressError(
                call,
                f"simulated device: {what} at {address:#x} spans {nbytes} bytes, "
                f"{address + nbytes - found.end} bytes past the end of {found.describe()}",
            )
        return Span(found, address - found.address, nbytes)


def _granules(nbytes: int) -> int:
    return -(-nbytes // GRANULE) * GRANULE


class ConformanceError(UcudnnError):
    """The program broke a rule of CUDA or cuDNN that hardware does not check (operands that
    overlap, say): a real GPU would give a wrong answer without any error."""
