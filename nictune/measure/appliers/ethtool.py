"""The ethtool families: features (-K), rings (-G), coalescing (-C), pause (-A), channels (-L).

Each reads the matching show command (-k, -g, -c, -a, -l), writes only the fields that
differ (ethtool refuses a "change" to the current value on some drivers) and reads back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from nictune.errors import HostCommandError, MeasurementError
from nictune.measure.appliers._base import KeyValueApplier, ProbeResult
from nictune.measure.hosts import Host
from nictune.measure.validation import check_device, check_int_text, check_on_off, check_token
from nictune.search_spaces import Family, Setting

_SECTION_MAX = "pre-set maximums"
_SECTION_CUR = "current hardware settings"
_FEATURE_RE = re.compile(r"^[a-z][a-z0-9-]{1,63}$")

#: Short names ``ethtool -K`` accepts -> the long names ``ethtool -k`` prints.
FEATURE_ALIASES: dict[str, str] = {
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "sg": "scatter-gather",
    "tso": "tcp-segmentation-offload",
    "ufo": "udp-fragmentation-offload",
    "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload",
    "lro": "large-receive-offload",
    "rxvlan": "rx-vlan-offload",
    "txvlan": "tx-vlan-offload",
    "ntuple": "ntuple-filters",
    "rxhash": "receive-hashing",
}


def parse_ethtool(text: str) -> dict[str, dict[str, str]]:
    """``Key: value`` lines of an ethtool show command, grouped by section (lower-cased).

    Lines before any section header go to section ``""``. ``Adaptive RX: on  TX: off`` is
    split into ``adaptive-rx`` and ``adaptive-tx``.
    """
    sections: dict[str, dict[str, str]] = {"": {}}
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not value and not raw.startswith(("\t", " ")):
            # "Coalesce parameters for eth0:" starts the values; "Pre-set maximums:" a section.
            current = "" if re.search(r"\bfor \S+$", key) else key.lower()
            sections.setdefault(current, {})
            continue
        m = re.match(r"^(\S+)\s+TX:\s*(\S+)$", value)
        if key == "Adaptive RX" and m:
            sections[current]["adaptive-rx"] = m.group(1)
            sections[current]["adaptive-tx"] = m.group(2)
            continue
        sections[current][key] = value
    return sections


class EthtoolApplier(KeyValueApplier):
    """Shared logic: subclasses set the flags and the target table.

    Attributes:
        show: the flag that prints the values (``-c``).
        set: the flag that writes them (``-C``).
        targets: target -> (label in the show output, ``"int"`` or ``"onoff"``).
        section: which section of the show output holds current values.
    """

    show: str
    set: str
    targets: ClassVar[dict[str, tuple[str, str]]]
    section = ""

    def normalize(self, setting: Setting) -> Any:
        """Known target; integers for counts, on/off for switches."""
        target = check_token(f"{self.family.value} target", setting.target, self.targets)
        if self.targets[target][1] == "onoff":
            return check_on_off(target, setting.value)
        return check_int_text(target, setting.value, 0, 1 << 24)

    def _show(self, host: Host, device: str) -> dict[str, dict[str, str]]:
        res = host.run(["ethtool", self.show, check_device(device)], check=False)
        if res.returncode != 0:
            why = (res.stderr.strip() or res.stdout.strip() or "failed").splitlines()[-1]
            raise HostCommandError(f"{host.name}: ethtool {self.show} {device}: {why}")
        return parse_ethtool(res.stdout)

    def read(self, host: Host, device: str, targets: Sequence[str]) -> dict[str, str]:
        """Current values from the show command."""
        values = self._show(host, device).get(self.section, {})
        out = {}
        for t in targets:
            label = self.targets[t][0]
            if values.get(label, "n/a") == "n/a":
                raise MeasurementError(f"{host.name}: {device} does not report {t} ({self.show})")
            out[t] = values[label]
        return out

    def write(self, host: Host, device: str, values: Mapping[str, str]) -> None:
        """One ``ethtool -X DEV t1 v1 t2 v2 ...``."""
        argv = ["ethtool", self.set, check_device(device)]
        for target, value in values.items():
            argv += [target, str(self.normalize(Setting(self.family, target, value)))]
        host.run(argv)

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when the show command works; limits are the reported values."""
        try:
            sections = self._show(host, device)
        except HostCommandError as exc:
            return ProbeResult(False, str(exc))
        limits: dict[str, Any] = {}
        current = sections.get(self.section, {})
        maxima = sections.get(_SECTION_MAX, {})
        for target, (label, _) in self.targets.items():
            if current.get(label, "n/a") != "n/a":
                limits[target] = current[label]
            if maxima.get(label, "n/a") != "n/a":
                limits[f"{target}_max"] = int(maxima[label])
        if not limits:
            return ProbeResult(False, f"{device} reports no {self.family.value} fields")
        return ProbeResult(True, "", limits)

    def probe_target(self, host: Host, device: str, target: str) -> ProbeResult:
        """Supported when the device reports this field."""
        check_token(f"{self.family.value} target", target, self.targets)
        family = self.probe(host, device)
        if not family.supported:
            return family
        if target not in family.limits:
            return ProbeResult(False, f"{device} does not report {target} (ethtool {self.show})")
        lim = {k: v for k, v in family.limits.items() if k in (target, f"{target}_max")}
        return ProbeResult(True, "", lim)


