"""The applier interface: probe, snapshot, apply, verify and restore one family of settings.

An applier is stateless: everything it needs to undo a change is in the snapshot it
returns, which is plain JSON data so the journal can keep it across a crash. Every value
goes through :meth:`Applier.normalize` (a strict check) before a command is built.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nictune.errors import InvalidInputError, MeasurementError, RestoreError
from nictune.measure.hosts import Host
from nictune.search_spaces import Family, Setting


@dataclass(frozen=True)
class ProbeResult:
    """Whether a family (or one target of it) can be set on a host.

    Attributes:
        supported: it can be read and written.
        reason: why not (or a caveat when supported, such as ``global sysctl``).
        limits: what the host allows (ring maxima, channel maxima, min/max MTU ...).
    """

    supported: bool
    reason: str = ""
    limits: dict[str, Any] = field(default_factory=dict)


_SNAPSHOT_TARGET_RE = re.compile(r"^[A-Za-z0-9_./\[\]-]+$")
_SNAPSHOT_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:, \t\[\]-]*$")


def check_snapshot(snapshot: Mapping[str, Any]) -> dict[str, str]:
    """Snapshot entries as strings, refusing anything a snapshot could not have produced.

    A snapshot may come back from a journal file on disk, so it is checked like input.

    Raises:
        InvalidInputError: a target or value has unexpected characters.
    """
    out: dict[str, str] = {}
    for key, value in snapshot.items():
        k, v = str(key), str(value).strip()
        if not _SNAPSHOT_TARGET_RE.match(k) or ".." in k:
            raise InvalidInputError(f"snapshot target {k!r} is not allowed", field=k)
        if not _SNAPSHOT_VALUE_RE.match(v):
            raise InvalidInputError(f"snapshot value {v!r} of {k} is not allowed", field=k)
        out[k] = v
    return out


def setting_label(setting: Setting) -> str:
    """``family/target[index]`` for messages."""
    idx = f"[{setting.index}]" if setting.index is not None else ""
    return f"{setting.family.value}/{setting.target}{idx}"


class Applier(ABC):
    """Reads and writes one :class:`Family` of settings on a host's device."""

    family: Family

    @abstractmethod
    def normalize(self, setting: Setting) -> Any:
        """The value as this applier writes it, after strict validation.

        Raises:
            InvalidInputError: the target or the value is not acceptable.
        """

    @abstractmethod
    def probe(self, host: Host, device: str) -> ProbeResult:
        """Whether this family works on ``host``/``device`` and its limits."""

    def probe_target(self, host: Host, device: str, target: str) -> ProbeResult:
        """Whether one target works; by default the family's answer."""
        return self.probe(host, device)

    @abstractmethod
    def snapshot(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, Any]:
        """Current values of exactly what ``settings`` touch (JSON-safe)."""

    @abstractmethod
    def apply(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Write ``settings``."""

    @abstractmethod
    def verify(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Read back ``settings``.

        Raises:
            MeasurementError: a value on the host differs from the setting.
        """

    @abstractmethod
    def restore(self, host: Host, device: str, snapshot: Mapping[str, Any]) -> None:
        """Put back what :meth:`snapshot` recorded, and check it.

        Raises:
            RestoreError: a value could not be written back or reads back differently.
        """


class KeyValueApplier(Applier):
    """An applier whose targets are independent named values read and written as strings.

    Subclasses say how to read all wanted targets (:meth:`read`), write several at once
    (:meth:`write`) and when two spellings are the same value (:meth:`same`).
    """

    @abstractmethod
    def read(self, host: Host, device: str, targets: Sequence[str]) -> dict[str, str]:
        """Current values of ``targets`` as strings."""

    @abstractmethod
    def write(self, host: Host, device: str, values: Mapping[str, str]) -> None:
        """Write ``values`` (target -> string)."""

    def same(self, target: str, current: str, wanted: str) -> bool:
        """Whether ``current`` (as read) is the value ``wanted`` (as written)."""
        return current.strip() == wanted.strip()

    def wanted(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, str]:
        """Key -> normalised string value, validating every setting.

        A key is the target itself here; subclasses may expand one target into several
        keys (one per IRQ, one per CPU).
        """
        return {s.target: str(self.normalize(s)) for s in settings}

    def snapshot(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, Any]:
        """Current values of the settings' keys."""
        return dict(self.read(host, device, list(self.wanted(host, device, settings))))

    def _write_changed(self, host: Host, device: str, values: Mapping[str, str]) -> None:
        current = self.read(host, device, list(values))
        changed = {t: v for t, v in values.items() if not self.same(t, current[t], v)}
        if changed:
            self.write(host, device, changed)

    def apply(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Write the settings whose value differs from the host's."""
        self._write_changed(host, device, self.wanted(host, device, settings))

    def _mismatches(self, host: Host, device: str, values: Mapping[str, str]) -> list[str]:
        current = self.read(host, device, list(values))
        return [
            f"{t}: wanted {v!r}, host has {current[t]!r}"
            for t, v in values.items()
            if not self.same(t, current[t], v)
        ]

    def verify(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Read back every target and compare."""
        bad = self._mismatches(host, device, self.wanted(host, device, settings))
        if bad:
            raise MeasurementError(
                f"{self.family.value} on {host.name}/{device} did not take: " + "; ".join(bad)
            )

    def restore(self, host: Host, device: str, snapshot: Mapping[str, Any]) -> None:
        """Write back the snapshot's values and read them back."""
        values = check_snapshot(snapshot)
        try:
            self._write_changed(host, device, values)
            bad = self._mismatches(host, device, values)
        except MeasurementError as exc:
            raise RestoreError(
                f"{self.family.value} on {host.name}/{device}: restore failed: {exc}"
            ) from exc
        if bad:
            raise RestoreError(
                f"{self.family.value} on {host.name}/{device}: restore did not take: "
                + "; ".join(bad)
            )
