"""Interfaces of the search-space layer: knob families, the Knob ABC and host settings.

A *knob* is one dimension of a search space (``mtu``, ``rx_mode``, ``poll_usecs`` ...).
A knob's value turns into one or more *settings*: a concrete thing to write on a host,
named by an applier family and a target (``sysctl`` / ``net.core.rmem_max``). The
simulated testbed reads the same settings, so one space drives the model and real hosts.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from nictune.errors import ConfigurationError

#: A knob value after normalisation: int, float, str (choice) or bool.
Value = int | float | str | bool
#: A value a setting can take on a host; sysctl triples such as tcp_rmem are tuples.
SettingValue = int | float | str | bool | tuple[int, ...]


class Family(StrEnum):
    """Which applier writes a knob's settings on a host."""

    SYSCTL = "sysctl"
    IP_LINK = "ip_link"
    ETHTOOL_FEATURES = "ethtool_features"
    ETHTOOL_RINGS = "ethtool_rings"
    ETHTOOL_COALESCE = "ethtool_coalesce"
    ETHTOOL_PAUSE = "ethtool_pause"
    ETHTOOL_CHANNELS = "ethtool_channels"
    SYSFS = "sysfs"
    IRQ_AFFINITY = "irq_affinity"
    CPU_GOVERNOR = "cpu_governor"
    MODULE_PARAM = "module_param"
    QDISC = "qdisc"
    PLACEMENT = "placement"
    PF_RING = "pf_ring"
    #: Properties of the host that are not settable at run time (simulator only).
    PLATFORM = "platform"


@dataclass(frozen=True, order=True)
class Setting:
    """One concrete value to put on a host.

    Attributes:
        family: the applier family that writes it.
        target: what it writes, in the family's own vocabulary (a sysctl key, an ethtool
            coalesce field such as ``rx-usecs``, an ``ip link`` attribute such as ``mtu``).
        value: the value to write.
        index: for multi-value sysctls (``net.ipv4.tcp_rmem``), which field; ``None`` for
            the whole value.
        device: the interface it applies to; ``None`` means the testbed's data interface.
    """

    family: Family
    target: str
    value: SettingValue
    index: int | None = None
    device: str | None = None

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        """Identity of what the setting writes, without its value."""
        return (self.family.value, self.target, self.index, self.device)


#: Bottleneck counters of a measurement that a knob can say it relieves (``relieves:`` in a
#: space file; what each counts: ``METRICS`` in :mod:`nictune.measure._base`). The ``bayes``
#: engine reads them to change, in some rounds, a knob that relieves the bottleneck the best
#: configurations show.
BOTTLENECKS: tuple[str, ...] = (
    "qdisc_drops", "ring_drops", "backlog_drops", "socket_drops", "rx_core_busy_pct", "tx_core_busy_pct",
)
#: Directions an ordered knob can relieve a bottleneck in (instead of naming a value).
DIRECTIONS = ("up", "down")


@dataclass(frozen=True)
class Relief:
    """A knob relieves ``metric`` (a :data:`BOTTLENECKS` name) when set to ``value``, or when
    moved in ``direction`` (``up``/``down``, ordered knobs only)."""

    metric: str
    value: Value | None = None
    direction: str | None = None

    def describe(self) -> str:
        how = self.direction or (str(self.value).lower() if isinstance(self.value, bool) else self.value)
        return f"{self.metric}: {how}"


@dataclass(frozen=True)
class Condition:
    """A knob exists only while another knob (its parent) has one of ``values``."""

    knob: str
    values: tuple[Value, ...]

    def holds(self, parent_value: Value | None) -> bool:
        return parent_value is not None and parent_value in self.values

    def describe(self) -> str:
        vals = ", ".join(str(v) for v in self.values)
        return f"{self.knob} in [{vals}]" if len(self.values) > 1 else f"{self.knob} == {vals}"


