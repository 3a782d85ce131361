"""Exports of a measured configuration, parsed back the way their consumers read them."""

from __future__ import annotations

import configparser
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nictune.errors import InvalidInputError
from nictune.export import (
    ExportSource,
    load_source,
    render_json,
    render_scripts,
    render_sysctl,
    render_tuned,
    write_export,
)
from nictune.jobs import JobRunner, JobSpec, create_job, job_report
from nictune.report import build_report
from nictune.search_spaces import Family, load_space, space_from_dict
from tests.report.conftest import Jobs

pytestmark = pytest.mark.slow  # its module fixtures run whole jobs


# The [net] options of TuneD's net plugin and the parameter names it accepts in each
# (tuned/plugins/plugin_net.py: _get_config_options and _get_config_options_*).
TUNED_NET_OPTIONS = {"devices", "type", "dynamic", "wake_on_lan", "nf_conntrack_hashsize", "features",
                     "coalesce", "pause", "ring", "channels", "txqueuelen", "mtu"}
TUNED_NET_PARAMS = {
    "ring": {"rx", "rx-mini", "rx-jumbo", "tx"},
    "channels": {"rx", "tx", "other", "combined"},
    "pause": {"autoneg", "rx", "tx"},
    "coalesce": {"adaptive-rx", "adaptive-tx", "rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq",
                 "tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq", "stats-block-usecs",
                 "pkt-rate-low", "rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low",
                 "pkt-rate-high", "rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high",
                 "sample-interval"},
}


