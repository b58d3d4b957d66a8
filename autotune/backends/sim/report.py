"""Turn a failed emulator run (exit status and stderr) into a SimError with one line.

The harness reports barrier errors itself ("SIM-ERROR barrier: ..."). Memory errors
come from AddressSanitizer's report, which is long; we keep what the user needs: read
or write, where in the kernel source, which buffer, and which block and thread.
"""
from __future__ import annotations

import re
import signal

from autotune.backends.sim.errors import SimError

ASAN_EXIT = 23  # set through ASAN_OPTIONS so that ASan's exit is told from others
BARRIER_EXIT = 3

_SIM_ERROR = re.compile(r"^SIM-ERROR (\w+): (.*)$", re.M)
_ASAN_KIND = re.compile(r"ERROR: AddressSanitizer: ([\w-]+)(?: on (?:unknown )?address (0x[0-9a-f]+))?")
_ACCESS = re.compile(r"^(READ|WRITE) of size (\d+)", re.M)
_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (\S+) \S*?([\w.]+\.cu):(\d+)", re.M)
_GLOBAL = re.compile(
    r"is located (\d+) bytes (to the right|to the left|before|after) of global variable '([^']+)' defined in '([^':]+)"
)
_LOCAL = re.compile(r"'([^']+)'[^\n]*<== Memory access at offset \d+ (?:partially )?(overflows|underflows)")
_REGION = re.compile(r"is located (\d+) bytes (to the right|to the left|before|after) of (\d+)-byte region \[(0x[0-9a-f]+),")
_CONTEXT = re.compile(r"^SIM-CONTEXT (.*)$", re.M)
_BUFFERS = re.compile(r"^SIM-BUFFERS A=(\S+) B=(\S+) C=(\S+) S=(\S+)", re.M)
_BUFFER_NAMES = ("A", "B", "C", "dynamic __shared__ memory")
_OOB_KINDS = ("buffer-overflow", "buffer-underflow", "SEGV", "use-after")
_PLAIN = {"SEGV": "invalid memory access (SEGV)", "FPE": "arithmetic exception (SIGFPE)"}


def failure(returncode: int, stderr: str, name: str) -> SimError:
    """The SimError for a run that exited with `returncode` (non-zero)."""
    own = _SIM_ERROR.search(stderr)
    if own:
        kind = "barrier" if own.group(1) == "barrier" else "crash"
        return SimError(kind, own.group(2))
    if "ERROR: AddressSanitizer" in stderr:
        return _asan(stderr, name)
    if returncode < 0:
        return SimError("crash", f"kernel {name} killed by {_signal_name(-returncode)}")
    tail = stderr.strip().splitlines()[-1:] or ["no message"]
    return SimError("crash", f"kernel {name} exited with status {returncode}: {tail[0]}")


def _asan(stderr: str, name: str) -> SimError:
    head = _ASAN_KIND.search(stderr)
    what = head.group(1) if head else "memory error"
    kind = "out_of_bounds" if any(k in what for k in _OOB_KINDS) else "crash"
    access = _ACCESS.search(stderr)
    parts = [_PLAIN.get(what, what) + (f": {access.group(1)} of {access.group(2)} bytes" if access else "")]
    frame = _frame(stderr, name)
    if frame:
        parts.append(frame)
    target = _target(stderr, name, head.group(2) if head and what == "SEGV" else None)
    if target:
        parts.append(target)
    context = _CONTEXT.search(stderr)
    if context:
        parts.append(context.group(1))
    return SimError(kind, f"kernel {name}: " + "; ".join(parts))


def _frame(stderr: str, name: str) -> str | None:
    """The innermost stack frame in the kernel's own source, as 'at NAME.cu:LINE'."""
    for match in _FRAME.finditer(stderr):
        if match.group(2) == f"{name}.cu":
            return f"at {match.group(2)}:{match.group(3)}"
    return None


def _target(stderr: str, name: str, address: str | None) -> str | None:
    """Which memory was hit: a __shared__ or local array, or A, B or C by its start address."""
    found = _GLOBAL.search(stderr)
    if found:
        what = "__shared__ array" if found.group(4).endswith(f"{name}.cu") else "emulator variable"
        return f"{found.group(1)} bytes {_side(found.group(2))} {what} '{found.group(3)}'"
    found = _LOCAL.search(stderr)
    if found:
        return f"{found.group(2)} local array '{found.group(1)}'"
    found = _REGION.search(stderr)
    buffers = _BUFFERS.search(stderr)
    if found:
        label = f"a {found.group(3)}-byte buffer"
        if buffers:
            starts = {a: n for a, n in zip(buffers.groups(), _BUFFER_NAMES) if a.startswith("0x")}
            label = starts.get(found.group(4), label)
        return f"{found.group(1)} bytes {_side(found.group(2))} {label}"
    if address:
        return f"address {address} is outside every buffer"
    return None


def _side(word: str) -> str:
    return "past the end of" if word in ("to the right", "after") else "before the start of"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
