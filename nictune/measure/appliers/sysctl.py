"""Sysctls under net.core / net.ipv4 / net.ipv6, through ``/proc/sys`` on the host.

Multi-field sysctls (``net.ipv4.tcp_rmem`` = ``min default max``) are set either whole
(a tuple) or one field at a time (``Setting.index``); the snapshot always holds the whole
line, so a restore puts every field back. Global sysctls (see
:data:`~nictune.measure.hosts.GLOBAL_SYSCTLS`) change the whole machine; a namespace host
writes them in the initial namespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nictune.errors import HostCommandError, MeasurementError, RestoreError
from nictune.measure.appliers._base import Applier, ProbeResult, check_snapshot
from nictune.measure.hosts import Host, is_global_sysctl, sysctl_path
from nictune.measure.validation import check_sysctl_key, check_sysctl_value
from nictune.search_spaces import Family, Setting


def _line(text: str) -> str:
    return " ".join(text.split())


class SysctlApplier(Applier):
    """``sysctl`` settings: target is the key, ``index`` selects a field."""

    family = Family.SYSCTL

    def normalize(self, setting: Setting) -> Any:
        """Check the key and the value (int, tuple of ints or a word)."""
        key = check_sysctl_key(setting.target)
        return check_sysctl_value(key, setting.value, setting.index)

    def read(self, host: Host, key: str) -> str:
        """The whole value of ``key`` with fields separated by one space."""
        return _line(host.read_file(sysctl_path(check_sysctl_key(key))))

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Sysctls are readable wherever ``/proc/sys/net`` is."""
        try:
            self.read(host, "net.ipv4.tcp_rmem")
        except HostCommandError as exc:
            return ProbeResult(False, f"cannot read /proc/sys/net: {exc}")
        return ProbeResult(True)

    def probe_target(self, host: Host, device: str, target: str) -> ProbeResult:
        """Whether the key exists; its current value, field count and scope as limits."""
        key = check_sysctl_key(target)
        try:
            current = self.read(host, key)
        except HostCommandError:
            return ProbeResult(False, f"{key} does not exist on this kernel")
        scope = "global" if is_global_sysctl(key) else "namespace"
        limits = {"current": current, "fields": len(current.split()), "scope": scope}
        reason = "global: one value for the whole machine" if scope == "global" else ""
        return ProbeResult(True, reason, limits)

    def snapshot(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, Any]:
        """The whole current line of every key the settings touch."""
        for s in settings:
            self.normalize(s)
        return {key: self.read(host, key) for key in dict.fromkeys(s.target for s in settings)}

    def _target_lines(self, host: Host, settings: Sequence[Setting]) -> dict[str, str]:
        values = [self.normalize(s) for s in settings]  # all checked before any read
        lines: dict[str, str] = {}
        for s, value in zip(settings, values, strict=True):
            if s.index is None:
                lines[s.target] = (
                    " ".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
                )
                continue
            fields = (lines.get(s.target) or self.read(host, s.target)).split()
            if s.index >= len(fields):
                raise MeasurementError(
                    f"{s.target} has {len(fields)} fields; field {s.index} does not exist"
                )
            fields[s.index] = str(value)
            lines[s.target] = " ".join(fields)
        return lines

    def _write(self, host: Host, key: str, line: str) -> None:
        if self.read(host, key) != line:
            host.write_file(sysctl_path(key), line + "\n")

    def apply(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Write each touched key once (fields merged into the current line)."""
        for key, line in self._target_lines(host, settings).items():
            self._write(host, key, line)

    def verify(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Read back each key and compare the whole value or the selected field."""
        values = [self.normalize(s) for s in settings]  # all checked before any read
        bad = []
        for s, value in zip(settings, values, strict=True):
            current = self.read(host, s.target)
            if s.index is not None:
                fields = current.split()
                got = fields[s.index] if s.index < len(fields) else ""
                ok = got == str(value)
            elif isinstance(value, tuple):
                ok = current == " ".join(str(v) for v in value)
            else:
                ok = current == str(value)
            if not ok:
                where = f"{s.target}[{s.index}]" if s.index is not None else s.target
                bad.append(f"{where}: wanted {value!r}, host has {current!r}")
        if bad:
            raise MeasurementError(f"sysctl on {host.name} did not take: " + "; ".join(bad))

    def restore(self, host: Host, device: str, snapshot: Mapping[str, Any]) -> None:
        """Write back every recorded line and read it back."""
        bad = []
        for key, line in check_snapshot(snapshot).items():
            check_sysctl_key(key)
            try:
                self._write(host, key, _line(line))
                current = self.read(host, key)
            except MeasurementError as exc:
                bad.append(f"{key}: {exc}")
                continue
            if current != _line(line):
                bad.append(f"{key}: wanted {line!r}, host has {current!r}")
        if bad:
            raise RestoreError(f"sysctl restore on {host.name} failed: " + "; ".join(bad))
