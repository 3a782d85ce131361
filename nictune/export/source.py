"""What an export is made from: one trial of a job, its settings and the host's values before it.

:class:`ExportSource` is plain data, so each format is a pure function of it and a test
can build one from a hand-written (or hostile) search space without a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import __version__
from nictune.errors import InvalidInputError
from nictune.export import _safe
from nictune.report.data import SIMULATED_NOTE, JobData, gain, load_job
from nictune.search_spaces import Family, SearchSpace, SettingValue

#: The side whose recorded values the rollback uses first (the script runs on one host).
_SIDES = ("receiver", "sender")


#: Said wherever a configuration no better than the default is exported.
NO_GAIN = "this configuration measured no better than the default configuration: keeping the default is as good"

@dataclass(frozen=True)
class Item:
    """One host setting of the exported configuration, with the knob it came from.

    Attributes:
        knob: the knob's name.
        knob_value: the knob's value in the configuration.
        family: the applier family.
        target: what is written (sysctl key, ``mtu``, ``rx-usecs`` ...).
        value: the value written.
        index: the field of a multi-field sysctl, or ``None``.
        device: the interface; ``None`` means the data interface.
    """

    knob: str
    knob_value: Any
    family: Family
    target: str
    value: SettingValue
    index: int | None = None
    device: str | None = None

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        return (self.family.value, self.target, self.index, self.device)


@dataclass(frozen=True)
class Before:
    """What a setting was before the trial, and where that value comes from.

    Attributes:
        value: the value (``None``: unknown).
        origin: ``snapshot`` (read on the host before the measurement), ``default`` (the
            search space's knob default) or ``unknown``.
        note: one sentence for a comment.
    """

    value: Any
    origin: str
    note: str = ""


@dataclass
class ExportSource:
    """One trial of a job, ready to be written in any export format."""

    job_id: int
    trial: int
    is_best: bool
    testbed: str
    simulated: bool
    workload: str
    objectives: list[str]
    constraints: list[str]
    engine: str
    space: SearchSpace
    config: dict[str, Any]
    config_hash: str
    metrics: dict[str, float] = field(default_factory=dict)
    spread: dict[str, dict[str, float]] = field(default_factory=dict)
    repeats: int = 0
    feasible: bool = True
    gain: dict[str, Any] = field(default_factory=dict)
    snapshot: dict[str, Any] | None = None
    device: str | None = None
    #: The job's state: an export of an interrupted, cancelled or failed job says so.
    job_state: str = "completed"
    #: What the job said about its figures (e.g. knobs a simulated testbed's model ignores).
    notices: list[str] = field(default_factory=list)
    #: TuneD profiles the exported profile includes (``include=network-throughput``).
    include: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ settings
    def items(self) -> list[Item]:
        """The host settings of the configuration in knob order; a later setting of the same
        target replaces an earlier one, as it would on the host."""
        out: dict[tuple[str, str, int | None, str | None], Item] = {}
        unknown = sorted(set(self.config) - set(self.space.knobs))
        if unknown:
            raise InvalidInputError(f"the configuration names knob {unknown[0]!r}, which its space lacks",
                                    field=unknown[0])
        # Space order (parents first): rx_mode's adaptive-rx off comes before poll_usecs' rx-usecs.
        for name, knob in self.space.knobs.items():
            if name not in self.config:
                continue
            value = self.config[name]
            for s in knob.to_settings(value):
                item = Item(name, value, s.family, s.target, s.value, s.index, s.device)
                out.pop(item.key, None)
                out[item.key] = item
        return list(out.values())

    def knob_defaults(self) -> dict[tuple[str, str, int | None, str | None], tuple[str, Any]]:
        """Setting key -> (knob, value) for the space's default configuration, then for the
        defaults of knobs inactive in it (``poll_usecs`` under ``rx_mode: adaptive``)."""
        out: dict[tuple[str, str, int | None, str | None], tuple[str, Any]] = {}
        default = self.space.default()
        for name, value in default.items():
            for s in self.space.knobs[name].to_settings(value):
                out[s.key] = (name, s.value)
        for name, knob in self.space.knobs.items():
            if name in default:
                continue
            for s in knob.to_settings(knob.default):
                out.setdefault(s.key, (name, s.value))
        return out

    # ------------------------------------------------------------------ snapshot
    def snapshot_entry(self, family: Family, device: str | None) -> dict[str, Any] | None:
        """What the trial's snapshot recorded for ``family`` on ``device`` (the receiver's
        record first), or ``None``."""
        entries = (self.snapshot or {}).get("entries")
        if not isinstance(entries, list):
            return None
        wanted = device or self.device
        for side in _SIDES:
            for e in entries:
                if not isinstance(e, Mapping) or e.get("family") != family.value or e.get("side") != side:
                    continue
                if wanted is not None and e.get("device") not in (wanted, None):
                    continue
                snap = e.get("snapshot")
                if isinstance(snap, Mapping):
                    return dict(snap)
        return None

    def before(self, item: Item) -> Before:
        """The value ``item``'s target had before the trial."""
        snap = self.snapshot_entry(item.family, item.device)
        if snap is not None and item.target in snap:
            return Before(snap[item.target], "snapshot", "the value read on the host before the measurement")
        defaults = self.knob_defaults()
        if item.key in defaults:
            knob, value = defaults[item.key]
            why = "the trial's snapshot has no value for it" if not self.simulated else \
                "the trial ran on a simulated testbed, which records no host values"
            return Before(value, "default", f"the search space's default of knob {knob} ({why})")
        return Before(None, "unknown", "no recorded value and no default in the search space")

    # ------------------------------------------------------------------ text
    @property
    def gain_text(self) -> str:
        return str(self.gain.get("text", ""))

    @property
    def unfinished(self) -> str:
        """Why the job's search did not run to its end, or ``""``."""
        if self.job_state == "completed":
            return ""
        resume = f" (nictune optimize --resume {self.job_id} finishes it)" if self.job_state == "interrupted" else ""
        return (f"job {self.job_id} is {self.job_state}: its search did not finish, and this is the best "
                f"configuration it had measured when it stopped{resume}")

    @property
    def no_gain(self) -> bool:
        """The job measured the default, and this configuration did no better."""
        return self.gain.get("better") is False

    def warnings(self) -> list[str]:
        """What every exported file and the terminal warn about (no gain, an unfinished job,
        host-wide memory a per-socket default commits)."""
        texts = [NO_GAIN if self.no_gain else "", self.unfinished, *memory_warnings(self.items())]
        return [text for text in texts if text]

    def header_lines(self) -> list[str]:
        """Comment lines (without ``#``) that every format starts with."""
        which = "the best trial" if self.is_best else "a chosen trial (not the best)"
        lines = [
            f"nictune export of job {self.job_id}, trial {self.trial} ({which}), "
            f"configuration {self.config_hash[:12]}",
            f"testbed {self.testbed}, workload {self.workload}, engine {self.engine}, "
            f"objective {', '.join(self.objectives)}"
            + (f", constraints {', '.join(self.constraints)}" if self.constraints else ""),
        ]
        if self.gain_text:
            lines.append(f"measured gain: {self.gain_text}")
        lines += [f"WARNING: {text}" for text in self.warnings()]
        if self.simulated:
            lines.append(f"SIMULATED: {SIMULATED_NOTE}; measure on your hosts before relying on it")
        lines += [f"NOTE: {text}" for text in self.notices]
        if not self.feasible:
            lines.append("WARNING: this configuration breaks a constraint of the job on its mean metrics")
        lines.append(f"written by nictune {__version__} on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}")
        return lines


