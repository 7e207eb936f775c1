"""cuDNN's enum values by the names ucudnn gives them: the legacy API's dtypes, math types,
convolution modes, filter layouts, activations, pooling modes and softmax choices, and the
graph API's descriptor kinds, attributes, attribute types and enum values (cuDNN's names
without their prefixes).

Pure Python, so that the simulated device answers with the binding's very tables without
loading cuDNN. The binding (native/_cudnn.pyx) serves them and refuses to import when one
differs from the headers it was built with: `HEADER_VALUES` holds every value under its C
identifier for that check. Values are cuDNN 9's (cudnn_graph.h, cudnn_ops.h).
"""

from __future__ import annotations

# Every value below by its C identifier, e.g. "CUDNN_DATA_HALF": 2.
HEADER_VALUES: dict[str, int] = {}


def _record(identifier: str, value: int) -> None:
    if HEADER_VALUES.setdefault(identifier, value) != value:
        raise AssertionError(f"{identifier} is given two values")


def _prefixed(prefix: str, values: dict[str, int], suffix: str = "") -> dict[str, int]:
    """`values`, each recorded under its C identifier: prefix + name + suffix."""
    for name, value in values.items():
        _record(f"{prefix}{name}{suffix}", value)
    return values


def _spelled(entries: dict[str, tuple[str, int]]) -> dict[str, int]:
    """Names given with the C identifier of their value."""
    for identifier, value in entries.values():
        _record(identifier, value)
    return {name: value for name, (_, value) in entries.items()}


# --- the legacy API's names ------------------------------------------------------------------

MATH_TYPES = _spelled({
    "default": ("CUDNN_DEFAULT_MATH", 0),
    "tensor_op": ("CUDNN_TENSOR_OP_MATH", 1),
    "tensor_op_allow_conversion": ("CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION", 2),
    "fma": ("CUDNN_FMA_MATH", 3),
})  # fmt: skip
_TENSOR_FORMATS = _prefixed("CUDNN_TENSOR_", {"NCHW": 0, "NHWC": 1})
# Filter layouts by name: cuDNN's format and the rank it implies (K, C/groups, *spatial).
FILTER_LAYOUTS = {
    "NCHW": (_TENSOR_FORMATS["NCHW"], 4),
    "NHWC": (_TENSOR_FORMATS["NHWC"], 4),
    "NCDHW": (_TENSOR_FORMATS["NCHW"], 5),
    "NDHWC": (_TENSOR_FORMATS["NHWC"], 5),
}
ACTIVATIONS = _spelled({
    "sigmoid": ("CUDNN_ACTIVATION_SIGMOID", 0),
    "relu": ("CUDNN_ACTIVATION_RELU", 1),
    "tanh": ("CUDNN_ACTIVATION_TANH", 2),
    "clipped_relu": ("CUDNN_ACTIVATION_CLIPPED_RELU", 3),
    "elu": ("CUDNN_ACTIVATION_ELU", 4),
})  # fmt: skip
POOLING_MODES = _spelled({
    "max": ("CUDNN_POOLING_MAX", 0),
    "max_deterministic": ("CUDNN_POOLING_MAX_DETERMINISTIC", 3),
    "average": ("CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING", 1),
    "average_exclude_padding": ("CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING", 2),
})  # fmt: skip
SOFTMAX_ALGORITHMS = _spelled({
    "fast": ("CUDNN_SOFTMAX_FAST", 0),
    "accurate": ("CUDNN_SOFTMAX_ACCURATE", 1),
    "log": ("CUDNN_SOFTMAX_LOG", 2),
})  # fmt: skip
SOFTMAX_MODES = _spelled({
    "instance": ("CUDNN_SOFTMAX_MODE_INSTANCE", 0),
    "channel": ("CUDNN_SOFTMAX_MODE_CHANNEL", 1),
})  # fmt: skip

# --- the graph (backend) API's names ---------------------------------------------------------

