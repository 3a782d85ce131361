"""``nictune token`` and ``nictune serve`` as commands."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nictune.cli import serve as serve_cli
from nictune.cli import token as token_cli
from nictune.db import open_database, session_scope
from nictune.db.auth import TOKEN_PREFIX, verify_token


def test_token_create_prints_it_once_and_stores_a_hash(db_url: str) -> None:
    runner = CliRunner()
    created = runner.invoke(token_cli.app, ["create", "--role", "submit", "--name", "ci", "--db", db_url])
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40

    listed = runner.invoke(token_cli.app, ["list", "--json", "--db", db_url])
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["role"], r["revoked_at"]) for r in rows] == [("ci", "submit", None)]
    assert secret not in listed.stdout

    duplicate = runner.invoke(token_cli.app, ["create", "--name", "ci", "--db", db_url])
    assert duplicate.exit_code != 0
    bad_role = runner.invoke(token_cli.app, ["create", "--name", "x", "--role", "admin", "--db", db_url])
    assert bad_role.exit_code == 2

    revoked = runner.invoke(token_cli.app, ["revoke", "ci", "--db", db_url])
    assert revoked.exit_code == 0 and "token 'ci' revoked" in revoked.output
    again = runner.invoke(token_cli.app, ["revoke", "ci", "--db", db_url])
    assert again.exit_code == 0 and "token 'ci' was already revoked" in again.output
    reused = runner.invoke(token_cli.app, ["create", "--name", "ci", "--db", db_url])
    assert reused.exit_code != 0 and "was revoked; names are not reused" in str(reused.exception)
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            assert verify_token(s, secret) is None
    finally:
        engine.dispose()


def test_serve_binds_loopback_by_default() -> None:
    import inspect

    import typer

    host = inspect.signature(serve_cli.serve).parameters["host"].default
    assert isinstance(host, typer.models.OptionInfo) and host.default == "127.0.0.1"
    assert serve_cli._is_loopback("127.0.0.1") and serve_cli._is_loopback("::1")
    assert serve_cli._is_loopback("localhost") and not serve_cli._is_loopback("0.0.0.0")
    app = typer.Typer()
    serve_cli.register(app)
    assert [c.name for c in app.registered_commands] == ["serve"]


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path}/ok.db", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nictune", "serve", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.system
def test_serve_startup_failures_are_one_line_before_anything_listens(tmp_path: Path) -> None:
    """A database that cannot be opened and a port already taken were a 70-frame traceback and
    uvicorn's own exit 3; a nonsense --allow-testbed was accepted."""
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = _serve(tmp_path, "--port", port)
        assert busy.returncode == 1, busy.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr and "--port" in busy.stderr
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        free = str(probe.getsockname()[1])
    bad_db = _serve(tmp_path, "--port", free, "--db", str(garbage))
    assert bad_db.returncode == 1 and "Traceback" not in bad_db.stderr
    assert bad_db.stderr.startswith("error: database error") and len(bad_db.stderr.strip().splitlines()) == 1
    for name, needle in (("garbage thing", "veth, veth:NAME, pool:NAME or a pair YAML file"),
                         ("veth:TooLongName", "^[a-z][a-z0-9]{0,7}$"), ("pool:", "pool name ''"),
                         (str(tmp_path / "nope.yaml"), "no such file")):
        refused = _serve(tmp_path, "--port", free, "--allow-testbed", name)
        assert refused.returncode == 2, (name, refused.stderr)
        assert refused.stderr.startswith(f"error: --allow-testbed {name!r}") and needle in refused.stderr
    # A pool is measured by its workers, which only the Celery executor reaches: with the local
    # one every job on it would be refused at submission.
    pool = _serve(tmp_path, "--port", free, "--allow-testbed", "pool:lab")
    assert pool.returncode == 2 and "Traceback" not in pool.stderr
    assert pool.stderr.startswith("error: --allow-testbed pool:lab: a pool's jobs go to its workers, which only "
                                  "--executor celery reaches"), pool.stderr


def test_serve_takes_host_port_and_metrics_from_the_environment_unless_given(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NICTUNE_API_PORT ... apply under `nictune serve` too (its options' defaults used to be
    passed as if given, so the variables were ignored); an option given wins."""
    from nictune.cli.main import main

    started: list[Any] = []
    monkeypatch.setattr(serve_cli, "_check_listen", lambda host, port: None)
    monkeypatch.setattr(serve_cli, "_run", lambda app, host, port, *rest: started.append(app.state.settings))
    monkeypatch.setenv("NICTUNE_API_PORT", "9123")
    monkeypatch.setenv("NICTUNE_API_METRICS_PUBLIC", "true")
    db = f"sqlite:///{tmp_path / 'h.db'}"
    assert main(["serve", "--db", db]) == 0
    assert main(["serve", "--db", db, "--port", "9200", "--host", "::1"]) == 0
    assert [(s.host, s.port, s.metrics_public) for s in started] == [("127.0.0.1", 9123, True), ("::1", 9200, True)]
    assert "dashboard http://127.0.0.1:9123/" in capsys.readouterr().err