class EthtoolRingsApplier(EthtoolApplier):
    """Ring sizes (``-G rx N tx N``); maxima from ``-g``."""

    family = Family.ETHTOOL_RINGS
    show, set, section = "-g", "-G", _SECTION_CUR
    targets: ClassVar[dict[str, tuple[str, str]]] = {
        "rx": ("RX", "int"),
        "rx-mini": ("RX Mini", "int"),
        "rx-jumbo": ("RX Jumbo", "int"),
        "tx": ("TX", "int"),
    }


class EthtoolChannelsApplier(EthtoolApplier):
    """Queue counts (``-L combined N``); maxima from ``-l``."""

    family = Family.ETHTOOL_CHANNELS
    show, set, section = "-l", "-L", _SECTION_CUR
    targets: ClassVar[dict[str, tuple[str, str]]] = {
        "rx": ("RX", "int"),
        "tx": ("TX", "int"),
        "other": ("Other", "int"),
        "combined": ("Combined", "int"),
    }


class EthtoolPauseApplier(EthtoolApplier):
    """Flow control (``-A autoneg|rx|tx on|off``)."""

    family = Family.ETHTOOL_PAUSE
    show, set = "-a", "-A"
    targets: ClassVar[dict[str, tuple[str, str]]] = {
        "autoneg": ("Autonegotiate", "onoff"),
        "rx": ("RX", "onoff"),
        "tx": ("TX", "onoff"),
    }


#: Integer fields of ``ethtool -C`` (the export package writes the same ones).
COALESCE_INTS = (
    "rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq",
    "tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq",
    "stats-block-usecs", "sample-interval", "pkt-rate-low", "pkt-rate-high",
    "rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low",
    "rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high",
)  # fmt: skip


class EthtoolCoalesceApplier(EthtoolApplier):
    """Interrupt coalescing (``-C rx-usecs N adaptive-rx on|off``)."""

    family = Family.ETHTOOL_COALESCE
    show, set = "-c", "-C"
    targets: ClassVar[dict[str, tuple[str, str]]] = {
        "adaptive-rx": ("adaptive-rx", "onoff"),
        "adaptive-tx": ("adaptive-tx", "onoff"),
        **{name: (name, "int") for name in COALESCE_INTS},
    }


class EthtoolFeaturesApplier(EthtoolApplier):
    """Offloads (``-K DEV gro on``); targets are ethtool feature names or their aliases."""

    family = Family.ETHTOOL_FEATURES
    show, set = "-k", "-K"
    targets: ClassVar[dict[str, tuple[str, str]]] = {}

    def normalize(self, setting: Setting) -> Any:
        """A feature name (``gro``, ``rx-gro-hw`` ...) and on/off."""
        if not isinstance(setting.target, str) or not _FEATURE_RE.match(setting.target):
            check_token("ethtool feature", setting.target, FEATURE_ALIASES)
        return check_on_off(setting.target, setting.value)

    def _features(self, host: Host, device: str) -> dict[str, tuple[str, bool]]:
        values = self._show(host, device).get("", {})
        return {k: (v.split()[0], "[fixed]" in v) for k, v in values.items() if v}

    def read(self, host: Host, device: str, targets: Sequence[str]) -> dict[str, str]:
        """``on``/``off`` of each feature (alias or long name)."""
        features = self._features(host, device)
        out = {}
        for t in targets:
            name = FEATURE_ALIASES.get(t, t)
            if name not in features:
                raise MeasurementError(f"{host.name}: {device} has no feature {t}")
            out[t] = features[name][0]
        return out

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when ``-k`` works; limits list the changeable features."""
        try:
            features = self._features(host, device)
        except HostCommandError as exc:
            return ProbeResult(False, str(exc))
        changeable = sorted(k for k, (_, fixed) in features.items() if not fixed)
        return ProbeResult(True, "", {"changeable": changeable})

    def probe_target(self, host: Host, device: str, target: str) -> ProbeResult:
        """Supported when the feature exists and is not ``[fixed]``."""
        self.normalize(Setting(self.family, target, "on"))
        try:
            features = self._features(host, device)
        except HostCommandError as exc:
            return ProbeResult(False, str(exc))
        name = FEATURE_ALIASES.get(target, target)
        if name not in features:
            return ProbeResult(False, f"{device} has no feature {target}")
        value, fixed = features[name]
        if fixed:
            return ProbeResult(False, f"{target} is fixed {value} on {device}")
        return ProbeResult(True, "", {"current": value})
