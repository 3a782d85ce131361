"""Appliers that write single-value files: sysfs device knobs, IRQ affinity, CPU governor.

Each snapshot key names one file (``queues/rx-0/rps_cpus``, ``irq/42``, ``cpu3``), so a
snapshot read back from the journal says by itself where every value goes.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from nictune.errors import HostCommandError, InvalidInputError
from nictune.measure.appliers._base import KeyValueApplier, ProbeResult
from nictune.measure.hosts import Host
from nictune.measure.topology import (
    IRQ_POLICIES,
    device_irqs,
    online_cpus,
    resolve_irq_policy,
)
from nictune.measure.validation import (
    check_cpu_list,
    check_device,
    check_hex_mask,
    check_int_text,
    check_sysfs_target,
    check_token,
    parse_cpu_list,
)
from nictune.search_spaces import Family, Setting

_CPU_ROOT = "/sys/devices/system/cpu"


class FileApplier(KeyValueApplier):
    """Keys map to files; values are written with :meth:`Host.write_file`."""

    @abstractmethod
    def path(self, device: str, key: str) -> str:
        """The file behind ``key`` (validating the key)."""

    def read(self, host: Host, device: str, targets: Sequence[str]) -> dict[str, str]:
        """Each key's file, stripped."""
        return {k: host.read_file(self.path(device, k)).strip() for k in targets}

    def write(self, host: Host, device: str, values: Mapping[str, str]) -> None:
        """One write per file."""
        for key, value in values.items():
            host.write_file(self.path(device, key), self.check_value(key, value) + "\n")

    @abstractmethod
    def check_value(self, key: str, value: object) -> str:
        """The value for ``key`` as written, after validation."""


def _mask(text: str) -> int:
    return int(text.replace(",", "") or "0", 16)


class SysfsApplier(FileApplier):
    """Files under ``/sys/class/net/DEV/`` from an allow-list (NAPI, threaded, RPS, XPS)."""

    family = Family.SYSFS

    def path(self, device: str, key: str) -> str:
        """``/sys/class/net/DEV/KEY``."""
        return f"/sys/class/net/{check_device(device)}/{check_sysfs_target(key)}"

    def check_value(self, key: str, value: object) -> str:
        """Hex masks for ``*_cpus``, integers otherwise."""
        if key.endswith("_cpus"):
            return check_hex_mask(key, value)
        if isinstance(value, bool):
            value = int(value)
        return str(check_int_text(key, value, 0, 2 if key == "threaded" else 2**40))

    def normalize(self, setting: Setting) -> Any:
        """Allow-listed target, value by :meth:`check_value`."""
        return self.check_value(check_sysfs_target(setting.target), setting.value)

    def same(self, target: str, current: str, wanted: str) -> bool:
        """Masks compare as numbers (``00000003`` is ``3``), integers as integers."""
        if target.endswith("_cpus"):
            return _mask(current) == _mask(wanted)
        return current.strip() == wanted.strip()

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when the device's sysfs directory exists; limits: queue counts."""
        base = f"/sys/class/net/{check_device(device)}"
        if not host.exists(base):
            return ProbeResult(False, f"{base} does not exist")
        queues = host.list_dir(f"{base}/queues")
        limits = {
            "rx_queues": sum(q.startswith("rx-") for q in queues),
            "tx_queues": sum(q.startswith("tx-") for q in queues),
        }
        return ProbeResult(True, "", limits)

    def probe_target(self, host: Host, device: str, target: str) -> ProbeResult:
        """Supported when the file exists on this kernel and device."""
        path = self.path(device, target)
        if not host.exists(path):
            return ProbeResult(False, f"{path} does not exist")
        return ProbeResult(True, "", {"current": host.read_file(path).strip()})


