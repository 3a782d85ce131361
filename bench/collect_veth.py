"""Measure a space-filling design of the ``veth`` space on a real veth pair: a benchmark table.

Usage (root; real iperf3 between two network namespaces this script creates and removes):
    .venv/bin/python bench/collect_veth.py                      # the full table (hours)
    .venv/bin/python bench/collect_veth.py --status             # what is measured so far
    .venv/bin/python bench/collect_veth.py --design-size 8 --repeats 1 --out /tmp/t --duration 2  # a smoke run

The design (written once to ``design.json`` and reused, so an interrupted collection resumes
where it stopped): the untuned default, every one-knob change of it, the space's profiles,
two configurations published earlier (the README's seed-2 job and the issue's hand-tuned
one) and ``--design-size`` points of a scrambled Sobol sequence over the knobs
(:func:`nictune.search_spaces.design.space_filling`). Runs go in passes: pass 1 measures
every configuration once under every workload (in a shuffled but fixed order, so that a
drift of the machine over the hours does not line up with one group of configurations),
pass 2 again, and so on; repeats of one configuration are therefore hours apart, as
independent as two jobs' measurements. Each run is one ``Testbed.measure`` call (snapshot,
apply, iperf3, counters, restore), exactly what a job's trial does, and is appended to
``runs.jsonl`` (fsync) with every metric and counter, the load average before it, the share
of its wall time some task waited for a CPU (``cpu_pressure_pct``, from
``/proc/pressure/cpu``; a record, not a rule: a configuration that pins both iperf3 ends to
one CPU stalls by itself) and its wall time. Nothing else may run: before each run the script
waits until the load average is at most 2, and a run that was not quiet anyway
(:func:`bench.landscapes.veth_table.quiet`) is kept as a record but measured again and left
out of the table. Ctrl-C stops after restoring the hosts; run the same command again to resume.
A run that fails is recorded as failed and not retried unless ``--retry-failed``.

``provenance.json`` records the machine (kernel, CPU model, cores, iperf3 version), the
duration per run, the command, the nictune commit and the dates. The loader is
``bench/landscapes/veth_table.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.landscapes.veth_table import MAX_LOAD, quiet, read_runs  # noqa: E402
from nictune.measure.benchmarks.workloads import get_workload  # noqa: E402
from nictune.search_spaces import Configuration, SearchSpace, load_space  # noqa: E402
from nictune.search_spaces.design import space_filling  # noqa: E402

OUT = ROOT / "bench" / "data" / "veth"

#: Configurations published earlier, measured so the table holds the known good region.
PUBLISHED: dict[str, dict[str, Any]] = {
    # README "Real testbeds": what `optimize --testbed veth --workload udp-jumbo ... --budget 40
    # --seed 2` recommended on 2026-11-26 (11.41 Gbps at 0.002 % loss re-measured).
    "readme-seed2-job": {
        "mtu": 65000, "txqueuelen": 5000, "rmem_max": 16777216, "wmem_max": 16777216,
        "rmem_default": 16777216, "tcp_wmem_max": 16777216, "netdev_max_backlog": 30000,
        "napi_defer_hard_irqs": 2, "busy_poll": 50, "gro": True, "tso": False,
        "qdisc": "pfifo_fast", "congestion_control": "reno", "sender_cpus": "1",
    },
    # Issue 28: "MTU 65000, large socket buffers and txqueuelen 5000" (7.15 Gbps).
    "issue28-hand": {
        "mtu": 65000, "txqueuelen": 5000, "rmem_max": 67108864, "wmem_max": 67108864,
        "rmem_default": 16777216, "wmem_default": 4194304,
    },
}


def build_design(space: SearchSpace, size: int, seed: int) -> list[dict[str, Any]]:
    """The design: (label, configuration) entries in a fixed order, duplicates dropped."""
    entries: list[tuple[str, Configuration]] = [("default", space.default())]
    entries += [(f"one-knob:{name}={config[name]}", config) for name, config in space.neighbours(space.default())]
    entries += [(f"profile:{p}", space.profile(p)) for p in sorted(space.profiles)]
    entries += [(f"published:{label}", space.configuration(values)) for label, values in PUBLISHED.items()]
    seen = {c.hash for _, c in entries}
    entries += [(f"sobol:{i}", c) for i, c in enumerate(space_filling(space, size, seed, exclude=seen))]
    out, taken = [], set()
    for label, config in entries:
        if config.hash not in taken:
            taken.add(config.hash)
            out.append({"label": label, "hash": config.hash, "config": config.as_dict()})
    return out


def extend_design(space: SearchSpace, design: list[dict[str, Any]], more: int, seed: int) -> list[dict[str, Any]]:
    """``more`` new entries: the next points of the design's own Sobol sequence (same seed).

    The sequence is drawn again from its start with the fixed entries excluded, exactly as
    :func:`build_design` drew it, so its first points are the design's Sobol entries and the
    ones after them are new. Fixed entries the space gained since (a new profile) come first.
    """
    fixed = {e["hash"] for e in design if not e["label"].startswith("sobol:")}
    have = {e["hash"] for e in design}
    sobol = sum(1 for e in design if e["label"].startswith("sobol:"))
    points = space_filling(space, sobol + more, seed, exclude=fixed)
    new = [c for c in points if c.hash not in have]
    added = [e for e in build_design(space, 0, seed) if e["hash"] not in have]  # e.g. profiles added since
    return added + [{"label": f"sobol:{sobol + i}", "hash": c.hash, "config": c.as_dict()}
                    for i, c in enumerate(new)]


def _command(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10).stdout.strip()
    except OSError:
        return ""


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_name(cpu: str | None = None, cores: int | None = None) -> str:
    """A short name of this machine for its runs: the CPU model's first two words and the
    cores ("Intel(R) Xeon(R) Processor", 2 -> ``intel-xeon-2c``). Runs of different machines
    are never one table."""
    words = [w for w in re.sub(r"\(r\)|\(tm\)", "", (cpu or _cpu_model()).lower()).split()
             if w not in ("processor", "cpu")]
    return "-".join([*words[:2], f"{cores or os.cpu_count()}c"])


def provenance(args: argparse.Namespace, workloads: list[str]) -> dict[str, Any]:
    """The fields every machine's runs share (the design, the workloads, the duration)."""
    return {
        "what": "real iperf3 runs between two network namespaces joined by a veth pair (not a model)",
        "space": args.space,
        "workloads": {w: get_workload(w, duration_s=args.duration).key() for w in workloads},
        "duration_s_per_run": args.duration,
        "repeats": args.repeats,
        "design_seed": args.seed,
        "testbed": args.testbed,
    }


