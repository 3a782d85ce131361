"""Seconds per answer: short runs first and stopping rules against full runs only (simulated testbeds).

Usage:
    .venv/bin/python bench/fidelity.py                       # 8 scenarios x 20 seeds x 2 variants
    .venv/bin/python bench/fidelity.py --quick               # 2 scenarios x 3 seeds (a smoke run)
    .venv/bin/python bench/fidelity.py --variants full short=2 "short=2,patience=15"

Every run is a real nictune job (``JobRunner``: the engine, the fitness cache in a fresh SQLite
file, racing and its final race, short runs first when the variant says so) on a simulated
testbed, which is a model: its figures are not measurements. What the benchmark counts:

* **measurement seconds**: the benchmark seconds of every run the job made (warm-up left out
  by ``-O`` plus the measured part, short and full runs alike, the final race included), plus
  ``--overhead`` seconds per run for apply, reachability check and restore (1.4 s: a veth
  run's wall time was its duration + warm-up + 1.3-1.4 s, ``bench/data/fidelity/README.md``);
* **seconds to 2 %**: the measurement seconds spent when the job's recommendation (its best so
  far, feasible on its mean, as the progress line shows it) was first within 2 % of the
  scenario's optimum, scored noise-free (``Landscape.clean``);
* **discarded optima**: of the configurations within 2 % of the optimum that a job met, the
  share its short runs left at their short run (the rule's stated risk bounds the chance of
  discarding a configuration at least as good as the incumbent's lower bound); and of all
  configurations left short, the share that were in fact better than the recommendation at
  that moment.

Variants are JobSpec changes: ``full`` (none), ``short=2`` (``--short-run 2``),
``short=2,risk=0.1``, ``patience=15``, ``time=600`` (``--time-limit``) and combinations.
The same seeds, budget, start configurations and scoring for every variant. Scenarios: four
built-in simulated pairs and four randomised instances of the ``sim`` family's *test* split
(``bench/landscapes/sim_random.py``), which short runs were not tuned on.

Writes ``bench/out/fidelity/{runs.jsonl,table.txt}``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.landscapes._base import Landscape  # noqa: E402
from bench.landscapes.sim_random import SimLandscape, instance  # noqa: E402
from nictune.measure.sim import PROFILES  # noqa: E402
from nictune.optimizer import Goal  # noqa: E402
from nictune.search_spaces import Configuration, load_space  # noqa: E402

OUT = ROOT / "bench" / "out" / "fidelity"
#: Seconds per run for apply, reachability check and restore (veth: 1.3-1.4 s, bench/data/fidelity/README.md).
OVERHEAD_S = 1.4
WITHIN = 0.02

#: Built-in scenarios: (profile, space, workload, objective, constraints).
BUILTIN: list[tuple[str, str, str, str, tuple[str, ...]]] = [
    ("sim:benson-40g", "benson-40g", "tcp", "throughput", ()),
    ("sim:benson-40g", "benson-40g", "udp", "throughput", ("loss<=0.1",)),
    ("sim:cai-100g", "linux-nic", "tcp-parallel", "throughput", ()),
    ("sim:mishra-10g", "linux-tcp", "tcp", "throughput", ()),
]
#: Randomised instances of the sim family's test split (i % 5 not in (0, 2)).
RANDOM_TEST = (1, 3, 4, 6)
QUICK = (0, 4)


def scenarios(quick: bool) -> list[Landscape]:
    out: list[Landscape] = []
    for profile, space, workload, objective, constraints in BUILTIN:
        goal = Goal.from_names([objective], list(constraints))
        name = f"{profile}/{workload}/{objective}" + (f"/{','.join(constraints)}" if constraints else "")
        out.append(SimLandscape(name=name, family="sim", split="test", space=load_space(space), goal=goal,
                                profile=PROFILES[profile], workload_name=workload))
    out += [instance(i) for i in RANDOM_TEST]
    return [out[i] for i in QUICK] if quick else out


def parse_variant(text: str) -> dict[str, Any]:
    """``short=2,risk=0.1,patience=15,time=600`` -> JobSpec changes; ``full`` -> none."""
    out: dict[str, Any] = {}
    if text == "full":
        return out
    names = {"short": ("short_run_s", float), "risk": ("short_risk", float),
             "patience": ("patience", int), "time": ("time_limit_s", float), "engine": ("engine", str)}
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key not in names:
            raise SystemExit(f"unknown variant part {part!r}: use {', '.join(names)} or full")
        field, kind = names[key]
        out[field] = kind(value)
    return out


def run_one(task: tuple[int, str, int, int, float]) -> dict[str, Any]:
    """One job: scenario ``index`` with ``variant`` and ``seed``; its trace of seconds and
    recommendations, scored noise-free."""
    index, variant, seed, budget, overhead = task
    from nictune import db
    from nictune.executors import LocalExecutor
    from nictune.jobs import JobRunner, JobSpec, create_job
    from nictune.jobs.evaluate import TrialEvent

    land = _SCENARIOS[index]
    assert isinstance(land, SimLandscape)
    opt = _OPTIMA[index]
    goal = land.goal

    def factory(_name: str, _noise: float | None) -> LocalExecutor:
        return LocalExecutor(land.bed)

    with tempfile.TemporaryDirectory() as tmp:
        engine = db.open_database(f"sqlite:///{tmp}/bench.db")
        spec = JobSpec(objectives=[o.name for o in goal.objectives], testbed=land.name, workload=land.workload_name,
                       space=land.space.name, constraints=[str(c) for c in goal.constraints], budget=budget,
                       seed=seed, warm_start=False, **parse_variant(variant))
        job = create_job(engine, spec, executor_factory=factory)
        configs: dict[int, Configuration] = {}
        trace: list[tuple[float, float | None]] = []
        screened: list[dict[str, Any]] = []
        met: set[str] = set()
        rec_value: list[float | None] = [None]

        def seconds() -> float:
            with db.session_scope(engine) as s:
                st = db.get_job(s, job).stats
                runs = int(st.get("runs", 0)) + int(st.get("short_runs", 0))
                return float(st.get("bench_seconds", 0.0)) + overhead * runs

        def on_trial(ev: TrialEvent) -> None:
            configs[ev.number] = ev.config
            value = _value(land, ev.config)
            if value is not None and regret(opt, value) <= WITHIN:
                met.add(ev.config.hash)
            short = ev.short or {}
            if short and not short.get("promoted", True):
                screened.append({"value": value, "incumbent": rec_value[0],
                                 "better": value is not None and (rec_value[0] is None or value > rec_value[0]),
                                 "optimum": value is not None and regret(opt, value) <= WITHIN})
            rec = None if ev.best_number is None else _value(land, configs[ev.best_number])
            rec_value[0] = rec
            trace.append((seconds(), rec))

        started = time.monotonic()
        outcome = JobRunner(engine, on_trial=on_trial, executor_factory=factory).run(job)
        with db.session_scope(engine) as s:
            j = db.get_job(s, job)
            stats = dict(j.stats)
            final_hash = (stats.get("recommendation") or {}).get("hash")
            final = None
            if final_hash:
                row = db.resolve_configuration(s, final_hash)
                final = _value(land, Configuration.from_values(json.loads(row.canonical)))
        trace.append((seconds(), final))
        engine.dispose()
    hit = next((t for t, v in trace if v is not None and regret(opt, v) <= WITHIN), math.inf)
    return {"scenario": land.name, "variant": variant, "seed": seed, "budget": budget, "state": outcome.state,
            "trials": outcome.trials, "seconds": trace[-1][0], "seconds_to_2pct": hit,
            "final_regret": None if final is None else regret(opt, final),
            "screened": len(screened), "screened_better": sum(x["better"] for x in screened),
            "optima_met": len(met), "optima_discarded": sum(x["optimum"] for x in screened),
            "stop_reason": stats.get("stop_reason"), "wall_s": round(time.monotonic() - started, 2)}


def _value(land: Landscape, config: Configuration) -> float | None:
    """The noise-free score (bigger is better) of a feasible configuration; None if infeasible."""
    score = land.clean_score(config)
    return score.value if score.feasible else None


def regret(optimum: float, value: float) -> float:
    """Relative shortfall from the optimum (scores are bigger-is-better, either sign)."""
    return (optimum - value) / abs(optimum) if optimum else optimum - value


_SCENARIOS: list[Landscape] = []
_OPTIMA: list[float] = []


def _init(quick: bool, optima: list[float]) -> None:
    _SCENARIOS[:] = scenarios(quick)
    _OPTIMA[:] = optima


def optimum(land: Landscape) -> float:
    from bench.engines import find_optimum

    return find_optimum(land, 4000).value


def summarise(runs: list[dict[str, Any]], variants: Sequence[str]) -> list[str]:
    lines = []
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["scenario"], r["variant"]), []).append(r)
    base = variants[0]
    head = (f"{'scenario':44s} {'variant':22s} {'seeds':>5s} {'reached':>7s} {'s to 2% (median)':>16s} "
            f"{'x faster':>8s} {'s total':>8s} {'regret':>7s} {'left short':>10s} {'better':>6s} "
            f"{'optima disc.':>12s}")
    lines.append(head)
    ratios: dict[str, list[float]] = {}
    for scenario in dict.fromkeys(r["scenario"] for r in runs):
        base_runs = {r["seed"]: r for r in by.get((scenario, base), [])}
        for variant in variants:
            rs = by.get((scenario, variant), [])
            if not rs:
                continue
            to2 = [r["seconds_to_2pct"] for r in rs]
            reached = sum(math.isfinite(x) for x in to2)
            med = statistics.median(to2)
            per_seed = [base_runs[r["seed"]]["seconds_to_2pct"] / r["seconds_to_2pct"] for r in rs
                        if r["seed"] in base_runs and math.isfinite(r["seconds_to_2pct"])
                        and math.isfinite(base_runs[r["seed"]]["seconds_to_2pct"])]
            base_med = statistics.median(x["seconds_to_2pct"] for x in base_runs.values()) if base_runs else math.nan
            speed = base_med / med if math.isfinite(med) and med > 0 else math.nan
            ratios.setdefault(variant, []).extend(per_seed)
            screened = sum(r["screened"] for r in rs)
            better = sum(r["screened_better"] for r in rs)
            met = sum(r["optima_met"] for r in rs)
            disc = sum(r["optima_discarded"] for r in rs)
            regrets = [r["final_regret"] for r in rs if r["final_regret"] is not None]
            lines.append(
                f"{scenario[:44]:44s} {variant[:22]:22s} {len(rs):5d} {reached:4d}/{len(rs):<2d} {med:16.0f} "
                f"{speed:8.2f} {statistics.median(r['seconds'] for r in rs):8.0f} "
                f"{100 * statistics.median(regrets) if regrets else math.nan:6.2f}% {screened:10d} "
                f"{_pct(better, screened):>6s} {disc:4d}/{met:<4d}{_pct(disc, met):>4s}")
    lines.append("")
    lines.append("median over scenarios and seeds of (seconds to 2 % with " + base + ") / (with the variant), "
                 "runs where both reached 2 %:")
    for variant, xs in ratios.items():
        if variant != base and xs:
            lines.append(f"  {variant:22s} {statistics.median(xs):.2f}x  (n={len(xs)}, "
                         f"quartiles {statistics.quantiles(xs, n=4)[0]:.2f}-{statistics.quantiles(xs, n=4)[2]:.2f})"
                         if len(xs) >= 2 else f"  {variant:22s} {xs[0]:.2f}x (n=1)")
    disc = sum(r["optima_discarded"] for r in runs)
    met = sum(r["optima_met"] for r in runs)
    lines.append(f"discarded optima (within 2 %) over every short-run variant: {disc} of {met} met "
                 f"({_pct(disc, met)})")
    return lines


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["full", "short=2"],
                    help="first is the reference: full, short=2, short=2,risk=0.1, patience=15, time=600 ...")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--overhead", type=float, default=OVERHEAD_S, help="seconds per run for apply/restore")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="2 scenarios x 3 seeds, budget 20")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for v in args.variants:
        parse_variant(v)
    seeds = 3 if args.quick else args.seeds
    budget = 20 if args.quick else args.budget
    lands = scenarios(args.quick)
    started = time.monotonic()
    optima = [optimum(land) for land in lands]
    print(f"optima found in {time.monotonic() - started:.0f} s (simulated testbed: a model)", flush=True)
    tasks = [(i, v, seed, budget, args.overhead) for i in range(len(lands)) for seed in range(seeds)
             for v in args.variants]
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.workers, initializer=_init, initargs=(args.quick, optima)) as pool, \
            (args.out / "runs.jsonl").open("w") as fh:
        for n, run in enumerate(pool.map(run_one, tasks, chunksize=1), 1):
            runs.append(run)
            fh.write(json.dumps(run) + "\n")
            if n % 10 == 0 or n == len(tasks):
                print(f"{n}/{len(tasks)} jobs, {time.monotonic() - started:.0f} s", flush=True)
    lines = [f"bench/fidelity.py {' '.join(argv if argv is not None else sys.argv[1:])}  "
             f"(simulated testbeds: a model; budget {budget}, {seeds} seeds, overhead {args.overhead:g} s/run)",
             *summarise(runs, args.variants)]
    (args.out / "table.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
