"""Issue 31, limits and checks: a space above a cap, or with a setting no host would take, is
refused by the one check `spaces validate`, the CLI's --space and the service share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nictune.cli.main import main
from nictune.errors import InvalidInputError, SpaceDefinitionError
from nictune.measure.appliers.registry import load_checked_space
from nictune.search_spaces import knob_schema, limits, space_from_dict

SOMAXCONN = {"type": "int", "low": 128, "high": 4096, "default": 4096, "target": "net.core.somaxconn"}


def space(**knobs: Any) -> dict[str, Any]:
    return {"name": "mine", "knobs": knobs or {"somaxconn": dict(SOMAXCONN)}}


def int_knobs(n: int) -> dict[str, Any]:
    return {f"k{i}": SOMAXCONN | {"target": f"net.core.k{i}"} for i in range(n)}


def test_a_space_of_3000_knobs_is_refused_before_any_knob_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: Any) -> None:
        raise RuntimeError("a knob was built for a space above the cap")  # (pydantic passes it on)

    monkeypatch.setattr(knob_schema.IntKnobSpec, "_shape", never)
    with pytest.raises(SpaceDefinitionError) as exc:
        space_from_dict(space(**int_knobs(3000)))

    assert exc.value.field == "knobs" and exc.value.allowed == f"at most {limits.MAX_KNOBS} knobs"
    assert "3000 knobs" in str(exc.value) and "at most 64" in str(exc.value)
    assert len(exc.value.problems) == 1  # the cap alone: no knob was checked


def test_the_largest_space_the_caps_allow_loads() -> None:
    assert len(space_from_dict(space(**int_knobs(limits.MAX_KNOBS))).knobs) == limits.MAX_KNOBS


@pytest.mark.parametrize(("case", "definition", "field", "words"), [
    ("choices per knob", space(qdisc={"type": "choice", "choices": [f"q{i}" for i in range(300)], "default": "q0",
                                      "target": "net.core.default_qdisc"}),
     "knobs.qdisc.choices", ["300 values", "at most 256"]),
    ("int bound of 2**63", space(somaxconn=SOMAXCONN | {"high": 2**63}), "knobs.somaxconn.high", ["2**53"]),
    ("negative int bound", space(somaxconn=SOMAXCONN | {"low": -(2**60)}), "knobs.somaxconn.low", ["2**53"]),
    ("float bound", space(r={"type": "float", "low": 0, "high": 1e300, "default": 1, "target": "net.core.r"}),
     "knobs.r.high", ["2**53"]),
    ("step", space(somaxconn=SOMAXCONN | {"step": 2**60}), "knobs.somaxconn.step", ["positive integer"]),
    ("constraints", space() | {"constraints": ["somaxconn >= 1"] * 40}, "constraints", ["40 items", "at most 32"]),
    ("profiles", space() | {"profiles": {f"p{i}": {} for i in range(40)}}, "profiles", ["40 profiles", "at most 32"]),
    ("when values", space(somaxconn=SOMAXCONN, b=SOMAXCONN | {"target": "net.core.b",
                                                              "when": {"somaxconn": list(range(300))}}),
     "knobs.b.when", ["300 values", "at most 256"]),
])
def test_caps_name_the_field_and_the_limit(case: str, definition: dict[str, Any], field: str,
                                           words: list[str]) -> None:
    with pytest.raises(SpaceDefinitionError) as exc:
        space_from_dict(definition)

    assert exc.value.field == field
    for word in words:
        assert word in str(exc.value), str(exc.value)


@pytest.mark.parametrize(("target", "value", "words"), [
    ("kernel.randomize_va_space", 2, ["kernel.randomize_va_space", "^net"]),
    ("kernel.yama.ptrace_scope", 0, ["kernel.yama.ptrace_scope"]),
    ("net.ipv4.ip_forward", 1, ["net.ipv4.ip_forward", "routing or security"]),
    ("net.ipv4.conf.all.rp_filter", 0, ["rp_filter", "routing or security"]),
    ("net.core.bpf_jit_enable", 1, ["bpf_jit_enable"]),
])
def test_keys_outside_the_sysctl_allow_list_are_refused_whatever_the_testbed(target: str, value: int,
                                                                              words: list[str]) -> None:
    definition = space(k={"type": "choice", "choices": [value], "default": value, "target": target})
    space_from_dict(definition)  # a well-formed definition ...

    with pytest.raises(InvalidInputError) as exc:  # ... that no host would take
        load_checked_space(definition)

    assert exc.value.field == "knobs.k"
    for word in words:
        assert word in str(exc.value), str(exc.value)


@pytest.mark.parametrize(("knob", "words"), [
    # What used to fail only at run time: int('1500; reboot').
    ({"type": "choice", "choices": [1500, "1500; reboot"], "default": 1500, "family": "ip_link", "target": "mtu"},
     ["'1500; reboot'", "mtu"]),
    # Exported as net.core.somaxconn = 7378697629483821056 before.
    (SOMAXCONN | {"high": 2**40}, [str(2**40), "4294967295"]),
    ({"type": "int", "low": 0, "high": 2**24, "default": 0, "family": "ip_link", "target": "mtu"}, ["65535"]),
])
def test_values_outside_the_appliers_ranges_are_refused(knob: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(InvalidInputError) as exc:
        load_checked_space(space(k=knob))

    assert exc.value.field == "knobs.k"
    for word in words:
        assert word in str(exc.value), str(exc.value)


def test_sim_only_families_pass_and_are_reported() -> None:
    definition = space(tune={"type": "bool", "default": False, "family": "module_param",
                             "target": "mlx4_core.enable_sys_tune"})
    _, sim_only = load_checked_space(definition)
    assert list(sim_only) == ["tune"]


BAD_SPACE = space(fwd={"type": "int", "low": 0, "high": 1, "default": 0, "target": "net.ipv4.ip_forward"})


@pytest.mark.parametrize("args", [
    ["spaces", "validate", "{path}"],
    ["measure", "--testbed", "sim:benson-40g", "--space", "{path}", "--dry-run"],
    ["optimize", "-o", "throughput", "-t", "sim:benson-40g", "--space", "{path}", "-b", "2", "--db", "{db}"],
    ["optimize", "-o", "throughput", "-t", "sim:benson-40g", "--space", "{path}", "-b", "2",
     "--server", "http://127.0.0.1:1"],
], ids=["validate", "measure", "optimize", "optimize-server"])
def test_the_cli_refuses_the_space_on_a_simulated_testbed_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(BAD_SPACE))
    db = f"sqlite:///{tmp_path / 'n.db'}"

    code = main([a.format(path=path, db=db) for a in args])

    err = capsys.readouterr().err
    assert code == 2, err
    assert "net.ipv4.ip_forward" in err and "routing or security" in err, err
