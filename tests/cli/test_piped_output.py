"""`optimize` and `report` with stdout a pipe (ssh | tee, CI, systemd): one plain line per
trial or stage instead of a live display; `--quiet` prints only the result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs nictune in subprocesses


#: A trial line: progress, trial number, hash, source (simulated), seconds, figures, best, changes.
TRIAL = re.compile(
    r"^\[(?P<done>\d+)/(?P<budget>\d+)\] trial (?P<number>\d+) (?P<hash>[0-9a-f]{12}) "
    r"(?P<source>measured|cache|failed|replayed) \(simulated\) (?P<seconds>\d+\.\d+) s \| "
    r"(?P<figures>throughput [\d.,]+ Gbit/s[^|]*) \| "
    r"(?P<best>best trial (?P<best_number>\d+): (?P<best_value>[\d.,]+) Gbit/s|best: none yet) \| "
    r"changes: (?P<changes>.+)$"
)
ANSI = re.compile(r"\x1b\[")
#: What Rich draws a progress bar and a spinner with.
BAR_CHARACTERS = set("━╸╺█▏▎▍▌▋▊▉⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")


def nictune(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a process whose stdout and stderr are pipes (no terminal)."""
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}", "COLUMNS": "100"}
    for name in ("FORCE_COLOR", "FORCE_TERMINAL", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_optimize_in_a_pipe_prints_one_plain_line_per_trial_then_the_result(tmp_path: Path) -> None:
    run = nictune(tmp_path / "piped.db", "optimize", "--objective", "throughput", "--budget", "7", "--seed", "3")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    trials = [m for m in map(TRIAL.match, lines) if m]
    assert len([line for line in lines if line.startswith("[")]) == len(trials) == 7, run.stdout
    assert [int(m["done"]) for m in trials] == list(range(1, 8)) and {m["budget"] for m in trials} == {"7"}
    assert [int(m["number"]) for m in trials] == list(range(7)) and {m["source"] for m in trials} == {"measured"}
    assert trials[0]["changes"] == "none (the default)"  # the first trial of a job is the space's default
    assert all(re.fullmatch(r"(\w+=\S+ )*\w+=\S+( \+\d+ more)?", m["changes"]) for m in trials[1:]), run.stdout
    # The best so far never gets worse and is always one of the trials already shown.
    bests = [float(m["best_value"].replace(",", "")) for m in trials]
    assert bests == sorted(bests) and all(int(m["best_number"]) <= int(m["number"]) for m in trials)

    result_at = next(i for i, line in enumerate(lines) if line.startswith("job 1 completed: 7 trials"))
    assert result_at > max(i for i, line in enumerate(lines) if TRIAL.match(line))
    assert lines[-1] == "job id: 1   (nictune history show 1)"
    before_result = "\n".join(lines[:result_at])
    assert not ANSI.search(run.stdout + run.stderr) and not BAR_CHARACTERS & set(before_result)
    # The header and the notices are whole lines too, in order with the trials (a tee keeps them).
    assert lines[0].startswith("testbed: sim:benson-40g (default; simulated testbed: figures come from a model")
    assert lines[1] == "job 1: bayes on sim:benson-40g, workload tcp, objective throughput, budget 7, seed 3"
    final_race = next(i for i, line in enumerate(lines) if line.startswith("final race: measuring"))
    assert max(i for i, line in enumerate(lines) if TRIAL.match(line)) < final_race < result_at
    assert "warm start: no earlier measurements" in before_result and run.stderr == ""


def test_quiet_prints_only_the_result(tmp_path: Path) -> None:
    run = nictune(tmp_path / "quiet.db", "optimize", "-o", "throughput", "-b", "4", "--seed", "3", "--quiet")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("job 1 completed: 4 trials, 4 measured"), run.stdout
    assert not any(TRIAL.match(line) or line.startswith(("[", "final race", "warm start", "testbed: sim", "job 1: "))
                   for line in run.stdout.splitlines()), run.stdout
    assert "job id: 1" in run.stdout and "knobs that differ" in " ".join(run.stdout.split())


def test_a_resumed_job_in_a_pipe_shows_its_replayed_and_cached_trials(tmp_path: Path) -> None:
    db = tmp_path / "again.db"
    first = nictune(db, "optimize", "-o", "throughput", "-b", "3", "--seed", "3", "-q")
    assert first.returncode == 0, first.stderr
    # A second job starts from the first one's best, answered from the cache.
    second = nictune(db, "optimize", "-o", "throughput", "-b", "5", "--seed", "4")
    assert second.returncode == 0, second.stderr
    sources = [m["source"] for m in map(TRIAL.match, second.stdout.splitlines()) if m]
    assert len(sources) == 5 and "cache" in sources, second.stdout


def test_report_in_a_pipe_prints_one_line_per_stage(tmp_path: Path) -> None:
    db = tmp_path / "report.db"
    assert nictune(db, "optimize", "-o", "throughput", "-b", "6", "--seed", "3", "-q").returncode == 0
    run = nictune(db, "report", "1", "--out", str(tmp_path / "r"))
    assert run.returncode == 0, run.stderr
    stages = [line.removeprefix("report of job 1: ") for line in run.stdout.splitlines()
              if line.startswith("report of job 1: ")]
    assert stages[:2] == ["loading the job", "computing knob importance"]
    assert "drawing figure convergence" in stages and "drawing figure default_vs_best" in stages
    assert stages[-2] == f"writing report.html and {len(list((tmp_path / 'r').glob('*.png')))} PNG files to " \
                         f"{tmp_path / 'r'}"
    assert stages[-1] == str(tmp_path / "r" / "report.html")  # the result, as on a terminal
    assert not ANSI.search(run.stdout) and not BAR_CHARACTERS & set(run.stdout)
    quiet = nictune(db, "report", "1", "--out", str(tmp_path / "q"), "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.splitlines()[0] == f"report of job 1: {tmp_path / 'q' / 'report.html'}"


def test_a_pipe_closed_by_its_reader_stops_the_job_as_ctrl_c_does(tmp_path: Path) -> None:
    """`optimize | head`: when the reader goes, the job ends interrupted (resumable) and says so
    on stderr, with no BrokenPipeError traceback."""
    db = tmp_path / "head.db"
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}"}
    process = subprocess.Popen([sys.executable, "-m", "nictune", "optimize", "-o", "throughput", "-b", "300",
                                "-e", "random", "--seed", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    try:
        assert process.stdout is not None and process.stderr is not None
        while not (process.stdout.readline() or "[").startswith("["):  # as `head` would, up to a trial
            pass
        process.stdout.close()
        err = process.stderr.read()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert err == "interrupted: resume with  nictune optimize --resume 1\n", err
    shown = nictune(db, "history", "--json")
    assert [job["state"] for job in json.loads(shown.stdout)] == ["interrupted"], shown.stdout
