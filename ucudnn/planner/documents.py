"""Our JSON documents carry a format name and a version; reading one checks both."""

from __future__ import annotations

import json


def read_document(text: str, kind: str, version: int, source: str = "<json>") -> dict:
    """The parsed document, if it is a `kind` document of `version`; ValueError otherwise."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != kind:
        raise ValueError(f"{source}: not a {kind} document")
    if data.get("version") != version:
        raise ValueError(
            f"{source}: {kind} version {data.get('version')!r} is not supported "
            f"(expected {version})"
        )
    return data
