"""What a field of a JSON document declares besides its type and description (see
`ucudnn.planner.plan_formats` and `ucudnn.faces.formats`): a number's least value, a text's
values, what null stands for."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Minimum:
    """The least value of a number; a number without this note is at least 0."""

    value: int | None  # None: no least value


SIGNED = Minimum(None)


@dataclasses.dataclass(frozen=True)
class OneOf:
    """The values a text may take."""

    values: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class NullMeans:
    """What null stands for in a field whose type allows None; every such field says."""

    meaning: str
