"""What the operator reads in `history` and `history show`: settings, labels with units, results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nictune.cli.main import main
from nictune.formatting import changed_text, format_interval


def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """200 columns for the tables, whatever width the CLI's console took when it was first
    imported (it reads $COLUMNS once, and another test may have imported it first)."""
    from nictune.cli._common import console

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(console, "_width", 200)


@pytest.fixture(scope="module")
def pareto_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('tables') / 'h.db'}"
    assert main(["optimize", "-o", "throughput", "-o", "interrupts", "-b", "10", "--seed", "2", "--quiet",
                 "--db", url]) == 0
    return url


def _show(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["history", *args, "--db", url]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_changed_text_names_what_a_configuration_changed() -> None:
    default = {"mtu": 1500, "rx_mode": "timer", "poll_usecs": 50, "rx_ring": 512}
    assert changed_text(default, default) == "(default)"
    assert changed_text({"mtu": 9000, "rx_mode": "adaptive", "rx_ring": 512}, default) == \
        "mtu=9000 rx_mode=adaptive poll_usecs=(inactive)"


@pytest.mark.slow
def test_history_show_shows_settings_objectives_with_units_and_the_front(
        pareto_db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _wide(monkeypatch)
    capsys.readouterr()
    assert main(["history", "show", "1", "--json", "--db", pareto_db]) == 0
    report = json.loads(capsys.readouterr().out)
    text = _show(pareto_db, capsys, "show", "1")
    # Each trial by what it changed (no configuration hash), the recommended one starred.
    best = report["best"]
    assert changed_text(best["config"], report["default_config"]).split()[0] in text
    assert "(default)" in text and best["config_hash"][:12] not in text
    # The objectives as the job states them (interrupts per GB, not per second), with units.
    assert "interrupts per GB" in text and "Gbit/s" in text and "interrupts_per" not in text
    # A Pareto job's front first: before the trials table, with what each member changed.
    assert text.index("Pareto front") < text.index("(default)")
    assert "* recommended: the best throughput of the front; within 1 % of it, the best interrupts per GB" in text


def test_the_job_list_has_each_jobs_result(pareto_db: str, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _wide(monkeypatch)
    capsys.readouterr()
    assert main(["history", "show", "1", "--json", "--db", pareto_db]) == 0
    interval = json.loads(capsys.readouterr().out)["recommendation"]["interval"]
    listed = _show(pareto_db, capsys)
    assert "result" in listed
    assert f"{format_interval(interval['mean'], (interval['high'] - interval['low']) / 2)} Gbit/s" in listed


def test_default_vs_best_is_labelled_and_leaves_out_what_neither_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _wide(monkeypatch)
    url = f"sqlite:///{tmp_path / 'one.db'}"
    assert main(["optimize", "-o", "throughput", "-b", "3", "--seed", "1", "--db", url]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "throughput (Gbit/s)" in text and "ring drops (frames/run)" in text
    assert "throughput_gbps" not in text and "round trip p99" not in text  # no latency part: no latency rows


def test_measure_labels_its_metrics(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _wide(monkeypatch)
    assert main(["measure", "--repeats", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "throughput (Gbit/s)" in text and "ring drops (frames/run)" in text and "│ throughput_gbps" not in text
