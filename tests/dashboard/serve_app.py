"""Test-only launcher: nictune's app from ``create_app`` plus the dashboard routers, under uvicorn.

``nictune serve`` does not include the dashboard until ``create_app`` does; the browser test
runs this module in a subprocess instead (``python -m tests.dashboard.serve_app``), with the
same settings class, so everything else is the real service.
"""

from __future__ import annotations

import argparse
import logging
from types import FrameType

from fastapi import FastAPI

from nictune.api import ApiSettings, create_app
from nictune.api.dashboard import dashboard_router, export_router


def build_app(settings: ApiSettings) -> FastAPI:
    """The service with the export endpoints and the dashboard included."""
    app = create_app(settings)
    app.include_router(export_router())
    app.include_router(dashboard_router())
    return app


def main(argv: list[str] | None = None) -> None:
    """Run the app on 127.0.0.1 until SIGTERM (event streams end at the first stop signal)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--trial-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    settings = ApiSettings(host="127.0.0.1", port=args.port, db_url=args.db, trial_delay_s=args.trial_delay,
                           shutdown_grace_s=5.0)
    app = build_app(settings)
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
