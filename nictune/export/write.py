"""Writing an export to disk: file names, the TuneD directory, executable scripts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from nictune.errors import InvalidInputError
from nictune.export.json_export import render_json
from nictune.export.script import render_scripts
from nictune.export.source import ExportSource
from nictune.export.sysctl import render_sysctl
from nictune.export.tuned import profile_name, render_tuned

FORMATS = ("tuned", "sysctl", "script", "json")


@dataclass
class Written:
    """Files an export wrote, with what each is."""

    files: dict[str, Path] = field(default_factory=dict)


def default_path(src: ExportSource, fmt: str) -> Path:
    """Where an export goes when ``--out`` is not given (the current directory)."""
    stem = f"nictune-job{src.job_id}" + ("" if src.is_best else f"-trial{src.trial}")
    return Path({
        "tuned": profile_name(src),
        "sysctl": f"90-{stem}.conf",
        "script": f"{stem}-apply.sh",
        "json": f"{stem}.json",
    }[fmt])


def rollback_path(apply_path: Path) -> Path:
    """``x-apply.sh`` -> ``x-rollback.sh``; any other ``x.sh`` -> ``x-rollback.sh``."""
    stem = apply_path.stem.removesuffix("-apply")
    return apply_path.with_name(f"{stem}-rollback{apply_path.suffix or '.sh'}")


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.chmod(path, mode)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}", field="out",
                                allowed="a writable path") from None


def write_export(src: ExportSource, fmt: str, out: Path | None = None) -> Written:
    """Render ``src`` in format ``fmt`` and write it (everything is rendered, and so checked,
    before the first file is written).

    Raises:
        InvalidInputError: unknown format, a value that may not be exported, or a path
            that cannot be written.
    """
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown export format {fmt!r}", field="format", allowed=", ".join(FORMATS))
    path = out if out is not None else default_path(src, fmt)
    written = Written()
    if fmt == "tuned":
        text = render_tuned(src)
        if path.exists() and not path.is_dir():
            raise InvalidInputError(f"{path} exists and is not a directory (a TuneD profile is a directory)",
                                    field="out", allowed="a directory")
        _write(path / "tuned.conf", text)
        written.files["tuned.conf"] = path / "tuned.conf"
    elif fmt == "sysctl":
        _write(path, render_sysctl(src, path.name))
        written.files["sysctl drop-in"] = path
    elif fmt == "script":
        back = rollback_path(path)
        scripts = render_scripts(src, path.name, back.name)
        _write(path, scripts.apply, 0o755)
        _write(back, scripts.rollback, 0o755)
        written.files["apply script"] = path
        written.files["rollback script"] = back
    else:
        _write(path, render_json(src))
        written.files["json"] = path
    return written


__all__ = ["FORMATS", "Written", "default_path", "rollback_path", "write_export"]