def tuned_parse(path: Path) -> dict[str, dict[str, str]]:
    """tuned.conf read as TuneD's profile loader reads it (tuned/profiles/loader.py)."""
    parser = configparser.ConfigParser(delimiters=("="), inline_comment_prefixes=("#"), strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    with path.open() as f:
        parser.read_file(f, str(path))
    return {s: {o: parser.get(s, o, raw=True) for o in parser.options(s)} for s in parser.sections()}


def tuned_pairs(value: str) -> dict[str, str]:
    """A ring/coalesce/... value split the way the net plugin splits it (_parse_config_parameters)."""
    words = re.sub(r"(:\s*)|(\s+)|(\s*;\s*)|(\s*,\s*)", " ", value).split()
    assert len(words) % 2 == 0, value
    return dict(zip(words[::2], words[1::2], strict=True))


def sysctl_parse(text: str) -> dict[str, str]:
    """A sysctl.d file as sysctl(8) reads it: '#'/';' comments, 'key = value'."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        assert sep, line
        out[key.strip()] = " ".join(value.split())
    return out


def expected_settings(src: ExportSource, family: Family) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in src.items():
        if item.family is family:
            v = item.value
            out[item.target] = (" ".join(map(str, v)) if isinstance(v, tuple) else
                                ("on" if v else "off") if isinstance(v, bool) and family is not Family.SYSCTL
                                else str(int(v)) if isinstance(v, bool) else str(v))
    return out


@pytest.fixture(scope="module")
def best(jobs: Jobs) -> ExportSource:
    return load_source(jobs.engine, jobs.ga)


def test_export_source_is_the_best_trial(jobs: Jobs, best: ExportSource) -> None:
    info = job_report(jobs.engine, jobs.ga)
    assert best.is_best and best.trial == info["best"]["number"]
    assert best.config == info["best_config"]
    assert best.gain["change_pct"] > 0 and best.gain["better"] is True
    other = load_source(jobs.engine, jobs.ga, trial=0)
    assert not other.is_best and other.trial == 0


def test_tuned_profile_parses_as_tuned_reads_it(best: ExportSource, tmp_path: Path) -> None:
    written = write_export(best, "tuned", tmp_path / "nictune-best")
    conf = tuned_parse(written.files["tuned.conf"])
    assert f"job {best.job_id}" in conf["main"]["summary"] and "simulated" in conf["main"]["summary"]
    assert conf["sysctl"] == expected_settings(best, Family.SYSCTL)
    net = conf["net"]
    assert set(net) <= TUNED_NET_OPTIONS
    # Never every NIC, nor whichever is eth0: the simulator has no data interface name.
    assert net["devices"] == "CHANGE-ME"
    ip = expected_settings(best, Family.IP_LINK)
    assert net["mtu"] == ip["mtu"] and net["txqueuelen"] == ip["txqueuelen"]
    assert tuned_pairs(net["ring"]) == expected_settings(best, Family.ETHTOOL_RINGS)
    assert tuned_pairs(net["pause"]) == expected_settings(best, Family.ETHTOOL_PAUSE)
    assert tuned_pairs(net["coalesce"]) == expected_settings(best, Family.ETHTOOL_COALESCE)
    for option, allowed in TUNED_NET_PARAMS.items():
        if option in net:
            assert set(tuned_pairs(net[option])) <= allowed, option
    assert conf["cpu"] == {"governor": str(best.config["governor"])}
    text = written.files["tuned.conf"].read_text()
    assert "measured gain" in text and "SIMULATED" in text
    assert "$" not in text


def test_sysctl_drop_in_parses_back(best: ExportSource, tmp_path: Path) -> None:
    written = write_export(best, "sysctl", tmp_path / "90-nictune.conf")
    text = written.files["sysctl drop-in"].read_text()
    assert sysctl_parse(text) == expected_settings(best, Family.SYSCTL)
    assert sysctl_parse(text)["net.ipv4.tcp_rmem"] == "4096 87380 16777216"
    assert text.startswith("# nictune export of job")


def _single_field_source(snapshot: dict[str, Any] | None) -> ExportSource:
    space = space_from_dict({"name": "one-field", "knobs": {
        "tcp_rmem_max": {"type": "choice", "choices": [6291456, 16777216], "default": 6291456,
                         "target": "net.ipv4.tcp_rmem[2]"}}})
    return _source(space, {"tcp_rmem_max": 16777216}, snapshot=snapshot)


def test_sysctl_field_knob_takes_the_other_fields_from_the_snapshot_or_linux() -> None:
    snap = {"entries": [{"side": "receiver", "family": "sysctl", "device": "eth1",
                         "snapshot": {"net.ipv4.tcp_rmem": "4096 87380 6291456"}}]}
    assert sysctl_parse(render_sysctl(_single_field_source(snap))) == {"net.ipv4.tcp_rmem": "4096 87380 16777216"}
    text = render_sysctl(_single_field_source(None))
    assert sysctl_parse(text) == {"net.ipv4.tcp_rmem": "4096 131072 16777216"}
    assert "Linux's defaults" in text


def test_json_export(best: ExportSource, jobs: Jobs) -> None:
    doc = json.loads(render_json(best))
    info = job_report(jobs.engine, jobs.ga)
    assert doc["job_id"] == jobs.ga and doc["trial"] == info["best"]["number"] and doc["best"] is True
    assert doc["configuration"] == info["best_config"]
    assert doc["testbed"] == {"name": "sim:benson-40g", "simulated": True, "note": doc["testbed"]["note"]}
    assert doc["objective"]["name"] == "throughput" and doc["objective"]["unit"] == "Gbit/s"
    for name, mean in info["best"]["metrics"].items():
        assert doc["metrics"][name]["mean"] == pytest.approx(mean)
        assert doc["metrics"][name]["min"] <= mean <= doc["metrics"][name]["max"]


@pytest.mark.system
def test_scripts_are_valid_posix_shell(best: ExportSource, tmp_path: Path) -> None:
    written = write_export(best, "script", tmp_path / "tune-apply.sh")
    apply, back = written.files["apply script"], written.files["rollback script"]
    assert back.name == "tune-rollback.sh"
    for path in (apply, back):
        assert path.stat().st_mode & 0o111
        subprocess.run(["sh", "-n", str(path)], check=True)
    text = apply.read_text()
    assert "e.g. DEV=IFACE sh" in text and "eth0" not in text  # a simulator has no data interface name
    for path in (apply, back):  # no default interface: without DEV nothing runs
        res = subprocess.run(["sh", str(path)], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, capture_output=True,
                             text=True)
        assert res.returncode == 2 and "set DEV to the interface to tune" in res.stderr
        # Not as root: nothing runs either (setpriv is util-linux's; the script on stdin, since
        # the test's directory is root's).
        res = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "sh", "-s"],
                             input=path.read_text(), env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEV": "lo"},
                             capture_output=True, text=True)
        assert res.returncode == 2 and "as root" in res.stderr, res.stderr
    assert "link_set \"$DEV\" mtu '9000'" in text
    rollback = back.read_text()
    assert "link_set \"$DEV\" mtu '1500'" in rollback
    assert "search space's default of knob mtu" in rollback  # the simulator records no host values


# --------------------------------------------------------------- hostile input

def _source(space: Any, config: dict[str, Any], *, snapshot: dict[str, Any] | None = None,
            testbed: str = "pair.yaml", device: str | None = None) -> ExportSource:
    return ExportSource(
        job_id=1, trial=0, is_best=True, testbed=testbed, simulated=False, workload="tcp",
        objectives=["throughput"], constraints=[], engine="ga", space=space, config=config,
        config_hash="0" * 64, metrics={"throughput_gbps": 1.0}, gain={"text": "gain"},
        snapshot=snapshot, device=device)


EVIL = ["$(id)", "1500; reboot", "`reboot`", "1500\nreboot", "x' ; reboot; '", "${IFS}reboot", "a b", ""]


def _evil_space(knob: dict[str, Any]) -> Any:
    return space_from_dict({"name": "evil", "knobs": {"k": knob}})


@pytest.mark.parametrize("value", EVIL)
def test_a_crafted_value_cannot_reach_a_script_or_profile(value: str, tmp_path: Path) -> None:
    space = _evil_space({"type": "choice", "choices": ["1500", value], "default": "1500",
                         "family": "ip_link", "target": "mtu"})
    src = _source(space, {"k": value})
    for render in (render_scripts, render_tuned):
        with pytest.raises(InvalidInputError, match="cannot be exported"):
            render(src)
    with pytest.raises(InvalidInputError):
        write_export(src, "script", tmp_path / "x.sh")
    assert not list(tmp_path.iterdir())  # refused before anything was written


@pytest.mark.parametrize("knob", [
    {"type": "choice", "choices": ["fq", "$(id)"], "default": "fq", "family": "sysctl",
     "target": "net.core.default_qdisc"},
    {"type": "bool", "default": True, "family": "ethtool_features", "target": "gro;reboot"},
    {"type": "bool", "default": True, "family": "ip_link", "target": "mtu$(id)"},
    {"type": "int", "low": 1, "high": 9, "default": 1, "family": "ethtool_coalesce", "target": "rx-usecs",
     "device": "eth0;id"},
    {"type": "choice", "choices": ["a", "b"], "default": "a", "family": "ethtool_coalesce",
     "settings": {"a": {"rx-usecs": "$(reboot)"}, "b": {"rx-usecs": 4}}},
    {"type": "choice", "choices": ["a", "b"], "default": "a", "family": "sysfs",
     "settings": {"a": {"../../../etc/passwd": 1}, "b": {"gro_flush_timeout": 4}}},
    {"type": "choice", "choices": ["fq", "fq;reboot"], "default": "fq", "family": "qdisc", "target": "root"},
])
def test_crafted_targets_devices_and_values_are_refused(knob: dict[str, Any]) -> None:
    space = _evil_space(knob)
    value = knob.get("choices", [knob["default"]])[-1] if knob["type"] == "choice" and "settings" not in knob \
        else knob["default"]
    src = _source(space, {"k": value})
    refused = 0
    for render in (render_scripts, render_tuned, render_sysctl):
        try:
            out = render(src)
        except InvalidInputError:
            refused += 1
            continue
        texts = [out.apply, out.rollback] if hasattr(out, "apply") else [out]
        for text in texts:  # what a renderer accepted (it does not write that family) stays in comments
            for line in text.splitlines():
                if any(bad in line for bad in ("$(id)", "reboot", "../", ";id")):
                    assert line.startswith("#"), line
    assert refused >= 1


def test_a_crafted_snapshot_value_cannot_reach_the_rollback() -> None:
    space = _evil_space({"type": "choice", "choices": [1500, 9000], "default": 1500,
                         "family": "ip_link", "target": "mtu"})
    snap = {"entries": [{"side": "receiver", "family": "ip_link", "device": "eth0",
                         "snapshot": {"mtu": "1500$(reboot)"}}]}
    with pytest.raises(InvalidInputError):
        render_scripts(_source(space, {"k": 9000}, snapshot=snap))
    with pytest.raises(InvalidInputError):
        render_scripts(_source(space, {"k": 9000}, device="eth0;reboot"))


def test_free_text_only_reaches_comments() -> None:
    space = _evil_space({"type": "choice", "choices": [1500, 9000], "default": 1500,
                         "family": "ip_link", "target": "mtu"})
    src = _source(space, {"k": 9000}, testbed="pair\nreboot\r\n$(id)")
    scripts = render_scripts(src)
    for text in (scripts.apply, scripts.rollback, render_tuned(src), render_sysctl(src)):
        for line in text.splitlines():
            if line.startswith("summary="):  # TuneD shows it, never runs it; one line, no $ or #
                assert "$" not in line and "#" not in line
            elif "reboot" in line or "$(id)" in line:
                assert line.startswith("#"), line


# --------------------------------------------------------------- only sysctls

ONLY_SYSCTL = {"name": "only-sysctl", "knobs": {
    "rmem_max": {"type": "choice", "choices": [212992, 4194304, 67108864], "default": 212992,
                 "target": "net.core.rmem_max"},
    "netdev_max_backlog": {"type": "choice", "choices": [1000, 250000], "default": 1000,
                           "target": "net.core.netdev_max_backlog"},
}}


@pytest.mark.system
def test_a_sysctl_only_space_gives_an_empty_but_valid_script(jobs: Jobs, tmp_path: Path) -> None:
    job = create_job(jobs.engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g",
                                          space=ONLY_SYSCTL, engine="random", budget=6, seed=1))
    JobRunner(jobs.engine).run(job)
    src = load_source(jobs.engine, job)
    written = write_export(src, "script", tmp_path / "s.sh")
    for path in written.files.values():
        subprocess.run(["sh", "-n", str(path)], check=True)
        res = subprocess.run(["sh", str(path)], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                                   "DEV": "nonexistent0"}, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert "nothing to" in res.stdout
        body = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
        assert not [line for line in body if re.match(r"(link|ethtool|sysfs|qdisc|governor)_set ", line)]
    apply = written.files["apply script"].read_text()
    assert "# sysctls are not set here" in apply and "net.core.rmem_max" in apply
    assert sysctl_parse(render_sysctl(src)) == expected_settings(src, Family.SYSCTL)


def test_a_qdisc_rolled_back_to_the_space_default_is_the_kernels_own_root() -> None:
    """Without a recorded value the rollback resets the root qdisc (mq on a multi-queue NIC)
    rather than replacing it with the space's single root fq_codel."""
    space = load_space("linux-nic")
    config = space.configuration({"qdisc": "fq", "mtu": 9000}).as_dict()
    src = ExportSource(job_id=1, trial=2, is_best=True, testbed="sim:cai-100g", simulated=True, workload="tcp",
                       objectives=["throughput"], constraints=[], engine="bayes", space=space, config=config,
                       config_hash="a" * 64, metrics={"throughput_gbps": 40.0}, gain={"text": "+1%"},
                       snapshot=None, device=None)
    scripts = render_scripts(src)
    assert "qdisc_set \"$DEV\" 'fq'" in scripts.apply
    assert "qdisc_reset \"$DEV\"" in scripts.rollback and "qdisc_set \"$DEV\" 'fq_codel'" not in scripts.rollback
    assert "need not be this host's" in scripts.rollback


def test_a_configuration_no_better_than_the_default_is_exported_with_a_warning() -> None:
    space = load_space("linux-nic")
    config = space.configuration({"mtu": 9000}).as_dict()
    src = ExportSource(job_id=3, trial=5, is_best=True, testbed="sim:cai-100g", simulated=True, workload="tcp",
                       objectives=["throughput"], constraints=[], engine="bayes", space=space, config=config,
                       config_hash="b" * 64, metrics={"throughput_gbps": 40.0},
                       gain={"text": "throughput -0.3%", "better": False, "change_pct": -0.3, "label": "throughput"},
                       snapshot=None, device=None)
    warning = "WARNING: this configuration measured no better than the default configuration"
    assert warning in render_scripts(src).apply and warning in render_sysctl(src)
    tuned = render_tuned(src)
    assert warning in tuned and "summary=nictune job 3 trial 5: throughput -0.3 percent vs default (no better)" in tuned
    better = ExportSource(**{**src.__dict__, "gain": {"text": "+5%", "better": True, "change_pct": 5.0}})
    assert warning not in render_scripts(better).apply


def test_an_export_of_a_job_that_did_not_finish_says_so(jobs: Jobs, tmp_path: Path) -> None:
    """A cancelled or interrupted job's best is the best of a search that stopped early; its
    exports used to read like a finished job's."""
    from nictune import db

    job = create_job(jobs.engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=4, seed=9))
    JobRunner(jobs.engine).run(job)
    with db.session_scope(jobs.engine) as s:
        db.set_job_state(s, db.get_job(s, job), "cancelled")
    src = load_source(jobs.engine, job)
    warning = f"WARNING: job {job} is cancelled: its search did not finish"
    assert warning in render_scripts(src).apply and warning in render_sysctl(src) and warning in render_tuned(src)
    assert json.loads(render_json(src))["job_state"] == "cancelled"
    done = load_source(jobs.engine, jobs.ga)
    assert "did not finish" not in render_sysctl(done) and json.loads(render_json(done))["job_state"] == "completed"


