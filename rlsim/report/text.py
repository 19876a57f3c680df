"""Plain-text tables for the terminal.

Owns aligning a table of strings: first column left, the rest right, a rule under the
header row.
"""

from __future__ import annotations


def aligned(table: list[list[str]]) -> str:
    """`table[0]` is the header; every row has the same number of cells."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
