"""Stock profiles (TuneD, ESnet) in the built-in spaces: valid, sourced, and measured first by jobs."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nictune.jobs.runner import start_configs
from nictune.measure.probing.probe_space import _fitted_profile
from nictune.search_spaces import builtin_names, load_space, space_from_dict
from nictune.search_spaces.profiles import PROFILE_FIELDS, profile_definition

STOCK = ("tuned-network-throughput", "tuned-network-latency", "esnet")
#: TuneD's profiles from its Debian package, unpacked (not installed) by scripts/setup.sh.
TUNED = Path(__file__).resolve().parents[2] / ".cache" / "tuned" / "usr" / "lib" / "tuned"


@pytest.mark.parametrize("name", builtin_names())
def test_every_stock_profile_is_a_valid_sourced_configuration(name: str) -> None:
    space = load_space(name)
    default = space.default()
    for pname in space.stock_profiles():
        assert pname in STOCK
        info = space.profile_info[pname]
        assert info.source and info.description and info.not_expressed, pname
        config = space.profile(pname)  # raises if not a valid configuration
        assert space.is_valid(config.as_dict())
        assert config.hash != default.hash, f"{name}/{pname} sets nothing the default does not"
        for knob, value in space.profiles[pname].items():
            assert space.knob(knob).parse(value) == value


def test_the_spaces_that_can_express_a_stock_setting_have_the_profiles() -> None:
    have = {name: load_space(name).stock_profiles() for name in builtin_names()}
    assert have["linux-nic"] == list(STOCK)
    assert have["benson-40g"] == list(STOCK)
    assert have["veth"] == list(STOCK)
    # linux-tcp has neither busy polling nor a CPU governor: nothing of network-latency.
    assert have["linux-tcp"] == ["tuned-network-throughput", "esnet"]
    assert have["nurika-pfring"] == [] and have["ixgbe-numa"] == []


def _tuned_sysctl(profile: str, key: str) -> str:
    for line in (TUNED / profile / "tuned.conf").read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep and k.strip() == key:
            return v.strip().strip('"')
    raise AssertionError(f"{key} not in {profile}")


def test_tuned_values_are_the_installed_profiles() -> None:
    if not (TUNED / "network-throughput" / "tuned.conf").is_file():
        pytest.fail(f"TuneD's profiles are not unpacked in {TUNED}: run bash scripts/setup.sh")
    rmem = int(_tuned_sysctl("network-throughput", "net.ipv4.tcp_rmem").split()[2])
    wmem = int(_tuned_sysctl("network-throughput", "net.ipv4.tcp_wmem").split()[2])
    busy = int(_tuned_sysctl("network-latency", "net.core.busy_read"))
    assert int(_tuned_sysctl("network-latency", "net.core.busy_poll")) == busy
    for name in ("linux-nic", "linux-tcp", "veth"):
        values = load_space(name).profiles["tuned-network-throughput"]
        assert (values["tcp_rmem_max"], values["tcp_wmem_max"]) == (rmem, wmem), name
    assert load_space("veth").profiles["tuned-network-latency"] == {"busy_poll": busy}
    assert load_space("linux-nic").profiles["tuned-network-latency"]["busy_poll_usecs"] == busy
    assert "include=latency-performance" in (TUNED / "network-latency" / "tuned.conf").read_text()
    assert "governor=performance" in (TUNED / "latency-performance" / "tuned.conf").read_text()
    assert load_space("benson-40g").profiles["tuned-network-latency"] == {"governor": "performance"}


def test_start_configs_default_then_stock_then_baseline_each_once() -> None:
    space = load_space("benson-40g")
    starts = start_configs(space)
    expected = [space.default(), *(space.profile(p) for p in STOCK), space.profile("baseline")]
    assert starts == expected
    assert len({c.hash for c in starts}) == len(starts)
    # A stock profile equal to the default is measured once.
    data = copy.deepcopy(space.definition)
    data["profiles"]["esnet"]["values"] = {}
    same = space_from_dict(data)
    assert [c.hash for c in start_configs(same)] == [c.hash for c in expected if c.hash != expected[3].hash]
    assert start_configs(load_space("ixgbe-numa")) == [load_space("ixgbe-numa").default()]


def test_long_form_round_trips_and_probing_lists_dropped_knobs() -> None:
    space = load_space("linux-nic")
    raw = space.definition["profiles"]["esnet"]
    assert set(raw) <= set(PROFILE_FIELDS)
    assert profile_definition(space.profiles["esnet"], space.profile_info["esnet"]) == raw
    assert profile_definition(space.profiles["vendor-guide"], None) == space.definition["profiles"]["vendor-guide"]
    fitted = _fitted_profile(space, "esnet", {"rx_ring", "tx_ring"})
    assert "rx_ring" not in fitted["values"] and fitted["values"]["qdisc"] == "fq"
    assert "rx_ring 8192 (knob left out: the hosts cannot set it)" in fitted["not_expressed"]
    assert fitted["stock"] is True and fitted["source"] == raw["source"]


@pytest.mark.system
def test_spaces_show_prints_sources_and_what_a_space_cannot_express() -> None:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    res = subprocess.run([sys.executable, "-m", "nictune", "spaces", "show", "linux-tcp"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "tuned-network-throughput (stock: every job measures it at its start)" in out
    assert "source: /usr/lib/tuned/network-throughput/tuned.conf" in out
    assert "not expressed in this space: cpu governor performance" in out
    assert "https://fasterdata.es.net/host-tuning/linux/100g-tuning/" in out
    assert "rounded down" in out
    res = subprocess.run([sys.executable, "-m", "nictune", "spaces", "show", "linux-tcp", "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=120)
    info = yaml.safe_load(res.stdout)
    assert info["profile_info"]["esnet"]["stock"] is True
    assert "tuned" not in info["profile_info"]  # Mishra's tuned set: a plain profile, not a stock one
