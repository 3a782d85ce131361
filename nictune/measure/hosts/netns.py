"""A network namespace on a machine: every command runs through ``ip netns exec NAME``.

``/proc/sys/net`` read inside a namespace shows that namespace's values, except for the
sysctls the kernel keeps once per machine. :data:`GLOBAL_SYSCTLS` lists those, as found on
kernel 6.18 (see :func:`sysctl_scope` to check another kernel): the *init-only* ones are not
visible inside a namespace at all, the *mirrored* ones (``net.core.rmem_max`` ...) are
visible read-only and always equal the initial namespace's value. A :class:`NetnsHost` reads
and writes global sysctls through its parent (the initial namespace), so appliers need not
care; a write there changes the whole machine, both ends of a veth pair included.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from nictune.errors import InvalidInputError
from nictune.measure.hosts._base import DEFAULT_TIMEOUT, Host, check_path
from nictune.measure.hosts.local import LocalHost

INIT_ONLY = "global: exists only in the initial namespace"
MIRRORED = "global: read-only mirror of the initial namespace's value inside a namespace"

_CORE_INIT_ONLY = (
    "bpf_jit_enable bpf_jit_harden bpf_jit_kallsyms bpf_jit_limit busy_poll busy_read "
    "default_qdisc dev_weight dev_weight_rx_bias dev_weight_tx_bias devconf_inherit_init_net "
    "fb_tunnels_only_for_init_net flow_limit_cpu_bitmap flow_limit_table_len gro_normal_batch "
    "high_order_alloc_disable max_skb_frags mem_pcpu_rsv message_burst message_cost "
    "netdev_budget netdev_budget_usecs netdev_max_backlog netdev_rss_key "
    "netdev_tstamp_prequeue netdev_unregister_timeout_secs rps_sock_flow_entries "
    "skb_defer_max warnings"
)
_CORE_MIRRORED = "rmem_default rmem_max wmem_default wmem_max"
_IPV4_INIT_ONLY = (
    "cipso_cache_bucket_size cipso_cache_enable cipso_rbm_optfmt cipso_rbm_strictvalid "
    "fib_sync_mem inet_peer_maxttl inet_peer_minttl inet_peer_threshold "
    "ipfrag_secret_interval tcp_available_ulp tcp_low_latency tcp_max_orphans tcp_mem udp_mem"
)
_IPV6_INIT_ONLY = (
    "calipso_cache_bucket_size calipso_cache_enable ip6frag_secret_interval mld_max_msf mld_qrv"
)

#: Sysctls under net.core/net.ipv4/net.ipv6 that are one per machine on this kernel
#: (6.18, probed by creating a namespace and comparing), with how they show in a namespace.
#: Every other key there is per namespace (``net.core.somaxconn``, ``net.ipv4.tcp_rmem`` ...).
GLOBAL_SYSCTLS: dict[str, str] = {
    **{f"net.core.{k}": INIT_ONLY for k in _CORE_INIT_ONLY.split()},
    **{f"net.core.{k}": MIRRORED for k in _CORE_MIRRORED.split()},
    **{f"net.ipv4.{k}": INIT_ONLY for k in _IPV4_INIT_ONLY.split()},
    **{f"net.ipv6.{k}": INIT_ONLY for k in _IPV6_INIT_ONLY.split()},
}

_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SYSCTL_PREFIX = "/proc/sys/"


def sysctl_path(key: str) -> str:
    """``net.core.rmem_max`` -> ``/proc/sys/net/core/rmem_max``."""
    return _SYSCTL_PREFIX + key.replace(".", "/")


def sysctl_key(path: str) -> str | None:
    """Inverse of :func:`sysctl_path`, ``None`` for paths outside ``/proc/sys``."""
    if not path.startswith(_SYSCTL_PREFIX):
        return None
    return path[len(_SYSCTL_PREFIX) :].replace("/", ".")


def is_global_sysctl(key: str) -> bool:
    """Whether ``key`` has one value per machine rather than per namespace."""
    return key in GLOBAL_SYSCTLS


def check_namespace(name: str) -> str:
    """Validate a namespace name.

    Raises:
        InvalidInputError: the name has characters ``ip netns`` would not accept safely.
    """
    if not isinstance(name, str) or not _NAMESPACE_RE.match(name):
        raise InvalidInputError(
            f"namespace {name!r} is not allowed; allowed: [A-Za-z0-9_.-], 1-64 characters",
            field="namespace",
            allowed="^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        )
    return name


class NetnsHost(Host):
    """A network namespace on ``parent`` (this machine by default).

    Args:
        namespace: the name ``ip netns`` knows it by.
        parent: the host the namespace lives on.
    """

    def __init__(self, namespace: str, parent: Host | None = None) -> None:
        self.namespace = check_namespace(namespace)
        self.parent = parent if parent is not None else LocalHost()
        self.name = f"netns:{namespace}"

    @property
    def machine(self) -> str:
        """The parent's machine: namespaces share CPUs and global sysctls."""
        return self.parent.machine

    def local_argv(self, argv: list[str]) -> list[str]:
        """``ip netns exec NAME argv...``, started the way the parent starts commands.

        ``ip netns exec`` execs the command, so a spawned process keeps its pid.
        """
        return self.parent.local_argv(["ip", "netns", "exec", self.namespace, *argv])

    def spec(self) -> dict[str, Any]:
        """``{"kind": "netns", "namespace": ..., "parent": {...}}``."""
        return {"kind": "netns", "namespace": self.namespace, "parent": self.parent.spec()}

    def _global(self, path: str) -> bool:
        key = sysctl_key(check_path(path))
        return key is not None and is_global_sysctl(key)

    def file_host(self, path: str) -> Host:
        """The parent for a global sysctl (one value per machine), else this namespace."""
        return self.parent.file_host(path) if self._global(path) else self

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Read ``path`` as seen from the namespace (global sysctls from the parent)."""
        if self._global(path):
            return self.file_host(path).read_file(path, timeout)
        return super().read_file(path, timeout)

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        """Several files in one command (global sysctls one by one from the parent)."""
        inside = [p for p in paths if not self._global(p)]
        out = super().read_files(inside, timeout) if inside else {}
        return {p: out[p] if p in out else self.read_file(p, timeout) for p in paths}

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write ``path`` in the namespace; a global sysctl is written on the parent."""
        if self._global(path):
            self.file_host(path).write_file(path, text, timeout)
        else:
            super().write_file(path, text, timeout)


def sysctl_scope(
    key: str, namespace: NetnsHost
) -> Literal["namespace", "global", "global-mirrored", "missing"]:
    """Find out how ``key`` behaves on the running kernel by looking from ``namespace``.

    ``global``: not visible in the namespace; ``global-mirrored``: visible but read-only
    there; ``namespace``: writable per namespace; ``missing``: the kernel has no such key.
    """
    path = sysctl_path(key)
    outside = namespace.parent.run(["stat", "-c", "%a", path], check=False)
    if outside.returncode != 0:
        return "missing"
    inside = namespace.run(["stat", "-c", "%a", path], check=False)
    if inside.returncode != 0:
        return "global"

    def owner_writable(mode: str) -> bool:
        return mode.strip()[:1] in {"2", "3", "6", "7"}

    # root passes ``test -w`` even on 0444 files, so compare the mode bits.
    if owner_writable(outside.stdout) and not owner_writable(inside.stdout):
        return "global-mirrored"
    return "namespace"
