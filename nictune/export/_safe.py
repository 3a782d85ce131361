"""Strict checks on everything an export writes into a file a host will execute or load.

A search space is user input (a YAML file), and so is a snapshot read back from the
database, so nothing from either reaches an exported file unchecked. Values must be
integers or words matching :data:`TOKEN_RE`; the shell script also single-quotes them,
which is safe precisely because a checked value cannot contain a quote. Free text (testbed
names, gains) only ever goes into comments, flattened to one printable line.
"""

from __future__ import annotations

import re
from typing import Any

from nictune.errors import InvalidInputError

TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
INT_RE = re.compile(r"^-?[0-9]{1,20}$")
DEVICE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
SYSCTL_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[A-Za-z0-9_-]+)+$")
FEATURE_RE = re.compile(r"^[a-z][a-z0-9-]{1,63}$")
SYSFS_RE = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$")
MODULE_RE = re.compile(r"^[a-z0-9_]{1,56}$")
CPU_KEY_RE = re.compile(r"^cpu[0-9]{1,4}$")
#: A TuneD profile name as TuneD itself accepts one (its Loader.safe_name), length-capped.
PROFILE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

VALUE_ALLOWED = "an integer or a word matching ^[A-Za-z0-9_.:-]+$"


def refuse(what: str, value: Any, allowed: str) -> InvalidInputError:
    """The error for a value that may not be exported."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidInputError(f"{what}: {shown} cannot be exported; allowed: {allowed}", field=what,
                             allowed=allowed)


def token(what: str, value: Any) -> str:
    """An int (not a bool) as decimal text, or a string matching :data:`TOKEN_RE`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and TOKEN_RE.match(value):
        return value
    raise refuse(what, value, VALUE_ALLOWED)


def integer(what: str, value: Any, lo: int = 0, hi: int = 2**63 - 1) -> str:
    """An integer in ``[lo, hi]`` (a true int, or its decimal text) as decimal text."""
    if isinstance(value, str) and INT_RE.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise refuse(what, value, f"an integer from {lo} to {hi}")
    return str(value)


def on_off(what: str, value: Any) -> str:
    """``True``/``False``/``"on"``/``"off"`` as ``on``/``off``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in ("on", "off"):
        return str(value)
    raise refuse(what, value, "on or off (true/false)")


def device(what: str, value: Any) -> str:
    """An interface name."""
    if isinstance(value, str) and DEVICE_RE.match(value) and value not in (".", ".."):
        return value
    raise refuse(what, value, "an interface name matching ^[A-Za-z0-9_.-]{1,15}$")


def matching(what: str, value: Any, pattern: re.Pattern[str], allowed: str) -> str:
    """A string matching ``pattern`` (and no ``..`` path component)."""
    if isinstance(value, str) and pattern.match(value) and ".." not in value.split("/"):
        return value
    raise refuse(what, value, allowed)


def one_of(what: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """One of ``choices``."""
    if isinstance(value, str) and value in choices:
        return value
    raise refuse(what, value, ", ".join(choices))


def tuned_profiles(names: list[str]) -> list[str]:
    """TuneD profiles to include, each a name TuneD accepts; at most three.

    Raises:
        InvalidInputError: (field ``include``) a name TuneD would refuse, or more than three.
    """
    if len(names) > 3:
        raise refuse("include", names, "at most three TuneD profile names")
    return [matching("include", n, PROFILE_NAME_RE,
                     "a TuneD profile name matching ^[A-Za-z0-9_.-]{1,64}$ (e.g. network-throughput)")
            for n in names]


def comment(text: Any) -> str:
    """``text`` as one line of printable ASCII, safe after ``#`` in a shell or INI file."""
    flat = " ".join(str(text).split())
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in flat)


def shell_quote(checked: str) -> str:
    """A value already checked by this module, single-quoted for ``sh``."""
    if "'" in checked or not (TOKEN_RE.match(checked) or INT_RE.match(checked) or DEVICE_RE.match(checked)):
        raise refuse("shell value", checked, VALUE_ALLOWED)
    return f"'{checked}'"


__all__ = [
    "CPU_KEY_RE",
    "FEATURE_RE",
    "MODULE_RE",
    "PROFILE_NAME_RE",
    "SYSCTL_KEY_RE",
    "SYSFS_RE",
    "TOKEN_RE",
    "comment",
    "device",
    "integer",
    "matching",
    "on_off",
    "one_of",
    "refuse",
    "shell_quote",
    "token",
    "tuned_profiles",
]
