"""The sources a benchmark ran from, as its output records them: the repository's commit as `autotune suite` records
it (api.suite.git_commit: git's short HEAD, marked `+changes` where tracked files differ from it); "" outside a git
checkout. Pass --commit (COMMIT=) to name them yourself."""
from __future__ import annotations

from pathlib import Path

from autotune.api.suite import git_commit

ROOT = Path(__file__).resolve().parents[1]


def commit(root: Path = ROOT) -> str:
    return git_commit(root) or ""


if __name__ == "__main__":  # for the shell checks (benchmarks/release/common.sh)
    print(commit())
