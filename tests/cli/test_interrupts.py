"""Ctrl-C at any moment of a command: "interrupted", exit 130, never a traceback.

Typer turns a ``KeyboardInterrupt`` that a command lets through into a silent exit 130, an
interrupt while the CLI still loads printed a traceback, and a query cut short made
SQLAlchemy log "Error closing cursor" with two tracebacks. The signals here are real: the
child process sends SIGINT to itself at a chosen point.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nictune.cli.main import _AftermathOfCtrlC

pytestmark = pytest.mark.system  # runs nictune in subprocesses


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # SIGINT may be ignored by whatever started the tests (a background job): restore it.
    prelude = "import os, signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120,
                          env=env)


def test_ctrl_c_while_a_command_reads_the_database_says_interrupted(tmp_path: Path) -> None:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path}/i.db", "COLUMNS": "200"}
    made = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--budget", "2",
                           "--engine", "random", "--seed", "1"], capture_output=True, text=True, timeout=120, env=env)
    assert made.returncode == 0, made.stderr
    res = _python(
        "import nictune.cli.history as history\n"
        "real = history.job_report\n"
        "def job_report(*args, **kwargs):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(*args, **kwargs)\n"
        "history.job_report = job_report\n"
        "sys.argv = ['nictune', 'history', 'show', '1']\n"
        "from nictune.cli.entry import run\n"
        "run()\n", env)
    assert res.returncode == 130, res.stderr
    assert res.stderr == "interrupted\n" and res.stdout == ""


def test_ctrl_c_while_the_cli_loads_says_interrupted(tmp_path: Path) -> None:
    res = _python(
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'nictune.cli.main':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['nictune', 'history']\n"
        "from nictune.cli.entry import run\n"
        "run()\n", dict(os.environ, NICTUNE_DB=f"sqlite:///{tmp_path}/none.db"))
    assert res.returncode == 130 and res.stderr == "interrupted\n", res.stderr
    assert not (tmp_path / "none.db").exists()  # nothing was read or created


def _record(error: BaseException, message: str = "Error closing cursor",
            name: str = "sqlalchemy.pool.impl.QueuePool") -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, (type(error), error, None))


def test_only_the_cursor_error_left_by_a_ctrl_c_is_dropped() -> None:
    after_ctrl_c = sqlite3.ProgrammingError("Cannot operate on a closed database.")
    after_ctrl_c.__context__ = KeyboardInterrupt()
    other = sqlite3.ProgrammingError("Cannot operate on a closed database.")
    keep = _AftermathOfCtrlC()
    assert not keep.filter(_record(after_ctrl_c))
    assert keep.filter(_record(other))
    assert keep.filter(_record(after_ctrl_c, message="Exception during reset or similar"))
    assert keep.filter(_record(after_ctrl_c, name="nictune.db"))
