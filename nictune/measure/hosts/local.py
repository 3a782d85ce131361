"""This machine: commands through :mod:`subprocess`, files through Python's ``open``."""

from __future__ import annotations

import os.path
from collections.abc import Sequence
from typing import Any

from nictune.errors import HostCommandError
from nictune.measure.hosts._base import DEFAULT_TIMEOUT, Host, check_path


class LocalHost(Host):
    """The machine nictune runs on (argv lists only, never ``shell=True``)."""

    def __init__(self) -> None:
        self.name = "local"

    def local_argv(self, argv: list[str]) -> list[str]:
        """``argv`` itself: it runs here."""
        return list(argv)

    def spec(self) -> dict[str, Any]:
        """``{"kind": "local"}``."""
        return {"kind": "local"}

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Read ``path`` directly (``timeout`` is not needed for a local read)."""
        try:
            with open(check_path(path), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError as exc:
            raise HostCommandError(f"{self.name}: cannot read {path}: {exc.strerror}") from exc

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        """Read each file directly."""
        return {p: self.read_file(p) for p in paths}

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write ``text`` to ``path`` in a single ``write`` call, as sysctl files expect."""
        try:
            with open(check_path(path), "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise HostCommandError(
                f"{self.name}: cannot write {text.strip()!r} to {path}: {exc.strerror}"
            ) from exc

    def write_argv(self, path: str) -> list[str] | None:
        """``None``: nictune writes the file itself (``open`` and one ``write``), no command runs."""
        check_path(path)
        return None

    def exists(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """Whether ``path`` exists here."""
        return os.path.exists(check_path(path))
