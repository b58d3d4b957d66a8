"""The one exception the emulator raises: a kind the caller can branch on, and one line."""
from __future__ import annotations

KINDS = ("compile", "barrier", "out_of_bounds", "crash", "timeout")


class SimError(Exception):
    """A kernel failed in the emulator. `kind` is one of KINDS; the message is one line."""

    def __init__(self, kind: str, message: str):
        if kind not in KINDS:
            raise ValueError(f"unknown SimError kind {kind!r}; expected one of {KINDS}")
        line = " ".join(message.split())  # one line, whatever the tools printed
        super().__init__(line)
        self.kind = kind
        self.message = line

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"
