"""``--format script``: a POSIX shell script that applies the non-sysctl settings, and its rollback.

Both scripts are idempotent: every setting is read first and written only when it
differs, so running one twice changes nothing the second time. The interface is
``$DEV``, which must be given (no default: a forgotten DEV must not retune whatever NIC
happens to be called eth0; the testbed's data interface is the example in the message), and
is checked before anything runs. Every value comes from
:mod:`nictune.export.checks` (an integer or a plain word) and is single-quoted, so a
crafted search space cannot smuggle a command in.

Before changing a setting, the apply script records the host's value in ``$STATE`` (the
first time only); the rollback puts those values back and removes the record. Values read
from the host are recorded and replayed only when they are plain words (letters, digits,
``_.:-``). Without a record the rollback changes nothing unless ``FALLBACK=testbed``: then
it writes what the trial's snapshot recorded on the testbed, or where it recorded nothing
(always on a simulated testbed) the space's knob default, saying so next to each line.
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

# Readers of the current value, for the state file.
link_now() {
    case $2 in mtu) cat "/sys/class/net/$1/mtu" ;; txqueuelen) cat "/sys/class/net/$1/tx_queue_len" ;; esac 2>/dev/null
}
sysfs_now() { cat "/sys/class/net/$1/$2" 2>/dev/null; }
# qdisc_now DEV: the root qdisc's kind, or 'default' for the kernel's own (handle 0:).
qdisc_now() { tc qdisc show dev "$1" root 2>/dev/null | awk 'NR == 1 { print ($3 == "0:" ? "default" : $2) }'; }

# remember KEY VALUE: the value a setting had before this script first changed it, in $STATE
# (a second run keeps the first value, so the rollback always goes back to the host's own).
remember() {
    case $2 in ''|*[!A-Za-z0-9_.:-]*) say "$1: current value '$2' not recorded"; return ;; esac
    if [ -f "$STATE" ] && awk -v k="$1" '$1 == k { found = 1 } END { exit !found }' "$STATE"; then return; fi
    case $STATE in */*) mkdir -p "${STATE%/*}" || { fail "cannot create ${STATE%/*}"; return; } ;; esac
    printf '%s %s\n' "$1" "$2" >> "$STATE" || fail "cannot write $STATE"
}

# remember_governors: every CPU's scaling_governor before this script changes it.
remember_governors() {
    for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
        [ -e "$f" ] || continue
        cpu=${f#/sys/devices/system/cpu/}; cpu=${cpu%%/*}
        remember "cpu_governor:$cpu" "$(cat "$f" 2>/dev/null)"
    done
}

# recall KEY: the value remember recorded (exit 1 when there is none).
recall() {
    [ -f "$STATE" ] || return 1
    v=$(awk -v k="$1" '$1 == k { v = $2 } END { if (v == "") exit 1; print v }' "$STATE") || return 1
    case $v in *[!A-Za-z0-9_.:-]*) fail "$STATE: unreadable value for $1"; return 1 ;; esac
    printf '%s\n' "$v"
}

# recall_governors: put back every CPU's recorded scaling_governor.
recall_governors() {
    [ -f "$STATE" ] || return 0
    for pair in $(awk '$1 ~ /^cpu_governor:cpu[0-9]+$/ && $2 ~ /^[A-Za-z0-9_.-]+$/ {
                           sub(/^cpu_governor:/, "", $1); print $1 "=" $2 }' "$STATE"); do
        governor_set "${pair#*=}" "${pair%%=*}"
    done
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


#: Where the apply script records the host's values before changing them ($STATE overrides).
STATE_DIR = "/var/lib/nictune"


def _dev(item: Item) -> str:
    dev = checks.device(item)
    return '"$DEV"' if dev is None else _safe.shell_quote(dev)


def _key(item: Item) -> str:
    """``item``'s key in the state file (no spaces: family, device, target)."""
    return f"{item.family.value}:{checks.device(item) or 'DEV'}:{checks.target(item)}"


def _reader(item: Item) -> str:
    """A shell command printing ``item``'s current value on the host."""
    dev, tgt = _dev(item), checks.target(item)
    fam = item.family
    if fam is Family.IP_LINK:
        return f"link_now {dev} {tgt}"
    if fam in _ETHTOOL:
        show, _, labels = _ETHTOOL[fam]
        return f"ethtool_now {dev} {show} '{labels.get(tgt, tgt)}'"
    if fam is Family.SYSFS:
        return f"sysfs_now {dev} {_safe.shell_quote(tgt)}"
    if fam is Family.QDISC:
        return f"qdisc_now {dev}"
    raise AssertionError(f"no reader for {fam}")  # the governor is remembered per CPU


def _remember(item: Item) -> str:
    if item.family is Family.CPU_GOVERNOR:
        return "remember_governors"
    return f"remember '{_key(item)}' \"$({_reader(item)})\""


