"""How nictune prints a number, in the terminal and in reports alike."""

from __future__ import annotations

import math


def format_number(value: float | None) -> str:
    """A metric value with sensible precision: ``39.6``, ``7.347``, ``15,625``, ``0.00225``, ``3.48e-11``, ``-``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    mag = abs(value)
    if mag >= 1000:
        return f"{value:,.0f}"
    if mag >= 10:
        return f"{value:.1f}"
    if mag >= 0.01:
        return f"{value:.3f}"
    if mag >= 1e-4:
        return f"{value:.3g}"  # 0.00225, not 2.25e-03
    return f"{value:.2e}"
