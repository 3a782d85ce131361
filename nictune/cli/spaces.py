"""``nictune spaces``: list, show and validate search spaces."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.table import Table

from nictune.cli._common import console, print_json
from nictune.errors import InvalidInputError
from nictune.search_spaces import builtin_names, load_space

app = typer.Typer(help="List, show and validate search spaces (the knobs nictune may turn).",
                  no_args_is_help=True)


class Format(StrEnum):
    table = "table"
    yaml = "yaml"
    json = "json"


@app.command("list")
def list_spaces(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the built-in search spaces."""
    rows: list[dict[str, Any]] = []
    for name in builtin_names():
        space = load_space(name)
        rows.append({"name": name, "knobs": len(space.knobs), "size": space.size(),
                     "testbed": space.testbed, "description": space.description})
    if json_out:
        print_json(rows)
        return
    table = Table(title="Built-in search spaces")
    for col in ("name", "knobs", "configurations", "testbed", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        size = f"{r['size']:,}" if r["size"] is not None else "continuous"
        table.add_row(r["name"], str(r["knobs"]), size, str(r["testbed"] or ""),
                      str(r["description"])[:90] + ("..." if len(str(r["description"])) > 90 else ""))
    console.print(table)
    console.print("Show one with [bold]nictune spaces show NAME[/]; pass your own with --space FILE.")


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Built-in space name or path to a YAML file."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
) -> None:
    """Show a space's knobs: type, allowed values, default, unit, condition, and its size."""
    space = load_space(name)
    info = space.describe()
    if fmt is Format.json:
        print_json(info)
        return
    if fmt is Format.yaml:
        print(yaml.safe_dump(info, sort_keys=False, allow_unicode=True), end="")
        return
    size = f"{info['size']:,}" if info["size"] is not None else "continuous"
    console.print(f"[bold]{space.name}[/]: {space.description}")
    console.print(f"configurations: {size} (before constraints); default testbed: {space.testbed}")
    table = Table()
    for col in ("knob", "type", "allowed", "default", "unit", "active when", "applies via"):
        table.add_column(col, overflow="fold")
    for k in info["knobs"]:
        via = k["family"] + (f" {k['target']}" if k.get("target") else "")
        table.add_row(k["name"], k["type"], k["allowed"], str(k["default"]), k.get("unit", ""),
                      k.get("when", ""), via)
    console.print(table)
    if info["constraints"]:
        console.print("constraints: " + "; ".join(info["constraints"]))
    if info["limits"]:
        console.print("limits: " + ", ".join(f"{k}={v}" for k, v in info["limits"].items()))
    console.print("profiles: " + ", ".join(info["profiles"]))


@app.command("validate")
def validate(path: Path = typer.Argument(..., help="YAML file of a search space.")) -> None:
    """Check a space file. Exit 0 when valid, 2 naming the knob and field at fault otherwise."""
    if not path.is_file():
        raise InvalidInputError(f"no such file: {path}", field="FILE", allowed="a readable YAML file")
    space = load_space(str(path))
    size = space.size()
    console.print(
        f"[green]valid[/]: space {space.name!r}, {len(space.knobs)} knobs, "
        f"{f'{size:,}' if size is not None else 'continuous'} configurations, "
        f"profiles: {', '.join(space.profile_names())}"
    )
