"""``nictune workloads``: list the built-in workloads, show one (or a workload file) with the
commands it leads to."""

from __future__ import annotations

from typing import Any

import typer
import yaml
from rich.table import Table
from rich.text import Text

from nictune.cli._common import console, print_json
from nictune.cli.workload_options import (
    BIDIR_OPTION,
    BITRATE_OPTION,
    LENGTH_OPTION,
    MSG_SIZE_OPTION,
    OMIT_OPTION,
    RATE_OPTION,
    REVERSE_OPTION,
    STREAMS_OPTION,
    workload_options,
)
from nictune.measure import LatencyProbe, Workload
from nictune.measure.benchmarks import sockperf
from nictune.measure.benchmarks.iperf3 import iperf3_commands
from nictune.measure.benchmarks.workload_spec import definition_of, format_bitrate
from nictune.measure.benchmarks.workloads import BUILTINS, resolve_entry

#: The port ``show`` prints for sockperf: a testbed's default (iperf3's 5201 + 1).
SHOWN_SOCKPERF_PORT = 5202

app = typer.Typer(help="List the built-in workloads (what the benchmarks send) and show one, or a workload file.",
                  no_args_is_help=True)


def _throughput_text(wl: Workload) -> str:
    parts = [f"iperf3 {wl.protocol.upper()}", f"{wl.streams} stream{'s' if wl.streams > 1 else ''}"]
    if wl.length is not None:
        parts.append(f"{wl.length} B " + ("datagrams" if wl.protocol == "udp" else "writes"))
    if wl.bitrate_gbps:
        parts.append(f"-b {format_bitrate(wl.bitrate_gbps)} per stream")
    elif wl.protocol == "udp":
        parts.append("full rate")
    if wl.reverse:
        parts.append("reverse")
    if wl.bidir:
        parts.append("both directions")
    return ", ".join(parts)


def _latency_text(p: LatencyProbe) -> str:
    rate = f", {p.rate_mps:,} msg/s" if p.rate_mps else ""
    return f"sockperf {p.mode} {p.protocol.upper()}, {p.msg_size} B{rate}, round trip"


def runs_text(wl: Workload) -> str:
    """What a run of ``wl`` runs, in a line."""
    parts = [_throughput_text(wl)] if wl.throughput else []
    if wl.latency is not None:
        parts.append(_latency_text(wl.latency))
    return ", then ".join(parts)


@app.command("list")
def list_workloads(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the built-in workloads: name, what they run, description."""
    rows: list[dict[str, Any]] = [{"name": name, "runs": runs_text(e.workload), "description": e.description,
             "definition": definition_of(e.workload)} for name, e in BUILTINS.items()]
    if json_out:
        print_json(rows)
        return
    table = Table(title="Built-in workloads")
    for col in ("name", "runs", "description"):
        table.add_column(col, overflow="fold", no_wrap=col == "name")
    for r in rows:
        table.add_row(r["name"], r["runs"], r["description"])
    console.print(table)
    console.print(Text.assemble("Show one with ", ("nictune workloads show NAME", "bold"),
                                "; write your own as a YAML file (the form 'show' prints) and pass --workload FILE; "
                                "change one with --streams, --length, --bitrate ... on measure and optimize."))


@app.command("show")
def show(
    workload: str = typer.Argument(..., metavar="NAME|FILE", help="A built-in workload or a workload YAML file."),
    streams: int | None = STREAMS_OPTION,
    length: int | None = LENGTH_OPTION,
    bitrate: str | None = BITRATE_OPTION,
    reverse: bool = REVERSE_OPTION,
    bidir: bool = BIDIR_OPTION,
    omit: float | None = OMIT_OPTION,
    duration: float | None = typer.Option(None, "--duration", help="Seconds per run, 1..3600."),
    scenario: str | None = typer.Option(None, "--scenario", help="idle, or busy."),
    msg_size: int | None = MSG_SIZE_OPTION,
    rate: int | None = RATE_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show a workload's full definition (a workload file's form) and the commands it leads to
    (iperf3 and sockperf, RECEIVER standing for the receiver's address, default ports); options
    change it as on measure and optimize."""
    options = workload_options(streams=streams, length=length, bitrate=bitrate, reverse=reverse, bidir=bidir,
                               omit=omit, msg_size=msg_size, rate=rate)
    entry = resolve_entry(workload, {**options, "duration": duration, "scenario": scenario})
    wl = entry.workload
    commands: dict[str, Any] = {}
    if wl.throughput:
        server, client, timeout = iperf3_commands(wl)
        commands["iperf3"] = {"server": server, "client": client, "timeout_s": timeout}
    if wl.latency is not None:
        # The commands a testbed runs (sockperf's default port: iperf3's + 1), from the same builders.
        commands["sockperf"] = {"server": sockperf.server_argv("RECEIVER", SHOWN_SOCKPERF_PORT, wl.latency.protocol),
                                "client": sockperf.client_argv(wl.latency, "RECEIVER", SHOWN_SOCKPERF_PORT)}
    info = {"name": wl.name, "source": entry.source, "runs": runs_text(wl), "measures": list(wl.measures()),
            "definition": definition_of(wl, entry.description), "cache_key": wl.key(), "commands": commands}
    if json_out:
        print_json(info)
        return
    console.print(Text.assemble((wl.name, "bold"), f" ({entry.source}): {runs_text(wl)}"))
    console.print("definition (a workload file holds this):")
    # Unwrapped: what is printed here is a workload file to copy.
    print(yaml.safe_dump(info["definition"], sort_keys=False, allow_unicode=True, width=1000), end="", flush=True)
    for tool, argvs in commands.items():
        console.print(f"{tool} on the receiver: {' '.join(argvs['server'])}")
        console.print(f"{tool} on the sender:   {' '.join(argvs['client'])}")
    console.print("metrics: " + ", ".join(wl.measures()))
