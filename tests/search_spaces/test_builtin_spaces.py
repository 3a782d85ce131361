"""Issue 32: the built-in spaces load from their files exactly as before the loader moved to
pydantic models. ``data/builtin_spaces.json`` is the dump :func:`dump` made of every built-in
space before that change; regenerate it only for a deliberate change of a space file::

    python -m tests.search_spaces.test_builtin_spaces > tests/search_spaces/data/builtin_spaces.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nictune.search_spaces import SearchSpace, builtin_names, load_space, space_from_dict

EXPECTED = Path(__file__).parent / "data" / "builtin_spaces.json"


def dump(space: SearchSpace) -> dict[str, Any]:
    """Everything the loader makes of a space file, as plain data (``repr`` keeps the value
    types apart: ``1``, ``1.0``, ``True``)."""
    return {
        "name": space.name,
        "description": space.description,
        "testbed": space.testbed,
        "knobs": [repr(knob) for knob in space.knobs.values()],
        "constraints": [c.expression for c in space.constraints],
        "limits": repr(space.limits),
        "profiles": {name: repr(values) for name, values in space.profiles.items()},
        "profile_info": {name: repr(info) for name, info in space.profile_info.items()},
        "default": repr(space.default()),
        "size": space.size(),
    }


def dump_all() -> dict[str, Any]:
    return {name: dump(load_space(name)) for name in builtin_names()}


def test_every_built_in_space_loads_as_before() -> None:
    expected = json.loads(EXPECTED.read_text())
    actual = dump_all()

    assert sorted(actual) == sorted(expected)
    for name in expected:
        assert actual[name] == expected[name], name


@pytest.mark.parametrize("name", builtin_names())
def test_a_built_in_space_loads_again_from_its_definition(name: str) -> None:
    # A job stores the definition and rebuilds the space from it (space_from_dict).
    space = load_space(name)
    assert dump(space_from_dict(dict(space.definition))) == dump(space)


if __name__ == "__main__":
    print(json.dumps(dump_all(), indent=1, sort_keys=True))
