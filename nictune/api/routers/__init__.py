"""One router per resource."""

from nictune.api.routers import configurations, events, health, history, jobs, metrics, spaces, testbeds, workers

__all__ = ["configurations", "events", "health", "history", "jobs", "metrics", "spaces", "testbeds", "workers"]
