"""``python -m nictune`` runs the CLI."""

from nictune.cli.main import run

run()
