"""A fair, broad benchmark of the search engines: simple regret on landscapes of three families.

Usage:
    .venv/bin/python bench/engines.py                    # every family, dev and test, all contenders
    .venv/bin/python bench/engines.py --split test       # the figures to report
    .venv/bin/python bench/engines.py --quick            # a smoke run (what the test suite runs)
    .venv/bin/python bench/engines.py --families sim --contenders bayes,optuna-tpe --split dev

Families (``bench/landscapes/``), each split into development and test instances before any
engine was tuned:

* ``table``: real measurements of the ``veth`` space on a veth pair (``bench/data/veth``,
  ``bench/collect_veth.py``): a configuration of the table answers with one of its runs, any
  other from gradient boosting fitted to the table and calibrated to the spread of its
  design rows (``bench/landscapes/veth_table.py``).
* ``sim``: randomised instances of the simulated testbed's physical model (a model, not
  hardware): line rate, clocks, cores, RTT, cost constants, queue stalls, the application
  (``bench/landscapes/sim_random.py``).
* ``synthetic``: constructed structures over the built-in spaces: knobs that pay off only
  together, optima at range ends, narrow feasible regions, conditional knobs that matter in
  one mode (``bench/landscapes/synthetic.py``).

Fairness (``bench/contenders.py``): every contender starts from the same configurations (the
default and the space's ``baseline`` profile where it has one: nictune's ``start=``, Optuna's
``enqueue_trial``, SMAC's initial design), gets the same budget counted in measurements
(nictune's final race included) and the same measurements, and is scored on the
configuration it would recommend, re-evaluated noise-free. Figures per family, split and
budget (20, 30, 60): median and IQR of the simple regret (the optimum minus the noise-free
value of the recommendation, in % of the optimum; 100 for a recommendation that breaks a
constraint), the share of runs within 2 % and 5 %, the evaluations until the recommendation
is within 5 % (median [IQR]), the mean rank of each contender (per landscape and seed, ties
shared) and the engine time per suggestion. The optimum of each landscape comes from
enumeration (up to 1,000,000 configurations) or an iterated local search over the noise-free
figures started from the default, the profiles, the landscape's own candidates (a table's
rows, a construction's guess) and random configurations; it is cached in ``optima.json``.

Runs are cached in ``runs.jsonl`` under ``--out``, keyed by the landscape's definition, the
contender, the seed, the budget and the code or library version behind the contender, so a
second run of the command only computes what changed. Runs are deterministic on one machine.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per worker process

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.contenders import (  # noqa: E402
    DEFAULT_CONTENDERS,
    OPTUNA,
    available,
    parse_contender,
    run_contender,
)
from bench.landscapes import sim_random, synthetic, veth_table  # noqa: E402
from bench.landscapes._base import FAMILIES, Landscape, Optimum, regret  # noqa: E402
from nictune.search_spaces import Configuration  # noqa: E402

OUT = ROOT / "bench" / "out" / "engines"
BUDGETS = (20, 30, 60)
ENUMERATE_MAX = 1_000_000
#: Seeds per landscape. The table has few landscapes and noisy runs (6-7 % per run): on its
#: development instances bayes's median regret at 20 / 30 was 21.3 / 13.0 % over seeds 0-19 and
#: 14.4 / 8.7 % over seeds 0-99 (2026-11-28), so 20 seeds could not tell contenders apart.
SEEDS = {"table": 100, "sim": 5, "synthetic": 5}
DEFAULT_ENGINE = "bayes"


# ------------------------------------------------------------------ landscapes
def landscapes(families: Sequence[str], split: str, quick: bool = False) -> list[Landscape]:
    out: list[Landscape] = []
    for fam in families:
        if fam == "table":
            found = veth_table.family()
        elif fam == "sim":
            found = sim_random.family()
        else:
            found = synthetic.family()
        found = [land for land in found if split in ("all", land.split)]
        if quick:
            found = found[:2]
        out += found
    return out


# ------------------------------------------------------------------ optimum
def _enumerate(land: Landscape) -> list[Configuration] | None:
    from nictune.optimizer.encoding import enumerate_space

    return enumerate_space(land.space, ENUMERATE_MAX)


def find_optimum(land: Landscape, evals: int) -> Optimum:
    """The best noise-free score (see the module docstring)."""
    configs = _enumerate(land)
    if configs is not None:
        best = max(configs, key=land.clean_score)
        method = f"enumeration of {len(configs)} configurations"
    else:
        best, count = _iterated_local_search(land, evals)
        method = f"iterated local search, {count} evaluations"
    score = land.clean_score(best)
    rng = random.Random(7)
    share = None
    if land.goal.constraints:
        share = statistics.fmean(land.clean_score(land.space.sample(rng)).feasible for _ in range(1000))
    return Optimum(score.value, score.feasible, best.as_dict(), method, share)


def _iterated_local_search(land: Landscape, evals: int) -> tuple[Configuration, int]:
    space, rng = land.space, random.Random(12345)
    seen: set[str] = set()

    def score(c: Configuration) -> Any:
        seen.add(c.hash)
        return land.clean_score(c)

    def climb(c: Configuration) -> Configuration:
        current, cur = c, score(c)
        while len(seen) < evals:
            nbs = [n for _, n in space.neighbours(current)]
            land.clean_many(nbs)  # one batch (a surrogate model predicts them together)
            best = max(nbs, key=score, default=None)
            if best is None or not score(best) > cur:
                return current
            current, cur = best, score(best)
        return current

    starts = land.start() + [space.profile(p) for p in sorted(space.profiles)]
    extra = sorted(land.candidates(), key=land.clean_score, reverse=True)[:10]
    best = max(starts + land.candidates(), key=land.clean_score)
    for s in starts + extra:
        if len(seen) >= evals:
            break
        cand = climb(s)
        if score(cand) > score(best):
            best = cand
    while len(seen) < evals:
        if rng.random() < 0.5:
            values = dict(best)
            for _ in range(rng.choice((2, 3))):
                name = rng.choice(space.active(values))
                values[name] = space.knobs[name].mutate(values.get(name, space.knobs[name].default), rng, 0.4)
            start = space.repair(values, rng)
        else:
            start = space.sample(rng)
        cand = climb(start)
        if score(cand) > score(best):
            best = cand
    return best, len(seen)


# ------------------------------------------------------------------ runs (cached)
def _code_version(kind: str) -> str:
    if kind.startswith("nictune"):
        h = hashlib.sha256()
        for folder in ("optimizer", "search_spaces"):
            for path in sorted((ROOT / "nictune" / folder).rglob("*")):
                if path.suffix in (".py", ".yaml"):
                    h.update(path.read_bytes())
        h.update((ROOT / "bench" / "contenders.py").read_bytes())
        return "nictune-" + h.hexdigest()[:12]
    if kind == "optuna":
        import optuna

        return "optuna-" + optuna.__version__
    import smac

    return "smac-" + smac.version


_LANDS: list[Landscape] = []
_OPTIMA: dict[str, Optimum] = {}


def run_task(task: tuple[int, str, int, int]) -> dict[str, Any]:
    """One contender on one landscape with one seed, summarised as regret curves."""
    index, contender, seed, budget = task
    warnings.simplefilter("ignore")  # libraries' warnings (SMAC's numpy, Optuna's experimental)
    land = _LANDS[index]
    opt = _OPTIMA[land.name]
    run = run_contender(land, contender, seed, budget)

    def curve(configs: list[dict[str, Any] | None]) -> list[float]:
        out = []
        for values in configs:
            score = land.clean_score(land.space.configuration(values)) if values is not None else None
            out.append(round(regret(score, opt), 4))
        return out

    best_table = None
    if hasattr(land, "table_best"):
        top = land.table_best()
        best_table = land.goal.score(top[1]).value if top is not None else None
    marks = {}
    for b in BUDGETS:
        if b <= budget and run.recommended[b - 1] is not None:
            values = run.recommended[b - 1]
            assert values is not None
            score = land.clean_score(land.space.configuration(values))
            marks[str(b)] = {"config": values, "value": score.value, "feasible": score.feasible,
                             "of_table_best": (score.value / best_table if best_table and score.feasible
                                               else 0.0) if best_table is not None else None}
    return {"landscape": land.name, "family": land.family, "split": land.split, "contender": contender,
            "seed": seed, "budget": budget, "regret": curve(run.recommended), "found": curve(run.found),
            "marks": marks, "ask_ms": statistics.fmean(run.ask_ms) if run.ask_ms else 0.0,
            "ask_ms_max": max(run.ask_ms, default=0.0), "seconds": run.seconds,
            "configurations": run.configurations}


# ------------------------------------------------------------------ figures
def median_iqr(xs: Sequence[float]) -> tuple[float, float, float]:
    """Median and quartiles (linear interpolation; infinite values sort last)."""
    s = sorted(xs)

    def at(f: float) -> float:
        pos = (len(s) - 1) * f
        lo, hi = math.floor(pos), math.ceil(pos)
        if s[lo] == s[hi]:
            return s[lo]
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return at(0.5), at(0.25), at(0.75)


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share ``hits / n``."""
    if n == 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return (float(ci.low), float(ci.high))


