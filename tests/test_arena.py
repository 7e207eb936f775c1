"""ucudnn.core.arena: aligned offset arithmetic (CPU) and the device-backed Arena."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ucudnn.core.arena import Arena, ArenaLayout, GrowingArena, align_up


@pytest.mark.parametrize(
    ("n", "alignment", "expected"),
    [(0, 256, 0), (1, 256, 256), (256, 256, 256), (257, 256, 512), (10, 1, 10), (7, 3, 9)],
)
def test_align_up(n: int, alignment: int, expected: int) -> None:
    assert align_up(n, alignment) == expected


def test_align_up_rejects_zero_alignment() -> None:
    with pytest.raises(ValueError, match="alignment"):
        align_up(5, 0)


def test_reserve_hands_out_aligned_consecutive_pieces() -> None:
    layout = ArenaLayout(2048)
    assert layout.reserve(100) == 0
    assert layout.reserve(300) == 256
    assert (layout.in_use, layout.peak) == (556, 556)
    assert layout.reserve(0) == 768
    layout.reset()
    assert layout.in_use == 0
    assert layout.reserve(10) == 0
    assert layout.peak == 768


def test_reserve_that_does_not_fit_names_the_numbers() -> None:
    layout = ArenaLayout(512)
    layout.reserve(300)
    with pytest.raises(ValueError, match="cannot fit 300 bytes at offset 512: capacity 512"):
        layout.reserve(300)
    assert layout.in_use == 300  # a failed reservation changes nothing


def test_claim_checks_alignment_and_bounds_and_tracks_peak() -> None:
    layout = ArenaLayout(1024)
    layout.claim(512, 512)
    assert layout.peak == 1024
    assert layout.in_use == 0
    with pytest.raises(ValueError, match="not a multiple of 256"):
        layout.claim(100, 4)
    with pytest.raises(ValueError, match="overrun"):
        layout.claim(768, 257)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: ArenaLayout(-1), ValueError),
        (lambda: ArenaLayout(10, alignment=0), ValueError),
        (lambda: ArenaLayout(1.5), TypeError),
        (lambda: ArenaLayout(10).reserve(-1), ValueError),
        (lambda: ArenaLayout(10).claim(0, "8"), TypeError),
        (lambda: ArenaLayout(True), TypeError),  # not a capacity of 1 byte
        (lambda: ArenaLayout(10, alignment=True), TypeError),
        (lambda: ArenaLayout(10).reserve(False), TypeError),
        (lambda: GrowingArena().ensure(True), TypeError),
    ],
)
def test_bad_arguments(call, error: type[Exception]) -> None:
    with pytest.raises(error):
        call()


def test_sizes_of_any_integral_type_are_plain_ints() -> None:
    layout = ArenaLayout(np.uint32(1024), np.int64(256))
    assert (type(layout.capacity), type(layout.alignment)) == (int, int)
    assert layout.reserve(np.int16(10)) == 0 and layout.reserve(np.uint8(1)) == 256
    layout.claim(np.int64(512), np.int64(512))
    assert layout.peak == 1024


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(TypeError, match="capacity must be an integer, got True"):
        ArenaLayout(True)
    with pytest.raises(ValueError, match="alignment must be >= 1, got 0"):
        ArenaLayout(10, alignment=0)
    with pytest.raises(ValueError, match="offset must be >= 0, got -256"):
        ArenaLayout(10).claim(-256, 0)


@given(
    sizes=st.lists(st.integers(0, 5000), max_size=20),
    alignment=st.sampled_from([1, 8, 256, 512]),
)
def test_reservations_never_overlap_and_stay_aligned(sizes: list[int], alignment: int) -> None:
    layout = ArenaLayout(200_000, alignment)
    pieces = [(layout.reserve(n), n) for n in sizes]
    assert all(start % alignment == 0 for start, _ in pieces)
    for (start, n), (next_start, _) in itertools.pairwise(pieces):
        assert start + n <= next_start
    assert layout.in_use == (pieces[-1][0] + pieces[-1][1] if pieces else 0)


def test_zero_byte_arena_needs_no_device() -> None:
    with Arena(0) as arena:
        assert arena.ptr == 0
        assert arena.at(0, 0) == 0
        assert arena.stats() == {"capacity": 0, "in_use": 0, "peak": 0}
    with pytest.raises(ValueError, match="released"):
        arena.at(0, 0)
    arena.release()  # idempotent


@pytest.mark.parametrize("alignment", [1, 8, 96, 256, 384, 1000, 4096])
@pytest.mark.parametrize("address", [256 * k for k in range(1, 16)])
def test_arena_capacity_fits_in_the_allocation_after_aligning(
    monkeypatch: pytest.MonkeyPatch, alignment: int, address: int
) -> None:
    """cudaMalloc guarantees only 256-byte alignment; any other alignment must still fit."""
    from ucudnn._native import _cuda

    class FakeBuffer:
        def __init__(self, nbytes: int) -> None:
            self.ptr, self.nbytes, self.device = address, nbytes, 0

        def release(self) -> None:
            pass

    monkeypatch.setattr(_cuda, "DeviceBuffer", FakeBuffer)
    arena = Arena(1000, alignment)
    assert arena.ptr % alignment == 0
    assert address <= arena.ptr
    assert arena.at(0, 1000) + 1000 <= address + arena._buffer.nbytes


class _RecordingBuffers:
    """Stands in for _cuda.DeviceBuffer: records allocations and frees in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.fail_above: int | None = None

    def __call__(self, nbytes: int):
        from ucudnn.errors import CudaOutOfMemoryError

        events = self.events
        if self.fail_above is not None and nbytes > self.fail_above:
            raise CudaOutOfMemoryError(
                2, "cudaErrorMemoryAllocation", "cudaMalloc", "out of memory"
            )

        class Buffer:
            ptr, device = 4096 * (len(events) + 1), 0

            def __init__(self) -> None:
                self.nbytes = nbytes
                events.append(("malloc", nbytes))

            def release(self) -> None:
                events.append(("free", self.nbytes))

        return Buffer()


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> _RecordingBuffers:
    from ucudnn._native import _cuda

    buffers = _RecordingBuffers()
    monkeypatch.setattr(_cuda, "DeviceBuffer", buffers)
    return buffers


