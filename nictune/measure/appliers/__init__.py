"""Appliers: probe, snapshot, apply, verify and restore one family of host settings."""

from __future__ import annotations

from nictune.measure.appliers._base import (
    Applier,
    KeyValueApplier,
    ProbeResult,
    check_snapshot,
    setting_label,
)
from nictune.measure.appliers.ethtool import (
    FEATURE_ALIASES,
    EthtoolApplier,
    EthtoolChannelsApplier,
    EthtoolCoalesceApplier,
    EthtoolFeaturesApplier,
    EthtoolPauseApplier,
    EthtoolRingsApplier,
    parse_ethtool,
)
from nictune.measure.appliers.files import (
    GOVERNORS,
    CpuGovernorApplier,
    FileApplier,
    IrqAffinityApplier,
    SysfsApplier,
    device_irqs,
)
from nictune.measure.appliers.ip_link import IpLinkApplier, link_info
from nictune.measure.appliers.qdisc import (
    PLACEMENT_TARGETS,
    QDISCS,
    PlacementApplier,
    QdiscApplier,
    root_qdisc,
)
from nictune.measure.appliers.registry import (
    APPLIERS,
    UNSUPPORTED,
    applier_for,
    validate_settings,
)
from nictune.measure.appliers.sysctl import SysctlApplier

__all__ = [
    "APPLIERS",
    "FEATURE_ALIASES",
    "GOVERNORS",
    "PLACEMENT_TARGETS",
    "QDISCS",
    "UNSUPPORTED",
    "Applier",
    "CpuGovernorApplier",
    "EthtoolApplier",
    "EthtoolChannelsApplier",
    "EthtoolCoalesceApplier",
    "EthtoolFeaturesApplier",
    "EthtoolPauseApplier",
    "EthtoolRingsApplier",
    "FileApplier",
    "IpLinkApplier",
    "IrqAffinityApplier",
    "KeyValueApplier",
    "PlacementApplier",
    "ProbeResult",
    "QdiscApplier",
    "SysctlApplier",
    "SysfsApplier",
    "applier_for",
    "check_snapshot",
    "device_irqs",
    "link_info",
    "parse_ethtool",
    "root_qdisc",
    "setting_label",
    "validate_settings",
]
