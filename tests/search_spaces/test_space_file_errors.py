"""Bad space files give one readable InvalidInputError naming the field and the allowed values."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from nictune.errors import InvalidInputError
from nictune.search_spaces import load_space

Mutation = Callable[[dict[str, Any]], None]


def _base() -> dict[str, Any]:
    text = (resources.files("nictune.search_spaces") / "builtin" / "linux-nic.yaml").read_text()
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _knob(name: str, **fields: Any) -> Mutation:
    return lambda d: d["knobs"][name].update(fields)


def _top(**fields: Any) -> Mutation:
    return lambda d: d.update(fields)


def _add_profile(name: str, values: dict[str, Any]) -> Mutation:
    return lambda d: d["profiles"].update({name: values})


def _write(tmp_path: Path, mutate: Mutation) -> Path:
    data = copy.deepcopy(_base())
    mutate(data)
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# (id, mutation, expected field (its path), words the message must contain, words it must not contain)
CASES: list[tuple[str, Mutation, str, list[str], list[str]]] = [
    ("constraints-int", _top(constraints=5), "constraints",
     ["constraints: must be a list", "'rx_ring <= ring_max'"], ["not iterable"]),
    ("constraints-string", _top(constraints="rx_ring <= 1"), "constraints",
     ["constraints: must be a list", "'rx_ring <= 1'"], ["constraint 'r'"]),
    ("constraints-item-not-string", _top(constraints=[5]), "constraints[0]",
     ["constraints[0]:", "not a comparison"], []),
    ("family-unknown", _knob("rx_ring", family="nope"), "knobs.rx_ring.family",
     ["knobs.rx_ring.family:", "'nope'", "allowed:", "sysctl", "ethtool_rings", "ip_link"], []),
    ("type-null", _knob("rx_ring", type=None), "knobs.rx_ring.type",
     ["knobs.rx_ring.type: is missing", "allowed: int, float, choice, bool"], []),
    ("type-empty", _knob("rx_ring", type=""), "knobs.rx_ring.type",
     ["knobs.rx_ring.type:", "allowed: int, float, choice, bool"], []),
    ("type-list", _knob("rx_ring", type=["int"]), "knobs.rx_ring.type",
     ["knobs.rx_ring.type:", "allowed: int, float, choice, bool"], ["unhashable"]),
    ("default-knob-named-once", _knob("pause", default="maybe"), "knobs.pause.default",
     ["knobs.pause.default:", "'maybe'", "allowed: true or false"], ["knob 'pause'"]),
    ("when-self", _knob("poll_usecs", when={"poll_usecs": 16}), "knobs.poll_usecs.when",
     ["knobs.poll_usecs.when:", "cannot depend on itself"], ["unknown knob"]),
    ("when-null", _knob("poll_usecs", when=None), "knobs.poll_usecs.when",
     ["knobs.poll_usecs.when:", "must be one 'parent: value'"], []),
    ("when-no-values", _knob("poll_usecs", when={"rx_mode": []}), "knobs.poll_usecs.when",
     ["knobs.poll_usecs.when:", "rx_mode", "no values given", "timer"], []),
    ("profile-default", _add_profile("default", {"rx_ring": 512}), "profiles.default",
     ["profiles.default:", "reserved"], []),
    ("power_of_two-string", _knob("rx_ring", power_of_two="yes"), "knobs.rx_ring.power_of_two",
     ["knobs.rx_ring.power_of_two:", "true or false", "'yes'"], []),
    ("log-string", _knob("rx_ring", log="no"), "knobs.rx_ring.log",
     ["knobs.rx_ring.log:", "true or false", "'no'"], []),
    ("float-log-string", lambda d: d["knobs"].update(
        rate={"type": "float", "low": 0.5, "high": 2.0, "default": 1.0, "target": "x", "log": 1}),
     "knobs.rate.log", ["knobs.rate.log:", "true or false"], []),
    ("float-bound-nan", lambda d: d["knobs"].update(
        rate={"type": "float", "low": float("nan"), "high": 2.0, "default": 1.0, "target": "x"}),
     "knobs.rate.low", ["knobs.rate.low:", "finite"], []),
    ("step-bool", _knob("rx_ring", power_of_two=False, step=True), "knobs.rx_ring.step",
     ["knobs.rx_ring.step:", "an integer from 1 to"], []),
    ("target-bad-index", _knob("rx_ring", target="rx[x]"), "knobs.rx_ring.target",
     ["knobs.rx_ring.target:", "index"], ["invalid literal"]),
    ("settings-target-bad-index", _knob("pause", settings={True: {"rx[y]": True}, False: {"rx": False}}),
     "knobs.pause.settings.true.rx[y]", ["settings", "index"], ["invalid literal"]),
    ("target-not-string", _knob("rx_ring", target=5), "knobs.rx_ring.target",
     ["knobs.rx_ring.target:", "string"], []),
    ("testbed-list", _top(testbed=["veth"]), "testbed", ["testbed:"], []),
    ("constraint-number-too-large", _top(constraints=["1e999 <= rx_ring"]), "constraints[0]",
     ["too large"], ["OverflowError"]),
    ("constraint-too-long", _top(constraints=["9" * 400 + " <= rx_ring"]), "constraints[0]",
     ["411 characters long", "at most 200"], ["OverflowError"]),
    ("relieves-unknown-counter", _knob("txqueuelen", relieves={"qdisc_drop": "up"}),
     "knobs.txqueuelen.relieves.qdisc_drop",
     ["knobs.txqueuelen.relieves.qdisc_drop:", "'qdisc_drop'", "allowed:", "qdisc_drops", "rx_core_busy_pct"], []),
    ("relieves-not-a-mapping", _knob("txqueuelen", relieves=["qdisc_drops"]), "knobs.txqueuelen.relieves",
     ["knobs.txqueuelen.relieves:", "must map"], []),
    ("relieves-direction-of-a-bool", _knob("gro", relieves={"rx_core_busy_pct": "up"}),
     "knobs.gro.relieves.rx_core_busy_pct",
     ["knobs.gro.relieves.rx_core_busy_pct:", "'up'", "no value of the knob", "true or false"], ["direction"]),
    ("relieves-value-out-of-range", _knob("txqueuelen", relieves={"qdisc_drops": 3000}),
     "knobs.txqueuelen.relieves.qdisc_drops",
     ["knobs.txqueuelen.relieves.qdisc_drops:", "3000", "nor a direction", "up, down or one of 1000"], []),
    ("unknown-knob-field-lists-allowed", _knob("gro", defualt=True), "knobs.gro.defualt",
     ["unknown field 'defualt'", "allowed:", "default", "target"], []),
    # Long-form profiles (issue 30): the profile and the field at fault are named.
    ("profile-unknown-field", _add_profile("mine", {"stock": True, "source": "x", "valuez": {"rx_ring": 512}}),
     "profiles.mine.valuez", ["profiles.mine.valuez:", "under 'values'", "allowed:", "not_expressed"], []),
    ("profile-stock-not-bool", _add_profile("mine", {"stock": "yes", "source": "x", "values": {}}),
     "profiles.mine.stock", ["profiles.mine.stock:", "'yes'", "allowed: true, false"], []),
    ("profile-stock-without-source", _add_profile("mine", {"stock": True, "values": {"rx_ring": 512}}),
     "profiles.mine.source", ["profiles.mine.source:", "is missing", "stock profile"], []),
    ("profile-source-not-text", _add_profile("mine", {"stock": True, "source": 5, "values": {}}),
     "profiles.mine.source", ["profiles.mine.source:", "a string or a list"], []),
    ("profile-not-expressed-string", _add_profile("mine", {"source": "x", "not_expressed": "governor"}),
     "profiles.mine.not_expressed", ["profiles.mine.not_expressed:", "list of non-empty strings", "'governor'"], []),
    ("profile-notes-empty-item", _add_profile("mine", {"notes": ["ok", " "], "values": {}}), "profiles.mine.notes",
     ["profiles.mine.notes:", "non-empty strings"], []),
    ("profile-description-not-text", _add_profile("mine", {"description": ["a"], "values": {}}),
     "profiles.mine.description", ["profiles.mine.description:", "must be a string"], []),
    ("profile-values-not-mapping", _add_profile("mine", {"stock": True, "source": "x", "values": [512]}),
     "profiles.mine.values", ["profiles.mine.values:", "must map knob names to values"], []),
    ("profile-long-form-bad-value", _add_profile("mine", {"stock": True, "source": "x", "values": {"rx_ring": 3}}),
     "profiles.mine.values.rx_ring", ["profiles.mine.values.rx_ring:", "powers of two"], []),
]


@pytest.mark.parametrize(("mutate", "field", "words", "absent"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_space_file_is_one_invalid_input_error(tmp_path: Path, mutate: Mutation, field: str,
                                                   words: list[str], absent: list[str]) -> None:
    path = _write(tmp_path, mutate)
    with pytest.raises(InvalidInputError) as exc:
        load_space(str(path))
    message = str(exc.value)
    assert exc.value.field == field
    assert message.startswith(f"{path}:") and exc.value.allowed and exc.value.allowed in message, message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    for word in absent:
        assert word not in message, f"{word!r} in {message!r}"
    assert "\n" not in message
    assert message.count("knob '") <= 1, f"knob named more than once: {message!r}"


def test_non_utf8_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InvalidInputError) as exc:
        load_space(str(path))
    assert str(exc.value).startswith(f"{path}: not a UTF-8 text file")


def test_division_by_zero_in_a_constraint_is_a_definition_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _top(constraints=["rx_ring / 0 <= 1"]))
    with pytest.raises(InvalidInputError) as exc:
        load_space(str(path))
    assert "rx_ring / 0 <= 1" in str(exc.value)


def test_unmodified_base_file_still_loads(tmp_path: Path) -> None:
    space = load_space(str(_write(tmp_path, lambda d: None)))
    assert space.profile_names() == ["default", "esnet", "tuned-network-latency", "tuned-network-throughput",
                                     "vendor-guide"]
    assert space.stock_profiles() == ["tuned-network-throughput", "tuned-network-latency", "esnet"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="1000", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("command", ["validate", "show"])
@pytest.mark.parametrize("case", ["binary", "constraints-int", "when-self", "profile-default",
                                  "profile-stock-without-source"])
@pytest.mark.system
def test_cli_exits_2_with_one_error_line(tmp_path: Path, command: str, case: str) -> None:
    if case == "binary":
        path = tmp_path / "binary.yaml"
        path.write_bytes(b"\xff\xfe\x00garbage")
    else:
        mutate = next(c[1] for c in CASES if c[0] == case)
        path = _write(tmp_path, mutate)
    res = _cli("spaces", command, str(path))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
