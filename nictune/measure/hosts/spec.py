"""Turn a host's :meth:`~nictune.measure.hosts.Host.spec` back into a host (journal replay)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nictune.errors import InvalidInputError
from nictune.measure.hosts._base import Host
from nictune.measure.hosts.local import LocalHost
from nictune.measure.hosts.netns import NetnsHost
from nictune.measure.hosts.ssh import SshHost


def host_from_spec(spec: Mapping[str, Any]) -> Host:
    """Rebuild a host from the plain data :meth:`Host.spec` returned.

    Raises:
        InvalidInputError: the spec names an unknown kind or misses a field.
    """
    kind = spec.get("kind")
    try:
        if kind == "local":
            return LocalHost()
        if kind == "netns":
            return NetnsHost(spec["namespace"], host_from_spec(spec["parent"]))
        if kind == "ssh":
            return SshHost(
                spec["host"],
                spec["user"],
                port=int(spec.get("port", 22)),
                key=spec.get("key"),
                known_hosts=spec.get("known_hosts"),
                strict_host_key_checking=bool(spec.get("strict_host_key_checking", True)),
                client=host_from_spec(spec.get("client") or {"kind": "local"}),
            )
    except KeyError as exc:
        raise InvalidInputError(f"host spec {dict(spec)!r} misses {exc}", field="host") from exc
    raise InvalidInputError(
        f"host spec kind {kind!r} is unknown; allowed: local, netns, ssh",
        field="host.kind",
        allowed="local, netns, ssh",
    )
