"""A child process a test started (service, worker) and the two ways tests end it."""

from __future__ import annotations

import signal
import subprocess


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