def ranks(runs: list[dict[str, Any]], budget: int) -> dict[str, float]:
    """Mean rank of each contender by regret at ``budget`` (1 = best; ties share the average
    rank), over the (landscape, seed) pairs every contender ran."""
    by: dict[tuple[str, int], dict[str, float]] = {}
    for r in runs:
        by.setdefault((r["landscape"], r["seed"]), {})[r["contender"]] = r["regret"][budget - 1]
    contenders = sorted({r["contender"] for r in runs})
    total = {c: 0.0 for c in contenders}
    count = 0
    for values in by.values():
        if set(values) != set(contenders):
            continue
        count += 1
        ordered = sorted(values.values())
        for c, v in values.items():
            first = ordered.index(v)
            last = len(ordered) - 1 - ordered[::-1].index(v)
            total[c] += (first + last) / 2 + 1
    return {c: total[c] / count for c in contenders} if count else {}


def summarise(runs: list[dict[str, Any]], budgets: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["family"], r["split"], r["contender"]), []).append(r)
    for (fam, split, contender), group in sorted(groups.items()):
        for b in budgets:
            regrets = [r["regret"][b - 1] for r in group]
            med, lo, hi = median_iqr(regrets)
            reach = [next((i + 1 for i, x in enumerate(r["regret"]) if x <= 5.0), math.inf) for r in group]
            rmed, rlo, rhi = median_iqr(reach)
            within2 = sum(x <= 2.0 for x in regrets)
            within5 = sum(x <= 5.0 for x in regrets)
            found5 = sum(r["found"][b - 1] <= 5.0 for r in group)
            row = {"family": fam, "split": split, "contender": contender, "budget": b, "runs": len(group),
                   "median_regret": med, "regret_q1": lo, "regret_q3": hi, "mean_regret": statistics.fmean(regrets),
                   "within2": within2 / len(group), "within5": within5 / len(group),
                   "within5_ci95": wilson(within5, len(group)), "found5": found5 / len(group),
                   "to5_median": rmed, "to5_q1": rlo, "to5_q3": rhi,
                   "ask_ms": statistics.fmean(r["ask_ms"] for r in group),
                   "run_seconds": statistics.fmean(r["seconds"] for r in group)}
            table = [r["marks"].get(str(b), {}).get("of_table_best") for r in group]
            if any(t is not None for t in table):
                row["table_best_95"] = sum(1 for t in table if t is not None and t >= 0.95) / len(group)
            rows.append(row)
    for fam, split in sorted({(r["family"], r["split"]) for r in rows}):
        sub = [r for r in runs if r["family"] == fam and r["split"] == split]
        for b in budgets:
            rk = ranks(sub, b)
            for row in rows:
                if row["family"] == fam and row["split"] == split and row["budget"] == b:
                    row["mean_rank"] = rk.get(row["contender"], math.nan)
    return rows


