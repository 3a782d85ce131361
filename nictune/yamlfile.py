"""Reading a user's YAML file: errors name the file, the line and the column, never its content.

A path given where a YAML file is expected may be any file (``--space /etc/shadow``); the
error must not show what is in it. Every loader of user YAML (spaces, pair files, workload
files) parses through :func:`parse_yaml`.

A file checked against a pydantic model (:func:`validated`) gets every problem at once, one
a line, each with its place: ``space.yaml:12: knobs.rx_ring.high: ...; allowed: ...``. The
line comes from the YAML node tree (``yaml.compose``), the path from pydantic's ``loc``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from nictune.errors import InvalidInputError, Problem
from nictune.locations import Located, locate, translate

M = TypeVar("M", bound=BaseModel)


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


def _lines(text: str | None) -> yaml.Node | None:
    """The node tree of ``text`` (for line numbers), ``None`` without a text or when it does not compose."""
    if text is None:
        return None
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def problems(exc: ValidationError, model: type[BaseModel], data: Any, *, source: str | None = None,
             text: str | None = None) -> list[Problem]:
    """Every error of ``exc`` as a :class:`Problem`, in the order of the file's lines.

    Args:
        exc: what ``model`` said of ``data``.
        model: the model ``data`` was checked against (it knows each field's allowed values).
        data: the checked data (it tells a list index from a mapping key).
        source: the file (or what the data is), said first on every line; none for plain data.
        text: the file's YAML text, for the line numbers.
    """
    root = _lines(text)
    found: list[tuple[int, Located, str, str | None]] = []
    for error in exc.errors():
        place = locate(model, data, root, error)
        message, allowed = translate(error, place)
        found.append((place.line or 0, place, message, allowed))
    found.sort(key=lambda item: item[0])
    out = []
    for line, place, message, allowed in found:
        where = f"{source}:{line}: " if source and line else f"{source}: " if source else ""
        what = f"{place.path}: {message}" if place.path else message
        tail = f"; allowed: {allowed}" if allowed else ""
        out.append(Problem(field=place.path or None, message=f"{where}{what}{tail}", allowed=allowed))
    return out


def validated(model: type[M], data: Any, *, source: str | None = None, text: str | None = None,
              error: type[InvalidInputError] = InvalidInputError, context: Mapping[str, Any] | None = None) -> M:
    """``data`` checked against ``model``.

    Raises:
        InvalidInputError: (``error``) listing every problem, one a line (see :func:`problems`);
            its ``field`` and ``allowed`` are the first problem's.
    """
    try:
        return model.model_validate(data, context=dict(context or {}))
    except ValidationError as exc:
        raise invalid(problems(exc, model, data, source=source, text=text), error) from None


def invalid(found: Sequence[Problem], error: type[InvalidInputError] = InvalidInputError) -> InvalidInputError:
    """The one error that lists ``found``: the first problem's field and allowed values."""
    first = found[0]
    return error("\n".join(p.message for p in found), field=first.field, allowed=first.allowed, problems=found)


__all__ = ["invalid", "not_a_mapping", "parse_yaml", "problems", "validated"]
