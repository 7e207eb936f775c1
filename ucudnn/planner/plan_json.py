"""A plan's JSON document: its format and version, the fields read back (the others are
derived, and recomputed), and the reading of them; documents of older versions are brought up
to the current version's fields first."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from ucudnn.core.algorithms import check_legacy_algo
from ucudnn.core.checks import shown
from ucudnn.core.facts import DeviceFacts
from ucudnn.planner.candidate import CANDIDATE_FIELDS, Candidate
from ucudnn.planner.documents import read_document
from ucudnn.planner.files import FieldError, field_errors

JSON_FORMAT: Final = "ucudnn-plan"
# 2: micro_batches and algos are lists of numbers, not texts; offset and alignment are
# offset_bytes and alignment_bytes.
# 3: parts and baselines have an engine (a graph-API engine configuration's tag, or "" for a
# legacy algorithm), so an algo may be an engine index; schedules list engines beside algos.
# Versions 1 and 2 are still read, their parts as legacy algorithms.
JSON_VERSION: Final = 3
READ_VERSIONS = (1, 2, JSON_VERSION)

# The fields of a plan's JSON objects that are read back; the others are derived (times,
# texts, totals) and recomputed.
KERNEL_FIELDS = ("layer", "kernel", "batch", "parts", "baseline", "offset_bytes")
KERNEL_OPTIONAL = ("axis",)  # absent: the batch
KERNEL_DERIVED = (
    "micro_batches", "algos", "engines", "slabs", "time_ms", "workspace_bytes", "speedup",
)  # fmt: skip
# A part's or baseline's fields: all of the Candidate's, but the slab, written only where a
# run is cut into slabs (absent: 0, the whole volume).
_CANDIDATE_OPTIONAL = ("slab",)
_CANDIDATE_REQUIRED = tuple(f for f in CANDIDATE_FIELDS if f not in _CANDIDATE_OPTIONAL)
PLAN_FIELDS = (
    "mode", "limit_bytes", "policy", "kernels", "deterministic_only", "solver",
    "solver_status", "alignment_bytes", "device", "timings_source",
)  # fmt: skip
PLAN_DERIVED = ("format", "version", "totals", "explain")
# Fields that version 1 named without their unit.
_V1_NAMES = {"offset": "offset_bytes", "alignment": "alignment_bytes"}


def plan_document(text: str | bytes, source: str) -> dict[str, object]:
    """The object of a plan document (`source` names it in errors), in the current version's
    fields."""
    data = read_document(text, JSON_FORMAT, READ_VERSIONS, source)
    if data["version"] == 1:
        _rename_v1_fields(data)
    if data["version"] in (1, 2):
        _add_legacy_engines(data)
    return data


def check_fields(data: object, fields: Collection[str], derived: Collection[str] = ()) -> None:
    """`data` is a JSON object with every one of `fields` and nothing else but `derived`."""
    if not isinstance(data, Mapping):
        raise TypeError(f"expected an object, got {shown(data)}")
    missing = [f for f in fields if f not in data]
    if missing:
        raise FieldError(f"field {shown(missing[0])}", "is missing")
    unknown = [f for f in data if f not in fields and f not in derived]
    if unknown:
        raise FieldError(f"field {shown(unknown[0])}", f"is not one of {', '.join(fields)}")


def json_list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"must be a list, got {shown(value)}")
    return value


def read_candidate(data: object, place: str, kernel: str) -> Candidate:
    """A part or baseline of `kernel` read back; a legacy algorithm must be one of the
    kernel's, or every call of the kernel would fail."""
    with field_errors(place):
        check_fields(data, _CANDIDATE_REQUIRED, _CANDIDATE_OPTIONAL)
        candidate = Candidate(**data)  # type: ignore[arg-type]
        if not candidate.engine:
            with field_errors("field 'algo'"):
                check_legacy_algo(kernel, candidate.algo)
        return candidate


def read_device(data: object) -> DeviceFacts | None:
    return None if data is None else DeviceFacts.from_dict(data)  # type: ignore[arg-type]


def _rename_v1_fields(data: dict[str, object]) -> None:
    """A version 1 document's fields under their version 2 names, in place (its objects keep
    the lines they were read from). The texts version 1 derived are ignored as before."""
    kernels = data.get("kernels")
    objects = [data, *(kernels if isinstance(kernels, list) else [])]
    for item in objects:
        if isinstance(item, dict):
            for old, new in _V1_NAMES.items():
                if old in item and new not in item:
                    item[new] = item.pop(old)


def _add_legacy_engines(data: dict[str, object]) -> None:
    """Parts and baselines of a version 1 or 2 document, in place, as the legacy algorithms
    they are: engine "" (those versions had no engines)."""
    kernels = data.get("kernels")
    for kernel in kernels if isinstance(kernels, list) else []:
        if not isinstance(kernel, dict):
            continue
        parts = kernel.get("parts")
        for candidate in [*(parts if isinstance(parts, list) else []), kernel.get("baseline")]:
            if isinstance(candidate, dict):
                candidate.setdefault("engine", "")