def _fmt_to5(row: dict[str, Any], budget: int) -> str:
    def f(x: float) -> str:
        return f">{budget}" if math.isinf(x) else f"{x:.0f}"

    return f"{f(row['to5_median'])} [{f(row['to5_q1'])}-{f(row['to5_q3'])}]"


def verdicts(rows: list[dict[str, Any]], default: str = DEFAULT_ENGINE) -> list[str]:
    """Per family, split and budget: the default engine's median regret against the best
    Optuna contender's (the issue's bar: at most 0.7x) and whether its mean rank is the best."""
    out = []
    keys = sorted({(r["family"], r["split"], r["budget"]) for r in rows})
    for fam, split, b in keys:
        group = {r["contender"]: r for r in rows if (r["family"], r["split"], r["budget"]) == (fam, split, b)}
        mine = group.get(default)
        optuna = [group[c] for c in group if c.split(":")[0] in OPTUNA]
        if mine is None or not optuna:
            continue
        best = min(optuna, key=lambda r: r["median_regret"])
        ratio = (mine["median_regret"] / best["median_regret"] if best["median_regret"] > 0
                 else (0.0 if mine["median_regret"] == 0 else math.inf))
        top_rank = min(r["mean_rank"] for r in group.values())
        rank_ok = mine["mean_rank"] <= top_rank + 1e-9
        ok = ratio <= 0.7 + 1e-9 and rank_ok
        out.append(f"{fam:<9} {split:<4} @{b:<3} {default} median regret {mine['median_regret']:.2f} % vs "
                   f"{best['contender']} {best['median_regret']:.2f} % (ratio "
                   f"{'inf' if math.isinf(ratio) else f'{ratio:.2f}'}, bar 0.70); mean rank {mine['mean_rank']:.2f} "
                   f"(best {top_rank:.2f}) -> {'MET' if ok else 'NOT MET'}")
    return out


