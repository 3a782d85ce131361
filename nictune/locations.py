"""Where a pydantic error is in the checked input, and what to tell a user about it.

pydantic names the place of an error by its ``loc`` (``("knobs", "rx_ring", "int", "high")``:
the tag of a discriminated union is one of its parts). :func:`locate` turns it into the
path a user reads (``knobs.rx_ring.high``), the line of the YAML node there, and the model
field it is (which knows its allowed values); :func:`translate` gives the error's message and
allowed values.

A validator tells its own message and allowed values with :func:`problem`; a validator that
finds several problems raises them together with :func:`raise_all`.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

#: The error type of :func:`problem`.
PROBLEM = "nictune"


class Checked(BaseModel):
    """Base of the models of user files: ``extra_hint`` is said after "unknown field 'x'"."""

    extra_hint: ClassVar[str] = ""


def problem(reason: str, allowed: str | None = None) -> PydanticCustomError:
    """An error a validator raises: ``reason`` is what is wrong, ``allowed`` what would do."""
    return PydanticCustomError(PROBLEM, "{reason}", {"reason": reason, "allowed": allowed})


def raise_all(title: str, found: Sequence[tuple[tuple[str | int, ...], PydanticCustomError, Any]]) -> None:
    """Raise every ``(loc, problem, input)`` of ``found`` at once (``loc`` relative to the
    validated value); nothing when ``found`` is empty."""
    if found:
        raise ValidationError.from_exception_data(
            title, [InitErrorDetails(type=err, loc=loc, input=value) for loc, err, value in found])


def relocated(exc: ValidationError, model: type[BaseModel], data: Any,
              prefix: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], PydanticCustomError, Any]]:
    """The errors of ``model`` on ``data`` as problems at ``prefix`` + their place, for a
    validator that checks part of its value against another model."""
    out = []
    for error in exc.errors():
        place = locate(model, data, None, error)
        reason, allowed = translate(error, place)
        out.append(((*prefix, *place.loc), problem(reason, allowed), error.get("input")))
    return out


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Located:
    """An error's place.

    Attributes:
        path: the field's path as a user reads it: ``knobs.rx_ring.high``, ``constraints[2]``.
        loc: ``path``'s parts (without union tags).
        line: the line (from 1) of the YAML node there (or of the nearest one that exists).
        owner: the model whose field (or unknown field) the error is at, if any.
        field: that field's name.
    """

    path: str
    loc: tuple[str | int, ...]
    line: int | None
    owner: type[BaseModel] | None
    field: str | None

    def allowed(self) -> str | None:
        """What the field accepts, when its model says (``json_schema_extra={"allowed": ...}``)."""
        if self.owner is None or self.field not in self.owner.model_fields:
            return None
        extra = self.owner.model_fields[self.field].json_schema_extra
        value = extra.get("allowed") if isinstance(extra, dict) else None
        return value if isinstance(value, str) else None


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp


def _tagged(tp: Any, tag: Any) -> type[BaseModel] | None:
    """The member of union ``tp`` whose discriminator is ``tag``."""
    if get_origin(tp) not in (Union, types.UnionType):
        return None
    for member in get_args(tp):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for info in member.model_fields.values():
                if get_origin(info.annotation) is Literal and tag in get_args(info.annotation):
                    return member
    return None


def _key(node: yaml.Node) -> Any:
    try:
        return yaml.SafeLoader("").construct_object(node, deep=True)
    except yaml.YAMLError:
        return node.value


def _match(keys: Sequence[Any], part: Any) -> int | None:
    """The index of the key ``part`` stands for (pydantic's ``loc`` holds ``True`` as ``1`` and
    may hold a number as text): the same value and type first, then the same text, then equal."""
    for same in (lambda k: k == part and type(k) is type(part), lambda k: str(k) == str(part), lambda k: k == part):
        for i, key in enumerate(keys):
            if same(key):
                return i
    return None


def _child(value: Any, node: yaml.Node | None, part: Any
           ) -> tuple[Any, Any, yaml.Node | None, yaml.Node | None]:
    """At ``part`` of ``value`` and ``node``: the key as the input has it, the value, the node,
    and the node that names it (the key, or the list item)."""
    key, child = part, None
    if isinstance(value, Mapping):
        i = _match(list(value), part)
        if i is not None:
            key = list(value)[i]
            child = value[key]
    elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        child = value[part]
    if isinstance(node, yaml.MappingNode):
        i = _match([_key(k) for k, _ in node.value], part)
        if i is not None:
            key_node, value_node = node.value[i]
            return key, child, value_node, key_node
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return key, child, node.value[part], node.value[part]
    return key, child, None, None


def locate(model: type[BaseModel], data: Any, root: yaml.Node | None, error: Mapping[str, Any]) -> Located:
    """Where ``error`` (one of pydantic's ``errors()``) is: see :class:`Located`."""
    loc = list(error.get("loc", ()))
    if str(error.get("type", "")).startswith("union_tag_"):  # the discriminator field itself
        loc.append(str((error.get("ctx") or {}).get("discriminator", "type")).strip("'"))
    tp: Any = model
    value, node = data, root
    line = root.start_mark.line + 1 if root is not None else None
    path, parts = "", []
    owner: type[BaseModel] | None = None
    name: str | None = None
    for part in loc:
        if part == "[key]":  # the key itself is at fault: same place
            continue
        tp = _unwrap(tp)
        member = _tagged(tp, part)
        if member is not None:
            tp = member
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            owner, name = tp, str(part)
            info = tp.model_fields.get(str(part))
            tp = info.annotation if info is not None else None
        else:
            owner, name = None, None
            args = get_args(tp)
            tp = args[-1] if get_origin(tp) in (dict, Mapping) and args else (
                args[0] if get_origin(tp) in (list, tuple, Sequence) and args else None)
        is_index = isinstance(value, list) and isinstance(part, int)
        key, value, node, named = _child(value, node, part)
        shown_key = str(key).lower() if isinstance(key, bool) else key
        path += f"[{part}]" if is_index else f"{'.' if path else ''}{shown_key}"
        parts.append(part)
        if named is not None:
            line = named.start_mark.line + 1
    return Located(path, tuple(parts), line, owner, name)


#: What pydantic's own error types ask for, when the field does not say.
_WANTED = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
           "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
           "bool_type": "true or false", "bool_parsing": "true or false", "string_type": "a string",
           "dict_type": "a mapping", "model_attributes_type": "a mapping", "model_type": "a mapping",
           "list_type": "a list", "tuple_type": "a list"}


