# The backend (graph) API: one generic descriptor class, not one per kind. Which attributes a
# convolution graph, its heuristics and its plans need is decided in Python
# (ucudnn.runtime.graph), where it can be tested against a recording fake. Kinds, attributes,
# attribute types and enum values travel as cuDNN's names without their prefixes:
# CUDNN_BACKEND_<kind>_DESCRIPTOR, CUDNN_ATTR_<name>, CUDNN_TYPE_<type>, CUDNN_DATA_<data type>,
# CUDNN_NUMERICAL_NOTE_<note>, ... (the tables: ucudnn.core.cudnn_names, via _cudnn_names.pxi).

import atexit

cimport cython
cimport cudnn as c
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uintptr_t

from convert cimport to_address, to_int, to_size

# The largest C element any attribute type has (int64, double, pointers): a buffer of this many
# bytes per value holds the values of every type.
ctypedef union _Element:
    int64_t i
    double d
    void* p

# execute_plan's variant pack names at most this many tensors (a convolution has three).
cdef enum:
    _MAX_TENSORS = 8

# Set at interpreter exit, before modules are torn down: descriptors still alive then are left
# to the process's end instead of destroyed, since cuDNN may already be tearing itself down
# (PyTorch saw crashes destroying plans then since cuDNN 9.10, and leaks them on purpose).
cdef bint _exiting = False


def _at_exit():
    global _exiting
    _exiting = True


atexit.register(_at_exit)


cdef object _in_range(object value, str what, object bits):
    n = to_int(value, what)
    if not -(1 << (bits - 1)) <= n < 1 << (bits - 1):  # Python ints: no C overflow here
        raise ValueError(f"{what} = {n} does not fit in a {bits}-bit integer")
    return n


cdef double _real(object value, str what) except? -1.0:
    try:
        return value
    except TypeError:
        raise TypeError(f"{what} must be a real number, got {value!r}") from None


cdef int _pack(int attr_type, str type_name, list values, str attribute, char* out) except -1:
    """Write values into out as cuDNN's C elements of attr_type (room for one _Element each)."""
    cdef Py_ssize_t i
    for i in range(len(values)):
        value = values[i]
        what = f"{attribute} value {i}"
        if attr_type == c.CUDNN_TYPE_INT64:
            (<int64_t*>out)[i] = _in_range(value, what, 64)
        elif attr_type == c.CUDNN_TYPE_INT32 or attr_type == c.CUDNN_TYPE_KNOB_TYPE:
            (<int*>out)[i] = _in_range(value, what, 32)
        elif attr_type == c.CUDNN_TYPE_FLOAT:
            (<float*>out)[i] = <float>_real(value, what)
        elif attr_type == c.CUDNN_TYPE_DOUBLE:
            (<double*>out)[i] = _real(value, what)
        elif attr_type == c.CUDNN_TYPE_BOOLEAN:
            # cuDNN reads CUDNN_TYPE_BOOLEAN as a C/C++ bool: one byte.
            if not isinstance(value, bool):
                raise TypeError(f"{what} must be a bool, got {value!r}")
            (<unsigned char*>out)[i] = value
        elif attr_type == c.CUDNN_TYPE_VOID_PTR:
            (<void**>out)[i] = <void*>to_address(value, what)
        elif attr_type == c.CUDNN_TYPE_HANDLE:
            if not isinstance(value, Handle):
                raise TypeError(f"{what} must be a Handle, got {value!r}")
            (<c.cudnnHandle_t*>out)[i] = (<Handle>value)._live()
        elif attr_type == c.CUDNN_TYPE_BACKEND_DESCRIPTOR:
            if not isinstance(value, BackendDescriptor):
                raise TypeError(f"{what} must be a BackendDescriptor, got {value!r}")
            (<c.cudnnBackendDescriptor_t*>out)[i] = (<BackendDescriptor>value)._desc
        else:  # enums travel as names
            table = _ENUM_TABLES[attr_type]
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a {type_name} name (one of "
                                f"{', '.join(map(repr, table))}), got {value!r}")
            (<int*>out)[i] = _lookup(table, value, f"{type_name} name")
    return 0


