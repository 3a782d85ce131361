"""A machine reached with the OpenSSH client.

The remote side hands the command to a shell, so this is the one place where argv is
turned into a string: every element is quoted with :func:`shlex.quote`. Host key checking
is on by default (``StrictHostKeyChecking=yes``) and ``BatchMode=yes`` makes a missing key
or an unknown host fail at once instead of prompting.
"""

from __future__ import annotations

import logging
import os
import re
import select
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nictune.errors import HostCommandError, InvalidInputError
from nictune.measure.hosts._base import Host
from nictune.measure.hosts.local import LocalHost
from nictune.measure.hosts.process import Process, popen_argv, run_argv

_HOSTNAME_RE = re.compile(r"^[A-Za-z0-9_.:\[\]][A-Za-z0-9_.:\[\]-]{0,252}$")
_USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")

log = logging.getLogger(__name__)

#: Prints the remote shell's pid, then becomes the command: lets us signal it remotely.
_PID_THEN_EXEC = 'echo "$$"; exec "$@"'

#: Holds nictune's lock on the remote machine (an exclusive ``flock`` on
#: ``/run/lock/nictune-machine.lock``, or ``/tmp``'s where ``/run/lock`` is not writable):
#: prints ``waiting`` when another controller holds it, ``locked`` once held, then becomes
#: ``cat``, which keeps the lock's descriptor until the session's input closes, that is until
#: our ssh client closes it or dies. A fixed script: nothing in it comes from input.
_HOLD_MACHINE_LOCK = (
    'command -v flock >/dev/null 2>&1 || { echo "flock (util-linux) is not installed" >&2; exit 127; }; '
    'd=/run/lock; { [ -d "$d" ] && [ -w "$d" ]; } || d=/tmp; '
    'exec 9>>"$d/nictune-machine.lock" || exit 3; '
    'flock -n 9 || { echo waiting; flock 9 || exit 4; }; echo locked; exec cat'
)


def _invalid(field: str, value: object, allowed: str) -> InvalidInputError:
    return InvalidInputError(
        f"ssh {field} {value!r} is not allowed; allowed: {allowed}", field=field, allowed=allowed
    )