BACKEND_KINDS = _prefixed("CUDNN_BACKEND_", {
    "TENSOR": 17, "CONVOLUTION": 1, "OPERATION_CONVOLUTION_FORWARD": 10,
    "OPERATION_CONVOLUTION_BACKWARD_DATA": 12, "OPERATION_CONVOLUTION_BACKWARD_FILTER": 11,
    "OPERATIONGRAPH": 15, "ENGINEHEUR": 4, "ENGINECFG": 3, "ENGINE": 2, "KNOB_INFO": 8,
    "KNOB_CHOICE": 7, "EXECUTION_PLAN": 5, "VARIANT_PACK": 16, "DEVICEPROP": 38,
}, suffix="_DESCRIPTOR")  # fmt: skip
BACKEND_ATTRIBUTES = _prefixed("CUDNN_ATTR_", {
    "TENSOR_BYTE_ALIGNMENT": 900, "TENSOR_DATA_TYPE": 901, "TENSOR_DIMENSIONS": 902,
    "TENSOR_STRIDES": 903, "TENSOR_VECTOR_COUNT": 904, "TENSOR_VECTORIZED_DIMENSION": 905,
    "TENSOR_UNIQUE_ID": 906, "TENSOR_IS_VIRTUAL": 907, "TENSOR_IS_BY_VALUE": 908,
    "CONVOLUTION_COMP_TYPE": 100, "CONVOLUTION_CONV_MODE": 101, "CONVOLUTION_DILATIONS": 102,
    "CONVOLUTION_FILTER_STRIDES": 103, "CONVOLUTION_POST_PADDINGS": 104,
    "CONVOLUTION_PRE_PADDINGS": 105, "CONVOLUTION_SPATIAL_DIMS": 106,
    "OPERATION_CONVOLUTION_FORWARD_ALPHA": 700, "OPERATION_CONVOLUTION_FORWARD_BETA": 701,
    "OPERATION_CONVOLUTION_FORWARD_CONV_DESC": 702, "OPERATION_CONVOLUTION_FORWARD_W": 703,
    "OPERATION_CONVOLUTION_FORWARD_X": 704, "OPERATION_CONVOLUTION_FORWARD_Y": 705,
    "OPERATION_CONVOLUTION_BWD_DATA_ALPHA": 706, "OPERATION_CONVOLUTION_BWD_DATA_BETA": 707,
    "OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC": 708, "OPERATION_CONVOLUTION_BWD_DATA_W": 709,
    "OPERATION_CONVOLUTION_BWD_DATA_DX": 710, "OPERATION_CONVOLUTION_BWD_DATA_DY": 711,
    "OPERATION_CONVOLUTION_BWD_FILTER_ALPHA": 712, "OPERATION_CONVOLUTION_BWD_FILTER_BETA": 713,
    "OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC": 714,
    "OPERATION_CONVOLUTION_BWD_FILTER_DW": 715, "OPERATION_CONVOLUTION_BWD_FILTER_X": 716,
    "OPERATION_CONVOLUTION_BWD_FILTER_DY": 717, "OPERATIONGRAPH_HANDLE": 800,
    "OPERATIONGRAPH_OPS": 801, "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT": 802,
    "ENGINEHEUR_MODE": 200, "ENGINEHEUR_OPERATION_GRAPH": 201, "ENGINEHEUR_RESULTS": 202,
    "ENGINEHEUR_SM_COUNT_TARGET": 203, "ENGINEHEUR_DEVICEPROP": 204,
    "ENGINE_OPERATION_GRAPH": 1300, "ENGINE_GLOBAL_INDEX": 1301, "ENGINE_KNOB_INFO": 1302,
    "ENGINE_NUMERICAL_NOTE": 1303, "ENGINE_BEHAVIOR_NOTE": 1305, "ENGINE_SM_COUNT_TARGET": 1306,
    "ENGINE_DEVICEPROP": 1307, "KNOB_INFO_TYPE": 1200, "KNOB_INFO_MAXIMUM_VALUE": 1201,
    "KNOB_INFO_MINIMUM_VALUE": 1202, "KNOB_INFO_STRIDE": 1203, "KNOB_CHOICE_KNOB_TYPE": 600,
    "KNOB_CHOICE_KNOB_VALUE": 601, "ENGINECFG_ENGINE": 300, "ENGINECFG_KNOB_CHOICES": 302,
    "ENGINECFG_WORKSPACE_SIZE": 303, "ENGINECFG_SHARED_MEMORY_USED": 304,
    "EXECUTION_PLAN_HANDLE": 400, "EXECUTION_PLAN_ENGINE_CONFIG": 401,
    "EXECUTION_PLAN_WORKSPACE_SIZE": 402, "EXECUTION_PLAN_JSON_REPRESENTATION": 405,
    "EXECUTION_PLAN_DEVICEPROP": 407, "VARIANT_PACK_UNIQUE_IDS": 1000,
    "VARIANT_PACK_DATA_POINTERS": 1001, "VARIANT_PACK_WORKSPACE": 1003,
    "DEVICEPROP_DEVICE_ID": 2700, "DEVICEPROP_HANDLE": 2701, "DEVICEPROP_JSON_REPRESENTATION": 2702,
})  # fmt: skip
BACKEND_TYPES = _prefixed("CUDNN_TYPE_", {
    "HANDLE": 0, "DATA_TYPE": 1, "BOOLEAN": 2, "INT64": 3, "INT32": 23, "FLOAT": 4, "DOUBLE": 5,
    "VOID_PTR": 6, "CHAR": 24, "BACKEND_DESCRIPTOR": 15, "CONVOLUTION_MODE": 7, "HEUR_MODE": 8,
    "KNOB_TYPE": 9, "NUMERICAL_NOTE": 11, "BEHAVIOR_NOTE": 19,
})  # fmt: skip
BACKEND_DATA_TYPES = _prefixed("CUDNN_DATA_", {
    "FLOAT": 0, "DOUBLE": 1, "HALF": 2, "BFLOAT16": 9, "INT8": 3, "UINT8": 6, "INT32": 4,
    "INT64": 10, "BOOLEAN": 11, "FP8_E4M3": 12, "FP8_E5M2": 13,
})  # fmt: skip
BACKEND_CONVOLUTION_MODES = _prefixed("CUDNN_", {"CONVOLUTION": 0, "CROSS_CORRELATION": 1})
# The legacy API's names for the values it shares with the graph API.
DTYPES = {
    "float32": BACKEND_DATA_TYPES["FLOAT"],
    "float16": BACKEND_DATA_TYPES["HALF"],
    "bfloat16": BACKEND_DATA_TYPES["BFLOAT16"],
    "float64": BACKEND_DATA_TYPES["DOUBLE"],
}
CONVOLUTION_MODES = {
    "cross_correlation": BACKEND_CONVOLUTION_MODES["CROSS_CORRELATION"],
    "convolution": BACKEND_CONVOLUTION_MODES["CONVOLUTION"],
}
HEURISTIC_MODES = _prefixed("CUDNN_HEUR_MODE_", {"INSTANT": 0, "B": 1, "FALLBACK": 2, "A": 3})
NUMERICAL_NOTES = _prefixed("CUDNN_NUMERICAL_NOTE_", {
    "TENSOR_CORE": 0, "DOWN_CONVERT_INPUTS": 1, "REDUCED_PRECISION_REDUCTION": 2, "FFT": 3,
    "NONDETERMINISTIC": 4, "WINOGRAD": 5, "WINOGRAD_TILE_4x4": 6, "WINOGRAD_TILE_6x6": 7,
    "WINOGRAD_TILE_13x13": 8, "STRICT_NAN_PROP": 9,
})  # fmt: skip
BEHAVIOR_NOTES = _prefixed("CUDNN_BEHAVIOR_NOTE_", {
    "RUNTIME_COMPILATION": 0, "REQUIRES_FILTER_INT8x32_REORDER": 1,
    "REQUIRES_BIAS_INT8x32_REORDER": 2, "SUPPORTS_CUDA_GRAPH_NATIVE_API": 3,
    "CUBLASLT_DEPENDENCY": 4,
})  # fmt: skip
# The attribute types whose values are enum names, with the table of those names.
ENUM_TABLES = {
    "DATA_TYPE": BACKEND_DATA_TYPES,
    "CONVOLUTION_MODE": BACKEND_CONVOLUTION_MODES,
    "HEUR_MODE": HEURISTIC_MODES,
    "NUMERICAL_NOTE": NUMERICAL_NOTES,
    "BEHAVIOR_NOTE": BEHAVIOR_NOTES,
}
# The names cuDNN added after 9.1 (the oldest it builds against), by the version that added
# them: the binding knows one only where both its headers and the loaded library have it.
ADDED_IN = {
    "ENGINECFG_WORKSPACE_SIZE": 90200,
    "ENGINECFG_SHARED_MEMORY_USED": 90200,
    "SUPPORTS_CUDA_GRAPH_NATIVE_API": 90500,
    "DEVICEPROP": 90800,
    "DEVICEPROP_DEVICE_ID": 90800,
    "DEVICEPROP_HANDLE": 90800,
    "DEVICEPROP_JSON_REPRESENTATION": 90800,
    "ENGINEHEUR_DEVICEPROP": 90800,
    "ENGINE_DEVICEPROP": 90800,
    "EXECUTION_PLAN_DEVICEPROP": 90800,
    "CUBLASLT_DEPENDENCY": 91500,
}
