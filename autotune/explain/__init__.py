"""Explaining a number: SASS counts (explain.sass), the ceiling model (explain.model; its shared-memory
bank models: explain.banks), the counts and model columns of a result row (explain.counts), and the
report with its plots."""

import importlib.util

from autotune.errors import EnvironmentFault


def require_matplotlib(what: str) -> None:
    """The report and the suite draw their plots with matplotlib, a dependency of the package: its absence is said
    in one line before any work, not as a traceback after a suite's tuning."""
    if importlib.util.find_spec("matplotlib") is None:
        raise EnvironmentFault(f"{what} draws its plots with matplotlib, which is not installed here: "
                               f"pip install matplotlib")
