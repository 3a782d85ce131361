"""``--format tuned``: a TuneD profile (a directory holding ``tuned.conf``).

Sections and options are those of TuneD's plugins: ``[main] summary``, ``[sysctl]``
(``key=value``, fields separated by spaces), ``[net]`` (``devices``, ``mtu``,
``txqueuelen``, and ``ring``/``coalesce``/``features``/``pause``/``channels`` as
``name value name value ...`` the way ``ethtool`` takes them), ``[sysfs]`` (absolute path
= value), ``[cpu] governor`` and ``[modules]`` (``module=param=value ...``, written to
modprobe.d; effective at the driver's next load). TuneD reads the file with Python's
``configparser`` (``=`` as the only delimiter, ``#`` comments, no interpolation, option
names case-sensitive); values here never hold ``#`` or ``$`` (TuneD expands ``${...}``).
"""

from __future__ import annotations

from nictune.export import _safe, checks
from nictune.export.source import ExportSource
from nictune.export.sysctl import sysctl_lines
from nictune.search_spaces import Family

#: ethtool family -> the [net] option of TuneD that sets it.
NET_OPTIONS: dict[Family, str] = {
    Family.ETHTOOL_RINGS: "ring",
    Family.ETHTOOL_COALESCE: "coalesce",
    Family.ETHTOOL_FEATURES: "features",
    Family.ETHTOOL_PAUSE: "pause",
    Family.ETHTOOL_CHANNELS: "channels",
}

#: The interface named when the trial did not record the data interface: a name no NIC has, so a
#: profile installed without editing it changes no interface (rather than whichever one is eth0).
PLACEHOLDER_DEVICE = "CHANGE-ME"

_NOT_IN_PROFILE: dict[Family, str] = {
    Family.QDISC: "TuneD has no qdisc option: tc qdisc replace dev DEV root KIND",
    Family.IRQ_AFFINITY: "depends on the host's IRQ numbers and NUMA layout (TuneD's [irqbalance] or "
                         "[scheduler] plugins can pin IRQs)",
    Family.PLACEMENT: "where the application runs: start it with taskset/numactl",
    Family.PF_RING: "a PF_RING option of the capturing application",
    Family.PLATFORM: "a property of the (simulated) machine, not a setting",
}


def profile_name(src: ExportSource) -> str:
    """The default profile (directory) name: ``nictune-jobN`` (``-trialM`` when not the best)."""
    return f"nictune-job{src.job_id}" + ("" if src.is_best else f"-trial{src.trial}")


def _summary(src: ExportSource) -> str:
    g = src.gain
    change = g.get("change_pct")
    if isinstance(change, int | float):
        gain = f" {g.get('label')} {change:+.1f}% vs default" + (" (no better)" if src.no_gain else "")
    elif isinstance(g.get("value"), int | float):
        gain = f" {g.get('label')} {g['value']:.4g} {g.get('unit', '')}"
    else:
        gain = ""
    sim = " (simulated testbed, a model)" if src.simulated else ""
    text = f"nictune job {src.job_id} trial {src.trial}:{gain} on {src.testbed}{sim}"
    return _safe.comment(text).replace("#", "").replace("$", "").replace("%", " percent")


def render_tuned(src: ExportSource) -> str:
    """The ``tuned.conf`` text.

    Raises:
        InvalidInputError: a target, device or value that may not be exported.
    """
    items = src.items()
    data_dev = _safe.device("data interface", src.device) if src.device else None
    out = [f"# {_safe.comment(h)}" for h in src.header_lines()]
    out += [
        "# Install: copy this directory to /etc/tuned/ (its name is the profile's name), then",
        "#   tuned-adm profile <name>      (tuned-adm off, or another profile, undoes it)",
        "",
        "[main]",
        f"summary={_summary(src)}",
    ]
    if src.include:
        # TuneD applies the included profiles first, then this one's options over them.
        out.append(f"include={','.join(_safe.tuned_profiles(src.include))}")
    comments: list[str] = []

    lines, skipped = sysctl_lines(src)
    if lines:
        out += ["", "[sysctl]"]
        out += [f"{line.key}={line.value}" for line in lines]
    comments += [f"sysctl not set: {s}" for s in skipped]

    # [net] per device: None is the data interface.
    per_dev: dict[str | None, list[str]] = {}
    options: dict[str | None, dict[str, list[str]]] = {}
    sysfs: list[str] = []
    governor: str | None = None
    modules: dict[str, list[str]] = {}
    for item in items:
        fam = item.family
        if fam is Family.SYSCTL:
            continue
        dev = checks.device(item)
        if fam is Family.IP_LINK:
            per_dev.setdefault(dev, []).append(f"{checks.target(item)}={checks.checked(item)}")
        elif fam in NET_OPTIONS:
            opt = options.setdefault(dev, {}).setdefault(NET_OPTIONS[fam], [])
            opt.append(f"{checks.target(item)} {checks.checked(item)}")
            per_dev.setdefault(dev, [])
        elif fam is Family.SYSFS:
            where = dev or data_dev or PLACEHOLDER_DEVICE
            sysfs.append(f"/sys/class/net/{where}/{checks.target(item)}={checks.checked(item)}")
        elif fam is Family.CPU_GOVERNOR:
            governor = checks.checked(item)
        elif fam is Family.MODULE_PARAM:
            module, _, param = checks.target(item).partition(".")
            modules.setdefault(module, []).append(f"{param}={checks.checked(item)}")
        else:
            why = _NOT_IN_PROFILE.get(fam, "no TuneD plugin for it")
            comments.append(f"not in this profile: knob {item.knob} = {item.knob_value} ({fam.value}): {why}")

    for n, dev in enumerate(per_dev):
        name = "net" if n == 0 else f"net_{dev}"
        out += ["", f"[{name}]"]
        if n > 0:
            out.append("type=net")
        if dev is None and data_dev is None:
            # Never leave devices= out: TuneD would then change every NIC, the management one too.
            out.append(f"# the data interface was not recorded: replace {PLACEHOLDER_DEVICE} with yours "
                       "(or export with --device NAME)")
        out.append(f"devices={dev or data_dev or PLACEHOLDER_DEVICE}")
        out += per_dev[dev]
        for option, pairs in options.get(dev, {}).items():
            out.append(f"{option}={' '.join(pairs)}")
    if sysfs:
        out += ["", "[sysfs]"]
        if data_dev is None:
            out.append(f"# the data interface was not recorded: replace {PLACEHOLDER_DEVICE} with yours "
                       "(or export with --device NAME)")
        out += sysfs
    if governor is not None:
        out += ["", "[cpu]", f"governor={governor}"]
    if modules:
        out += ["", "# driver options: written to modprobe.d, they take effect when the driver is next loaded",
                "[modules]"]
        out += [f"{m}={' '.join(params)}" for m, params in modules.items()]
    if comments:
        out.append("")
        out += [f"# {_safe.comment(c)}" for c in comments]
    return "\n".join(out) + "\n"


__all__ = ["NET_OPTIONS", "PLACEHOLDER_DEVICE", "profile_name", "render_tuned"]
