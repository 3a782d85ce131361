"""Reading a user's YAML file: errors name the file, the line and the column, never its content.

A path given where a YAML file is expected may be any file (``--space /etc/shadow``); the
error must not show what is in it. Every loader of user YAML (spaces, pair files, workload
files) parses through :func:`parse_yaml`.
"""

from __future__ import annotations

from typing import Any

import yaml

from nictune.errors import InvalidInputError


def parse_yaml(text: str, source: str) -> Any:
    """``text`` parsed as YAML (safe loader).

    Raises:
        InvalidInputError: (field ``file``) not YAML: the message names ``source``, what the
            parser expected and where, and quotes nothing of the text.
    """
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = exc.problem or exc.context or "a syntax error"
        raise InvalidInputError(f"{source}: not valid YAML: {what}{where}", field="file",
                                allowed="a YAML file") from None
    except yaml.YAMLError:
        raise InvalidInputError(f"{source}: not valid YAML", field="file", allowed="a YAML file") from None


def not_a_mapping(source: str, data: Any, expected: str) -> InvalidInputError:
    """The error for a file that parsed to something other than a mapping (its type only)."""
    kind = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
    return InvalidInputError(f"{source}: the file is {kind}; expected {expected}", field="file",
                             allowed=expected)


__all__ = ["not_a_mapping", "parse_yaml"]
