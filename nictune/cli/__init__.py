"""The ``nictune`` command line (Typer + Rich)."""
