"""Configurations measured interleaved on one pair: job recommendations against the veth table's rows.

Usage (root for veth; real iperf3 between two namespaces the testbed creates and removes):
    .venv/bin/python bench/veth_ab.py --job seed1.json --job seed2.json --row sobol:64 --rounds 5
    .venv/bin/python bench/veth_ab.py --set mtu=65000 --set rmem_default=16777216 --row sobol:64
    .venv/bin/python bench/veth_ab.py --testbed sim:benson-40g --workload tcp --row default --rounds 1

A host whose speed drifts (a virtual machine sharing its host: on the python-svc machines
runs of one configuration fall to about half their rate for minutes at a time, every
configuration alike) makes ``measure --repeats 5`` of a recommendation and a figure from the
table on another day incomparable. Here every round measures each configuration once, in
an order that rotates from round to round, so a slow spell touches all of them alike; each
run is one ``Testbed.measure`` call, as a trial does (apply, benchmark, restore). Printed per
configuration: every run, mean and median throughput, mean loss, and against the first
``--row`` (the reference) the ratio of the means and the median of the per-round ratios.

Configurations: ``--job FILE`` (the ``best`` of an ``optimize --json`` document), ``--row
LABEL`` (a row of ``bench/data/veth/design.json``), ``--set KNOB=VALUE ...`` (one configuration
from the space's default). Runs go to ``--out`` (JSON lines) as they finish.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nictune.cli._common import parse_assignments  # noqa: E402
from nictune.errors import InvalidInputError  # noqa: E402
from nictune.measure.benchmarks.workloads import get_workload  # noqa: E402
from nictune.search_spaces import Configuration, SearchSpace, load_space  # noqa: E402

DESIGN = ROOT / "bench" / "data" / "veth" / "design.json"


def design_rows(path: Path = DESIGN) -> dict[str, dict[str, Any]]:
    """The veth table's configurations by label (``default``, ``sobol:64`` ...)."""
    return {entry["label"]: entry["config"] for entry in json.loads(path.read_text())["entries"]}


def contenders(space: SearchSpace, jobs: Sequence[Path], rows: Sequence[str], sets: Sequence[str],
               design: Path = DESIGN) -> list[tuple[str, Configuration]]:
    """The configurations to compare, named: rows first (the first row is the reference),
    then jobs, then the ``--set`` configuration. Every value is checked against its knob."""
    out: list[tuple[str, Configuration]] = []
    table = design_rows(design) if rows else {}
    for label in rows:
        if label not in table:
            raise SystemExit(f"--row: no row {label!r} in {design}")
        out.append((label, space.configuration(table[label])))
    for path in jobs:
        best = json.loads(path.read_text()).get("best")
        if not best:
            raise SystemExit(f"--job: {path} has no 'best' (an `optimize --json` document)")
        out.append((path.stem, space.configuration(best["config"])))
    if sets:
        out.append(("set", space.configuration(parse_assignments(sets), base="default")))
    if not out:
        raise SystemExit("nothing to measure: give --row, --job or --set")
    return out


def order(names: Sequence[str], round_no: int) -> list[str]:
    """The round's order: the names rotated by the round's number, so no configuration is
    always first after the pair was set up or always right after another one."""
    k = round_no % len(names)
    return [*names[k:], *names[:k]]


def summary(runs: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """Per configuration: its runs, mean and median throughput, mean loss, and against the
    first name (the reference) the ratio of the means and the median per-round ratio."""
    by: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in names}
    for run in runs:
        by[run["name"]][run["round"]] = run
    reference = by[names[0]]
    out = []
    for name in names:
        own = by[name]
        rates = [own[r]["throughput_gbps"] for r in sorted(own)]
        losses = [own[r]["loss_pct"] for r in sorted(own) if own[r]["loss_pct"] is not None]
        paired = [own[r]["throughput_gbps"] / reference[r]["throughput_gbps"] for r in sorted(own)
                  if r in reference and reference[r]["throughput_gbps"]]
        ref_mean = statistics.fmean(run["throughput_gbps"] for run in reference.values()) if reference else None
        mean = statistics.fmean(rates) if rates else None
        out.append({
            "name": name, "runs": [round(v, 2) for v in rates], "mean_gbps": mean,
            "median_gbps": statistics.median(rates) if rates else None,
            "loss_pct": statistics.fmean(losses) if losses else None,
            "ratio_of_means": mean / ref_mean if mean is not None and ref_mean else None,
            "median_paired_ratio": statistics.median(paired) if paired else None,
        })
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--job", type=Path, action="append", default=[], help="an `optimize --json` document")
    ap.add_argument("--row", action="append", default=[], help="a row of the veth table (the first: the reference)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KNOB=VALUE")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--testbed", default="veth")
    ap.add_argument("--space", default="veth")
    ap.add_argument("--workload", default="udp-jumbo")
    ap.add_argument("--duration", type=float, default=None, help="seconds per run (the workload's own by default)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "veth_ab" / "runs.jsonl")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds: at least 1")

    from nictune.measure.testbeds import open_testbed

    try:
        space = load_space(args.space)
        named = contenders(space, args.job, args.row, args.sets)
        workload = get_workload(args.workload, duration_s=args.duration)
    except InvalidInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    configs = dict(named)
    names = [name for name, _ in named]
    if len(configs) != len(names):
        ap.error("two configurations have the same name")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    with open_testbed(args.testbed) as bed, args.out.open("a") as fh:
        print(f"testbed {bed.name}{' (simulated: a model, not hardware)' if bed.simulated else ''}, workload "
              f"{workload.name}, {args.rounds} rounds of {len(names)} configurations", flush=True)
        for round_no in range(args.rounds):
            for name in order(names, round_no):
                began = time.monotonic()
                sample = bed.measure(space.settings(configs[name]), workload, 1, round_no).samples[0]
                run = {"name": name, "round": round_no, "config_hash": configs[name].hash,
                       "throughput_gbps": sample.metrics["throughput_gbps"],
                       "loss_pct": sample.metrics.get("loss_pct"), "wall_s": round(time.monotonic() - began, 2),
                       "testbed": bed.name, "workload": workload.name, "at": datetime.now(UTC).isoformat()}
                runs.append(run)
                fh.write(json.dumps(run) + "\n")
                fh.flush()
                loss = "" if run["loss_pct"] is None else f" at {run['loss_pct']:.3f} % loss"
                print(f"round {round_no + 1}: {name:12s} {run['throughput_gbps']:7.2f} Gbit/s{loss}", flush=True)
    print(f"\nagainst {names[0]} (the reference), measured in the same rounds:")
    print(f"{'configuration':14s} {'mean':>7s} {'median':>7s} {'loss %':>7s} {'x ref (means)':>14s} "
          f"{'x ref (median of rounds)':>25s}  runs")
    for row in summary(runs, names):
        loss = "-" if row["loss_pct"] is None else f"{row['loss_pct']:.3f}"
        print(f"{row['name']:14s} {row['mean_gbps']:7.2f} {row['median_gbps']:7.2f} {loss:>7s} "
              f"{row['ratio_of_means']:14.2f} {row['median_paired_ratio']:25.2f}  {row['runs']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
