"""The dry run: what a trial would run on each host, found by running the trial's own code on
:class:`~nictune.measure.planning.PlanningHost` s (reads happen, nothing else does).

:func:`plan_trial` takes the same steps as :meth:`Trial.run
<nictune.measure.trial.transaction.Trial.run>` (validation, :func:`plan`, snapshot, apply, verify,
reachability, the iperf3 and sockperf argv, restore) without its locks and its journal, so the commands
it returns are the ones a real trial then executes, with the values read now.

Its result types (:class:`DryRun`, :class:`TrialPlan`) live in :mod:`nictune.measure.planning`,
next to the planned commands, so that the Testbed interface names them without importing the
planner (which imports the trial); they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from nictune.measure._base import Workload
from nictune.measure.appliers import applier_for, validate_settings
from nictune.measure.benchmarks.benchmark import Endpoints
from nictune.measure.benchmarks.busy import busy_commands
from nictune.measure.benchmarks.iperf3 import benchmark_argvs as iperf3_argvs
from nictune.measure.benchmarks.sockperf import benchmark_argvs as sockperf_argvs
from nictune.measure.hosts import Host, NetnsHost
from nictune.measure.planning import (
    PHASES,
    DryRun,
    PlannedCommand,
    PlannedState,
    PlanningHost,
    TrialPlan,
    command_dict,
    is_write,
    scope,
)
from nictune.measure.trial.journal import Journal
from nictune.measure.trial.transaction import Trial, pinning, plan
from nictune.measure.validation import parse_cpu_list
from nictune.search_spaces import Setting


def setting_dict(s: Setting) -> dict[str, Any]:
    """A validated setting as plain data (its value as the applier writes it)."""
    value = applier_for(s.family).normalize(s)
    return {"family": s.family.value, "target": s.target, "index": s.index, "device": s.device,
            "value": list(value) if isinstance(value, tuple) else value}


def planned_commands(phase: str, commands: Sequence[tuple[Host, list[str]]], side: str = "") -> list[PlannedCommand]:
    """Commands a testbed would run outside a trial (creating a veth pair), none of them run."""
    return [PlannedCommand(phase, side, host.name, "run", list(argv), host.local_argv(argv),
                           namespace=isinstance(host, NetnsHost), machine=host.machine)
            for host, argv in commands]


def benchmark_commands(ends: Endpoints, workload: Workload, sender_cpus: str | None,
                       receiver_cpus: str | None) -> list[tuple[list[str], list[str]]]:
    """``(server argv, client argv)`` of each benchmark of one repeat, in the order
    :func:`~nictune.measure.trial.transaction.run_workload` runs them: iperf3, then sockperf."""
    out = []
    if workload.throughput:
        out.append(iperf3_argvs(ends, workload, sender_cpus, receiver_cpus)[:2])
    if workload.latency is not None:
        out.append(sockperf_argvs(ends, workload.latency, sender_cpus, receiver_cpus)[:2])
    return out


def plan_trial(ends: Endpoints, settings: Sequence[Setting], workload: Workload, repeats: int,
               label: str = "") -> TrialPlan:
    """Everything :class:`~nictune.measure.trial.transaction.Trial` would do for ``settings`` on
    ``ends``, found by running its steps on planning hosts: reads run, nothing else does.

    Raises:
        InvalidInputError: a setting failed validation (as it would in a real trial).
        MeasurementError: a read failed (a device missing ...), as the real trial would.
    """
    checked = validate_settings(settings)
    state = PlannedState()
    tx, rx = PlanningHost(ends.sender, state, "sender"), PlanningHost(ends.receiver, state, "receiver")
    planned = replace(ends, sender=tx, receiver=rx)
    steps = plan(checked, planned)
    # The journal is never written: only the steps' snapshots, apply and restore are used.
    trial = Trial(planned, Journal("dry-run"))
    entries: list[dict[str, Any]] = []
    trial.snapshot_steps(steps, entries)
    state.phase = "apply"
    trial.apply_steps(steps)
    state.phase = "verify"
    trial.verify_steps(steps)
    for cmd in state.commands:
        if cmd.phase == "verify" and cmd.action == "run":  # the reachability ping
            cmd.phase = "check"
    state.phase = "benchmark"
    tx_cpus, rx_cpus = pinning(checked, planned)
    if workload.scenario == "busy":
        pinned = parse_cpu_list(tx_cpus or "") + parse_cpu_list(rx_cpus or "")
        for host, argv in busy_commands([tx, rx], exclude=pinned):
            assert isinstance(host, PlanningHost)
            host.plan_start(argv)
    for server, client in benchmark_commands(planned, workload, tx_cpus, rx_cpus):
        rx.plan_start(server)
        tx.record("run", tx, client, executed=tx.local_argv(client))
    state.phase = "restore"
    problems = trial.restore_steps(steps, entries)
    return TrialPlan(label, [setting_dict(s) for s in checked], {"sender": ends.sender.name,
                     "receiver": ends.receiver.name}, state.commands, max(1, repeats), problems)


def journal_notes(journal: Journal) -> list[str]:
    """What a dry run says about a journal a crashed run left (a real run restores it first)."""
    if not journal.exists():
        return []
    return [f"a crashed run left settings to restore on {journal.testbed} (journal {journal.path}): a real run "
            "restores them before anything else; the dry run leaves them as they are"]


__all__ = ["PHASES", "DryRun", "TrialPlan", "command_dict", "is_write", "journal_notes", "plan_trial",
           "planned_commands", "scope", "setting_dict"]