cdef list _unpack(int attr_type, char* data, Py_ssize_t count):
    """The Python values of count C elements of a numeric, pointer or enum attr_type."""
    cdef Py_ssize_t i
    if attr_type == c.CUDNN_TYPE_INT64:
        return [(<int64_t*>data)[i] for i in range(count)]
    if attr_type == c.CUDNN_TYPE_INT32 or attr_type == c.CUDNN_TYPE_KNOB_TYPE:
        return [(<int*>data)[i] for i in range(count)]
    if attr_type == c.CUDNN_TYPE_FLOAT:
        return [(<float*>data)[i] for i in range(count)]
    if attr_type == c.CUDNN_TYPE_DOUBLE:
        return [(<double*>data)[i] for i in range(count)]
    if attr_type == c.CUDNN_TYPE_BOOLEAN:
        return [(<unsigned char*>data)[i] != 0 for i in range(count)]
    if attr_type == c.CUDNN_TYPE_VOID_PTR:
        return [<uintptr_t>(<void**>data)[i] for i in range(count)]
    # A value this module has no name for (a newer cuDNN's) still reads back, as UNKNOWN_<n>.
    names = _ENUM_NAMES[attr_type]
    return [names.get(value, f"UNKNOWN_{value}")
            for value in [(<int*>data)[i] for i in range(count)]]


cdef bytes _chars(object values, str attribute):
    # CHAR values are one bytes object, given alone or as the only item of a sequence.
    if isinstance(values, (list, tuple)) and len(values) == 1:
        values = values[0]
    if not isinstance(values, bytes):
        raise TypeError(f"{attribute} CHAR value must be one bytes object, got {values!r}")
    return values


