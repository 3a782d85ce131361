"""The ``nictune`` command: entry point, sub-commands and the mapping of errors to exit codes.

Exit codes: 0 success, 1 a failure while working (a measurement, the database), 2 bad
input (unknown name, invalid value, malformed file), 130 interrupted.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

import typer

from nictune import __version__
from nictune.cli import measure as measure_cmd
from nictune.cli import spaces, workloads
from nictune.cli._common import err_console, print_error
from nictune.errors import InvalidInputError, NictuneError

app = typer.Typer(
    name="nictune",
    help=(
        "Find the NIC and network-stack settings that make a pair of Linux hosts move data "
        "fastest, by measuring configurations proposed by an optimizer."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(spaces.app, name="spaces")
app.add_typer(workloads.app, name="workloads")
app.command("measure")(measure_cmd.measure)


def _version(value: bool) -> None:
    if value:
        print(f"nictune {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """nictune: measure and tune NIC and network-stack settings."""


def _register_optional() -> None:
    """Sub-commands whose modules land separately (optimizer, database, testbeds)."""
    import importlib

    for module, name in (("nictune.cli.optimize", None), ("nictune.cli.history", "history"),
                         ("nictune.cli.testbed", "testbed"), ("nictune.cli.report", None),
                         ("nictune.cli.export", None), ("nictune.cli.apply", None), ("nictune.cli.serve", None),
                         ("nictune.cli.token", "token"), ("nictune.cli.db", "db"),
                         ("nictune.cli.worker", None), ("nictune.cli.engines", "engines")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        mod.register(app) if hasattr(mod, "register") else app.add_typer(mod.app, name=name)


_register_optional()

#: Integers up to this are "any"; their range in --help is noise ([1<=x<=2147483647]).
_UNBOUNDED = 2**31 - 1


def _tidy_help(command: Any) -> Any:
    """Help pages that name what a value is, not its Python type: an option without a
    metavar is shown by its name (``--testbed TESTBED``, not ``<str>``), a flag by nothing
    (not ``<bool>``), and a database-sized upper bound is left out of its range."""
    for param in command.params:
        if param.param_type_name == "option" and param.metavar is None:
            if getattr(param, "is_flag", False):
                param.metavar = ""
            else:
                param.metavar = max(param.opts, key=len).lstrip("-").upper().replace("-", "_")
        elif param.param_type_name == "argument":
            param.metavar = param.metavar or param.name.upper()  # usage: ... NAME, not {name}
            param.display_type_rich = lambda ctx: None  # its NAME column says it already
        high = getattr(param, "max", None)
        if isinstance(high, int) and high >= _UNBOUNDED:
            low = getattr(param, "min", None)
            param._get_number_range_help_str = lambda low=low: None if low is None else f"x>={low}"
    make_help = command.get_help_option

    def help_option(ctx: Any) -> Any:
        option = make_help(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return its exit code (errors become one readable line)."""
    try:
        command = _tidy_help(typer.main.get_command(app))
        command(args=list(argv) if argv is not None else None, prog_name="nictune")
    except SystemExit as exc:  # Typer's own usage errors (exit 2), --help, typer.Exit
        code = exc.code
        if code == 130 and _ctrl_c_in_typer(exc):
            _interrupted()
        return code if isinstance(code, int) else (0 if code is None else 1)
    except InvalidInputError as exc:
        print_error(_with_allowed(exc))
        return 2
    except NictuneError as exc:
        print_error(str(exc))
        return 1
    except KeyboardInterrupt:
        _interrupted()
        return 130
    return 0


def _ctrl_c_in_typer(exc: SystemExit) -> bool:
    """Whether Typer turned a Ctrl-C in a command into this exit 130, silently.

    Typer catches a ``KeyboardInterrupt`` that a command let through (while it loads a
    database, say) and exits 130 with nothing on stderr. The commands that handle Ctrl-C
    themselves say so and exit with ``typer.Exit(130) from None``: no interrupt as cause.
    """
    raised = exc.__context__
    return raised is not None and isinstance(raised.__cause__, KeyboardInterrupt)


def _interrupted() -> None:
    err_console.print("interrupted")


class _AftermathOfCtrlC(logging.Filter):
    """Drops SQLAlchemy's "Error closing cursor" when the cursor's query was cut short by
    Ctrl-C: the cursor is closed after its database, and the log line came with two
    tracebacks that are no news to someone who pressed Ctrl-C. Any other log passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (record.name.startswith("sqlalchemy.pool") and record.getMessage() == "Error closing cursor"
                    and error is not None and isinstance(error.__context__, KeyboardInterrupt))


def _with_allowed(exc: InvalidInputError) -> str:
    """The message, with the allowed values when it does not already give them."""
    text = str(exc)
    return f"{text}; allowed: {exc.allowed}" if exc.allowed and exc.allowed not in text else text


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C: `finally` blocks run, so testbeds close (a veth pair that
    # a run created is removed) and the job is marked interrupted. A trial in flight has its
    # own handler that restores the hosts first and then delivers the signal here.
    raise KeyboardInterrupt


def run() -> None:
    """Console-script entry point."""
    signal.signal(signal.SIGTERM, _terminate)
    # Logs of a command go to Python's last-resort handler (``serve`` configures its own).
    if logging.lastResort is not None:
        logging.lastResort.addFilter(_AftermathOfCtrlC())
    sys.exit(main())
