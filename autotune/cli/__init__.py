"""The command line (`autotune ...`): a thin layer of options over autotune.api."""
from __future__ import annotations

import importlib
import signal
import sys
from typing import Any, NoReturn

__all__ = ["cli", "main"]


def main() -> None:
    """The `autotune` command. Its modules load here, inside the handler: a Ctrl-C while they load (a third
    of a second) is one line and the shell's status for it, as it is once a command runs (cli.options.friendly)."""
    try:
        commands = importlib.import_module("autotune.cli.commands")
    except KeyboardInterrupt:
        interrupted()
    commands.main()


def interrupted() -> NoReturn:
    """A Ctrl-C that reached no handler of a command's own: one line and the status a shell gives it."""
    print("interrupted", file=sys.stderr)
    sys.exit(128 + signal.SIGINT)


def __getattr__(name: str) -> Any:
    if name == "cli":
        return importlib.import_module("autotune.cli.commands").cli
    raise AttributeError(f"module 'autotune.cli' has no attribute {name!r}")