class IrqAffinityApplier(FileApplier):
    """``/proc/irq/N/smp_affinity_list`` for every IRQ of the device.

    Target ``cpus`` takes a CPU list (``0``, ``2-3``); target ``policy`` one of
    :data:`~nictune.measure.topology.IRQ_POLICIES`, resolved on the host
    (``single-core``: the NIC node's first CPU, ``socket``: its node, ``all``: every CPU).
    """

    family = Family.IRQ_AFFINITY

    def normalize(self, setting: Setting) -> Any:
        """Target ``cpus`` with a CPU list, or ``policy`` with a policy name."""
        target = check_token("irq_affinity target", setting.target, ("cpus", "policy"))
        if target == "policy":
            return check_token("irq_affinity policy", setting.value, IRQ_POLICIES)
        return check_cpu_list("irq_affinity cpus", setting.value)

    def path(self, device: str, key: str) -> str:
        """``irq/N`` -> ``/proc/irq/N/smp_affinity_list``."""
        m = re.fullmatch(r"irq/(\d{1,6})", key)
        if not m:
            raise InvalidInputError(f"irq key {key!r} is not allowed; allowed: irq/N", field=key)
        return f"/proc/irq/{m.group(1)}/smp_affinity_list"

    def check_value(self, key: str, value: object) -> str:
        """A CPU list."""
        return check_cpu_list(key, value)

    def wanted(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, str]:
        """One key per IRQ of the device, the policy resolved to a CPU list."""
        values = [str(self.normalize(s)) for s in settings]
        if not values:
            return {}
        cpus = resolve_irq_policy(values[-1], host, device)
        return {f"irq/{n}": cpus for n in device_irqs(host, device)}

    def same(self, target: str, current: str, wanted: str) -> bool:
        """CPU lists compare as sets."""
        return parse_cpu_list(current) == parse_cpu_list(wanted)

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Unsupported when the device has no IRQs (veth and other virtual devices)."""
        try:
            irqs = device_irqs(host, device)
        except HostCommandError as exc:
            return ProbeResult(False, str(exc))
        if not irqs:
            return ProbeResult(
                False, f"{device} has no IRQs of its own (a virtual device such as veth)"
            )
        return ProbeResult(True, "", {"irqs": irqs})


#: Governors the cpufreq core knows; anything else is refused before reaching a host.
GOVERNORS = ("performance", "powersave", "ondemand", "conservative", "schedutil", "userspace")


class CpuGovernorApplier(FileApplier):
    """``scaling_governor`` of every online CPU; machine-wide.

    Target ``scaling_governor`` (or ``governor``); value one of :data:`GOVERNORS`.
    """

    family = Family.CPU_GOVERNOR

    def normalize(self, setting: Setting) -> Any:
        """Target ``scaling_governor``/``governor``; value one of :data:`GOVERNORS`."""
        check_token("cpu_governor target", setting.target, ("scaling_governor", "governor"))
        return check_token("governor", setting.value, GOVERNORS)

    def path(self, device: str, key: str) -> str:
        """``cpuN`` -> its ``scaling_governor`` file."""
        if not re.fullmatch(r"cpu\d{1,4}", key):
            raise InvalidInputError(f"cpu key {key!r} is not allowed; allowed: cpuN", field=key)
        return f"{_CPU_ROOT}/{key}/cpufreq/scaling_governor"

    def check_value(self, key: str, value: object) -> str:
        """One of :data:`GOVERNORS`."""
        return check_token("governor", value, GOVERNORS)

    def wanted(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, str]:
        """One key per online CPU."""
        values = [str(self.normalize(s)) for s in settings]
        if not values:
            return {}
        return {f"cpu{n}": values[-1] for n in online_cpus(host)}

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Unsupported without a cpufreq driver (common in virtual machines)."""
        base = f"{_CPU_ROOT}/cpu0/cpufreq"
        if not host.exists(f"{base}/scaling_governor"):
            return ProbeResult(
                False,
                f"no cpufreq interface ({base} missing): the kernel has no frequency-scaling "
                "driver for these CPUs, as is usual in virtual machines",
            )
        available = host.read_file(f"{base}/scaling_available_governors").split()
        return ProbeResult(True, "", {"governors": available})
