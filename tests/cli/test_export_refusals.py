"""``nictune export`` writes nothing the appliers would refuse: exit 2 naming the knob (issue 31)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nictune.cli.main import main
from nictune.db import Job, open_database, session_scope
from nictune.jobs import JobRunner, JobSpec, create_job

SOMAXCONN = {"type": "int", "low": 128, "high": 4096, "default": 4096, "target": "net.core.somaxconn"}


def run_job(db: str, space: dict[str, Any], stored: dict[str, Any] | None = None) -> int:
    """A finished simulated job of ``space``; ``stored`` replaces its definition afterwards (a job
    stored before today's checks)."""
    engine = open_database(db)
    try:
        job_id = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", space=space,
                                            budget=2, repeats=1, racing=False, seed=1, engine="random"))
        JobRunner(engine).run(job_id)
        if stored is not None:
            with session_scope(engine) as s:
                job = s.get(Job, job_id)
                assert job is not None
                job.space_definition = stored
    finally:
        engine.dispose()
    return job_id


@pytest.mark.parametrize(("fmt", "space", "stored", "words"), [
    ("tuned", {"name": "m", "knobs": {"somaxconn": SOMAXCONN, "drv": {"type": "bool", "default": False,
                                                                     "family": "module_param",
                                                                     "target": "evil_mod.opt"}}}, None,
     ["evil_mod.opt", "mlx4_core.enable_sys_tune"]),
    ("sysctl", {"name": "m", "knobs": {"somaxconn": SOMAXCONN}},
     {"name": "m", "knobs": {"somaxconn": SOMAXCONN | {"target": "net.ipv4.ip_forward"}}},
     ["net.ipv4.ip_forward", "routing or security"]),
    ("tuned", {"name": "m", "knobs": {"somaxconn": SOMAXCONN}},
     {"name": "m", "knobs": {"somaxconn": SOMAXCONN | {"target": "kernel.yama.ptrace_scope"}}},
     ["kernel.yama.ptrace_scope"]),
], ids=["module-option", "ip_forward", "kernel-key"])
def test_export_refuses_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str,
                                    space: dict[str, Any], stored: dict[str, Any] | None, words: list[str]) -> None:
    db = f"sqlite:///{tmp_path / 'n.db'}"
    job_id = run_job(db, space, stored)
    out = tmp_path / "out.conf"

    code = main(["export", str(job_id), "--format", fmt, "--out", str(out), "--db", db])

    err = capsys.readouterr().err
    assert code == 2, err
    for word in words:
        assert word in err, err
    assert not out.exists()