def print_table(rows: list[dict[str, Any]], budgets: Sequence[int], lands: list[Landscape],
                optima: dict[str, Optimum]) -> str:
    lines = []
    for fam, split in sorted({(r["family"], r["split"]) for r in rows}, key=lambda t: (FAMILIES.index(t[0]), t[1])):
        members = [land for land in lands if land.family == fam and land.split == split]
        lines.append("")
        lines.append(f"== {fam} / {split}: {len(members)} landscapes"
                     + (" (simulated: a model, not hardware)" if fam == "sim" else "")
                     + (" (constructed figures)" if fam == "synthetic" else "")
                     + (" (real veth measurements + a surrogate for unmeasured configurations)"
                        if fam == "table" else ""))
        for b in budgets:
            lines.append(f"  budget {b}: contender   median regret % [IQR]   mean  <=2%  <=5% [95% CI]   "
                         f"found<=5%  to 5% [IQR]   rank  ms/ask"
                         + ("  >=95% table best" if fam == "table" else ""))
            sub = sorted((r for r in rows if (r["family"], r["split"], r["budget"]) == (fam, split, b)),
                         key=lambda r: (r["mean_rank"], r["contender"]))
            for r in sub:
                ci = r["within5_ci95"]
                lines.append(
                    f"    {r['contender']:<22} {r['median_regret']:6.2f} [{r['regret_q1']:5.2f}-{r['regret_q3']:6.2f}]"
                    f" {r['mean_regret']:6.2f} {r['within2']:4.0%} {r['within5']:4.0%} [{ci[0]:.0%}-{ci[1]:.0%}]"
                    f" {r['found5']:9.0%} {_fmt_to5(r, b):>12} {r['mean_rank']:5.2f} {r['ask_ms']:7.1f}"
                    + (f"  {r['table_best_95']:.0%}" if 'table_best_95' in r else ""))
    text = "\n".join(lines)
    print(text)
    return text


