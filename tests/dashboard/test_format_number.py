"""nictune's number formatter on the table of cases the dashboard's JavaScript port is also
tested on (tests/dashboard/test_browser.py evaluates js/format.js on the same file)."""

from __future__ import annotations

import pytest

from nictune.formatting import format_interval, format_number
from tests.dashboard.format_cases import decode, format_cases, interval_cases

CASES = format_cases()


@pytest.mark.parametrize("case", CASES, ids=[str(c["value"]) for c in CASES])
def test_format_number_prints_each_case_as_the_table_says(case: dict[str, object]) -> None:
    assert format_number(decode(case["value"])) == case["text"]


def test_the_table_covers_every_branch_and_the_ties() -> None:
    """Every rounding branch of format_number, and ties that Python rounds to even where a naive
    JavaScript port (toFixed) rounds up: the cases a port gets wrong first."""
    texts = {c["text"] for c in CASES}
    assert {"15,625", "39.6", "7.347", "0.00225", "3.48e-11", "-", "inf", "-inf", "0"} <= texts
    ties = {c["value"]: c["text"] for c in CASES if c["value"] in (0.0625, 10.25, 1000.5)}
    assert ties == {0.0625: "0.062", 10.25: "10.2", 1000.5: "1,000"}


def test_format_interval_prints_each_case_as_the_table_says() -> None:
    """One rounding of "mean ± half width" everywhere (the CLI printed ± 0.26 where the dashboard
    printed ± 0.2554): two significant digits for the half width, four for the mean."""
    cases = interval_cases()
    assert [format_interval(c["mean"], c["half"]) for c in cases] == [c["text"] for c in cases]
    assert {"39.6 ± 0.26", "3,166 ± 130", "0.00225 ± 0.00025", "1e-07 ± 3e-08"} <= {c["text"] for c in cases}
