"""``--format script``: a POSIX shell script that applies the non-sysctl settings, and its rollback.

Both scripts are idempotent: every setting is read first and written only when it
differs, so running one twice changes nothing the second time. The interface is
``$DEV``, which must be given (no default: a forgotten DEV must not retune whatever NIC
happens to be called eth0; the testbed's data interface is the example in the message), and
is checked before anything runs. Every value comes from
:mod:`nictune.export.checks` (an integer or a plain word) and is single-quoted, so a
crafted search space cannot smuggle a command in.

The rollback puts back what the trial's snapshot recorded on the host before the
measurement; where it recorded nothing (always on a simulated testbed) it uses the
space's knob default, and says so in a comment next to the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from nictune.export import _safe, checks
from nictune.export.source import ExportSource, Item
from nictune.search_spaces import Family

#: show flag, set flag and label table of each ethtool family.
_ETHTOOL: dict[Family, tuple[str, str, dict[str, str]]] = {
    Family.ETHTOOL_RINGS: ("-g", "-G", checks.RINGS),
    Family.ETHTOOL_CHANNELS: ("-l", "-L", checks.CHANNELS),
    Family.ETHTOOL_PAUSE: ("-a", "-A", checks.PAUSE),
    Family.ETHTOOL_COALESCE: ("-c", "-C", {**checks.COALESCE_SWITCHES, **{n: n for n in checks.COALESCE_INTS}}),
    Family.ETHTOOL_FEATURES: ("-k", "-K", checks.FEATURES),
}

#: Why a family is not in the script.
_NOT_SCRIPTED: dict[Family, str] = {
    Family.IRQ_AFFINITY: "IRQ placement depends on the host's IRQ numbers and NUMA layout "
                         "(nictune resolves it per host when it measures); set /proc/irq/N/smp_affinity_list",
    Family.PLACEMENT: "where the application runs: start it with taskset/numactl",
    Family.MODULE_PARAM: "a driver option: needs 'options MODULE PARAM=VALUE' in /etc/modprobe.d and a "
                         "driver reload",
    Family.PF_RING: "a PF_RING option of the capturing application",
    Family.PLATFORM: "a property of the (simulated) machine, not a setting",
}

_HELPERS = r"""
status=0
say() { printf 'nictune: %s\n' "$*"; }
fail() { printf 'nictune: FAILED: %s\n' "$*" >&2; status=1; }

check_dev() {
    case $1 in
        ''|.|..|*[!A-Za-z0-9_.-]*) printf 'nictune: %s is not an interface name\n' "$1" >&2; exit 2 ;;
    esac
    if [ "${#1}" -gt 15 ]; then printf 'nictune: %s is not an interface name\n' "$1" >&2; exit 2; fi
    if [ ! -e "/sys/class/net/$1" ]; then printf 'nictune: no network interface %s here\n' "$1" >&2; exit 1; fi
}

# link_set DEV ATTRIBUTE VALUE: ip link set (mtu, txqueuelen) when the value differs.
link_set() {
    case $2 in mtu) f=mtu ;; txqueuelen) f=tx_queue_len ;; *) fail "unknown link attribute $2"; return ;; esac
    cur=$(cat "/sys/class/net/$1/$f" 2>/dev/null) || cur=
    if [ "$cur" = "$3" ]; then say "$1 $2 already $3"; return; fi
    if ip link set dev "$1" "$2" "$3"; then say "$1 $2 ${cur:-?} -> $3"; else fail "ip link set dev $1 $2 $3"; fi
}

# ethtool_now DEV SHOW-FLAG LABEL: what 'ethtool SHOW-FLAG DEV' prints for LABEL (current values).
ethtool_now() {
    ethtool "$2" "$1" 2>/dev/null | awk -v want="$3" '
        /^Pre-set maximums/ { skip = 1; next }
        /^Current hardware settings/ { skip = 0; next }
        skip { next }
        {
            line = $0; sub(/^[ \t]+/, "", line)
            i = index(line, ":"); if (i == 0) next
            key = substr(line, 1, i - 1); val = substr(line, i + 1); sub(/^[ \t]+/, "", val)
            if (want == "Adaptive TX" && key == "Adaptive RX") { n = split(val, w, /[ \t]+/); print w[n]; exit }
            if (key == want) { split(val, w, /[ \t]+/); print w[1]; exit }
        }'
}

# ethtool_set DEV SHOW-FLAG SET-FLAG LABEL NAME VALUE: 'ethtool SET-FLAG DEV NAME VALUE' when it differs.
ethtool_set() {
    cur=$(ethtool_now "$1" "$2" "$4")
    if [ "$cur" = "$6" ]; then say "$1 $5 already $6"; return; fi
    if ethtool "$3" "$1" "$5" "$6"; then say "$1 $5 ${cur:-?} -> $6"; else fail "ethtool $3 $1 $5 $6"; fi
}

