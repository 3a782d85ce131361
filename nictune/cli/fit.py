"""Tables that fit a narrow terminal without cutting a word in the middle.

Rich shares what a narrow terminal lacks over the widest columns, down to about the same
width, then cuts or folds words: at 80 columns ``nictune history`` printed "complete" / "d"
and "sim:benso" / "n-40g", and the comparison with the stock profiles showed
"tuned-netwo…" for both TuneD profiles. Here each column gets at least its longest
unbreakable part (words break at spaces and after a hyphen, colon, slash, plus, comma,
underscore or equals sign), the rest of the room goes first to the columns that then fit
whole, and every cell is broken at those points to its column's width before Rich lays it
out. Where even the unbreakable parts do not fit, the widest columns give way first (only
their longest parts are folded), not every column alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A part that a line may end with: a run up to and including a hyphen, colon, slash, plus,
#: comma, underscore or equals sign, or what follows the last of them.
_PART = re.compile(r"[^-:/+,_=]*[-:/+,_=]|[^-:/+,_=]+")


def wrap(text: str, width: int) -> str:
    """``text`` broken at spaces and after the characters above so that no line is longer
    than ``width`` where its parts allow ("tuned-network-throughput (stock)" at 14:
    "tuned-network-", "throughput", "(stock)"); a part longer than ``width`` stays whole,
    and the line breaks already in ``text`` stay."""
    out: list[str] = []
    for given in text.split("\n"):
        line = ""
        for word in given.split():
            for i, part in enumerate(_PART.findall(word)):
                glue = " " if i == 0 and line else ""
                if line and len(line) + len(glue) + len(part) > width:
                    out.append(line)
                    line = part
                else:
                    line += glue + part
        out.append(line)
    return "\n".join(out)


def _least(text: str) -> int:
    return max((len(p) for word in text.split() for p in _PART.findall(word)), default=0)


def _most(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def fit_widths(columns: Sequence[Sequence[str]], room: int, *, squeeze: bool = False) -> list[int] | None:
    """Widths for columns of these cells (the header first in each) within ``room``
    characters of text in all: every column as wide as its widest line where that fits; else
    at least its longest unbreakable part, and what is left goes whole to the columns that
    need the least of it to fit unbroken, then shared out in proportion to what the others
    lack. When not even the unbreakable parts fit: ``None``, or with ``squeeze`` those widths
    with the widest cut down one character at a time until they fit (``None`` when ``room``
    leaves less than a character a column)."""
    least = [max((_least(c) for c in col), default=0) for col in columns]
    most = [max(lo, max((_most(c) for c in col), default=0)) for col, lo in zip(columns, least, strict=True)]
    if sum(most) <= room:
        return most
    if sum(least) > room:
        if not squeeze or room < len(columns):
            return None
        widths = list(least)
        while sum(widths) > room:
            widths[widths.index(max(widths))] -= 1
        return widths
    widths = list(least)
    left = room - sum(widths)
    for i in sorted(range(len(columns)), key=lambda i: most[i] - least[i]):
        if most[i] - widths[i] <= left:
            left -= most[i] - widths[i]
            widths[i] = most[i]
    lacking = [most[i] - widths[i] for i in range(len(columns))]
    total = sum(lacking)
    if left > 0 and total > 0:
        shares = [left * lack // total for lack in lacking]
        widths = [w + s for w, s in zip(widths, shares, strict=True)]
    return widths


def fitted(headers: Sequence[str], rows: Sequence[Sequence[str]], room: int, *,
           squeeze: bool = False) -> tuple[list[int | None], list[list[str]]]:
    """The widths (:func:`fit_widths`; ``None`` each when nothing fits) and the rows with
    every cell broken to its column's width (:func:`wrap`)."""
    columns = [[h, *(r[i] for r in rows)] for i, h in enumerate(headers)]
    widths = fit_widths(columns, room, squeeze=squeeze)
    if widths is None:
        return [None] * len(headers), [list(r) for r in rows]
    return list(widths), [[wrap(c, w) for c, w in zip(r, widths, strict=True)] for r in rows]


def bordered_room(width: int, columns: int, padding: int) -> int:
    """Characters of text a Rich table with vertical rules (one per column and one more)
    and ``padding`` spaces each side of a cell leaves in ``width`` columns."""
    return width - (2 * padding + 1) * columns - 1


def fitted_bordered(headers: Sequence[str], rows: Sequence[Sequence[str]],
                    width: int) -> tuple[list[int | None], list[list[str]], int]:
    """:func:`fitted` for a table with vertical rules in ``width`` columns: with a space of
    padding each side of a cell where that fits, else without padding and squeezed. Returns
    the widths, the rows and the padding."""
    widths, cells = fitted(headers, rows, bordered_room(width, len(headers), 1))
    if widths[0] is not None:
        return widths, cells, 1
    widths, cells = fitted(headers, rows, bordered_room(width, len(headers), 0), squeeze=True)
    return widths, cells, 0
