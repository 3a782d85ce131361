"""How the CLI, the reports and the exports print a metric value."""

from __future__ import annotations

import math

import pytest

from nictune.formatting import format_number


@pytest.mark.parametrize(("value", "text"), [
    (39.6016, "39.6"), (7.3471, "7.347"), (15625.4, "15,625"), (0.0225, "0.022"), (0.002254, "0.00225"),
    (0.0001, "0.0001"), (3.48e-11, "3.48e-11"), (0, "0"), (0.0, "0"), (-0.002254, "-0.00225"),
    (None, "-"), (math.nan, "-"), (math.inf, "inf"), (-math.inf, "-inf"),
])
def test_a_value_gets_the_precision_it_needs(value: float | None, text: str) -> None:
    assert format_number(value) == text
