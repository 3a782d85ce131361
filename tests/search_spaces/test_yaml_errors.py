"""A file that is not a space (or pair) file: the error names the file, line and column and
never shows its content (``measure --space /etc/shadow`` echoed a line of it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nictune.errors import InvalidInputError
from nictune.measure.testbeds.pair_file import load_pair
from nictune.search_spaces import load_space

SECRET = "root:$6$s3cr3tHash:19000:0:99999:7:::\nuser:x:1\n"


@pytest.mark.parametrize("text", [SECRET, "knobs: [\n  s3cr3tHash: 1\n", "s3cr3tHash\n", "- s3cr3tHash\n"])
def test_a_bad_file_is_named_with_its_position_and_never_echoed(tmp_path: Path, text: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(text)
    for load in (load_space, load_pair):
        with pytest.raises(InvalidInputError) as err:
            load(str(path))
        message = f"{err.value} {err.value.allowed}"
        assert str(path) in message and "s3cr3tHash" not in message and "user:x" not in message, message


def test_the_position_is_the_parsers() -> None:
    from nictune.yamlfile import parse_yaml

    with pytest.raises(InvalidInputError) as err:
        parse_yaml("a: 1\nb: [1, 2\n", "x.yaml")
    assert str(err.value).startswith("x.yaml: not valid YAML: expected ',' or ']'") and "line 3, column 1" in str(
        err.value)
