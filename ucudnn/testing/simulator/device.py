"""The simulated device: its configuration, memory, streams, events, deferred work and logs.

One `SimDevice` (`DEVICE`) stands behind both simulated libraries. It is configured from the
environment when first imported:

- UCUDNN_SIM_CAPS: what the simulated cuDNN can run: "log" (default: the H100 tables and the
  facts of the first H100 run's log), "optimistic" (tables only; unmeasured layouts behave
  like NCHW) or "fuzz:<seed>" (what was never measured is randomised);
- UCUDNN_SIM_MEMORY_GIB: the capacity of each device (default: the H100's 81,559 MiB);
- UCUDNN_SIM_DEVICES: how many devices (default 1; 0 behaves as a machine with a driver and
  no GPU);
- UCUDNN_SIM_DRIVER_VERSION: the CUDA version the driver supports, as cudaDriverGetVersion
  reports it (default: the simulated runtime's, 13000; 0 behaves as a machine without a
  driver, and one for an older CUDA, e.g. 12020, as a driver too old: no device either way).

Work runs in program order when it is enqueued, which is one of the orders the real device
could have chosen. Each stream keeps a clock of modelled milliseconds, so events time work
deterministically. A convolution is computed only when something reads its output
(`defer`): benchmarking runs every algorithm many times on buffers nobody reads. Its inputs are
read when it is computed, and copied before then only if something is about to overwrite or
free them.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from ucudnn.core.checks import parse_float, parse_int
from ucudnn.testing.simulator.capabilities import Capabilities, load
from ucudnn.testing.simulator.faults import Faults
from ucudnn.testing.simulator.memory import Allocation, Memory, Span, call_site

H100_MEMORY = 81_559 << 20  # nvidia-smi's memory.total on the H100 the tables come from
# What UCUDNN_SIM_MEMORY_GIB and UCUDNN_SIM_DEVICES may ask for: beyond any real machine.
MAX_MEMORY_GIB = 1 << 20
MAX_DEVICES = 64
RUNTIME_VERSION = 13000  # the simulated CUDA runtime: the CUDA the H100 tables were measured with
MAX_DRIVER_VERSION = 99_990  # CUDA 99.99
CONTEXT_RESERVE = 512 << 20  # what a CUDA context keeps for itself, never free for users
# The streams every CUDA program has: the legacy default, cudaStreamLegacy, cudaStreamPerThread.
BUILTIN_STREAMS = (0, 1, 2)
_HANDLE_BASE = 0x5100_0000  # streams, events, cuDNN handles and descriptors get ints from here


@dataclasses.dataclass(frozen=True)
class SimConfig:
    caps: str = "log"
    memory: int = H100_MEMORY
    devices: int = 1
    driver_version: int = RUNTIME_VERSION

    @classmethod
    def from_environment(cls) -> SimConfig:
        memory = os.environ.get("UCUDNN_SIM_MEMORY_GIB", "").strip()
        devices = os.environ.get("UCUDNN_SIM_DEVICES", "").strip()
        driver = os.environ.get("UCUDNN_SIM_DRIVER_VERSION", "").strip()
        gib = parse_float(memory, "UCUDNN_SIM_MEMORY_GIB", 0, MAX_MEMORY_GIB) if memory else None
        return cls(
            caps=os.environ.get("UCUDNN_SIM_CAPS", "").strip() or "log",
            memory=H100_MEMORY if gib is None else int(gib * (1 << 30)),
            devices=parse_int(devices, "UCUDNN_SIM_DEVICES", 0, MAX_DEVICES) if devices else 1,
            driver_version=(
                parse_int(driver, "UCUDNN_SIM_DRIVER_VERSION", 0, MAX_DRIVER_VERSION)
                if driver
                else RUNTIME_VERSION
            ),
        )


@dataclasses.dataclass
class StreamState:
    blocking: bool
    clock_ms: float = 0.0


@dataclasses.dataclass
class EventState:
    timing: bool
    recorded_ms: float | None = None  # the stream clock at the last record


@dataclasses.dataclass(frozen=True)
class CallRecord:
    """One cuDNN call that ran work: what tests can assert on (which algorithm, which math).
    A backend plan's execution gives its engine index as `algo` and its tag as `engine`."""

    call: str
    kernel: str | None = None
    algo: int | None = None
    math_type: str | None = None
    deterministic: bool | None = None
    micro_batch: int | None = None
    stream: int = 0
    engine: str | None = None


