"""Domain errors. The command line turns each into one line and exit status 2."""


class AutotuneError(Exception):
    """A user-facing error: the message says what was wrong and how to fix it."""


class SpaceError(AutotuneError):
    """A config or shape outside the space (unknown family or parameter, bad value)."""


class EnvironmentFault(AutotuneError):
    """The machine, not a kernel, is at fault (an unusable cache folder, no compiler, no device):
    every kernel would fail the same way, so the search stops and records nothing."""


class NoDeviceError(EnvironmentFault):
    """No CUDA device answered."""