@cython.no_gc_clear  # the references below must still be there when __dealloc__ runs
cdef class BackendDescriptor:
    """A cuDNN backend descriptor of one kind: set attributes, finalize, get attributes.

    Descriptors and handles given to set() are kept referenced, and a descriptor read by get()
    keeps the one it was read from, so that nothing cuDNN may still point at is destroyed first.
    """

    cdef c.cudnnBackendDescriptor_t _desc
    cdef str _kind
    cdef bint _finalized
    cdef dict _held  # attribute name -> the Handles or BackendDescriptors set on it
    cdef object _source  # the descriptor get() read this one from, or None

    def __cinit__(self, kind):
        cdef c.cudnnBackendDescriptorType_t c_kind = <c.cudnnBackendDescriptorType_t>_lookup(
            BACKEND_KINDS, kind, "backend descriptor kind")
        self._kind = kind
        self._held = {}
        check(c.cudnnBackendCreateDescriptor(c_kind, &self._desc),
              f"cudnnBackendCreateDescriptor({kind})")

    def __dealloc__(self):
        if self._desc != NULL and not _exiting:
            c.cudnnBackendDestroyDescriptor(self._desc)

    @property
    def kind(self):
        return self._kind

    @property
    def finalized(self):
        return self._finalized

    def set(self, attribute, attr_type, values):
        """cudnnBackendSetAttribute with values converted to attr_type's C elements."""
        cdef c.cudnnBackendAttributeName_t c_name = <c.cudnnBackendAttributeName_t>_lookup(
            BACKEND_ATTRIBUTES, attribute, "backend attribute")
        cdef int c_type = _lookup(BACKEND_TYPES, attr_type, "backend attribute type")
        cdef str call = f"cudnnBackendSetAttribute({self._kind}, {attribute})"
        cdef bytes chars
        cdef char* buffer
        if c_type == c.CUDNN_TYPE_CHAR:
            chars = _chars(values, attribute)
            check(c.cudnnBackendSetAttribute(self._desc, c_name, c.CUDNN_TYPE_CHAR, len(chars),
                                             <const char*>chars), call)
            return
        # A str is a sequence too, but one name given bare is a mistake, not a list of letters.
        if isinstance(values, (str, bytes)):
            raise TypeError(f"{attribute} values must be a sequence of values, got {values!r}")
        try:
            items = list(values)
        except TypeError:
            raise TypeError(f"{attribute} values must be a sequence, got {values!r}") from None
        buffer = <char*>PyMem_Malloc(max(len(items), 1) * sizeof(_Element))
        if buffer == NULL:
            raise MemoryError()
        try:
            _pack(c_type, attr_type, items, attribute, buffer)
            check(c.cudnnBackendSetAttribute(self._desc, c_name,
                                             <c.cudnnBackendAttributeType_t>c_type, len(items),
                                             buffer), call)
        finally:
            PyMem_Free(buffer)
        if c_type == c.CUDNN_TYPE_HANDLE or c_type == c.CUDNN_TYPE_BACKEND_DESCRIPTOR:
            self._held[attribute] = tuple(items)

    def get(self, attribute, attr_type, count=None, kind=None):
        """cudnnBackendGetAttribute: up to count values of attr_type (all of them when None:
        cuDNN is asked how many there are first).

        BACKEND_DESCRIPTOR values need `kind`: descriptors of it are created for cuDNN to fill,
        and come back finalized. CHAR values come back as [bytes], exactly the bytes cuDNN
        wrote.
        """
        cdef c.cudnnBackendAttributeName_t c_name = <c.cudnnBackendAttributeName_t>_lookup(
            BACKEND_ATTRIBUTES, attribute, "backend attribute")
        cdef c.cudnnBackendAttributeType_t c_type = <c.cudnnBackendAttributeType_t>_lookup(
            BACKEND_TYPES, attr_type, "backend attribute type")
        cdef str call = f"cudnnBackendGetAttribute({self._kind}, {attribute})"
        cdef int64_t requested = 0
        cdef int64_t returned = 0
        cdef c.cudnnStatus_t status
        cdef Py_ssize_t i
        cdef BackendDescriptor child
        if (c_type == c.CUDNN_TYPE_BACKEND_DESCRIPTOR) != (kind is not None):
            raise ValueError(f"{attribute}: kind= is needed for BACKEND_DESCRIPTOR values, and "
                             f"only for them (attr_type {attr_type!r}, kind {kind!r})")
        if kind is not None:
            _lookup(BACKEND_KINDS, kind, "backend descriptor kind")
        if count is not None:
            requested = to_size(count, "count")
        else:
            status = c.cudnnBackendGetAttribute(self._desc, c_name, c_type, 0, &requested, NULL)
            if status != c.CUDNN_STATUS_SUCCESS:
                error = _error(status, call)
                if c_type == c.CUDNN_TYPE_BACKEND_DESCRIPTOR:
                    error.add_note("cuDNN counts no single descriptor (an operation's tensors, "
                                   "a config's engine): read those with count=1")
                raise error
        children = [BackendDescriptor(kind) for _ in range(requested)] if kind is not None else []
        cdef char* buffer = <char*>PyMem_Malloc(max(requested, 1) * sizeof(_Element))
        if buffer == NULL:
            raise MemoryError()
        try:
            for i in range(len(children)):
                (<c.cudnnBackendDescriptor_t*>buffer)[i] = (<BackendDescriptor>children[i])._desc
            check(c.cudnnBackendGetAttribute(self._desc, c_name, c_type, requested, &returned,
                                             buffer), call)
            count = min(returned, requested)
            if c_type == c.CUDNN_TYPE_CHAR:
                return [buffer[:count]]
            if c_type == c.CUDNN_TYPE_HANDLE:
                return self._handles(attribute, <c.cudnnHandle_t*>buffer, count)
            if c_type != c.CUDNN_TYPE_BACKEND_DESCRIPTOR:
                return _unpack(c_type, buffer, count)
        finally:
            PyMem_Free(buffer)
        for child in children[:count]:
            child._finalized = True
            child._source = self
        return children[:count]

    cdef list _handles(self, str attribute, const c.cudnnHandle_t* pointers, Py_ssize_t count):
        # A Handle object cannot be made for a pointer it does not own: give back the ones set.
        cdef Py_ssize_t i
        held = {<uintptr_t>(<Handle>h)._handle: h for h in self._held.get(attribute, ())}
        addresses = [<uintptr_t>pointers[i] for i in range(count)]
        if not all(address in held for address in addresses):
            raise ValueError(f"{attribute}: cuDNN reports a handle this descriptor was not "
                             "given with set()")
        return [held[address] for address in addresses]

    def finalize(self):
        """cudnnBackendFinalize (without the GIL: plans may compile kernels for a second)."""
        cdef c.cudnnStatus_t status
        with nogil:
            status = c.cudnnBackendFinalize(self._desc)
        check(status, f"cudnnBackendFinalize({self._kind})")
        self._finalized = True

    def __repr__(self):
        return f"BackendDescriptor({self._kind!r}, finalized={self._finalized})"


