"""What makes results from a testbed comparable: kernel, driver, NIC, CPU, NUMA node."""

from __future__ import annotations

from nictune.errors import HostCommandError
from nictune.measure.hosts import Host
from nictune.measure.topology import numa_node
from nictune.measure.validation import check_device


def kernel_release(host: Host) -> str:
    """``uname -r``."""
    return host.run(["uname", "-r"]).stdout.strip()


def cpu_model(host: Host) -> str:
    """The first ``model name`` of ``/proc/cpuinfo`` (``unknown`` when absent)."""
    for line in host.read_file("/proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return "unknown"


def driver_info(host: Host, device: str) -> dict[str, str]:
    """``driver``, ``version``, ``firmware-version`` and ``bus-info`` from ``ethtool -i``."""
    out = host.run(["ethtool", "-i", check_device(device)]).stdout
    info = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    keys = ("driver", "version", "firmware-version", "bus-info")
    return {k: info.get(k, "") for k in keys}


def nic_model(host: Host, device: str) -> str:
    """The PCI vendor:device ids of the NIC (``virtual`` when it has no PCI device)."""
    base = f"/sys/class/net/{check_device(device)}/device"
    try:
        vendor = host.read_file(f"{base}/vendor").strip()
        dev = host.read_file(f"{base}/device").strip()
    except HostCommandError:
        return "virtual"
    return f"pci {vendor}:{dev}"


def host_fingerprint(host: Host, device: str) -> dict[str, str]:
    """All of the above for one host and its data interface."""
    drv = driver_info(host, device)
    return {
        "kernel": kernel_release(host),
        "driver": drv["driver"],
        "driver_version": drv["version"],
        "firmware": drv["firmware-version"],
        "nic": nic_model(host, device),
        "numa_node": numa_node(host, device),
        "cpu": cpu_model(host),
    }
