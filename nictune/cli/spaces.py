"""``nictune spaces``: list, show and validate search spaces."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.table import Table
from rich.text import Text

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
    console.print(Text.assemble("Show one with ", ("nictune spaces show NAME", "bold"),
                                "; pass your own with --space FILE."))


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Built-in space name or path to a YAML file."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    definition: bool = typer.Option(
        False, "--definition",
        help="Print the space's definition as a space file instead (YAML): save it, edit it, check it "
             "with 'nictune spaces validate FILE' and use it with --space FILE."),
) -> None:
    """Show a space's knobs: type, allowed values, default, unit, condition, and its size."""
    space = load_space(name)
    if definition:
        print(yaml.safe_dump(space.definition, sort_keys=False, allow_unicode=True), end="")
        return
    info = space.describe()
    if fmt is Format.json:
        print_json(info)
        return
    if fmt is Format.yaml:
        print(yaml.safe_dump(info, sort_keys=False, allow_unicode=True), end="")
        return
    size = f"{info['size']:,}" if info["size"] is not None else "continuous"
    console.print(Text.assemble((space.name, "bold"), f": {space.description}"))
    console.print(f"configurations: {size} (before constraints); default testbed: {space.testbed}")
    table = Table()
    for col in ("knob", "type", "allowed", "default", "unit", "active when", "applies via"):
        # Knob names are what a reader types back: never split one across lines.
        table.add_column(col, overflow="fold", no_wrap=col == "knob")
    for k in info["knobs"]:
        via = k["family"] + (f" {k['target']}" if k.get("target") else "")
        table.add_row(k["name"], k["type"], k["allowed"], str(k["default"]), k.get("unit", ""),
                      k.get("when", ""), via)
    console.print(table)
    relief = [f"{k['name']} ({k['relieves']})" for k in info["knobs"] if k.get("relieves")]
    if relief:
        console.print("bottlenecks the knobs relieve (diagnose rounds of bayes): " + "; ".join(relief))
    if info["constraints"]:
        console.print("constraints: " + "; ".join(info["constraints"]))
    if info["limits"]:
        console.print("limits: " + ", ".join(f"{k}={v}" for k, v in info["limits"].items()))
    console.print("profiles: " + ", ".join(info["profiles"]))
    for pname, meta in info["profile_info"].items():
        head = f"{pname}" + (" (stock: every job measures it at its start)" if meta["stock"] else "")
        console.print(Text.assemble((head, "bold"), f": {meta['description']}" if meta["description"] else ""))
        for label, key in (("source", "source"), ("not expressed in this space", "not_expressed"),
                           ("notes", "notes")):
            if meta[key]:
                console.print(f"  {label}: " + "; ".join(meta[key]))


@app.command("validate")
def validate(path: Path = typer.Argument(..., help="YAML file of a search space.")) -> None:
    """Check a space file. Exit 0 when valid, 2 naming the knob and field at fault otherwise.

    Every setting each knob stands for is checked as a measurement would check it before it
    touches a host (sysctl keys, link attributes, ethtool fields, values); nothing is changed.
    """
    if path.is_dir():
        raise InvalidInputError(f"{path} is a directory, not a space file", field="FILE",
                                allowed="a YAML file such as 'nictune spaces show NAME --definition' prints")
    if not path.is_file():
        raise InvalidInputError(f"no such file: {path}", field="FILE", allowed="a readable YAML file")
    from nictune.measure.appliers.registry import load_checked_space

    space, sim_only = load_checked_space(str(path))
    size = space.size()
    console.print(Text.assemble(
        ("valid", "green"), f": space {space.name!r}, {len(space.knobs)} knobs, "
        f"{f'{size:,}' if size is not None else 'continuous'} configurations, "
        f"profiles: {', '.join(space.profile_names())}"
    ))
    for why in dict.fromkeys(sim_only.values()):
        knobs = ", ".join(name for name, reason in sim_only.items() if reason == why)
        console.print(f"only simulated testbeds can set {knobs}: {why}")


@app.command("probe")
def probe(
    testbed: str = typer.Option(..., "--testbed", "-t", help="veth[:NAME] or a pair YAML file."),
    space: str | None = typer.Option(None, "--space", help="Space to fit (default: the testbed's)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the fitted space here (YAML)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which knobs the testbed's hosts support; write a space fitted to them.

    Unsupported knobs are left out (with the reason); the others start from the receiver's
    current values, so the fitted space's default configuration is this host as it is.
    Nothing on the hosts is changed.
    """
    from nictune.measure.probing.probe_space import probe_space
    from nictune.measure.testbeds import open_testbed

    if testbed.startswith("sim:"):
        raise InvalidInputError("a simulated testbed has every knob of its space; probe a real one",
                                field="testbed", allowed="veth[:NAME] or a pair YAML file")
    with open_testbed(testbed) as bed:
        sp = load_space(space or bed.default_space())
        ensure = getattr(bed, "ensure_up", None)
        if ensure is not None:
            ensure()
        definition, results = probe_space(sp, bed.endpoints())  # type: ignore[attr-defined]
        definition["testbed"] = bed.name  # what it was fitted to, not the space's simulated pair
    if out is not None:
        header = f"# {definition['name']}: {sp.name} fitted to {testbed} by nictune spaces probe\n"
        left = [r for r in results if not r.supported]
        header += "".join(f"# left out {r.knob}: {r.reason}\n" for r in left)
        out.write_text(header + yaml.safe_dump(definition, sort_keys=False, allow_unicode=True))
    if json_out:
        print_json([r.__dict__ for r in results])
        return
    table = Table(title=f"{sp.name} on {testbed}")
    for col in ("knob", "supported", "current value / reason"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(r.knob, "yes" if r.supported else Text("no", style="red"),
                      str(r.current) if r.supported else r.reason)
    console.print(table)
    if out is not None:
        console.print(f"wrote {out}: use it with --space {out}")