cdef c.cudnnStatus_t _execute_with_pack(c.cudnnHandle_t handle, c.cudnnBackendDescriptor_t plan,
                                        int64_t count, const int64_t* uids, void** pointers,
                                        void* workspace, const char** failed) noexcept nogil:
    """Build a variant pack, execute the plan with it, destroy it; failed names the call that
    did not succeed, if any."""
    cdef c.cudnnBackendDescriptor_t pack = NULL
    failed[0] = "cudnnBackendCreateDescriptor(VARIANT_PACK)"
    cdef c.cudnnStatus_t status = c.cudnnBackendCreateDescriptor(
        c.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack)
    if status != c.CUDNN_STATUS_SUCCESS:
        return status
    failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_UNIQUE_IDS)"
    status = c.cudnnBackendSetAttribute(pack, c.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                        c.CUDNN_TYPE_INT64, count, uids)
    if status == c.CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_DATA_POINTERS)"
        status = c.cudnnBackendSetAttribute(pack, c.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                            c.CUDNN_TYPE_VOID_PTR, count, pointers)
    if status == c.CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendSetAttribute(VARIANT_PACK, VARIANT_PACK_WORKSPACE)"
        status = c.cudnnBackendSetAttribute(pack, c.CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                            c.CUDNN_TYPE_VOID_PTR, 1, &workspace)
    if status == c.CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendFinalize(VARIANT_PACK)"
        status = c.cudnnBackendFinalize(pack)
    if status == c.CUDNN_STATUS_SUCCESS:
        failed[0] = "cudnnBackendExecute"
        status = c.cudnnBackendExecute(handle, plan, pack)
    c.cudnnBackendDestroyDescriptor(pack)
    return status


def execute_plan(Handle handle not None, BackendDescriptor plan not None, tuple uids not None,
                 tuple pointers not None, workspace):
    """Run a finalized plan with device pointers for its tensors' unique ids, in one call.

    The variant pack (uids, pointers, workspace) is built, used and destroyed in C, so that a
    micro-batch costs one Python->C call; at most 8 tensors.
    """
    cdef int64_t c_uids[_MAX_TENSORS]
    cdef void* c_pointers[_MAX_TENSORS]
    cdef Py_ssize_t count = len(uids)
    cdef Py_ssize_t i
    if count != len(pointers) or count > _MAX_TENSORS:
        raise ValueError(f"uids {uids} and pointers {pointers} must be as long as each other, "
                         f"at most {_MAX_TENSORS}")
    if plan._kind != "EXECUTION_PLAN" or not plan._finalized:
        raise ValueError(f"plan must be a finalized EXECUTION_PLAN descriptor, got {plan!r}")
    try:
        for i in range(count):
            c_uids[i] = uids[i]
            c_pointers[i] = <void*><uintptr_t>pointers[i]
    except (TypeError, OverflowError):
        raise TypeError(f"uids {uids} must be int64s and pointers {pointers} addresses") from None
    cdef void* c_workspace = <void*>to_address(workspace, "workspace")
    cdef c.cudnnHandle_t h = handle._live()
    cdef const char* failed = NULL
    cdef c.cudnnStatus_t status
    with nogil:
        status = _execute_with_pack(h, plan._desc, count, c_uids, c_pointers, c_workspace,
                                    &failed)
    if status != c.CUDNN_STATUS_SUCCESS:
        raise _error(status, failed.decode())
