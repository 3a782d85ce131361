"""Help pages name what a value is (TESTBED, N), never a Python type or a database bound."""

from __future__ import annotations

import re

import pytest
import typer

from nictune.cli.main import app, main


def _command_paths() -> list[list[str]]:
    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]
    for name, sub in getattr(root, "commands", {}).items():
        paths.append([name])
        paths += [[name, inner] for inner in getattr(sub, "commands", {})]
    return paths


def test_every_command_is_walked() -> None:
    paths = _command_paths()
    assert ["optimize"] in paths and ["history", "show"] in paths and ["spaces", "validate"] in paths


def _help(path: list[str], columns: int, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main([*path, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "nictune")
def test_help_has_no_type_noise(path: list[str], capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    page = _help(path, 200, capsys, monkeypatch)
    assert "Usage: nictune" in page
    noise = re.findall(r"<(?:str|int|float|bool|path|list\[[a-z]+\])>|2147483647", page)
    assert not noise, (path, noise)


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "nictune")
def test_help_at_80_columns_cuts_no_option_name_or_word(path: list[str], capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # "--max-requests-per-to…" in `serve --help`: an option nobody could type from the page.
    page = _help(path, 80, capsys, monkeypatch)
    cut = [line for line in page.splitlines() if "…" in line]
    assert not cut, (path, cut)
