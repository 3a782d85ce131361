"""Who serves which pool: workers' heartbeats and pools' pinned fingerprints, in Redis.

Why Redis keys and not Celery's own worker events or ``inspect``: a worker runs its
trial in its main thread (the solo pool, so the trial's SIGINT/SIGTERM guard and time
limit work), and while it does, its Celery event loop neither answers ``inspect`` nor
sends ``worker-heartbeat`` events, for the minutes a trial lasts. A small thread in the
worker writes its record instead (``SET ... EX``) every ``heartbeat_s`` seconds, busy or
not, with the trial it is measuring; the key expires three beats after the worker dies
(SIGKILL, power loss), so "live workers of a pool" is simply "keys that exist".

A pool comes into being when its first worker joins: that worker pins the pool's
fingerprint, testbed kind and default space (a key without expiry, ``SET NX``). A worker
whose testbed reports another fingerprint is refused, so every result of a pool is
comparable with every other.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from nictune.errors import InvalidInputError, StorageError
from nictune.executors.celery_app import hide_password


class RegistryError(StorageError):
    """The registry (Redis) could not be reached or read."""


@dataclass
class WorkerRecord:
    """What a worker publishes about itself.

    Attributes:
        worker_id: ``nictune-POOL-TESTBED@HOST`` (also the Celery node name).
        hostname: the machine.
        pid: the worker process.
        testbed: the testbed it measures on (``veth:nt0``, a pair file ...).
        pool: the pool it serves.
        kind: ``sim``, ``veth`` or ``ssh``.
        fingerprint: its testbed's fingerprint.
        broker: the broker it takes requests from, any password hidden (empty from a worker
            older than this field).
        state: ``starting``, ``idle``, ``busy`` or ``stopping``.
        current: the measurement in flight (``key``, ``job_id``, ``trial_id``, ``step``,
            ``since``), or ``None``.
        started_at: when the worker started (ISO 8601).
        heartbeat_at: the last heartbeat (ISO 8601).
        measured: measurements finished since start.
        notices: what opening the testbed reported (settings restored after a crash ...).
    """

    worker_id: str
    hostname: str
    pid: int
    testbed: str
    pool: str
    kind: str
    fingerprint: dict[str, Any]
    broker: str = ""
    state: str = "starting"
    current: dict[str, Any] | None = None
    started_at: str = ""
    heartbeat_at: str = ""
    measured: int = 0
    notices: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> WorkerRecord:
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        return cls(**known)


@dataclass(frozen=True)
class PoolRecord:
    """A pool's pinned identity (written by its first worker)."""

    pool: str
    fingerprint: dict[str, Any]
    kind: str
    simulated: bool
    default_space: str
    pinned_by: str
    pinned_at: str


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class Registry:
    """The worker and pool records of one installation (one Redis, one key prefix).

    Args:
        url: Redis URL.
        prefix: key prefix (``CelerySettings.key_prefix``).
    """

    def __init__(self, url: str, prefix: str = "nictune:"):
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5,
                                           decode_responses=True)
        self.prefix = prefix
        self.label = hide_password(url)

    def _worker_key(self, worker_id: str) -> str:
        return f"{self.prefix}registry:worker:{worker_id}"

    def _pool_key(self, pool: str) -> str:
        return f"{self.prefix}registry:pool:{pool}"

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import redis

        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise RegistryError(f"worker registry at {self.label}: cannot {what}: {exc}") from exc

    # ---------------------------------------------------------------- workers
    def publish(self, record: WorkerRecord, ttl_s: float) -> None:
        """Write ``record`` (with a fresh heartbeat time) for ``ttl_s`` seconds."""
        record.heartbeat_at = now_iso()
        self._call("publish a heartbeat", self._redis.set, self._worker_key(record.worker_id),
                   json.dumps(asdict(record)), px=max(1000, int(ttl_s * 1000)))

    def remove(self, worker_id: str) -> None:
        """Forget a worker (it stopped cleanly)."""
        self._call("remove a worker", self._redis.delete, self._worker_key(worker_id))

    def workers(self, pool: str | None = None) -> list[WorkerRecord]:
        """Live workers (of ``pool``), sorted by pool and id."""
        keys = sorted(self._call("list workers", lambda: list(
            self._redis.scan_iter(match=f"{self.prefix}registry:worker:*", count=500))))
        values = self._call("read workers", self._redis.mget, keys) if keys else []
        out = []
        for raw in values:
            if raw is None:  # expired between SCAN and MGET
                continue
            try:
                record = WorkerRecord.from_dict(json.loads(raw))
            except (ValueError, TypeError):
                continue
            if pool is None or record.pool == pool:
                out.append(record)
        return sorted(out, key=lambda r: (r.pool, r.worker_id))

    # ------------------------------------------------------------------ pools
    def pool(self, name: str) -> PoolRecord | None:
        """The pinned record of pool ``name`` (``None``: no worker ever joined it)."""
        raw = self._call("read a pool", self._redis.get, self._pool_key(name))
        if raw is None:
            return None
        return PoolRecord(**json.loads(raw))

    def pools(self) -> list[PoolRecord]:
        """Every pinned pool."""
        keys = sorted(self._call("list pools", lambda: list(
            self._redis.scan_iter(match=f"{self.prefix}registry:pool:*", count=500))))
        return [PoolRecord(**json.loads(raw)) for raw in (self._redis.mget(keys) if keys else []) if raw]

    def join(self, record: WorkerRecord, *, simulated: bool, default_space: str) -> PoolRecord:
        """Pin ``record.pool`` to the worker's fingerprint, or check it matches the pinned one.

        Raises:
            InvalidInputError: the pool is pinned to another fingerprint (field ``pool``).
        """
        pinned = PoolRecord(pool=record.pool, fingerprint=dict(record.fingerprint), kind=record.kind,
                            simulated=simulated, default_space=default_space, pinned_by=record.worker_id,
                            pinned_at=now_iso())
        self._call("pin a pool", self._redis.set, self._pool_key(record.pool), json.dumps(asdict(pinned)), nx=True)
        current = self.pool(record.pool)
        assert current is not None
        if current.fingerprint != record.fingerprint:
            raise InvalidInputError(
                f"pool {record.pool!r} holds testbeds with fingerprint {current.fingerprint} "
                f"(pinned by {current.pinned_by}); {record.testbed} reports {record.fingerprint}: "
                "results would not be comparable; use another pool name",
                field="pool", allowed=f"a pool whose testbeds report {record.fingerprint}")
        return current

    def cancel(self, key: str, ttl_s: float = 7 * 24 * 3600) -> None:
        """Mark request ``key`` as withdrawn: a worker that receives it drops it unmeasured."""
        self._call("withdraw a request", self._redis.set, f"{self.prefix}registry:withdrawn:{key}", "1",
                   px=int(ttl_s * 1000))

    def withdrawn(self, key: str) -> bool:
        """Whether request ``key`` was withdrawn."""
        return bool(self._call("read a withdrawal", self._redis.exists, f"{self.prefix}registry:withdrawn:{key}"))

    def forget_pool(self, name: str) -> None:
        """Drop a pool's pinned record (its next worker pins it again)."""
        self._call("forget a pool", self._redis.delete, self._pool_key(name))

    def overview(self) -> dict[str, Any]:
        """Live workers and pinned pools as plain data (what ``GET /v1/workers`` returns)."""
        live = self.workers()
        pools = []
        for p in self.pools():
            members = [w for w in live if w.pool == p.pool]
            pools.append(asdict(p) | {"live_workers": len(members),
                                      "busy_workers": sum(w.state == "busy" for w in members)})
        return {"workers": [asdict(w) for w in live], "pools": pools}

    def close(self) -> None:
        self._redis.close()
