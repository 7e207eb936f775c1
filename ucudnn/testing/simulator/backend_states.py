"""What every finalized backend descriptor of the simulated cuDNN shares: its immutable state,
and the reader its finalization checks the attributes set on it with (cuDNN's statuses:
BAD_PARAM for what is missing, inconsistent or not finalized, NOT_SUPPORTED for what it cannot
run and for what the simulator does not model)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from ucudnn.testing.simulator.backend_names import BAD_PARAM, NOT_SUPPORTED
from ucudnn.testing.simulator.convert import cudnn_error

# Attribute values as set or read: (attribute type, values).
Entry = tuple[str, tuple[Any, ...]]
SM_COUNT = 132  # the H100 SXM's multiprocessors: the most an SM_COUNT_TARGET may ask for


class State:
    """A finalized descriptor."""

    KIND: ClassVar[str]

    def kind_name(self) -> str:
        """The descriptor kind it is the state of."""
        return self.KIND

    def readable(self) -> dict[str, Entry]:
        """Every attribute cudnnBackendGetAttribute answers, with its type and values."""
        raise NotImplementedError

    def faults(self) -> dict[str, Any]:
        """What a fault rule may look at (`faults.Context`'s fields)."""
        return {}


S = TypeVar("S", bound=State)
# A descriptor set as an attribute's value, as finalize sees it: its state if it is finalized.
Lookup = Callable[[Any], State | None]


class Reader:
    """The attributes set on one descriptor, read as its finalization reads them."""

    def __init__(self, kind: str, values: dict[str, Entry], state_of: Lookup) -> None:
        self.kind, self._values, self._state_of = kind, values, state_of
        self.call = f"cudnnBackendFinalize({kind})"

    def fail(self, detail: str, status: int = BAD_PARAM) -> Exception:
        return cudnn_error(status, self.call, detail)

    def has(self, attribute: str) -> bool:
        return attribute in self._values

    def entry(self, attribute: str) -> Entry:
        if attribute not in self._values:
            raise self.fail(f"{attribute} is required and was not set")
        return self._values[attribute]

    def values(self, attribute: str, default: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        if default is not None and attribute not in self._values:
            return default
        return self.entry(attribute)[1]

    def one(self, attribute: str, default: Any = None) -> Any:
        return self.values(attribute, None if default is None else (default,))[0]

    def states(self, attribute: str, cls: type[S], optional: bool = False) -> list[S]:
        """The finalized descriptors set on `attribute` (none if it is optional and unset)."""
        found = []
        for descriptor in self.values(attribute, () if optional else None):
            state = self._state_of(descriptor)
            if not isinstance(state, cls):
                raise self.fail(f"{attribute}: {descriptor!r} is not finalized")
            found.append(state)
        return found

    def state(self, attribute: str, cls: type[S]) -> S:
        return self.states(attribute, cls)[0]

    def sm_count(self, attribute: str) -> int:
        count: int = self.one(attribute, 0)
        if not 0 <= count <= SM_COUNT:
            raise self.fail(f"{attribute} = {count}: the device has {SM_COUNT} SMs")
        return count

    def refuse_deviceprop(self, attribute: str) -> None:
        if self.has(attribute):
            raise self.fail(f"{attribute}: DEVICEPROP descriptors are not simulated", NOT_SUPPORTED)


def live_handle(reader: Reader, attribute: str) -> Any:
    handle = reader.one(attribute)
    try:
        handle.ptr  # noqa: B018  (raises for a destroyed handle)
    except ValueError:
        raise reader.fail(f"{attribute} is not a valid cuDNN handle: it was destroyed") from None
    return handle