def translate(error: Mapping[str, Any], place: Located) -> tuple[str, str | None]:
    """The message (what is wrong, without the place) and the allowed values of ``error``."""
    ctx = error.get("ctx") or {}
    kind = str(error.get("type", ""))
    if kind == PROBLEM:
        return str(ctx.get("reason", error.get("msg", ""))), ctx.get("allowed")
    allowed = place.allowed()
    if kind == "missing":
        return "is missing", allowed
    if kind == "extra_forbidden":
        fields = ", ".join(place.owner.model_fields) if place.owner is not None else None
        hint = getattr(place.owner, "extra_hint", "")
        return f"unknown field {place.field!r}" + (f" ({hint})" if hint else ""), fields
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = ", ".join(t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip())
        data = error.get("input")
        tag = data.get(place.loc[-1]) if isinstance(data, Mapping) and place.loc else None
        got = "is missing" if tag is None else f"is {shown(tag)}"
        return got, tags or None
    if kind in _WANTED:
        return f"must be {_WANTED[kind]}, not {shown(error.get('input'))}", allowed or _WANTED[kind]
    return str(error.get("msg", "invalid value")), allowed


__all__ = ["PROBLEM", "Checked", "Located", "locate", "problem", "raise_all", "relocated", "shown", "translate"]