# sysfs_set DEV FILE VALUE: write /sys/class/net/DEV/FILE when it differs.
sysfs_set() {
    f="/sys/class/net/$1/$2"
    if ! cur=$(cat "$f" 2>/dev/null); then fail "cannot read $f"; return; fi
    if [ "$cur" = "$3" ]; then say "$f already $3"; return; fi
    if printf '%s\n' "$3" > "$f"; then say "$f $cur -> $3"; else fail "cannot write $3 to $f"; fi
}

# qdisc_set DEV KIND: root qdisc KIND (tc qdisc replace) when it differs.
qdisc_set() {
    cur=$(tc qdisc show dev "$1" root 2>/dev/null | awk 'NR == 1 { print $2 }')
    if [ "$cur" = "$2" ]; then say "$1 root qdisc already $2"; return; fi
    if tc qdisc replace dev "$1" root "$2"; then say "$1 root qdisc ${cur:-?} -> $2"
    else fail "tc qdisc replace dev $1 root $2"; fi
}

# qdisc_reset DEV: back to the kernel's own root qdisc (deleting ours; nothing to do if none).
qdisc_reset() {
    if tc qdisc del dev "$1" root 2>/dev/null; then say "$1 root qdisc back to the kernel default"; fi
}

# governor_set GOVERNOR [cpuN]: scaling_governor of every CPU (or of cpuN) when it differs.
governor_set() {
    found=0
    for f in /sys/devices/system/cpu/${2:-cpu[0-9]*}/cpufreq/scaling_governor; do
        [ -e "$f" ] || continue
        found=1
        cur=$(cat "$f" 2>/dev/null) || cur=
        [ "$cur" = "$1" ] && continue
        if printf '%s\n' "$1" > "$f"; then say "$f $cur -> $1"; else fail "cannot write $1 to $f"; fi
    done
    if [ "$found" = 0 ]; then say "no cpufreq governor here (a virtual machine?): governor $1 not set"; fi
}
"""


@dataclass
class Scripts:
    """The apply script and its rollback."""

    apply: str
    rollback: str


def _dev(item: Item) -> str:
    dev = checks.device(item)
    return '"$DEV"' if dev is None else _safe.shell_quote(dev)


def _command(item: Item, value: str) -> str:
    """The helper call that sets ``item``'s target to ``value`` (already checked)."""
    dev, tgt, q = _dev(item), checks.target(item), _safe.shell_quote(value)
    fam = item.family
    if fam is Family.IP_LINK:
        return f"link_set {dev} {tgt} {q}"
    if fam in _ETHTOOL:
        show, set_flag, labels = _ETHTOOL[fam]
        label = labels.get(tgt, tgt)  # a feature's long name, else its own name
        return f"ethtool_set {dev} {show} {set_flag} '{label}' {_safe.shell_quote(tgt)} {q}"
    if fam is Family.SYSFS:
        return f"sysfs_set {dev} {_safe.shell_quote(tgt)} {q}"
    if fam is Family.QDISC:
        return f"qdisc_set {dev} {q}"
    if fam is Family.CPU_GOVERNOR:
        return f"governor_set {q}"
    raise AssertionError(f"no command for {fam}")  # callers pass scripted families only


def _scripted(item: Item) -> bool:
    return item.family in checks.DEVICE_FAMILIES or item.family is Family.CPU_GOVERNOR


def _header(src: ExportSource, title: str, lines: list[str]) -> list[str]:
    out = ["#!/bin/sh", f"# {title}"]
    out += [f"# {_safe.comment(h)}" for h in src.header_lines()]
    out += [f"# {_safe.comment(x)}" for x in lines]
    # No default interface: a forgotten DEV must not retune whatever NIC is called eth0 (often
    # the management one). The testbed's data interface, when recorded, is the example.
    dev = _safe.device("data interface", src.device) if src.device else "IFACE"
    out += ["set -u", "", 'DEV=${DEV:-}', 'if [ -z "$DEV" ]; then',
            f"    printf 'nictune: set DEV to the interface to tune, e.g. DEV={dev} sh %s\\n' \"$0\" >&2",
            "    exit 2", "fi"]
    return out


def _devices(items: list[Item]) -> list[str]:
    used = []
    for item in items:
        if item.family is Family.CPU_GOVERNOR:
            continue
        d = _dev(item)
        if d not in used:
            used.append(d)
    return used


