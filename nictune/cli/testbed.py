"""``nictune testbed``: local veth pairs and real host pairs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from nictune.cli._common import console, err_console, print_json
from nictune.errors import InvalidInputError
from nictune.measure.testbeds import recover

app = typer.Typer(help="Create, list and check testbeds (local veth pairs, real pairs over SSH).",
                  no_args_is_help=True)


@app.command("up")
def up(name: str = typer.Option("nt0", "--name", "-n",
                                help="Pair name: 1-8 lower-case letters and digits, starting with a letter; "
                                     "its namespaces are NAME-tx and NAME-rx.")) -> None:
    """Create a local pair: two network namespaces joined by a veth link (needs root)."""
    from nictune.measure.testbeds import VethPair, check_pair_name

    pair = VethPair(check_pair_name(name))
    if pair.exists():
        console.print(f"veth:{name} exists already ({pair.tx_address} -> {pair.rx_address})")
        return
    pair.up()
    console.print(f"created veth:{name}: namespaces {name}-tx ({pair.tx_address}) and {name}-rx "
                  f"({pair.rx_address}); use --testbed veth:{name}; remove with nictune testbed down --name {name}")


@app.command("down")
def down(name: str = typer.Option("nt0", "--name", "-n", help="Pair name.")) -> None:
    """Remove a local pair and restore what a crashed run left on it."""
    from nictune.measure.testbeds import VethPair, check_pair_name
    from nictune.measure.trial.keep import restore_kept

    for notice in recover(f"veth:{check_pair_name(name)}"):
        err_console.print(notice)
    kept = restore_kept(f"veth:{name}")  # global sysctls outlive the namespaces: put them back
    if kept is not None:
        err_console.print(f"restored what nictune apply had kept on veth:{name}")
    pair = VethPair(name)
    if not pair.exists():
        raise InvalidInputError(f"there is no pair veth:{name}; see nictune testbed list", field="name")
    pair.down()
    console.print(f"removed veth:{name}")


@app.command("list")
def list_(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the local veth pairs and the simulated testbeds."""
    from nictune.measure.sim import PROFILES
    from nictune.measure.testbeds import list_pairs

    pairs = list_pairs()
    if json_out:
        print_json({"veth": [f"veth:{p}" for p in pairs], "simulated": list(PROFILES)})
        return
    table = Table(title="testbeds")
    table.add_column("testbed")
    table.add_column("kind")
    for p in pairs:
        table.add_row(f"veth:{p}", "local veth pair (real kernel, real iperf3)")
    for name, prof in PROFILES.items():
        table.add_row(name, f"simulated (a model): {prof.description[:60]}...")
    console.print(table)
    console.print("real pairs: describe them in a YAML file and check it with nictune testbed check FILE")


@app.command("check")
def check(
    path: Path = typer.Argument(..., help="Testbed YAML file (sender, receiver, interfaces, addresses)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Check a real pair: reachability, tools (iperf3, ethtool), privileges; print its fingerprint."""
    from nictune.measure.testbeds import check_pair, load_pair

    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "no such file"
        raise InvalidInputError(f"{path}: {what}", field="FILE", allowed="a testbed YAML file")
    result = check_pair(load_pair(str(path)))
    if json_out:
        print_json(result)
        return
    for key, value in result.items():
        console.print(f"{key}: {value}")
