"""``nictune engines``: the search engines and the parameters ``--param`` sets."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from nictune.cli._common import console, print_json
from nictune.errors import UnknownNameError
from nictune.optimizer import ENGINES, Param

app = typer.Typer(help="List the search engines and the parameters each accepts (optimize --param NAME=VALUE).",
                  no_args_is_help=True)


def _summary(name: str) -> str:
    """The first paragraph of the engine's module docstring, as plain text."""
    doc = (sys.modules[ENGINES[name].__module__].__doc__ or ENGINES[name].__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split()).replace("``", "")


def _param_row(name: str, spec: Param) -> dict[str, Any]:
    return {"name": name, "default": spec.default, "allowed": spec.describe(), "help": spec.help}


@app.command("list")
def list_engines(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The engines, what each does, and the names of their parameters."""
    rows = [{"name": name, "summary": _summary(name), "params": list(cls.PARAMS)} for name, cls in ENGINES.items()]
    if json_out:
        print_json(rows)
        return
    table = Table(title="Search engines (optimize --engine NAME)")
    for col in ("engine", "what it does", "parameters (--param NAME=VALUE)"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(str(r["name"]), str(r["summary"]), ", ".join(r["params"]) or "none")
    console.print(table)
    console.print(Text.assemble("Each parameter's default and allowed values: ", ("nictune engines show NAME", "bold")))


@app.command("show")
def show(
    name: str = typer.Argument(..., help="An engine: " + ", ".join(ENGINES) + "."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One engine's parameters: default, allowed values and what each changes."""
    if name not in ENGINES:
        raise UnknownNameError("engine", name, list(ENGINES))
    cls = ENGINES[name]
    rows = [_param_row(p, spec) for p, spec in cls.PARAMS.items()]
    if json_out:
        print_json({"name": name, "summary": _summary(name), "params": rows})
        return
    console.print(Text.assemble((name, "bold"), f": {_summary(name)}"))
    if not rows:
        console.print("It takes no parameters.")
        return
    table = Table(title=f"optimize --engine {name} --param NAME=VALUE")
    for col in ("parameter", "default", "allowed", "what it changes"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], "-" if r["default"] is None else str(r["default"]), r["allowed"], r["help"])
    console.print(table)


__all__ = ["app"]
