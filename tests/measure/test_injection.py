"""Hostile values and targets are refused before any command reaches a host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nictune.errors import InvalidInputError
from nictune.measure._base import Workload
from nictune.measure.appliers import APPLIERS, validate_settings
from nictune.measure.benchmarks.iperf3 import Endpoints
from nictune.measure.hosts import Host
from nictune.measure.testbeds.pair_file import load_pair
from nictune.measure.trial.journal import Journal
from nictune.measure.trial.transaction import Trial
from nictune.search_spaces._base import Family, Setting

F = Family
HOSTILE = ("1500; reboot", "$(id)", "../../etc/passwd", "`id`", "a b", "x\nreboot", "")


class SpyHost(Host):
    """A host that records every command it is asked to run and runs none."""

    def __init__(self) -> None:
        self.name = "spy"
        self.commands: list[list[str]] = []

    def local_argv(self, argv: list[str]) -> list[str]:
        self.commands.append(list(argv))
        raise AssertionError(f"a command reached the host: {argv}")

    def spec(self) -> dict[str, Any]:
        return {"kind": "spy"}


#: For each family, a valid target whose *value* is then replaced by hostile ones.
VALUE_TARGETS = {
    F.SYSCTL: "net.core.somaxconn",
    F.IP_LINK: "mtu",
    F.ETHTOOL_FEATURES: "gro",
    F.ETHTOOL_RINGS: "rx",
    F.ETHTOOL_COALESCE: "rx-usecs",
    F.ETHTOOL_PAUSE: "rx",
    F.ETHTOOL_CHANNELS: "combined",
    F.SYSFS: "gro_flush_timeout",
    F.IRQ_AFFINITY: "cpus",
    F.CPU_GOVERNOR: "scaling_governor",
    F.QDISC: "root",
    F.PLACEMENT: "receiver",
}


def test_every_applier_has_a_value_case() -> None:
    assert set(VALUE_TARGETS) == set(APPLIERS)


@pytest.mark.parametrize("family", list(VALUE_TARGETS))
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_rejected_naming_the_target(family: Family, value: str) -> None:
    setting = Setting(family, VALUE_TARGETS[family], value)
    spy = SpyHost()
    with pytest.raises(InvalidInputError) as err:
        validate_settings([setting])
    assert err.value.field and err.value.allowed
    assert "allowed" in str(err.value)
    for call in ("snapshot", "apply", "verify"):
        with pytest.raises(InvalidInputError):
            getattr(APPLIERS[family], call)(spy, "eth0", [setting])
    assert spy.commands == []


@pytest.mark.parametrize("family", list(VALUE_TARGETS))
@pytest.mark.parametrize("target", (*HOSTILE, "net.core.rmem_max; reboot", "queues/../../x"))
def test_hostile_targets_are_rejected(family: Family, target: str) -> None:
    spy = SpyHost()
    with pytest.raises(InvalidInputError):
        validate_settings([Setting(family, target, 1)])
    with pytest.raises(InvalidInputError):
        APPLIERS[family].apply(spy, "eth0", [Setting(family, target, 1)])
    assert spy.commands == []


@pytest.mark.parametrize("device", ["eth0; reboot", "$(id)", "../../etc", "..", "a" * 16, ""])
def test_hostile_devices_are_rejected(device: str) -> None:
    with pytest.raises(InvalidInputError, match="device"):
        validate_settings([Setting(F.IP_LINK, "mtu", 1500, device=device)])
    spy = SpyHost()
    with pytest.raises(InvalidInputError):
        APPLIERS[F.IP_LINK].apply(spy, device, [Setting(F.IP_LINK, "mtu", 1500)])
    assert spy.commands == []


def test_types_are_strict() -> None:
    for bad in ("1500", 1500.0, True, None, [1500]):
        with pytest.raises(InvalidInputError, match="mtu"):
            validate_settings([Setting(F.IP_LINK, "mtu", bad)])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="sysctl key"):
        validate_settings([Setting(F.SYSCTL, "kernel.sysrq", 1)])
    with pytest.raises(InvalidInputError, match="sysfs target"):
        validate_settings([Setting(F.SYSFS, "../../../../etc/passwd", 1)])


def test_a_trial_with_a_hostile_setting_touches_nothing(tmp_path: Path) -> None:
    sender, receiver = SpyHost(), SpyHost()
    ends = Endpoints(sender, receiver, "eth0", "eth0", "10.0.0.2")
    journal = Journal("spy", tmp_path)
    settings = [Setting(F.SYSCTL, "net.core.somaxconn", 1024),
                Setting(F.IP_LINK, "mtu", "1500; reboot")]  # fmt: skip
    with pytest.raises(InvalidInputError, match="mtu"):
        Trial(ends, journal).run(settings, Workload("t", "tcp", duration_s=1), 1, 0)
    assert sender.commands == receiver.commands == []
    assert not journal.exists()


def test_hostile_endpoint_fields_are_rejected() -> None:
    spy = SpyHost()
    with pytest.raises(InvalidInputError):
        Endpoints(spy, spy, "eth0", "eth0", "10.0.0.2; reboot")
    with pytest.raises(InvalidInputError):
        Endpoints(spy, spy, "$(id)", "eth0", "10.0.0.2")


@pytest.mark.parametrize(
    ("field", "yaml_text"),
    [
        ("sender.host", "sender: {host: 'ssh://root@h;reboot', interface: eth0, address: 1.2.3.4}"),
        ("sender.interface", "sender: {host: local, interface: 'eth0; reboot', address: 1.2.3.4}"),
        ("sender.address", "sender: {host: local, interface: eth0, address: '$(id)'}"),
        ("sender.host", "sender: {host: 'netns:../../x', interface: eth0, address: 1.2.3.4}"),
    ],
)
def test_hostile_pair_file_fields(tmp_path: Path, field: str, yaml_text: str) -> None:
    path = tmp_path / "pair.yaml"
    path.write_text(yaml_text + "\nreceiver: {host: local, interface: eth0, address: 1.2.3.5}\n")
    with pytest.raises(InvalidInputError) as err:
        load_pair(path)
    assert err.value.field == field
