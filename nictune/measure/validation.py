"""Strict checks applied to every target and value before anything reaches a host.

Each check either returns the value in the form the applier writes, or raises
:class:`~nictune.errors.InvalidInputError` naming the target and the allowed form. Values
end up as argv elements or file contents, never in a shell, but a value such as
``1500; reboot`` is still refused here: nothing unexpected should ever reach a host.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from nictune.errors import InvalidInputError

TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
DEVICE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
SYSCTL_KEY_RE = re.compile(r"^net\.(core|ipv4|ipv6)\.[a-z0-9_.]+$")
#: Keys under net.* that change what the host is (a router, what it accepts, who may bind or
#: load BPF) rather than how fast it moves data: never a tuning knob, whatever the testbed.
SYSCTL_DENIED_RE = re.compile(
    r"^net\.(ipv4\.ip_forward.*"
    r"|ipv[46]\.conf\.[a-z0-9_.-]+\.(forwarding|mc_forwarding|bc_forwarding|accept_redirects|secure_redirects"
    r"|send_redirects|accept_source_route|rp_filter|proxy_arp|proxy_arp_pvlan|proxy_ndp|accept_local"
    r"|route_localnet|arp_ignore|arp_announce|arp_filter|accept_ra.*|disable_ipv6)"
    r"|ipv[46]\.ip_nonlocal_bind|ipv4\.ip_unprivileged_port_start|ipv4\.ping_group_range"
    r"|ipv4\.icmp_echo_ignore_.*|ipv4\.tcp_syncookies|core\.bpf_jit_.*)$"
)
SYSCTL_DENIED = ("net.ipv4.ip_forward*, net.ipv{4,6}.conf.*.{forwarding, *redirects, accept_source_route, "
                 "rp_filter, proxy_arp, accept_ra, disable_ipv6 ...}, ip_nonlocal_bind, "
                 "ip_unprivileged_port_start, ping_group_range, icmp_echo_ignore_*, tcp_syncookies, "
                 "net.core.bpf_jit_*")
#: The integer values a sysctl takes: the kernel's int and unsigned int (and a long's usual values).
SYSCTL_INT_MIN, SYSCTL_INT_MAX = -(2**31), 2**32 - 1
CPU_LIST_RE = re.compile(r"^\d{1,4}(-\d{1,4})?(,\d{1,4}(-\d{1,4})?)*$")
HEX_MASK_RE = re.compile(r"^[0-9a-fA-F]{1,8}(,[0-9a-fA-F]{1,8})*$")

#: Relative paths under ``/sys/class/net/DEV/`` the sysfs applier may write.
SYSFS_TARGETS: tuple[str, ...] = (
    "napi_defer_hard_irqs",
    "gro_flush_timeout",
    "threaded",
    "queues/rx-N/rps_cpus",
    "queues/rx-N/rps_flow_cnt",
    "queues/tx-N/xps_cpus",
)
_SYSFS_RE = re.compile(
    r"^(napi_defer_hard_irqs|gro_flush_timeout|threaded"
    r"|queues/rx-\d{1,4}/(rps_cpus|rps_flow_cnt)|queues/tx-\d{1,4}/xps_cpus)$"
)


def invalid(target: str, value: object, allowed: str) -> InvalidInputError:
    """The error for ``value`` not being acceptable for ``target``."""
    return InvalidInputError(
        f"{target}: value {value!r} is not allowed; allowed: {allowed}",
        field=target,
        allowed=allowed,
    )


def check_device(name: object) -> str:
    """An interface name: ``^[A-Za-z0-9_.-]{1,15}$``, not ``.`` or ``..``."""
    if not isinstance(name, str) or not DEVICE_RE.match(name) or name in {".", ".."}:
        raise invalid("device", name, "an interface name matching ^[A-Za-z0-9_.-]{1,15}$")
    return name


def check_sysctl_key(key: object) -> str:
    """A sysctl key under net.core, net.ipv4 or net.ipv6, other than the routing and security
    keys of :data:`SYSCTL_DENIED_RE`."""
    if not isinstance(key, str) or not SYSCTL_KEY_RE.match(key) or ".." in key:
        raise invalid("sysctl key", key, r"a key matching ^net\.(core|ipv4|ipv6)\.[a-z0-9_.]+$")
    if SYSCTL_DENIED_RE.match(key):
        raise InvalidInputError(
            f"sysctl key: {key!r} changes the host's routing or security, not its performance; nictune never "
            f"sets it (refused: {SYSCTL_DENIED})", field="sysctl key",
            allowed=r"a key matching ^net\.(core|ipv4|ipv6)\.[a-z0-9_.]+$ other than " + SYSCTL_DENIED)
    return key


def check_int(target: str, value: object, lo: int = 0, hi: int = 2**63 - 1) -> int:
    """A true ``int`` (not a bool, not a string) in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise invalid(target, value, f"an integer from {lo} to {hi}")
    return value


