"""The command line (`autotune ...`): a thin layer of options over autotune.api."""
from autotune.cli.commands import cli, main

__all__ = ["cli", "main"]
