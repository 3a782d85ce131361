"""Where commands run: this machine, a network namespace, or a machine over SSH."""

from __future__ import annotations

from nictune.measure.hosts._base import DEFAULT_TIMEOUT, Host, check_path
from nictune.measure.hosts.local import LocalHost
from nictune.measure.hosts.netns import (
    GLOBAL_SYSCTLS,
    NetnsHost,
    is_global_sysctl,
    sysctl_path,
    sysctl_scope,
)
from nictune.measure.hosts.process import CommandResult, Process
from nictune.measure.hosts.spec import host_from_spec
from nictune.measure.hosts.ssh import SshHost

__all__ = [
    "DEFAULT_TIMEOUT",
    "GLOBAL_SYSCTLS",
    "CommandResult",
    "Host",
    "LocalHost",
    "NetnsHost",
    "Process",
    "SshHost",
    "check_path",
    "host_from_spec",
    "is_global_sysctl",
    "sysctl_path",
    "sysctl_scope",
]
