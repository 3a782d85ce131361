"""Knob filters of ``GET /v1/history/trials`` (``?mtu=9000&rx_mode=timer``), validated.

A knob name must belong to a built-in space or to the space of a stored job in the
context; each value must be a value of that knob. The values are parsed by the knob
(``9k`` becomes 9216), so they match the canonical form the configurations are stored in.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nictune.errors import InvalidInputError, NictuneError
from nictune.search_spaces import Knob, SearchSpace, builtin_names, load_space, space_from_dict


@functools.cache
def _builtin_spaces() -> tuple[SearchSpace, ...]:
    return tuple(load_space(name) for name in builtin_names())


def _spaces(definitions: Iterable[Mapping[str, Any]]) -> list[SearchSpace]:
    spaces = list(_builtin_spaces())
    for definition in definitions:
        try:
            spaces.append(space_from_dict(dict(definition)))
        except NictuneError:
            continue  # a stored definition an older nictune accepted: its knobs are not filterable
    return spaces


def parse_knob_filters(raw: Mapping[str, Sequence[str]], definitions: Iterable[Mapping[str, Any]]
                       ) -> dict[str, list[Any]]:
    """Knob name -> the parsed values to match (any of them).

    Raises:
        InvalidInputError: unknown knob (field = the knob, allowed = known knobs), or a
            value that no space's knob of that name accepts (allowed = its range).
    """
    if not raw:
        return {}
    spaces = _spaces(definitions)
    known = sorted({name for space in spaces for name in space.knobs})
    out: dict[str, list[Any]] = {}
    for name, values in raw.items():
        knobs: list[Knob] = [space.knobs[name] for space in spaces if name in space.knobs]
        if not knobs:
            raise InvalidInputError(f"unknown knob {name!r} (not a query parameter of this endpoint either)",
                                    field=name, allowed=", ".join(known))
        parsed: list[Any] = []
        for value in values:
            accepted = []
            for knob in knobs:
                try:
                    accepted.append(knob.parse(value))
                except InvalidInputError:
                    continue
            if not accepted:
                raise InvalidInputError(f"knob {name!r}: value {value!r} is not allowed", field=name,
                                        allowed=knobs[0].allowed())
            parsed.extend(v for v in accepted if v not in parsed)
        out[name] = parsed
    return out
