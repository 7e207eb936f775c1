"""The --json formats' schemas: one per format, generated from its declaration, every field
described, the validator strict, and the command-line page (docs/cli.md) naming each format
with its version."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Annotated, NotRequired, TypedDict

import pytest

from tests.schema_validator import SchemaError, validate
from ucudnn.faces.schemas import SCHEMAS, VERSIONS, json_schema, schema_of
from ucudnn.planner import plan, tables
from ucudnn.planner.field_notes import SIGNED, Minimum, NullMeans, OneOf

CLI_PAGE = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()


def test_each_format_is_named_and_versioned_once() -> None:
    assert sorted(SCHEMAS) == [
        "ucudnn-bench", "ucudnn-demo", "ucudnn-info", "ucudnn-plan", "ucudnn-plot",
        "ucudnn-run", "ucudnn-timings", "ucudnn-tune",
    ]  # fmt: skip
    for name, schema in SCHEMAS.items():
        assert schema["properties"]["format"]["const"] == name
        version = schema["properties"]["version"]["const"]
        assert type(version) is int and version >= 1, (name, version)
    # The readers' versions are the schemas' versions.
    assert VERSIONS[plan.JSON_FORMAT] == plan.JSON_VERSION == 3
    assert VERSIONS[tables.JSON_FORMAT] == tables.JSON_VERSION == 1


class Toy(TypedDict):
    """a toy document"""

    count: Annotated[int, "how many"]
    share: Annotated[float, "a fraction", SIGNED]
    sizes: Annotated[list[Annotated[int, "samples", Minimum(1)]], "the sizes"]
    kind: Annotated[str, "which", OneOf(("a", "b"))]
    note: Annotated[str | None, "a note", NullMeans("none given")]
    part: Annotated[Part | None, NullMeans("no part")]
    later: NotRequired[Annotated[bool, "added later"]]


class Part(TypedDict):
    """a part of it"""

    name: Annotated[str, "its name"]


def test_a_declaration_becomes_its_schema() -> None:
    """Numbers are at least 0 unless they say otherwise, a field that may be null says what
    null means, an object without a description of its own is described by its docstring."""
    part = {
        "type": "object",
        "properties": {"name": {"description": "its name", "type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert schema_of(Toy) == {
        "description": "a toy document",
        "type": "object",
        "properties": {
            "count": {"description": "how many", "type": "integer", "minimum": 0},
            "share": {"description": "a fraction", "type": "number"},
            "sizes": {
                "description": "the sizes",
                "type": "array",
                "items": {"description": "samples", "type": "integer", "minimum": 1},
            },
            "kind": {"description": "which", "type": "string", "enum": ["a", "b"]},
            "note": {
                "description": "a note; null: none given",
                "anyOf": [{"type": "string"}, {"type": "null"}],
            },
            "part": {
                "description": "a part of it; null: no part",
                "anyOf": [part, {"type": "null"}],
            },
            "later": {"description": "added later", "type": "boolean"},
        },
        "required": ["count", "share", "sizes", "kind", "note", "part"],
        "additionalProperties": False,
    }


class Unexplained(TypedDict):
    """null without its meaning"""

    time_ms: Annotated[float | None, "a time, milliseconds"]


def test_a_field_that_may_be_null_must_say_what_null_means() -> None:
    with pytest.raises(TypeError, match="only where, NullMeans says why"):
        schema_of(Unexplained)


def subschemas(schema: dict, path: str = "$"):
    """Every schema inside `schema` with where it is."""
    yield path, schema
    for name, field in schema.get("properties", {}).items():
        yield from subschemas(field, f"{path}.{name}")
    if "items" in schema:
        yield from subschemas(schema["items"], f"{path}[]")
    for option in schema.get("anyOf", []):
        yield from subschemas(option, path)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_field_says_what_it_means(name: str) -> None:
    for path, schema in subschemas(SCHEMAS[name]):
        for field_name, field in schema.get("properties", {}).items():
            assert field.get("description"), f"{path}.{field_name}"
        if schema.get("type") == "object":
            assert schema["additionalProperties"] is False, path
            assert set(schema["required"]) <= set(schema["properties"]), path


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_units_are_in_the_names_of_quantities(name: str) -> None:
    """A field whose description speaks of bytes, milliseconds or seconds says so in its
    name; only the format's own parts and counts go without."""
    units = {"bytes": "_bytes", "milliseconds": "_ms", "seconds": "_s"}
    for _, schema in subschemas(SCHEMAS[name]):
        for field_name, field in schema.get("properties", {}).items():
            description = field["description"].split("; null")[0]
            for word, suffix in units.items():
                if re.search(rf"(, |^){word}$", description):
                    assert field_name.endswith(suffix), field_name


