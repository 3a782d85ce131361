"""`nictune optimize --server` and `nictune history --server`: the CLI as a client of the service."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nictune import db
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.testbeds import open_testbed
from nictune.search_spaces import load_space
from tests.cli.test_piped_output import ANSI, TRIAL
from tests.processes import interrupt

from .server import running_server
from .test_server import cli_token

pytestmark = pytest.mark.slow


def cli(*args: str, env_db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=180,
                          env={**__import__("os").environ, "NICTUNE_DB": "sqlite:////nonexistent/not-used.db"})


def test_optimize_and_history_through_the_service(db_url: str, tmp_path: Path) -> None:
    token = cli_token(db_url, "submit", "cli")
    with running_server(db_url, tmp_path / "server.log") as server:
        run = cli("optimize", "--objective", "throughput", "--constraint", "loss<=50", "--budget", "12", "--seed", "3",
                  "--server", server.url, "--token", token, "--json", env_db=db_url)
        assert run.returncode == 0, run.stderr
        job = json.loads(run.stdout)
        job_id = job["job_id"]
        assert job["state"] == "completed" and job["progress"]["done"] == 12 and job["simulated"] is True
        listed = cli("history", "--server", server.url, "--token", token, "--json", env_db=db_url)
        assert listed.returncode == 0, listed.stderr
        # A script reads the same keys locally and through the service: the job's id is `job_id`
        # in every CLI document (the service's own `id` is not repeated next to it).
        assert "id" not in job and [j["job_id"] for j in json.loads(listed.stdout)] == [job["job_id"]]
        assert all("id" not in j for j in json.loads(listed.stdout))
        listed_here = subprocess.run([sys.executable, "-m", "nictune", "history", "--json"], capture_output=True,
                                     text=True, timeout=180, env={**os.environ, "NICTUNE_DB": db_url})
        assert [(j.get("id"), j["job_id"]) for j in json.loads(listed_here.stdout)] == [(None, job["job_id"])]
        # The table through the service is the local one (but for its title).
        wide = {**os.environ, "COLUMNS": "200"}
        remote = subprocess.run([sys.executable, "-m", "nictune", "history", "--server", server.url, "--token", token],
                                capture_output=True, text=True, timeout=180, env=wide | {"NICTUNE_DB": "sqlite:////x/y.db"})
        local = subprocess.run([sys.executable, "-m", "nictune", "history"], capture_output=True, text=True,
                               timeout=180, env=wide | {"NICTUNE_DB": db_url})
        assert remote.returncode == 0 and local.returncode == 0, remote.stderr + local.stderr
        assert f"jobs on {server.url}" in remote.stdout
        rows = [line.split() for line in local.stdout.splitlines()[1:]]
        assert rows == [line.split() for line in remote.stdout.splitlines()[1:]]
        assert ["job", "state", "created", "testbed", "workload", "objective", "engine", "trials", "cached",
                "result"] in rows
        assert [str(job_id), "completed"] == rows[-1][:2] and "12/12" in rows[-1] and "sim:benson-40g" in rows[-1]
        assert "throughput [loss_pct <= 50]" in remote.stdout  # not swallowed as console markup
        # One job through the service: the local command's table, row for row.
        show_remote = subprocess.run([sys.executable, "-m", "nictune", "history", "show", str(job_id), "--server",
                                      server.url, "--token", token], capture_output=True, text=True, timeout=180,
                                     env=wide | {"NICTUNE_DB": "sqlite:////x/y.db"})
        show_local = subprocess.run([sys.executable, "-m", "nictune", "history", "show", str(job_id)],
                                    capture_output=True, text=True, timeout=180, env=wide | {"NICTUNE_DB": db_url})
        assert show_remote.returncode == 0 and show_local.returncode == 0, show_remote.stderr + show_local.stderr

        def table(out: str) -> list[str]:
            return [line for line in out.splitlines() if line.startswith("│")]

        def trial_lines(out: str) -> list[str]:  # the first line of each trial (what it changed wraps)
            return [line for line in table(out) if re.match(r"│\s+\d+( \*)?\s+│ (measured|cache)", line)]

        assert len(trial_lines(show_remote.stdout)) == 12 and table(show_remote.stdout) == table(show_local.stdout)
        assert show_remote.stdout.splitlines()[0] == show_local.stdout.splitlines()[0]  # the job's header
        assert "recommended (best lower confidence bound)" in show_remote.stdout
        # The best configuration as what tuning changed, as the local report has it.
        report_here = subprocess.run([sys.executable, "-m", "nictune", "history", "show", str(job_id), "--json"],
                                     capture_output=True, text=True, timeout=180,
                                     env={**os.environ, "NICTUNE_DB": db_url})
        changes = json.loads(report_here.stdout)["changes"]
        # ... and the whole document through the service is the local one: one account, no re-shaping.
        report_there = cli("history", "show", str(job_id), "--server", server.url, "--token", token, "--json",
                           env_db=db_url)
        assert report_there.returncode == 0, report_there.stderr
        assert json.loads(report_there.stdout) == json.loads(report_here.stdout)
        assert changes and job["best"]["changes"] == changes
        # The default's figures, as the local document has them (trial 0 measured it).
        default_here = json.loads(report_here.stdout)["default"]
        assert job["default"]["trial"] == default_here["number"] == 0
        assert job["default"]["metrics"] == default_here["metrics"] and job["default"]["spread"]
        assert all(job["best"]["config"].get(c["knob"]) == c["best"] for c in changes)
        # One configuration's measurements through the service: the local table too.
        config_args = ["history", "config", job["best"]["config_hash"][:12]]
        config_remote = subprocess.run([sys.executable, "-m", "nictune", *config_args, "--server", server.url,
                                        "--token", token], capture_output=True, text=True, timeout=180,
                                       env=wide | {"NICTUNE_DB": "sqlite:////x/y.db"})
        config_local = subprocess.run([sys.executable, "-m", "nictune", *config_args], capture_output=True, text=True,
                                      timeout=180, env=wide | {"NICTUNE_DB": db_url})
        assert config_remote.returncode == 0 and config_local.returncode == 0, config_remote.stderr
        assert table(config_remote.stdout) and table(config_remote.stdout) == table(config_local.stdout)
        missing = cli("history", "show", "999", "--server", server.url, "--token", token, env_db=db_url)
        assert missing.returncode == 2 and "no job with id 999" in missing.stderr and "Traceback" not in missing.stderr
        # An empty answer to a filter says so, as the local command does (it was a bare table).
        none = cli("history", "--server", server.url, "--token", token, "--testbed", "sim:mishra-10g", env_db=db_url)
        assert none.returncode == 0 and "no job matches these filters" in none.stdout, none.stderr
        # The best configuration of the history is the job's (before the next job, whose random
        # seed may measure a configuration once that outranks it).
        best = cli("history", "best", "-t", "sim:benson-40g", "-w", "tcp", "-o", "throughput", "--top", "1",
                   "--server", server.url, "--token", token, "--json", env_db=db_url)
        assert best.returncode == 0, best.stderr
        assert json.loads(best.stdout)[0]["config_hash"] == job["best"]["config_hash"]
        best_here = subprocess.run([sys.executable, "-m", "nictune", "history", "best", "-t", "sim:benson-40g", "-w",
                                    "tcp", "-o", "throughput", "--top", "1", "--json"], capture_output=True, text=True,
                                   timeout=180, env={**os.environ, "NICTUNE_DB": db_url})
        (there,), (here,) = json.loads(best.stdout), json.loads(best_here.stdout)
        assert there["value"] == there["objective_value"] and here["value"] == here["objective_value"]
        assert here["config_hash"] == there["config_hash"] and here["value"] == pytest.approx(there["value"])
        # A job that cannot meet its constraint says so (40 GbE cannot carry 100 Gbit/s).
        hopeless = cli("optimize", "--objective", "throughput", "--constraint", "throughput_gbps>=100", "--budget", "4",
                       "--server", server.url, "--token", token, env_db=db_url)
        assert hopeless.returncode == 0, hopeless.stderr
        assert "no configuration met every constraint" in " ".join(hopeless.stdout.split())
        assert "knobs that differ from the default" in " ".join(hopeless.stdout.split())
        # In a pipe, one plain line per trial came first (tests/cli/test_piped_output.py).
        assert [line.split(" trial ")[0] for line in hopeless.stdout.splitlines() if line.startswith("[")] == [
            f"[{n}/4]" for n in range(1, 5)]
        assert "| best: nothing meets the constraints yet |" in hopeless.stdout
        # Its default was measured by the first job (a warm start reused it): the table of
        # default vs best shows those figures, as the local report does.
        row = next(line for line in hopeless.stdout.splitlines()
                   if line.startswith("│") and "throughput (Gbit/s)" in line)
        assert [cell.strip() != "-" for cell in row.split("│")[1:-1]] == [True, True, True], hopeless.stdout
        # The service's notice about the model (its space's tx_ring changes nothing) reaches the user
        # (in a pipe, as a line of stdout, before the trials).
        assert "sim:benson-40g is a model with no term for tx_ring (space benson-40g)" in hopeless.stdout
        bad = cli("optimize", "--objective", "throughput", "--budget", "-3", "--server", server.url, "--token", token,
                  env_db=db_url)
        assert bad.returncode == 2 and "budget" in bad.stderr and "Traceback" not in bad.stderr
        denied = cli("history", "--server", server.url, "--token", "nt_wrong", env_db=db_url)
        assert denied.returncode == 1 and "token" in denied.stderr
        # A space file goes to the service as its definition (the service reads no client files).
        shown = cli("spaces", "show", "benson-40g", "--definition", env_db=db_url)
        mine = tmp_path / "mine.yaml"
        mine.write_text(shown.stdout.replace("name: benson-40g", "name: my-benson", 1))
        custom = cli("optimize", "--objective", "throughput", "--space", str(mine), "--budget", "3",
                     "--server", server.url, "--token", token, "--json", env_db=db_url)
        assert custom.returncode == 0, custom.stderr
        assert json.loads(custom.stdout)["space"] == "my-benson"
    # The local document has the same `job_id` (and no second key for it) and `notices` too.
    here = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--budget", "2",
                           "--json"], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "NICTUNE_DB": db_url})
    assert here.returncode == 0, here.stderr
    local_job = json.loads(here.stdout)
    assert "id" not in local_job and local_job["job_id"] > job["job_id"]
    assert any("no term for tx_ring" in n for n in local_job["notices"]), local_job["notices"]


def test_ctrl_c_stops_following_a_server_job_and_says_it_goes_on(db_url: str, tmp_path: Path) -> None:
    """The job belongs to the service: Ctrl-C on `optimize --server` used to exit 130 with no
    word, leaving the user to guess that the job was still running there."""
    from nictune.api.client import Client

    token = cli_token(db_url, "submit", "cli")
    with running_server(db_url, tmp_path / "server.log", pace_s=0.2) as server, \
            Client(server.url, token) as api:
        follower = subprocess.Popen(
            [sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--budget", "300",
             "--server", server.url, "--token", token], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "NICTUNE_DB": "sqlite:////nonexistent/not-used.db", "COLUMNS": "300"})
        def two_trials_done() -> int:
            deadline = time.monotonic() + 60
            while not (jobs := api.list_jobs()["items"]) or jobs[0]["progress"]["done"] < 2:
                assert time.monotonic() < deadline and follower.poll() is None, follower.stderr
                time.sleep(0.2)
            return int(jobs[0]["id"])

        job_ids: list[int] = []
        _, err = interrupt(follower, signal.SIGINT, lambda: job_ids.append(two_trials_done()))
        job_id = job_ids[0]
        assert follower.returncode == 130, err
        said = " ".join(err.split())
        assert f"stopped following job {job_id}; it goes on on {server.url}" in said and "Traceback" not in err
        assert f"POST {server.url}/v1/jobs/{job_id}/cancel" in said
        assert api.get_job(job_id)["state"] == "running"
        api.cancel_job(job_id)


def _first_trial_line(process: subprocess.Popen[bytes], timeout: float = 60.0) -> str:
    """Read ``process``'s stdout as it comes until a trial line is complete; return it."""
    seen, deadline = b"", time.monotonic() + timeout
    while (line := next((x for x in seen.split(b"\n")[:-1] if x.startswith(b"[")), None)) is None:
        remaining = deadline - time.monotonic()
        assert remaining > 0 and select.select([process.stdout], [], [], remaining)[0], seen
        chunk = os.read(process.stdout.fileno(), 65536)  # type: ignore[union-attr]
        assert chunk, f"stdout closed before a trial line: {seen!r}"
        seen += chunk
    return line.decode()


