"""The sources a benchmark ran from, as its output records them: git's short HEAD, marked `+changes` where the
checkout's tracked files differ from it. A GPU node's copy of a working tree may carry an older .git, whose HEAD
alone would name sources that did not run (benchmarks/release/common.sh does the same for the shell checks); pass
--commit (COMMIT=) to name them yourself."""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit(root: Path = ROOT) -> str:
    """HEAD's short hash, with `+changes` where tracked files differ from it; "" outside a git checkout."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root)
    if head.returncode != 0:
        return ""
    same = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], capture_output=True, cwd=root).returncode == 0
    return head.stdout.strip() + ("" if same else "+changes")


if __name__ == "__main__":  # for the shell checks (benchmarks/release/common.sh)
    print(commit())
