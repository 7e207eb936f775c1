"""The simulated backend (graph) API: `_cudnn.BackendDescriptor` and `execute_plan`.

Python-side refusals (unknown names, values of the wrong Python type) repeat native/_cudnn.pyx
word for word. What cuDNN itself checks raises CudnnError with the C call's name and cuDNN's
status: cudnnBackendSetAttribute the attribute's kind, type and element count
(`backend_names.ATTRIBUTES`) and that the descriptor is not yet finalized;
cudnnBackendFinalize what each kind requires (`backend_engines.FINALIZE`);
cudnnBackendGetAttribute that the descriptor is finalized. Execution checks what hardware
does not: every tensor and the workspace inside live allocations, each pointer at least as
aligned as its tensor's declared BYTE_ALIGNMENT (a ConformanceError otherwise: cuDNN may pick
vector loads that fault or read wrong values), the output apart from the inputs; then it runs
like a legacy convolution.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ucudnn.core.cudnn_names import BACKEND_ATTRIBUTES, BACKEND_KINDS, BACKEND_TYPES, ENUM_TABLES
from ucudnn.core.engines import deterministic_of
from ucudnn.errors import CudnnError
from ucudnn.testing.simulator.backend_engines import (
    FINALIZE,
    Plan,
    VariantPack,
    variant_pack as make_variant_pack,
)
from ucudnn.testing.simulator.backend_graph import OPERATIONS
from ucudnn.testing.simulator.backend_names import (
    ATTRIBUTES,
    BAD_PARAM,
    BAD_PARAM_ATTRIBUTE_TYPE,
    BAD_PARAM_DESCRIPTOR_TYPE,
    NOT_INITIALIZED,
    NOT_SUPPORTED,
    Attribute,
)
from ucudnn.testing.simulator.backend_states import Entry, Reader, State
from ucudnn.testing.simulator.convert import cudnn_error, lookup, to_address, to_int, to_size
from ucudnn.testing.simulator.convolutions import NAMES, ROLES, launch, workspace_operand
from ucudnn.testing.simulator.descriptors import not_none
from ucudnn.testing.simulator.device import DEVICE, CallRecord, DeviceObject
from ucudnn.testing.simulator.faults import Context
from ucudnn.testing.simulator.handles import Handle, live
from ucudnn.testing.simulator.memory import ConformanceError
from ucudnn.testing.simulator.tensors import Operand, operand_at

MAX_TENSORS = 8  # execute_plan's variant pack names at most this many tensors
_EXECUTE = "cudnnBackendExecute"


def _in_range(value: object, what: str, bits: int) -> int:
    number = to_int(value, what)
    if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
        raise ValueError(f"{what} = {number} does not fit in a {bits}-bit integer")
    return number


def _real(value: object, what: str) -> float:
    """A C double, converted as Cython converts one (floats, ints and what has __float__)."""
    if not hasattr(type(value), "__float__") and not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be a real number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _pack(attr_type: str, value: object, what: str) -> object:
    """One value as the binding passes it to cuDNN (a FLOAT rounded to float)."""
    if attr_type == "INT64":
        return _in_range(value, what, 64)
    if attr_type in ("INT32", "KNOB_TYPE"):
        return _in_range(value, what, 32)
    if attr_type == "FLOAT":
        return float(np.float32(_real(value, what)))
    if attr_type == "DOUBLE":
        return _real(value, what)
    if attr_type == "BOOLEAN":
        if not isinstance(value, bool):
            raise TypeError(f"{what} must be a bool, got {value!r}")
        return value
    if attr_type == "VOID_PTR":
        return to_address(value, what)
    if attr_type == "HANDLE":
        if not isinstance(value, Handle):
            raise TypeError(f"{what} must be a Handle, got {value!r}")
        value.ptr  # noqa: B018  (a destroyed handle is refused here, as the binding does)
        return value
    if attr_type == "BACKEND_DESCRIPTOR":
        if not isinstance(value, BackendDescriptor):
            raise TypeError(f"{what} must be a BackendDescriptor, got {value!r}")
        return value
    table = ENUM_TABLES[attr_type]
    if not isinstance(value, str):
        raise TypeError(
            f"{what} must be a {attr_type} name (one of {', '.join(map(repr, table))}), "
            f"got {value!r}"
        )
    lookup(table, value, f"{attr_type} name")
    return value


def _chars(values: object, attribute: str) -> bytes:
    # CHAR values are one bytes object, given alone or as the only item of a sequence.
    if isinstance(values, list | tuple) and len(values) == 1:
        values = values[0]
    if not isinstance(values, bytes):
        raise TypeError(f"{attribute} CHAR value must be one bytes object, got {values!r}")
    return values


def _state_of(descriptor: BackendDescriptor) -> State | None:
    return descriptor._state


class BackendDescriptor(DeviceObject):
    """A cuDNN backend descriptor of one kind: set attributes, finalize, get attributes.

    Descriptors and handles given to set() are kept referenced, as the binding keeps them.
    """

    _KIND = "descriptor"

    def __init__(self, kind: str) -> None:
        lookup(BACKEND_KINDS, kind, "backend descriptor kind")
        self._kind = kind
        self._values: dict[str, Entry] = {}
        self._state: State | None = None
        super().__init__()

    @classmethod
    def _filled(cls, kind: str, state: State) -> BackendDescriptor:
        """A descriptor cuDNN filled in from `state`, as get() returns them: finalized."""
        made = cls(kind)
        made._state = state
        return made

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def finalized(self) -> bool:
        return self._state is not None

    def set(self, attribute: str, attr_type: str, values: Sequence[object]) -> None:
        """cudnnBackendSetAttribute with values converted to attr_type's C elements."""
        lookup(BACKEND_ATTRIBUTES, attribute, "backend attribute")
        lookup(BACKEND_TYPES, attr_type, "backend attribute type")
        call = f"cudnnBackendSetAttribute({self._kind}, {attribute})"
        if attr_type == "CHAR":
            chars = _chars(values, attribute)
            items: tuple[object, ...] = (chars,)
            count = len(chars)
        else:
            # A str is a sequence too, but one name given bare is a mistake, not a list.
            if isinstance(values, str | bytes):
                raise TypeError(f"{attribute} values must be a sequence of values, got {values!r}")
            try:
                given = list(values)
            except TypeError:
                raise TypeError(f"{attribute} values must be a sequence, got {values!r}") from None
            items = tuple(
                _pack(attr_type, value, f"{attribute} value {i}") for i, value in enumerate(given)
            )
            count = len(items)
        if self._state is not None:
            raise cudnn_error(NOT_INITIALIZED, call, "the descriptor is finalized: read-only")
        spec = self._attribute(attribute, attr_type, call)
        if not spec.settable:
            raise cudnn_error(spec.refused, call, f"{attribute} is read-only: cuDNN sets it")
        least, most = spec.count
        if count < least or (most is not None and count > most):
            wanted = (
                str(least) if least == most else f"{least} or more" if most is None
                else f"{least} to {most}"
            )  # fmt: skip
            raise cudnn_error(BAD_PARAM, call, f"{attribute} takes {wanted} values, got {count}")
        for item in items:
            if isinstance(item, BackendDescriptor):
                _expect_kind(item._kind, spec.child, attribute, call)
        self._values[attribute] = (attr_type, items)

    def _attribute(self, attribute: str, attr_type: str, call: str) -> Attribute:
        spec = ATTRIBUTES[attribute]
        if spec.kind != self._kind:
            raise cudnn_error(
                BAD_PARAM, call, f"{attribute} is not an attribute of {self._kind} descriptors"
            )
        if attr_type not in spec.types:
            status = BAD_PARAM_ATTRIBUTE_TYPE if len(spec.types) == 1 else BAD_PARAM
            raise cudnn_error(
                status, call, f"{attribute} is {' or '.join(spec.types)}, not {attr_type}"
            )
        return spec

    def get(
        self, attribute: str, attr_type: str, count: int | None = None, kind: str | None = None
    ) -> list[object]:
        """cudnnBackendGetAttribute: count values (all of them when None) of attr_type.

        BACKEND_DESCRIPTOR values need `kind`: that many descriptors of it are filled in by
        cuDNN, and come back finalized.
        """
        lookup(BACKEND_ATTRIBUTES, attribute, "backend attribute")
        lookup(BACKEND_TYPES, attr_type, "backend attribute type")
        call = f"cudnnBackendGetAttribute({self._kind}, {attribute})"
        if (attr_type == "BACKEND_DESCRIPTOR") != (kind is not None):
            raise ValueError(
                f"{attribute}: kind= is needed for BACKEND_DESCRIPTOR values, and only for them "
                f"(attr_type {attr_type!r}, kind {kind!r})"
            )
        if kind is not None:
            lookup(BACKEND_KINDS, kind, "backend descriptor kind")
        requested = None if count is None else to_size(count, "count")
        try:
            items = self._readable(attribute, attr_type, requested, call)
        except CudnnError as error:
            if count is None and attr_type == "BACKEND_DESCRIPTOR":  # as the binding notes it
                error.add_note(
                    "cuDNN counts no single descriptor (an operation's tensors, a config's "
                    "engine): read those with count=1"
                )
            raise
        if kind is None:
            return list(items)
        for state in items:
            _expect_kind(kind, state.kind_name(), attribute, call)
        return [BackendDescriptor._filled(kind, state) for state in items]

    def _readable(
        self, attribute: str, attr_type: str, requested: int | None, call: str
    ) -> tuple[Any, ...]:
        """What cuDNN gives for the attribute: at most `requested` values (all when None)."""
        if self._state is None:
            raise cudnn_error(NOT_INITIALIZED, call, f"this {self._kind} is not finalized")
        spec = self._attribute(attribute, attr_type, call)
        if spec.types == ("BACKEND_DESCRIPTOR",) and spec.count == (1, 1):
            if requested is None:
                raise cudnn_error(BAD_PARAM, call, f"{attribute} is one descriptor: none counted")
            if requested > 1:
                raise cudnn_error(
                    BAD_PARAM, call, f"requestedElementCount {requested} > 1: {attribute} is one"
                )
        entry = self._state.readable().get(attribute)
        if entry is None:  # optional attributes nobody set; plans' JSON and the graph's handle
            refused = attribute == "OPERATIONGRAPH_HANDLE" or attribute.endswith(
                "JSON_REPRESENTATION"
            )
            status = NOT_SUPPORTED if refused else BAD_PARAM
            raise cudnn_error(status, call, f"{attribute} has no value the simulator gives")
        stored, items = entry
        if stored != attr_type:  # ALPHA and BETA read in the type they were set in
            raise cudnn_error(BAD_PARAM_ATTRIBUTE_TYPE, call, f"{attribute} is {stored}")
        return items if requested is None else items[:requested]

    def finalize(self) -> None:
        """cudnnBackendFinalize."""
        call = f"cudnnBackendFinalize({self._kind})"
        if self._state is not None:
            raise cudnn_error(BAD_PARAM, call, "the descriptor is already finalized")
        state = FINALIZE[self._kind](Reader(self._kind, self._values, _state_of))
        _fault(call, state)
        self._state = state

    def __repr__(self) -> str:
        return f"BackendDescriptor({self._kind!r}, finalized={self.finalized})"


