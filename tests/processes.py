"""A child process a test started (service, worker) and the two ways tests end it."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable


class ChildProcess:
    """Mixin for records holding ``process``: ``kill`` as in a crash, ``stop`` as an operator."""

    process: subprocess.Popen[bytes]

    def kill(self) -> None:
        """SIGKILL: nothing of the child runs afterwards, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM (graceful shutdown), SIGKILL if it does not end within 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def interrupt(process: subprocess.Popen[str], sig: int, ready: Callable[[], object],
              timeout: float = 30.0) -> tuple[str, str]:
    """Once ``ready()`` returns (it waits for the moment to strike), send ``sig`` to ``process``
    and collect its output; the process is killed if it is still there at the end."""
    try:
        ready()
        process.send_signal(sig)
        return process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