def test_growing_arena_reuses_what_it_holds_and_frees_before_growing(recording) -> None:
    workspace = GrowingArena()
    assert (workspace.arena, workspace.capacity) == (None, 0)
    first = workspace.ensure(1000)
    assert workspace.ensure(500) is first
    assert workspace.ensure(1000) is first
    bigger = workspace.ensure(3000)
    assert bigger is not first and workspace.capacity == 3000
    workspace.release()
    workspace.release()  # idempotent
    assert workspace.arena is None
    assert recording.events == [("malloc", 1000), ("free", 1000), ("malloc", 3000), ("free", 3000)]


def test_growing_arena_holds_nothing_after_a_failed_growth(recording) -> None:
    from ucudnn.errors import CudaOutOfMemoryError

    workspace = GrowingArena()
    workspace.ensure(1000)
    recording.fail_above = 2000
    with pytest.raises(CudaOutOfMemoryError):
        workspace.ensure(3000)
    assert (workspace.arena, workspace.capacity) == (None, 0)
    assert workspace.ensure(1500).capacity == 1500
    assert recording.events == [("malloc", 1000), ("free", 1000), ("malloc", 1500)]


def test_growing_arena_of_zero_bytes_needs_no_device() -> None:
    workspace = GrowingArena()
    assert workspace.ensure(0).at(0, 0) == 0
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        workspace.ensure(-1)


@pytest.mark.gpu
@pytest.mark.parametrize("alignment", [256, 4096])
def test_device_arena_offsets_are_aligned_addresses(alignment: int) -> None:
    from ucudnn._native import _cuda

    pieces = (1, 1000, 3000)
    # Each piece starts at the first aligned offset after the one before; the arena is sized
    # so that the last ends exactly at its capacity.
    starts = list(itertools.accumulate((align_up(n, alignment) for n in pieces[:-1]), initial=0))
    capacity = starts[-1] + pieces[-1]
    with Arena(capacity, alignment) as arena:
        assert arena.ptr % alignment == 0
        offsets = [arena.reserve(n) for n in pieces]
        assert offsets == starts and arena.in_use == capacity
        addresses = [arena.at(offset, n) for offset, n in zip(offsets, pieces, strict=True)]
        assert all(address % alignment == 0 for address in addresses)
        assert addresses[0] == arena.ptr
        # The whole capacity is usable memory, up to its last byte.
        _cuda.memset(arena.at(0, capacity), 7, capacity)
        last = np.zeros(1, np.uint8)
        _cuda.memcpy_dtoh(last, arena.ptr + capacity - 1, 1)
        _cuda.device_synchronize()
        assert last[0] == 7
        assert arena.device == _cuda.get_device()