def _expect_kind(kind: str, expected: str | None, attribute: str, call: str) -> None:
    """A descriptor value's kind; OPERATIONGRAPH_OPS (no `expected`) takes any operation."""
    if kind == expected or (expected is None and kind in OPERATIONS):
        return
    raise cudnn_error(
        BAD_PARAM_DESCRIPTOR_TYPE,
        call,
        f"{attribute} holds {expected or 'OPERATION_*'} descriptors, not {kind}",
    )


def _fault(call: str, state: State) -> None:
    status = DEVICE.faults.status(Context(call, **state.faults()))
    if status is not None:
        raise cudnn_error(status, call, "injected fault")


def _plan(plan: BackendDescriptor) -> Plan:
    if not isinstance(plan._state, Plan):
        raise ValueError(f"plan must be a finalized EXECUTION_PLAN descriptor, got {plan!r}")
    return plan._state


def _c_integer(value: object, least: int, most: int) -> int:
    """A C integer argument as Cython converts one: TypeError, or OverflowError out of range."""
    number = operator.index(value)  # type: ignore[arg-type]
    if not least <= number <= most:
        raise OverflowError(f"{number} is out of range")
    return number


def execute_plan(
    handle: Handle,
    plan: BackendDescriptor,
    uids: tuple[int, ...],
    pointers: tuple[int, ...],
    workspace: int,
) -> None:
    """Run a finalized plan with device pointers for its tensors' unique ids, in one call.

    The variant pack (uids, pointers, workspace) is built, used and dropped inside, as the
    binding does in C; at most 8 tensors.
    """
    not_none(handle, "handle", Handle)
    not_none(plan, "plan", BackendDescriptor)
    not_none(uids, "uids", tuple)
    not_none(pointers, "pointers", tuple)
    if len(uids) != len(pointers) or len(uids) > MAX_TENSORS:
        raise ValueError(
            f"uids {uids} and pointers {pointers} must be as long as each other, "
            f"at most {MAX_TENSORS}"
        )
    state = _plan(plan)
    try:
        c_uids = tuple(_c_integer(u, -(1 << 63), (1 << 63) - 1) for u in uids)
        c_pointers = tuple(_c_integer(p, 0, (1 << 64) - 1) for p in pointers)
    except (TypeError, OverflowError):
        raise TypeError(f"uids {uids} must be int64s and pointers {pointers} addresses") from None
    c_workspace = to_address(workspace, "workspace")
    stream = live(handle)
    values: dict[str, Entry] = {
        "VARIANT_PACK_UNIQUE_IDS": ("INT64", c_uids),
        "VARIANT_PACK_DATA_POINTERS": ("VOID_PTR", c_pointers),
        "VARIANT_PACK_WORKSPACE": ("VOID_PTR", (c_workspace,)),
    }
    _run(stream, state, make_variant_pack(Reader("VARIANT_PACK", values, _state_of)))


