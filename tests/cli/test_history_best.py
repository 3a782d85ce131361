"""`nictune history best` on a local database, as a user runs it after a job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs nictune in subprocesses


def nictune(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_history_best_ranks_the_job_recommendation_first_with_its_interval(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    run = nictune(db, "optimize", "--objective", "throughput", "--budget", "14", "--seed", "2", "--json")
    assert run.returncode == 0, run.stderr
    rec = json.loads(run.stdout)["recommendation"]
    # A second job measures every configuration once (no race): some single runs come out
    # above the recommendation's mean (the final race measures again any configuration of its
    # own job that could be better, so one job alone no longer leaves such a run behind).
    once = nictune(db, "optimize", "--objective", "throughput", "--budget", "14", "--seed", "3", "--no-racing",
                   "--repeats", "1", "--no-warm-start")
    assert once.returncode == 0, once.stderr

    best = nictune(db, "history", "best", "-t", "sim:benson-40g", "-w", "tcp", "-o", "throughput", "--top", "30",
                   "--json")
    assert best.returncode == 0, best.stderr
    rows = json.loads(best.stdout)
    assert rows[0]["config_hash"] == rec["hash"] and rows[0]["measurements"] == 3
    assert rows[0]["interval"]["low"] == pytest.approx(rec["interval"]["low"])
    lows = [r["interval"]["low"] for r in rows]
    assert lows == sorted(lows, reverse=True)
    assert any(r["measurements"] == 1 and r["value"] > rows[0]["value"] for r in rows), \
        "the seed-3 job has a single run above the recommendation's mean: the case the ranking is for"

    # The service's defaults: workload tcp, objective throughput.
    defaults = nictune(db, "history", "best", "-t", "sim:benson-40g", "--top", "30", "--json")
    assert defaults.returncode == 0, defaults.stderr
    assert json.loads(defaults.stdout) == rows

    table = nictune(db, "history", "best", "-t", "sim:benson-40g", "-w", "tcp", "-o", "throughput", "--top", "3")
    assert table.returncode == 0, table.stderr
    assert "(90% CI)" in table.stdout and "±" in table.stdout and rec["hash"][:12] in table.stdout
    assert "conservative end" in table.stdout
    assert "simulated testbed: figures come from a model" in table.stdout


def test_history_show_columns_and_final_race(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    for objective in ("throughput", "interrupts"):
        run = nictune(db, "optimize", "--objective", objective, "--budget", "5", "--seed", "3")
        assert run.returncode == 0, run.stderr
    header, footer = {}, {}
    for job in ("1", "2"):
        shown = nictune(db, "history", "show", job)
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        end = next(i for i, line in enumerate(lines) if "trial" in line and "source" in line)
        start = max(i for i in range(end) if lines[i].startswith("┏"))
        header[job] = " ".join(" ".join(lines[start:end + 1]).replace("┃", " ").split())  # the header's lines
        footer[job] = shown.stdout
    stored = json.loads(nictune(db, "history", "show", "1", "--json").stdout)
    assert stored["stats"]["final_race"], "the job ran a final race"
    numbers = [r["number"] for h in stored["stats"]["final_race"] for r in stored["trials"] if r["config_hash"] == h]
    listed = f"trials {', '.join(map(str, numbers))}" if len(numbers) > 1 else f"trial {numbers[0]}"
    assert f"final race: {listed} (the best after the search" in footer["1"]
    assert header["1"].count("throughput") == 1 and "Gbit/s" in header["1"]  # one throughput column, not two
    assert "interrupts" in header["2"] and "per GB" in header["2"] and "throughput" in header["2"]
    assert "loss" in header["1"] and "receiver CPU" in header["1"] and "changed (vs default)" in header["1"]


def test_a_job_that_meets_no_constraint_says_so_then_and_later(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    # 40 GbE cannot carry 100 Gbit/s: every configuration breaks the constraint.
    run = nictune(db, "optimize", "--objective", "throughput", "--constraint", "throughput_gbps>=100",
                  "--budget", "4", "--seed", "1")
    assert run.returncode == 0, run.stderr
    warning = "no configuration met every constraint; the best shown breaks the fewest"
    assert warning in run.stdout
    assert "default vs best: mean [min .. max] over repeats" in run.stdout and "\\" not in run.stdout
    shown = nictune(db, "history", "show", "1")
    assert shown.returncode == 0, shown.stderr
    assert warning in shown.stdout
    listed = nictune(db, "history")
    assert "throughput [throughput_gbps >= 100]" in listed.stdout  # the brackets are not console markup
    met = nictune(db, "optimize", "--objective", "throughput", "--constraint", "loss<=50", "--budget", "4")
    assert met.returncode == 0, met.stderr
    assert warning not in met.stdout and warning not in nictune(db, "history", "show", "2").stdout


def test_history_best_names_only_the_jobs_of_its_workload(tmp_path: Path) -> None:
    """The default configuration is measured by a TCP job and a UDP job: the UDP ranking's
    jobs column names the UDP job only."""
    db = tmp_path / "history.db"
    for workload in ("tcp", "udp"):
        run = nictune(db, "optimize", "--objective", "throughput", "--workload", workload, "--budget", "4",
                      "--seed", "1", "--no-warm-start")
        assert run.returncode == 0, run.stderr
    for workload, job in (("tcp", 1), ("udp", 2)):
        best = nictune(db, "history", "best", "-t", "sim:benson-40g", "-w", workload, "-o", "throughput",
                       "--top", "10", "--json")
        assert best.returncode == 0, best.stderr
        rows = json.loads(best.stdout)
        assert len(rows) >= 3 and all(r["jobs"] == [job] for r in rows), [r["jobs"] for r in rows]


def test_a_space_measured_whole_before_the_budget_says_why_the_job_stopped(tmp_path: Path) -> None:
    """sim:ixgbe-10g's space has 8 configurations: with a budget of 20 the engine runs out of
    configurations first, and the job says so (it used to show "8 trials" with "budget 20" and
    no word why)."""
    db = tmp_path / "history.db"
    run = nictune(db, "optimize", "--objective", "packet-rate", "--testbed", "sim:ixgbe-10g", "--budget", "20")
    assert run.returncode == 0, run.stderr
    said = ("the engine (bayes) had nothing left to propose after 8 of the 20 budgeted trials: "
            "the space has 8 configurations before constraints")
    assert said in run.stdout
    assert said in nictune(db, "history", "show", "1").stdout
    as_json = nictune(db, "optimize", "--objective", "packet-rate", "--testbed", "sim:ixgbe-10g", "--budget", "30",
                      "--no-warm-start", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["engine_done_at"] == 8
    spent = nictune(db, "optimize", "--objective", "packet-rate", "--testbed", "sim:ixgbe-10g", "--budget", "5",
                    "--no-warm-start")
    assert spent.returncode == 0, spent.stderr
    assert "nothing left to propose" not in spent.stdout  # the budget ended that one
    assert json.loads(nictune(db, "history", "show", "3", "--json").stdout)["engine_done_at"] is None


def test_history_show_lists_failed_trials_under_the_table_at_80_columns(tmp_path: Path) -> None:
    from nictune import db as store

    db = tmp_path / "history.db"
    run = nictune(db, "optimize", "--objective", "throughput", "--budget", "3", "--seed", "3")
    assert run.returncode == 0, run.stderr
    error = ("trial failed, settings restored: netns:nt0-tx: nt0-tx does not report combined (-l), "
             "a message longer than any column")
    engine = store.open_database(f"sqlite:///{db}")
    try:
        with store.session_scope(engine) as s:
            job = store.get_job(s, 1)
            # The failed trials share the configuration of the race's (first) finalist.
            row = s.query(store.Configuration).filter_by(hash=job.stats["final_race"][0]).one()
            for number in (3, 4, 6):
                store.fail_trial(s, store.start_trial(s, job, number, row), error)
            store.fail_trial(s, store.start_trial(s, job, 5, row), "iperf3 timed out")
    finally:
        engine.dispose()
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}", "COLUMNS": "80"}
    shown = subprocess.run([sys.executable, "-m", "nictune", "history", "show", "1"], capture_output=True, text=True,
                           timeout=120, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    # Every column keeps its header (a long error in the source cell squeezed them away).
    header = " ".join(" ".join(lines[i] for i in range(len(lines)) if "source" in lines[i] or
                                (i + 1 < len(lines) and "source" in lines[i + 1])).replace("┃", " ").split())
    assert all(h in header for h in ("trial", "source", "runs", "throughput", "Gbit/s", "loss", "%"))
    # No column runs past the terminal's edge: every row of the table ends with its rule.
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert table and all(line.rstrip()[-1] in "┓┃┩│┘" for line in table), table
    # The changes did not fit beside the figures: they are listed under the table, a trial a row.
    if "changed" not in header:
        listed = lines[lines.index("changed (vs default), by trial:") + 1:]
        assert listed[0].split()[0] == "0" and listed[0].split()[-1] == "(default)", listed
    assert sum(line.split("│")[2].strip() == "failed" for line in lines if line.count("│") > 3) == 4
    text = " ".join(shown.stdout.split())
    assert f"trials 3-4, 6 failed: {error}" in text and "trial 5 failed: iperf3 timed out" in text
    # The failed trials share a finalist's configuration: the final race names the measured
    # trials only.
    stored = json.loads(nictune(db, "history", "show", "1", "--json").stdout)
    measured = sorted(str(r["number"]) for r in stored["trials"]
                      if r["config_hash"] in stored["stats"]["final_race"] and r["metrics"])
    race = text.split("final race: trial")[1].lstrip("s ").split(" (the best")[0].split(", ")
    assert race == measured and measured and not set(race) & {"3", "4", "5", "6"}, (race, measured)


def test_the_jobs_table_at_80_columns_cuts_no_testbed_name(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    run = nictune(db, "optimize", "--objective", "throughput", "--constraint", "loss<=0.1", "--workload", "udp",
                  "--budget", "2", "--seed", "1")
    assert run.returncode == 0, run.stderr
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}", "COLUMNS": "80"}
    listed = subprocess.run([sys.executable, "-m", "nictune", "history"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in listed.stdout
    header = next(line for line in lines if line.startswith("job "))
    start, end = header.index("testbed"), header.index("workload")
    cell = "".join(line[start:end].strip() for line in lines[lines.index(header) + 2:])
    assert cell == "sim:benson-40g", listed.stdout


def test_a_warm_started_job_shows_the_default_from_earlier_measurements(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    # Budget 9: the five start configurations (default, stock profiles, baseline) and four of the
    # engine's, so that the three best the warm start takes first from the cache are not the default.
    first = nictune(db, "optimize", "--objective", "throughput", "--budget", "9", "--seed", "2", "--json")
    assert first.returncode == 0, first.stderr
    measured = json.loads(first.stdout)["default"]
    assert measured["trial"] == 0
    second = nictune(db, "optimize", "--objective", "throughput", "--budget", "3", "--seed", "5", "--json")
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)
    assert doc["warm_start"]["reused"] > 0
    # Not a trial of the second job: the first job's measurements of it, with their spread.
    assert doc["default"]["trial"] is None and doc["default"]["config_hash"] == measured["config_hash"]
    assert doc["default"]["metrics"] == pytest.approx(measured["metrics"])
    assert doc["default"]["spread"]["throughput_gbps"]["max"] == pytest.approx(
        measured["spread"]["throughput_gbps"]["max"])
