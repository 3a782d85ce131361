"""The foundation commands as a user runs them: `nictune spaces ...` and `nictune measure`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nictune.cli.main import main
from nictune.search_spaces import builtin_names, load_space

pytestmark = pytest.mark.system  # runs nictune in subprocesses


NICTUNE = [sys.executable, "-m", "nictune"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NICTUNE, *args], capture_output=True, text=True, timeout=60)


def test_spaces_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spaces", "list", "--json"]) == 0
    names = {row["name"] for row in json.loads(capsys.readouterr().out)}
    assert {"benson-40g", "nurika-pfring", "linux-tcp", "linux-nic"} <= names
    assert main(["spaces", "show", "benson-40g", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    knobs = {k["name"]: k for k in info["knobs"]}
    assert knobs["poll_usecs"]["when"] == "rx_mode == timer"
    assert knobs["mtu"]["unit"] == "bytes" and info["size"] > 1000
    assert knobs["txqueuelen"]["relieves"] == "qdisc_drops: up" and "relieves" not in knobs["tx_ring"]
    assert main(["spaces", "show", "linux-nic"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "bottlenecks the knobs relieve" in shown and "gro (rx_core_busy_pct: true)" in shown
    assert main(["spaces", "show", "linux-tcp", "--format", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["name"] == "linux-tcp"


def test_spaces_validate_exit_codes(tmp_path: Path) -> None:
    good = run("spaces", "validate", "nictune/search_spaces/builtin/linux-nic.yaml")
    assert good.returncode == 0 and "valid" in good.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "bad", "knobs": {
        "mtu": {"type": "int", "low": 1500, "high": 9000, "default": 100, "target": "mtu",
                "family": "ip_link"}}}))
    res = run("spaces", "validate", str(bad))
    assert res.returncode == 2
    assert f"{bad}:3: knobs.mtu.default: invalid value 100" in res.stderr and "1500 to 9000" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert run("spaces", "validate", str(tmp_path / "nope.yaml")).returncode == 2
    directory = run("spaces", "validate", str(tmp_path))
    assert directory.returncode == 2 and "is a directory, not a space file" in directory.stderr


@pytest.mark.parametrize(("knob", "needle"), [
    ({"type": "choice", "choices": [1, 2], "default": 1, "target": "net.core.$(id)"},
     "knob 'k' = 1: sysctl key: value 'net.core.$(id)' is not allowed"),
    ({"type": "int", "low": 1500, "high": 9000, "default": 1500, "family": "ip_link", "target": "mtu; reboot"},
     "knob 'k' = 1500: ip_link target: value 'mtu; reboot' is not allowed; allowed: mtu, txqueuelen"),
    ({"type": "int", "low": 0, "high": 2000000, "default": 1000, "family": "ip_link", "target": "txqueuelen"},
     "knob 'k' = 2000000: txqueuelen: value 2000000 is not allowed; allowed: an integer from 0 to 1000000"),
])
def test_spaces_validate_checks_settings_as_a_measurement_would(tmp_path: Path, knob: dict[str, object],
                                                                  needle: str) -> None:
    """A target a host would refuse was accepted by `validate` and refused only when measured."""
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "knobs": {"k": knob}}))
    res = run("spaces", "validate", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert " ".join(res.stderr.split()).startswith(f"error: {needle}"), res.stderr


def test_spaces_validate_names_the_knobs_only_a_simulator_sets() -> None:
    res = run("spaces", "validate", "nictune/search_spaces/builtin/nurika-pfring.yaml")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert out.startswith("valid: space 'nurika-pfring'")
    assert "only simulated testbeds can set nic1_mode," in out and "PF_RING is not part of the kernel" in out
    linux = run("spaces", "validate", "nictune/search_spaces/builtin/linux-nic.yaml")
    assert linux.returncode == 0 and "only simulated" not in linux.stdout


def test_measure_json_reports_config_and_hash() -> None:
    res = run("measure", "--testbed", "sim:benson-40g", "--workload", "tcp", "--set", "mtu=9000",
              "--profile", "baseline", "--repeats", "2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["simulated"] is True
    assert out["config"]["mtu"] == 9000 and len(out["config_hash"]) == 64
    assert 30 < out["metrics"]["throughput_gbps"] <= 40
    assert {"loss_pct", "interrupts_per_s", "cpu_rx_pct"} <= set(out["metrics"])
    assert len(out["repeats"]) == 2


def test_measure_noise_zero_is_exact_and_text_says_simulated(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "--noise", "0", "--repeats", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spread"]["throughput_gbps"]["stdev"] == 0
    assert main(["measure", "--repeats", "1"]) == 0
    assert "simulated" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--testbed", "sim:nope"], "unknown testbed 'sim:nope'"),
        (["--set", "mtu=1400"], "knob 'mtu'"),
        (["--set", "bogus=1"], "unknown knob 'bogus'"),
        (["--set", "poll_usecs=8"], "only active when rx_mode == timer"),
        (["--set", "mtu"], "KNOB=VALUE"),
        (["--workload", "sctp"], "unknown workload 'sctp'"),
        (["--profile", "nope"], "unknown profile 'nope'"),
        (["--set", "mtu=1500; reboot"], "knob 'mtu'"),
        (["--noise", "3"], "noise"),
        # Brackets are text, not console markup: "[/etc]" used to crash the error message itself.
        (["--testbed", "pair:[/etc]"], "unknown testbed 'pair:[/etc]'"),
        (["--set", "rx_mode=[bold]timer"], "'[bold]timer'"),
    ],
)
def test_measure_bad_input_exits_2_with_one_message(args: list[str], needle: str) -> None:
    res = run("measure", *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in res.stderr.replace("\n", " ")
    assert "Traceback" not in res.stderr


def test_help_explains() -> None:
    res = run("measure", "--help")
    assert res.returncode == 0 and "--workload" in res.stdout and "--set" in res.stdout


def test_the_cli_imports_matplotlib_only_to_draw() -> None:
    """Every command imports the CLI; matplotlib (a third of a second) only `report` needs."""
    code = "import sys, nictune.cli.main; print('matplotlib' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (res.returncode, res.stdout) == (0, "False\n"), res.stderr


@pytest.mark.parametrize("name", builtin_names())
def test_a_space_definition_round_trips_through_a_file(name: str, tmp_path: Path) -> None:
    """`spaces show NAME --definition > f.yaml` gives a space file that validates and loads as NAME."""
    shown = run("spaces", "show", name, "--definition")
    assert shown.returncode == 0, shown.stderr
    path = tmp_path / f"{name}.yaml"
    path.write_text(shown.stdout)
    checked = run("spaces", "validate", str(path))
    assert checked.returncode == 0, checked.stderr
    assert load_space(str(path)).describe() == load_space(name).describe()


def test_measure_says_which_changes_a_model_ignores() -> None:
    res = run("measure", "--testbed", "sim:benson-40g", "--space", "veth", "--set", "receiver_cpus=1",
              "--set", "rmem_max=16777216", "--repeats", "1")
    assert res.returncode == 0, res.stderr
    assert "sim:benson-40g is a model with no term for receiver_cpus (space veth): its value changes nothing" \
        in " ".join(res.stderr.split())
    quiet = run("measure", "--testbed", "sim:benson-40g", "--space", "veth", "--set", "rmem_max=16777216",
                "--repeats", "1")
    assert quiet.returncode == 0 and "no term for" not in quiet.stderr, quiet.stderr
    # A space of another profile's PF_RING NICs: measured (its knobs ignored), not a KeyError.
    foreign = run("measure", "--testbed", "sim:benson-40g", "--space", "nurika-pfring", "--set", "nic1_mode=active",
                  "--repeats", "1")
    assert foreign.returncode == 0 and "Traceback" not in foreign.stderr, foreign.stderr
    assert "no term for nic1_mode" in foreign.stderr, foreign.stderr