def machine_provenance(args: argparse.Namespace) -> dict[str, Any]:
    """This machine's fields (``provenance.json``: ``machines``)."""
    return {
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "iperf3": _command(["iperf3", "--version"]).splitlines()[0] if _command(["iperf3", "--version"]) else "",
        "nictune_commit": _command(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
        "command": "python bench/collect_veth.py " + " ".join(sys.argv[1:]),
    }


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def _cpu_stall_us() -> int | None:
    """Microseconds some task has waited for a CPU since boot (``/proc/pressure/cpu``), or
    None where the kernel has no pressure stall information."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return int(first.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None


def wait_for_quiet(max_load: float = MAX_LOAD, poll_s: float = 10.0, say: Any = print) -> float:
    """Wait until the 1-minute load average is at most ``max_load`` (nothing else running);
    say once why it waits. Returns the seconds waited."""
    waited = 0.0
    while (load := _loadavg()) > max_load:
        if waited == 0.0:
            say(f"# waiting: load average {load:.2f} > {max_load:g}; something else is running and "
                "would slow the runs down (they would not count). Stop it, or Ctrl-C.")
        time.sleep(poll_s)
        waited += poll_s
    return waited


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testbed", default="veth:ntbench", help="veth:NAME (created if missing, removed after)")
    ap.add_argument("--space", default="veth")
    ap.add_argument("--workloads", default="tcp,udp-jumbo")
    ap.add_argument("--repeats", type=int, default=2, help="passes over the design")
    ap.add_argument("--design-size", type=int, default=264, help="Sobol points besides the fixed entries")
    ap.add_argument("--seed", type=int, default=2811, help="scrambling seed of the Sobol design")
    ap.add_argument("--extend", type=int, default=0, metavar="N",
                    help="add N more points of the same Sobol sequence to an existing design (measured "
                         "after the runs already planned for the pass they fall in)")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per run (the workloads' default)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--retry-failed", action="store_true")
    ap.add_argument("--status", action="store_true", help="print what is measured and exit")
    args = ap.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    space = load_space(args.space)
    args.out.mkdir(parents=True, exist_ok=True)
    design_path, runs_path, prov_path = args.out / "design.json", args.out / "runs.jsonl", args.out / "provenance.json"
    if design_path.exists():
        saved = json.loads(design_path.read_text())
        design = saved["entries"]
        if args.extend > 0:
            design += extend_design(space, design, args.extend, saved["seed"])
            saved["entries"] = design
            design_path.write_text(json.dumps(saved, indent=1))
            print(f"# design extended to {len(design)} configurations")
    else:
        design = build_design(space, args.design_size, args.seed)
        design_path.write_text(json.dumps({"space": args.space, "seed": args.seed, "entries": design}, indent=1))
    runs = read_runs(runs_path)
    machine = machine_name()
    print(f"# this machine: {machine}")
    # A run beside other processes (not quiet) is measured again; its record stays.
    done = {(r["hash"], r["workload"], r["pass"]) for r in runs
            if r.get("machine") == machine and quiet(r) and (r.get("ok") or not args.retry_failed)}
    order = list(range(len(design)))
    random.Random(args.seed).shuffle(order)
    todo = [(p, design[i], w) for p in range(1, args.repeats + 1) for i in order for w in workloads
            if (design[i]["hash"], w, p) not in done]
    total = len(design) * len(workloads) * args.repeats
    busy = sum(1 for r in runs if r.get("machine") == machine and not quiet(r))
    print(f"# {len(design)} configurations x {len(workloads)} workloads x {args.repeats} passes = {total} runs; "
          f"{total - len(todo)} done, {len(todo)} to go (~{len(todo) * (args.duration + 3) / 3600:.1f} h)"
          + (f"; {busy} runs beside other work (marked so, or load average > {MAX_LOAD:g}) do not count"
             if busy else ""))
    if args.status or not todo:
        return 0
    prov: dict[str, Any] = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    prov.update({k: v for k, v in provenance(args, workloads).items() if k not in prov})
    mine = prov.setdefault("machines", {}).setdefault(machine, {})
    mine.update(machine_provenance(args))
    mine.setdefault("first_run", datetime.now(UTC).isoformat(timespec="seconds"))
    prov_path.write_text(json.dumps(prov, indent=1))

    from nictune.measure.testbeds import open_testbed

    def stop(signum: int, frame: Any) -> None:  # SIGTERM like Ctrl-C: restore, close, exit
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)

    started = time.time()
    measured = 0
    try:
        with open_testbed(args.testbed) as bed:
            for notice in bed.notices:
                print(f"# {notice}")
            fingerprint = bed.fingerprint()
            for p, entry, wname in todo:
                config = space.configuration(entry["config"])
                wl = get_workload(wname, duration_s=args.duration)
                wait_for_quiet()
                record: dict[str, Any] = {"hash": entry["hash"], "label": entry["label"], "workload": wname,
                                          "machine": machine,
                                          "pass": p, "loadavg_before": _loadavg(),
                                          "started": datetime.now(UTC).isoformat(timespec="seconds")}
                t0, stall0 = time.time(), _cpu_stall_us()
                try:
                    result = bed.measure(space.settings(config), wl, 1, p)
                except KeyboardInterrupt:
                    raise
                except Exception as exc:
                    record.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                else:
                    sample = result.samples[0]
                    record.update(ok=True, metrics=sample.metrics,
                                  counters={k: sample.counters.get(k) for k in ("delta", "sender_delta", "derived")},
                                  notes=result.notes)
                record["wall_s"] = round(time.time() - t0, 2)
                stall1 = _cpu_stall_us()
                if stall0 is not None and stall1 is not None:  # the share of the run some task waited for a CPU
                    record["cpu_pressure_pct"] = round((stall1 - stall0) / 1e4 / max(record["wall_s"], 0.01), 1)
                _append(runs_path, record)
                measured += 1
                m = record.get("metrics") or {}
                eta = (time.time() - started) / measured * (len(todo) - measured)
                print(f"pass {p} {entry['label'][:34]:<34} {wname:<10} "
                      + (f"{m.get('throughput_gbps', 0):6.2f} Gbps loss {m.get('loss_pct', 0):6.3f}%"
                         if record["ok"] else f"FAILED {record['error'][:60]}")
                      + ("" if quiet(record) else " (not quiet: measured again later)")
                      + f"  [{measured}/{len(todo)}, eta {eta / 3600:.1f} h]", flush=True)
    except KeyboardInterrupt:
        print(f"# interrupted after {measured} runs; the hosts are restored; run again to resume")
        return 130
    finally:
        prov = json.loads(prov_path.read_text())
        mine = prov["machines"][machine]
        mine["fingerprint"] = locals().get("fingerprint", mine.get("fingerprint"))
        mine["last_run"] = datetime.now(UTC).isoformat(timespec="seconds")
        now = [r for r in read_runs(runs_path) if r.get("machine") == machine]
        mine["runs"], mine["quiet_runs"] = len(now), sum(1 for r in now if quiet(r))
        prov_path.write_text(json.dumps(prov, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
