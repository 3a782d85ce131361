"""The trial's signal guard leaves signals the process ignores ignored."""

from __future__ import annotations

import signal

from nictune.measure.trial.signals import SignalGuard


def test_an_ignored_signal_stays_ignored_during_a_trial() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job
    try:
        with SignalGuard() as guard:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == guard._handle
        assert guard.redeliver() is False
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == before[signal.SIGTERM]
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
