"""The options that change a workload, shared by ``nictune measure`` and ``nictune optimize``.

Each changes one field of the workload ``--workload`` names (built-in or file); the changed
workload is checked as a whole by :mod:`nictune.measure.benchmarks.workload_spec` (exit 2 naming the
field), and a change of its traffic shows in its name (``tcp(-P 4 -l 1400 -b 5G)``).
"""

from __future__ import annotations

from typing import Any

import typer

from nictune.measure.benchmarks.workload_spec import (
    MAX_STREAMS,
    MSG_SIZE,
    RATE_MPS,
    TCP_LENGTH,
    UDP_LENGTH,
    definition_of,
)
from nictune.measure.benchmarks.workloads import BUILTIN_NAMES, is_file_reference, load_workload_file

WORKLOAD_HELP = (f"A built-in workload ({', '.join(BUILTIN_NAMES)}) or a workload YAML file "
                 "(see nictune workloads list / show).")

STREAMS_OPTION = typer.Option(None, "--streams", "-P", metavar="N",
                              help=f"Parallel streams (iperf3 -P), 1..{MAX_STREAMS}.")
LENGTH_OPTION = typer.Option(
    None, "--length", "-l", metavar="BYTES",
    help=f"Bytes per write (TCP, {TCP_LENGTH[0]}..{TCP_LENGTH[1]}) or per datagram (UDP, "
         f"{UDP_LENGTH[0]}..{UDP_LENGTH[1]}) (iperf3 -l).")
BITRATE_HELP = ("Target rate of each stream (iperf3 -b), TCP or UDP: 5G, 800M, 100K, or a number of Gbit/s; "
                "above 0 and at most 1000 Gbit/s.")
#: ``nictune optimize`` keeps -b for --budget: there the bitrate has only its long name.
BITRATE_OPTION = typer.Option(None, "--bitrate", "-b", metavar="RATE", help=BITRATE_HELP)
BITRATE_LONG_OPTION = typer.Option(None, "--bitrate", metavar="RATE",
                                   help=BITRATE_HELP + " (-b is --budget here.)")
REVERSE_OPTION = typer.Option(False, "--reverse", "-R",
                              help="The receiver sends, the sender receives (iperf3 -R); counters are read on the "
                                   "host that receives.")
BIDIR_OPTION = typer.Option(False, "--bidir",
                            help="Both ends send at once (iperf3 --bidir): throughput is both directions' sum. Not "
                                 "on a simulated testbed.")
OMIT_OPTION = typer.Option(None, "--omit", metavar="SECONDS",
                           help="Warm-up seconds left out of the figures (iperf3 -O), 0..60 (default 1).")
MSG_SIZE_OPTION = typer.Option(
    None, "--msg-size", metavar="BYTES",
    help=f"Bytes per sockperf request of the workload's latency part (sockperf -m), {MSG_SIZE[0]}..{MSG_SIZE[1]}.")
RATE_OPTION = typer.Option(
    None, "--rate", metavar="MPS",
    help=f"Messages per second of the latency part (sockperf --mps), {RATE_MPS[0]}..{RATE_MPS[1]:,}.")


def workload_options(*, streams: int | None, length: int | None, bitrate: str | None, reverse: bool,
                     bidir: bool, omit: float | None, msg_size: int | None, rate: int | None) -> dict[str, Any]:
    """The options given (a flag left off changes nothing, so a file's ``reverse: true`` stays)."""
    given: dict[str, Any] = {"streams": streams, "length": length, "bitrate": bitrate,
                             "reverse": True if reverse else None, "bidir": True if bidir else None, "omit": omit,
                             "msg_size": msg_size, "rate": rate}
    return {k: v for k, v in given.items() if v is not None}


def remote_workload(workload: str) -> str | dict[str, Any]:
    """``--workload`` for the service: a built-in name as it is, a file as its definition
    (the service reads no files of its clients), checked here first."""
    if not is_file_reference(workload):
        return workload
    entry = load_workload_file(workload)
    return definition_of(entry.workload, entry.description)
