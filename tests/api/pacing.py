"""Test-only pacing of the service's jobs: a simulated trial takes no time, so a test that
must see a job running (to cancel it, stream it, stop the service under it) slows it down.

In process, pass :func:`pace` to ``create_app(trial_hook=...)`` (the ``make_api`` fixture's
``pace_s``). For a ``nictune serve`` subprocess, ``running_server(pace_s=...)`` starts it
through this module (``python -m tests.api.pacing SECONDS SERVE-OPTIONS...``), which installs
the same hook: the service itself has no setting for it.
"""

from __future__ import annotations

import functools
import sys
import threading

from nictune.api.manager import TrialHook
from nictune.jobs import TrialEvent


def pace(seconds: float) -> TrialHook:
    """A trial hook that waits ``seconds`` after every new trial (on the job's stop event, so a
    cancel or a shutdown is not delayed)."""

    def wait(event: TrialEvent, stop: threading.Event) -> None:
        stop.wait(seconds)

    return wait


def main(argv: list[str]) -> None:
    """``nictune serve`` with its jobs paced: ``argv`` is the seconds, then serve's options."""
    import typer

    import nictune.api

    seconds, options = float(argv[0]), argv[1:]
    # `serve` imports create_app from nictune.api when it runs: it gets this one.
    nictune.api.create_app = functools.partial(nictune.api.create_app, trial_hook=pace(seconds))
    from nictune.cli.serve import serve

    sys.argv = [sys.argv[0], *options]
    typer.run(serve)


if __name__ == "__main__":
    main(sys.argv[1:])
