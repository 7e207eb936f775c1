"""cuDNN graph-API engine configurations: their tags, and what their notes say about them.

An engine configuration is an engine's global index plus one choice per knob. Its tag is the
cuDNN frontend's plan name, ``eng62_k2=0_k13=1_k25=1``: ``eng`` and the index, then
``_k<knob type>=<value>`` per knob, knobs sorted by type ("eng7" has none). Knob values may be
negative (``k12=-1``). Pure Python: the planner keys candidates by these tags without cuDNN.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ucudnn.core.checks import integer, shown
from ucudnn.core.problem import DTYPES, MATH_TYPES, MAX_DIM

# The first cuDNN whose engine configurations say their workspace before a plan is built
# (ENGINECFG_WORKSPACE_SIZE), which measuring them needs.
MIN_ENGINES_CUDNN = 90200

# Our own note beside cuDNN's: the configuration does not build with beta = 1, so it cannot
# run the backward-filter parts after the first (they accumulate), only undivided.
BETA1_UNSUPPORTED = "BETA1_UNSUPPORTED"

# How much each math type lets cuDNN lower precision: FMA none, default and tensor-op TF32 for
# float32 inputs (tensor cores for half types), allow-conversion even float32 -> float16.
MATH_LICENCE = {"fma": 0, "default": 1, "tensor_op": 1, "tensor_op_allow_conversion": 2}

# Engine indices are the algorithm numbers of the planner's tables (32-bit, like cuDNN's
# dimensions); knob types are a C enum; knob values are CUDNN_TYPE_INT64.
_MAX_KNOB_TYPE = MAX_DIM
_MIN_KNOB_VALUE, _MAX_KNOB_VALUE = -(2**63), 2**63 - 1

# Digit counts are bounded so that a pasted megabyte of digits fails before int() reads it.
_TAG = re.compile(r"eng([0-9]{1,10})((?:_k[0-9]{1,10}=-?[0-9]{1,19})*)")
_KNOB = re.compile(r"_k([0-9]+)=(-?[0-9]+)")

_HALF_TYPES = ("float16", "bfloat16")


@dataclasses.dataclass(frozen=True, order=True)
class EngineConfig:
    """An engine's global index and its knob choices as (knob type, value), kept sorted by
    type (so equal configurations compare and hash alike); a knob type appears once."""

    index: int
    knobs: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        index = integer(self.index, "engine index", minimum=0, maximum=MAX_DIM)
        object.__setattr__(self, "index", index)
        if isinstance(self.knobs, str | bytes):
            raise TypeError(f"knobs must be (type, value) pairs, got {shown(self.knobs)}")
        knobs = []
        for pair in self.knobs:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"a knob is a (type, value) pair, got {shown(pair)}")
            knob = integer(pair[0], "knob type", minimum=0, maximum=_MAX_KNOB_TYPE)
            value = integer(
                pair[1], f"value of knob {knob}", minimum=_MIN_KNOB_VALUE, maximum=_MAX_KNOB_VALUE
            )
            knobs.append((knob, value))
        knobs.sort()
        types = [knob for knob, _ in knobs]
        twice = sorted({knob for knob in types if types.count(knob) > 1})
        if twice:
            raise ValueError(
                f"knob(s) {', '.join(map(str, twice))} chosen more than once in engine {index}"
            )
        object.__setattr__(self, "knobs", tuple(knobs))

    @property
    def tag(self) -> str:
        return f"eng{self.index}" + "".join(f"_k{knob}={value}" for knob, value in self.knobs)


def parse_tag(text: str) -> EngineConfig:
    """The configuration a tag names; knobs may come in any order. A ValueError names what is
    wrong with anything else (knobs chosen twice included)."""
    if not isinstance(text, str):
        raise TypeError(f"an engine tag must be text, got {shown(text)}")
    match = _TAG.fullmatch(text)
    if match is None:
        raise ValueError(
            f"engine tag {shown(text)} is not eng<index> followed by _k<knob>=<value> per knob "
            "(e.g. eng62_k2=0_k13=1)"
        )
    knobs = [(int(k), int(v)) for k, v in _KNOB.findall(match.group(2))]
    try:
        return EngineConfig(int(match.group(1)), tuple(knobs))
    except ValueError as exc:
        raise ValueError(f"engine tag {shown(text)}: {exc}") from None


def canonical_tag(text: str) -> str:
    """The tag of the configuration `text` names, knobs sorted: equal configurations, one tag."""
    return parse_tag(text).tag


def _check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {shown(dtype)}; expected one of {', '.join(DTYPES)}")
    return dtype


def math_type_of(dtype: str, notes: Iterable[str]) -> str:
    """The legacy math type whose licence a configuration with these numerical notes uses,
    for inputs of `dtype`: converting inputs or reducing in lower precision needs
    tensor_op_allow_conversion; tensor cores are TF32 for float32 (default math allows it),
    tensor-op math for half types; anything else is plain arithmetic."""
    dtype, notes = _check_dtype(dtype), set(notes)
    if notes & {"DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION"}:
        return "tensor_op_allow_conversion"
    if dtype == "float64":  # no tensor-core path loses float64 precision
        return "default"
    if "TENSOR_CORE" in notes:
        return "tensor_op" if dtype in _HALF_TYPES else "default"
    return "fma"


def deterministic_of(notes: Iterable[str]) -> bool:
    return "NONDETERMINISTIC" not in set(notes)


def refusal(notes: Iterable[str], dtype: str, math_type: str, deterministic: bool) -> str | None:
    """Why a configuration with these notes may not run a problem of `dtype` that asks for
    `math_type` (and for deterministic results if `deterministic`), or None if it may."""
    if math_type not in MATH_LICENCE:
        raise ValueError(
            f"unknown math_type {shown(math_type)}; expected one of {', '.join(MATH_TYPES)}"
        )
    notes = tuple(notes)
    needed = math_type_of(dtype, notes)
    if MATH_LICENCE[needed] > MATH_LICENCE[math_type]:
        return f"its numerical notes need math type {needed}, more than {math_type} allows"
    if deterministic and not deterministic_of(notes):
        return "it is NONDETERMINISTIC and deterministic results were asked for"
    return None
