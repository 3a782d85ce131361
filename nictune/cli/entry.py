"""The ``nictune`` console script and ``python -m nictune``.

Loading the CLI (Typer, Rich, SQLAlchemy, NumPy ...) takes a second or more; a Ctrl-C in
that second ends the command like one later on: "interrupted" and exit 130, no traceback.
Nothing has been read or changed by then.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Load the CLI and run it (see :func:`nictune.cli.main.run`)."""
    try:
        from nictune.cli.main import run as run_cli
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    run_cli()
