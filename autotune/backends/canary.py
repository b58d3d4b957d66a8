"""The canary: a known-good kernel each backend that compiles builds and runs once as it starts.

If the simplest kernel there is (the naive family's default config) does not compile or run,
the toolchain or the device is broken and every kernel of the search would fail the same way:
that is an EnvironmentFault before the first trial, never a row per kernel. The time its run
takes is also the shortest watchdog (--kernel-timeout) that can work on the emulator.
"""
from __future__ import annotations

from autotune.backends.outcome import Outcome
from autotune.codegen.render import render
from autotune.errors import EnvironmentFault
from autotune.families import NAIVE
from autotune.space import Config, make_config


def canary() -> tuple[Config, str]:
    """The known-good config and its source."""
    config = make_config(NAIVE, {})
    return config, render(config)


def broken(where: str, config: Config, outcome: Outcome, fix: str) -> EnvironmentFault:
    """The one line for a canary that failed: where, how, and what to check."""
    reason = " ".join(outcome.reason.split())[:200]
    return EnvironmentFault(f"{where} fails the known-good kernel {config.name} ({outcome.status}: {reason}); "
                            f"{fix}")
