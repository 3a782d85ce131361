"""Test-only launcher: nictune's app from ``create_app`` (dashboard and export routes
included) under uvicorn, its jobs paced (a wait after every trial) so the browser test can
watch a job run (``python -m tests.dashboard.serve_app``)."""

from __future__ import annotations

import argparse
import logging
from types import FrameType

from fastapi import FastAPI

from nictune.api import ApiSettings, create_app
from tests.api.pacing import pace


def build_app(settings: ApiSettings, pace_s: float = 0.0) -> FastAPI:
    """The service as ``nictune serve`` builds it (``create_app`` includes the dashboard and
    the export routes; including them again would register every route twice), its jobs
    waiting ``pace_s`` after every new trial (:func:`tests.api.pacing.pace`)."""
    return create_app(settings, trial_hook=pace(pace_s) if pace_s > 0 else None)


def main(argv: list[str] | None = None) -> None:
    """Run the app on 127.0.0.1 until SIGTERM (event streams end at the first stop signal)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--trial-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    settings = ApiSettings(host="127.0.0.1", port=args.port, db_url=args.db, shutdown_grace_s=5.0)
    app = build_app(settings, args.trial_delay)
    notifier = app.state.notifier

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            notifier.close()
            super().handle_exit(sig, frame)

    logging.basicConfig(level="WARNING")
    Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning",
                          timeout_graceful_shutdown=10)).run()


if __name__ == "__main__":
    main()
