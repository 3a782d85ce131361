"""``nictune measure``: the metrics of one configuration on a testbed."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from nictune.cli._common import (
    console,
    err_console,
    fmt,
    parse_assignments,
    print_json,
    summarise,
    testbed_label,
)
from nictune.cli.dryrun import print_dry_run
from nictune.cli.workload_options import (
    BIDIR_OPTION,
    BITRATE_OPTION,
    LENGTH_OPTION,
    MSG_SIZE_OPTION,
    OMIT_OPTION,
    RATE_OPTION,
    REVERSE_OPTION,
    STREAMS_OPTION,
    WORKLOAD_HELP,
    workload_options,
)
from nictune.measure import ignored_knobs_notice
from nictune.measure.appliers.registry import load_checked_space
from nictune.measure.benchmarks.workloads import resolve_workload
from nictune.measure.steadiness import unsteady_runs
from nictune.measure.testbeds import DEFAULT_TESTBED, open_testbed
from nictune.metrics import METRICS, heading


def measure(
    testbed: str = typer.Option(DEFAULT_TESTBED, "--testbed", "-t",
                                help="sim:PROFILE, veth[:NAME] or a pair YAML file."),
    workload: str = typer.Option("tcp", "--workload", "-w", help=WORKLOAD_HELP),
    set_: list[str] = typer.Option([], "--set", "-s", metavar="KNOB=VALUE",
                                   help="Change one knob from the base configuration (repeatable)."),
    profile: str = typer.Option("default", "--profile", "-p",
                                help="Base configuration: 'default' (untuned) or a profile of the space."),
    space: str | None = typer.Option(None, "--space", help="Space name or YAML file (default: the testbed's)."),
    repeats: int = typer.Option(3, "--repeats", "-r", min=1, max=100, help="Benchmark runs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulated measurement noise."),
    noise: float | None = typer.Option(
        None, "--noise", help="Simulated noise (coefficient of variation); 0 = noise-free."),
    scenario: str = typer.Option("idle", "--scenario", help="idle, or busy (busy loops on the other cores)."),
    duration: float | None = typer.Option(None, "--duration", help="Seconds per run, 1..3600."),
    streams: int | None = STREAMS_OPTION,
    length: int | None = LENGTH_OPTION,
    bitrate: str | None = BITRATE_OPTION,
    reverse: bool = REVERSE_OPTION,
    bidir: bool = BIDIR_OPTION,
    omit: float | None = OMIT_OPTION,
    msg_size: int | None = MSG_SIZE_OPTION,
    rate: int | None = RATE_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print what would run on each host (reads, apply, benchmark, restore); "
                                      "change nothing and run no benchmark."),
) -> None:
    """Measure one configuration: the base configuration with the --set changes.

    The workload is a built-in one or a file (--workload); --streams, --length, --bitrate,
    --reverse, --bidir, --omit, --duration, --scenario, --msg-size and --rate change its fields.
    """
    options = workload_options(streams=streams, length=length, bitrate=bitrate, reverse=reverse, bidir=bidir,
                               omit=omit, msg_size=msg_size, rate=rate)
    wl = resolve_workload(workload, {**options, "scenario": scenario, "duration": duration})
    try:
        with open_testbed(testbed, noise=noise, recover_journal=not dry_run) as bed:
            for notice in bed.notices:
                err_console.print(notice)
            sp, _ = load_checked_space(space or bed.default_space())
            config = sp.configuration(parse_assignments(set_), base=profile)
            defaults = sp.default()
            ignored = [k for k in bed.ignored_knobs(sp) if config.get(k) != defaults.get(k)]
            if ignored:
                err_console.print(ignored_knobs_notice(bed.name, sp.name, ignored))
            if dry_run:
                label = profile + (f" + {', '.join(set_)}" if set_ else "")
                plan = bed.dry_run([(label, sp.settings(config))], wl, repeats)
                plan.trials[0].config = config.as_dict()
                if json_out:
                    print_json(plan.as_dict())
                else:
                    print_dry_run(plan)
                return
            result = bed.measure(sp.settings(config), wl, repeats, seed)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (a trial restores the hosts before it lets go)
        err_console.print("interrupted: nothing was measured")
        raise typer.Exit(130) from None
    samples = [s.metrics for s in result.samples]
    stats = summarise(samples)
    unsteady = unsteady_runs(samples)
    warnings = [unsteady.text(simulated=bed.simulated)] if unsteady is not None else []
    if json_out:
        print_json({
            "testbed": bed.name,
            "simulated": bed.simulated,
            "note": result.notes,
            "workload": wl.key(),
            "space": sp.name,
            "config": config.as_dict(),
            "config_hash": config.hash,
            "metrics": {k: v["mean"] for k, v in stats.items()},
            "spread": stats,
            "repeats": samples,
            "warnings": warnings,
        })
        return
    console.print(Text.assemble("testbed: ", (testbed_label(bed), "bold")))
    console.print(f"workload: {wl.name} ({wl.scenario}), {repeats} run{'s' if repeats != 1 else ''}; space {sp.name}; "
                  f"configuration {config.short_hash} ({profile}"
                  + (f" + {', '.join(set_)}" if set_ else "") + ")")
    table = Table(title="metrics" + (" (simulated)" if bed.simulated else ""))
    for col in ("metric", "mean", "min", "max", "meaning"):
        table.add_column(col, justify="right" if col in ("mean", "min", "max") else "left")
    for name, st in stats.items():
        table.add_row(heading(name), fmt(st["mean"]), fmt(st["min"]), fmt(st["max"]), METRICS.get(name, ""))
    console.print(table)
    for warning in warnings:
        err_console.print(f"warning: {warning}")
