"""Our JSON documents carry a format name and a version; reading one checks both.

Errors name the source with a line and column: of the syntax error in malformed JSON, of an
object that repeats a key (json.loads would silently keep the last value), of an integer too
long for any value of ours, and of the document itself when it is not the kind asked for.
Every object read remembers its line (`line_of`), so that the code that checks its fields can
say where it is. `document_text` writes one.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import math
from collections.abc import Callable, Collection, Mapping

from ucudnn.core.checks import shown
from ucudnn.planner.files import decode, position

# Our documents hold counts and byte sizes, all below 2**64 (20 digits). A longer integer is a
# mistake, refused before int() reads it: int() is slow on long digit strings and refuses
# those past sys.get_int_max_str_digits() (640 at the least) with a message about Python.
MAX_DIGITS = 100


# json's value scanner: the value that starts at an index of the text, and the index past it.
_Scanner = Callable[[str, int], tuple[object, int]]


class JsonObject(dict[str, object]):
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


class _Refused(json.JSONDecodeError):
    """Well-formed JSON that no document of ours holds: a repeated key, a huge integer."""


class _LongInteger(ValueError):
    """Raised by `_integer`, which json calls without the position; `_locating` adds it."""


def _integer(digits: str) -> int:
    """json's parse_int, refusing more digits than MAX_DIGITS before converting them."""
    count = len(digits.removeprefix("-"))
    if count > MAX_DIGITS:
        raise _LongInteger(
            f"the integer has {count} digits, more than any value a document holds "
            f"(at most {MAX_DIGITS})"
        )
    return int(digits)


def _locating(scan_once: _Scanner) -> _Scanner:
    """json's value scanner, with a too-long integer reported where the value starts."""

    def scan(text: str, index: int) -> tuple[object, int]:
        try:
            return scan_once(text, index)
        except _LongInteger as exc:
            raise _Refused(str(exc), text, index) from None

    return scan


# The parsers below replace json.decoder.JSONObject and JSONArray, with their signatures;
# typeshed leaves those undocumented functions out.
def _parse_object(
    s_and_end: tuple[str, int], strict: bool, scan_once: _Scanner, *args: object
) -> tuple[JsonObject, int]:
    """json's object parser, with the object's line recorded and repeated keys refused."""
    text, start = s_and_end  # start is just past the "{"
    pairs: list[tuple[str, object]]
    pairs, end = json.decoder.JSONObject(  # type: ignore[attr-defined]
        s_and_end, strict, _locating(scan_once), *args
    )
    found = JsonObject(pairs)
    if len(found) < len(pairs):
        keys = [key for key, _ in pairs]
        repeated = next(key for n, key in enumerate(keys) if key in keys[:n])
        message = f"the key {shown(repeated)} appears twice in this object"
        raise _Refused(message, text, start - 1)
    found.text, found.start = text, start - 1
    return found, end


def _parse_array(s_and_end: tuple[str, int], scan_once: _Scanner) -> tuple[list[object], int]:
    array: tuple[list[object], int] = json.decoder.JSONArray(  # type: ignore[attr-defined]
        s_and_end, _locating(scan_once)
    )
    return array


def _decoder() -> json.JSONDecoder:
    # The pure-Python scanner is the one that lets the object and array parsers be replaced.
    decoder = json.JSONDecoder(object_pairs_hook=list, parse_int=_integer)
    decoder.parse_object = _parse_object  # type: ignore[attr-defined]
    decoder.parse_array = _parse_array  # type: ignore[attr-defined]
    scan_once: _Scanner = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    decoder.scan_once = _locating(scan_once)  # type: ignore[attr-defined]
    return decoder


def parse_json(text: str | bytes, source: str) -> object:
    """The value of a JSON text (bytes are UTF-8); ValueError at the line and column of what
    is wrong."""
    if isinstance(text, bytes):
        text = decode(text, source)
    if not text.strip():  # json would say "Expecting value" at line 1, column 1
        raise ValueError(f"{source}: empty, expected a JSON document")
    try:
        return _decoder().decode(text)
    except json.JSONDecodeError as exc:
        what = exc.msg if isinstance(exc, _Refused) else f"malformed JSON: {exc.msg}"
        raise ValueError(f"{source}, line {exc.lineno}, column {exc.colno}: {what}") from None
    except RecursionError:
        raise ValueError(f"{source}: JSON nested too deeply to read") from None


def read_document(
    text: str | bytes, kind: str, version: int | Collection[int], source: str = "<json>"
) -> dict[str, object]:
    """The parsed document, if it is a `kind` document of `version` (or of one of several
    versions); ValueError otherwise."""
    data = parse_json(text, source)
    where = f"{source}, {line_of(data) or 'line 1'}"
    if not isinstance(data, dict) or data.get("format") != kind:
        raise ValueError(f"{where}: not a {kind} document")
    versions = [version] if isinstance(version, int) else sorted(version)
    found = data.get("version")
    if type(found) is not int or found not in versions:
        *others, last = map(str, versions)
        expected = f"{', '.join(others)} or {last}" if others else last
        raise ValueError(
            f"{where}: {kind} version {shown(found)} is not supported (expected {expected})"
        )
    return data


def document_text(document: Mapping[str, object]) -> str:
    """`document` as JSON text. JSON has no infinity: a ratio too large for a float (a speed-up
    or samples per second over a time too small to divide by) is written as null, which the
    schemas give that meaning. NaN, which no document should hold, is still an error."""
    return json.dumps(_infinity_as_null(document), indent=2, allow_nan=False)


def _infinity_as_null(value: object) -> object:
    if isinstance(value, float) and math.isinf(value):
        return None
    if isinstance(value, Mapping):
        return {key: _infinity_as_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_infinity_as_null(item) for item in value]
    return value
