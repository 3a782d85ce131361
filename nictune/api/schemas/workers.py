"""Schemas of ``GET /v1/workers``: the measurement workers and the pools they form."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class CurrentTrial(BaseModel):
    """The measurement a worker is doing."""

    key: str = Field(description="Task id: nictune-JOB-TRIAL-STEP.")
    job_id: int
    trial_id: int
    step: int
    since: str = Field(description="When the worker started it (ISO 8601).")


class WorkerOut(BaseModel):
    """A live worker (its heartbeat is current)."""

    worker_id: str = Field(description="Celery node name: nictune-POOL-TESTBED@HOST.")
    hostname: str
    pid: int
    testbed: str
    pool: str
    kind: str
    fingerprint: dict[str, Any]
    broker: str = Field(default="", description="The broker it takes requests from, any password hidden "
                                                "(empty from a worker of an older nictune).")
    state: Literal["starting", "idle", "busy", "stopping"]
    current: CurrentTrial | None
    started_at: str
    heartbeat_at: str = Field(description="Last heartbeat (ISO 8601); a worker is gone after three missed beats.")
    measured: int = Field(description="Measurements finished since the worker started.")
    notices: list[str] = Field(description="What opening the testbed reported, e.g. settings a crash left, restored.")


class PoolOut(BaseModel):
    """A pool: pinned by its first worker; every worker of it reports this fingerprint."""

    pool: str
    fingerprint: dict[str, Any]
    kind: str
    simulated: bool
    default_space: str
    pinned_by: str
    pinned_at: str
    live_workers: int
    busy_workers: int


class WorkerList(BaseModel):
    """The workers and pools the service knows (empty with the local executor)."""

    executor: Literal["local", "celery"]
    workers: list[WorkerOut]
    pools: list[PoolOut]

    model_config = {"json_schema_extra": {"example": {
        "executor": "celery",
        "workers": [{"worker_id": "nictune-lab-veth-nt1@host1", "hostname": "host1", "pid": 4242,
                     "testbed": "veth:nt1", "pool": "lab", "kind": "veth", "fingerprint": {"nic": "veth"},
                     "broker": "redis://broker.lab:6379/0", "state": "busy",
                     "current": {"key": "nictune-3-17-0", "job_id": 3, "trial_id": 17, "step": 0,
                                 "since": "2026-11-22T21:00:00+00:00"},
                     "started_at": "2026-11-22T20:00:00+00:00", "heartbeat_at": "2026-11-22T21:00:01+00:00",
                     "measured": 12, "notices": []}],
        "pools": [{"pool": "lab", "fingerprint": {"nic": "veth"}, "kind": "veth", "simulated": False,
                   "default_space": "veth", "pinned_by": "nictune-lab-veth-nt1@host1",
                   "pinned_at": "2026-11-22T20:00:00+00:00", "live_workers": 1, "busy_workers": 1}],
    }}}
