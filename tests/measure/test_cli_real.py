"""The real testbed as a user drives it: `nictune measure/optimize --testbed veth:NAME`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nictune.measure.hosts import LocalHost
from nictune.measure.testbeds.veth import VethPair
from nictune.measure.trial.journal import Journal
from nictune.measure.trial.locks import exclusive
from tests.measure.support import unique_name, wait_no_processes
from tests.processes import interrupt

pytestmark = [pytest.mark.netns, pytest.mark.slow]

RMEM_MAX = "/proc/sys/net/core/rmem_max"
TCP_RMEM = "/proc/sys/net/ipv4/tcp_rmem"


def nictune(*args: str, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nictune", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[VethPair]:
    p = VethPair(unique_name())
    p.up()
    try:
        yield p
    finally:
        if p.exists():
            p.down()


@pytest.fixture
def env(tmp_path: Path, state_dir: Path) -> dict[str, str]:
    return {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path}/h.db",
            "NICTUNE_STATE_DIR": str(state_dir.parent)}


def values(p: VethPair) -> dict[str, str]:
    rx = p.receiver()
    return {
        "mtu": rx.read_file(f"/sys/class/net/{p.rx}/mtu").strip(),
        "rmem_max": LocalHost().read_file(RMEM_MAX).strip(),
        "tcp_rmem": " ".join(rx.read_file(TCP_RMEM).split()),
    }


def wait_for_stderr(proc: subprocess.Popen[str], text: str, timeout: float = 60.0) -> None:
    """Read ``proc``'s stderr until a line holds ``text`` (the rest stays for communicate)."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if text in line:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    assert any(text in line for line in lines), f"no {text!r} on stderr within {timeout} s: {lines}"