@pytest.mark.system
def test_what_a_job_said_about_its_model_reaches_history_report_and_exports(jobs: Jobs, tmp_path: Path) -> None:
    """sim:benson-40g's model has no term for any knob of the nurika-pfring space: whatever the
    job recommends is noise, and every account of the job says so, not only its first run."""
    job = create_job(jobs.engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", space="nurika-pfring",
                                          engine="random", budget=4, seed=2))
    JobRunner(jobs.engine).run(job)
    (notice,) = job_report(jobs.engine, job)["notices"]
    assert notice.startswith("sim:benson-40g is a model with no term for nic1_mode, ")
    src = load_source(jobs.engine, job)
    assert f"# NOTE: {notice}" in render_sysctl(src)
    assert json.loads(render_json(src))["notices"] == [notice]
    report = build_report(jobs.engine, job, tmp_path / "report")
    assert notice in report.notes and html.escape(notice) in report.html.read_text()
    shown = subprocess.run([sys.executable, "-m", "nictune", "history", "show", str(job), "--db", jobs.url],
                           capture_output=True, text=True, timeout=120, env=os.environ | {"COLUMNS": "300"})
    assert shown.returncode == 0 and f"note: {notice}" in shown.stdout, shown


# ------------------------------------------------------------- deployable without edits
def _tuned_loader_path() -> Path:
    """TuneD's own Python package, unpacked (not installed) from its Debian package by
    scripts/setup.sh into .cache/tuned."""
    root = Path(__file__).resolve().parents[2] / ".cache" / "tuned"
    lib = root / "usr" / "lib" / "python3" / "dist-packages"
    if not (lib / "tuned" / "profiles" / "loader.py").is_file():
        pytest.fail(f"TuneD's profile loader is not unpacked in {root}: run bash scripts/setup.sh")
    return root


