"""The apply journal: what to put back if nictune dies while settings are applied.

Before a trial changes anything, it writes one JSON file per testbed under the state
directory (``$NICTUNE_STATE_DIR`` or platformdirs' ``user_state_dir("nictune")/journal``)
with the snapshot of both hosts and how to reach them, fsyncs it and the directory. The
file is removed only after a verified restore. :func:`replay_journal` restores whatever a
crash (SIGKILL, power loss) left behind.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs

from nictune.errors import InvalidInputError, NictuneError, RestoreError
from nictune.measure.appliers import applier_for
from nictune.measure.hosts import host_from_spec
from nictune.search_spaces import Family
from nictune.settings import CommonSettings

VERSION = 1

#: How to remove a resource a crashed trial had created, by the ``kind`` of its journal
#: entry (``{"kind": "veth_pair", ...}``): each takes the entry and says what it removed.
#: The module that creates a kind of resource registers its cleanup here
#: (:func:`register_cleanup`): the journal itself knows no kind.
CLEANUPS: dict[str, Callable[[dict[str, Any]], str]] = {}


def register_cleanup(kind: str, cleanup: Callable[[dict[str, Any]], str]) -> None:
    """Make :func:`replay_journal` remove resources of ``kind`` with ``cleanup``."""
    CLEANUPS[kind] = cleanup


def state_dir() -> Path:
    """Where journals live: ``$NICTUNE_STATE_DIR`` or the platform's user state dir."""
    configured = CommonSettings().state_dir
    base = configured if configured is not None else Path(platformdirs.user_state_dir("nictune"))
    return base / "journal"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The journal file of one testbed.

    Args:
        testbed: the testbed's name (``veth:nt0``, a pair file path ...).
        directory: journal directory; :func:`state_dir` by default.
    """

    def __init__(self, testbed: str, directory: Path | None = None) -> None:
        self.testbed = testbed
        self.directory = directory if directory is not None else state_dir()
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", testbed).strip(".") or "testbed"
        self.path = self.directory / f"{safe}.json"

    @classmethod
    def at(cls, path: Path) -> Journal:
        """The journal stored in ``path`` (its testbed name is read from the file)."""
        journal = cls(path.stem, path.parent)
        journal.path = path
        return journal

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` atomically and durably (temp file, fsync, rename, fsync dir)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        body = {
            "version": VERSION,
            "testbed": self.testbed,
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "written_at": datetime.now(UTC).isoformat(),
            **record,
        }
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.directory)

    def read(self) -> dict[str, Any] | None:
        """The record, or ``None`` when there is no journal."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise InvalidInputError(f"journal {self.path} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidInputError(f"journal {self.path} does not hold a JSON object")
        return data

    @property
    def lock_path(self) -> Path:
        """The testbed's lock file (:mod:`nictune.measure.trial.locks`), next to the journal."""
        return self.path.with_suffix(".lock")

    def exists(self) -> bool:
        """Whether a journal file is present."""
        return self.path.exists()

    def clear(self) -> None:
        """Remove the journal (after a verified restore) and fsync the directory."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(self.directory)


@dataclass
class ReplayReport:
    """What :func:`replay_journal` did with one journal file.

    Attributes:
        path: the journal file.
        testbed: its testbed.
        restored: ``side family device: snapshot`` lines that were put back.
        errors: what could not be put back (the journal is kept when there are any).
        skipped: why the file was left alone (its process still runs), empty otherwise.
    """

    path: Path
    testbed: str
    restored: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: str = ""

    @property
    def ok(self) -> bool:
        """Everything was restored (or there was nothing to do)."""
        return not self.errors and not self.skipped


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine exists (signal 0: nothing is sent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_alive(record: dict[str, Any]) -> bool:
    if record.get("hostname") != socket.gethostname():
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    return pid_alive(pid)


def restore_record(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Put back every entry of a journal record, last applied first.

    Returns:
        ``(restored, errors)`` as human-readable lines.
    """
    restored: list[str] = []
    errors: list[str] = []
    hosts = record.get("hosts", {})
    for entry in reversed(record.get("entries", [])):
        label = f"{entry.get('side')} {entry.get('family')} {entry.get('device')}"
        try:
            host = host_from_spec(hosts[entry["side"]])
            applier = applier_for(Family(entry["family"]))
            applier.restore(host, entry["device"], entry["snapshot"])
        except (NictuneError, KeyError, ValueError) as exc:
            errors.append(f"{label}: {exc}")
            continue
        restored.append(f"{label}: {_as_settings(entry['snapshot'])}")
    return restored, errors


def _as_settings(snapshot: Any) -> str:
    """A snapshot as ``key=value`` pairs, as ``nictune apply`` prints what it sets (nested
    values as compact JSON)."""
    if not isinstance(snapshot, dict):
        return json.dumps(snapshot, sort_keys=True)
    return ", ".join(f"{k}={v if isinstance(v, str | int | float) else json.dumps(v, sort_keys=True)}"
                     for k, v in sorted(snapshot.items())) or "(nothing recorded)"


def _cleanup(record: dict[str, Any]) -> list[str]:
    """Remove resources the crashed trial had created (veth pairs), after the restore, each
    by the cleanup registered for its kind (:data:`CLEANUPS`).

    Raises:
        RestoreError: no cleanup is registered for a resource's kind (the journal is kept).
    """
    done = []
    for res in record.get("resources", []):
        kind = res.get("kind")
        if kind not in CLEANUPS:
            raise RestoreError(f"no cleanup is registered for resources of kind {kind!r}")
        done.append(CLEANUPS[kind](res))
    return done


def replay_journal(
    directory: Path | None = None, testbed: str | None = None, force: bool = False
) -> list[ReplayReport]:
    """Restore every journal left in ``directory`` (only ``testbed``'s, when given).

    A journal whose writing process is still alive on this machine belongs to a running
    trial and is skipped unless ``force``. A journal is removed only when everything in
    it was restored.
    """
    base = directory if directory is not None else state_dir()
    if not base.is_dir():
        return []
    paths = [Journal(testbed, base).path] if testbed else sorted(base.glob("*.json"))
    reports = []
    for path in paths:
        if not path.exists():
            continue
        journal = Journal.at(path)
        try:
            record = journal.read() or {}
        except InvalidInputError as exc:
            reports.append(ReplayReport(path, path.stem, errors=[str(exc)]))
            continue
        report = ReplayReport(path, str(record.get("testbed", path.stem)))
        if not force and _process_alive(record):
            report.skipped = f"process {record.get('pid')} that wrote it is still running"
        else:
            report.restored, report.errors = restore_record(record)
            if not report.errors:
                try:
                    report.restored += _cleanup(record)
                except (NictuneError, KeyError) as exc:
                    report.errors.append(f"cleanup: {exc}")
            if not report.errors:
                journal.clear()
        reports.append(report)
    return reports