class SshHost(Host):
    """A remote machine, reached with ``ssh -o BatchMode=yes ... user@host -- argv``.

    Args:
        host: host name or address.
        user: remote user (root, or one allowed to write sysctls).
        port: SSH port.
        key: private key file (``-i``); ``None`` uses the client's defaults.
        known_hosts: a known_hosts file to use instead of the user's.
        strict_host_key_checking: ``False`` accepts a *new* host key once
            (``accept-new``); a changed key is always refused.
        connect_timeout: seconds for the connection to be set up.
        client: where the ``ssh`` client runs (this machine by default, or a namespace).
    """

    def __init__(
        self,
        host: str,
        user: str,
        port: int = 22,
        key: str | None = None,
        known_hosts: str | None = None,
        strict_host_key_checking: bool = True,
        connect_timeout: int = 5,
        client: Host | None = None,
    ) -> None:
        if not isinstance(host, str) or not _HOSTNAME_RE.match(host):
            raise _invalid("host", host, "a host name or address ([A-Za-z0-9_.:-])")
        if not isinstance(user, str) or not _USER_RE.match(user):
            raise _invalid("user", user, "a user name matching ^[a-z_][a-z0-9_.-]{0,31}$")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise _invalid("port", port, "an integer 1-65535")
        for field, path in (("key", key), ("known_hosts", known_hosts)):
            if path is not None and (not isinstance(path, str) or path.startswith("-")):
                raise _invalid(field, path, "a file path")
        self.host = host
        self.user = user
        self.port = port
        self.key = key
        self.known_hosts = known_hosts
        self.strict_host_key_checking = strict_host_key_checking
        self.connect_timeout = int(connect_timeout)
        self.client = client if client is not None else LocalHost()
        self.name = f"ssh:{user}@{host}:{port}"
        self._master: Process | None = None
        self._machine_id = ""
        self._control_dir: str | None = None

    @property
    def machine(self) -> str:
        """``user@host:port`` (distinct machines are told apart by address)."""
        return self.name

    def ssh_options(self, control: str = "no") -> list[str]:
        """The ``ssh`` arguments before the destination.

        Args:
            control: ``ControlMaster`` value when a master connection is in use.
        """
        checking = "yes" if self.strict_host_key_checking else "accept-new"
        opts = [
            "-o", "BatchMode=yes",
            "-o", f"StrictHostKeyChecking={checking}",
            "-o", f"ConnectTimeout={self.connect_timeout}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
        ]  # fmt: skip
        if self.known_hosts:
            opts += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.key:
            opts += ["-o", "IdentitiesOnly=yes", "-i", self.key]
        if self._control_dir:
            # Reuse the master connection when it is up; connect directly when it is not.
            opts += ["-o", f"ControlPath={self._control_dir}/master"]
            opts += ["-o", f"ControlMaster={control}"]
        return [*opts, "-p", str(self.port)]

    def open(self, timeout: float = 20.0) -> SshHost:
        """Start a master connection that later commands share (one handshake, not one
        per command: a trial runs dozens). Stopped by :meth:`close`.

        Raises:
            HostCommandError: the master did not come up within ``timeout`` seconds.
        """
        if self._master is not None:
            return self
        self._control_dir = tempfile.mkdtemp(prefix="nictune-ssh-")
        dest = f"{self.user}@{self.host}"
        master = ["ssh", *self.ssh_options("yes"), "-o", "ControlPersist=no", "-N", dest]
        popen = popen_argv(self.client.local_argv(master), self.name)
        self._master = Process(popen, master, self.name)
        check = self.client.local_argv(["ssh", *self.ssh_options(), "-O", "check", dest])
        deadline = time.monotonic() + timeout
        while run_argv(check, timeout=timeout, check=False, input=None, where=self.name).returncode:
            if self._master.poll() is not None or time.monotonic() > deadline:
                err = self._master.stop().stderr.strip()
                self.close()
                raise HostCommandError(f"{self.name}: cannot connect: {err[-300:]}")
            time.sleep(0.05)
        return self

    @property
    def multiplexed(self) -> bool:
        """Whether commands go through a running master connection."""
        return self._master is not None and self._master.poll() is None

    def close(self) -> None:
        """Stop the master connection, if any."""
        if self._master is not None:
            self._master.stop(grace=2.0)
            self._master = None
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None

    def __enter__(self) -> SshHost:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def machine_lock(self) -> Iterator[None]:
        """Hold nictune's lock on the remote machine (see ``_HOLD_MACHINE_LOCK``), so that a
        trial another controller runs there waits for this one. Released when the block ends,
        and by the remote side as soon as this process dies (the ssh session ends).

        Raises:
            HostCommandError: the lock could not be taken (no connection, no ``flock``).
        """
        argv = ["sh", "-c", _HOLD_MACHINE_LOCK]
        popen = popen_argv(self.local_argv(argv), self.name, stdin=subprocess.PIPE)
        assert popen.stdout is not None and popen.stdin is not None
        try:
            said = popen.stdout.readline().strip()
            if said == b"waiting":
                log.warning("waiting for another nictune trial on machine %s to finish "
                            "(nictune's lock on that machine, held by another controller)", self.machine)
                said = popen.stdout.readline().strip()
            if said != b"locked":
                popen.kill()
                _, err = popen.communicate(timeout=10.0)
                raise HostCommandError(f"{self.name}: cannot take nictune's lock on the machine: "
                                       f"{err.decode(errors='replace').strip()[-300:] or said!r}")
            yield
        finally:
            if popen.poll() is None:
                popen.stdin.close()  # the remote cat reads end-of-file: the lock goes
                try:
                    popen.wait(timeout=10.0)
                except subprocess.TimeoutExpired:
                    popen.kill()
            for pipe in (popen.stdin, popen.stdout, popen.stderr):
                if pipe is not None:
                    pipe.close()
            popen.wait()

    def machine_id(self) -> str:
        """The remote ``/etc/machine-id`` (empty if unreadable): one machine's identity
        whatever address or user a controller reaches it by. Read once per host object
        (every trial's locks ask for it)."""
        if not self._machine_id:
            self._machine_id = self.run(["cat", "/etc/machine-id"], check=False).stdout.strip()
        return self._machine_id

    def local_argv(self, argv: list[str]) -> list[str]:
        """``ssh OPTIONS user@host -- 'arg0' 'arg1' ...`` (each element quoted once)."""
        remote = [shlex.quote(a) for a in argv]
        ssh = ["ssh", *self.ssh_options(), f"{self.user}@{self.host}", "--", *remote]
        return self.client.local_argv(ssh)

    def spec(self) -> dict[str, Any]:
        """Everything needed to connect again (for the journal)."""
        return {
            "kind": "ssh",
            "host": self.host,
            "user": self.user,
            "port": self.port,
            "key": self.key,
            "known_hosts": self.known_hosts,
            "strict_host_key_checking": self.strict_host_key_checking,
            "client": self.client.spec(),
        }

    def spawn(self, argv: list[str], start_timeout: float = 15.0) -> Process:
        """Start ``argv`` remotely; the handle signals the *remote* process, not just ssh."""
        wrapped = ["sh", "-c", _PID_THEN_EXEC, "nictune", *argv]
        popen = popen_argv(self.local_argv(wrapped), self.name)
        assert popen.stdout is not None
        fd = popen.stdout.fileno()
        line = b""
        deadline = time.monotonic() + start_timeout
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            chunk = os.read(fd, 1) if ready else b""
            if not chunk:
                popen.kill()
                popen.communicate()
                raise HostCommandError(f"{self.name}: could not start {shlex.join(argv)!r}")
            line += chunk
        try:
            remote_pid = int(line.strip())
        except ValueError:
            popen.kill()
            popen.communicate()
            raise HostCommandError(f"{self.name}: unexpected start-up output {line!r}") from None

        def signal_remote(signum: int) -> None:
            self.run(["kill", f"-{int(signum)}", str(remote_pid)], check=False, timeout=10.0)

        proc = Process(popen, argv, self.name, on_signal=signal_remote)
        proc.remote_pid = remote_pid
        return proc
