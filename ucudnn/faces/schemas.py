"""The JSON Schema of each `ucudnn COMMAND --json` format, generated from its declaration in
`ucudnn.faces.formats`, so that any JSON Schema validator can check a document.

The schemas use a subset of draft 2020-12: type, enum, const, minimum, properties, required,
additionalProperties, items, anyOf, description. How a declaration becomes a schema:
docs/design/json-documents.md.
"""

from __future__ import annotations

import types
from typing import (
    Annotated,
    Literal,
    NotRequired,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from ucudnn.faces import formats
from ucudnn.planner.field_notes import Minimum, NullMeans, OneOf
from ucudnn.planner.plan_formats import PlanDocument, TimingsDocument

Schema = dict[str, object]
_Note = TypeVar("_Note", Minimum, NullMeans, OneOf)

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_TYPES: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def schema_of(declaration: type) -> Schema:
    """The JSON Schema of `declaration`, a TypedDict, described by its docstring."""
    return _field(declaration)


def _object(declaration: type) -> Schema:
    """An object with exactly the fields of `declaration`, a TypedDict, all of them present
    but those declared NotRequired."""
    # The hints keep NotRequired; __required_keys__ misses it in a string annotation (3.11).
    hints = get_type_hints(declaration, include_extras=True)
    return {
        "type": "object",
        "properties": {name: _field(hint) for name, hint in hints.items()},
        "required": [name for name, hint in hints.items() if get_origin(hint) is not NotRequired],
        "additionalProperties": False,
    }


def _field(hint: object) -> Schema:
    """The schema of a field or list item declared as `hint`, its description first: the text
    it is annotated with, else the docstring of the object it holds; and what null means."""
    if get_origin(hint) is NotRequired:
        (hint,) = get_args(hint)
    kind, notes = _parts(hint)
    options = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else (kind,)
    values = [option for option in options if option is not type(None)]
    null = _note(notes, NullMeans)
    if (null is None) != (len(values) == len(options)):
        raise TypeError(f"{hint}: a field may be None where, and only where, NullMeans says why")
    schemas = [_value(option, notes) for option in values]
    if null is not None:
        schemas.append({"type": "null"})
    schema: Schema = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    texts = [note for note in notes if isinstance(note, str)]
    if not texts and len(values) == 1 and is_typeddict(values[0]):
        texts = [_docstring(values[0])]
    if not texts:
        return schema
    description = texts[0] if null is None else f"{texts[0]}; null: {null.meaning}"
    return {"description": description, **schema}


def _docstring(declaration: object) -> str:
    """What an object means, from its class's docstring, on one line."""
    text = getattr(declaration, "__doc__", None)
    if not text:
        raise TypeError(f"{declaration}: a field holding it, or its class, says what it means")
    return " ".join(text.split())


def _value(kind: object, notes: list[object]) -> Schema:
    """The schema of one type a field may hold, bounded by the field's `notes` and its own."""
    kind, own_notes = _parts(kind)
    notes = own_notes + notes
    if get_origin(kind) is Literal:
        constants = get_args(kind)
        if len(constants) != 1:
            raise TypeError(f"{kind}: a choice of texts is str with OneOf; Literal, a constant")
        return {"const": constants[0]}
    if get_origin(kind) is list:
        (item,) = get_args(kind)
        return {"type": "array", "items": _field(item)}
    if is_typeddict(kind):
        return _object(cast(type, kind))
    if kind not in _TYPES:
        raise TypeError(f"{kind}: no JSON type for it")
    schema: Schema = {"type": _TYPES[kind]}
    one_of = _note(notes, OneOf)
    if one_of is not None:
        schema["enum"] = list(one_of.values)
    least = _note(notes, Minimum) or Minimum(0)
    if kind in (int, float) and least.value is not None:
        schema["minimum"] = least.value
    return schema


def _parts(hint: object) -> tuple[object, list[object]]:
    """The type `hint` annotates, and its annotations."""
    if get_origin(hint) is Annotated:
        kind, *notes = get_args(hint)
        return kind, notes
    return hint, []


def _note(notes: list[object], kind: type[_Note]) -> _Note | None:
    return next((note for note in notes if isinstance(note, kind)), None)


def _const(schema: Schema, field: str) -> object:
    properties = cast(dict[str, Schema], schema["properties"])
    return properties[field]["const"]


_DOCUMENTS = (
    formats.InfoDocument,
    formats.BenchDocument,
    PlanDocument,
    formats.RunDocument,
    formats.PlotDocument,
    formats.DemoDocument,
    formats.TuneDocument,
    TimingsDocument,
)
SCHEMAS: dict[str, Schema] = {
    str(_const(schema, "format")): schema for schema in map(schema_of, _DOCUMENTS)
}
VERSIONS = {name: cast(int, _const(schema, "version")) for name, schema in SCHEMAS.items()}


def json_schema(name: str) -> Schema:
    """The JSON Schema of the `name` format, for any JSON Schema validator."""
    return {"$schema": DRAFT, "title": name, **SCHEMAS[name]}