def test_json_schema_is_a_json_schema_document() -> None:
    document = json_schema("ucudnn-plan")
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["title"] == "ucudnn-plan" and document["type"] == "object"
    assert json.loads(json.dumps(document)) == document


PLOT = {
    "format": "ucudnn-plot",
    "version": 1,
    "layer": "conv1",
    "files": [{"kind": "breakdown", "path": "b.png"}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("layer"), r"^\$: the field 'layer' is missing$"),
        (lambda d: d.update(colour=1), r"^\$: the field 'colour' is not in the schema$"),
        (lambda d: d.update(version=2), r"^\$.version: must be 1, got 2$"),
        (lambda d: d.update(version=True), r"^\$.version: must be 1, got True$"),
        (lambda d: d.update(version=1.0), r"^\$.version: must be 1, got 1.0$"),
        (lambda d: d.update(layer=None), r"^\$.layer: must be of type string, got None$"),
        (lambda d: d["files"][0].update(kind="pie"), r"^\$.files\[0\].kind: must be one of"),
        (lambda d: d["files"].append("c.png"), r"^\$.files\[1\]: must be of type object"),
        (lambda d: d.update(format="ucudnn-pie"), r"^\$: not a document of one of the formats"),
    ],
)
def test_validate_says_where_a_document_differs(change, message: str) -> None:
    validate(PLOT)
    document = copy.deepcopy(PLOT)
    change(document)
    with pytest.raises(SchemaError, match=message):
        validate(document)


def plan_document() -> dict:
    table = tables.KernelTable("c", "forward", 2, [tables.Candidate(2, 0, 1.5, 0)])
    return plan.make_plan_wr(tables.TimingTables([table]), 0).to_dict()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("workspace_bytes", True, "must be of type integer, got True"),
        ("workspace_bytes", 9.5, "must be of type integer, got 9.5"),
        ("workspace_bytes", -1, "must be >= 0, got -1"),
        ("time_ms", float("nan"), "must be of type number, got nan"),
        ("time_ms", float("inf"), "must be of type number, got inf"),
        ("time_ms", "1.5", "must be of type number, got '1.5'"),
        ("speedup", False, "must be of type number, got False"),
    ],
)
def test_validate_knows_numbers_from_flags_texts_and_infinities(
    field: str, value: object, message: str
) -> None:
    document = plan_document()
    validate(document)
    document["totals"][field] = value
    with pytest.raises(SchemaError, match=rf"^\$.totals.{field}: .*{re.escape(message)}"):
        validate(document)


def test_null_only_where_a_value_may_be_unknown() -> None:
    document = plan_document()
    document["totals"]["speedup"] = None  # no baseline, or a plan of no time
    validate(document)
    document["totals"]["time_ms"] = None
    with pytest.raises(SchemaError, match=r"^\$.totals.time_ms: must be of type number"):
        validate(document)


@pytest.mark.parametrize("policy", ["powerOfTwo", "all", "undivided", [1, 8, 32]])
def test_policy_is_a_name_or_sizes(policy: object) -> None:
    validate({**plan_document(), "policy": policy})


@pytest.mark.parametrize("policy", ["sometimes", [0], 5, None, [1.5]])
def test_policy_is_nothing_else(policy: object) -> None:
    with pytest.raises(SchemaError, match=r"^\$.policy: "):
        validate({**plan_document(), "policy": policy})


def cli_page_section(title: str) -> str:
    match = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#|\Z)", CLI_PAGE, flags=re.M | re.S)
    assert match, title
    return match.group(1)


def test_the_cli_page_names_every_format_with_its_version() -> None:
    section = cli_page_section("Machine-readable output")
    rows = dict(re.findall(r"^\| `(ucudnn-[a-z]+)` \| (\d+) \|", section, flags=re.M))
    assert {name: int(version) for name, version in rows.items()} == VERSIONS
    assert "`ucudnn.faces.schemas`" in section


def test_the_cli_page_command_table_mentions_json_and_explain() -> None:
    section = cli_page_section("Command line")
    assert "--json" in section and "--explain" in section