def render_scripts(src: ExportSource, apply_name: str = "apply.sh", rollback_name: str = "rollback.sh") -> Scripts:
    """Both scripts' text.

    Raises:
        InvalidInputError: a target, device or value (of the configuration or of the
            recorded snapshot) that may not go into a script.
    """
    items = src.items()
    scripted = [i for i in items if _scripted(i)]
    sysctls = [i for i in items if i.family is Family.SYSCTL]
    others = [i for i in items if not _scripted(i) and i.family is not Family.SYSCTL]

    # --- apply
    body: list[str] = []
    for item in scripted:
        value = checks.checked(item)
        body.append(f"# knob {_safe.comment(f'{item.knob} = {item.knob_value}')}")
        body.append(_command(item, value))
    notes: list[str] = []
    if sysctls:
        notes.append(f"# sysctls are not set here: nictune export {src.job_id} --format sysctl (or tuned)")
        for i in sysctls:
            value = " ".join(map(str, i.value)) if isinstance(i.value, tuple) else str(i.value)
            field = f"[{i.index}]" if i.index is not None else ""
            notes.append(f"#   {_safe.comment(f'{i.target}{field} = {value} (knob {i.knob})')}")
    for item in others:
        why = _NOT_SCRIPTED.get(item.family, "no applier for this family")
        notes.append(f"# not applied: knob {_safe.comment(f'{item.knob} = {item.knob_value}')} "
                     f"({_safe.comment(item.family.value)}): {_safe.comment(why)}")
    devices = _devices(scripted)
    apply = _header(src, "Apply the measured configuration's interface settings (idempotent).", [
        f"Usage (as root, on each host of the pair): DEV=IFACE sh {apply_name}",
        f"Undo: DEV=IFACE sh {rollback_name}",
    ])
    apply.append(_HELPERS)
    apply += [f"check_dev {d}" for d in devices]
    apply += body or ["say 'nothing to apply: the configuration has no interface setting'"]
    apply += ["", *notes, 'exit "$status"']

    # --- rollback
    back: list[str] = []
    origins: set[str] = set()
    for item in reversed(scripted):
        back += _rollback_lines(src, item, origins)
    lines = [f"Usage (as root): DEV=IFACE sh {rollback_name}"]
    if "default" in origins:
        lines.append("Where the trial recorded no value, the search space's knob default is used "
                     "(see the comment above each such line).")
    lines.append("These are the values of the measured testbed (or the space's defaults), not necessarily this "
                 "host's: on another host, note its own (ethtool -g/-c/-k/-l/-a, ip link, tc qdisc) before applying.")
    rollback = _header(src, f"Roll back what {apply_name} set, to the values before the measurement.", lines)
    rollback.append(_HELPERS)
    rollback += [f"check_dev {d}" for d in devices]
    rollback += back or ["say 'nothing to roll back'"]
    rollback += ["", 'exit "$status"']
    return Scripts("\n".join(apply) + "\n", "\n".join(rollback) + "\n")


def _rollback_lines(src: ExportSource, item: Item, origins: set[str]) -> list[str]:
    what = f"{item.target} (knob {item.knob})"
    if item.family is Family.CPU_GOVERNOR:
        snap = src.snapshot_entry(Family.CPU_GOVERNOR, item.device) or {}
        cpus = {k: v for k, v in snap.items() if _safe.CPU_KEY_RE.match(str(k))}
        if cpus:
            origins.add("snapshot")
            out = [f"# {_safe.comment(what)}: governors read on the host before the measurement"]
            for cpu, gov in sorted(cpus.items()):
                out.append(f"governor_set {_safe.shell_quote(checks.checked(item, gov))} {_safe.shell_quote(cpu)}")
            return out
    if item.family is Family.QDISC:
        snap = src.snapshot_entry(Family.QDISC, item.device) or {}
        if snap.get("default") == "yes":
            origins.add("snapshot")
            kind = _safe.comment(snap.get("root", "?"))
            return [f"# {_safe.comment(what)}: the host had the kernel's own root qdisc ({kind})",
                    f"qdisc_reset {_dev(item)}"]
    before = src.before(item)
    if item.family is Family.QDISC and before.origin == "default":
        # The space's default names the qdisc under a single-queue root; on a multi-queue NIC
        # the kernel's own root is mq with one child per queue, which 'replace root' would lose.
        origins.add("snapshot")
        return [f"# {_safe.comment(what)}: the kernel's own root qdisc (mq on a multi-queue NIC)",
                f"qdisc_reset {_dev(item)}"]
    origins.add(before.origin)
    if before.value is None:
        return [f"# {_safe.comment(what)}: left as it is: {_safe.comment(before.note)}"]
    value = checks.checked(item, before.value)
    return [f"# {_safe.comment(what)}: {_safe.comment(value)} is {_safe.comment(before.note)}",
            _command(item, value)]


__all__ = ["Scripts", "render_scripts"]
