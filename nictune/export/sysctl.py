"""``--format sysctl``: a drop-in for ``/etc/sysctl.d/`` with the configuration's sysctls.

Multi-field sysctls are written whole (``net.ipv4.tcp_rmem = 4096 87380 16777216``). A
knob that sets one field (``net.ipv4.tcp_rmem[2]``) takes the other fields from the host's
values before the measurement, else from the space's defaults, else from Linux's
defaults (said in a comment); with none of these the key is left out and a comment says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nictune.export import _safe, checks
from nictune.export.source import ExportSource, Item
from nictune.search_spaces import Family

#: Linux's defaults of the multi-field sysctls knobs usually set one field of.
KERNEL_DEFAULTS: dict[str, str] = {
    "net.ipv4.tcp_rmem": "4096 131072 6291456",
    "net.ipv4.tcp_wmem": "4096 16384 4194304",
    "net.ipv4.ip_local_port_range": "32768 60999",
}


@dataclass
class SysctlLine:
    """One ``key = value`` line with the knobs behind it and remarks."""

    key: str
    value: str
    knobs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _base_fields(src: ExportSource, key: str, lines: dict[str, SysctlLine]) -> tuple[list[str], str] | None:
    if key in lines:
        return lines[key].value.split(), ""
    snap = src.snapshot_entry(Family.SYSCTL, None) or {}
    probe = Item("(snapshot)", None, Family.SYSCTL, key, 0)
    if key in snap:
        return checks.checked(probe, str(snap[key])).split(), "the host's values before the measurement"
    default = src.knob_defaults().get((Family.SYSCTL.value, key, None, None))
    if default is not None:
        return checks.checked(probe, default[1]).split(), f"the space's default of knob {default[0]}"
    if key in KERNEL_DEFAULTS:
        return KERNEL_DEFAULTS[key].split(), "Linux's defaults (check them on your host with sysctl)"
    return None


def sysctl_lines(src: ExportSource) -> tuple[list[SysctlLine], list[str]]:
    """The drop-in's lines and the settings that could not be written (as remarks).

    Raises:
        InvalidInputError: a key or value that may not be exported.
    """
    lines: dict[str, SysctlLine] = {}
    skipped: list[str] = []
    for item in src.items():
        if item.family is not Family.SYSCTL:
            continue
        key = checks.target(item)
        value = checks.checked(item)
        if item.index is None:
            line = lines.pop(key, None) or SysctlLine(key, value)
            line.value = value
            lines[key] = line
        else:
            base = _base_fields(src, key, lines)
            if base is None or item.index >= len(base[0]):
                skipped.append(f"{key}[{item.index}] = {value} (knob {item.knob}): the other fields of "
                               f"{key} are unknown; set it by hand")
                continue
            fields, origin = base
            fields[item.index] = value
            line = lines.get(key) or SysctlLine(key, "")
            line.value = " ".join(fields)
            if origin:
                line.notes.append(f"fields other than [{item.index}] are {origin}")
            lines[key] = line
        if item.knob not in lines[key].knobs:
            lines[key].knobs.append(item.knob)
    return list(lines.values()), skipped


def render_sysctl(src: ExportSource, filename: str = "90-nictune.conf") -> str:
    """The drop-in's text.

    Raises:
        InvalidInputError: a key or value that may not be exported.
    """
    lines, skipped = sysctl_lines(src)
    out = [f"# {_safe.comment(h)}" for h in src.header_lines()]
    name = _safe.comment(filename)
    out += [f"# Install: cp {name} /etc/sysctl.d/ && sysctl -p /etc/sysctl.d/{name}",
            "# Undo: remove the file and reboot, or set the keys back by hand.", ""]
    if not lines:
        out.append("# the configuration sets no sysctl")
    for line in lines:
        knobs = ", ".join(f"{k} = {src.config.get(k)}" for k in line.knobs)
        out.append(f"# knob {_safe.comment(knobs)}")
        out += [f"# {_safe.comment(n)}" for n in line.notes]
        out.append(f"{line.key} = {line.value}")
    for s in skipped:
        out.append(f"# NOT SET: {_safe.comment(s)}")
    return "\n".join(out) + "\n"


__all__ = ["KERNEL_DEFAULTS", "SysctlLine", "render_sysctl", "sysctl_lines"]
