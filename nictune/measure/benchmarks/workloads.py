"""Workloads by name or file: the built-ins (YAML files shipped with nictune) and the user's
workload files, loaded and checked by one path (:mod:`nictune.measure.benchmarks.workload_spec`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nictune.errors import InvalidInputError, UnknownNameError
from nictune.measure._base import Workload
from nictune.measure.benchmarks.workload_spec import Source, WorkloadEntry, with_options, workload_from_definition
from nictune.yamlfile import parse_yaml

#: The built-in workloads, in the order they are listed (each is ``builtin_workloads/NAME.yaml``).
BUILTIN_NAMES: tuple[str, ...] = ("tcp", "tcp-parallel", "udp", "udp-jumbo", "udp-small", "latency", "tcp+latency")
#: Largest workload file read (a workload is a dozen lines).
MAX_FILE_BYTES = 64 * 1024


def _lines(text: str) -> dict[str, int]:
    """The line of each key of a YAML mapping (``latency.KEY`` for the latency part's keys)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out[str(key.value)] = key.start_mark.line + 1
            if isinstance(value, yaml.MappingNode):
                for sub, _ in value.value:
                    out[f"{key.value}.{sub.value}"] = sub.start_mark.line + 1
    return out


def workload_from_yaml(text: str, label: str, *, echo: bool = False) -> WorkloadEntry:
    """A workload from the text of a workload file.

    Raises:
        InvalidInputError: the text is not YAML, or not a valid workload (field, line and
            allowed values named; the file's content is not repeated unless ``echo``).
    """
    try:
        data = parse_yaml(text, label)
    except InvalidInputError as exc:  # the parser's problem, line and column; never the text
        raise InvalidInputError(str(exc), field="workload",
                                allowed="a YAML mapping (see nictune workloads show tcp)") from None
    return workload_from_definition(data, Source(label, _lines(text), echo=echo))


def _builtin(name: str) -> WorkloadEntry:
    text = (resources.files("nictune.measure.benchmarks") / "builtin_workloads" / f"{name}.yaml").read_text()
    entry = workload_from_yaml(text, f"built-in workload {name}", echo=True)
    if entry.workload.name != name:
        raise InvalidInputError(f"built-in workload file {name}.yaml names itself {entry.workload.name!r}")
    return entry


BUILTINS: dict[str, WorkloadEntry] = {name: _builtin(name) for name in BUILTIN_NAMES}
WORKLOADS: dict[str, Workload] = {name: entry.workload for name, entry in BUILTINS.items()}
DESCRIPTIONS: dict[str, str] = {name: entry.description for name, entry in BUILTINS.items()}


def is_file_reference(text: str) -> bool:
    """Whether ``--workload TEXT`` names a file rather than a built-in workload."""
    return text.endswith((".yaml", ".yml")) or "/" in text


def load_workload_file(path_text: str) -> WorkloadEntry:
    """A workload file.

    Raises:
        InvalidInputError: missing, unreadable, too large, not text, not YAML, or invalid.
    """
    path = Path(path_text)
    allowed = "a readable workload YAML file, or a built-in workload: " + ", ".join(BUILTIN_NAMES)
    try:
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise InvalidInputError(f"workload file {path} {what}", field="workload", allowed=allowed)
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InvalidInputError(f"workload file {path} is larger than {MAX_FILE_BYTES // 1024} KiB",
                                    field="workload", allowed=allowed)
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InvalidInputError(f"workload file {path}: cannot read ({exc.strerror or type(exc).__name__})",
                                field="workload", allowed=allowed) from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"workload file {path}: not a UTF-8 text file", field="workload",
                                allowed=allowed) from None
    return workload_from_yaml(text, f"workload file {path}")


def resolve_entry(workload: str | Mapping[str, Any], options: Mapping[str, Any] | None = None) -> WorkloadEntry:
    """The workload a user named: a built-in name, a workload file's path, or an inline
    definition (a mapping in the file form), changed by ``options``
    (:data:`~nictune.measure.benchmarks.workload_spec.OPTION_KEYS`).

    Raises:
        UnknownNameError: neither a built-in name nor a file reference.
        InvalidInputError: the file or definition or an option is invalid (field named).
    """
    if isinstance(workload, Mapping):
        entry = workload_from_definition(workload, Source("inline workload"))
        entry = WorkloadEntry(entry.workload, entry.description, "inline")
    elif workload in BUILTINS:
        entry = BUILTINS[workload]
    elif isinstance(workload, str) and is_file_reference(workload):
        entry = load_workload_file(workload)
    else:
        raise UnknownNameError("workload", str(workload), [*BUILTIN_NAMES, "a workload file (FILE.yaml)"])
    return with_options(entry, options or {})


def resolve_workload(workload: str | Mapping[str, Any], options: Mapping[str, Any] | None = None) -> Workload:
    """:func:`resolve_entry`'s workload."""
    return resolve_entry(workload, options).workload


def get_workload(
    name: str,
    *,
    scenario: str | None = None,
    duration_s: float | None = None,
    omit_s: float | None = None,
    bitrate_gbps: float | None = None,
) -> Workload:
    """A workload by name (or file), optionally with its scenario, duration, warm-up or rate changed.

    Raises:
        UnknownNameError: the workload is not built in (nor a file).
        InvalidInputError: a changed field is out of range.
    """
    return resolve_workload(name, {"scenario": scenario, "duration": duration_s, "omit": omit_s,
                                   "bitrate": bitrate_gbps})


def check_workload_name(name: str, stored: Iterable[str]) -> None:
    """A workload name to filter the history by: a built-in one or one the database holds
    (a user's workload, a built-in changed by options).

    Raises:
        UnknownNameError: neither (a typo is an error, not an empty result).
    """
    known = {*BUILTIN_NAMES, *stored}
    if name not in known:
        raise UnknownNameError("workload", name, sorted(known))