_LOAD_WITH_TUNED = """
import json, sys
import tuned.profiles as p, tuned.profiles.variables as v, tuned.utils.global_config as gc
from tuned.profiles.locator import Locator
stock, mine, name, main_conf = sys.argv[1:5]
loader = p.Loader(Locator([stock, mine]), p.Factory(), p.Merger(), gc.GlobalConfig(main_conf), v.Variables())
prof = loader.load([name])
print(json.dumps({unit: {"devices": u.devices, "options": dict(u.options)} for unit, u in prof.units.items()}))
"""


@pytest.mark.system
def test_a_tuned_export_with_device_and_include_loads_in_tuneds_own_parser(jobs: Jobs, tmp_path: Path) -> None:
    """The profile, exported with --device and --include, goes to /etc/tuned as it is: TuneD's
    Loader (from its Debian package) merges network-throughput under it, and our settings win."""
    root = _tuned_loader_path()
    src = load_source(jobs.engine, jobs.ga, device="ens1f0", include=["network-throughput"])
    profiles = tmp_path / "etc-tuned"
    written = write_export(src, "tuned", profiles / "nictune-best")
    text = written.files["tuned.conf"].read_text()
    assert "CHANGE-ME" not in text and "include=network-throughput" in text
    run = subprocess.run(
        [sys.executable, "-c", _LOAD_WITH_TUNED, str(root / "usr" / "lib" / "tuned"), str(profiles), "nictune-best",
         str(root / "etc" / "tuned" / "tuned-main.conf")],  # the package's own, not the host's /etc
        capture_output=True, text=True, timeout=60,
        env=os.environ | {"PYTHONPATH": str(root / "usr" / "lib" / "python3" / "dist-packages")})
    assert run.returncode == 0, run.stderr
    units = json.loads(run.stdout)
    assert units["net"]["devices"] == "ens1f0"
    mine = expected_settings(src, Family.SYSCTL)
    sysctl = units["sysctl"]["options"]
    assert {k: sysctl[k] for k in mine} == mine  # ours, over the included profile's
    assert "vm.dirty_ratio" in sysctl  # from network-throughput (via throughput-performance)
    assert units["cpu"]["options"]["governor"] == str(src.config["governor"])
    ip = expected_settings(src, Family.IP_LINK)
    assert units["net"]["options"]["mtu"] == ip["mtu"]


