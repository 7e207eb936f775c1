"""What the simulated backend (graph) API accepts for each attribute, and its statuses.

`ATTRIBUTES` says, per attribute, what cudnnBackendSetAttribute checks (as cudnn_graph.h
documents it and cuDNN 9 answered on a machine without a GPU): the descriptor kind it belongs
to, the attribute types and element counts it takes, and whether users may set it at all. The
names themselves are the binding's (ucudnn.core.cudnn_names), all of which cuDNN 9.19 knows.
"""

from __future__ import annotations

import dataclasses

from ucudnn.testing.simulator.convert import DIM_MAX

BAD_PARAM = 2000
BAD_PARAM_ATTRIBUTE_TYPE = 2010
BAD_PARAM_DESCRIPTOR_TYPE = 2012
NOT_INITIALIZED = 1001
NOT_SUPPORTED = 3000

ANY = (0, None)  # element counts: any
ARRAY = (1, DIM_MAX)


@dataclasses.dataclass(frozen=True)
class Attribute:
    """What cudnnBackendSetAttribute accepts for one attribute."""

    kind: str  # the descriptor kind it belongs to
    types: tuple[str, ...]
    count: tuple[int, int | None] = (1, 1)  # least and most elements
    settable: bool = True
    refused: int = BAD_PARAM  # the status setting a read-only attribute returns
    child: str | None = None  # BACKEND_DESCRIPTOR values: their kind


def _spec(
    kind: str,
    attr_type: str,
    count: tuple[int, int | None] = (1, 1),
    *,
    child: str | None = None,
    settable: bool = True,
    refused: int = BAD_PARAM,
) -> Attribute:
    return Attribute(kind, (attr_type,), count, settable, refused, child)


def _read_only(kind: str, attr_type: str, count: tuple[int, int | None] = (1, 1),
               child: str | None = None) -> Attribute:  # fmt: skip
    return _spec(kind, attr_type, count, child=child, settable=False)


def _not_users(kind: str, attr_type: str) -> Attribute:
    """Read-only, and cuDNN answers NOT_SUPPORTED to setting it."""
    return _spec(kind, attr_type, settable=False, refused=NOT_SUPPORTED)


def _operation(kind: str, prefix: str, tensors: tuple[str, ...]) -> dict[str, Attribute]:
    specs = {f"{prefix}_{t}": _spec(kind, "BACKEND_DESCRIPTOR", child="TENSOR") for t in tensors}
    specs[f"{prefix}_CONV_DESC"] = _spec(kind, "BACKEND_DESCRIPTOR", child="CONVOLUTION")
    for scalar in ("ALPHA", "BETA"):
        specs[f"{prefix}_{scalar}"] = Attribute(kind, ("FLOAT", "DOUBLE"))
    return specs


