"""What the machine must offer the tests, and what happens when it does not.

Locally a missing service (PostgreSQL, Redis, Chromium) skips the tests that need it;
under CI (``$CI`` set) it fails them, because CI has to prove every component.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether ``$CI`` is set to something true."""
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def unavailable(reason: str) -> NoReturn:
    """Skip the test for ``reason``, or fail it under CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so these tests must run)")
    pytest.skip(reason)
