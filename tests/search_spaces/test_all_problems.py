"""Issue 32: a space file's problems are reported all at once, each with its file, line and
field path, and the allowed values; the first one is the error's field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nictune.cli.main import main
from nictune.errors import SpaceDefinitionError
from nictune.search_spaces import load_space, space_from_dict

# Three independent problems: a range upside down (line 6), an unknown family (line 12),
# constraints that are not a list (line 14).
THREE = """\
name: mine
knobs:
  rx_ring:
    type: int
    high: 64
    low: 4096
    default: 512
    target: rx
  gro:
    type: bool
    default: true
    family: netlink
    target: gro
constraints: 5
"""


def load(tmp_path: Path, text: str) -> SpaceDefinitionError:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    with pytest.raises(SpaceDefinitionError) as exc:
        load_space(str(path))
    return exc.value


def test_three_independent_problems_are_reported_with_their_lines(tmp_path: Path) -> None:
    error = load(tmp_path, THREE)
    path = tmp_path / "space.yaml"

    lines = str(error).splitlines()
    assert len(lines) == 3, str(error)
    assert lines[0].startswith(f"{path}:6: knobs.rx_ring.low: 4096 is above high (64); allowed: at most 64")
    assert lines[1].startswith(f"{path}:12: knobs.gro.family: 'netlink' is not an applier family; allowed: sysctl")
    assert lines[2].startswith(f"{path}:14: constraints: must be a list")
    assert [p.field for p in error.problems] == ["knobs.rx_ring.low", "knobs.gro.family", "constraints"]
    assert [p.message for p in error.problems] == lines
    assert (error.field, error.allowed) == ("knobs.rx_ring.low", "at most 64")


def test_problems_are_in_the_order_of_the_lines(tmp_path: Path) -> None:
    text = THREE.replace("constraints: 5\n", "") + "profiles:\n  default: {rx_ring: 512}\n"
    text = text.replace("name: mine", "name: Mine!")

    error = load(tmp_path, text)

    assert [(p.field, p.message.split(":")[1]) for p in error.problems] == [
        ("name", "1"), ("knobs.rx_ring.low", "6"), ("knobs.gro.family", "12"), ("profiles.default", "15")]


@pytest.mark.parametrize(("text", "line", "field"), [
    # A problem of a key: the key's line.
    (THREE.replace("    target: gro\n", "    target: gro\n    colour: red\n"), 14, "knobs.gro.colour"),
    # A missing field: the line of the mapping that lacks it.
    (THREE.replace("    default: true\n", ""), 9, "knobs.gro.default"),
    # A knob's own problem (neither target nor settings): the knob's line.
    (THREE.replace("    target: gro\n", ""), 9, "knobs.gro"),
    # A list item.
    (THREE.replace("constraints: 5", "constraints:\n  - rx_ring <= 8192\n  - 5"), 16, "constraints[1]"),
    # A setting of a value (a bool key): the setting's line.
    (THREE.replace("    target: gro\n", "    settings:\n      true: {gro: 1}\n      false: {'gro[x]': 0}\n"), 15,
     "knobs.gro.settings.false.gro[x]"),
])
def test_each_problem_has_its_line_and_path(tmp_path: Path, text: str, line: int, field: str) -> None:
    text = text.replace("    high: 64\n    low: 4096\n", "    high: 4096\n    low: 64\n").replace("netlink", "sysctl")
    text = text.replace("constraints: 5\n", "")

    error = load(tmp_path, text)

    assert [p.field for p in error.problems] == [field], str(error)
    assert str(error).startswith(f"{tmp_path / 'space.yaml'}:{line}: {field}: "), str(error)


def test_plain_data_has_paths_and_no_lines() -> None:
    definition: dict[str, Any] = {"name": "mine", "knobs": {
        "a": {"type": "int", "low": 1, "high": 2, "default": 3, "target": "x"},
        "b": {"type": "choice", "choices": ["x"], "default": "x", "target": "y", "when": {"c": 1}}}}

    with pytest.raises(SpaceDefinitionError) as exc:
        space_from_dict(definition)

    # `when` is checked once every knob is well-formed: b's unknown parent waits for a's default.
    assert str(exc.value) == "knobs.a.default: invalid value 3 (out of range); allowed: integers from 1 to 2"
    definition["knobs"]["a"]["default"] = 1
    with pytest.raises(SpaceDefinitionError) as exc:
        space_from_dict(definition)
    assert str(exc.value) == "knobs.b.when: refers to unknown knob 'c'; allowed: a"


def test_the_cli_prints_every_problem_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(THREE)

    code = main(["spaces", "validate", str(path)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 3 and lines[0].startswith(f"error: {path}:6: knobs.rx_ring.low:"), err
    assert lines[1].startswith(f"{path}:12: knobs.gro.family:") and lines[2].startswith(f"{path}:14: constraints:")
