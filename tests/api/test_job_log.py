"""The service's log of the jobs it runs: one line per trial, as ``optimize`` prints in a pipe."""

from __future__ import annotations

import logging
import re

import pytest
from fastapi.testclient import TestClient

from .support import submit, wait_for


@pytest.mark.slow
def test_the_service_logs_each_trial_and_notice_of_its_jobs(api: TestClient,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nictune.jobs")
    job = wait_for(api, submit(api, budget=5, seed=3, constraints=["loss<=0.1"])["id"])
    assert job["state"] == "completed"
    records = [r for r in caplog.records if r.name == "nictune.jobs" and r.levelno == logging.INFO]
    messages = [r.getMessage() for r in records]
    trials = [m for m in messages if re.match(rf"job {job['id']}: \[\d+/5\] trial \d+ ", m)]
    assert [m.split(" trial ")[0] for m in trials] == [f"job {job['id']}: [{n}/5]" for n in range(1, 6)]
    for line in trials:  # the trial's figures, where they come from, the best so far and what changed
        assert re.search(r" trial \d [0-9a-f]{12} measured \(simulated\) \d+\.\d+ s \| throughput [\d.]+ Gbit/s, "
                         r"loss_pct [\d.e-]+ %", line), line
        assert "| best trial " in line or "| best: nothing meets the constraints yet |" in line
        assert "| changes: " in line
    # The job's notices (the model's, the warm start's, the final race's) are logged with its id too.
    assert any(m.startswith(f"job {job['id']}: final race: measuring") for m in messages), messages
    assert any(m.startswith(f"job {job['id']}: warm start:") for m in messages), messages
