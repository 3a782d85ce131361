"""Bad input to the CLI: exit 2 with a message naming the field, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs nictune in subprocesses


HUGE = "99999999999999999999"  # beyond every database's INTEGER


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["history", "--since", "99999999d"], "out of the calendar's range"),
        (["history", "--since", "9999-12-31T23:59:59-05:00"], "out of the calendar's range"),
        (["history", "--since", "yesterday"], "expected a date"),
        (["history", "show", HUGE], "less than or equal to 2147483647"),
        (["export", HUGE, "--format", "json"], "less than or equal to 2147483647"),
        (["report", HUGE], "less than or equal to 2147483647"),
        (["optimize", "--resume", HUGE], "less than or equal to 2147483647"),
        (["optimize", "--objective", "throughput", "--budget", HUGE], "budget must be a positive number"),
        (["optimize", "--objective", "throughput", "--seed", "-1"], "seed must be between 0 and 2147483647"),
        (["optimize", "-o", "throughput", "--short-run", "10"], "a short run must last at least 0.5 s and less"),
        (["optimize", "-o", "throughput", "--short-run", "2", "--no-racing"], "short runs screen new configurations"),
        (["optimize", "-o", "throughput", "--short-run", "2", "--short-risk", "0.7"], "short-run risk must be"),
        # A dry run checks what the job would be, options included, and never submits one.
        (["optimize", "-o", "throughput", "--dry-run", "--short-run", "20"], "a short run must last at least"),
        (["optimize", "-o", "throughput", "--dry-run", "--server", "http://127.0.0.1:1"],
         "--dry-run plans a new local job"),
        (["optimize", "--objective", "throughput", "--seed", HUGE], "seed must be between 0 and 2147483647"),
        (["serve", "--log-level", "bogus"], "'bogus' is not one of"),
        # Given twice: the last one used to win silently (measure printed both).
        (["optimize", "-o", "throughput", "-o", "throughput", "-b", "4"], "objectives are repeated"),
        (["optimize", "-o", "throughput", "-b", "4", "--param", "surrogate=gp", "--param", "surrogate=tpe"],
         "--param surrogate given twice ('gp' and 'tpe')"),
        (["measure", "--set", "mtu=9000", "--set", "mtu=1500"], "--set mtu given twice ('9000' and '1500')"),
        # An engine parameter's example is an engine parameter (it said "e.g. --param mtu=9000").
        (["optimize", "-o", "throughput", "--param", "nonsense"], "expected NAME=VALUE, e.g. --param batch=4"),
        # An unknown workload is a typo, not an empty result.
        (["history", "--workload", "bogus"], "unknown workload 'bogus'"),
        (["history", "best", "-t", "sim:benson-40g", "-w", "nosuch", "-o", "throughput"], "unknown workload 'nosuch'"),
        (["optimize", "-o", "throughput", "--server", "notaurl"], "expected the service's URL"),
        (["spaces", "validate", "/"], "/ is a directory, not a space file"),
        # With --server the service's registry answers: a registry option was silently ignored.
        (["workers", "--server", "http://127.0.0.1:1", "--broker", "redis://127.0.0.1:6379/0"],
         "--broker reads the worker registry directly; with --server the service answers"),
        # A database nictune does not support is bad input, not a failure while working.
        (["db", "current", "--db", "mysql://x"], "not mysql; allowed: sqlite:///PATH"),
        (["history", "--db", "nosuchdialect://x"], "not nosuchdialect; allowed: sqlite:///PATH"),
        (["restore", "--testbed", "veth:A B"], "veth pair name 'A B' is not allowed"),
        (["testbed", "check", "/"], "/: is a directory, not a file; allowed: a testbed YAML file"),
        # The allowed values end the line when the message does not give them.
        (["serve", "--executor", "bogus"], "unknown executor 'bogus'; allowed: local, celery"),
    ],
)
def test_bad_input_exits_2_naming_the_field(tmp_path: Path, args: list[str], needle: str) -> None:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=60,
                         env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in " ".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.stderr


def test_resume_refuses_options_that_would_change_the_job(tmp_path: Path) -> None:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}

    def nictune(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True,
                              timeout=60, env=env)

    assert nictune("optimize", "-o", "throughput", "-b", "3").returncode == 0
    res = nictune("optimize", "--resume", "1", "-b", "40", "-e", "ga")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--engine, --budget cannot change it" in " ".join(res.stderr.split())
    # A finished job has nothing to resume: said before anything else (it printed the job's
    # header, then "already completed" with exit 1).
    done = nictune("optimize", "--resume", "1")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert "--resume 1: job 1 is already completed; nothing to resume" in " ".join(done.stderr.split())
    # Filters that match nothing say so (the database has a job).
    listed = nictune("history", "--state", "failed")
    assert listed.returncode == 0 and "no job matches these filters" in listed.stdout
    config = nictune("history", "config", "zzzzzz")
    assert config.returncode == 2 and "'zzzzzz' is not hexadecimal" in config.stderr
    # A plain path works as --db (as NICTUNE_DB takes it).
    plain = nictune("history", "--db", str(tmp_path / "h.db"))
    assert plain.returncode == 0 and "completed" in plain.stdout
    # A database that does not exist is not created by a command that only reads (a typo).
    typo = nictune("history", "--db", str(tmp_path / "hh.db"))
    assert typo.returncode == 2 and "no database at" in typo.stderr and not (tmp_path / "hh.db").exists()
    current = nictune("db", "current", "--db", f"sqlite:///{tmp_path / 'new' / 'x.db'}")
    assert current.returncode == 0 and "does not exist yet" in current.stdout and not (tmp_path / "new").exists()
    assert nictune("db", "upgrade", "--db", str(tmp_path / "empty.db")).returncode == 0
    assert "no jobs yet" in nictune("history", "--db", str(tmp_path / "empty.db")).stdout


def test_a_pair_file_that_is_not_yaml_is_not_printed_whole(tmp_path: Path) -> None:
    """`testbed check /etc/passwd` printed the whole file back as the invalid value."""
    text = tmp_path / "pair.yaml"
    text.write_text("word " * 400)
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "nictune", "testbed", "check", str(text)], capture_output=True,
                         text=True, timeout=60, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    said = " ".join(res.stderr.split())
    assert "the file is a str, not a mapping; expected a mapping with sender and receiver" in said
    assert "word" not in said.replace(str(text), "") and len(res.stderr) < 300  # nothing of it shown


@pytest.mark.parametrize("command", [["history"], ["report", "1"], ["history", "show", "1"]])
def test_a_file_that_is_not_a_database_is_named_in_one_line(command: list[str], tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_text("not a database\n")
    res = subprocess.run([sys.executable, "-m", "nictune", *command, "--db", str(junk)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1, res
    message = " ".join(res.stderr.split())
    assert message.startswith(f"error: cannot open the database sqlite:///{junk}: ") and "not a database" in message
    assert "Traceback" not in res.stderr and res.stderr.count("error:") == 1
    assert junk.read_text() == "not a database\n"