@dataclass
class Knob(ABC):
    """One dimension of a search space.

    Attributes:
        name: unique name inside the space (``[a-z0-9_.]+``).
        default: the value an untuned host has.
        unit: unit of the value (``bytes``, ``us``, ``frames`` ...), empty when none.
        description: one sentence for humans.
        family: the applier family of the knob's settings.
        target: the setting's target; a trailing ``[i]`` selects a field of a multi-value sysctl.
        device: interface the knob is for (multi-NIC spaces), ``None`` for the data interface.
        condition: the knob is active only when this holds.
        settings: for choice/bool knobs, the settings each value stands for, when a value
            expands to several settings (a buffer *set*, an interrupt *mode*).
        relieves: bottleneck counters this knob relieves, and with which value or direction.
    """

    name: str
    default: Any
    unit: str = ""
    description: str = ""
    family: Family = Family.SYSCTL
    target: str | None = None
    device: str | None = None
    condition: Condition | None = None
    settings: dict[Any, list[Setting]] = field(default_factory=dict)
    relieves: tuple[Relief, ...] = ()

    kind: str = field(init=False, default="")

    @abstractmethod
    def parse(self, raw: Any) -> Value:
        """Turn user input (a CLI string, a YAML/JSON scalar) into a normalised value.

        Raises:
            ConfigurationError: naming the knob and the allowed values.
        """

    @abstractmethod
    def allowed(self) -> str:
        """Human-readable description of the allowed values."""

    @abstractmethod
    def cardinality(self) -> int | None:
        """Number of distinct values, ``None`` for a continuous knob."""

    @abstractmethod
    def sample(self, rng: random.Random) -> Value:
        """A uniformly drawn value (uniform in log space for log-scaled knobs)."""

    @abstractmethod
    def encode(self, value: Value) -> float:
        """Position of ``value`` in ``[0, 1]`` (index-based for discrete knobs)."""

    @abstractmethod
    def decode(self, position: float) -> Value:
        """Inverse of :meth:`encode`: the value nearest to ``position`` in ``[0, 1]``."""

    def values(self) -> list[Value] | None:
        """All values in order, or ``None`` when there are too many to list."""
        return None

    def quantile(self, u: float) -> Value:
        """The value at quantile ``u`` in ``[0, 1)`` of the uniform distribution over the knob's
        values: each listed value owns an equal share of ``[0, 1)``, so a uniform ``u`` draws
        every value equally often (the end values included). Knobs too large to list use
        :meth:`decode` (uniform in log space for log-scaled ones)."""
        u = min(max(u, 0.0), 1.0)
        listed = self.values()
        if listed:
            return listed[min(len(listed) - 1, int(u * len(listed)))]
        return self.decode(u)

    def mutate(self, value: Value, rng: random.Random, scale: float = 0.2) -> Value:
        """A nearby different value (Gaussian step in encoded space), never out of range."""
        card = self.cardinality()
        if card == 1:
            return value
        for _ in range(8):
            pos = min(1.0, max(0.0, self.encode(value) + rng.gauss(0.0, scale)))
            new = self.decode(pos)
            if new != value:
                return new
        return self.sample(rng)

    @property
    def ordered(self) -> bool:
        """Whether the values have an order (numbers), so that "up" and "down" mean something."""
        return True

    def relief_value(self, value: Value, relief: Relief) -> Value | None:
        """The value that applies ``relief`` to a configuration where this knob is ``value``:
        the named value, or for a direction a bold step: halfway from ``value`` to the end of
        the range (at least to the next value). ``None`` when ``value`` is already there."""
        if relief.direction is None:
            return None if relief.value == value else relief.value
        listed = self.values()
        if listed is not None:
            i = listed.index(value) if value in listed else 0
            rest = listed[i + 1:] if relief.direction == "up" else listed[:i][::-1]
            return rest[(len(rest) - 1) // 2] if rest else None
        pos = self.encode(value)
        new = self.decode((pos + 1.0) / 2.0 if relief.direction == "up" else pos / 2.0)
        return None if new == value else new

    def error(self, raw: Any, why: str = "") -> ConfigurationError:
        reason = f" ({why})" if why else ""
        return ConfigurationError(
            f"knob {self.name!r}: invalid value {raw!r}{reason}; allowed: {self.allowed()}",
            field=self.name,
            allowed=self.allowed(),
        )

    def to_settings(self, value: Value) -> list[Setting]:
        """The host settings that this knob's ``value`` stands for."""
        if value in self.settings:
            return list(self.settings[value])
        if self.target is None:
            return []
        target, index = split_target(self.target)
        return [Setting(self.family, target, value, index, self.device)]

    def describe(self) -> dict[str, Any]:
        """A plain-data description (for ``spaces show`` and the API)."""
        out: dict[str, Any] = {"name": self.name, "type": self.kind, "default": self.default}
        out["allowed"] = self.allowed()
        if self.unit:
            out["unit"] = self.unit
        out["family"] = self.family.value
        if self.target:
            out["target"] = self.target
        if self.device:
            out["device"] = self.device
        if self.condition:
            out["when"] = self.condition.describe()
        if self.relieves:
            out["relieves"] = ", ".join(r.describe() for r in self.relieves)
        if self.description:
            out["description"] = self.description
        return out


def split_target(target: str) -> tuple[str, int | None]:
    """``"net.ipv4.tcp_rmem[2]"`` -> ``("net.ipv4.tcp_rmem", 2)``."""
    if target.endswith("]") and "[" in target:
        base, _, idx = target[:-1].rpartition("[")
        return base, int(idx)
    return target, None
