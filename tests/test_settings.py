"""What nictune reads from the environment (nictune/settings.py and the classes built on it):
the variables' names, precedence (argument > environment > default), reading at call time,
and no environment read anywhere else in the package."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import platformdirs
import pytest

from nictune.api import ApiSettings
from nictune.api.client import Client
from nictune.db import default_url, open_database
from nictune.executors.celery_app import CelerySettings
from nictune.measure.trial.journal import state_dir
from nictune.measure.trial.locks import lock_dir
from nictune.settings import CliSettings, CommonSettings

ROOT = Path(__file__).resolve().parents[1]

#: Every variable of the common part, by field: read under this name by every class.
COMMON = {"db": "NICTUNE_DB", "lock_dir": "NICTUNE_LOCK_DIR", "state_dir": "NICTUNE_STATE_DIR"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NICTUNE_* variable of the machine or of another test leaks in."""
    for name in [n for n in os.environ if n.startswith("NICTUNE_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("cls", [CommonSettings, CliSettings, ApiSettings, CelerySettings])
def test_every_process_kind_reads_the_common_variables_under_their_own_names(
        cls: type[CommonSettings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert all(getattr(cls(), field) is None for field in COMMON)  # the defaults
    monkeypatch.setenv("NICTUNE_DB", "postgresql+psycopg://u@db.example/nictune")
    monkeypatch.setenv("NICTUNE_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("NICTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NICTUNE_API_DB", "not-read")  # the service's prefix does not apply to them
    settings = cls()
    assert settings.db == "postgresql+psycopg://u@db.example/nictune"
    assert settings.lock_dir == tmp_path / "locks" and settings.state_dir == tmp_path / "state"
    # An argument wins over the environment.
    given = cls(db="sqlite:////given.db", lock_dir=tmp_path / "given")
    assert given.db == "sqlite:////given.db" and given.lock_dir == tmp_path / "given"
    assert given.state_dir == tmp_path / "state"


def test_the_cli_reads_server_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CliSettings().server is None and CliSettings().token is None
    monkeypatch.setenv("NICTUNE_SERVER", "http://127.0.0.1:9")
    monkeypatch.setenv("NICTUNE_TOKEN", "nt_secret")
    assert CliSettings().server == "http://127.0.0.1:9" and CliSettings().token == "nt_secret"
    assert CliSettings(server="http://other:1").server == "http://other:1"


def test_the_service_reads_nictune_api_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ApiSettings().port == 8080 and ApiSettings().max_pending_jobs == 10
    monkeypatch.setenv("NICTUNE_API_PORT", "9000")
    monkeypatch.setenv("NICTUNE_API_MAX_PENDING_JOBS", "3")
    monkeypatch.setenv("NICTUNE_PORT", "1")  # not the service's
    assert ApiSettings().port == 9000 and ApiSettings().max_pending_jobs == 3
    assert ApiSettings(port=9100).port == 9100


def test_the_service_database_is_its_own_else_the_common_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    expected = Path(platformdirs.user_data_dir("nictune")) / "nictune.db"
    assert ApiSettings().database_url() == f"sqlite:///{expected}"
    monkeypatch.setenv("NICTUNE_DB", str(tmp_path / "h.db"))  # a plain path: a SQLite file
    assert ApiSettings().database_url() == f"sqlite:///{tmp_path / 'h.db'}"
    assert ApiSettings(db=str(tmp_path / "given.db")).database_url() == f"sqlite:///{tmp_path / 'given.db'}"
    monkeypatch.setenv("NICTUNE_API_DB_URL", "sqlite:////service.db")
    assert ApiSettings().database_url() == "sqlite:////service.db"


def test_test_pacing_is_no_setting_of_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICTUNE_API_TRIAL_DELAY_S", "5")
    assert "trial_delay_s" not in ApiSettings.model_fields
    assert "trial_delay_s" not in ApiSettings().model_dump()


def test_the_worker_reads_the_broker_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    default = CelerySettings()
    assert default.broker_url == "redis://127.0.0.1:6379/0" and default.key_prefix == "nictune:"
    for name, value in {"NICTUNE_BROKER_URL": "amqp://u:p@mq:5672//", "NICTUNE_RESULT_BACKEND": "redis://r:6379/1",
                        "NICTUNE_KEY_PREFIX": "lab:", "NICTUNE_VISIBILITY_TIMEOUT_S": "60",
                        "NICTUNE_RESTORE_INTERVAL_S": "3", "NICTUNE_HEARTBEAT_S": "0.5"}.items():
        monkeypatch.setenv(name, value)
    read = CelerySettings()
    assert (read.broker_url, read.result_backend, read.key_prefix) == ("amqp://u:p@mq:5672//", "redis://r:6379/1",
                                                                       "lab:")
    assert (read.visibility_timeout_s, read.restore_interval_s, read.heartbeat_s) == (60.0, 3.0, 0.5)
    assert CelerySettings(broker_url="redis://given:6379/0").broker_url == "redis://given:6379/0"
    # The service's Celery executor: its own NICTUNE_API_BROKER_URL, else the workers' variable.
    assert ApiSettings().celery_settings().broker_url == "amqp://u:p@mq:5672//"
    monkeypatch.setenv("NICTUNE_API_BROKER_URL", "redis://service:6379/0")
    assert ApiSettings().celery_settings().broker_url == "redis://service:6379/0"


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*COMMON.values(), "NICTUNE_SERVER", "NICTUNE_BROKER_URL"):
        monkeypatch.setenv(name, "")
    assert CommonSettings().db is None and CommonSettings().lock_dir is None and CommonSettings().state_dir is None
    assert CliSettings().server is None and CelerySettings().broker_url == "redis://127.0.0.1:6379/0"


def test_the_environment_is_read_when_a_value_is_needed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing is cached: a variable set after the first read is seen by the next one."""
    assert default_url().endswith("nictune.db") and "nictune" in str(state_dir())
    monkeypatch.setenv("NICTUNE_DB", "postgresql+psycopg://u@db.example/nictune")
    monkeypatch.setenv("NICTUNE_STATE_DIR", str(tmp_path / "s"))
    monkeypatch.setenv("NICTUNE_LOCK_DIR", str(tmp_path / "l"))
    assert default_url() == "postgresql+psycopg://u@db.example/nictune"
    assert state_dir() == tmp_path / "s" / "journal" and lock_dir() == tmp_path / "l"
    monkeypatch.setenv("NICTUNE_LOCK_DIR", str(tmp_path / "m"))
    assert lock_dir() == tmp_path / "m"


def test_the_client_takes_its_token_from_the_cli_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICTUNE_TOKEN", "nt_from_env")
    with Client("http://127.0.0.1:9") as env, Client("http://127.0.0.1:9", "nt_given") as given:
        assert env._http.headers["Authorization"] == "Bearer nt_from_env"
        assert given._http.headers["Authorization"] == "Bearer nt_given"
    monkeypatch.delenv("NICTUNE_TOKEN")
    with Client("http://127.0.0.1:9") as none:
        assert "Authorization" not in none._http.headers


def test_cli_options_fall_back_to_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--db, --server and --token: the option, else NICTUNE_DB / NICTUNE_SERVER / NICTUNE_TOKEN."""
    from nictune.cli.main import main

    missing = tmp_path / "typo.db"
    monkeypatch.setenv("NICTUNE_DB", str(missing))
    # A reading command refuses a database that does not exist, named by the variable as by --db.
    assert main(["history"]) == 2
    assert "no database at" in capsys.readouterr().err and not missing.exists()
    # NICTUNE_SERVER sends the command to the service (nothing listens on port 9 of loopback).
    monkeypatch.setenv("NICTUNE_SERVER", "http://127.0.0.1:9")
    assert main(["history"]) == 1
    assert "cannot reach the nictune service at http://127.0.0.1:9" in " ".join(capsys.readouterr().err.split())
    # An option wins over its variable (NICTUNE_DB still names the missing file).
    monkeypatch.delenv("NICTUNE_SERVER")
    open_database(f"sqlite:///{tmp_path / 'h.db'}").dispose()
    assert main(["history", "--db", f"sqlite:///{tmp_path / 'h.db'}"]) == 0, capsys.readouterr().err


def _environment_reads(path: Path, root: Path = ROOT) -> list[str]:
    """``os.environ`` / ``os.getenv`` / ``environ`` imported from os, in one source file."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            found.append(f"{path.relative_to(root)}:{node.lineno}: os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                a.name in ("environ", "getenv", "environb") for a in node.names):
            found.append(f"{path.relative_to(root)}:{node.lineno}: from os import ...")
    return sorted(found)


def test_no_module_reads_the_environment_but_the_settings() -> None:
    """Every variable is a settings field (nictune/settings.py and the classes built on it).
    Code that builds a subprocess's environment would be listed here by reason; none does."""
    reads = [hit for path in sorted((ROOT / "nictune").rglob("*.py")) for hit in _environment_reads(path)]
    assert reads == []


def test_the_scan_finds_an_environment_read(tmp_path: Path) -> None:
    sample = tmp_path / "reads.py"
    sample.write_text("import os\nfrom os import getenv\nX = os.environ.get('NICTUNE_X')\nY = os.getenv('Y')\n")
    assert _environment_reads(sample, tmp_path) == ["reads.py:2: from os import ...", "reads.py:3: os.environ",
                                                     "reads.py:4: os.getenv"]


def test_every_variable_is_documented() -> None:
    """The variables of every class appear in docs/architecture.md's settings table."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    names = set(COMMON.values()) | {"NICTUNE_SERVER", "NICTUNE_TOKEN"}
    names |= {f"NICTUNE_{f.upper()}" for f in CelerySettings.model_fields if f not in COMMON}
    assert {n for n in names if n not in doc} == set()
    assert "NICTUNE_API_" in doc
