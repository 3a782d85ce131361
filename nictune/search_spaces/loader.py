"""Reading search spaces from YAML (built-in package data or a user's file) or plain data.

A definition is checked against :class:`~nictune.search_spaces.schema.SpaceFile`, which
reports every problem at once, one a line with its place:
``my.yaml:12: knobs.poll_usecs.when: refers to unknown knob 'rx_mod'; allowed: ...``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from nictune.errors import InvalidInputError, SpaceDefinitionError, UnknownNameError
from nictune.search_spaces.schema import SpaceFile
from nictune.search_spaces.space import SearchSpace
from nictune.yamlfile import not_a_mapping, parse_yaml, validated


def _fail(msg: str, field: str | None = None, allowed: str | None = None) -> SpaceDefinitionError:
    """A definition error. The allowed values go into the message too: the CLI prints only it."""
    if allowed and "allowed:" not in msg:
        msg = f"{msg}; allowed: {allowed}"
    return SpaceDefinitionError(msg, field=field, allowed=allowed)


def builtin_names() -> list[str]:
    """Names of the spaces shipped with nictune."""
    folder = resources.files("nictune.search_spaces") / "builtin"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_space(name_or_path: str) -> SearchSpace:
    """A built-in space by name, or a space from a YAML/JSON file path.

    Raises:
        UnknownNameError: neither a built-in name nor an existing file.
        SpaceDefinitionError: the definition is malformed.
    """
    if name_or_path in builtin_names():
        text = (resources.files("nictune.search_spaces") / "builtin" / f"{name_or_path}.yaml").read_text()
        return space_from_yaml(text, source=f"built-in space {name_or_path!r}")
    path = Path(name_or_path)
    if path.is_dir():
        raise _fail(f"{path} is a directory, not a space file", field="space",
                    allowed=f"a built-in space ({', '.join(builtin_names())}) or a YAML or JSON file")
    if path.is_file():
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise _fail(f"{path}: cannot read ({exc.strerror or exc})", field="file",
                        allowed="a readable YAML or JSON file") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(f"{path}: not a UTF-8 text file", field="file",
                        allowed="a YAML or JSON text file in UTF-8") from None
        return space_from_yaml(text, source=str(path))
    raise UnknownNameError("space", name_or_path, builtin_names())


def space_from_yaml(text: str, source: str = "space") -> SearchSpace:
    """A space from the YAML (or JSON) ``text`` of a file; ``source`` names it in errors.

    Raises:
        SpaceDefinitionError: not YAML, or listing every problem of the definition, each as
            ``SOURCE:LINE: FIELD: what is wrong; allowed: ...``.
    """
    try:
        data = parse_yaml(text, source)
    except InvalidInputError as exc:
        raise _fail(str(exc), field=exc.field, allowed=exc.allowed) from None
    if not isinstance(data, dict):
        bad = not_a_mapping(source, data, "a mapping with 'name' and 'knobs'")
        raise _fail(str(bad), field=bad.field)
    return _space(data, source, text)


def space_from_dict(data: dict[str, Any]) -> SearchSpace:
    """Build and validate a space from its plain-data definition.

    Raises:
        SpaceDefinitionError: listing every problem, each with the path of its field.
    """
    return _space(data)


def _space(data: Any, source: str | None = None, text: str | None = None) -> SearchSpace:
    space = validated(SpaceFile, data, source=source, text=text, error=SpaceDefinitionError).space()
    space.definition = dict(data)
    return space