def test_optimize_server_in_a_pipe_prints_each_trial_as_it_ends(db_url: str, tmp_path: Path) -> None:
    """`optimize --server | tee log`: a line per trial, each as soon as the service reports the
    trial (flushed, not when a buffer fills or the job ends); --quiet prints only the result."""
    from nictune.api.client import Client

    token = cli_token(db_url, "submit", "cli")
    env = {**os.environ, "NICTUNE_DB": "sqlite:////nonexistent/not-used.db", "COLUMNS": "100"}
    with running_server(db_url, tmp_path / "server.log", pace_s=0.3) as server, \
            Client(server.url, token) as api:
        follower = subprocess.Popen(
            [sys.executable, "-m", "nictune", "optimize", "-o", "throughput", "-b", "8", "--seed", "3",
             "--server", server.url, "--token", token], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            first = _first_trial_line(follower)
            running = api.list_jobs()["items"][0]
            out, err = follower.communicate(timeout=120)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
        assert running["progress"]["done"] < 8, "the first line came while the job still ran"
        assert follower.returncode == 0, err
        lines = [first, *out.decode().splitlines()]
        trials = [m for m in map(TRIAL.match, lines) if m]
        assert [int(m["done"]) for m in trials] == list(range(1, 9)), lines
        assert len([line for line in lines if line.startswith("[")]) == 8 and not ANSI.search(out.decode())
        assert any(line.startswith(f"job {running['id']} completed: 8 trials") for line in lines)
        quiet = cli("optimize", "-o", "throughput", "-b", "3", "--seed", "4", "--server", server.url, "--token",
                    token, "--quiet", env_db=db_url)
        assert quiet.returncode == 0, quiet.stderr
        assert quiet.stdout.startswith(f"job {running['id'] + 1} completed: 3 trials"), quiet.stdout
        assert not any(line.startswith("[") for line in quiet.stdout.splitlines())


def test_history_through_the_service_reads_past_one_page(db_url: str, tmp_path: Path) -> None:
    """The service serves at most 1,000 jobs a page; `history --limit 1002` (allowed up to
    10,000) reads the pages it needs, as the local command reads the database (it was a 422)."""
    space, bed = load_space("benson-40g"), open_testbed("sim:benson-40g")
    engine = db.open_database(db_url)
    try:
        with db.session_scope(engine) as s:
            testbed = db.get_or_create_testbed(s, bed.name, bed.kind, bed.fingerprint())
            workload = db.get_or_create_workload(s, "tcp", get_workload("tcp").key())
            for seed in range(1003):
                db.create_job(s, space_name=space.name, space_definition=space.definition, testbed=testbed,
                              workload=workload, objectives=["throughput"], constraints=[], engine="random",
                              engine_params={}, budget=1, repeats=1, seed=seed)
    finally:
        engine.dispose()
    token = cli_token(db_url, "read", "cli")
    with running_server(db_url, tmp_path / "server.log") as server:
        remote = cli("history", "--server", server.url, "--token", token, "--limit", "1002", "--json", env_db=db_url)
    local = subprocess.run([sys.executable, "-m", "nictune", "history", "--limit", "1002", "--json"],
                           capture_output=True, text=True, timeout=180, env={**os.environ, "NICTUNE_DB": db_url})
    assert remote.returncode == 0 and local.returncode == 0, remote.stderr + local.stderr
    ids = [j["job_id"] for j in json.loads(remote.stdout)]
    assert len(ids) == 1002 and len(set(ids)) == 1002
    assert ids == [j["job_id"] for j in json.loads(local.stdout)]


def test_history_show_through_the_service_marks_the_cache_and_the_final_race(db_url: str, tmp_path: Path) -> None:
    """The second job answers its first trials from the first one's measurements and races one
    of them again: `history show --server` prints the local output line for line, with the
    `cache+race` mark and the final-race line (the API did not say which trials came from
    the cache, so the remote table had neither)."""
    token = cli_token(db_url, "submit", "cli")
    wide = {**os.environ, "COLUMNS": "200"}
    with running_server(db_url, tmp_path / "server.log") as server:
        # The first job measures each configuration once (no race), so the second one's warm
        # start hands it cached configurations with one run, and its final race measures one of
        # them again.
        for seed, extra in (("4", ("--no-racing", "--repeats", "1")), ("5", ())):
            run = cli("optimize", "--objective", "throughput", "--budget", "20", "--seed", seed, *extra, "--server",
                      server.url, "--token", token, "--json", env_db=db_url)
            assert run.returncode == 0, run.stderr
        job_id = str(json.loads(run.stdout)["job_id"])
        there = subprocess.run([sys.executable, "-m", "nictune", "history", "show", job_id, "--server", server.url,
                                "--token", token], capture_output=True, text=True, timeout=180,
                               env=wide | {"NICTUNE_DB": "sqlite:////x/y.db"})
    here = subprocess.run([sys.executable, "-m", "nictune", "history", "show", job_id], capture_output=True,
                          text=True, timeout=180, env=wide | {"NICTUNE_DB": db_url})
    assert there.returncode == 0 and here.returncode == 0, there.stderr + here.stderr
    assert there.stdout == here.stdout
    sources = [line.split("│")[2].strip() for line in there.stdout.splitlines() if line.startswith("│")]
    assert "cache+race" in sources and "final race: trial" in there.stdout, there.stdout
