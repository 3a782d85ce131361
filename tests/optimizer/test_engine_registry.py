"""The engine registry: an engine's name is listed and checked without importing its module,
which is imported (with NumPy or DEAP) the first time the engine itself is asked for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nictune.optimizer import BUILTIN_ENGINES, ENGINES
from nictune.optimizer._base import EngineRegistry


def test_a_name_is_listed_and_checked_without_importing_its_module() -> None:
    registry = EngineRegistry({"later": "nictune.optimizer.no_such_module"})
    assert "later" in registry and "other" not in registry
    assert list(registry) == ["later"] and len(registry) == 1
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        registry["later"]  # only now is the module imported
    assert registry.get("other") is None


def test_every_builtin_engine_loads_under_its_own_name_in_the_listed_order() -> None:
    assert list(ENGINES)[:len(BUILTIN_ENGINES)] == ["bayes", "ga", "nsga2", "ofat", "random"]
    for name in BUILTIN_ENGINES:
        assert ENGINES[name].name == name and name in ENGINES


def test_an_engine_registered_later_is_listed_after_the_others_and_can_be_removed() -> None:
    registry = EngineRegistry({"first": "nictune.optimizer.no_such_module"})
    registry["mine"] = ENGINES["random"]
    assert list(registry) == ["first", "mine"] and registry["mine"] is ENGINES["random"]
    del registry["mine"]
    assert list(registry) == ["first"]
    with pytest.raises(KeyError):
        del registry["mine"]


@pytest.mark.system
def test_the_cli_loads_without_numpy_deap_or_jinja() -> None:
    """Commands that run no engine and render no page (history, spaces, --help) start without
    them: they cost a CLI start about 0.15 s."""
    code = ("import sys\nimport nictune.cli.main\n"
            "print(sorted(m for m in ('numpy', 'deap', 'moocore', 'jinja2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
