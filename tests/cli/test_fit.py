"""Narrow-terminal tables (nictune.cli.fit): cells break at spaces, hyphens, colons and
slashes, never inside a word, and the room goes to the columns that then fit whole."""

from __future__ import annotations

from nictune.cli.fit import fit_widths, fitted, wrap


def test_wrap_breaks_after_hyphens_colons_and_slashes_and_at_spaces() -> None:
    assert wrap("tuned-network-throughput (stock)", 14) == "tuned-network-\nthroughput\n(stock)"
    assert wrap("sim:benson-40g", 8) == "sim:\nbenson-\n40g"
    assert wrap("39.6 ± 0.92 Gbit/s", 11) == "39.6 ± 0.92\nGbit/s"
    assert wrap("esnet (stock)", 14) == "esnet (stock)"
    assert wrap("x - y", 14) == "x - y"
    assert wrap("a-part_longer_than_the_width", 8) == "a-\npart_longer_than_the_width"  # kept whole
    assert wrap("throughput\nGbit/s", 40) == "throughput\nGbit/s"  # given line breaks stay


def test_widths_fit_whole_where_they_can_and_never_below_a_part() -> None:
    columns = [["job", "1"], ["state", "interrupted"], ["testbed", "sim:benson-40g"], ["result", "39.6 ± 0.92 Gbit/s"]]
    assert fit_widths(columns, 60) == [3, 11, 14, 18]  # room for everything
    narrow = fit_widths(columns, 36)
    assert narrow is not None and sum(narrow) <= 36
    assert narrow[:2] == [3, 11]  # short columns whole first
    assert narrow[2] >= len("benson-") and narrow[3] >= len("Gbit/s")  # nothing below its longest part
    assert fit_widths(columns, 20) is None  # not even the parts fit: Rich decides


def test_fitted_wraps_every_cell_to_its_column() -> None:
    widths, rows = fitted(["testbed", "result"], [["sim:benson-40g", "39.6 ± 0.92 Gbit/s"]], 22)
    assert sum(w for w in widths if w is not None) <= 22
    for cell, width in zip(rows[0], widths, strict=True):
        assert width is not None and all(len(line) <= width for line in cell.split("\n")), (cell, width)
    assert fitted(["a"], [["a-very-long-name"]], 2) == ([None], [["a-very-long-name"]])
