"""How nictune prints a number, in the terminal and in reports alike."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


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


def _significant(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits, whole numbers beyond them (``3,166``, not ``3.2e+03``)."""
    if math.isfinite(x) and abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def format_interval(mean: float, half_width: float) -> str:
    """A mean and the half width of its interval: ``39.48 ± 1.3``, ``3,166 ± 130``.

    The half width keeps two significant digits (more would claim a precision the repeats do
    not have) and the mean four. The CLI, the report and the dashboard (``js/format.js``
    ``formatInterval``) print every interval this way.
    """
    return f"{_significant(mean, 4)} ± {_significant(half_width, 2)}"


def changed_text(config: Mapping[str, Any], default: Mapping[str, Any]) -> str:
    """A configuration by what it changed from ``default``: ``mtu=9000 rx_ring=4096`` in the
    configuration's order (a knob the default has and it lacks: ``name=(inactive)``);
    ``(default)`` when it changed nothing."""
    parts = [f"{k}={v}" for k, v in config.items() if default.get(k, object()) != v]
    parts += [f"{k}=(inactive)" for k in default if k not in config]
    return " ".join(parts) or "(default)"