@dataclasses.dataclass(frozen=True)
class Leak:
    """Something a test made and did not give back."""

    kind: str  # "allocation", "stream", "event", "cudnn handle", "descriptor"
    description: str
    made_at: str

    def __str__(self) -> str:
        return f"{self.kind} {self.description}, made at {self.made_at}"


Values = np.ndarray[Any, np.dtype[Any]]


class Input(Protocol):
    """What deferred work reads: a span of memory, and a view of its values (no copy)."""

    @property
    def span(self) -> Span: ...

    def view(self) -> Values: ...


@dataclasses.dataclass
class _Pending:
    """A deferred write of `span` by `compute`, from views of `inputs`. `held`: views or
    copies of some inputs (by index), taken when their memory was about to go or change.
    `later`: byte ranges of the span (allocation offsets, [start, stop), disjoint) that writes
    enqueued since have replaced, which computing must leave as they are. `first`: the deferred
    writes within its span whose results it reads (it accumulates), to run before it, in order."""

    span: Span
    inputs: Sequence[Input]
    compute: Callable[[list[Values]], None]
    held: dict[int, Values] = dataclasses.field(default_factory=dict)
    later: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    first: list[_Pending] = dataclasses.field(default_factory=list)

    def within(self, span: Span) -> bool:
        """Whether it writes no byte outside `span`."""
        return (
            self.span.overlaps(span)
            and span.start <= self.span.start
            and self.span.stop <= span.stop
        )

    def hold(self, touched: Callable[[Span], bool], copy: bool) -> None:
        """Keep the inputs in memory for which `touched` holds, as views or copies. Where
        that memory is its own span, what it reads there is the result of `first`: run now."""
        if touched(self.span):
            self._run_first()
        for step in self.first:
            step.hold(touched, copy)
        for k, tensor in enumerate(self.inputs):
            if k not in self.held and touched(tensor.span):
                view = tensor.view()
                self.held[k] = view.copy() if copy else view

    def overwritten(self, span: Span) -> bool:
        """Note that a write of every byte of `span` came after this one; whether none of its
        own bytes are left (so nobody can ever read them)."""
        start = max(self.span.offset, span.offset)
        stop = min(self.span.offset + self.span.nbytes, span.offset + span.nbytes)
        merged: list[tuple[int, int]] = []
        for a, b in sorted([*self.later, (start, stop)]):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        self.later = merged
        return merged == [(self.span.offset, self.span.offset + self.span.nbytes)]

    def _run_first(self) -> None:
        steps, self.first = self.first, []
        for step in steps:
            step.run()

    def run(self) -> None:
        self._run_first()
        memory = self.span.allocation.bytes
        kept = [(a, memory[a:b].copy()) for a, b in self.later]
        self.compute(
            [self.held[k] if k in self.held else i.view() for k, i in enumerate(self.inputs)]
        )
        for a, saved in kept:
            memory[a : a + len(saved)] = saved


@dataclasses.dataclass
class _Tracked:
    kind: str
    owner: weakref.ref[Any]
    made_at: str
    serial: int
    released: bool = False