def test_device_and_include_are_checked_before_anything_is_written(jobs: Jobs, tmp_path: Path) -> None:
    for bad in ("eth0; reboot", "a" * 16, "../x"):
        with pytest.raises(InvalidInputError) as err:
            load_source(jobs.engine, jobs.ga, device=bad)
        assert err.value.field == "device"
    for names in (["network throughput"], ["x$y"], ["a", "b", "c", "d"]):
        with pytest.raises(InvalidInputError) as err:
            load_source(jobs.engine, jobs.ga, include=names)
        assert err.value.field == "include"


def test_existing_files_are_kept_unless_forced_and_links_are_never_followed(jobs: Jobs, tmp_path: Path) -> None:
    src = load_source(jobs.engine, jobs.ga)
    target = tmp_path / "precious.conf"
    target.write_text("keep me\n")
    target.chmod(0o600)
    link = tmp_path / "90-nictune.conf"
    link.symlink_to(target)
    for fmt, path in (("sysctl", link), ("json", target)):
        with pytest.raises(InvalidInputError) as err:
            write_export(src, fmt, path)
        assert err.value.field == "out" and "--force" in str(err.value.allowed)
    assert target.read_text() == "keep me\n"
    written = write_export(src, "sysctl", link, force=True)  # replaces the link, not its target
    assert not link.is_symlink() and "net." in link.read_text()
    assert target.read_text() == "keep me\n" and (target.stat().st_mode & 0o777) == 0o600
    assert written.files["sysctl drop-in"] == link
    assert sorted(p.name for p in tmp_path.iterdir()) == ["90-nictune.conf", "precious.conf"]  # no temp left
    profile = tmp_path / "prof"
    write_export(src, "tuned", profile)
    with pytest.raises(InvalidInputError):
        write_export(src, "tuned", profile)
    write_export(src, "tuned", profile, force=True)


