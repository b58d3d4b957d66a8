"""Worker processes start by spawn, which imports the parent's main script again in the child
before the worker runs. A script that calls autotune.tune() at its top level (no
`if __name__ == "__main__":`) would call it again there, and multiprocessing would answer with a
traceback about bootstrapping; instead the child leaves at once with REIMPORTED_MAIN, and the
parent says in one line what to add."""
from __future__ import annotations

import multiprocessing as mp

REIMPORTED_MAIN = 87  # the child's exit status: it was importing the parent's main script
MAIN_GUARD_HINT = ("it re-ran the calling script, whose top level calls autotune.tune(): put that call under "
                   "`if __name__ == \"__main__\":` (worker processes are spawned, and spawning imports the main script)")


def leave_if_reimporting_main() -> None:
    """Called where a search starts: in a spawned child still importing the parent's main script
    (multiprocessing's own test for it), exit quietly with REIMPORTED_MAIN."""
    if getattr(mp.current_process(), "_inheriting", False):
        raise SystemExit(REIMPORTED_MAIN)