class SimDevice:
    """Everything the simulated CUDA runtime and cuDNN share."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.caps: Capabilities = load(config.caps)
        self.driver_version = config.driver_version
        # Without a driver that runs this runtime, no device is visible, as on a real machine.
        visible = config.devices if self.driver_runs_runtime() else 0
        self.memories = [
            Memory(device, config.memory, CONTEXT_RESERVE) for device in range(visible)
        ]
        self.current = 0
        self.streams: dict[int, StreamState] = {s: StreamState(True) for s in BUILTIN_STREAMS}
        self.events: dict[int, EventState] = {}
        self.faults = Faults()
        self.calls: collections.deque[CallRecord] = collections.deque(maxlen=10_000)
        self._pending: list[_Pending] = []
        self._tracked: dict[int, _Tracked] = {}  # by handle int
        self._next_handle = _HANDLE_BASE
        self._serial = 0  # counts everything tracked, so tests can ask "since when"

    # -- identity -----------------------------------------------------------------------------
    def driver_runs_runtime(self) -> bool:
        """Whether the simulated driver exists and supports the simulated runtime's CUDA major
        (newer minor versions of a major run on its older drivers)."""
        return self.driver_version // 1000 >= RUNTIME_VERSION // 1000

    @property
    def name(self) -> str:
        """The device name, which fingerprints the simulator and its data: measurements made
        here are cached under it, so they can never be served to a real GPU, nor to a
        simulator with other capabilities."""
        return f"SIMULATED {self.caps.device_name} (ucudnn-sim 1, {self.caps.name})"

    @property
    def memory(self) -> Memory:
        return self.memories[self.current]

    # -- handles and leaks --------------------------------------------------------------------
    def new_handle(self, kind: str, owner: object) -> int:
        """A fresh int for a stream, event, cuDNN handle or descriptor, tracked until released."""
        self._next_handle += 0x10
        self._serial += 1
        self._tracked[self._next_handle] = _Tracked(
            kind, weakref.ref(owner), call_site(), self._serial
        )
        return self._next_handle

    def release_handle(self, handle: int) -> None:
        """Forget a stream, event, cuDNN handle or descriptor (numbers are never reused)."""
        self.streams.pop(handle, None)
        self.events.pop(handle, None)
        tracked = self._tracked.pop(handle, None)
        if tracked is not None:
            tracked.released = True

    def allocate(self, nbytes: int) -> Allocation | None:
        """nbytes on the current device, or None when they do not fit."""
        self._serial += 1
        return self.memory.allocate(nbytes, self._serial)

    def owner(self, address: int) -> Allocation | None:
        """The live allocation holding `address` on any device."""
        for memory in self.memories:
            found = memory.owner(address)
            if found is not None:
                return found
        return None

    def span(self, address: int, nbytes: int, what: str, call: str) -> Span:
        """A checked range of live memory (see `Memory.span`), on the device that holds it."""
        for memory in self.memories:
            if memory.find(address) is not None:
                return memory.span(address, nbytes, what, call)
        return self.memory.span(address, nbytes, what, call)

    def free(self, address: int) -> str | None:
        """Free an allocation; None, or why not (see `Memory.release`)."""
        for memory in self.memories:
            found = memory.find(address)
            if found is not None:
                if found.freed_at is None and found.address == address:
                    self._forget(found)
                return memory.release(address)
        return self.memory.release(address)

    def _forget(self, allocation: Allocation) -> None:
        """Before `allocation` is freed: drop the deferred writes to it (nobody can read them
        now), and let deferred work that reads it keep views of it (freed memory is never
        written again)."""
        self._pending = [p for p in self._pending if p.span.allocation is not allocation]
        self._hold_inputs(lambda s: s.allocation is allocation, copy=False)

    def mark(self) -> int:
        """A point in time for `leaks(since=...)`."""
        self._serial += 1
        return self._serial

    def leaks(self, since: int = 0) -> list[Leak]:
        """What was made after `since` and is still held: live allocations (raw, or owned by
        a DeviceBuffer nobody released or collected), and streams, events, cuDNN handles and
        descriptors whose objects are still alive. Collect garbage first to count only what
        is really held."""
        found = [
            Leak(t.kind, f"{handle:#x}", t.made_at)
            for handle, t in self._tracked.items()
            if t.serial > since and t.owner() is not None
        ]
        for memory in self.memories:
            found += [
                Leak("allocation", f"{a.address:#x} of {a.nbytes} bytes", a.made_at)
                for a in memory.live()
                if a.serial > since
            ]
        return found

    # -- streams and time ---------------------------------------------------------------------
    def stream(self, handle: int) -> StreamState | None:
        return self.streams.get(handle)

    def advance(self, stream: int, ms: float) -> None:
        """Work of `ms` modelled milliseconds enqueued on `stream`."""
        self.streams[stream].clock_ms += ms

    # -- deferred work ------------------------------------------------------------------------
    @property
    def deferred(self) -> int:
        """How many writes are enqueued and not yet computed (an accumulation counts once
        with the writes it reads, see `defer`)."""
        return len(self._pending)

    def before_read(self, span: Span) -> None:
        """Compute every deferred write that `span` would read, in the order enqueued."""
        if any(p.span.overlaps(span) for p in self._pending):
            self._run(lambda p: p.span.overlaps(span))

    def before_write(self, span: Span, dense: bool) -> None:
        """Ready `span` for a write. A dense write (of every byte of `span`) drops the deferred
        writes it replaces entirely: nobody read them. Deferred work that reads `span` then
        copies its inputs. Of the deferred writes it overlaps in part, a dense write keeps its
        own bytes from them when they run; a write with gaps computes them now, in order."""
        if dense:
            self._pending = [p for p in self._pending if not p.within(span)]
        self._hold_inputs(span.overlaps, copy=True)
        if not dense:
            self.before_read(span)
            return
        self._pending = [
            p for p in self._pending if not (p.span.overlaps(span) and p.overwritten(span))
        ]

    def defer(
        self,
        span: Span,
        dense: bool,
        inputs: Sequence[Input],
        compute: Callable[[list[Values]], None],
        accumulates: bool = False,
    ) -> None:
        """Enqueue a write of `span` by `compute` from views of `inputs`. What else they are
        still to be written with is computed first. When it `accumulates` (reads the span's
        old values: beta != 0), the deferred writes within the span become steps it runs
        first, so that a chain of accumulations nobody reads is never computed."""
        steps = [p for p in self._pending if accumulates and p.within(span)]
        self._pending = [p for p in self._pending if not any(p is s for s in steps)]
        for tensor in inputs:
            self.before_read(tensor.span)
        self.before_write(span, dense)
        first = [s for step in steps for s in (*step.first, step)]
        for step in steps:
            step.first = []
        self._pending.append(_Pending(span, inputs, compute, first=first))

    def _hold_inputs(self, touched: Callable[[Span], bool], copy: bool) -> None:
        for pending in self._pending:
            pending.hold(touched, copy)

    def _run(self, selected: Callable[[_Pending], bool]) -> None:
        run: list[_Pending] = []
        kept: list[_Pending] = []
        for pending in self._pending:
            (run if selected(pending) else kept).append(pending)
        self._pending = kept
        for pending in run:
            pending.run()


DEVICE = SimDevice(SimConfig.from_environment())


class DeviceObject:
    """A stream, event, cuDNN handle or descriptor: a number from the device, counted by the
    leak report until it is released."""

    _KIND: ClassVar[str]  # as leak reports name it

    def __init__(self) -> None:
        self._number = DEVICE.new_handle(self._KIND, self)

    def __del__(self, _device: SimDevice = DEVICE) -> None:  # bound: globals go at exit
        if getattr(self, "_number", 0):
            _device.release_handle(self._number)


class Destroyable(DeviceObject):
    """A device object its owner may also destroy; using it after that is a ValueError, as in
    the bindings."""

    _NAME: ClassVar[str]  # as "the ... was destroyed" names it

    def _alive(self) -> int:
        if not self._number:
            raise ValueError(f"the {self._NAME} was destroyed")
        return self._number

    def destroy(self) -> None:
        number, self._number = self._number, 0
        if number:
            DEVICE.release_handle(number)
