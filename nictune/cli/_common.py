"""What every CLI command shares: consoles, output helpers and input parsing."""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Literal

import typer
from rich.console import Console
from rich.text import Text

from nictune.errors import InvalidInputError
from nictune.formatting import format_number
from nictune.measure import METRICS, Testbed
from nictune.settings import CliSettings

# No console markup: what nictune prints holds user input, host output and error texts, where
# "[/etc]" or "[bold]" are text (as markup, one was dropped and the other crashed the CLI).
# Styles go through ``style=`` or :class:`rich.text.Text`.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False)


#: How a command shows its progress: a live display (stdout is a terminal), one plain line per
#: step (it is not: a pipe, a CI log, systemd), nothing (``--quiet``), or nothing but one JSON
#: document at the end (``--json``).
OutputMode = Literal["live", "lines", "quiet", "json"]


def from_settings(field: str) -> Callable[[str | None], str | None]:
    """The callback of an option the environment can set: the value given on the command
    line, else :class:`~nictune.settings.CliSettings`' ``field`` (``server`` is
    ``$NICTUNE_SERVER``), read when the command runs. The option keeps its parameter source
    (default, not command line: :func:`on_command_line` still tells them apart)."""

    def fill(value: str | None) -> str | None:
        return value if value is not None else getattr(CliSettings(), field)

    return fill


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="Print only the result: no progress display or lines.")


def output_mode(*, quiet: bool = False, json_out: bool = False) -> OutputMode:
    """The :data:`OutputMode` of a command run now (``--json`` wins over ``--quiet``)."""
    if json_out:
        return "json"
    if quiet:
        return "quiet"
    return "live" if console.is_terminal else "lines"


def plain_line(text: str) -> None:
    """``text`` as one line on stdout, unstyled and unwrapped, flushed at once (a ``tee``
    or a log follower sees it now, not when a buffer fills).

    Raises:
        KeyboardInterrupt: whoever read stdout is gone (``| head``, a killed ``tee``): the
            command stops as after Ctrl-C (a job ends interrupted, resumable, and says so on
            stderr), and nothing more is written to the closed pipe.
    """
    try:
        print(text, file=sys.stdout, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush must not fail too
        raise KeyboardInterrupt from None


def print_error(text: str) -> None:
    """``error: TEXT`` on stderr in one line, however wide the terminal (or none)."""
    err_console.print(Text.assemble(("error:", "red"), f" {text}"), highlight=False, soft_wrap=True)


class LogLevel(StrEnum):
    """``--log-level`` of the long-running commands."""

    critical = "critical"
    error = "error"
    warning = "warning"
    info = "info"
    debug = "debug"


SIM_NOTE = "simulated testbed: figures come from a model of the seed papers, not from hardware"


def parse_assignments(items: Sequence[str], option: str = "--set", example: str = "KNOB=VALUE, e.g. mtu=9000",
                      ) -> dict[str, str]:
    """``["mtu=9000", "rx_mode=timer"]`` -> ``{"mtu": "9000", "rx_mode": "timer"}``.

    ``example``: the form and an example, as the error message gives them.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            form, _, sample = example.partition(", e.g. ")
            raise InvalidInputError(
                f"{option} {item!r}: expected {form}" + (f", e.g. {option} {sample}" if sample else ""),
                field=option, allowed=form,
            )
        name = name.strip()
        if name in out:  # the last would win silently, while the output names both
            raise InvalidInputError(f"{option} {name} given twice ({out[name]!r} and {value.strip()!r})",
                                    field=option, allowed=f"one {option} per name")
        out[name] = value.strip()
    return out


def testbed_label(testbed: Testbed) -> str:
    return f"{testbed.name} ({SIM_NOTE})" if testbed.simulated else testbed.name


def summarise(samples: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, min, max and standard deviation of every metric over repeats."""
    out: dict[str, dict[str, float]] = {}
    for name in METRICS:
        values = [s[name] for s in samples if name in s]
        if not values:
            continue
        out[name] = {
            "mean": statistics.fmean(values),
            "min": min(values),
            "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
    return out


def fmt(value: float) -> str:
    """A metric value with sensible precision."""
    return format_number(value)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False, default=str))


def on_command_line(ctx: typer.Context, name: str | None) -> bool:
    """Whether option ``name`` was given on the command line (not by default or environment).

    Compared by name: Typer vendors click, so click's own ``ParameterSource`` is another enum.
    """
    source = ctx.get_parameter_source(name or "")
    return source is not None and source.name == "COMMANDLINE"
