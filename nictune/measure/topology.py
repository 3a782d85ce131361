"""CPU topology of a host as seen from a NIC: its NUMA node's CPUs and its IRQ cores.

The search spaces name placements by policy (``numa-local``, ``irq-core``, ``single-core``
...); this module turns a policy into a concrete CPU list on a given host and device.
"""

from __future__ import annotations

import re

from nictune.errors import HostCommandError, MeasurementError
from nictune.measure.hosts import Host
from nictune.measure.validation import check_cpu_list, check_device, parse_cpu_list

#: Placement policies for the benchmark processes (besides explicit CPU lists).
PLACEMENT_POLICIES = ("unpinned", "numa-local", "irq-core", "numa-remote")
#: IRQ affinity policies (besides explicit CPU lists with target ``cpus``).
IRQ_POLICIES = ("single-core", "socket", "all")


def format_cpus(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def online_cpus(host: Host) -> list[int]:
    """CPU numbers online on ``host``."""
    return parse_cpu_list(host.read_file("/sys/devices/system/cpu/online"))


def numa_node(host: Host, device: str) -> str:
    """NUMA node of the NIC (``-1``: none or unknown, as for virtual devices)."""
    try:
        return host.read_file(f"/sys/class/net/{check_device(device)}/device/numa_node").strip()
    except HostCommandError:
        return "-1"


def device_irqs(host: Host, device: str) -> list[int]:
    """IRQ numbers of ``device``: its MSI vectors, else ``/proc/interrupts`` lines naming it."""
    dev = check_device(device)
    msi = host.list_dir(f"/sys/class/net/{dev}/device/msi_irqs")
    if msi:
        return sorted(int(n) for n in msi if n.isdigit())
    irqs = []
    for line in host.read_file("/proc/interrupts").splitlines()[1:]:
        head, _, rest = line.partition(":")
        if head.strip().isdigit() and re.search(rf"(^|[\s@]){re.escape(dev)}([-:@\s]|$)", rest):
            irqs.append(int(head))
    return sorted(irqs)


def node_cpus(host: Host, device: str) -> list[int]:
    """CPUs of the NIC's NUMA node (all online CPUs when the node is unknown)."""
    node = numa_node(host, device)
    if node.lstrip("-").isdigit() and int(node) >= 0:
        try:
            path = f"/sys/devices/system/node/node{int(node)}/cpulist"
            return parse_cpu_list(host.read_file(path))
        except HostCommandError:
            pass
    return online_cpus(host)


def irq_cpus(host: Host, device: str) -> list[int]:
    """CPUs the device's IRQs are allowed on (empty for a device without IRQs)."""
    cpus: set[int] = set()
    for irq in device_irqs(host, device):
        try:
            cpus.update(parse_cpu_list(host.read_file(f"/proc/irq/{irq}/smp_affinity_list")))
        except HostCommandError:
            continue
    return sorted(cpus)


def resolve_placement(value: str, host: Host, device: str) -> str | None:
    """A placement value (policy or CPU list) as a ``taskset -c`` list; ``None``: unpinned.

    ``irq-core`` is the first CPU serving the device's IRQs (the node's first CPU when
    it has none, as veth); ``numa-local`` a CPU of the NIC's node that serves no IRQ;
    ``numa-remote`` a CPU of another node.

    Raises:
        MeasurementError: the host has no CPU for the policy (one node, ``numa-remote``).
    """
    if value == "unpinned":
        return None
    if value not in PLACEMENT_POLICIES:
        return check_cpu_list("placement", value)
    local = node_cpus(host, device)
    irqs = irq_cpus(host, device)
    if value == "irq-core":
        return str((irqs or local)[0])
    if value == "numa-local":
        free = [c for c in local if c not in irqs]
        return str((free or local)[-1])
    remote = [c for c in online_cpus(host) if c not in local]
    if not remote:
        raise MeasurementError(f"{host.name}: one NUMA node only; no CPU is numa-remote")
    return str(remote[0])


def resolve_irq_policy(value: str, host: Host, device: str) -> str:
    """An IRQ policy (or CPU list) as an ``smp_affinity_list`` value."""
    if value == "all":
        return format_cpus(online_cpus(host))
    if value == "socket":
        return format_cpus(node_cpus(host, device))
    if value == "single-core":
        return str(node_cpus(host, device)[0])
    return check_cpu_list("irq_affinity", value)
