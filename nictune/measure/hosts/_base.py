"""The host interface: run commands, read and write files, start background processes.

A :class:`Host` is where a command runs: this machine, a network namespace on it, or a
machine reached over SSH. Appliers and the iperf3 runner only ever talk to a ``Host``, so
they work the same on every kind. Commands are argv lists; nothing here builds a shell
string from input (the SSH host quotes each element once, because the remote side runs a
shell, and that is the only place quoting happens).
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from nictune.errors import InvalidInputError
from nictune.measure.hosts.process import CommandResult, Process, popen_argv, run_argv

#: Default timeout (seconds) for short commands (reads, writes, ``ip``, ``ethtool``).
DEFAULT_TIMEOUT = 15.0


def check_path(path: str) -> str:
    """Accept an absolute, normalised path without ``..`` components.

    Raises:
        InvalidInputError: the path is relative, contains ``..`` or odd characters.
    """
    if (
        not isinstance(path, str)
        or not path.startswith("/")
        or "\x00" in path
        or "\n" in path
        or posixpath.normpath(path) != path
        or ".." in path.split("/")
    ):
        raise InvalidInputError(
            f"path {path!r} is not allowed; allowed: an absolute normalised path without '..'",
            field="path",
            allowed="absolute path without '..'",
        )
    return path


class Host(ABC):
    """Where commands run. Subclasses say how an argv reaches the machine.

    Attributes:
        name: a short readable name for messages (``local``, ``netns:nt0-rx``, ``ssh:...``).
    """

    name: str

    @abstractmethod
    def local_argv(self, argv: list[str]) -> list[str]:
        """The argv that runs ``argv`` on this host when started from this machine."""

    def run(
        self,
        argv: list[str],
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = True,
        input: str | None = None,
    ) -> CommandResult:
        """Run ``argv`` and wait for it.

        Args:
            argv: program and arguments; never a shell string.
            timeout: seconds before the command is killed and an error raised.
            check: raise :class:`HostCommandError` on a non-zero exit status.
            input: text for the command's standard input.

        Raises:
            HostCommandError: the command failed (with ``check``), timed out or did not start.
        """
        return run_argv(
            self.local_argv(argv),
            timeout=timeout,
            check=check,
            input=input,
            where=self.name,
            shown=argv,
        )

    def spawn(self, argv: list[str]) -> Process:
        """Start ``argv`` in the background and return a handle to it."""
        return Process(popen_argv(self.local_argv(argv), self.name), argv, self.name)

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """How to reach this host again (plain data for the journal)."""

    @property
    def machine(self) -> str:
        """Identity of the physical machine (namespaces on one machine share it)."""
        return self.name

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Contents of ``path`` on the host (``/proc/sys``, ``/sys`` ...)."""
        return self.run(["cat", check_path(path)], timeout=timeout).stdout

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        """Contents of several text files in one command (one round trip over SSH).

        Meant for ``/proc`` and ``/sys`` files, which end with a newline.

        Raises:
            HostCommandError: a file cannot be read.
        """
        checked = [check_path(p) for p in paths]
        out = self.run(["tail", "-v", "-n", "+1", "--", *checked], timeout=timeout).stdout
        texts: dict[str, str] = {}
        current: str | None = None
        for line in out.splitlines(keepends=True):
            header = line.rstrip("\n")
            name = header[4:-4] if header.startswith("==> ") and header.endswith(" <==") else None
            if name in checked and name not in texts:
                current = name
                texts[current] = ""
            elif current is not None:
                texts[current] += line
        # tail puts an empty line before each header after the first
        last = checked[-1] if checked else None
        return {p: texts.get(p, "") if p == last else texts.get(p, "")[:-1] for p in checked}

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write ``text`` to ``path`` on the host (one ``write``, as sysctl files want)."""
        argv = self.write_argv(path)
        assert argv is not None  # only a host that writes files itself has none
        self.run(argv, timeout=timeout, input=text)

    def write_argv(self, path: str) -> list[str] | None:
        """The command :meth:`write_file` runs for ``path`` (the text goes to its standard
        input); ``None`` for a host that writes files itself (this machine)."""
        return ["dd", f"of={check_path(path)}", "bs=65536", "iflag=fullblock", "status=none"]

    def file_host(self, path: str) -> Host:
        """The host that really reads and writes ``path`` for this one: itself, except a
        namespace's global sysctls, which live on its parent."""
        return self

    def exists(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """Whether ``path`` exists on the host."""
        res = self.run(["test", "-e", check_path(path)], timeout=timeout, check=False)
        return res.returncode == 0

    def list_dir(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
        """Names in directory ``path`` (empty when it does not exist)."""
        res = self.run(["ls", "-1", check_path(path)], timeout=timeout, check=False)
        return res.stdout.split() if res.returncode == 0 else []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the host holds (an SSH master connection); nothing by default."""

    def machine_lock(self) -> AbstractContextManager[None]:
        """A lock held *on the machine itself* while a trial changes its settings, for machines
        that other controllers may drive too (an SSH host). None by default: on this machine,
        the lock files of :mod:`nictune.measure.trial.locks` already serialise every nictune run."""
        return nullcontext()

    def machine_id(self) -> str | None:
        """What the machine says it is, for hosts with a :meth:`machine_lock` (an SSH host:
        its ``/etc/machine-id``, so two names of one machine take its lock once). None by
        default: no lock on the machine itself."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