#: Sysctls that set the buffer *every* socket of the host starts with (not a cap that only
#: applications asking for more reach): key -> (field of a multi-field value or None, what).
PER_SOCKET_DEFAULTS: dict[str, tuple[int | None, str]] = {
    "net.core.rmem_default": (None, "receive buffer of every socket"),
    "net.core.wmem_default": (None, "send buffer of every socket"),
    "net.ipv4.tcp_rmem": (1, "initial receive buffer of every TCP socket"),
    "net.ipv4.tcp_wmem": (1, "initial send buffer of every TCP socket"),
}
#: Per-socket defaults from this size on are warned about (the kernel's own is 208 KiB or less).
MEMORY_WARN_BYTES = 4 << 20


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):,.1f} GiB"
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n / 1024:,.0f} KiB"


def memory_warnings(items: list[Item]) -> list[str]:
    """One sentence, with the figure, for each per-socket default of at least
    :data:`MEMORY_WARN_BYTES` the export sets: it applies to every socket of the host."""
    out: list[str] = []
    for item in items:
        known = PER_SOCKET_DEFAULTS.get(item.target) if item.family is Family.SYSCTL else None
        if known is None or item.index != known[0]:
            continue
        try:
            size = int(item.value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if size >= MEMORY_WARN_BYTES:
            out.append(f"{item.target} = {_size(size)} (knob {item.knob}) is the {known[1]} on the host: "
                       f"1,000 sockets may hold {_size(size * 1000)}; where only the benchmarked "
                       "application needs it, raise the *_max caps and let it ask (SO_RCVBUF/SO_SNDBUF)")
    return out


def _data_device(snapshot: Mapping[str, Any] | None) -> str | None:
    entries = (snapshot or {}).get("entries")
    if not isinstance(entries, list):
        return None
    for side in _SIDES:
        devices = [e.get("device") for e in entries
                   if isinstance(e, Mapping) and e.get("side") == side and isinstance(e.get("device"), str)]
        if devices:
            return max(set(devices), key=devices.count)
    return None


def source_from_job(job: JobData, trial: int | None = None) -> ExportSource:
    """The export source for trial ``trial`` of ``job`` (its best trial when ``None``).

    Raises:
        InvalidInputError: the job has no completed trial, or trial ``trial`` does not
            exist or did not complete.
    """
    best = job.best
    if trial is None:
        if best is None:
            raise InvalidInputError(f"job {job.job_id} has no completed trial to export", field="job_id",
                                    allowed="a job with at least one completed trial")
        chosen = best
    else:
        chosen = job.trial(trial)
        if not chosen.completed:
            raise InvalidInputError(f"trial {trial} of job {job.job_id} is {chosen.state}: nothing to export",
                                    field="trial", allowed="a completed trial")
    info = job.info
    return ExportSource(
        job_id=job.job_id,
        trial=chosen.number,
        is_best=best is not None and chosen.number == best.number,
        testbed=str(info["testbed"]),
        simulated=job.simulated,
        workload=str(info["workload"]),
        objectives=list(info["objectives"]),
        constraints=list(info["constraints"]),
        engine=str(info["engine"]),
        space=job.space,
        config=dict(chosen.config),
        config_hash=chosen.config_hash,
        metrics=dict(chosen.metrics),
        spread=dict(chosen.spread),
        repeats=len(chosen.repeats),
        feasible=chosen.feasible,
        gain=gain(job, chosen),
        snapshot=chosen.snapshot,
        device=_data_device(chosen.snapshot),
        job_state=str(info.get("state") or "completed"),
        notices=[str(n) for n in info.get("notices") or []],
    )


def load_source(dbe: DbEngine, job_id: int, trial: int | None = None, *, device: str | None = None,
                include: list[str] | None = None) -> ExportSource:
    """:func:`source_from_job` straight from the database, with the data interface set to
    ``device`` (instead of the one the trial recorded) and TuneD profiles to ``include``.

    Raises:
        InvalidInputError: an interface name or profile name that may not be exported.
    """
    src = source_from_job(load_job(dbe, job_id), trial)
    if device is not None:
        src.device = _safe.device("device", device)
    if include:
        src.include = _safe.tuned_profiles(list(include))
    return src


__all__ = ["Before", "ExportSource", "Item", "load_source", "source_from_job"]