def test_per_socket_buffer_defaults_are_exported_with_the_memory_they_commit() -> None:
    space = load_space("linux-nic")
    big = space.configuration({"rmem_max": 67108864, "rmem_default": 16777216}).as_dict()
    src = ExportSource(job_id=3, trial=5, is_best=True, testbed="sim:cai-100g", simulated=True, workload="udp",
                       objectives=["throughput"], constraints=[], engine="bayes", space=space, config=big,
                       config_hash="b" * 64, metrics={"throughput_gbps": 40.0},
                       gain={"text": "+5%", "better": True, "change_pct": 5.0, "label": "throughput"})
    (warning,) = src.warnings()
    assert warning.startswith("net.core.rmem_default = 16 MiB (knob rmem_default) is the receive buffer of every "
                              "socket on the host: 1,000 sockets may hold 15.6 GiB")
    for text in (render_tuned(src), render_sysctl(src), render_scripts(src).apply):
        assert f"WARNING: {warning}" in text
    # A cap (rmem_max, tcp_rmem's maximum) is not what every socket holds: no warning.
    capped = ExportSource(**{**src.__dict__, "config": space.configuration({"rmem_max": 67108864}).as_dict()})
    assert capped.warnings() == []


@pytest.mark.system
def test_export_cli_device_include_force_and_the_memory_warning(jobs: Jobs, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nictune", "export", str(jobs.ga), "--db", jobs.url, *args],
                              capture_output=True, text=True, timeout=120, env=os.environ | {"COLUMNS": "300"},
                              cwd=tmp_path)

    ok = cli("--format", "tuned", "--device", "ens1f0", "--include", "network-throughput", "--out", "prof")
    assert ok.returncode == 0, ok.stderr
    conf = tuned_parse(tmp_path / "prof" / "tuned.conf")
    assert conf["main"]["include"] == "network-throughput" and conf["net"]["devices"] == "ens1f0"
    again = cli("--format", "tuned", "--out", "prof")
    assert again.returncode == 2 and "prof/tuned.conf exists" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    assert cli("--format", "tuned", "--out", "prof", "--force").returncode == 0
    wrong = cli("--format", "sysctl", "--include", "network-throughput")
    assert wrong.returncode == 2 and "--include is for --format tuned" in wrong.stderr
    # The job's best sets a per-socket default of 4 MiB or more: said on the terminal too.
    warnings = load_source(jobs.engine, jobs.ga).warnings()
    assert any(w.startswith("net.core.rmem_default = 64 MiB") and "62.5 GiB" in w for w in warnings)
    for warning in warnings:
        assert f"warning: {warning}" in " ".join(ok.stderr.split())