def plot(rows_runs: list[dict[str, Any]], out: Path, budget: int) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for fam, split in sorted({(r["family"], r["split"]) for r in rows_runs}):
        fig, ax = plt.subplots(figsize=(8, 5))
        sub = [r for r in rows_runs if r["family"] == fam and r["split"] == split]
        for contender in sorted({r["contender"] for r in sub}):
            curves = [r["regret"] for r in sub if r["contender"] == contender]
            xs = list(range(1, budget + 1))
            med = [median_iqr([c[i] for c in curves])[0] for i in range(budget)]
            ax.plot(xs, med, label=contender, lw=2.2 if contender == DEFAULT_ENGINE else 1.2)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel("measurements (repeats and final race included)")
        ax.set_ylabel("median simple regret of the recommendation, % of the optimum")
        label = {"sim": "simulated testbeds (a model)", "synthetic": "constructed landscapes",
                 "table": "real veth table + surrogate"}[fam]
        ax.set_title(f"{fam} / {split}: {label}")
        ax.legend(fontsize=8)
        path = out / f"regret-{fam}-{split}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def write_csv(rows: list[dict[str, Any]], runs: list[dict[str, Any]], out: Path) -> None:
    keys = list(rows[0])
    with (out / "summary.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    with (out / "runs.csv").open("w", newline="") as fh:
        w2 = csv.writer(fh)
        w2.writerow(["landscape", "family", "split", "contender", "seed", *[f"regret@{b}" for b in BUDGETS]])
        for r in sorted(runs, key=lambda r: (r["landscape"], r["contender"], r["seed"])):
            w2.writerow([r["landscape"], r["family"], r["split"], r["contender"], r["seed"],
                         *[r["regret"][b - 1] if b <= len(r["regret"]) else "" for b in BUDGETS]])


# ------------------------------------------------------------------ main
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"comma-separated, of: {', '.join(FAMILIES)}")
    ap.add_argument("--split", default="all", choices=("dev", "test", "all"))
    ap.add_argument("--contenders", default=",".join(DEFAULT_CONTENDERS),
                    help="comma-separated; an engine may carry parameters: 'bayes:n_init=8' (use ';' between "
                         "contenders then)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per landscape (default: table 100, others 5)")
    ap.add_argument("--budget", type=int, default=max(BUDGETS))
    ap.add_argument("--optimum-evals", type=int, default=30_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--quick", action="store_true", help="2 landscapes per family, 2 seeds, budget 20")
    ap.add_argument("--landscapes", default=None, help="only these landscape names (comma-separated)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds = min(args.seeds or 2, 2)
        args.budget = min(args.budget, 20)
        args.optimum_evals = min(args.optimum_evals, 2000)
    families = [f for f in args.families.split(",") if f]
    for f in families:
        if f not in FAMILIES:
            ap.error(f"unknown family {f!r}; known: {', '.join(FAMILIES)}")
    sep = ";" if ";" in args.contenders else ","
    contenders = [c for c in args.contenders.split(sep) if c]
    for c in contenders:
        try:
            parse_contender(c)
        except ValueError as exc:
            ap.error(str(exc))
    skipped = {c: why for c in contenders if (why := available(c))}
    contenders = [c for c in contenders if c not in skipped]
    budgets = [b for b in BUDGETS if b <= args.budget] or [args.budget]
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    print(f"# python bench/engines.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    for c, why in skipped.items():
        print(f"# skipped {c}: {why}")

    lands = landscapes(families, args.split, args.quick)
    if args.landscapes:
        wanted = set(args.landscapes.split(","))
        lands = [land for land in lands if land.name in wanted]
    if not lands:
        print("# no landscapes (the table family needs bench/data/veth: bench/collect_veth.py)")
        return 1
    global _LANDS
    _LANDS = lands
    # Optima (cached by the landscape's definition).
    cache_path = args.out / "optima.json"
    cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    todo = [i for i, land in enumerate(lands) if cache.get(land.name, {}).get("key") != land.key()
            or cache[land.name].get("evals", 0) < args.optimum_evals]
    ctx = multiprocessing.get_context("fork")
    if todo:
        print(f"# computing the optima of {len(todo)} landscapes")
        with ctx.Pool(args.workers) as pool:
            found = pool.map(_optimum_task, [(i, args.optimum_evals) for i in todo])
        for i, opt in zip(todo, found, strict=True):
            cache[lands[i].name] = {"key": lands[i].key(), "evals": args.optimum_evals, **opt.__dict__}
        cache_path.write_text(json.dumps(cache, indent=1, default=str))
    for land in lands:
        entry = {k: v for k, v in cache[land.name].items() if k not in ("key", "evals")}
        _OPTIMA[land.name] = Optimum(**entry)

    # Runs (cached by landscape key, contender, seed, budget, code version).
    runs_path = args.out / "runs.jsonl"
    stored: dict[str, dict[str, Any]] = {}
    if runs_path.exists():
        for line in runs_path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                stored[rec["cache_key"]] = rec
    versions = {c: _code_version(parse_contender(c)[0]) for c in contenders}
    tasks, keys, results = [], [], []
    for i, land in enumerate(lands):
        seeds = args.seeds if args.seeds is not None else SEEDS[land.family]
        for c in contenders:
            for seed in range(seeds):
                key = f"{land.key()}|{c}|{seed}|{args.budget}|{versions[c]}"
                if key in stored:
                    results.append(stored[key])
                else:
                    tasks.append((i, c, seed, args.budget))
                    keys.append(key)
    print(f"# {len(lands)} landscapes, {len(contenders)} contenders, budget {args.budget}: "
          f"{len(results)} runs cached, {len(tasks)} to run on {args.workers} workers")
    if tasks:
        with ctx.Pool(args.workers) as pool, runs_path.open("a") as fh:
            order = sorted(range(len(tasks)), key=lambda j: (tasks[j][1].startswith(("optuna-gp", "smac")), j))
            for done, (j, rec) in enumerate(zip(order, pool.imap(run_task, [tasks[j] for j in order], chunksize=1),
                                                strict=True), start=1):
                rec["cache_key"] = keys[j]
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                results.append(rec)
                if done % max(1, len(tasks) // 20) == 0:
                    print(f"#   {done}/{len(tasks)} runs, {time.time() - started:.0f} s", flush=True)
    for land in lands:
        opt = _OPTIMA[land.name]
        feas = f", {opt.feasible_share:.0%} of the space feasible" if opt.feasible_share is not None else ""
        print(f"# {land.name} [{land.split}] {land.description}: optimum {abs(opt.value):.4g} ({opt.method}{feas})")
    rows = summarise(results, budgets)
    table = print_table(rows, budgets, lands, _OPTIMA)
    print()
    lines = verdicts(rows)
    for line in lines:
        print(f"# {line}")
    write_csv(rows, results, args.out)
    pngs = plot(results, args.out, args.budget)
    (args.out / "table.txt").write_text(table + "\n\n" + "\n".join(lines) + "\n")
    print(f"# wrote summary.csv, runs.csv, table.txt and {len(pngs)} plots in {args.out}")
    print(f"# finished in {time.time() - started:.0f} s")
    return 0


def _optimum_task(task: tuple[int, int]) -> Optimum:
    index, evals = task
    return find_optimum(_LANDS[index], evals)


if __name__ == "__main__":
    raise SystemExit(main())