ATTRIBUTES: dict[str, Attribute] = {
    "TENSOR_DATA_TYPE": _spec("TENSOR", "DATA_TYPE"),
    "TENSOR_DIMENSIONS": _spec("TENSOR", "INT64", (1, None)),
    "TENSOR_STRIDES": _spec("TENSOR", "INT64", (1, None)),
    "TENSOR_UNIQUE_ID": _spec("TENSOR", "INT64"),
    "TENSOR_BYTE_ALIGNMENT": _spec("TENSOR", "INT64"),
    "TENSOR_IS_VIRTUAL": _spec("TENSOR", "BOOLEAN"),
    "TENSOR_IS_BY_VALUE": _spec("TENSOR", "BOOLEAN"),
    "TENSOR_VECTOR_COUNT": _spec("TENSOR", "INT64"),
    "TENSOR_VECTORIZED_DIMENSION": _spec("TENSOR", "INT64"),
    "CONVOLUTION_COMP_TYPE": _spec("CONVOLUTION", "DATA_TYPE"),
    "CONVOLUTION_CONV_MODE": _spec("CONVOLUTION", "CONVOLUTION_MODE"),
    "CONVOLUTION_SPATIAL_DIMS": _spec("CONVOLUTION", "INT64"),
    "CONVOLUTION_DILATIONS": _spec("CONVOLUTION", "INT64", ARRAY),
    "CONVOLUTION_FILTER_STRIDES": _spec("CONVOLUTION", "INT64", ARRAY),
    "CONVOLUTION_PRE_PADDINGS": _spec("CONVOLUTION", "INT64", ARRAY),
    "CONVOLUTION_POST_PADDINGS": _spec("CONVOLUTION", "INT64", ARRAY),
    **_operation("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD", ("X", "W", "Y")),
    **_operation(
        "OPERATION_CONVOLUTION_BACKWARD_DATA", "OPERATION_CONVOLUTION_BWD_DATA", ("W", "DY", "DX")
    ),
    **_operation(
        "OPERATION_CONVOLUTION_BACKWARD_FILTER",
        "OPERATION_CONVOLUTION_BWD_FILTER",
        ("X", "DY", "DW"),
    ),
    "OPERATIONGRAPH_HANDLE": _spec("OPERATIONGRAPH", "HANDLE"),
    "OPERATIONGRAPH_OPS": _spec("OPERATIONGRAPH", "BACKEND_DESCRIPTOR", ANY),
    "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT": _read_only("OPERATIONGRAPH", "INT64"),
    "ENGINEHEUR_OPERATION_GRAPH": _spec("ENGINEHEUR", "BACKEND_DESCRIPTOR", child="OPERATIONGRAPH"),
    "ENGINEHEUR_MODE": _spec("ENGINEHEUR", "HEUR_MODE"),
    "ENGINEHEUR_RESULTS": _read_only("ENGINEHEUR", "BACKEND_DESCRIPTOR", ANY, "ENGINECFG"),
    "ENGINEHEUR_SM_COUNT_TARGET": _spec("ENGINEHEUR", "INT32"),
    "ENGINEHEUR_DEVICEPROP": _spec("ENGINEHEUR", "BACKEND_DESCRIPTOR", child="DEVICEPROP"),
    "ENGINE_OPERATION_GRAPH": _spec("ENGINE", "BACKEND_DESCRIPTOR", child="OPERATIONGRAPH"),
    "ENGINE_GLOBAL_INDEX": _spec("ENGINE", "INT64"),
    "ENGINE_KNOB_INFO": _read_only("ENGINE", "BACKEND_DESCRIPTOR", ANY, "KNOB_INFO"),
    "ENGINE_NUMERICAL_NOTE": _read_only("ENGINE", "NUMERICAL_NOTE", ANY),
    "ENGINE_BEHAVIOR_NOTE": _read_only("ENGINE", "BEHAVIOR_NOTE", ANY),
    "ENGINE_SM_COUNT_TARGET": _spec("ENGINE", "INT32"),
    "ENGINE_DEVICEPROP": _spec("ENGINE", "BACKEND_DESCRIPTOR", child="DEVICEPROP"),
    "KNOB_INFO_TYPE": _not_users("KNOB_INFO", "KNOB_TYPE"),
    "KNOB_INFO_MAXIMUM_VALUE": _not_users("KNOB_INFO", "INT64"),
    "KNOB_INFO_MINIMUM_VALUE": _not_users("KNOB_INFO", "INT64"),
    "KNOB_INFO_STRIDE": _not_users("KNOB_INFO", "INT64"),
    "KNOB_CHOICE_KNOB_TYPE": _spec("KNOB_CHOICE", "KNOB_TYPE"),
    "KNOB_CHOICE_KNOB_VALUE": _spec("KNOB_CHOICE", "INT64"),
    "ENGINECFG_ENGINE": _spec("ENGINECFG", "BACKEND_DESCRIPTOR", child="ENGINE"),
    "ENGINECFG_KNOB_CHOICES": _spec("ENGINECFG", "BACKEND_DESCRIPTOR", ANY, child="KNOB_CHOICE"),
    "ENGINECFG_WORKSPACE_SIZE": _not_users("ENGINECFG", "INT64"),
    "ENGINECFG_SHARED_MEMORY_USED": _not_users("ENGINECFG", "INT64"),
    "EXECUTION_PLAN_HANDLE": _spec("EXECUTION_PLAN", "HANDLE"),
    "EXECUTION_PLAN_ENGINE_CONFIG": _spec(
        "EXECUTION_PLAN", "BACKEND_DESCRIPTOR", child="ENGINECFG"
    ),
    "EXECUTION_PLAN_WORKSPACE_SIZE": _not_users("EXECUTION_PLAN", "INT64"),
    "EXECUTION_PLAN_JSON_REPRESENTATION": _spec("EXECUTION_PLAN", "CHAR", ANY),
    "EXECUTION_PLAN_DEVICEPROP": _spec("EXECUTION_PLAN", "BACKEND_DESCRIPTOR", child="DEVICEPROP"),
    "VARIANT_PACK_UNIQUE_IDS": _spec("VARIANT_PACK", "INT64", ANY),
    "VARIANT_PACK_DATA_POINTERS": _spec("VARIANT_PACK", "VOID_PTR", ANY),
    "VARIANT_PACK_WORKSPACE": _spec("VARIANT_PACK", "VOID_PTR"),
    "DEVICEPROP_DEVICE_ID": _spec("DEVICEPROP", "INT32"),
    "DEVICEPROP_HANDLE": _spec("DEVICEPROP", "HANDLE"),
    "DEVICEPROP_JSON_REPRESENTATION": _spec("DEVICEPROP", "CHAR", ANY),
}
