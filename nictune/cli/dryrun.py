"""Printing a dry run (``measure --dry-run``, ``optimize --dry-run``) as text grouped by host."""

from __future__ import annotations

import shlex

from rich.text import Text

from nictune.cli._common import console
from nictune.measure.planning import PlannedCommand
from nictune.measure.trial.dryrun import DryRun, TrialPlan, is_write, scope

#: Sections of one host, in the order a trial runs them (verify reads are summarised).
_SECTIONS = (("snapshot", "snapshot reads (run now: they change nothing)"), ("apply", "apply"),
             ("check", "reachability check"), ("benchmark", "benchmark"), ("restore", "restore"))


def describe(cmd: PlannedCommand) -> str:
    """One command as the user reads it: the argv started on this machine, or the file nictune
    reads or writes itself."""
    if cmd.action == "read" and not cmd.argv:
        return f"read {cmd.path}  (on {cmd.host})"
    if cmd.action == "write" and cmd.executed is None:
        return f"write {(cmd.text or '').strip()!r} to {cmd.path}  (on {cmd.host}, by nictune itself: no command)"
    line = shlex.join(cmd.executed if cmd.executed is not None else cmd.argv)
    if cmd.action == "start":
        line += "  (in the background)"
    if cmd.text is not None:
        line += f"  <<< {cmd.text.strip()!r}"
    return line


def _shown(plan: TrialPlan) -> list[PlannedCommand]:
    return [c for c in plan.commands if c.phase == "snapshot" or (is_write(c) and c.phase != "verify")]


def print_dry_run(run: DryRun) -> None:
    """The dry run as text: notes, testbed setup, then per configuration and host the snapshot
    reads, apply, check, benchmark and restore commands, numbered in the order they run."""
    done = "" if run.simulated else "; only read-only commands (marked reads) were run"
    console.print(Text.assemble(("DRY RUN", "bold"), f" on {run.testbed}: nothing is changed and nothing is "
                                f"measured{done}."))
    for note in run.notes:
        console.print(f"note: {note}")
    if run.setup:
        console.print(Text("testbed setup (not run):", style="bold"))
        for cmd in run.setup:
            console.print(f"  {cmd.host}: {describe(cmd)}")
    for i, plan in enumerate(run.trials, 1):
        _print_trial(i, len(run.trials), plan, run.simulated)
    if run.teardown:
        console.print(Text("testbed teardown (not run):", style="bold"))
        for cmd in run.teardown:
            console.print(f"  {cmd.host}: {describe(cmd)}")


def _print_trial(i: int, total: int, plan: TrialPlan, simulated: bool) -> None:
    console.print(Text(f"configuration {i}/{total}: {plan.label}", style="bold"))
    if plan.config:
        console.print("  knobs: " + ", ".join(f"{k}={v}" for k, v in plan.config.items()))
    for s in plan.settings:
        target = s["target"] + (f"[{s['index']}]" if s["index"] is not None else "")
        where = f" on {s['device']}" if s["device"] else ""
        model = "" if "modelled" not in s else ("  (modelled)" if s["modelled"] else "  (not in the model)")
        console.print(f"  setting {s['family']} {target}{where} = {s['value']}{model}")
    if simulated or not plan.commands:
        return
    shown = _shown(plan)
    number = {id(c): n for n, c in enumerate(shown, 1)}
    for side in ("sender", "receiver"):
        console.print(Text(f"  {side}: {plan.hosts.get(side, '')}", style="bold"))
        for phase, title in _SECTIONS:
            mine = [c for c in shown if c.side == side and c.phase == phase]
            if phase == "benchmark":
                title += f" (x{plan.repeats}; each run also checks its ports are free and reads counters around iperf3)"
            console.print(f"    {title}:" + ("" if mine else " nothing"))
            for cmd in mine:
                wide, what = scope(cmd)
                if not is_write(cmd):
                    mark = "  [machine-wide setting]" if wide else ""
                else:
                    mark = f"  [MACHINE-WIDE: {what}]" if wide else (f"  [{what}]" if what else "")
                console.print(f"      {number[id(cmd)]:>3}. {describe(cmd)}{mark}", soft_wrap=True)
    verify = sum(1 for c in plan.commands if c.phase == "verify" and c.action == "read")
    console.print(f"  verify: every applied value is read back ({verify} reads) before the benchmark")
    machine = sorted({scope(c)[1] for c in plan.commands if is_write(c) and scope(c)[0]})
    console.print("  machine-wide changes: " + ("; ".join(machine) if machine else "none"))
    for problem in plan.problems:
        console.print(f"  restore problem foreseen: {problem}")