def wait_for_iperf3(proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the run ended early: {proc.stderr.read() if proc.stderr else ''}")
        out = subprocess.run(["pgrep", "-x", "iperf3"], capture_output=True, text=True).stdout
        if out.strip():
            time.sleep(0.5)
            return
        time.sleep(0.1)
    pytest.fail("no benchmark started")


def test_next_start_restores_what_a_killed_worker_left(pair: VethPair, env: dict[str, str]) -> None:
    """SIGKILL in the middle of a benchmark after MTU, a global and a per-namespace sysctl
    were applied; the next `nictune measure` on that testbed restores all three first and
    says so (asserted on the real values)."""
    before = values(pair)
    changed = ["--set", "mtu=9000", "--set", "rmem_max=16777216", "--set", "tcp_rmem_max=16777216"]
    proc = nictune("measure", "--testbed", f"veth:{pair.name}", "--workload", "tcp", "--repeats", "1",
                   "--duration", "30", *changed, env=env)
    try:
        wait_for_iperf3(proc)
        during = values(pair)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert during == {"mtu": "9000", "rmem_max": "16777216", "tcp_rmem": before["tcp_rmem"].rsplit(" ", 1)[0]
                      + " 16777216"}
    assert not wait_no_processes(5)
    assert values(pair) == during  # the crash left them behind
    nxt = nictune("measure", "--testbed", f"veth:{pair.name}", "--workload", "tcp", "--repeats", "1",
                  "--duration", "1", "--json", env=env)
    _, err = nxt.communicate(timeout=120)
    assert nxt.returncode == 0, err
    assert f"restored settings a crashed run left on veth:{pair.name}" in err.replace("\n", " ")
    assert values(pair) == before


def test_two_runs_at_once_on_one_testbed_take_turns_and_restore_everything(
    pair: VethPair, env: dict[str, str]
) -> None:
    """Two `nictune measure` processes started together on one veth testbed, changing the same
    global and per-namespace settings to different values: they take turns trial by trial
    (without the testbed lock the second snapshots the first's values and restores those)."""
    before = values(pair)
    runs = [nictune("measure", "--testbed", f"veth:{pair.name}", "--workload", "tcp", "--repeats", "1",
                    "--duration", "4", "--json", "--set", f"mtu={mtu}", "--set", f"rmem_max={rmem}",
                    "--set", f"tcp_rmem_max={rmem}", env=env)
            for mtu, rmem in ((9000, 16777216), (4000, 67108864))]
    outs = [run.communicate(timeout=180) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outs]
    assert all(json.loads(out)["metrics"]["throughput_gbps"] > 0 for out, _ in outs)
    # One found the testbed busy and waited for the other's trial (restore included).
    waited = [err for _, err in outs if f"waiting for another nictune trial on veth:{pair.name}" in err]
    assert len(waited) == 1, [err for _, err in outs]
    assert values(pair) == before
    assert not wait_no_processes(5)


def test_sigterm_stops_an_optimize_cleanly(env: dict[str, str]) -> None:
    """SIGTERM mid-trial: the hosts are restored, the pair the run created is removed, the job
    ends interrupted and can be resumed."""
    name = unique_name()
    rmem_before = LocalHost().read_file(RMEM_MAX).strip()
    proc = nictune("optimize", "--testbed", f"veth:{name}", "--workload", "udp-jumbo", "--objective",
                   "throughput", "--budget", "5", "--repeats", "1", "--duration", "20", "--seed", "1",
                   "--engine", "ga", "--param", "population=4", "--param", "local=1", "--param", "elite=1",
                   env=env)
    _, err = interrupt(proc, signal.SIGTERM, lambda: wait_for_iperf3(proc))
    assert proc.returncode == 130
    assert "nictune optimize --resume 1" in err.replace("\n", " ")
    assert not VethPair(name).exists()
    assert LocalHost().read_file(RMEM_MAX).strip() == rmem_before
    hist = subprocess.run([sys.executable, "-m", "nictune", "history", "--json"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert json.loads(hist.stdout)[0]["state"] == "interrupted"


def test_ctrl_c_stops_a_measure_and_says_so(pair: VethPair, env: dict[str, str]) -> None:
    """SIGINT mid-benchmark: the settings are back and the user is told (it exited 130 with
    nothing on stdout or stderr)."""
    before = values(pair)
    proc = nictune("measure", "--testbed", f"veth:{pair.name}", "--workload", "tcp", "--repeats", "1",
                   "--duration", "20", "--set", "mtu=9000", "--set", "rmem_max=16777216", env=env)
    out, err = interrupt(proc, signal.SIGINT, lambda: wait_for_iperf3(proc))
    assert proc.returncode == 130, err
    assert "interrupted: nothing was measured" in err and "Traceback" not in err and "metrics" not in out
    assert values(pair) == before
    assert not wait_no_processes(5)


def test_short_optimize_on_veth_completes_and_finds_a_better_configuration(env: dict[str, str]) -> None:
    name = unique_name()
    res = subprocess.run(
        [sys.executable, "-m", "nictune", "optimize", "--testbed", f"veth:{name}", "--workload", "udp-jumbo",
         "--objective", "throughput", "--engine", "ofat", "--budget", "4", "--repeats", "1", "--duration", "1",
         "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["simulated"] is False and out["trials"] == 4 and out["measured"] == 4
    assert out["best"]["metrics"]["throughput_gbps"] > 0
    # A veth device has no IRQs: no interrupt figure is reported, rather than a measured 0.
    assert "interrupts_per_s" not in out["best"]["metrics"] and "interrupts_per_gb" not in out["best"]["metrics"]
    assert not VethPair(name).exists()
    # ... and the history's tables have no interrupt column for it (nothing measured one), rather
    # than a column of zeros.
    for args in (["show", str(out["job_id"])], ["config", out["best"]["config_hash"]]):
        shown = subprocess.run([sys.executable, "-m", "nictune", "history", *args], env=env | {"COLUMNS": "200"},
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown
        headers = " ".join(line for line in shown.stdout.splitlines() if line.startswith("┃"))
        assert "throughput" in headers and "interrupts" not in headers, shown.stdout


def test_a_testbed_on_which_nothing_can_be_measured_stops_the_job_after_five_trials(
        pair: VethPair, env: dict[str, str]) -> None:
    # Another program holds iperf3's port in the receiver: every run would connect to it and
    # time out (13 s each with --duration 2) had the trial not checked the port first.
    squatter = subprocess.Popen(["ip", "netns", "exec", f"{pair.name}-rx", sys.executable, "-c",
                                 "import socket, time\ns = socket.socket()\ns.bind(('0.0.0.0', 5201))\n"
                                 "s.listen()\nprint('listening', flush=True)\ntime.sleep(300)\n"],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert squatter.stdout is not None and squatter.stdout.readline() == "listening\n"
        before = values(pair)
        res = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--testbed", f"veth:{pair.name}",
                              "--objective", "throughput", "--budget", "20", "--duration", "2"],
                             env=env | {"COLUMNS": "200"}, capture_output=True, text=True, timeout=300)
    finally:
        squatter.kill()
        squatter.wait()
    assert res.returncode == 1, res
    assert "job 1 failed: 5 trials, 0 measured, 0 from the cache, 5 failed" in res.stdout
    error = " ".join(res.stderr.split())
    assert f"error: job 1 failed: stopped after 5 trials failed and none was measured: trial failed, " \
           f"settings restored: port 5201 on netns:{pair.name}-rx is taken by another program" in error, error
    assert error.endswith("resume this one (nictune optimize --resume 1)") and "Traceback" not in res.stderr
    assert "other error" not in error, "all five failed on the port, none by timing out"
    assert values(pair) == before


def test_spaces_probe_writes_a_space_the_pair_supports_from_its_current_values(
        pair: VethPair, env: dict[str, str], tmp_path: Path) -> None:
    from nictune.search_spaces import load_space

    fitted = tmp_path / "fitted.yaml"
    res = subprocess.run([sys.executable, "-m", "nictune", "spaces", "probe", "--testbed", f"veth:{pair.name}",
                          "--space", "linux-nic", "--out", str(fitted)], env=env | {"COLUMNS": "200"},
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"use it with --space {fitted}" in " ".join(res.stdout.split())
    left_out = {"rx_mode", "poll_usecs", "watermark_frames", "busy_poll_usecs", "rx_ring", "tx_ring", "channels",
                "pause", "irq_affinity"}
    space = load_space(str(fitted))
    assert space.name == "linux-nic-probed" and set(space.knobs) == set(load_space("linux-nic").knobs) - left_out
    assert space.testbed == f"veth:{pair.name}"  # not linux-nic's simulated pair
    assert all(f"# left out {name}: " in fitted.read_text() for name in left_out)
    # Its default configuration is the pair as it is.
    rx = pair.receiver()
    assert space.knobs["mtu"].default == int(rx.read_file(f"/sys/class/net/{pair.rx}/mtu"))
    assert space.knobs["txqueuelen"].default == int(rx.read_file(f"/sys/class/net/{pair.rx}/tx_queue_len"))
    assert space.knobs["rmem_max"].default == int(rx.read_file(RMEM_MAX))
    # A veth end has no qdisc (noqueue), a value linux-nic's choices lack: the fitted space
    # adds it rather than keep fq_codel, a kind this machine's kernel does not have.
    assert space.knobs["qdisc"].default == "noqueue" and "noqueue" in (space.knobs["qdisc"].values() or [])
    # A job takes it, where linux-nic itself is refused on this pair.
    job = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--testbed", f"veth:{pair.name}", "--space",
                          str(fitted), "--objective", "throughput", "--budget", "1", "--repeats", "1", "--duration",
                          "1", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert job.returncode == 0, job.stderr
    assert json.loads(job.stdout)["measured"] == 1


EVIL_SPACE = {"name": "evil", "knobs": {"probe": {"type": "choice", "choices": [1, 2], "default": 1,
                                                  "target": "net.core.$(id)"}}}


@pytest.mark.parametrize(("goal", "start", "allowed"), [
    (["--objective", "interrupts"], "error: veth:{pair} cannot measure interrupts_per_",
     "allowed: throughput, packet-rate, cpu, loss"),
    (["--objective", "throughput", "--constraint", "interrupts_per_s<1000"],
     "error: veth:{pair} cannot measure interrupts_per_", "allowed: constraints on throughput_gbps"),
    # A space whose knobs a real host cannot take: every trial would have failed.
    (["--objective", "throughput", "--space", "nurika-pfring"],
     "error: space 'nurika-pfring': veth:{pair} cannot set nic1_mode, nic1_poll_ms", "only a simulated testbed can"),
    # A space with knobs this pair does not support (veth has no coalescing, rings, IRQs):
    # every trial would have failed applying them.
    (["--objective", "throughput", "--space", "linux-nic"],
     "error: space 'linux-nic': veth:{pair} cannot set rx_mode, poll_usecs, watermark_frames, busy_poll_usecs, "
     "rx_ring, tx_ring, channels, pause, irq_affinity (rx_mode: adaptive-rx: sender: ",
     "allowed: a space its hosts support: 'veth', or the one 'nictune spaces probe --testbed veth:{pair} "
     "--space linux-nic --out FITTED.yaml' writes"),
    (["--objective", "throughput", "--space", "{evil}"],
     "error: space '{evil}': knob 'probe' = 1: sysctl key: value 'net.core.$(id)' is not allowed",
     r"allowed: a key matching ^net\.(core|ipv4|ipv6)\."),
])
def test_a_goal_or_space_a_veth_pair_cannot_measure_is_refused_before_anything_is_stored(
        pair: VethPair, env: dict[str, str], tmp_path: Path, goal: list[str], start: str, allowed: str) -> None:
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(EVIL_SPACE))
    goal = [arg.replace("{evil}", str(evil)) for arg in goal]
    res = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--testbed", f"veth:{pair.name}", *goal,
                          "--budget", "2"], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res
    message = " ".join(res.stderr.split())
    assert message.startswith(start.replace("{pair}", pair.name).replace("{evil}", str(evil))), message
    assert allowed.replace("{pair}", pair.name) in message, message
    assert "Traceback" not in res.stderr and res.stdout == ""
    listed = subprocess.run([sys.executable, "-m", "nictune", "history", "--json"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed


def test_apply_keeps_a_configuration_and_restore_brings_the_old_values_back(
    pair: VethPair, env: dict[str, str], state_dir: Path
) -> None:
    before = values(pair)
    run = subprocess.run(
        [sys.executable, "-m", "nictune", "optimize", "--testbed", f"veth:{pair.name}", "--workload", "tcp",
         "--objective", "throughput", "--engine", "random", "--budget", "2", "--repeats", "1", "--duration", "1",
         "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    best = out["best"]["config"]
    # A trial running on the testbed holds its lock: apply and restore wait for it instead
    # of snapshotting (or overwriting) the trial's values.
    testbed = f"veth:{pair.name}"
    waiting = f"waiting for another nictune trial on {testbed}"
    try:
        with exclusive(Journal(testbed, state_dir).lock_path, "a trial in the test"):
            applying = nictune("apply", str(out["job_id"]), "--testbed", testbed, env=env)
            wait_for_stderr(applying, waiting)
            time.sleep(0.5)
            assert applying.poll() is None and values(pair) == before, "apply did not wait for the trial"
        _, err = applying.communicate(timeout=120)
        assert applying.returncode == 0, err
        kept = values(pair)
        assert kept["mtu"] == str(best["mtu"]) and kept["rmem_max"] == str(best["rmem_max"])
        again = subprocess.run([sys.executable, "-m", "nictune", "apply", str(out["job_id"]), "--testbed",
                                testbed], env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 2 and "already applied" in again.stderr
        with exclusive(Journal(testbed, state_dir).lock_path, "a trial in the test"):
            restoring = nictune("restore", "--testbed", testbed, env=env)
            wait_for_stderr(restoring, waiting)
            time.sleep(0.5)
            assert restoring.poll() is None and values(pair) == kept, "restore did not wait for the trial"
        _, err = restoring.communicate(timeout=120)
        assert restoring.returncode == 0, err
        assert values(pair) == before
        # Idempotent: a second restore (a cleanup step run regardless) says so and succeeds.
        twice = subprocess.run([sys.executable, "-m", "nictune", "restore", "--testbed", testbed], env=env,
                               capture_output=True, text=True, timeout=120)
        assert twice.returncode == 0, twice.stderr
        assert f"nothing to restore on {testbed}: no configuration applied there" in " ".join(twice.stdout.split())
        assert values(pair) == before
    finally:  # whatever failed above, the kept configuration does not outlive the test
        if (state_dir.parent / "applied" / Journal(testbed).path.name).exists():
            subprocess.run([sys.executable, "-m", "nictune", "restore", "--testbed", testbed], env=env,
                           capture_output=True, timeout=120)


def test_a_second_testbed_cannot_apply_over_machine_wide_settings_another_one_keeps(
    pair: VethPair, env: dict[str, str], state_dir: Path
) -> None:
    """Two veth pairs share the machine's net.core sysctls. Applying on the second while the
    first keeps its configuration used to journal the first one's rmem_max as the host's own:
    restoring the first, then the second, left the first one's value on the machine."""
    other = VethPair(unique_name())
    other.up()
    rmem_before = LocalHost().read_file(RMEM_MAX).strip()
    first, second = f"veth:{pair.name}", f"veth:{other.name}"
    restore = [sys.executable, "-m", "nictune", "restore", "--testbed"]
    try:
        run = subprocess.run(
            [sys.executable, "-m", "nictune", "optimize", "--testbed", first, "--workload", "tcp",
             "--objective", "throughput", "--engine", "random", "--budget", "1", "--repeats", "1", "--duration", "1",
             "--json"], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        job = str(json.loads(run.stdout)["job_id"])
        apply = [sys.executable, "-m", "nictune", "apply", job, "--testbed"]
        done = subprocess.run([*apply, first], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        kept = LocalHost().read_file(RMEM_MAX).strip()
        refused = subprocess.run([*apply, second], env=env, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2, refused.stderr
        message = " ".join(refused.stderr.split())
        assert f"{first} keeps a configuration that set machine-wide settings" in message
        assert "rmem_max" in message and f"nictune restore --testbed {first}" in message
        assert "Traceback" not in refused.stderr
        assert not (state_dir.parent / "applied" / Journal(second).path.name).exists()
        assert LocalHost().read_file(RMEM_MAX).strip() == kept
        # Restored first, the second applies and restores to the machine's own value.
        assert subprocess.run([*restore, first], env=env, capture_output=True, timeout=120).returncode == 0
        assert LocalHost().read_file(RMEM_MAX).strip() == rmem_before
        done = subprocess.run([*apply, second], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert subprocess.run([*restore, second], env=env, capture_output=True, timeout=120).returncode == 0
        assert LocalHost().read_file(RMEM_MAX).strip() == rmem_before
    finally:
        for testbed in (first, second):
            if (state_dir.parent / "applied" / Journal(testbed).path.name).exists():
                subprocess.run([*restore, testbed], env=env, capture_output=True, timeout=120)
        if other.exists():
            other.down()
