"""SIGINT/SIGTERM during a trial: interrupt the work, restore the hosts, then deliver again."""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

#: Signals that interrupt a trial.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrialInterrupted(BaseException):
    """Raised inside a trial when SIGINT or SIGTERM arrives (a BaseException, like
    KeyboardInterrupt, so ``except Exception`` in the work does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


class SignalGuard:
    """Context manager installing SIGINT/SIGTERM handlers for the duration of a trial.

    While *armed* the first signal raises :class:`TrialInterrupted`; afterwards (or once
    :meth:`defer` was called, i.e. during the restore) signals are only recorded.
    :meth:`redeliver`, called after the handlers are back, hands the recorded signal to the
    previous handler (calls it, or raises the signal when it was the default action) so
    the caller's own handling (KeyboardInterrupt, termination) happens after the
    hosts are clean. Outside the main thread handlers cannot be installed and the guard
    does nothing.
    """

    def __init__(self) -> None:
        self.armed = True
        self.pending: int | None = None
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.pending is None:
            self.pending = signum
        if self.armed:
            self.armed = False
            raise TrialInterrupted(signum)

    def defer(self) -> None:
        """From now on only record signals."""
        self.armed = False

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # ignored by this process (e.g. SIGINT of a background job): stays so
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def redeliver(self) -> bool:
        """Send the recorded signal again to this process (after :meth:`__exit__`).

        Returns:
            whether a signal was pending and not ignored by the previous handler.
        """
        old = self._old.get(self.pending) if self.pending is not None else None
        if self.pending is None or old is signal.SIG_IGN:
            return False
        if callable(old):
            # The previous Python handler, called here and now (KeyboardInterrupt for the
            # default SIGINT one): a handler run by raise_signal() would run at some later
            # bytecode, possibly inside a finaliser that swallows its exception, and the
            # trial's own error would end the process instead of the signal.
            old(self.pending, None)
        else:
            signal.raise_signal(self.pending)  # SIG_DFL: the process ends here
        return True
