"""Running commands on this machine: foreground with a timeout, or in the background.

Every host ends up here: a namespace or SSH host only wraps the argv it is given.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nictune.errors import HostCommandError

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class CommandResult:
    """What a finished command returned."""

    returncode: int
    stdout: str
    stderr: str


def describe(argv: Sequence[str]) -> str:
    """A readable rendering of ``argv`` for messages (never executed)."""
    return shlex.join(argv)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    # Children (iperf3, busy loops) must not outlive a crashed or SIGKILLed nictune.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_argv(
    argv: Sequence[str],
    *,
    timeout: float,
    check: bool,
    input: str | None,
    where: str,
    shown: Sequence[str] | None = None,
) -> CommandResult:
    """Run ``argv`` on this machine and map every failure to :class:`HostCommandError`.

    Args:
        argv: the command, already wrapped for its host.
        timeout: seconds before the command is killed.
        check: raise on a non-zero exit status.
        input: text fed to standard input.
        where: the host's name, for messages.
        shown: the command as the caller wrote it (before wrapping), for messages.
    """
    label = describe(shown if shown is not None else argv)
    try:
        proc = subprocess.run(
            list(argv),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise HostCommandError(f"{where}: command {label!r} timed out after {timeout:g}s") from exc
    except OSError as exc:
        raise HostCommandError(f"{where}: command {label!r} could not start: {exc}") from exc
    result = CommandResult(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        err = (proc.stderr.strip() or proc.stdout.strip())[-400:]
        raise HostCommandError(
            f"{where}: command {label!r} failed with exit status {proc.returncode}: {err}"
        )
    return result


class Process:
    """A background process started by :meth:`Host.spawn` (an iperf3 server, a busy loop).

    The process runs in its own session, so :meth:`terminate` and :meth:`kill` signal its
    whole process group; on this machine it also dies with its parent (``PR_SET_PDEATHSIG``).
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        argv: Sequence[str],
        where: str,
        on_signal: Callable[[int], None] | None = None,
    ) -> None:
        self._popen = popen
        self.argv = list(argv)
        self.where = where
        self._on_signal = on_signal
        #: Pid on the remote machine, for processes started over SSH.
        self.remote_pid: int | None = None
        self._result: CommandResult | None = None

    @property
    def pid(self) -> int:
        """Process id of the local child (the ``ssh`` client for an SSH host)."""
        return self._popen.pid

    def poll(self) -> int | None:
        """Exit status, or ``None`` while it runs."""
        return self._popen.poll()

    def _signal(self, signum: int) -> None:
        if self._popen.poll() is not None:
            return
        if self._on_signal is not None:
            self._on_signal(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, signum)

    def terminate(self) -> None:
        """Ask the process to stop (SIGTERM)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """Stop the process now (SIGKILL)."""
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the process to end and collect its output.

        Raises:
            HostCommandError: it did not end within ``timeout`` seconds (it keeps running).
        """
        if self._result is not None:
            return self._result
        try:
            out, err = self._popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise HostCommandError(
                f"{self.where}: {describe(self.argv)!r} still running after {timeout:g}s"
            ) from exc
        self._result = CommandResult(
            self._popen.returncode,
            self._clean_stdout(out.decode(errors="replace")),
            err.decode(errors="replace"),
        )
        return self._result

    def _clean_stdout(self, text: str) -> str:
        return text

    def stop(self, grace: float = 2.0) -> CommandResult:
        """Terminate, wait ``grace`` seconds, then kill; always returns (never hangs)."""
        self.terminate()
        try:
            return self.wait(grace)
        except HostCommandError:
            self.kill()
        try:
            return self.wait(grace + 3.0)
        except HostCommandError:
            # Dead, but a process it started (outside its group) still holds the pipes.
            self._popen.kill()
            code = self._popen.wait(timeout=5.0)
            for pipe in (self._popen.stdout, self._popen.stderr):
                if pipe is not None:
                    pipe.close()
            self._result = CommandResult(code, "", "output pipes held by a leftover process")
            return self._result


def popen_argv(
    argv: Sequence[str], where: str, *, pdeathsig: bool = True, stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """Start ``argv`` on this machine in a new session with piped output (and standard input
    from ``stdin``: nothing by default, ``subprocess.PIPE`` to keep it open)."""
    try:
        return subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent if pdeathsig else None,
        )
    except OSError as exc:
        raise HostCommandError(f"{where}: {describe(argv)!r} could not start: {exc}") from exc
