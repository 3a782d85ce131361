"""Writing an export to disk: file names, the TuneD directory, executable scripts."""

from __future__ import annotations

import contextlib
import os
import tempfile
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


def _check_target(path: Path, force: bool) -> None:
    """Refuse to replace an existing file without ``force``, and never write through a
    symbolic link (``force`` replaces the link itself, not what it points to)."""
    if not os.path.lexists(path):
        return
    if path.is_dir() and not path.is_symlink():
        raise InvalidInputError(f"{path} is a directory", field="out", allowed="a file path")
    if not force:
        what = "a symbolic link" if path.is_symlink() else "a file"
        raise InvalidInputError(f"{path} exists ({what}); nothing was written", field="out",
                                allowed="a new path, or --force to replace it")


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` atomically: a temporary file in the same directory, renamed over
    ``path`` (a reader sees the old file or the new one, never half of one; a symbolic link
    at ``path`` is replaced, its target left alone)."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}", field="out",
                                allowed="a writable path") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_export(src: ExportSource, fmt: str, out: Path | None = None, *, force: bool = False) -> Written:
    """Render ``src`` in format ``fmt`` and write it (everything is rendered, and every target
    checked, before the first file is written).

    Raises:
        InvalidInputError: unknown format, a value that may not be exported, a file that
            exists (without ``force``), or a path that cannot be written.
    """
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown export format {fmt!r}", field="format", allowed=", ".join(FORMATS))
    path = out if out is not None else default_path(src, fmt)
    written = Written()
    if fmt == "tuned":
        text = render_tuned(src)
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise InvalidInputError(f"{path} exists and is not a directory (a TuneD profile is a directory)",
                                    field="out", allowed="a directory")
        _check_target(path / "tuned.conf", force)
        _write(path / "tuned.conf", text)
        written.files["tuned.conf"] = path / "tuned.conf"
    elif fmt == "sysctl":
        text = render_sysctl(src, path.name)
        _check_target(path, force)
        _write(path, text)
        written.files["sysctl drop-in"] = path
    elif fmt == "script":
        back = rollback_path(path)
        scripts = render_scripts(src, path.name, back.name)
        _check_target(path, force)
        _check_target(back, force)
        _write(path, scripts.apply, 0o755)
        _write(back, scripts.rollback, 0o755)
        written.files["apply script"] = path
        written.files["rollback script"] = back
    else:
        text = render_json(src)
        _check_target(path, force)
        _write(path, text)
        written.files["json"] = path
    return written


__all__ = ["FORMATS", "Written", "default_path", "rollback_path", "write_export"]
