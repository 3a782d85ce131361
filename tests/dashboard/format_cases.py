"""The table of number-formatting cases shared by the CLI's formatter and the dashboard's
(``format_cases.json``): read here once for the Python test and the Chromium test alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CASES_FILE = Path(__file__).with_name("format_cases.json")
#: How the file spells the values JSON has no number for.
SPECIAL = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def format_cases() -> list[dict[str, Any]]:
    """Each case: ``value`` as stored (a number, null or "nan"/"inf"/"-inf") and the expected ``text``."""
    cases: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]
    return cases


def decode(value: Any) -> float | None:
    """A stored value as the number it stands for."""
    return SPECIAL[value] if isinstance(value, str) else value


def interval_cases() -> list[dict[str, Any]]:
    """Each case: ``mean``, ``half`` and the expected ``text`` of format_interval / formatInterval."""
    cases: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))["intervals"]
    return cases
