"""Domain errors. The command line turns each into one line and exit status 2."""
from __future__ import annotations

from typing import Mapping, TypeVar

T = TypeVar("T")


class AutotuneError(Exception):
    """A user-facing error: the message says what was wrong and how to fix it."""


class SpaceError(AutotuneError):
    """A config or shape outside the space (unknown family or parameter, bad value)."""


class EnvironmentFault(AutotuneError):
    """The machine, not a kernel, is at fault (an unusable cache folder, no compiler, no device):
    every kernel would fail the same way, so the search stops and records nothing."""


class NoDeviceError(EnvironmentFault):
    """No CUDA device answered."""


def registered(registry: Mapping[str, T], name: str, what: str, option: str) -> T:
    """The registered object of that name (a backend, a sampler); an unknown name is one line that lists
    the known ones and the option that takes them."""
    found = registry.get(name)
    if found is None:
        raise AutotuneError(f"unknown {what} {name!r}; choose one of {', '.join(registry)} ({option})")
    return found
