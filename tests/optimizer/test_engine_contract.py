"""The ask/tell contract, run over every registered engine."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nictune.errors import InvalidInputError
from nictune.optimizer import ENGINES, Engine, Score, make_engine
from nictune.search_spaces import Configuration, SearchSpace, load_space, space_from_dict

#: A space with what the built-ins lack: a float, a log-scaled wide int, nested conditions
#: and a constraint between two conditional knobs.
MIXED_SPACE: dict[str, Any] = {
    "name": "toy-mixed",
    "knobs": {
        "mode": {"type": "choice", "choices": ["a", "b", "c"], "default": "a", "target": "x.mode"},
        "level": {"type": "int", "low": 1, "high": 100, "default": 10, "target": "x.level",
                  "when": {"mode": ["b", "c"]}},
        "sub": {"type": "choice", "choices": ["p", "q"], "default": "p", "target": "x.sub",
                "when": {"mode": "c"}},
        "depth": {"type": "int", "low": 0, "high": 64, "step": 4, "default": 8,
                  "target": "x.depth", "when": {"sub": "q"}},
        "ratio": {"type": "float", "low": 0.001, "high": 10.0, "log": True, "default": 1.0,
                  "target": "x.ratio"},
        "big": {"type": "int", "low": 1, "high": 1_000_000, "log": True, "default": 1000,
                "target": "x.big"},
        "flag": {"type": "bool", "default": False, "target": "x.flag"},
    },
    "limits": {"big_max": 500_000},
    "constraints": ["big <= big_max", "depth <= level"],
}

SPACES = ["benson-40g", "linux-nic", "ixgbe-numa", "toy-mixed"]


def space_named(name: str) -> SearchSpace:
    return space_from_dict(MIXED_SPACE) if name == "toy-mixed" else load_space(name)


def start_of(space: SearchSpace) -> list[Configuration]:
    start = [space.default()]
    start += [space.profile(p) for p in sorted(space.profiles)]
    return start


def toy_score(config: Configuration) -> Score:
    """Deterministic, hash-derived scores, a third of them infeasible."""
    x = int(config.hash[:8], 16)
    if x % 3 == 0:
        return Score(False, float(x % 97), violation=(x % 11) / 10 + 0.1)
    return Score(True, float(x % 1009))


def run(engine: Engine, budget: int, batch: int) -> list[Configuration]:
    asked: list[Configuration] = []
    while len(asked) < budget and not engine.finished:
        configs = engine.ask(batch)
        assert len(configs) <= batch
        if not configs:
            break
        asked.extend(configs)
        for config in configs:
            engine.tell(config, toy_score(config))
    return asked


@pytest.fixture(params=sorted(ENGINES))
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class TestEngineContract:
    """Every engine in ENGINES honours the ask/tell contract."""

    @pytest.mark.parametrize("space_name", SPACES)
    @pytest.mark.slow
    def test_asked_configurations_are_valid_and_canonical(
        self, engine_name: str, space_name: str
    ) -> None:
        space = space_named(space_name)
        engine = make_engine(engine_name, space, seed=3, start=start_of(space))
        asked = run(engine, 120, 5)
        assert asked
        for config in asked:
            assert space.configuration(config.as_dict(), strict=True) == config
            assert set(config) == set(space.active(config))

    @pytest.mark.parametrize("space_name", SPACES)
    @pytest.mark.slow
    def test_no_configuration_is_asked_twice(self, engine_name: str, space_name: str) -> None:
        space = space_named(space_name)
        engine = make_engine(engine_name, space, seed=5, start=start_of(space))
        asked = run(engine, 200, 7)
        hashes = [c.hash for c in asked]
        assert len(hashes) == len(set(hashes))

    @pytest.mark.parametrize("space_name", ["benson-40g", "toy-mixed"])
    @pytest.mark.slow
    def test_same_seed_same_tells_same_asks(self, engine_name: str, space_name: str) -> None:
        space = space_named(space_name)
        first = [c.hash for c in run(make_engine(engine_name, space, seed=11,
                                                 start=start_of(space)), 80, 4)]
        again = [c.hash for c in run(make_engine(engine_name, space, seed=11,
                                                 start=start_of(space)), 80, 4)]
        assert first == again
        # Batch sizes do not change what is proposed, only how it is handed out.
        other_batch = [c.hash for c in run(make_engine(engine_name, space, seed=11,
                                                       start=start_of(space)), 80, 3)]
        assert other_batch[: len(first)] == first[: len(other_batch)]

    @pytest.mark.slow

    def test_different_seeds_explore_differently(self, engine_name: str) -> None:
        if engine_name == "ofat":
            pytest.skip("one-factor-at-a-time draws no random numbers")
        space = load_space("benson-40g")
        a = [c.hash for c in run(make_engine(engine_name, space, seed=1), 40, 4)]
        b = [c.hash for c in run(make_engine(engine_name, space, seed=2), 40, 4)]
        assert a != b

    def test_replay_through_a_fresh_engine(self, engine_name: str) -> None:
        """A job resumes by replaying stored trials; the fresh engine then continues alike."""
        space = load_space("benson-40g")
        original = make_engine(engine_name, space, seed=8, start=start_of(space))
        batches = []
        for _ in range(6):
            batch = original.ask(5)
            batches.append(batch)
            for config in batch:
                original.tell(config, toy_score(config))
        resumed = make_engine(engine_name, space, seed=8, start=start_of(space))
        for batch in batches:
            assert resumed.ask(len(batch)) == batch
            for config in reversed(batch):  # the order of tells inside a batch is free
                resumed.tell(config, toy_score(config))
        assert resumed.ask(5) == original.ask(5)
        assert resumed.describe_state() == original.describe_state()

    @pytest.mark.parametrize("space_name", ["benson-40g", "linux-nic", "ixgbe-numa"])
    def test_start_configurations_come_first(self, engine_name: str, space_name: str) -> None:
        space = load_space(space_name)
        start = start_of(space)
        engine = make_engine(engine_name, space, seed=0, start=start)
        first = engine.ask(len(start) + 3)
        assert first[: len(start)] == start

    def test_small_space_is_exhausted_and_finishes(self, engine_name: str) -> None:
        space = load_space("ixgbe-numa")  # 8 configurations
        engine = make_engine(engine_name, space, seed=0, start=[space.default()])
        asked = run(engine, 100, 3)
        assert engine.finished
        assert engine.ask(4) == []
        assert len({c.hash for c in asked}) == len(asked) <= 8
        if engine_name == "random":
            assert len(asked) == 8

    @pytest.mark.slow

    def test_repeated_and_unasked_tells_are_harmless(self, engine_name: str) -> None:
        space = load_space("benson-40g")
        engine = make_engine(engine_name, space, seed=4)
        outsider = space.configuration({"mtu": 4000, "governor": "performance"})
        engine.tell(outsider, Score(True, -5.0))
        batch = engine.ask(6)
        for config in batch:
            engine.tell(config, Score(True, 1.0))
            engine.tell(config, Score(True, 99.0))  # ignored: the first tell counts
        best = engine.best()
        assert best is not None and best[1] == Score(True, 1.0)
        asked = batch + run(engine, 150, 6)
        assert outsider not in asked

    @pytest.mark.slow

    def test_best_is_the_best_told(self, engine_name: str) -> None:
        space = load_space("benson-40g")
        engine = make_engine(engine_name, space, seed=2)
        assert engine.best() is None
        asked = run(engine, 60, 6)
        best = engine.best()
        assert best is not None
        assert best[1] == max(toy_score(c) for c in asked)

    def test_describe_state_is_json(self, engine_name: str) -> None:
        space = load_space("benson-40g")
        engine = make_engine(engine_name, space, seed=2, start=[space.default()])
        engine.ask(3)
        engine.tell(space.default(), Score.failed())
        state = engine.describe_state()
        json.dumps(state, allow_nan=False)
        assert state["engine"] == engine_name and state["told"] == 1

    def test_batch_size_must_be_positive(self, engine_name: str) -> None:
        engine = make_engine(engine_name, load_space("ixgbe-numa"), seed=0)
        with pytest.raises(ValueError):
            engine.ask(0)

    def test_unknown_parameter_is_rejected(self, engine_name: str) -> None:
        with pytest.raises(InvalidInputError) as info:
            make_engine(engine_name, load_space("ixgbe-numa"), seed=0, params={"bogus": 1})
        assert info.value.field == "engine_params.bogus"

    def test_start_configuration_from_another_space_is_rejected(self, engine_name: str) -> None:
        other = load_space("benson-40g").default()
        with pytest.raises(InvalidInputError):
            make_engine(engine_name, load_space("ixgbe-numa"), seed=0, start=[other])


def test_unknown_engine_names_field_and_allowed() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_engine("simulated-annealing", load_space("ixgbe-numa"), seed=0)
    assert info.value.field == "engine"
    for name in ENGINES:
        assert name in (info.value.allowed or "")


def test_registry_holds_the_engines() -> None:
    assert {"ga", "random", "ofat"} <= set(ENGINES)
    for name, cls in ENGINES.items():
        assert cls.name == name


# ------------------------------------------------------------------ import hygiene
OPTIMIZER_DIR = Path(__file__).resolve().parents[2] / "nictune" / "optimizer"
FORBIDDEN = {"sqlalchemy", "subprocess", "deap"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_optimizer_modules_import_no_forbidden_packages() -> None:
    modules = sorted(OPTIMIZER_DIR.glob("*.py"))
    assert len(modules) >= 6
    for path in modules:
        forbidden = imported_roots(path) & FORBIDDEN
        if path.name == "deap_adapter.py":
            forbidden -= {"deap"}  # the one module allowed to touch DEAP
        assert not forbidden, f"{path.name} imports {forbidden}"


@pytest.mark.system
def test_importing_the_engines_loads_no_database_or_process_modules() -> None:
    code = ("import sys, nictune.optimizer; "
            "print(sorted(m for m in ('sqlalchemy', 'subprocess') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"
