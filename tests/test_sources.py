"""benchmarks/sources.py: the commit a benchmark's output records names the sources that ran, or says they differ."""
from __future__ import annotations

import subprocess

from tests.programs import program

sources = program("benchmarks", "sources")


def git(folder, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_clean_tree_is_its_head_and_a_changed_one_says_so(tmp_path):
    assert sources.commit(tmp_path) == ""  # no git checkout: nothing to name
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "commit", "-qm", "one")
    head = git(tmp_path, "rev-parse", "--short", "HEAD")
    assert sources.commit(tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")  # what a GPU node's copy over an older .git looks like
    assert sources.commit(tmp_path) == f"{head}+changes"
    (tmp_path / "untracked.txt").write_text("")
    git(tmp_path, "checkout", "-q", "a.py")
    assert sources.commit(tmp_path) == head  # files git does not track are not sources


def test_the_script_prints_it_for_the_shell_checks():
    """benchmarks/release/common.sh takes COMMIT from `python3 benchmarks/sources.py` when none is given."""
    import sys

    root = sources.ROOT
    printed = subprocess.run([sys.executable, str(root / "benchmarks" / "sources.py")], capture_output=True, text=True,
                             check=True, cwd=root).stdout.strip()
    assert printed == sources.commit() and printed.startswith(git(root, "rev-parse", "--short", "HEAD"))
