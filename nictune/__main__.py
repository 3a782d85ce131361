"""``python -m nictune`` runs the CLI."""

from nictune.cli.entry import run

run()
