"""Domain errors. The command line turns each into one line and exit status 2."""


class AutotuneError(Exception):
    """A user-facing error: the message says what was wrong and how to fix it."""


class SpaceError(AutotuneError):
    """A config or shape outside the space (unknown family or parameter, bad value)."""


class NoDeviceError(AutotuneError):
    """No CUDA device answered."""