def _restore(item: Item) -> str:
    """Put ``item``'s setting back to what :func:`_remember` recorded."""
    if item.family is Family.CPU_GOVERNOR:
        return "recall_governors"
    key = _key(item)
    if item.family is Family.QDISC:
        put = f'if [ "$v" = default ]; then qdisc_reset {_dev(item)}; else qdisc_set {_dev(item)} "$v"; fi'
    else:
        put = _command(item, "", quoted='"$v"')
    return f"if v=$(recall '{key}'); then {put}; else say '{key}: no value recorded, left as it is'; fi"


def _command(item: Item, value: str, *, quoted: str | None = None) -> str:
    """The helper call that sets ``item``'s target to ``value`` (already checked), or to the
    shell expression ``quoted``."""
    dev, tgt = _dev(item), checks.target(item)
    q = quoted if quoted is not None else _safe.shell_quote(value)
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
            "    exit 2", "fi",
            'if [ "$(id -u)" != 0 ]; then',
            "    printf 'nictune: run %s as root (it reads and writes interface and CPU settings)\\n' \"$0\" >&2",
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
        body.append(_remember(item))
        body.append(_command(item, value))
    notes: list[str] = []
    if sysctls:
        notes.append(f"# sysctls are not set here: nictune export {src.job_id} --format sysctl (or tuned)")
        for i in sysctls:
            checks.checked(i)  # a key outside the allow-list is refused, not even named in a comment
            value = " ".join(map(str, i.value)) if isinstance(i.value, tuple) else str(i.value)
            field = f"[{i.index}]" if i.index is not None else ""
            notes.append(f"#   {_safe.comment(f'{i.target}{field} = {value} (knob {i.knob})')}")
    for item in others:
        why = _NOT_SCRIPTED.get(item.family, "no applier for this family")
        notes.append(f"# not applied: knob {_safe.comment(f'{item.knob} = {item.knob_value}')} "
                     f"({_safe.comment(item.family.value)}): {_safe.comment(why)}")
    devices = _devices(scripted)
    state = [f"STATE=${{STATE:-{STATE_DIR}/job{src.job_id}-trial{src.trial}-$DEV.state}}"]
    apply = _header(src, "Apply the measured configuration's interface settings (idempotent).", [
        f"Usage (as root, on each host of the pair): DEV=IFACE sh {apply_name}",
        f"Undo: DEV=IFACE sh {rollback_name}",
        "Before changing a setting it records the host's value in $STATE (once: running it again keeps "
        "the first record), which the rollback puts back.",
    ]) + state
    apply.append(_HELPERS)
    apply += [f"check_dev {d}" for d in devices]
    apply += body or ["say 'nothing to apply: the configuration has no interface setting'"]
    apply += ["", *notes, 'exit "$status"']

    # --- rollback
    back: list[str] = []
    origins: set[str] = set()
    for item in reversed(scripted):
        back += _rollback_lines(src, item, origins)
    lines = [f"Usage (as root): DEV=IFACE sh {rollback_name}",
             f"It puts back the host's own values, which {apply_name} recorded in $STATE, and removes the "
             "record once every value is back. Without the record it changes nothing, unless "
             "FALLBACK=testbed: then it writes the measured testbed's values instead (below), which "
             "need not be this host's."]
    if "default" in origins:
        lines.append("Where the trial recorded no value, the search space's knob default is used "
                     "(see the comment above each such line).")
    rollback = _header(src, f"Roll back what {apply_name} set, to the host's values before it.", lines) + state
    rollback.append(_HELPERS)
    rollback += [f"check_dev {d}" for d in devices]
    if scripted:
        rollback += ['if [ -f "$STATE" ]; then',
                     *(f"    {_restore(item)}" for item in reversed(scripted)),
                     '    if [ "$status" = 0 ]; then rm -f "$STATE" && say "every value is back; removed $STATE"; fi',
                     'elif [ "${FALLBACK:-}" = testbed ]; then',
                     *(f"    {line}" for line in back),
                     "else",
                     f"    printf 'nictune: no record of the values {apply_name} changed on this host (%s): nothing "
                     "rolled back. FALLBACK=testbed writes the measured testbed values instead\\n' \"$STATE\" >&2",
                     "    exit 1",
                     "fi"]
    else:
        rollback.append("say 'nothing to roll back'")
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
        return [f"# {_safe.comment(what)}: the kernel's own root qdisc (mq on a multi-queue NIC)",
                f"qdisc_reset {_dev(item)}"]
    origins.add(before.origin)
    if before.value is None:
        return [f"# {_safe.comment(what)}: left as it is: {_safe.comment(before.note)}"]
    value = checks.checked(item, before.value)
    return [f"# {_safe.comment(what)}: {_safe.comment(value)} is {_safe.comment(before.note)}",
            _command(item, value)]


__all__ = ["Scripts", "render_scripts"]
