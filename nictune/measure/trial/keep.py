"""Apply a configuration to a testbed and keep it (``nictune apply``), journaled for ``nictune restore``.

The snapshot is written to a journal of its own (``<state dir>/applied``) before anything
changes, so that ``nictune restore --testbed T`` can put the previous values back later,
from another process or after a reboot of nictune. Trial journals (in ``<state dir>/journal``)
are replayed automatically when a worker starts; a kept configuration is not: it stays until
the user restores it.

Applying holds a trial's locks (:meth:`Trial.holding`: the testbed's, and the machines'
whose machine-wide settings it changes) and restores what a dead trial left there first;
restoring holds the testbed's lock and those of every machine the kept configuration was
applied on. So both wait for a trial running on the testbed instead of snapshotting or
overwriting its values, and a trial waits for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nictune.errors import InvalidInputError, MeasurementError, NictuneError, RestoreError
from nictune.measure.appliers import applier_for, validate_settings
from nictune.measure.benchmarks.benchmark import Endpoints
from nictune.measure.hosts import Host, NetnsHost, host_from_spec, is_global_sysctl
from nictune.measure.trial.journal import Journal, ReplayReport, replay_journal, state_dir
from nictune.measure.trial.locks import MACHINE_FAMILIES, testbed_locks
from nictune.measure.trial.transaction import Step, Trial, check_reachable, plan
from nictune.search_spaces import Family, Setting


def applied_dir() -> Path:
    """Where journals of kept configurations live."""
    return state_dir().parent / "applied"


def keep_settings(ends: Endpoints, settings: list[Setting], testbed: str) -> list[str]:
    """Snapshot, journal, apply and verify ``settings`` on both hosts, and leave them applied.

    Returns:
        One line per applied step (side, family, device).

    Raises:
        InvalidInputError: a setting is not valid, or a configuration is already kept there.
        MeasurementError: applying failed; what was applied has been restored.
    """
    checked = validate_settings(settings)
    steps = plan(checked, ends)
    with Trial(ends, Journal(testbed)).holding(steps):
        return _keep(ends, steps, checked, testbed)


def _machine(host: Host) -> str:
    """Which machine ``host`` is: its machine id when it has one (SSH), else this machine."""
    ident = host.machine_id()
    return "" if ident is None else ident or host.name


def _machine_wide(host: Host, machine: str, family: Family, device: str,
                  targets: Iterable[str]) -> set[tuple[str, str]]:
    """(machine, setting) of the machine-wide settings among ``targets`` written on ``host``."""
    if family in MACHINE_FAMILIES:
        return {(machine, f"{family.value} {device}")}
    if family is not Family.SYSCTL:
        return set()
    return {(machine, key) for key in targets if is_global_sysctl(key) or not isinstance(host, NetnsHost)}


def _held_elsewhere(steps: list[Step], testbed: str) -> dict[str, list[str]]:
    """Machine-wide settings that ``steps`` would write and that a configuration kept on another
    testbed already holds, by that testbed. A second apply would journal the first one's values
    as the host's own, and restoring the two in the order they were applied would leave the
    first one's values on the machine."""
    mine: set[tuple[str, str]] = set()
    for step in steps:
        mine |= _machine_wide(step.host, _machine(step.host), step.family, step.device,
                              (s.target for s in step.settings))
    if not mine or not applied_dir().is_dir():
        return {}
    held: dict[str, list[str]] = {}
    for path in sorted(applied_dir().glob("*.json")):
        try:
            record = Journal.at(path).read() or {}
        except InvalidInputError:
            continue
        other = str(record.get("testbed", path.stem))
        if other == testbed:
            continue
        hosts: dict[str, tuple[Host, str]] = {}  # side -> (host, machine), looked up once
        for entry in record.get("entries") or []:
            try:
                side = entry["side"]
                if side not in hosts:
                    host = host_from_spec(record["hosts"][side])
                    hosts[side] = (host, _machine(host))
                theirs = _machine_wide(*hosts[side], Family(entry["family"]), str(entry.get("device", "")),
                                       entry.get("snapshot") or {})
            except (NictuneError, KeyError, TypeError, ValueError):
                continue
            for _, name in sorted(theirs & mine):
                if name not in held.setdefault(other, []):
                    held[other].append(name)
    return held


def _keep(ends: Endpoints, steps: list[Step], checked: list[Setting], testbed: str) -> list[str]:
    journal = Journal(testbed, applied_dir())
    if journal.exists():
        raise InvalidInputError(
            f"a configuration is already applied on {testbed}; undo it first with "
            f"nictune restore --testbed {testbed}", field="testbed")
    held = _held_elsewhere(steps, testbed)
    if held:
        other, names = next(iter(held.items()))
        raise InvalidInputError(
            f"{other} keeps a configuration that set machine-wide settings {testbed} would change too "
            f"({', '.join(names)}); restore it first with nictune restore --testbed {other}",
            field="testbed", allowed=f"nictune restore --testbed {other} first")
    trial = Trial(ends, journal)
    entries: list[dict[str, Any]] = []
    trial._snapshot(steps, entries)
    try:
        for step in steps:
            applier_for(step.family).apply(step.host, step.device, step.settings)
        for step in steps:
            applier_for(step.family).verify(step.host, step.device, step.settings)
        mtu_changed = any(s.family is Family.IP_LINK and s.target == "mtu" for s in checked)
        check_reachable(ends, mtu_changed)
    except BaseException as exc:
        problems = trial._restore(steps, entries)
        if problems:
            raise RestoreError(f"apply failed and the restore did too (journal kept at {journal.path}): "
                               + "; ".join(problems)) from exc
        journal.clear()
        if isinstance(exc, NictuneError):
            raise MeasurementError(f"apply failed, previous settings restored: {exc}") from exc
        raise
    return [f"{step.side} {step.family.value} {step.device}: "
            + ", ".join(f"{s.target}={s.value}" for s in step.settings) for step in steps]


def restore_kept(testbed: str) -> ReplayReport | None:
    """Put back what :func:`keep_settings` replaced on ``testbed``; ``None`` if nothing is kept."""
    kept = Journal(testbed, applied_dir())
    if not kept.exists():
        return None  # nothing kept: no need to wait for a trial running there
    try:
        record = kept.read() or {}
    except InvalidInputError:
        record = {}  # replay_journal reports it
    hosts: list[Host] = []
    for spec in record.get("hosts", {}).values():
        try:
            hosts.append(host_from_spec(spec))
        except (NictuneError, KeyError, TypeError, ValueError):
            continue  # replay_journal reports the entries it cannot restore
    with testbed_locks(Journal(testbed).lock_path, testbed, hosts):
        reports = replay_journal(applied_dir(), testbed=testbed, force=True)
    return reports[0] if reports else None
