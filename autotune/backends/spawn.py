"""Worker processes start by spawn, which imports the parent's main script again in the child
before the worker runs. A script that calls autotune.tune() at its top level (no
`if __name__ == "__main__":`) would call it again there, and multiprocessing would answer with a
traceback about bootstrapping; instead the child leaves at once with REIMPORTED_MAIN, and the
parent says in one line what to add."""
from __future__ import annotations

import multiprocessing as mp
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

REIMPORTED_MAIN = 87  # the child's exit status: it was importing the parent's main script
MAIN_GUARD_HINT = ("it re-ran the calling script, whose top level calls autotune.tune(): put that call under "
                   "`if __name__ == \"__main__\":` (worker processes are spawned, and spawning imports the main script)")


def leave_if_reimporting_main() -> None:
    """Called where a search starts: in a spawned child still importing the parent's main script
    (multiprocessing's own test for it), exit quietly with REIMPORTED_MAIN."""
    if getattr(mp.current_process(), "_inheriting", False):
        raise SystemExit(REIMPORTED_MAIN)


@contextmanager
def sigint_ignored_by_children() -> Iterator[None]:
    """Start child processes in here: a Ctrl-C while one still imports the parent's main script (before its first
    step ignores SIGINT) must not end it with a traceback; it shares the terminal's process group, and the parent
    stops it itself. In the main thread the children are born with SIGINT ignored, a disposition that survives
    exec and that Python keeps (a Ctrl-C in the parent within the spawn's few milliseconds is lost). Elsewhere (a
    worker's thread asking for compiles) only the thread's signal mask may change: SIGINT blocked, which a child
    inherits unless multiprocessing's resource tracker starts within (it unblocks the thread's mask), so the
    children's first step also unblocks it."""
    old = signal.getsignal(signal.SIGINT)
    # None: a handler set outside Python (an embedding program's), which could not be put back from here
    if threading.current_thread() is threading.main_thread() and old is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, old)
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def deaf_to_sigint() -> None:
    """A child's first step: SIGINT ignored, and unblocked (sigint_ignored_by_children may have blocked it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
