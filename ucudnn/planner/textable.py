"""Plain-text tables for reports: labels left, numbers right, a rule before the totals."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    first_numeric: int,
    total: Sequence[str] | None = None,
    text_columns: Collection[int] = (),
) -> list[str]:
    """Lines of a table whose columns from `first_numeric` on are right-aligned, but for the
    `text_columns` among them."""
    body = [list(header), *map(list, rows)] + ([list(total)] if total is not None else [])
    widths = [max(len(row[i]) for row in body) for i in range(len(header))]
    lines = []
    for n, row in enumerate(body):
        if total is not None and n == len(body) - 1:
            lines.append("  ".join("-" * w for w in widths))
        cells = [
            cell.rjust(width) if i >= first_numeric and i not in text_columns else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines
