"""``nictune engines``: what --param accepts, without learning it from an error."""

from __future__ import annotations

import json

import pytest

from nictune.cli.main import main
from nictune.optimizer import ENGINES


def test_engines_list_names_every_engine_and_its_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(ENGINES)
    assert "n_init" in rows["bayes"]["params"] and rows["random"]["params"] == []
    assert rows["nsga2"]["summary"].startswith("NSGA-II (nsga2): multi-objective search")


def test_engines_show_gives_default_allowed_values_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines", "show", "ga", "--json"]) == 0
    params = {p["name"]: p for p in json.loads(capsys.readouterr().out)["params"]}
    assert params["cxpb"] == {"name": "cxpb", "default": 0.6, "allowed": "a number from 0 to 1",
                              "help": "probability a pair is crossed"}


def test_an_unknown_engine_names_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines", "show", "tpe"]) == 2
    assert "unknown engine 'tpe'; known engines: bayes, ga, nsga2, ofat, random" in capsys.readouterr().err
