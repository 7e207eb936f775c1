"""A document checked against its format's published JSON Schema (`ucudnn.faces.schemas`),
without a JSON Schema validator: the subset of draft 2020-12 those schemas use, strictly
(bool is no number, and JSON has no infinity or NaN). The tests check every document a
command prints with it."""

from __future__ import annotations

import math

from ucudnn.core.checks import shown
from ucudnn.faces.schemas import SCHEMAS, Schema


class SchemaError(ValueError):
    """A document does not match its format's schema; the message says where ("$.kernels[2]")."""


def validate(document: object) -> None:
    """Check `document` against the schema of the format and version it names."""
    if not isinstance(document, dict) or document.get("format") not in SCHEMAS:
        raise SchemaError(f"$: not a document of one of the formats {', '.join(SCHEMAS)}")
    _check(document, SCHEMAS[document["format"]], "$")


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _check(value: object, schema: Schema, path: str) -> None:
    if "anyOf" in schema:
        failures = []
        for option in schema["anyOf"]:  # type: ignore[attr-defined]
            try:
                return _check(value, option, path)
            except SchemaError as exc:
                failures.append(str(exc))
        raise SchemaError(" and ".join(failures))
    if "const" in schema and (type(value), value) != (type(schema["const"]), schema["const"]):
        raise SchemaError(f"{path}: must be {schema['const']!r}, got {shown(value)}")
    if "enum" in schema and value not in schema["enum"]:  # type: ignore[operator]
        raise SchemaError(f"{path}: must be one of {schema['enum']}, got {shown(value)}")
    kind = schema.get("type")
    if kind is not None:
        _check_type(value, str(kind), path)
    if "minimum" in schema and value < schema["minimum"]:  # type: ignore[operator]
        raise SchemaError(f"{path}: must be >= {schema['minimum']}, got {shown(value)}")
    if isinstance(value, list):
        for n, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{n}]")  # type: ignore[arg-type]
    if isinstance(value, dict):
        _check_object(value, schema, path)


def _check_type(value: object, kind: str, path: str) -> None:
    # bool is an int to Python, not a number to JSON; and JSON has no infinity or NaN.
    if (
        not isinstance(value, _TYPES[kind])
        or (isinstance(value, bool) and kind != "boolean")
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise SchemaError(f"{path}: must be of type {kind}, got {shown(value)}")


def _check_object(value: dict[object, object], schema: Schema, path: str) -> None:
    properties: dict[str, Schema] = schema["properties"]  # type: ignore[assignment]
    for name in schema["required"]:  # type: ignore[attr-defined]
        if name not in value:
            raise SchemaError(f"{path}: the field {name!r} is missing")
    for name, item in value.items():
        if name not in properties:
            raise SchemaError(f"{path}: the field {shown(name)} is not in the schema")
        _check(item, properties[name], f"{path}.{name}")
