"""The apply journal: durable write, state directory, replay rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nictune.measure.appliers import applier_for
from nictune.measure.testbeds.veth import VethPair, remove_pair
from nictune.measure.trial.journal import CLEANUPS, Journal, replay_journal, state_dir
from nictune.search_spaces._base import Family, Setting


def test_state_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICTUNE_STATE_DIR", str(tmp_path / "s"))
    assert state_dir() == tmp_path / "s" / "journal"
    monkeypatch.delenv("NICTUNE_STATE_DIR")
    assert state_dir().name == "journal" and "nictune" in str(state_dir())


def test_write_read_clear(tmp_path: Path) -> None:
    journal = Journal("veth:nt0", tmp_path / "j")
    journal.write({"hosts": {}, "entries": []})
    assert journal.path.name == "veth_nt0.json" and journal.exists()
    record = journal.read()
    assert record is not None and record["testbed"] == "veth:nt0" and record["pid"] == os.getpid()
    assert [p.name for p in journal.directory.iterdir()] == ["veth_nt0.json"]  # no temp file
    journal.clear()
    assert not journal.exists() and journal.read() is None


@pytest.mark.system
def test_a_live_writer_is_not_replayed(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        journal = Journal("live", tmp_path)
        journal.write({"hosts": {}, "entries": []})
        record = json.loads(journal.path.read_text())
        record["pid"] = sleeper.pid
        journal.path.write_text(json.dumps(record))
        (report,) = replay_journal(tmp_path)
        assert report.skipped and not report.ok and journal.exists()
        (forced,) = replay_journal(tmp_path, force=True)
        assert forced.ok and not journal.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.netns
def test_replay_restores_a_recorded_snapshot(veth_pair: VethPair, tmp_path: Path) -> None:
    host = veth_pair.receiver()
    setting = [Setting(Family.SYSCTL, "net.core.somaxconn", 3333)]
    applier = applier_for(Family.SYSCTL)
    snap = applier.snapshot(host, veth_pair.rx, setting)
    journal = Journal("hand-made", tmp_path)
    journal.write({
        "hosts": {"receiver": host.spec()},
        "entries": [{"side": "receiver", "family": "sysctl", "device": veth_pair.rx,
                     "snapshot": snap}],
    })  # fmt: skip
    record = json.loads(journal.path.read_text())
    record["pid"] = -1  # as if the writer had died
    journal.path.write_text(json.dumps(record))
    applier.apply(host, veth_pair.rx, setting)
    (report,) = replay_journal(tmp_path, testbed="hand-made")
    # As `nictune restore` prints it: key=value, as `nictune apply` prints what it sets (not JSON).
    line = f"receiver sysctl {veth_pair.rx}: net.core.somaxconn={snap['net.core.somaxconn']}"
    assert report.ok and report.restored[0] == line
    assert applier.snapshot(host, veth_pair.rx, setting) == snap


def test_a_corrupt_journal_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (report,) = replay_journal(tmp_path)
    assert report.errors and "not valid JSON" in report.errors[0]
    assert (tmp_path / "bad.json").exists()


def test_a_broken_entry_keeps_the_journal(tmp_path: Path) -> None:
    journal = Journal("broken", tmp_path)
    journal.write({
        "hosts": {"sender": {"kind": "netns", "namespace": "ntt-none",
                             "parent": {"kind": "local"}}},
        "entries": [{"side": "sender", "family": "sysctl", "device": "eth0",
                     "snapshot": {"net.core.somaxconn": "4096; reboot"}}],
    })  # fmt: skip
    record = json.loads(journal.path.read_text())
    record["pid"] = -1
    journal.path.write_text(json.dumps(record))
    (report,) = replay_journal(tmp_path)
    assert report.errors and "not allowed" in report.errors[0]
    assert journal.exists()


def _dead_writer(journal: Journal, record: dict[str, object]) -> None:
    journal.write(record)
    body = json.loads(journal.path.read_text())
    body["pid"] = -1  # as if the writer had died
    journal.path.write_text(json.dumps(body))


def test_resources_are_removed_by_the_cleanup_registered_for_their_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CLEANUPS["veth_pair"] is remove_pair  # veth registers its own; the journal knows no kind
    removed: list[str] = []

    def remove_thing(resource: dict[str, object]) -> str:
        removed.append(str(resource["name"]))
        return f"removed thing {resource['name']}"

    monkeypatch.setitem(CLEANUPS, "thing", remove_thing)
    journal = Journal("things", tmp_path)
    _dead_writer(journal, {"hosts": {}, "entries": [], "resources": [{"kind": "thing", "name": "t1"}]})
    (report,) = replay_journal(tmp_path)
    assert report.ok and report.restored == ["removed thing t1"] and removed == ["t1"]
    assert not journal.exists()


def test_a_resource_of_a_kind_nobody_registered_keeps_the_journal(tmp_path: Path) -> None:
    journal = Journal("odd", tmp_path)
    _dead_writer(journal, {"hosts": {}, "entries": [], "resources": [{"kind": "no-such-kind", "name": "x"}]})
    (report,) = replay_journal(tmp_path)
    assert report.errors == ["cleanup: no cleanup is registered for resources of kind 'no-such-kind'"]
    assert journal.exists()


@pytest.mark.netns
def test_replay_removes_a_veth_pair_the_crashed_trial_created(tmp_path: Path) -> None:
    from tests.measure.support import unique_name

    pair = VethPair(unique_name())
    pair.up()
    try:
        journal = Journal(f"veth:{pair.name}", tmp_path)
        journal.write({"hosts": {}, "entries": [],
                       "resources": [{"kind": "veth_pair", "name": pair.name}]})  # fmt: skip
        record = json.loads(journal.path.read_text())
        record["pid"] = -1
        journal.path.write_text(json.dumps(record))
        (report,) = replay_journal(tmp_path)
        assert report.ok and f"removed veth pair {pair.name}" in report.restored
        assert not pair.exists()
    finally:
        pair.down()
