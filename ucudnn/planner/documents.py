"""Our JSON documents carry a format name and a version; reading one checks both.

Errors name the source with a line and column: of the syntax error in malformed JSON, of an
object that repeats a key (json.loads would silently keep the last value), and of the
document itself when it is not the kind asked for. Every object read remembers its line
(`line_of`), so that the code that checks its fields can say where it is.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner

from ucudnn.planner.files import decode, position


class JsonObject(dict):
    """A JSON object that knows where it starts in its text."""

    text: str = ""
    start: int = 0

    @property
    def line(self) -> int:
        # Counted when asked (for an error), not for every object read.
        return position(self.text, self.start)[0]


def line_of(value: object) -> str:
    """ "line 12" for an object read by `read_document`, "" for anything else."""
    return f"line {value.line}" if isinstance(value, JsonObject) else ""


class _RepeatedKey(json.JSONDecodeError):
    pass


def _parse_object(s_and_end, *args):  # json.decoder.JSONObject's signature
    """json's object parser, with the object's line recorded and repeated keys refused."""
    text, start = s_and_end  # start is just past the "{"
    pairs, end = json.decoder.JSONObject(s_and_end, *args)
    found = JsonObject(pairs)
    if len(found) < len(pairs):
        keys = [key for key, _ in pairs]
        repeated = next(key for n, key in enumerate(keys) if key in keys[:n])
        raise _RepeatedKey(f"the key {repeated!r} appears twice in this object", text, start - 1)
    found.text, found.start = text, start - 1
    return found, end


def _decoder() -> json.JSONDecoder:
    # The pure-Python scanner is the one that lets the object parser be replaced.
    decoder = json.JSONDecoder(object_pairs_hook=list)
    decoder.parse_object = _parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder


def parse_json(text: str | bytes, source: str) -> object:
    """The value of a JSON text (bytes are UTF-8); ValueError at the line and column of what
    is wrong."""
    if isinstance(text, bytes):
        text = decode(text, source)
    try:
        return _decoder().decode(text)
    except json.JSONDecodeError as exc:
        what = exc.msg if isinstance(exc, _RepeatedKey) else f"malformed JSON: {exc.msg}"
        raise ValueError(f"{source}, line {exc.lineno}, column {exc.colno}: {what}") from None
    except RecursionError:
        raise ValueError(f"{source}: JSON nested too deeply to read") from None


def read_document(text: str | bytes, kind: str, version: int, source: str = "<json>") -> dict:
    """The parsed document, if it is a `kind` document of `version`; ValueError otherwise."""
    data = parse_json(text, source)
    where = f"{source}, {line_of(data) or 'line 1'}"
    if not isinstance(data, dict) or data.get("format") != kind:
        raise ValueError(f"{where}: not a {kind} document")
    found = data.get("version")
    if type(found) is not int or found != version:
        raise ValueError(f"{where}: {kind} version {found!r} is not supported (expected {version})")
    return data