def _run(stream: int, plan: Plan, pack: VariantPack) -> None:
    """Execute `plan` with the pack's pointers: checked now, computed when read."""
    facts, operation, problem = plan.config.facts, plan.operation, plan.problem
    _fault(_EXECUTE, plan)
    pointers = dict(zip(pack.uids, pack.pointers, strict=True))
    tensors = dict(zip("xwy", operation.tensors, strict=True))
    operands = []
    for role, name in zip(ROLES[problem.kernel], NAMES[problem.kernel], strict=True):
        tensor = tensors[role]
        if tensor.uid not in pointers:
            detail = f"the variant pack has no pointer for {name} (uid {tensor.uid})"
            raise cudnn_error(BAD_PARAM, _EXECUTE, detail)
        ptr = pointers[tensor.uid]
        found = operand_at(name, problem.dtype, tensor.dims, tensor.strides, ptr, _EXECUTE)
        _check_alignment(found, tensor.alignment, tensor.uid)
        operands.append(found)
    space = None
    if plan.workspace_bytes:
        if not pack.workspace:
            raise cudnn_error(
                BAD_PARAM,
                _EXECUTE,
                f"{facts.tag} needs {plan.workspace_bytes} bytes of workspace, and the "
                "variant pack's workspace pointer is null",
            )
        space = workspace_operand(pack.workspace, plan.workspace_bytes, _EXECUTE)
    first, second, out = operands
    record = CallRecord(
        _EXECUTE, problem.kernel, facts.config.index, problem.math_type,
        deterministic_of(facts.numerical_notes), problem.batch, stream, facts.tag,
    )  # fmt: skip
    launch(
        problem, stream, operation.alpha, operation.beta, (first, second, out), space,
        facts.time_ms, record,
    )  # fmt: skip


def _check_alignment(found: Operand, declared: int, uid: int) -> None:
    actual = found.span.start & -found.span.start
    if declared > actual:
        raise ConformanceError(
            f"{_EXECUTE}: simulated device: {found.name} at {found.span.start:#x} is "
            f"{actual}-byte aligned, less than the TENSOR_BYTE_ALIGNMENT {declared} its tensor "
            f"(uid {uid}) declares: cuDNN may pick vector loads that fault or read wrong values"
        )
