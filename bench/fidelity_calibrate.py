"""Real veth runs of several durations: how much noisier and how biased a short run is.

Usage (root; real iperf3 between two network namespaces the veth testbed creates and removes):
    .venv/bin/python bench/fidelity_calibrate.py                 # ~7 minutes, writes bench/data/fidelity/
    .venv/bin/python bench/fidelity_calibrate.py --summary       # print the figures of the last collection

For the untuned default and a tuned configuration of the ``veth`` space, under the ``tcp`` and
``udp-jumbo`` workloads, every duration in ``--durations`` is run ``--repeats`` times, the
durations interleaved (so a drift of the machine does not line up with one duration). Each
run is one ``Testbed.measure`` call, exactly what a trial does; its throughput and the
per-second iperf3 intervals are appended to ``runs.jsonl``. ``--summary`` prints, per
configuration, workload and duration, the mean throughput relative to the longest duration
(the bias of a short run) and the coefficient of variation between runs (its noise): the
figures the simulated testbed's short-run model (nictune/measure/sim/fidelity.py) is
calibrated to.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nictune.measure.benchmarks.workloads import get_workload  # noqa: E402
from nictune.search_spaces import load_space  # noqa: E402

OUT = ROOT / "bench" / "data" / "fidelity"

#: The tuned configuration: what `optimize --testbed veth --workload udp-jumbo --budget 40
#: --seed 2` recommended on 2026-11-26 (the README's real-testbed job), MTU 65000 and large buffers.
TUNED: dict[str, Any] = {
    "mtu": 65000, "txqueuelen": 5000, "rmem_max": 16777216, "wmem_max": 16777216,
    "rmem_default": 16777216, "tcp_wmem_max": 16777216, "netdev_max_backlog": 30000,
}


def collect(args: argparse.Namespace) -> None:
    from nictune.measure.testbeds import open_testbed

    space = load_space("veth")
    configs = {"default": space.default(), "tuned": space.configuration(TUNED)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "runs.jsonl"
    with open_testbed("veth") as bed, path.open("a") as fh:
        for rep in range(args.repeats):
            for wl_name in args.workloads:
                for name, config in configs.items():
                    for duration in args.durations:
                        wl = get_workload(wl_name, duration_s=duration, omit_s=args.omit)
                        started = time.monotonic()
                        result = bed.measure(space.settings(config), wl, 1, rep)
                        sample = result.samples[0]
                        record = {
                            "config": name, "workload": wl_name, "duration_s": duration, "omit_s": args.omit,
                            "repeat": rep, "throughput_gbps": sample.metrics["throughput_gbps"],
                            "loss_pct": sample.metrics.get("loss_pct"),
                            "intervals_gbps": sample.counters.get("iperf3", {}).get("intervals_gbps", []),
                            "wall_s": round(time.monotonic() - started, 3),
                            "loadavg": os.getloadavg()[0], "at": datetime.now(UTC).isoformat(),
                        }
                        fh.write(json.dumps(record) + "\n")
                        fh.flush()
                        print(f"{rep} {wl_name:9s} {name:7s} {duration:5.1f}s "
                              f"{record['throughput_gbps']:7.3f} Gbps  wall {record['wall_s']:.1f}s", flush=True)


def summary(out: Path) -> list[dict[str, Any]]:
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    groups: dict[tuple[str, str], dict[float, list[float]]] = {}
    for r in runs:
        groups.setdefault((r["workload"], r["config"]), {}).setdefault(r["duration_s"], []).append(
            r["throughput_gbps"])
    for (wl, config), by_d in sorted(groups.items()):
        longest = max(by_d)
        ref = statistics.fmean(by_d[longest])
        for d in sorted(by_d):
            vals = by_d[d]
            mean = statistics.fmean(vals)
            cv = statistics.stdev(vals) / mean if len(vals) > 1 and mean else float("nan")
            rows.append({"workload": wl, "config": config, "duration_s": d, "runs": len(vals),
                         "mean_gbps": round(mean, 3), "relative_to_longest": round(mean / ref, 3) if ref else None,
                         "cv": round(cv, 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--durations", type=float, nargs="+", default=[1.0, 2.0, 4.0, 10.0])
    ap.add_argument("--workloads", nargs="+", default=["tcp", "udp-jumbo"])
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--omit", type=float, default=1.0, help="iperf3 -O warm-up seconds left out")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--summary", action="store_true", help="print the figures of the collected runs")
    args = ap.parse_args(argv)
    if not args.summary:
        collect(args)
    for row in summary(args.out):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
