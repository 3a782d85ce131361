"""The job state machine (nictune.jobs.lifecycle, issue 32): every allowed transition is made by
one of its functions, every other one is refused and writes nothing, the final states are
final, and nothing else in nictune writes a job's state."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from nictune import db
from nictune.db import JobState
from nictune.errors import JobError, JobStateError
from nictune.jobs import lifecycle
from tests.db.support import add_configuration, add_job, add_testbed, add_workload

P, R, W, INT, C, F, X = ("pending", "running", "waiting", "interrupted", "completed", "failed", "cancelled")
STATES = (P, R, W, INT, C, F, X)

#: The machine as the runner and the service used it before it had an owner (derived from
#: runner.py and api/manager.py): written out here so that a change to it is a visible one.
EXPECTED = {
    P: {R, F, X},
    R: {R, W, C, F, INT, X},
    W: {R, C, F, INT, X},
    INT: {R, F, X},
    F: {R},
    C: set(),
    X: set(),
}

Action = Callable[[Session, db.Job], object]
#: Each function (with its arguments), the states it starts from, the state it ends in.
ACTIONS: dict[str, tuple[Action, set[str], str]] = {
    "start": (lifecycle.start, {P, R, W, INT, F}, R),
    "wait": (lambda s, job: lifecycle.set_waiting(s, job, True), {R}, W),
    "worker back": (lambda s, job: lifecycle.set_waiting(s, job, False), {W}, R),
    "finish completed": (lambda s, job: lifecycle.finish(s, job, C), {R, W}, C),
    "finish interrupted": (lambda s, job: lifecycle.finish(s, job, INT, error="SIGINT"), {R, W}, INT),
    "finish failed": (lambda s, job: lifecycle.finish(s, job, F, error="boom"), {R, W}, F),
    "fail": (lambda s, job: lifecycle.fail(s, job, "lane error"), {P, R, W, INT}, F),
    "cancel": (lifecycle.cancel, {P, R, W, INT}, X),
}


@pytest.fixture(scope="module")
def dbe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine = db.open_database(f"sqlite:///{tmp_path_factory.mktemp('lifecycle') / 'nictune.db'}")
    try:
        yield engine
    finally:
        engine.dispose()


def job_in(dbe: Engine, state: str, *, running_trial: bool = False) -> int:
    """A new job put in ``state`` (by the storage layer, as a fixture), with a trial left
    running when asked."""
    with db.session_scope(dbe) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        if state != P:
            db.set_job_state(s, job, state, error="earlier error" if state == F else None)
        if running_trial:
            db.start_trial(s, job, 0, add_configuration(s, f"h{job.id}"))
        return job.id


def stored(dbe: Engine, job_id: int) -> tuple[str, object, object, object, int]:
    with db.session_scope(dbe) as s:
        job = db.get_job(s, job_id)
        running = sum(t.state == "running" for t in db.job_trials(s, job_id))
        return job.state, job.started_at, job.finished_at, job.error, running


def test_the_machine_is_the_one_the_code_used() -> None:
    assert {src.value: {dst.value for dst in out} for src, out in lifecycle.TRANSITIONS.items()} == EXPECTED
    assert set(lifecycle.TRANSITIONS) == set(JobState)
    assert {s.value for s in lifecycle.FINAL} == {C, X}
    assert {s.value for s in lifecycle.ENDED} == {C, F, X}


def test_every_allowed_transition_is_made_by_a_function() -> None:
    made = {(src, target) for _, sources, target in ACTIONS.values() for src in sources}
    allowed = {(src, dst) for src, out in EXPECTED.items() for dst in out}
    assert made == allowed
    assert all(lifecycle.can_move(src, dst) == ((src, dst) in allowed) for src in STATES for dst in STATES)


@pytest.mark.parametrize("src", STATES)
@pytest.mark.parametrize("name", list(ACTIONS))
def test_a_transition_is_made_or_refused_and_then_writes_nothing(dbe: Engine, name: str, src: str) -> None:
    action, sources, target = ACTIONS[name]
    job_id = job_in(dbe, src, running_trial=True)
    before = stored(dbe, job_id)
    with db.session_scope(dbe) as s:
        job = lifecycle.lock(s, job_id)
        if src in sources:
            action(s, job)
        elif name in ("wait", "worker back"):
            assert action(s, job) is False  # nothing to switch: the service's check
        else:
            with pytest.raises(JobStateError) as refused:
                action(s, job)
            assert (refused.value.state, refused.value.wanted) == (src, target)
            assert isinstance(refused.value, JobError) and str(job_id) in str(refused.value)
    after = stored(dbe, job_id)
    if src not in sources:
        assert after == before
        return
    state, started, finished, error, running = after
    assert state == target
    if target in (R, W):
        assert started is not None and finished is None
        assert started == (before[1] or started)  # a resumed job keeps its first start
    else:
        assert finished is not None
    assert error == {"finish interrupted": "SIGINT", "finish failed": "boom", "fail": "lane error"}.get(name)
    # Starting, cancelling and failing remove the trials a crash left running; switching to
    # waiting and back, and the runner's end, do not (the runner ends its trials itself).
    assert running == (0 if name in ("start", "fail", "cancel") else 1)


def test_start_says_how_many_trials_it_removed_and_keeps_the_runners_message(dbe: Engine) -> None:
    job_id = job_in(dbe, R, running_trial=True)
    with db.session_scope(dbe) as s:
        assert lifecycle.start(s, lifecycle.lock(s, job_id)) == 1
    done = job_in(dbe, C)
    with db.session_scope(dbe) as s, pytest.raises(JobError, match=f"job {done} is already completed; "
                                                                  "start a new job instead"):
        lifecycle.start(s, lifecycle.lock(s, done))


@pytest.mark.parametrize("src", sorted({s.value for s in lifecycle.FINAL}))
def test_a_final_state_is_final(dbe: Engine, src: str) -> None:
    job_id = job_in(dbe, src)
    before = stored(dbe, job_id)
    for name, (action, sources, _) in ACTIONS.items():
        assert src not in sources, name
        with db.session_scope(dbe) as s:
            job = lifecycle.lock(s, job_id)
            assert lifecycle.has_ended(job)
            if name in ("wait", "worker back"):
                assert action(s, job) is False
            else:
                with pytest.raises(JobStateError):
                    action(s, job)
    assert stored(dbe, job_id) == before


def test_the_runner_ends_only_with_an_outcome(dbe: Engine) -> None:
    job_id = job_in(dbe, R)
    for wanted in (P, R, W, X):
        with db.session_scope(dbe) as s, pytest.raises(JobStateError, match="a run cannot end it"):
            lifecycle.finish(s, lifecycle.lock(s, job_id), wanted)
    assert stored(dbe, job_id)[0] == R


# ------------------------------------------------------------- one owner in the source
ROOT = Path(__file__).resolve().parents[2]
#: Where a job's state may be written: the owner, and the storage layer it writes with.
OWNERS = ("nictune/jobs/lifecycle.py", "nictune/db/")


def state_writes(source: str) -> list[int]:
    """Lines that write a job's state: an assignment to ``<...job>.state`` (``job.state = x``,
    ``self.job.state = x``, ``setattr(job, "state", x)``) or any use of ``set_job_state``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "state" and _is_job(target.value):
                lines.append(node.lineno)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "state"
                and _is_job(node.args[0])):
            lines.append(node.lineno)
        if (isinstance(node, ast.Name) and node.id == "set_job_state") or (
                isinstance(node, ast.Attribute) and node.attr == "set_job_state"):
            lines.append(node.lineno)
        if isinstance(node, ast.alias) and node.name.endswith("set_job_state"):
            lines.append(node.lineno)
    return sorted(set(lines))


def _is_job(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "job" in name.lower()


def test_only_the_lifecycle_writes_a_jobs_state() -> None:
    bad = []
    for path in sorted((ROOT / "nictune").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OWNERS):
            continue
        bad += [f"{rel}:{line}" for line in state_writes(path.read_text(encoding="utf-8"))]
    assert not bad, "a job's state is nictune.jobs.lifecycle's to change:\n" + "\n".join(bad)


@pytest.mark.parametrize(("source", "found"), [
    ("job.state = 'running'", [1]),
    ("x = 1\nself.job.state = wanted", [2]),
    ("setattr(job, 'state', 'failed')", [1]),
    ("db.set_job_state(s, job, 'cancelled')", [1]),
    ("from nictune.db import set_job_state", [1]),
    ("trial.state = 'failed'\nworker.state = 'idle'\nif job.state == 'running': pass", []),
])
def test_the_state_write_check_finds_every_form(source: str, found: list[int]) -> None:
    assert state_writes(source) == found