def check_int_text(target: str, value: object, lo: int = 0, hi: int = 2**63 - 1) -> int:
    """An int, or the decimal text of one (values read back from a host or a snapshot)."""
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value.strip()):
        value = int(value)
    return check_int(target, value, lo, hi)


def check_token(target: str, value: object, choices: Collection[str] | None = None) -> str:
    """A string matching ``^[A-Za-z0-9_.:-]+$`` and, when given, one of ``choices``."""
    if not isinstance(value, str) or not TOKEN_RE.match(value):
        allowed = ", ".join(sorted(choices)) if choices else "a word matching ^[A-Za-z0-9_.:-]+$"
        raise invalid(target, value, allowed)
    if choices is not None and value not in choices:
        raise invalid(target, value, ", ".join(sorted(choices)))
    return value


def check_on_off(target: str, value: object) -> str:
    """``True``/``False`` or ``"on"``/``"off"``, returned as ``"on"``/``"off"``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in ("on", "off"):
        return str(value)
    raise invalid(target, value, "on, off (or true/false)")


def check_cpu_list(target: str, value: object) -> str:
    """A CPU list as ``taskset -c`` and ``smp_affinity_list`` take it (``0``, ``0-3,6``)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10000:
        return str(value)
    if not isinstance(value, str) or not CPU_LIST_RE.match(value):
        raise invalid(target, value, "a CPU list such as 0, 2-3 or 0,2,4-7")
    return value


def parse_cpu_list(text: str) -> list[int]:
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(cpus))


def check_hex_mask(target: str, value: object) -> str:
    """A CPU bit mask in the kernel's hex form (``f``, ``00000000,0000000f``) or an int."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return format(value, "x")
    if not isinstance(value, str) or not HEX_MASK_RE.match(value):
        raise invalid(target, value, "a hexadecimal CPU mask such as f or 00000000,000000ff")
    return value


def check_sysfs_target(target: object) -> str:
    """A relative path under ``/sys/class/net/DEV/`` from :data:`SYSFS_TARGETS`."""
    if not isinstance(target, str) or not _SYSFS_RE.match(target):
        raise invalid("sysfs target", target, "one of " + ", ".join(SYSFS_TARGETS))
    return target


def check_sysctl_value(key: str, value: object, index: int | None) -> str | int | tuple[int, ...]:
    """A sysctl value: an int, a tuple of ints (whole multi-field value) or a word."""
    if index is not None:
        check_int(f"{key}[index]", index, 0, 15)
        return check_int(f"{key}[{index}]", value, 0, SYSCTL_INT_MAX)
    if isinstance(value, tuple | list):
        if not value or len(value) > 16:
            raise invalid(key, value, "a tuple of 1-16 integers")
        return tuple(check_int(key, v, SYSCTL_INT_MIN, SYSCTL_INT_MAX) for v in value)
    if isinstance(value, bool):  # a switch knob: the kernel spells it 1/0
        return int(value)
    if isinstance(value, int):
        return check_int(key, value, SYSCTL_INT_MIN, SYSCTL_INT_MAX)
    if isinstance(value, str):
        return check_token(key, value)
    raise invalid(key, value, "an integer, a tuple of integers or a word ^[A-Za-z0-9_.:-]+$")
